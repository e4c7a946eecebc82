"""The store interface: execute one read-only query with a timeout and a row cap."""

from __future__ import annotations

from abc import ABC, abstractmethod
from kgeval.stores._query import DEFAULT_MAX_QUERY_BYTES, QueryShape, guard_query
from kgeval.stores._results import QueryResult, Row


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
