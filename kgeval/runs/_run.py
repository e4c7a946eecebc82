"""`kgeval run`: plan, pass the pre-eval checklist, then every question x seed against a
system, N in flight, each attempt persisted and judged as it completes; resume a killed run.

No checklist, no run: `execute_run` takes the checklist as a callable (built by
`kgeval.checklists`), evaluates it on the plan, stores the receipt with the run, and sends
nothing to the system unless every item passed.

One gold: `plan_run` resolves `gold/current` once to its version directory (`RunPlan.gold_dir`),
and the run's recorded manifest hash, the checklist and every verdict read that directory, held
from a rebuild's garbage collection from the plan to the run's end. A `gold rebuild` that switches `current`
meanwhile changes nothing the run reads; a version that changed all the same (edited, removed
before it was held) refuses the dispatch, never judges against another gold.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

import kgeval
from kgeval._duckdb import DiskFull
from kgeval._files import sha256_json
from kgeval._activity import Activity
from kgeval._gc import RARE_COLLECTIONS, without_collections
from kgeval.config import PROPERTY_GRAPH_KINDS, KgevalConfig
from kgeval.errors import CheckFailed, InputError, KgevalError
from kgeval.gold import GoldIndex, GoldLoans, GoldReader, VersionHold, gold_manifest_sha256, has_suites, hold_version, index_gold, read_suites, suites_path, version_dir
from kgeval.holdout import QUESTIONS_FILE, Holdout, Question, load_holdout, read_manifest
from kgeval.judges import Judge, KgLookup, judges_from_config, kg_lookup
from kgeval.runs._attempt import ExecutionCache, VerdictCache, run_attempt
from kgeval.runs._db import ResultsDB, attempt_rows_of
from kgeval.runs._dispatch import RateLimiter, dispatch
from kgeval.runs._journal import RunWriter
from kgeval.runs._model import Attempt, Derivation, Receipt, RunMetadata, RunQuestion
from kgeval.runs._suite_check import SuiteChecker
from kgeval.stores import Store, open_kg_stores
from kgeval.systems import System

Progress = Callable[[str], None]


class ChecklistFailed(CheckFailed):
    """The pre-eval checklist failed: nothing was sent; the message lists the failing items."""

    def __init__(self, receipt: Receipt, run_id: str) -> None:
        lines = [f"{i.item}: {i.observed}" + (f" — {i.detail}" if i.detail else "") for i in receipt.failures()]
        super().__init__(
            f"pre-eval checklist failed ({len(lines)} of {len(receipt.items)} items); nothing was dispatched "
            f"(receipt stored with refused run {run_id}):\n  " + "\n  ".join(lines)
        )
        self.receipt = receipt


@dataclass
class RunPlan:
    """Everything a run needs, built before anything is sent: the checklist reads it."""

    holdout: Holdout
    gold_dir: Path
    """The gold version directory the run is judged against: `gold/current` resolved once."""
    system: System
    config: KgevalConfig
    metadata: RunMetadata
    judges: dict[str, Judge]
    stores: dict[str, Store] = field(default_factory=dict)
    compare_with: list[str] = field(default_factory=list)
    """Run ids the checklist must find this run comparable with (besides those it names)."""
    gold_hold: VersionHold | None = None
    """Keeps `gold_dir` from a rebuild's garbage collection until the run ends (closed with the stores)."""
    suite_dir: Path | None = None
    """The suite version accepts are checked on (`<gold>/suites/current` resolved once); None
    when the run is judged without suites."""
    suite_hold: VersionHold | None = None
    """Keeps `suite_dir` from a suite build's garbage collection until the run ends, as `gold_hold`."""

    @property
    def gold_root(self) -> Path:
        """The gold directory the run was given (`gold/`, holding `current`, the versions and the
        test suites), as its metadata records it; `gold_dir` is the version within it."""
        return Path(self.metadata.gold)

    def closeables(self, *, system: bool = True) -> tuple[object, ...]:
        """What ends with the run: the system, the stores' sandbox workers, the gold and suite holds
        (`system=False`: a run refused before dispatch leaves its system to the caller)."""
        return (*([self.system] if system else []), *self.stores.values(), self.gold_hold, self.suite_hold)


Checklist = Callable[[RunPlan, ResultsDB], Receipt]
"""Evaluates the pre-eval checklist on a plan (see kgeval.checklists.pre_eval_checklist)."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def git_commit() -> str | None:
    """The commit of the kgeval checkout in use, when it is one."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(kgeval.__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def new_run_id(system: str) -> str:
    import secrets

    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{system}-{secrets.token_hex(3)}"


def question_set_sha256(holdout: Holdout) -> str:
    """Over the questions the run asks (those excluded on record are not asked)."""
    return sha256_json([[q.kg, q.id, q.question, q.sparql_sha256] for q in holdout.evaluated_questions()])


def _manifest_sha(read: Callable[[], str]) -> str:
    try:
        return read()
    except (KgevalError, OSError):
        return "missing"


def plan_run(
    holdout: Holdout,
    gold_dir: Path,
    system: System,
    config: KgevalConfig,
    *,
    replay: Path | None = None,
    run_id: str | None = None,
    compare_with: list[str] | None = None,
    start_ahead: int = 0,
    derived_from: Derivation | None = None,
    stores: dict[str, Store] | None = None,
) -> RunPlan:
    """Open the stores and describe the run; verifies nothing (the checklist does, item by item).
    `start_ahead`: candidate queries each store gets ready for as soon as it is open (the
    embedded store's sandbox workers load their KG while the rest of the run starts).
    `stores`: the holdout's stores opened ahead by the caller (`open_stores`, so that their
    sandbox workers load the KGs while the caller imports and reads what the run needs): the
    plan takes them over, and they are closed with it (or here, when planning fails)."""
    hold = suite_hold = None
    try:
        if stores is not None and list(stores) != [kg.id for kg in holdout.kgs]:
            raise ValueError(f"stores opened ahead for KGs {list(stores)}; the holdout has {[kg.id for kg in holdout.kgs]}")
        judges = judges_from_config(config.judges)
        held = _held_version(gold_dir)
        hold = hold_version(held)
        suite_dir = _held_version(suites_path(gold_dir)) if config.suite.check_accepts and has_suites(gold_dir) else None
        suite_hold = hold_version(suite_dir) if suite_dir is not None else None
        stores = open_stores(holdout, config, start_ahead) if stores is None else stores
    except BaseException:
        _close_all((*(stores or {}).values(), hold, suite_hold))
        raise
    first = next(iter(stores.values()))
    metadata = RunMetadata(
        run_id=run_id or new_run_id(system.name),
        system=system.name,
        system_kind=system.kind,
        system_version=system.version,
        reasoning=dict(system.reasoning),
        pipeline=system.pipeline.model_dump(mode="json") if system.pipeline is not None else None,
        holdout=str(holdout.root),
        gold=str(gold_dir),
        replay=str(replay) if replay is not None else None,
        holdout_manifest_sha256=_manifest_sha(lambda: read_manifest(holdout.root)["sha256"]),
        gold_manifest_sha256=_manifest_sha(lambda: gold_manifest_sha256(held)),
        suite_manifest_sha256=_suite_manifest(suite_dir),
        question_set_sha256=question_set_sha256(holdout),
        excluded={qid: e.why for qid, e in sorted(holdout.exclusions.items())},
        confirmed_empty={  # those that hold for the current reference query
            q.id: holdout.confirmed_empty[q.id].why for q in holdout.questions() if q.id in holdout.confirmed_empty and holdout.empty_confirmed(q)
        },
        store_engine=f"{first.name} {first.version}",
        seeds=list(range(config.run.seeds)),
        primary_judge=config.judges.primary,
        judge_versions={name: j.version for name, j in judges.items()},
        config_sha256=sha256_json(config.model_dump(mode="json")),
        config=config.model_dump(mode="json"),
        kgeval_version=kgeval.__version__,
        git_commit=git_commit(),
        started_at=_now(),
        sealed_when_ended=True,
        derived_from=derived_from,
    )
    return RunPlan(holdout, held, system, config, metadata, judges, stores, list(compare_with or []), hold, suite_dir, suite_hold)


def _held_version(gold_dir: Path) -> Path:
    """The version directory `gold/current` points at now, read once (`gold_dir` itself in
    the layout before versions, or when it cannot be resolved: the checklist says why)."""
    try:
        return version_dir(gold_dir)
    except KgevalError:
        return Path(gold_dir)


def _suite_manifest(suite_dir: Path | None) -> str | None:
    """The manifest hash of the suite version accepts will be checked on; None when the run is
    judged without suites (none built, or `suite.check_accepts` off). Suites that do not verify
    are recorded as "missing" for the checklist to refuse, never skipped in silence."""
    if suite_dir is None:
        return None
    return _manifest_sha(lambda: GoldReader(suite_dir).manifest_sha256)


def open_stores(holdout: Holdout, config: KgevalConfig, start_ahead: int = 0) -> dict[str, Store]:
    """Every KG's store as a run opens it (`kgeval.stores.open_kg_stores`), in holdout order:
    the run process holds no copy of a KG; each store starts `start_ahead` sandbox workers as
    soon as it is open."""
    return open_kg_stores(holdout.kgs, config.store, start_ahead)


def run_config(metadata: RunMetadata) -> KgevalConfig:
    """The configuration the run recorded and ran with (candidate timeout, row cap, predeclared
    prefixes, store, judges), else the defaults when the record does not validate. Whatever
    executes the run's candidates again (the sample view, the QALD export) reads it, so it
    executes what the run executed."""
    try:
        return KgevalConfig.model_validate(metadata.config)
    except ValidationError:
        return KgevalConfig()


_CLOSING_THREADS = 8


def _close_all(closeables: Iterable[object]) -> None:
    """Close what has a `close` (a store's sandbox workers stop with it), several at once: a
    store's close waits for its worker processes to end and be reaped, and one after another
    twenty small KGs' stores took 0.2-0.3 s of a run's end. Every close is called; the first
    error is raised once all have returned."""
    closes = [close for close in (getattr(c, "close", None) for c in closeables) if close is not None]
    if len(closes) <= 1:
        for close in closes:
            close()
        return
    with ThreadPoolExecutor(max_workers=min(len(closes), _CLOSING_THREADS), thread_name_prefix="kgeval-close") as pool:
        futures = [pool.submit(close) for close in closes]
    for future in futures:
        future.result()


def execute_run(
    holdout: Holdout,
    gold_dir: Path,
    system: System,
    config: KgevalConfig,
    db: ResultsDB,
    progress: Progress | None = None,
    *,
    checklist: Checklist,
    replay: Path | None = None,
    compare_with: list[str] | None = None,
    activity: Activity | None = None,
    derived_from: Derivation | None = None,
    stores: dict[str, Store] | None = None,
) -> RunMetadata:
    """Plan, pass the checklist (or raise ChecklistFailed, sending nothing), run every question x
    seed; return the finished run's metadata. `activity` is told which attempts are in flight;
    `derived_from`: the system answers from a source's stored attempts (`kgeval rejudge`),
    recorded with the run; `stores`: opened ahead (`open_stores`), taken over by the run and
    closed when it ends, whatever happens."""
    db.release()  # each call below opens the file for its own work: other processes share it (`_journal`)
    with RARE_COLLECTIONS:  # the whole run, its checklist's gold scan and its seal too (kgeval/_gc.py)
        # every question is pending: the sandbox workers load their KGs during the checklist
        plan = plan_run(
            holdout, gold_dir, system, config, replay=replay, compare_with=compare_with, start_ahead=config.run.concurrency, derived_from=derived_from,
            stores=stores,
        )  # fmt: skip
        try:
            receipt = checklist(plan, db)
            questions = [_run_question(q) for q in holdout.evaluated_questions()]
            if not receipt.passed:
                db.create_run(plan.metadata, questions, receipt, status="refused")
                raise ChecklistFailed(receipt, plan.metadata.run_id)
            db.create_run(plan.metadata, questions, receipt)
            writer = RunWriter(db, plan.metadata.run_id, config.run.db_flush_s)
        except BaseException:
            _close_all(plan.closeables(system=False))
            raise
        return _dispatch_pending(plan, db, progress, writer, activity)


def resume_run(
    run_id: str,
    db: ResultsDB,
    system_for: Callable[[RunMetadata, KgevalConfig], System],
    progress: Progress | None = None,
    *,
    checklist: Checklist,
    activity: Activity | None = None,
) -> RunMetadata:
    """Continue a stopped run: the checklist again, then only the attempts not yet persisted.
    Refuses when the holdout, gold, questions, judges, configuration or system changed, and
    while another process writes the run. What its journal holds (a killed run's last attempts)
    is moved into the database first. `activity` is told which attempts are in flight, as
    `execute_run`'s is."""
    db.release()  # each call below opens the file for its own work: other processes share it (`_journal`)
    metadata = db.metadata(run_id)
    status = db.status(run_id)
    if status == "refused":
        raise InputError(f"run {run_id} was refused by the pre-eval checklist and never started; start a new run")
    if status == "finished":
        return metadata
    db.check_start(run_id)  # a run made up in the file, or whose start was edited, is not continued and sealed
    writer = RunWriter(db, run_id, KgevalConfig.model_validate(metadata.config).run.db_flush_s)
    try:
        writer.recover()
        return _resume_taken(run_id, metadata, db, system_for, progress, checklist, writer, activity)
    finally:
        writer.close()


def _resume_taken(
    run_id: str, metadata: RunMetadata, db: ResultsDB, system_for: Callable[[RunMetadata, KgevalConfig], System],
    progress: Progress | None, checklist: Checklist, writer: RunWriter, activity: Activity | None,
) -> RunMetadata:  # fmt: skip
    """`resume_run` once the run's journal is held and moved in."""
    if db.status(run_id) == "finished":  # another process ended it meanwhile
        return db.metadata(run_id)
    config = KgevalConfig.model_validate(metadata.config)
    holdout = load_holdout(Path(metadata.holdout))
    system = system_for(metadata, config)
    plan = plan_run(
        holdout, Path(metadata.gold), system, config, replay=Path(metadata.replay) if metadata.replay else None, run_id=run_id, derived_from=metadata.derived_from
    )
    try:
        _check_resumable(plan, metadata, db, checklist)
    except BaseException:
        _close_all(plan.closeables(system=False))
        raise
    plan.metadata = metadata.model_copy(update={"resumed_at": [*metadata.resumed_at, _now()]})
    db.update_metadata(plan.metadata)
    return _dispatch_pending(plan, db, progress, writer, activity)


def _check_resumable(plan: RunPlan, metadata: RunMetadata, db: ResultsDB, checklist: Checklist) -> None:
    """Refuse to resume when what the run started with changed, or the checklist fails now
    (its receipt is stored either way)."""
    run_id = metadata.run_id
    changed = _resume_differences(metadata, plan.metadata)
    if metadata.question_set_sha256 != plan.metadata.question_set_sha256:  # which file, which question, which field
        changed = [*question_set_changes(db.questions(run_id), plan.holdout, Path(metadata.gold)), *changed]
    if changed:
        raise CheckFailed(f"cannot resume run {run_id}: changed since it started: {'; '.join(changed)}")
    receipt = checklist(plan, db)
    # numbered by the receipts stored, not the resumes that ran: a refused resume keeps its receipt
    phase = f"resume-{sum(p.startswith('resume-') for p in db.receipt_phases(run_id)) + 1}"
    db.record_receipt(run_id, phase, receipt)
    if not receipt.passed:
        raise ChecklistFailed(receipt, run_id)


_RESUME_FIELDS = (
    "system", "system_version", "holdout_manifest_sha256", "gold_manifest_sha256", "question_set_sha256",
    "judge_versions", "seeds", "config_sha256", "store_engine",
)  # fmt: skip


def _resume_differences(started: RunMetadata, now: RunMetadata) -> list[str]:
    return [
        f"{name}: {getattr(started, name)!r} then, {getattr(now, name)!r} now"
        for name in _RESUME_FIELDS
        if getattr(started, name) != getattr(now, name)
    ]


def question_set_changes(started: list[RunQuestion], holdout: Holdout, gold_dir: Path) -> list[str]:
    """What changed in the questions a run asks since it started, naming each questions.yaml and
    question: added, removed (or excluded), its text or KG changed, or its reference SPARQL no
    longer the one its gold was built from. The run keeps each question's text, not its SPARQL:
    a SPARQL edit is named through the gold, while the gold is still the run's."""
    then = {q.question_id: q for q in started}
    now = {q.id: q for q in holdout.evaluated_questions()}
    built_from = _gold_queries(gold_dir)

    def file(kg: str) -> Path:
        return holdout.root / kg / QUESTIONS_FILE

    changes = [f"{file(now[qid].kg)}: question {qid} added" for qid in now if qid not in then]
    changes += [f"{file(then[qid].kg)}: question {qid} removed, or excluded on record" for qid in then if qid not in now]
    for qid in (qid for qid in now if qid in then):
        before, q = then[qid], now[qid]
        fields = [f"question text {before.question!r} then, {q.question!r} now"] if before.question != q.question else []
        fields += [f"KG {before.kg!r} then, {q.kg!r} now"] if before.kg != q.kg else []
        if built_from.get(qid) not in (None, q.sparql_sha256):
            fields.append(f"reference SPARQL changed (its gold in {gold_dir} was built from another query)")
        changes += [f"{file(q.kg)}: question {qid}: {'; '.join(fields)}"] if fields else []
    return changes or [f"{holdout.root}: a question's reference SPARQL changed (the run keeps no copy of its queries to say which)"]


def _gold_queries(gold_dir: Path) -> dict[str, str]:
    """Question id -> the sha256 of the reference query its gold entry was built from; empty
    when the gold cannot be read (its own check says why)."""
    try:
        return {qid: summary.query_sha256 for qid, summary in index_gold(gold_dir).entries.items()}
    except (KgevalError, OSError):
        return {}


_MAX_GROUP = 1000
"""Most attempts in one journal line."""


def _dispatch_pending(plan: RunPlan, db: ResultsDB, progress: Progress | None, writer: RunWriter, activity: Activity | None = None) -> RunMetadata:
    """Dispatch the attempts not yet persisted; a full disk says how to continue the run. The
    writer is closed (its lock let go) whatever happens; `activity` is told which attempts are in flight."""
    try:
        return _dispatch(plan, db, progress, writer, activity or Activity())
    except DiskFull as exc:  # the attempts committed so far are intact: resuming sends only the rest
        raise exc.for_run(plan.metadata.run_id) from None
    finally:
        writer.close()


def _dispatch(plan: RunPlan, db: ResultsDB, progress: Progress | None, writer: RunWriter, activity: Activity) -> RunMetadata:
    run_id = plan.metadata.run_id
    done = db.done_keys(run_id)
    jobs = [(q, s) for q in plan.holdout.evaluated_questions() for s in plan.metadata.seeds if (q.id, s) not in done]
    for kg_id in dict.fromkeys(q.kg for q, _ in jobs):  # sandbox workers load their KG while the gold is indexed, in the order asked
        plan.stores[kg_id].start_ahead(plan.config.run.concurrency)
    # verified up front, each entry read when its question's first attempt starts and dropped
    # when its last is judged: the run's memory follows the questions in flight, not the holdout
    checker: SuiteChecker | None = None
    try:
        gold = GoldLoans(without_collections(lambda: _verified_gold(plan)), Counter(q.id for q, _ in jobs))
        checker = _suite_checker(plan)  # a KG's neighbours load at the first check that executes on them
    except BaseException:
        _close_all((*plan.closeables(), *(checker.closeables() if checker is not None else ())))
        raise
    prepare = getattr(plan.system, "prepare", None)
    if prepare is not None:
        for kg_id in sorted({q.kg for q, _ in jobs}):
            prepare(kg_id, plan.stores[kg_id])
    limiter = RateLimiter(plan.config.run.rate_limit_per_s)
    cache, verdicts = ExecutionCache(), VerdictCache()
    lookups = kg_lookups(plan.stores, plan.config)
    served: set[str] = set()
    primary = plan.config.judges.primary

    def work(job: tuple[Question, int]) -> tuple[Attempt, list]:
        question, seed = job
        with gold.lend(question.id) as entry, activity.step(f"{question.kg}/{question.id} seed {seed} ({plan.system.name})"):
            attempt, judged = run_attempt(
                question, seed, plan.system, plan.stores[question.kg], plan.judges, entry.result, plan.config,
                limiter=limiter, cache=cache, ties=entry.ties, lookup=lookups.get(question.kg), verdicts=verdicts,
            )
        if checker is not None:  # only accepts run again: the cost follows accuracy, not size
            judged = [checker.checked(question, attempt.sparql, v) if v.judge == primary else v for v in judged]
        return attempt, judged

    def record(results: list[tuple[Attempt, list]]) -> None:
        writer.record(attempt_rows_of(run_id, results))
        for attempt, _ in results:
            if attempt.served_version:
                served.add(attempt.served_version)
            if progress:
                progress(attempt.question_id)

    # The gold index, the stores, the lookups and the holdout are read-only from here on: the
    # cyclic garbage collector need not walk their objects again and again (each full collection
    # did, at a cost that grew with what the run had loaded), and what the attempts allocate is
    # freed by reference counting: collections run seldom (kgeval/_gc.py; they took 86-152 ms
    # of bench/run.py's ~1.1-1.4 s of run CPU). Gold entries are read later, per question, and are
    # not frozen: they are dropped when their question is judged.
    try:
        with RARE_COLLECTIONS:
            run = plan.config.run
            # An fsync costs milliseconds whatever it holds, so attempts are journaled in groups:
            # every attempt completed within persist_within_s of the group's oldest shares its
            # line (`_journal`; the group is capped so one line stays small).
            dispatch(jobs, work, record, concurrency=run.concurrency, batch=_MAX_GROUP, max_wait_s=run.persist_within_s, on_idle=writer.tick)
    except BaseException:
        # the stores' sandbox workers end with the run, not when a cache lets go of a store
        _close_all((*plan.closeables(), *(checker.closeables() if checker is not None else ())))
        raise
    return _sealed(plan, writer, served, (*plan.closeables(), *(checker.closeables() if checker is not None else ())))


def _sealed(plan: RunPlan, writer: RunWriter, served: set[str], closeables: tuple[object, ...]) -> RunMetadata:
    """End the dispatched run: its last attempts moved in and its rows sealed (`RunWriter.finish`)
    while what ends with it (the stores' sandbox workers, the system, the gold hold) is closed in
    a thread: a 22-KG run's workers took 0.07-0.2 s to end and be reaped, after which the seal
    began. The first error of either is raised once both are done."""
    run_id = plan.metadata.run_id

    def end(db: ResultsDB) -> RunMetadata:
        versions = served | db.served_versions(run_id)  # those of attempts persisted before a resume too
        metadata = plan.metadata.model_copy(update={"finished_at": _now(), "served_versions": sorted(versions)})
        db.finish_run(metadata)
        return metadata

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgeval-close") as pool:
        closed = pool.submit(_close_all, closeables)
        ended = writer.finish(end)
    closed.result()
    return ended


def _verified_gold(plan: RunPlan) -> GoldIndex:
    """The run's gold version indexed, refused (CheckFailed) unless it is still the one whose
    manifest the run recorded and the checklist verified."""
    index = index_gold(plan.gold_dir)
    recorded = plan.metadata.gold_manifest_sha256
    if index.manifest_sha256 != recorded:
        raise CheckFailed(
            f"run {plan.metadata.run_id}: the gold in {plan.gold_dir} is no longer the one the checklist verified "
            f"(manifest {recorded[:12]} then, {index.manifest_sha256[:12]} now): no attempt is judged against another gold; "
            "the attempts stored so far are kept: start a new run"
        )
    return index


def _suite_checker(plan: RunPlan) -> SuiteChecker | None:
    """The checker of accepts on their suites, when the run is judged with suites: the suites
    read now (the version the run holds) must be those its metadata names (a resumed run checks
    on the same suites)."""
    expected = plan.metadata.suite_manifest_sha256
    if expected is None:
        return None
    suites = read_suites(plan.gold_root, plan.suite_dir)
    if suites.manifest_sha256 != expected:
        raise CheckFailed(
            f"{suites_path(plan.gold_root)}: the suites changed since the run started (manifest {suites.manifest_sha256[:12]}, "
            f"the run recorded {expected[:12]}); restore them or start a new run"
        )
    other = suites.built_for_other_data(plan.holdout, read_manifest(plan.holdout.root))
    if other:  # as the checklist's suites item, for a checklist without it (a re-judged run's)
        raise CheckFailed(
            f"{suites.version}: " + "; ".join(other) + ": suites built for other data do not judge; "
            "`kgeval suite build` (it distils only what changed), or judge without them (`suite.check_accepts: false`)"
        )
    return SuiteChecker(suites, plan.config, plan.judges[plan.config.judges.primary])


def kg_lookups(stores: dict[str, Store], config: KgevalConfig) -> dict[str, KgLookup]:
    """One lookup per KG on the store holding its gold (labels and vocabulary, cached for the
    run); none for property graphs, which SPARQL cannot read."""
    lookups = {kg: store_lookup(store, kg, config) for kg, store in stores.items()}
    return {kg: lookup for kg, lookup in lookups.items() if lookup is not None}


def store_lookup(store: Store, kg: str, config: KgevalConfig) -> KgLookup | None:
    """The judges' lookup of KG `kg` on `store`, as a run makes it; None for a property graph."""
    if config.store.kind in PROPERTY_GRAPH_KINDS:
        return None
    return kg_lookup(store, kg, config.judges, config.run.candidate_timeout_s)


def _run_question(q: Question) -> RunQuestion:
    return RunQuestion(kg=q.kg, question_id=q.id, question=q.question, domain=q.domain, qtype=q.qtype, honeypot=q.honeypot)

