"""The store interface: execute one read-only query with a timeout and a row cap."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TypeVar

from kgeval.errors import QueryTimeout
from kgeval.stores._query import DEFAULT_MAX_QUERY_BYTES, QueryShape, guard_query
from kgeval.stores._results import QueryResult, Row

T = TypeVar("T")


class Store(ABC):
    """A graph store that answers SPARQL SELECT and ASK queries.

    Subclasses implement `_ask` and `_select`; `execute` applies the read-only guard first,
    and `_select` implementations keep rows with `collect_rows`, so every store caps and
    selects rows the same way.
    """

    name: str = "store"
    """Engine name recorded with gold and runs (e.g. "oxigraph-embedded")."""

    max_query_bytes: int = DEFAULT_MAX_QUERY_BYTES

    @property
    @abstractmethod
    def version(self) -> str:
        """Engine version recorded with gold and runs."""

    @property
    @abstractmethod
    def data_sha256(self) -> str:
        """Hash of the data the store serves, recorded with gold."""

    def execute(self, query: str, *, timeout_s: float, row_cap: int) -> QueryResult:
        """Run `query` read-only; raise QueryRefused, QuerySyntaxError, QueryTimeout or StoreError."""
        shape = self._guard(query)
        query = shape.text  # the engine runs the text the guard approved, never the original
        if shape.form == "ask":
            return QueryResult(form="ask", boolean=self._ask(query, timeout_s), total=1)
        variables, kept, total = self._select(query, shape, timeout_s, row_cap)
        return QueryResult(
            form="select",
            vars=list(variables),
            rows=kept,
            total=total,
            truncated=total > len(kept),
            ordered=shape.ordered,
        )

    def _guard(self, query: str) -> QueryShape:
        """The read-only guard for this store's query language; runs before any request leaves."""
        return guard_query(query, max_bytes=self.max_query_bytes)

    @abstractmethod
    def _ask(self, query: str, timeout_s: float) -> bool:
        """Evaluate an ASK query."""

    @abstractmethod
    def _select(
        self, query: str, shape: QueryShape, timeout_s: float, row_cap: int
    ) -> tuple[list[str], list[Row], int]:
        """Evaluate a SELECT query: its variables, the rows kept by `collect_rows`, the total."""


def run_with_deadline(work: Callable[[threading.Event], T], timeout_s: float) -> T:
    """Run `work` in a daemon thread; raise QueryTimeout if it has not finished in time.

    For engines with no way to interrupt a query: the caller gets its answer or the timeout at
    once; `work` should check the event it is given and stop when it is set."""
    cancel = threading.Event()
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["value"] = work(cancel)
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=target, daemon=True, name="kgeval-query")
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        cancel.set()
        raise QueryTimeout(f"query ran longer than {timeout_s:g} s")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
