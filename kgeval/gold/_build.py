"""`kgeval gold rebuild`: execute the reference queries that changed and store the full typed
result of every question.

Each query runs `gold.executions` times (differing results flag it nondeterministic), is
scanned for volatile and engine-dependent constructs, and, when it has a cut (LIMIT/OFFSET,
or an ordered result cut by the row cap), is probed for ties at the cut (DESIGN invariant 2:
an undetermined answer is flagged with its acceptable answers, never silently frozen).

Incremental: a question's previous entry is reused when its query hash, the KG's data hash,
the engine and its version, the row cap and the build settings are unchanged (`force`
executes everything). A query that fails is recorded as a failed entry with its error and the
rest of the gold is still written. Each entry is written to its KG's file as soon as it is
built, and a reused entry is read back from the previous gold only when it is written
(`_reuse`: the previous KG file is indexed, not held), so memory follows the largest entry, not
the holdout; the new version is switched in with one rename at the end (`_write`, `_layout`).
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from concurrent.futures import Future
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from kgeval._activity import Activity
from kgeval._gc import RARE_COLLECTIONS
from kgeval.config import GoldConfig
from kgeval.errors import CheckFailed, KgevalError, QueryError
from kgeval.gold._layout import has_gold, writer_lock
from kgeval.gold._model import GoldEntry, GoldFailure, GoldFlag
from kgeval.gold._reuse import PreviousEntry, PreviousKg, index_kg_file
from kgeval.gold._store import GoldReader, StoreIdentity, load_gold, store_identity
from kgeval.gold._ties import find_ties, needs_tie_check
from kgeval.gold._write import GoldWriter, build_settings, latest_staging
from kgeval.holdout import Holdout, KnowledgeGraph, Question, read_manifest
from kgeval.stores import CellResult, QueryResult, Store, guard_query, limited_sub_selects, query_determinism

StoreFactory = Callable[[KnowledgeGraph], Store]
Outcome = Literal["built", "reused", "failed", "excluded"]
"""What a rebuild did with one question: executed it, reused its unchanged entry, recorded its
failure, or left it without gold because it is excluded on record (not executed, or its failure
kept): counted apart from failures in every rebuild, whichever it was."""
Progress = Callable[[str, Outcome], None]


@dataclass
class RebuildReport:
    """What a rebuild did, for the CLI and the benchmark. It holds no entries while writing
    (each is written as it is built); `entries` reads them back from the gold written."""

    built: list[str] = field(default_factory=list)
    """Question ids whose reference query was executed and gave a new entry."""
    reused: list[str] = field(default_factory=list)
    """Question ids whose unchanged entry was kept without executing anything."""
    failures: list[GoldFailure] = field(default_factory=list)
    """Every failed reference query in the gold: failed now, or an excluded question's failure
    kept unchanged. built + reused + failures cover every question once."""
    excluded: set[str] = field(default_factory=set)
    """The holdout's excluded question ids."""
    flagged: dict[GoldFlag, list[str]] = field(default_factory=lambda: {flag: [] for flag in get_args(GoldFlag)})
    """For every flag, the questions ("kg/question_id") whose gold carries it."""
    reuse_note: str | None = None
    """Why nothing was reused although a gold existed (it did not verify), if so."""
    version: Path | None = None
    """The gold version switched in, or None when nothing was written."""
    store_seconds: float = 0.0
    """Time spent building entries (executions, tie probes, checks) of the questions built,
    summed over questions (with `gold.concurrency` > 1, more than the time it took)."""
    load_seconds: float = 0.0
    """Time spent opening the stores and loading KG files (a KG is loaded only when one of its
    questions executes)."""
    total_seconds: float = 0.0
    include_excluded: bool = False
    """Whether the reference queries of excluded questions were executed (else left out)."""
    not_executed: list[str] = field(default_factory=list)
    """Excluded question ids whose reference query was not executed (no unchanged record to keep)."""
    activity: Activity = field(default_factory=Activity)
    """The reference queries in flight (`kg/id`, with the timeout they run to), for a heartbeat
    that names them while they run (kgeval._activity)."""
    _kept: list[GoldEntry] | None = None

    @property
    def ok(self) -> bool:
        """True unless a reference query failed that is not excluded on record."""
        return not self.unexcluded_failures

    @property
    def unexcluded_failures(self) -> list[GoldFailure]:
        return [f for f in self.failures if f.question_id not in self.excluded]

    @property
    def excluded_failures(self) -> list[GoldFailure]:
        """The questions excluded on record left without gold: not executed, or failed."""
        return [f for f in self.failures if f.question_id in self.excluded]

    @property
    def entries(self) -> list[GoldEntry]:
        """Every entry of the gold: read back (verified) from the version written."""
        if self._kept is not None:
            return self._kept
        return list(load_gold(self.version).values()) if self.version is not None else []

    def note(self, kg: str, entry: GoldEntry) -> None:
        for flag in entry.flags:
            self.flagged[flag].append(f"{kg}/{entry.question_id}")

    def _mark(self) -> tuple[int, ...]:
        """Where the lists stand, to undo one KG's outcomes (`_undo`) when it is built again."""
        return (len(self.built), len(self.reused), len(self.failures), len(self.not_executed), *(len(v) for v in self.flagged.values()))

    def _undo(self, mark: tuple[int, ...]) -> None:
        built, reused, failures, not_executed, *flagged = mark
        del self.built[built:], self.reused[reused:], self.failures[failures:], self.not_executed[not_executed:]
        for names, kept in zip(self.flagged.values(), flagged):
            del names[kept:]


def rebuild_gold(
    holdout: Holdout,
    store_for: StoreFactory,
    config: GoldConfig,
    out_dir: Path | None,
    progress: Progress | None = None,
    *,
    force: bool = False,
    include_excluded: bool = False,
    activity: Activity | None = None,
) -> RebuildReport:
    """Build the gold of every question, reusing unchanged entries of the gold at `out_dir`
    (unless `force`), and switch the new version in. With `out_dir` None nothing is read or
    written and the entries are kept in the report. The reference query of a question excluded
    on record is not executed unless `include_excluded` (its unchanged previous entry or failure
    is kept; else a failure saying so is recorded): an excluded question is never asked, and
    excluded queries are often the ones that run to their timeout. `activity` is told which
    questions are being built, as they start and end."""
    started = time.perf_counter()
    report = RebuildReport(excluded=set(holdout.exclusions), include_excluded=include_excluded, activity=activity or Activity())
    with RARE_COLLECTIONS:  # see kgeval/_gc.py: 13% of a rebuild went to the collector
        _rebuild(holdout, store_for, config, out_dir, report, progress, force)
    report.total_seconds = time.perf_counter() - started
    return report


def _rebuild(
    holdout: Holdout, store_for: StoreFactory, config: GoldConfig, out_dir: Path | None, report: RebuildReport, progress: Progress | None, force: bool
) -> None:
    if out_dir is None:
        report._kept = []
        for kg in holdout.kgs:
            report._kept += [r for r in _rebuild_kg(kg, store_for, config, PreviousKg({}, {}), report, progress) if isinstance(r, GoldEntry)]
    else:
        with writer_lock(out_dir):
            _rebuild_into(holdout, store_for, config, Path(out_dir), report, progress, force)


def _rebuild_into(
    holdout: Holdout, store_for: StoreFactory, config: GoldConfig, out_dir: Path, report: RebuildReport, progress: Progress | None, force: bool
) -> None:
    sources = [] if force else _previous_golds(out_dir, config, report)
    # On any interruption (Ctrl-C, an error, a kill) the gold in force stays as it was and the
    # staging directory keeps the KGs finished so far for the next rebuild to reuse; it is
    # removed once a rebuild switches its version in.
    writer = GoldWriter(out_dir, read_manifest(holdout.root)["sha256"], config)
    for kg in holdout.kgs:
        previous, mark = _previous_kg(sources, kg.id, report), report._mark()
        try:
            writer.add_kg(kg.id, _rebuild_kg(kg, store_for, config, previous, report, progress))  # written as built
        except _ReuseFailed as exc:  # a previous entry failed its checks when read: nothing of this KG is reused
            report._undo(mark)
            report.reuse_note = f"the previous gold does not verify, KG {kg.id} is executed again: {exc}"
            writer.add_kg(kg.id, _rebuild_kg(kg, store_for, config, PreviousKg({}, {}), report, progress))
    report.version = writer.commit()


def _previous_golds(out_dir: Path, config: GoldConfig, report: RebuildReport) -> list[GoldReader]:
    """The golds whose entries may be reused: a killed rebuild's finished KGs first, then the
    gold in force. Only golds that verify and were built with the same settings count."""
    sources = []
    for where in (latest_staging(out_dir), out_dir):
        if where is None or not has_gold(where):
            continue
        try:
            reader = GoldReader(where)
        except KgevalError as exc:
            report.reuse_note = f"the previous gold does not verify, every query is executed: {exc}"
            continue
        if reader.manifest.build == build_settings(config) and reader.manifest.row_cap == config.row_cap:
            sources.append(reader)
    return sources


class _ReuseFailed(CheckFailed):
    """A previous entry indexed for reuse did not verify when read back to be written."""


def _previous_kg(sources: list[GoldReader], kg: str, report: RebuildReport) -> PreviousKg:
    """The previous entries (indexed) and failures of one KG (earlier sources win), each file
    verified before it is indexed."""
    previous = PreviousKg({}, {})
    for reader in reversed(sources):
        if f"{kg}.json" not in reader.manifest.files:
            continue
        try:
            read = index_kg_file(reader, f"{kg}.json")
        except CheckFailed as exc:  # an altered file is never reused: its questions are executed again
            report.reuse_note = f"the previous gold does not verify, KG {kg} is executed again: {exc}"
            continue
        previous.entries.update(read.entries)
        previous.failures.update(read.failures)
    return previous


def _rebuild_kg(
    kg: KnowledgeGraph, store_for: StoreFactory, config: GoldConfig, previous: PreviousKg, report: RebuildReport, progress: Progress | None
) -> Iterator[GoldEntry | GoldFailure]:
    """Each question's entry (reused or built) or failure, in question order, as it is made:
    the caller writes and drops it, so memory holds a few entries (`config.concurrency` built
    at once, `_ahead`), not the KG's gold. _ReuseFailed when a reused entry does not verify as
    it is read."""
    t0 = time.perf_counter()
    store = store_for(kg)
    identity = store_identity(store)
    report.load_seconds += time.perf_counter() - t0

    def decided() -> Iterator[tuple[Question, PreviousEntry | GoldFailure | None]]:
        for question in kg.questions:
            reused = _reuse(question, identity, config, previous, report)
            if reused is None:  # a query to execute: the KG is loaded by the first (never when every entry is reused)
                t0 = time.perf_counter()
                store.load()
                report.load_seconds += time.perf_counter() - t0
            yield question, reused

    def build(question: Question) -> _Built:
        with report.activity.step(f"{kg.id}/{question.id} (reference query, timeout {config.timeout_s:g} s)"):
            return _build(kg.id, question, store, config)

    ahead = _ahead(decided(), build, config.concurrency)
    try:
        yield from _settle_kg(kg.id, ahead, report, progress)
    finally:
        ahead.close()  # on a reused entry that fails its checks: no later question is built


def _settle_kg(
    kg_id: str, ahead: Iterator[tuple[Question, PreviousEntry | GoldFailure | None, _Built | None]], report: RebuildReport, progress: Progress | None
) -> Iterator[GoldEntry | GoldFailure]:
    """Each question's entry or failure, in question order, noted in the report."""
    for question, reused, built in ahead:
        if built is not None:
            result, seconds = built
            report.store_seconds += seconds
            if isinstance(result, GoldEntry):
                report.built.append(question.id)
        else:
            result = _read(reused) if isinstance(reused, PreviousEntry) else reused
        if isinstance(result, GoldEntry):
            report.note(kg_id, result)
        else:
            report.failures.append(result)
        if progress:
            failed: Outcome = "excluded" if question.id in report.excluded else "failed"
            outcome: Outcome = failed if isinstance(result, GoldFailure) else "reused" if reused is not None else "built"
            progress(question.id, outcome)
        yield result


_Built = tuple["GoldEntry | GoldFailure", float]
"""A question built: its entry or failure, and the seconds it took."""


def _ahead(
    decided: Iterator[tuple[Question, PreviousEntry | GoldFailure | None]], build: Callable[[Question], _Built], concurrency: int
) -> Generator[tuple[Question, PreviousEntry | GoldFailure | None, _Built | None], None, None]:
    """(question, reused, built) of each decided question, in question order; `build` runs for
    those not reused (`reused` None), on up to `concurrency` threads, ahead of the caller by at
    most `concurrency` questions. The threads are daemons (a rebuild interrupted does not wait
    for a query in flight: an embedded store's sandbox workers die with this process). When
    `build` raises, or the caller stops reading, no further question is built and the error is
    raised here, in question order."""
    jobs: queue.SimpleQueue[tuple[Question, Future[_Built]] | None] = queue.SimpleQueue()
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def work() -> None:
        while (job := jobs.get()) is not None:
            question, future = job
            if stop.is_set():  # the rebuild stopped before this question's turn
                future.cancel()
                continue
            try:
                future.set_result(build(question))
            except BaseException as exc:  # noqa: BLE001 - raised on the caller's thread, in order
                future.set_exception(exc)

    pending: deque[tuple[Question, PreviousEntry | GoldFailure | None, Future[_Built] | None]] = deque()
    try:
        for question, reused in decided:
            future: Future[_Built] | None = None
            if reused is None:
                if len(threads) < concurrency:
                    threads.append(threading.Thread(target=work, daemon=True, name=f"kgeval-gold-{len(threads)}"))
                    threads[-1].start()
                future = Future()
                jobs.put((question, future))
            pending.append((question, reused, future))
            if len(pending) > concurrency:
                yield _settled(*pending.popleft())
        while pending:
            yield _settled(*pending.popleft())
    finally:
        stop.set()
        for _ in threads:
            jobs.put(None)


def _settled(
    question: Question, reused: PreviousEntry | GoldFailure | None, future: Future[_Built] | None
) -> tuple[Question, PreviousEntry | GoldFailure | None, _Built | None]:
    """The question with its build's outcome, waited for (its error raised)."""
    return question, reused, None if future is None else future.result()


def _read(previous: PreviousEntry) -> GoldEntry:
    try:
        return previous.read()
    except CheckFailed as exc:
        raise _ReuseFailed(str(exc)) from None


def _reuse(
    question: Question, identity: StoreIdentity, config: GoldConfig, previous: PreviousKg, report: RebuildReport
) -> PreviousEntry | GoldFailure | None:
    """The previous entry when nothing that shapes it changed; the previous failure of an
    excluded question whose query is unchanged (excluded on record: not tried again until
    `--force`, or `include_excluded` for one never executed); a failure saying it was not
    executed for an excluded question (unless `include_excluded`); else None (execute)."""
    old = previous.entries.get(question.id)
    if old is not None and old.query_sha256 == question.sparql_sha256 and old.row_cap == config.row_cap and old.identity == identity:
        report.reused.append(question.id)
        return old
    failed = previous.failures.get(question.id)
    unexecuted = failed is not None and failed.error == NOT_EXECUTED
    if failed is not None and question.id in report.excluded and failed.query_sha256 == question.sparql_sha256 and not (unexecuted and report.include_excluded):
        return failed
    if question.id in report.excluded and not report.include_excluded:
        report.not_executed.append(question.id)
        return GoldFailure(kg=question.kg, question_id=question.id, error=NOT_EXECUTED, query_sha256=question.sparql_sha256)
    return None


NOT_EXECUTED = "not executed: excluded on record (`kgeval gold rebuild --include-excluded` executes it)"
"""The failure recorded for an excluded question whose reference query was left out."""


def _build(kg_id: str, question: Question, store: Store, config: GoldConfig) -> _Built:
    """`build_entry`, or the failure of its reference query, and the seconds it took."""
    t0 = time.perf_counter()
    try:
        return build_entry(kg_id, question, store, config), time.perf_counter() - t0
    except QueryError as exc:
        return GoldFailure(kg=kg_id, question_id=question.id, error=str(exc), query_sha256=question.sparql_sha256), time.perf_counter() - t0


def build_entry(
    kg_id: str, question: Question, store: Store, config: GoldConfig, first: CellResult | None = None, *, vocabulary: bool = True
) -> GoldEntry:
    """Execute one reference query `config.executions` times and check it for ties. `first`:
    its first execution, when the caller has already run it on this store (`execute_cells`,
    same timeout and row cap): only the later ones run (a suite build's neighbours).
    `vocabulary`: record a false ASK's missing vocabulary (the holdout's gold, which the
    checklist reads; a suite's entries are judged against, never read so: False)."""
    # plain cells for every execution (most are only hashed); Terms for the first one only
    query, more = question.reference_query, config.executions - (first is not None)
    ran = store.execute_repeated(query, executions=more, timeout_s=config.timeout_s, row_cap=config.row_cap) if more else []
    first, *later = ran if first is None else [first, *ran]
    first_sha256 = first.sha256()
    # an execution equal to the first (the first itself when the store found it so, else
    # compared in C, cell by cell) has its hash: most do
    hashes = [first_sha256 if e is first or e == first else e.sha256() for e in later]
    result, hashes = first.typed(), [first_sha256, *hashes]
    sparql = question.query_language == "sparql"  # the static checks and the tie probe parse SPARQL
    determinism = query_determinism(question.sparql) if sparql else None
    volatile = determinism.volatile if determinism else ()
    engine_dependent = determinism.engine_dependent if determinism else ()
    nondeterministic = [f"uses {name}" for name in volatile]
    if len(set(hashes)) > 1:
        nondeterministic.insert(0, f"{len(set(hashes))} different results in {len(hashes)} executions")
    ties, tie_error = None, None
    shape = guard_query(question.sparql) if sparql else None
    if shape is not None and needs_tie_check(shape, result):
        try:
            ties = find_ties(store, question.sparql, shape, result, timeout_s=config.timeout_s, probe_rows=config.tie_probe_rows)
        except QueryError as exc:
            tie_error = str(exc)
    if sparql:
        cuts, cut_error = _sub_select_cuts(store, question.sparql, config)
        engine_dependent, tie_error = (*engine_dependent, *cuts), tie_error or cut_error
    return GoldEntry(
        kg=kg_id,
        question_id=question.id,
        query_sha256=question.sparql_sha256,
        kg_sha256=store.data_sha256,
        engine=store.name,
        engine_version=store.version,
        row_cap=config.row_cap,
        result=result,
        result_sha256=hashes[0],
        execution_sha256s=hashes,
        nondeterministic=nondeterministic,
        engine_dependent=list(engine_dependent),
        ties=ties,
        tie_check_error=tie_error,
        missing_vocabulary=_false_ask_vocabulary(store, question, result, config) if sparql and vocabulary else None,
    )


def _false_ask_vocabulary(store: Store, question: Question, result: QueryResult, config: GoldConfig) -> list[str] | None:
    """`GoldEntry.missing_vocabulary` of a false ASK (None for any other result, or when the
    store fails the question: the checklist then asks the run's KG). Asked at build, so a run's
    checklist need not wait for its sandbox workers to load the KGs (0.6 s of a 22-KG run)."""
    if result.form != "ask" or result.boolean:
        return None
    from kgeval.judges import KgLookup, missing_vocabulary  # local: the judges (rdflib) only for false ASKs

    try:
        return missing_vocabulary(question.sparql, KgLookup(store, (), timeout_s=config.timeout_s))
    except KgevalError:
        return None


def _sub_select_cuts(store: Store, sparql: str, config: GoldConfig) -> tuple[list[str], str | None]:
    """Why a sub-select's LIMIT/OFFSET leaves the answer to the engine (its cut goes through
    rows with equal ORDER BY keys, or it has no ORDER BY and cuts at all), and why one could
    not be probed, if so. kgeval cannot compute the acceptable answers of the whole query
    then, so the gold is flagged, never silently frozen to the engine's choice (invariant 2)."""
    reasons, error = [], None
    for sub in limited_sub_selects(sparql):
        shape = guard_query(sub)
        try:
            result = store.execute(sub, timeout_s=config.timeout_s, row_cap=config.tie_probe_rows)
            ties = find_ties(store, sub, shape, result, timeout_s=config.timeout_s, probe_rows=config.tie_probe_rows)
        except QueryError as exc:
            error = f"a sub-select's LIMIT/OFFSET could not be probed for ties: {exc}"
            continue
        if ties.tied:
            tied = sum(len(g.candidates) for g in ties.groups)
            kept = sum(g.choose for g in ties.groups)
            among = "rows with equal ORDER BY keys" if shape.ordered else "rows (no ORDER BY)"
            reasons.append(f"a sub-select's LIMIT/OFFSET keeps {kept} of {tied} {among}: which ones is up to the engine, and the answer may depend on it")
    return reasons, error
