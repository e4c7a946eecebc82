"""The store interface: execute one read-only query with a timeout and a row cap."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TypeVar

from kgeval.config import CandidateQueryConfig
from kgeval.errors import QueryError, QueryOverBudget, QueryRefused, QuerySyntaxError, QueryTimeout
from kgeval.stores._engine import ProbeCut, ProbeRows
from kgeval.stores._query import DEFAULT_MAX_QUERY_BYTES, QueryShape, guard_query
from kgeval.stores._results import CellResult, QueryResources, QueryResult, Row, ValueResult
from kgeval.stores._value_size import estimated_value_bytes

T = TypeVar("T")


class Store(ABC):
    """A graph store that answers SPARQL SELECT and ASK queries.

    Subclasses implement `_ask` and `_select`; `execute` applies the read-only guard first,
    and `_select` implementations keep rows with `collect_rows` (or its plain-tuple core
    `keep_rows`), so every store caps and selects rows the same way.

    Two entry points: `execute` for trusted queries (reference queries, tie probes, schema
    summaries) and `execute_candidate` for anything a system under test wrote, which is bounded
    by `candidate_limits` and counts what it cost.
    """

    name: str = "store"
    """Engine name recorded with gold and runs (e.g. "oxigraph-embedded")."""

    max_query_bytes: int = DEFAULT_MAX_QUERY_BYTES

    candidate_limits: CandidateQueryConfig = CandidateQueryConfig()
    """Bounds on candidate queries (`store.candidates` in the configuration)."""

    @property
    @abstractmethod
    def version(self) -> str:
        """Engine version recorded with gold and runs."""

    @property
    @abstractmethod
    def data_sha256(self) -> str:
        """Hash of the data the store serves, recorded with gold."""

    def execute(self, query: str, *, timeout_s: float, row_cap: int) -> QueryResult:
        """Run a trusted `query` read-only; raise QueryRefused, QuerySyntaxError, QueryTimeout or
        StoreError (QueryRejected when the engine refuses the query itself)."""
        shape = self._guard(query)
        return self._result(shape.text, shape, timeout_s, row_cap)  # the engine runs the text the guard approved

    def execute_cells(self, query: str, *, timeout_s: float, row_cap: int) -> CellResult:
        """`execute` with the result as plain cells: the same rows, no Term built (for callers
        that hash results or scan many rows, as the gold rebuild does); same errors."""
        shape = self._guard(query)
        return self._cells(shape.text, shape, timeout_s, row_cap)

    def execute_repeated(self, query: str, *, executions: int, timeout_s: float, row_cap: int) -> list[CellResult]:
        """`execute_cells` `executions` times, one after another, each within `timeout_s` (the
        gold rebuild's executions, compared to find nondeterministic queries); the first error
        is raised. A later execution whose answer a store found to be the first's, term for term,
        may be handed back as the first's result (the embedded store's sandbox then sends no copy)."""
        return [self.execute_cells(query, timeout_s=timeout_s, row_cap=row_cap) for _ in range(executions)]

    def execute_probe(self, probe: str, cut: ProbeCut, *, timeout_s: float, row_cap: int) -> ProbeRows:
        """An order probe's (`order_probe`) rows the tie check needs to decide `cut`'s ties
        (`ProbeRows`); same errors as `execute`. By default every row up to `row_cap`, as
        `execute_cells` keeps them; the embedded store stops at the first row past the cut's
        key groups when no later row can share their keys."""
        result = self.execute_cells(probe, timeout_s=timeout_s, row_cap=row_cap)
        return ProbeRows(tuple(result.variables), list(result.rows), result.total > len(result.rows), True)

    def execute_values(self, query: str, *, timeout_s: float, row_cap: int) -> ValueResult:
        """`execute` of a SELECT with the rows kept as bare values, one list per variable, in no
        particular order (for callers that read only values, as the judges' label index does:
        no cell or Term built per value); the same rows kept, same errors."""
        shape = self._guard(query)
        return self._values(shape.text, shape, timeout_s, row_cap)

    def execute_candidate(self, query: str, *, timeout_s: float, row_cap: int) -> tuple[QueryResult, QueryResources]:
        """Run an untrusted `query` within `candidate_limits`: its result and what it cost.

        Every failure is a `QueryError` subclass (QueryRefused, QuerySyntaxError, QueryRejected,
        QueryTimeout, QueryOverBudget, StoreError) carrying what the query cost as `.resources`;
        nothing else escapes, whatever the query."""
        started = time.perf_counter()
        try:
            shape = self.approved_candidate(query)
            return self._run_candidate(shape.text, shape, timeout_s, row_cap)  # the approved text, never the original
        except QueryError as exc:
            if exc.resources is None:
                exc.resources = QueryResources(wall_ms=(time.perf_counter() - started) * 1000)
            raise
        except MemoryError:
            error = QueryOverBudget("the query's result did not fit in memory")
            error.resources = QueryResources(wall_ms=(time.perf_counter() - started) * 1000)
            raise error from None

    def approved_candidate(self, query: str) -> QueryShape:
        """An untrusted `query` through the read-only guard and the budget checks made before
        it is sent: its shape, whose text is all an engine may run (QueryError when refused)."""
        try:
            shape = self._guard(query)
        except RecursionError:  # a parser's recursion on deep nesting: never a crashed run
            raise QueryRefused("the query nests too deeply to be analysed") from None
        except UnicodeError:  # a lone surrogate: no engine can be sent this text
            raise QuerySyntaxError("the query is not valid Unicode text (a lone surrogate)") from None
        self._refuse_over_budget(shape)
        return shape

    def approved_text(self, query: str) -> str | None:
        """The text the read-only guard approves `query` as, which is all the engine would be
        sent; None when the guard refuses it. Texts with one approved text are one query."""
        try:
            return self._guard(query).text
        except (QueryError, RecursionError, UnicodeError):
            return None

    def load(self) -> None:
        """Get ready for trusted queries now: the embedded store loads its KG into this process
        (else its first trusted query does). Nothing to do by default."""

    def start_ahead(self, workers: int) -> None:
        """Get ready for up to `workers` candidate queries at once, in the background (the
        embedded store starts its sandbox workers); returns at once. Nothing to do by default."""

    def _run_candidate(
        self, query: str, shape: QueryShape, timeout_s: float, row_cap: int
    ) -> tuple[QueryResult, QueryResources]:
        """A candidate query on this store: by default the trusted path, then the size caps."""
        started = time.perf_counter()
        result = self._result(query, shape, timeout_s, row_cap)
        size = checked_result_bytes(result, self.candidate_limits)
        return result, QueryResources(wall_ms=(time.perf_counter() - started) * 1000, result_bytes=size)

    def _result(self, query: str, shape: QueryShape, timeout_s: float, row_cap: int) -> QueryResult:
        if shape.form == "ask":
            return QueryResult(form="ask", boolean=self._ask(query, timeout_s), total=1)
        variables, kept, total = self._select(query, shape, timeout_s, row_cap)
        return select_result(variables, kept, total, shape)

    def _refuse_over_budget(self, shape: QueryShape) -> None:
        """Refuse an approved candidate that is over budget before it is sent (a SPARQL query
        that builds a huge value); stores of another query language override it."""
        refuse_value_bomb(shape, self.candidate_limits)

    def _cells(self, query: str, shape: QueryShape, timeout_s: float, row_cap: int) -> CellResult:
        """The result as cells; stores whose engine yields plain values override this to skip Terms."""
        return CellResult.of(self._result(query, shape, timeout_s, row_cap))

    def _values(self, query: str, shape: QueryShape, timeout_s: float, row_cap: int) -> ValueResult:
        """The result as bare values; the embedded store overrides this to build no cell."""
        return ValueResult.of(self._cells(query, shape, timeout_s, row_cap))

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


def select_result(variables: Sequence[str], kept: list[Row], total: int, shape: QueryShape) -> QueryResult:
    """A SELECT result: the rows kept, the true total, `truncated` when they differ."""
    return QueryResult(
        form="select", vars=list(variables), rows=kept, total=total, truncated=total > len(kept), ordered=shape.ordered
    )


def refuse_value_bomb(shape: QueryShape, limits: CandidateQueryConfig) -> None:
    """QueryOverBudget when the query can build a value over `limits.max_value_bytes` (see
    `_value_size`): refused before any store runs it, since no server stops building it."""
    estimate = estimated_value_bytes(shape.text, limits.assumed_value_bytes)
    if estimate > limits.max_value_bytes:
        raise QueryOverBudget(
            f"the query can build a value of about {estimate:,.0f} bytes (each data value taken as "
            f"{limits.assumed_value_bytes:,} bytes), over the {limits.max_value_bytes:,}-byte limit "
            "(store.candidates.max_value_bytes); it is not sent to the store"
        )


def checked_result_bytes(result: QueryResult, limits: CandidateQueryConfig) -> int:
    """UTF-8 bytes of every value of `result`'s rows; QueryOverBudget past a candidate cap."""
    total = 0
    for row in result.rows:
        for term in row:
            if term is None:
                continue
            size = len(term.value.encode("utf-8", "surrogatepass"))
            if size > limits.max_value_bytes:
                raise QueryOverBudget(f"a value of the result is {size:,} bytes, over the {limits.max_value_bytes:,}-byte limit")
            total += size + len(term.datatype or "") + len(term.lang or "")
    if total > limits.max_result_bytes:
        raise QueryOverBudget(f"the result holds {total:,} bytes, over the {limits.max_result_bytes:,}-byte limit")
    return total


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
