"""The embedded store: pyoxigraph, the default (no server, no keys).

Trusted queries (reference queries, tie probes) run in process, as fast as the engine allows.
Candidate queries run in sandbox worker processes (`_sandbox`): no network, a memory limit, and
a deadline after which the worker is killed and replaced. Both read results one way
(`_engine.evaluate`: rows ranked on plain tuples, Terms built for the rows kept only).

The in-process copy is loaded when a trusted query first needs it, not when the store opens: a
gold rebuild that reuses every entry of a KG never loads it.

A store opened with `local_copy=False` (a run's: its trusted queries are the judges' label and
vocabulary lookups and a system's schema summary, all light) loads no copy of the KG in this
process: its trusted queries go to the sandbox workers too, without the candidate size caps.
The workers hold the KG anyway, so the run process spends no time and memory loading another
copy (on a 1M-triple KG, ~5 s of CPU and ~470 MB).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyoxigraph as ox

from kgeval._files import sha256_file, sha256_json
from kgeval.config import CandidateQueryConfig
from kgeval.errors import KgevalError, QueryError, QueryOverBudget
from kgeval.stores._base import Store, run_with_deadline, select_result
from kgeval.stores._engine import Answer, Caps, ProbeCut, ProbeRows, cell_from_term, evaluate, evaluate_probe, evaluate_values, load_kg, rdf_format
from kgeval.stores._query import QueryShape
from kgeval.stores._results import CellResult, QueryResources, QueryResult, Row, Term, ValueResult, rows_from_cells
from kgeval.stores._sandbox import WorkerPool, files_changed

__all__ = ["EmbeddedStore", "rdf_format", "term_from_oxigraph"]


def term_from_oxigraph(term: ox.NamedNode | ox.Literal | ox.BlankNode | None) -> Term | None:
    """One pyoxigraph term as a typed Term (None when unbound)."""
    return rows_from_cells([(None if term is None else cell_from_term(term),)])[0][0]


class EmbeddedStore(Store):
    """An in-memory pyoxigraph store loaded from KG files into the default graph (and a file that
    came from a named graph into that graph too: `load_kg`).

    Trusted queries: in process; at the deadline `execute` raises QueryTimeout and the query's
    thread stops within its next 512 rows (a query still before its first row keeps its core until the
    engine returns one: pyoxigraph cannot be interrupted). Candidate queries: in a sandbox
    worker, killed at the deadline (`store.candidates` in the configuration).

    `local_copy=False`: no copy of the KG in this process; trusted queries run in the sandbox
    workers too (no size caps; the workers' memory budget and the query's deadline apply).
    Ignored when the sandbox is off: then this process is the only place the KG is.
    """

    name = "oxigraph-embedded"

    def __init__(
        self,
        files: Sequence[Path],
        *,
        graphs: Mapping[str, str] | None = None,
        candidates: CandidateQueryConfig | None = None,
        local_copy: bool = True,
        served_by: tuple[WorkerPool, str] | None = None,
    ) -> None:
        """`served_by`: (the pool of several KGs this one is among, its name there): no pool of
        its own, no local copy; its queries go to that pool's workers, asked by name, and closing
        this store leaves the pool to its owner (`EmbeddedKgs`)."""
        self._files = [Path(f) for f in files]
        self._graphs = {name: iri for name, iri in (graphs or {}).items() if iri}
        """File name -> the named graph it came from (the holdout's `graphs`): loaded there too."""
        if candidates is not None:
            self.candidate_limits = candidates
        self._local = (local_copy and served_by is None) or not self.candidate_limits.sandbox
        self._local_store: ox.Store | None = None
        self._load_lock = threading.Lock()
        self._load_failure: KgevalError | None = None
        """Why the local copy cannot be loaded (a file that does not parse, or files changed since
        open), once found: raised again on every later use instead of loading again."""
        self._file_sha256 = served_by[0].kg_file_sha256[served_by[1]] if served_by else [sha256_file(p) for p in self._files]
        files_sha = sorted((p.name, sha) for p, sha in zip(self._files, self._file_sha256, strict=True))
        # the graphs a file is in are data too; a KG without them keeps the version it had
        self._data_sha = sha256_json({"files": files_sha, "graphs": sorted(self._graphs.items())} if self._graphs else files_sha)
        self._label = ", ".join(str(p) for p in self._files) or "(no KG files)"
        if served_by is None:
            self._pool, self._targets = WorkerPool(self._files, self._file_sha256, self.candidate_limits, self._label, self._graphs), None
            self._finalizer = weakref.finalize(self, self._pool.close)
        else:
            self._pool, self._targets = served_by[0], (served_by[1],)
            self._finalizer = weakref.finalize(self, lambda: None)

    def load(self) -> None:
        """Load this process's copy of the KG now (when it keeps one)."""
        self._local_copy()

    @property
    def _store(self) -> ox.Store | None:
        """This process's copy of the KG (loaded on first use); None when the store keeps none."""
        return self._local_copy()

    def _local_copy(self) -> ox.Store | None:
        """This process's copy of the KG, loaded on first use: a gold rebuild that reuses every
        entry of a KG, or a gold verify that executes nothing, never loads it (on a 1M-triple KG,
        ~5 s). Checked against the files' hashes taken at open, which are the data version the
        store reports. None when the store keeps no local copy."""
        if not self._local:
            return None
        loaded = self._local_store
        if loaded is None:
            with self._load_lock:
                failure = self._load_failure
                if failure is not None:
                    raise type(failure)(str(failure))
                if self._local_store is None:
                    try:
                        loaded = load_kg(self._files, self._graphs)
                        if [sha256_file(p) for p in self._files] != self._file_sha256:
                            raise files_changed(self._label)
                    except KgevalError as exc:
                        self._load_failure = exc
                        raise
                    self._local_store = loaded
                loaded = self._local_store
        return loaded

    @property
    def version(self) -> str:
        return ox.__version__

    @property
    def data_sha256(self) -> str:
        return self._data_sha

    @property
    def sandbox(self) -> WorkerPool:
        """The worker processes that run this store's candidate queries."""
        return self._pool

    def start_ahead(self, workers: int) -> None:
        if self.candidate_limits.sandbox:
            self._pool.start_ahead(workers)

    def close(self) -> None:
        """Stop the sandbox workers (they also stop when the store is collected or the process ends)."""
        self._finalizer()

    def _ask(self, query: str, timeout_s: float) -> bool:
        answer = self._trusted(query, ask=True, ordered=False, row_cap=1, timeout_s=timeout_s)
        return bool(answer.boolean)

    def _select(
        self, query: str, shape: QueryShape, timeout_s: float, row_cap: int
    ) -> tuple[list[str], list[Row], int]:
        answer = self._trusted(query, ask=False, ordered=shape.ordered, row_cap=row_cap, timeout_s=timeout_s)
        return list(answer.variables), rows_from_cells(answer.rows), answer.total

    def _cells(self, query: str, shape: QueryShape, timeout_s: float, row_cap: int) -> CellResult:
        ask = shape.form == "ask"
        answer = self._trusted(query, ask=ask, ordered=shape.ordered, row_cap=1 if ask else row_cap, timeout_s=timeout_s)
        return _cell_result(answer, shape)

    def _values(self, query: str, shape: QueryShape, timeout_s: float, row_cap: int) -> ValueResult:
        if shape.form == "ask":
            return super()._values(query, shape, timeout_s, row_cap)
        store = self._store
        if store is None:
            request = _request(query, False, shape.ordered, row_cap, None, timeout_s, values=True, targets=self._targets)
            answer = self._pool.run(request, timeout_s).answer
        else:
            answer = run_with_deadline(
                lambda cancel: evaluate_values(store, query, ordered=shape.ordered, row_cap=row_cap, cancel=cancel), timeout_s
            )
        return ValueResult(*answer)

    def execute_repeated(self, query: str, *, executions: int, timeout_s: float, row_cap: int) -> list[CellResult]:
        """Without a copy of the KG in this process, one request to a sandbox worker, which runs
        the query `executions` times and sends a later execution's cells only when its terms
        differ from the first's (`_engine.evaluate_repeated`): else that execution is the
        first's result. In process, as the base store does."""
        if self._store is not None:
            return super().execute_repeated(query, executions=executions, timeout_s=timeout_s, row_cap=row_cap)
        shape = self._guard(query)
        ask = shape.form == "ask"
        request = _request(shape.text, ask, shape.ordered, 1 if ask else row_cap, None, timeout_s, executions=executions, targets=self._targets)
        first, *later = [_cell_result(reply.answer, shape) for reply in self._pool.run_all(request, timeout_s)]
        return [first, *(first if result is None else result for result in later)]

    def execute_probe(self, probe: str, cut: ProbeCut, *, timeout_s: float, row_cap: int) -> ProbeRows:
        """Read an ordered probe only as far as `cut` needs (`_engine.evaluate_probe`), in
        process or in a sandbox worker as `_trusted`; an unordered one (LIMIT without ORDER BY:
        every row is tied) whole, as the base store does."""
        shape = self._guard(probe)
        if shape.form != "select" or not shape.ordered:
            return super().execute_probe(probe, cut, timeout_s=timeout_s, row_cap=row_cap)
        store = self._store
        if store is None:
            request = _request(shape.text, False, True, row_cap, None, timeout_s, probe=cut, targets=self._targets)
            return self._pool.run(request, timeout_s).answer  # type: ignore[return-value]
        return run_with_deadline(lambda cancel: evaluate_probe(store, shape.text, cut, row_cap=row_cap, cancel=cancel), timeout_s)

    def _trusted(self, query: str, *, ask: bool, ordered: bool, row_cap: int, timeout_s: float) -> Answer:
        """A trusted query's answer: in process, or in a sandbox worker when this process holds
        no copy of the KG (no size caps there either)."""
        store = self._store
        if store is None:
            return self._pool.run(_request(query, ask, ordered, row_cap, None, timeout_s, targets=self._targets), timeout_s).answer

        def work(cancel: threading.Event) -> Answer:
            return evaluate(store, query, ask=ask, ordered=ordered, row_cap=row_cap, caps=None, cancel=cancel)

        return run_with_deadline(work, timeout_s)

    def _run_candidate(
        self, query: str, shape: QueryShape, timeout_s: float, row_cap: int
    ) -> tuple[QueryResult, QueryResources]:
        limits = self.candidate_limits
        if not limits.sandbox:
            return self._candidate_in_process(query, shape, timeout_s, row_cap)
        ask = shape.form == "ask"
        request = _request(query, ask, shape.ordered, row_cap, Caps(limits.max_value_bytes, limits.max_result_bytes), timeout_s, targets=self._targets)
        started = time.perf_counter()
        try:
            reply = self._pool.run(request, timeout_s)
        except QueryError as exc:
            exc.resources = QueryResources(
                wall_ms=(time.perf_counter() - started) * 1000, sandboxed=True, network_isolated=self._pool.network_isolated
            )
            raise
        resources = QueryResources(
            wall_ms=reply.wall_ms,
            result_bytes=reply.answer.result_bytes,
            peak_memory_bytes=reply.peak_memory_bytes,
            sandboxed=True,
            network_isolated=self._pool.network_isolated,
        )
        return _query_result(reply.answer, shape), resources

    def _candidate_in_process(
        self, query: str, shape: QueryShape, timeout_s: float, row_cap: int
    ) -> tuple[QueryResult, QueryResources]:
        limits, store = self.candidate_limits, self._store
        assert store is not None  # a store without a local copy has the sandbox on
        caps = Caps(limits.max_value_bytes, limits.max_result_bytes)
        started = time.perf_counter()

        def work(cancel: threading.Event) -> Answer:
            ask = shape.form == "ask"
            return evaluate(store, query, ask=ask, ordered=shape.ordered, row_cap=row_cap, caps=caps, cancel=cancel)

        answer = run_with_deadline(work, timeout_s)
        resources = QueryResources(wall_ms=(time.perf_counter() - started) * 1000, result_bytes=answer.result_bytes)
        return _query_result(answer, shape), resources


def _request(
    query: str,
    ask: bool,
    ordered: bool,
    row_cap: int,
    caps: Caps | None,
    timeout_s: float,
    values: bool = False,
    probe: ProbeCut | None = None,
    executions: int = 1,
    targets: tuple[str, ...] | None = None,
) -> tuple:
    """A sandbox worker's request (`_worker`'s protocol): `caps` None for a trusted query,
    `values` for a trusted SELECT read as bare values, `probe` for an order probe read as far
    as its cut needs, `executions` for a trusted query run that many times, `targets` the KGs
    it runs on in a worker of several. The CPU backstop only matters if this process dies
    mid-query and cannot kill the worker."""
    max_value, max_result = caps if caps is not None else (None, None)
    cut = tuple(probe) if probe is not None else None  # a plain tuple: the worker unpickles no kgeval class
    return (query, ask, ordered, row_cap, max_value, max_result, int(timeout_s * 2) + 5, values, cut, executions, targets)


def _query_result(answer: Answer, shape: QueryShape) -> QueryResult:
    if shape.form == "ask":
        return QueryResult(form="ask", boolean=answer.boolean, total=1)
    return select_result(answer.variables, rows_from_cells(answer.rows), answer.total, shape)


def _cell_result(answer: Answer | None, shape: QueryShape) -> CellResult | None:
    """A trusted answer's cells (None stays None: a later execution the worker found the same)."""
    if answer is None:
        return None
    return CellResult(shape.form, answer.variables, answer.rows, answer.total, answer.boolean, shape.ordered)


class EmbeddedKgs:
    """Several KGs on embedded stores served by one sandbox pool (a holdout KG's neighbours, for
    a run's checks of accepts on their suites): one template loads them all, each in a store of
    its own, and its workers answer a query on any of them, asked by name. Eight neighbours so
    cost one template and its workers, not eight, and a query runs on a suite's neighbours in
    one request (`execute_candidate_each`), each execution under the candidate budgets exactly
    as one of its own request is (its deadline, caps, row cap, CPU backstop, memory budget; a
    worker killed or ended by one is replaced before the next runs). `store(name)` is one of
    them as a Store (trusted queries, a single candidate). Closing it stops the pool."""

    def __init__(
        self, kgs: Mapping[str, tuple[Sequence[Path], Mapping[str, str]]], candidates: CandidateQueryConfig, file_sha256: Mapping[str, Sequence[str]] | None = None
    ) -> None:
        """`kgs`: name -> (its files, file name -> the named graph it came from). `file_sha256`:
        name -> the hashes its files must have (a manifest's); a worker whose loaded files hash
        otherwise is refused (`files_changed`), so no query runs on them. Default: hashed now."""
        files = {name: [Path(f) for f in paths] for name, (paths, _) in kgs.items()}
        graphs = {name: {n: iri for n, iri in (g or {}).items() if iri} for name, (_, g) in kgs.items()}
        hashes = {name: list(file_sha256[name]) if file_sha256 is not None else [sha256_file(p) for p in paths] for name, paths in files.items()}
        label = ", ".join(sorted(kgs)) or "(no KGs)"
        self.candidate_limits = candidates
        self._pool = WorkerPool(files, hashes, candidates, label, graphs)
        self._finalizer = weakref.finalize(self, self._pool.close)
        self._stores = {name: EmbeddedStore(files[name], graphs=graphs[name], candidates=candidates, served_by=(self._pool, name)) for name in files}

    @property
    def names(self) -> list[str]:
        return list(self._stores)

    def store(self, name: str) -> EmbeddedStore:
        return self._stores[name]

    def start_ahead(self, workers: int) -> None:
        if self.candidate_limits.sandbox:
            self._pool.start_ahead(workers)

    def close(self) -> None:
        self._finalizer()

    def execute_candidate_each(
        self, query: str, names: Sequence[str], *, timeout_s: float, row_cap: int
    ) -> list[tuple[CellResult, QueryResources] | QueryError]:
        """`Store.execute_candidate` of untrusted `query` on each KG of `names`, in order, as one
        request to one worker while none fails: per KG its result as cells (`CellResult.typed()`
        is the QueryResult `execute_candidate` gives) and what it cost, or the QueryError it
        raised (with `.resources`). The guard and the budget checks run once (they read the text
        alone); an execution that fails leaves the next KGs to a request of their own."""
        if not names:
            return []
        try:
            shape = self._stores[names[0]].approved_candidate(query)
        except QueryError as exc:
            exc.resources = exc.resources or QueryResources(wall_ms=0.0)
            return [exc] * len(names)
        if not self.candidate_limits.sandbox:  # each KG's store runs it in process, as it would alone
            return [self._in_process(self._stores[n], query, timeout_s, row_cap) for n in names]
        outcomes: list[tuple[CellResult, QueryResources] | QueryError] = []
        while len(outcomes) < len(names):
            outcomes += self._each(shape, tuple(names[len(outcomes):]), timeout_s, row_cap)
        return outcomes

    @staticmethod
    def _in_process(store: EmbeddedStore, query: str, timeout_s: float, row_cap: int) -> tuple[CellResult, QueryResources] | QueryError:
        try:
            result, resources = store.execute_candidate(query, timeout_s=timeout_s, row_cap=row_cap)
        except QueryError as exc:
            return exc
        return CellResult.of(result), resources

    def _each(self, shape: QueryShape, names: tuple[str, ...], timeout_s: float, row_cap: int) -> list:
        """The outcomes of one request on `names`: the results before the first failure, then that failure."""
        limits, ask = self.candidate_limits, shape.form == "ask"
        request = _request(shape.text, ask, shape.ordered, row_cap, Caps(limits.max_value_bytes, limits.max_result_bytes), timeout_s, targets=names)
        started = time.perf_counter()
        try:
            replies, error = self._pool.run_each(request, timeout_s)
        except QueryError as exc:  # no worker could be started
            replies, error = [], exc
        except MemoryError:
            replies, error = [], QueryOverBudget("the query's result did not fit in memory")
        isolated = self._pool.network_isolated
        outcomes: list = []
        for reply in replies:
            cells = _cell_result(reply.answer, shape)
            resources = QueryResources(
                wall_ms=reply.wall_ms, result_bytes=reply.answer.result_bytes, peak_memory_bytes=reply.peak_memory_bytes, sandboxed=True, network_isolated=isolated
            )
            outcomes.append((cells, resources))
            started += reply.wall_ms / 1000
        if error is not None:
            error.resources = error.resources or QueryResources(wall_ms=(time.perf_counter() - started) * 1000, sandboxed=True, network_isolated=isolated)
            outcomes.append(error)
        return outcomes
