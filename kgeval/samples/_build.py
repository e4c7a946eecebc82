"""Building the sample view of one attempt, and the run page's list of samples.

Attempts store the candidate's SPARQL and its row count (`result_total`), not its rows: a
run writes thousands of attempts and keeping up to `run.row_cap` typed rows with each would
multiply the results file for the few a person opens. A sample view therefore executes the
candidate's SPARQL again through the run's own path (`kgeval.runs.execute_candidate`: the
read-only guard, the sandbox worker, the candidate budget, and the predeclared prefixes the run
added when the query needed them), with the configuration the run recorded (its candidate
timeout, row cap and prefixes), on the store the run's configuration names. The candidate's
SPARQL is untrusted input (DESIGN invariant 12) however long after the run it is shown. The
store is read-only and the gold records its data version, so the rows are the run's; when the
total differs from the one the run stored, the view says so (`ExecutionView.differs_from_run`)
instead of passing today's rows off as the judged ones.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from kgeval.audit import AuditLog, accepted_items, audit_decisions, audit_states
from kgeval.config import KgevalConfig
from kgeval.errors import CheckFailed, InputError, KgevalError
from kgeval.gold import GoldEntry, Suites
from kgeval.holdout import Holdout, check_kg_files, likely_meant, natural_key
from kgeval.judges import ExecutionJudge, Verdict
from kgeval.review import ReviewLog, ReviewState, question_content_sha256, review_states
from kgeval.runs import SUITE_KEY, Attempt, ResultsDB, RunQuestion, execute_candidate, neighbour_store, run_config
from kgeval.samples._model import AuditView, ExecutionView, GoldView, Sample, SampleSummary, SampleTable
from kgeval.samples._tables import gold_table, marked_tables
from kgeval.stores import QueryResult, Store, open_store


@dataclass
class SampleSource:
    """What the views read: the results database and the gold; the holdout, a store per KG and
    the audit and review logs when the caller has them (each missing one is a note, not a crash)."""

    db: ResultsDB
    gold: dict[str, GoldEntry]
    holdout: Holdout | None = None
    store_for: Callable[[str], Store] | None = None
    """A read-only store for a KG id, to execute the candidate's SPARQL again."""
    audits: AuditLog | None = None
    reviews: ReviewLog | None = None
    display_items: int = 10
    """Items in the gold's short display (part of the audit item hash)."""
    suites: Suites | None = None
    """The test suites beside the gold (`<gold>/suites`), to show where an accept diverges."""


def build_sample(source: SampleSource, run_id: str, question_id: str, seed: int | None = None) -> Sample:
    """The whole story of one attempt; `seed` defaults to the question's first seed."""
    db = source.db
    metadata = db.metadata(run_id)
    question = _run_question(db, run_id, question_id)
    question_id = question.question_id  # given as KG/ID, as gold and checklist messages print it
    attempts = {a.seed: a for a in db.attempts(run_id) if a.question_id == question_id}
    if not attempts:
        raise InputError(f"run {run_id}: question {question_id} has no attempt yet")
    if seed is None:
        seed = min(attempts)
    if seed not in attempts:
        raise InputError(f"run {run_id}: question {question_id} has no attempt with seed {seed}; seeds: {', '.join(map(str, sorted(attempts)))}")
    attempt = attempts[seed]
    verdicts = _ordered([v for qid, s, v in db.verdicts(run_id) if qid == question_id and s == seed], metadata.primary_judge)
    notes: list[str] = []
    entry = source.gold.get(question_id)
    execution, result = _execution(source, attempt, run_config(metadata), notes)
    if entry is None:
        notes.append(f"no gold entry for {question_id} in the gold read: the answer cannot be set beside it")
    sample = Sample(
        **question.model_dump(), run_id=run_id, seed=seed, seeds=sorted(attempts), reference_sparql=_reference(source, question_id),
        gold=_gold_view(source, question_id, entry), attempt=attempt, execution=execution, primary_judge=metadata.primary_judge,
        verdicts=verdicts, audit=_audit_view(source, run_id, attempt, verdicts, metadata.primary_judge), notes=notes,
        answer_in_query=list(attempt.extra.get("answer_in_query") or []),
    )
    if entry is None:
        return sample
    return _with_suite(source, _with_tables(sample, entry, result, verdicts, run_config(metadata)), run_config(metadata))


def _with_suite(source: SampleSource, sample: Sample, cfg: KgevalConfig) -> Sample:
    """A coincidental accept with the rows of the neighbour where it diverges, beside that
    neighbour's gold, compared as the judge compared them there."""
    primary = next((v for v in sample.verdicts if v.judge == sample.primary_judge), None)
    outcome = (primary.details.get(SUITE_KEY) or {}) if primary is not None else {}
    neighbour = outcome.get("diverges")
    if not neighbour or source.suites is None or not sample.attempt.sparql:
        return sample
    try:
        entry = source.suites.entry(neighbour, sample.question_id)
        store = neighbour_store(cfg)(source.suites.neighbour_kg(neighbour))
    except (KgevalError, KeyError) as exc:
        return sample.model_copy(update={"notes": [*sample.notes, f"the neighbour {neighbour} cannot be shown: {exc}"]})
    try:
        execution = execute_candidate(sample.attempt.sparql, store, cfg)
    finally:
        store.close()
    gold = entry.ties.resolve(entry.result, execution.result.rows) if entry.ties is not None and entry.ties.tied and execution.result is not None else entry.result
    gold_rows, answer_rows, _ = marked_tables(gold, execution.result, None, ExecutionJudge(cfg.judges.execution), None)
    return sample.model_copy(update={"suite_neighbour": neighbour, "suite_gold_table": gold_rows, "suite_answer_table": answer_rows})


def _with_tables(sample: Sample, entry: GoldEntry, result: QueryResult | None, verdicts: list[Verdict], cfg: KgevalConfig) -> Sample:
    """The sample with its gold and answer tables, compared as the judges compared them."""
    notes = list(sample.notes)
    gold = entry.result
    if entry.ties is not None and entry.ties.tied and result is not None:
        gold = entry.ties.resolve(entry.result, result.rows)
        if gold is not entry.result:
            notes.append("the gold is tied: shown is the acceptable answer holding the candidate's choice at the cut, as the judges compared")
    items = sample.attempt.answer if result is None else None
    hint = next((v.details.get("columns") for v in verdicts if v.judge == "execution"), None)
    gold_table, answer_table, column_notes = marked_tables(gold, result, items, ExecutionJudge(cfg.judges.execution), hint)
    return sample.model_copy(update={"gold_table": gold_table, "answer_table": answer_table, "column_notes": column_notes, "notes": notes})


def _run_question(db: ResultsDB, run_id: str, question_id: str) -> RunQuestion:
    questions = db.questions(run_id)
    found = next((q for q in questions if q.question_id == question_id), None)
    found = found or next((q for q in questions if f"{q.kg}/{q.question_id}" == question_id), None)
    if found is None:
        excluded = db.metadata(run_id).excluded
        why = excluded.get(question_id, excluded.get(question_id.partition("/")[2]))
        if why is not None:
            raise InputError(f"run {run_id}: question {question_id!r} was excluded from the run on record ({why}): it has no attempt")
        ids = sorted((q.question_id for q in questions), key=natural_key)
        meant = likely_meant(question_id, [f"{q.kg}/{q.question_id}" for q in questions] if "/" in question_id else ids)
        if meant is not None:
            raise InputError(f"run {run_id}: no question {question_id!r} (did you mean {meant!r}?)")
        known = ", ".join(ids[:20]) + (" ..." if len(ids) > 20 else "")
        raise InputError(f"run {run_id}: no question {question_id!r}; questions: {known or 'none'}")
    return found


def _ordered(verdicts: list[Verdict], primary: str) -> list[Verdict]:
    return sorted(verdicts, key=lambda v: (v.judge != primary, v.judge))


def _execution(source: SampleSource, attempt: Attempt, cfg: KgevalConfig, notes: list[str]) -> tuple[ExecutionView, QueryResult | None]:
    """The candidate's rows, executed again as the run executed them (see the module docstring)."""
    if not (attempt.sparql or "").strip():
        source_kind = "answer-list" if attempt.answer is not None else "none"
        return ExecutionView(source=source_kind, run_total=attempt.result_total), None
    if source.store_for is None:
        notes.append("no store was given: the candidate's SPARQL was not executed, so its rows are not shown")
        return ExecutionView(source="none", run_total=attempt.result_total), None
    try:
        store = source.store_for(attempt.kg)
    except CheckFailed:  # a damaged KG file: named and a failed check, never rows shown as missing
        raise
    except KgevalError as exc:
        notes.append(f"the store for KG {attempt.kg} could not be opened ({exc}): the candidate's rows are not shown")
        return ExecutionView(source="none", run_total=attempt.result_total), None
    engine = f"{store.name} {store.version}"
    execution = execute_candidate(attempt.sparql, store, cfg)  # the run's path: guarded, sandboxed, bounded
    if execution.prefixes:
        notes.append(f"executed with the predeclared prefixes {', '.join(execution.prefixes)} (store.predeclared_prefixes), as the run executed it")
    result = execution.result
    if result is None:
        return ExecutionView(source="re-executed", engine=engine, error=execution.error, run_total=attempt.result_total), None
    differs = attempt.result_total is not None and attempt.result_total != result.total
    if differs:
        notes.append(
            f"executed now, the candidate's SPARQL returns {result.total} rows; the run stored {attempt.result_total}: "
            "the store's data or engine changed since the run, so these rows are not the ones judged"
        )
    return ExecutionView(source="re-executed", engine=engine, run_total=attempt.result_total, differs_from_run=differs), result


def _reference(source: SampleSource, question_id: str) -> str | None:
    if source.holdout is None:
        return None
    question = next((q for q in source.holdout.questions() if q.id == question_id), None)
    return question.reference_query if question is not None else None


def _gold_view(source: SampleSource, question_id: str, entry: GoldEntry | None) -> GoldView | None:
    if entry is None:
        return None
    return GoldView(
        flags=list(entry.flags), total=entry.result.total, engine=f"{entry.engine} {entry.engine_version}", ties=_ties_text(entry),
        nondeterministic=entry.nondeterministic, engine_dependent=entry.engine_dependent, tie_check_error=entry.tie_check_error,
        review_state=_review_state(source, question_id, entry), result_sha256=entry.result_sha256,
    )


def gold_for_review(source: SampleSource, question_id: str) -> tuple[GoldView | None, SampleTable | None]:
    """A question's gold as a reviewer sees it: its flags and review state, and its rows."""
    entry = source.gold.get(question_id)
    if entry is None:
        return None, None
    return _gold_view(source, question_id, entry), gold_table(entry.result)


def _ties_text(entry: GoldEntry) -> str | None:
    ties = entry.ties
    if ties is None or not ties.tied:
        return None
    groups = "; ".join(f"any {g.choose} of {len(g.candidates)}{'' if g.complete else '+'} rows sharing the cut key" for g in ties.groups)
    return f"{len(ties.certain)} rows certain, then {groups}"


def _review_state(source: SampleSource, question_id: str, entry: GoldEntry) -> ReviewState | None:
    if source.reviews is None or source.holdout is None:
        return None
    question = next((q for q in source.holdout.questions() if q.id == question_id), None)
    if question is None:
        return None
    content = question_content_sha256(question, entry)
    return review_states({question_id: content}, source.reviews.records())[question_id]


def _audit_view(source: SampleSource, run_id: str, attempt: Attempt, verdicts: list[Verdict], primary: str) -> AuditView | None:
    accepted = any(v.judge == primary and v.correct for v in verdicts)
    if source.audits is None or not accepted:
        return None
    items = accepted_items(source.db, run_id, source.gold, source.display_items)
    key = (attempt.question_id, attempt.seed)
    if key not in items:
        return None
    records = source.audits.records(run_id)
    state = audit_states({key: items[key]}, records)[key]
    return AuditView(item_sha256=items[key].sha256(), state=state, decisions=audit_decisions({key: items[key]}, records).get(key, {}))


def sample_index(source: SampleSource, run_id: str) -> list[SampleSummary]:
    """Every attempt of the run as one line of the run page, in KG, question, seed order."""
    db = source.db
    metadata = db.metadata(run_id)
    questions = {q.question_id: q for q in db.questions(run_id)}
    by_attempt: dict[tuple[str, int], list[Verdict]] = defaultdict(list)
    for qid, seed, verdict in db.verdicts(run_id):
        by_attempt[(qid, seed)].append(verdict)
    audit = _audit_states(source, run_id)
    return [
        _summary(questions[a.question_id], a, by_attempt.get((a.question_id, a.seed), []), metadata.primary_judge, source, audit)
        for a in db.attempts(run_id)
        if a.question_id in questions
    ]


def _audit_states(source: SampleSource, run_id: str) -> dict[tuple[str, int], str]:
    if source.audits is None:
        return {}
    items = accepted_items(source.db, run_id, source.gold, source.display_items)
    return dict(audit_states(items, source.audits.records(run_id)))


def _summary(q: RunQuestion, a: Attempt, verdicts: list[Verdict], primary: str, source: SampleSource, audit: dict[tuple[str, int], str]) -> SampleSummary:
    decided = {v.judge: v.correct for v in verdicts}
    main = next((v for v in verdicts if v.judge == primary), None)
    outcome = "error" if main is None else ("correct" if main.correct else "wrong")
    entry = source.gold.get(q.question_id)
    return SampleSummary(
        **q.model_dump(), seed=a.seed, state=a.state, error_kind=a.error_kind, outcome=outcome, path=main.path if main else None, verdicts=decided,
        disagreement=len(set(decided.values())) > 1, gold_flags=list(entry.flags) if entry else [],
        audit_state=audit.get((q.question_id, a.seed)), latency_ms=a.latency_ms, tries=len(a.tries),
        answer_in_query=bool(a.extra.get("answer_in_query")),
    )


def store_opener(config: KgevalConfig, holdout: Holdout) -> Callable[[str], Store]:
    """A read-only store per KG id, opened on first use and kept (the embedded store loads the
    KG's files once)."""
    opened: dict[str, Store] = {}

    def store_for(kg: str) -> Store:
        if kg not in opened:
            try:
                held = holdout.kg(kg)
            except KeyError:
                raise InputError(f"{holdout.root}: no KG {kg!r} in the holdout") from None
            check_kg_files(holdout.root, kg, held.files)  # a damaged KG file would show rows missing that the run found
            opened[kg] = open_store(config.store, held.files, kg, graphs=held.graphs)
        return opened[kg]

    return store_for
