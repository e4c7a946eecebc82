"""One attempt: call the system (again, after a transient failure, up to the cap), name the
terminal state, execute the SPARQL read-only, judge what is judgeable.

Terminal states (DESIGN invariant 5):
- error, a harness failure: the system reported a failure (its kind), a filter withheld the
  output (content_filter, safety), it stopped for another reason (other), it was cut off before
  anything usable (truncated_empty), it gave nothing (empty), the store failed on its query
  (store), or its query timed out under `run.candidate_timeout_counts_as: error`. Never judged,
  excluded from accuracy, counted.
- answered: judged. This includes the model's own failures (`Execution.failure`): SPARQL that
  does not parse or that the engine rejects (invalid_sparql), that the read-only guard refuses
  (refused), that runs past the candidate budget (candidate_timeout, over_budget). Every judge
  rejects them with the failure as its path; they stay in accuracy's denominator.
- incomplete: cut off at the output limit, yet with SPARQL that runs or an answer list:
  judged, and flagged.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal, Protocol

from kgeval.config import KgevalConfig
from kgeval.errors import QueryError, QueryOverBudget, QueryRefused, QueryRejected, QuerySyntaxError, QueryTimeout
from kgeval.gold import TieInfo
from kgeval.holdout import Question
from kgeval.judges import Candidate, FailureKind, Judge, KgLookup, Verdict, answer_in_query, fold, normalize_item, normalize_term
from kgeval.runs._model import Attempt, Try
from kgeval.stores import CellResult, EmbeddedKgs, QueryResources, QueryResult, Row, Store, Term
from kgeval.stores._lexer import canonical_tokens
from kgeval.systems import TRANSIENT_ERRORS, ErrorKind, System, SystemOutput, bounded_output, head_of


class Limiter(Protocol):
    def acquire(self) -> None: ...


@dataclass(frozen=True)
class Execution:
    """What executing a candidate's SPARQL gave: a result, a model failure, or a harness failure."""

    result: QueryResult | None = None
    error: str | None = None
    """The store's message when it failed."""
    failure: FailureKind | None = None
    """A model failure (judged wrong); None for a result or a harness failure."""
    harness: ErrorKind | None = None
    """A harness failure (excluded, counted): the store failed on an acceptable query, or a
    candidate timeout under `run.candidate_timeout_counts_as: error`."""
    sparql: str | None = None
    """The text executed (with predeclared prefixes added, when they were needed)."""
    prefixes: tuple[str, ...] = ()
    """Predeclared prefixes the query needed."""
    resources: QueryResources | None = None
    """What executing the query cost (the store counted it); None when nothing was executed,
    or the execution was reused from the run's cache."""


class ExecutionCache:
    """Results of candidate SPARQL already executed in this run, by (KG, query as the guard
    approved it: `QueryKey`). The store is read-only and deterministic, and its engine runs only
    the approved text, so the same query returns the same result (or error): seeds
    that produce the same query are executed once, even when they are in flight together (the
    seeds of one question usually are): the first executes, the others wait for its result.
    A result that may not recur (a timeout, a store fault) is not kept: each waiter then
    executes on its own. Bounded by the rows its results hold (`max_rows`), least recently used
    out, so a run's memory does not follow its number of questions (issue 13: holding every
    result of a 10,000-question run held one more copy of the gold's size); a run asks question
    after question, so the seeds of one question meet while their entry is fresh, and a text
    many questions share (a whole-KG count) stays while it is used. Thread-safe."""

    def __init__(self, max_rows: int = 200_000) -> None:
        self._results: OrderedDict[tuple[str, str, str], Execution] = OrderedDict()
        self._rows, self._max_rows = 0, max_rows
        self._running: dict[tuple[str, str, str], threading.Event] = {}
        self._lock = threading.Lock()

    def execution(self, key: tuple[str, str, str], execute: Callable[[], Execution], keep: Callable[[Execution], bool]) -> tuple[Execution, bool]:
        """(the execution of `key`, whether it came from the cache). The first caller runs
        `execute()`; callers arriving meanwhile wait for it and share its result when `keep`
        says it is kept, else each runs `execute()` itself (outside the lock)."""
        while True:
            with self._lock:
                if key in self._results:
                    self._results.move_to_end(key)
                    return self._results[key], True
                running = self._running.get(key)
                if running is None:
                    running = self._running[key] = threading.Event()
                    break
            running.wait()
            with self._lock:
                kept = key in self._results
            if not kept:  # a timeout or a store fault: this caller executes on its own
                return execute(), False
        try:
            value = execute()
            if keep(value):
                with self._lock:
                    self._keep(key, value)
            return value, False
        finally:
            with self._lock:
                del self._running[key]
            running.set()

    def _keep(self, key: tuple[str, str, str], value: Execution) -> None:
        """Keep `value` (called under the lock), dropping the least recently used beyond the bound."""
        self._results[key] = value
        self._rows += _rows_held(value)
        while self._rows > self._max_rows and len(self._results) > 1:
            _, dropped = self._results.popitem(last=False)
            self._rows -= _rows_held(dropped)


def _rows_held(execution: Execution) -> int:
    """What an execution costs the cache: its result's rows, at least 1."""
    return 1 + (len(execution.result.rows) if execution.result is not None else 0)


QueryKey = tuple[str, Literal["approved", "written"]]
"""A candidate query as the run's caches know it (`_query_key`): the text the guard approved it
as, or the text as written when the guard refused it, and which of the two."""
VerdictKey = tuple[str, str, str, str, str | None]
"""(KG, question id, candidate query as `QueryKey`, answer list as JSON)."""


class VerdictCache:
    """Verdicts already given in this run, by question and candidate (its query as the guard
    approved it, and its answer list). Judges are deterministic by design (DESIGN invariant 3)
    and a kept execution of one query is one result (`ExecutionCache`, by the same key), so
    seeds and retries that give the same candidate, however they lay its SPARQL out, get
    the same verdicts: they are judged once. Only candidates whose execution recurs are kept
    (see `_recurs`). Bounded: least recently used out (a run asks question after question, so
    the seeds of one question meet while their entry is fresh). Thread-safe."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._entries: OrderedDict[VerdictKey, tuple[list[Verdict], bool]] = OrderedDict()
        self._judging: dict[VerdictKey, threading.Event] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(question: Question, output: SystemOutput, query: QueryKey) -> VerdictKey:
        answer = None if output.answer is None else json.dumps(output.answer, default=repr)
        return question.kg, question.id, *query, answer

    def judged(self, key: VerdictKey, judge: Callable[[], tuple[list[Verdict], bool]]) -> tuple[list[Verdict], bool]:
        """The verdicts of `key`: kept ones, or `judge()`'s. Seeds judging one candidate together
        (they leave a shared execution together) wait for the first instead of judging it again:
        a wrong answer's rules may read the KG's labels, long enough for all to miss the cache."""
        while True:
            with self._lock:
                found = self._entries.get(key)
                if found is not None:
                    self._entries.move_to_end(key)
                    return found
                judging = self._judging.get(key)
                if judging is None:
                    judging = self._judging[key] = threading.Event()
                    break
            judging.wait()  # then found, or (the judge raised) this caller judges
        try:
            value = judge()
            with self._lock:
                self._entries[key] = value
                if len(self._entries) > self._size:
                    self._entries.popitem(last=False)
            return value
        finally:
            with self._lock:
                del self._judging[key]
            judging.set()


def _call(system: System, question: Question, seed: int) -> SystemOutput:
    """A system that raises instead of reporting is still a named failure, not a crash."""
    try:
        return system.respond(question, seed)
    except Exception as exc:  # noqa: BLE001 - any failure of the system becomes an error state
        return SystemOutput(stop_reason="other", error=f"system raised {type(exc).__name__}: {exc}", error_kind="other")


def call_with_retries(
    system: System, question: Question, seed: int, config: KgevalConfig, limiter: Limiter | None = None, outside_calls: list[float] | None = None
) -> tuple[SystemOutput, list[Try]]:
    """Call the system; try again after a transient failure, at most `run.max_tries` times,
    waiting as `retry_wait_s` says (backoff, jitter, Retry-After). Every try is returned, its
    latency the call's as the system timed it (`SystemOutput.call_ms`) when it did; the seconds
    each try spent outside that call (building its prompt) are appended to `outside_calls`."""
    tries: list[Try] = []
    for n in range(1, config.run.max_tries + 1):
        if limiter is not None:
            limiter.acquire()
        started_at, t0 = datetime.now(UTC).isoformat(timespec="milliseconds"), time.perf_counter()
        output = _call(system, question, seed)
        kind = (output.error_kind or "other") if output.error is not None else None
        whole_ms = (time.perf_counter() - t0) * 1000
        if outside_calls is not None and output.call_ms is not None:
            outside_calls.append(max(0.0, whole_ms - output.call_ms) / 1000)
        tries.append(
            Try(
                n=n,
                started_at=started_at,
                latency_ms=output.call_ms if output.call_ms is not None else whole_ms,
                outcome=kind or "ok",
                error=output.error,
                http_status=output.http_status,
            )
        )
        if kind not in TRANSIENT_ERRORS or n == config.run.max_tries:
            return output, tries
        time.sleep(retry_wait_s(output, n, config))
    raise AssertionError("unreachable: max_tries >= 1")


def retry_wait_s(output: SystemOutput, n: int, config: KgevalConfig) -> float:
    """The wait after try `n`: `run.retry_backoff_s` doubled per try, jittered (half to all of
    it, so threads that failed together retry apart), and at least the system's Retry-After
    (up to `run.max_retry_after_s`)."""
    wait = config.run.retry_backoff_s * 2 ** (n - 1) * random.uniform(0.5, 1.0)
    if output.retry_after_s is not None:
        wait = max(wait, min(output.retry_after_s, config.run.max_retry_after_s))
    return wait


def run_attempt(
    question: Question,
    seed: int,
    system: System,
    store: Store,
    judges: dict[str, Judge],
    gold: QueryResult,
    config: KgevalConfig,
    *,
    limiter: Limiter | None = None,
    cache: ExecutionCache | None = None,
    ties: TieInfo | None = None,
    lookup: KgLookup | None = None,
    verdicts: VerdictCache | None = None,
) -> tuple[Attempt, list[Verdict]]:
    """Ask the system (with retries), name the terminal state, judge what is judgeable.

    With `ties` (the gold's acceptable answers at an ORDER BY ... LIMIT cut), the judges compare
    against the acceptable answer closest to the candidate's result. `lookup` (the KG's labels
    and vocabulary on the gold's store) lets the judges apply their label and vacuous rules."""
    started, outside_calls = time.perf_counter(), []
    recorded = getattr(system, "recorded", None)
    latency_ms: float | None = None
    if recorded is not None:  # stored answers (a re-judged run, `_rejudge`): no call; the tries and time the source recorded
        output, tries, latency_ms = recorded(question, seed)
    else:
        output, tries = call_with_retries(system, question, seed, config, limiter, outside_calls)
    attempt, judged = judge_output(
        question, seed, output, store, judges, gold, config,
        started=started + sum(outside_calls), tries=tries, cache=cache, ties=ties, lookup=lookup, verdicts=verdicts,
    )  # fmt: skip
    return (attempt if latency_ms is None else attempt.model_copy(update={"latency_ms": latency_ms})), judged


def judge_output(
    question: Question,
    seed: int,
    output: SystemOutput,
    store: Store,
    judges: dict[str, Judge],
    gold: QueryResult,
    config: KgevalConfig,
    *,
    started: float | None = None,
    tries: list[Try] | None = None,
    cache: ExecutionCache | None = None,
    ties: TieInfo | None = None,
    lookup: KgLookup | None = None,
    verdicts: VerdictCache | None = None,
) -> tuple[Attempt, list[Verdict]]:
    """Name the terminal state of one system output and judge it if judgeable: what a run does
    with every output, and what the service's `/judge` does with one it is given. With
    `verdicts`, a candidate judged before in the run is not judged again."""
    started = time.perf_counter() if started is None else started
    output = bounded_output(output, config.run.max_output_bytes)
    base = {
        "kg": question.kg,
        "question_id": question.id,
        "seed": seed,
        "sparql": output.sparql,
        "answer": output.answer,
        "stop_reason": output.stop_reason,
        "latency_ms": (time.perf_counter() - started) * 1000,
        "finish_reason": output.finish_reason,
        "served_version": output.served_version,
        "usage": output.usage,
        "tries": tries or [],
    }
    if output.cut is not None and output.error is None:  # over run.max_output_bytes: the model's failure
        return _over_output_budget(question, output, base, judges, gold)
    if output.error is not None and output.error_kind == "invalid_sparql":  # text and no query: the model's failure
        query_key: QueryKey = ("", "written")
        execution = Execution(error=output.error, failure="invalid_sparql")
    else:
        refused = _refused(output)
        if refused is not None:
            kind, error = refused
            return Attempt(**base, state="error", error_kind=kind, error=error), []
        query_key = _query_key(output.sparql, store) if cache is not None or verdicts is not None else (output.sparql or "", "written")
        execution = _cached_execution(question.kg, output, store, config, cache, query_key)
    cut_off = output.stop_reason == "length"
    if execution.harness is not None:
        return Attempt(**base, state="error", error_kind=execution.harness, error=execution.error), []
    if execution.failure is not None and output.answer is None and cut_off:
        return Attempt(**base, state="error", error_kind="truncated_empty", error=execution.error), []
    judged, tie_resolved = _judged(question, output, execution, judges, gold, ties, lookup, verdicts, query_key, config.store.predeclared_prefixes)
    extra = _attempt_extra(execution, config)
    if tie_resolved:
        extra["tie_resolved"] = "judged against the acceptable answer with the candidate's choice at the tied cut"
    named = answer_in_query(execution.sparql or output.sparql, gold, question.sparql)
    if named:
        extra["answer_in_query"] = named
    total = execution.result.total if execution.result is not None else None
    state = "incomplete" if cut_off else "answered"
    return Attempt(**base, state=state, result_total=total, extra=extra), judged


STORED_HEAD_BYTES = 64 * 1024
"""How much of an output over `run.max_output_bytes` the results database keeps (its head):
the size and sha256 of the whole name it, and a run of many such outputs stays small."""


def _over_output_budget(question: Question, output: SystemOutput, base: dict, judges: dict[str, Judge], gold: QueryResult) -> tuple[Attempt, list[Verdict]]:
    """An output over `run.max_output_bytes`: judged wrong as over budget without executing or
    reading it (DESIGN invariant 5: the model's failure, in accuracy's denominator), stored cut
    with the size and hash of the whole."""
    cut = output.cut
    assert cut is not None
    candidate = Candidate(sparql_error=cut.reason(), failure="over_budget")
    verdicts, _ = judge_candidate(question, judges, gold, candidate)
    extra = {"failure": "over_budget", "sparql_error": cut.reason(), "output_cut": cut.model_dump(mode="json")}
    answer = output.answer if output.answer is None or len(json.dumps(output.answer, default=repr)) <= STORED_HEAD_BYTES else None
    stored = {"sparql": head_of(output.sparql, STORED_HEAD_BYTES), "answer": answer}
    return Attempt(**{**base, **stored}, state="answered", extra=extra), verdicts


def _judged(
    question: Question,
    output: SystemOutput,
    execution: Execution,
    judges: dict[str, Judge],
    gold: QueryResult,
    ties: TieInfo | None,
    lookup: KgLookup | None,
    verdicts: VerdictCache | None,
    query_key: QueryKey | None = None,
    store_prefixes: dict[str, str] | None = None,
) -> tuple[list[Verdict], bool]:
    """Every judge's verdict on the output and whether a tie resolution changed the gold judged,
    from `verdicts` when this candidate was judged before in the run (`query_key`: the query as
    the caches know it; by default its text as written)."""

    def judge() -> tuple[list[Verdict], bool]:
        candidate = Candidate(
            items=output.answer, result=execution.result, sparql_error=execution.error, failure=execution.failure,
            sparql=execution.sparql, predeclared_prefixes=list(execution.prefixes), store_prefixes=store_prefixes or {}, lookup=lookup,
        )
        return judge_candidate(question, judges, gold, candidate, ties)

    if verdicts is None or not _recurs(execution):
        return judge()
    return verdicts.judged(VerdictCache.key(question, output, query_key or (output.sparql or "", "written")), judge)


def _attempt_extra(execution: Execution, config: KgevalConfig) -> dict:
    """What an answered attempt records of its execution beside its verdicts."""
    extra: dict = {}
    if execution.error is not None:
        extra["sparql_error"] = execution.error
    if execution.failure is not None:
        extra["failure"] = execution.failure
        if execution.failure == "candidate_timeout":
            extra["rule"] = f"run.candidate_timeout_counts_as: {config.run.candidate_timeout_counts_as}"
    if execution.prefixes:
        extra["predeclared_prefixes"] = list(execution.prefixes)
    if execution.resources is not None:
        extra["query_resources"] = execution.resources.model_dump(mode="json")
    return extra


def _query_key(sparql: str | None, store: Store) -> QueryKey:
    """What the run's caches know a candidate query by: the text the store's guard approves it
    as, which is what the engine runs, so texts that differ only in layout, comments, keyword
    case or escapes (seeds writing one query differently) are executed and judged once; the
    text as written when the guard refuses it (its error message may quote the text)."""
    if sparql and sparql.strip():
        approved = store.approved_text(sparql)
        if approved is not None:
            return approved, "approved"
    return sparql or "", "written"


def _cached_execution(
    kg: str, output: SystemOutput, store: Store, config: KgevalConfig, cache: ExecutionCache | None, query_key: QueryKey | None = None
) -> Execution:
    def execute() -> Execution:
        return execute_candidate(output.sparql, store, config)

    if cache is None:
        return execute()
    query_key = query_key or _query_key(output.sparql, store)
    execution, cached = cache.execution((kg, *query_key), execute, _recurs)
    return replace(execution, resources=None) if cached else execution


def _recurs(execution: Execution) -> bool:
    """Whether executing the same text again would give the same: not after a timeout or a
    store fault."""
    return not (execution.failure == "candidate_timeout" or execution.harness in ("candidate_timeout", "store"))


def judge_candidate(
    question: Question, judges: dict[str, Judge], gold: QueryResult, candidate: Candidate, ties: TieInfo | None = None
) -> tuple[list[Verdict], bool]:
    """Every judge's verdict on `candidate`; with `ties`, against the acceptable answer closest to
    the candidate's result, or to the rows its answer list names. Also says whether the tie
    resolution changed the gold judged."""
    judged = gold
    if ties is not None and ties.tied:
        if candidate.result is not None:
            judged = ties.resolve(gold, candidate.result.rows)
            if judged is gold and candidate.result.form == "select":  # its rows may name the tied rows (names for IRIs)
                named = [cell.value for row in candidate.result.rows for cell in row if cell is not None and cell.type == "literal"]
                judged = ties.resolve(gold, _tied_rows_named(ties, named, candidate.lookup))
        elif candidate.items is not None:
            judged = ties.resolve(gold, _tied_rows_named(ties, candidate.items, candidate.lookup))
    return [judge.judge(question, judged, candidate) for judge in judges.values()], judged is not gold


def _tied_rows_named(ties: TieInfo, items: list, lookup: KgLookup | None) -> list[Row]:
    """The tied rows an answer list names (a system that answers with a list, not a query, may
    break a tie differently from the engine too): a row is named when one of its cells reads,
    as the seed judge reads untyped values, as one of the items (an IRI, bracketed or not, or
    its tail), or is an IRI one of whose KG labels folds to one of them; the group's ORDER BY key
    names none (every row of the group has it). An executed result's literal cells are read so too
    when its rows are not tied rows themselves (names given for the tied entities' IRIs)."""
    plain = [item for item in items if isinstance(item, (str, int, float))]  # JSON lists and objects name no cell
    keys = set(map(normalize_item, plain))
    names = {fold(item) for item in plain if isinstance(item, str)} if lookup is not None else set()

    def named(cell: Term | None) -> bool:
        if cell is None:
            return False
        if normalize_term(cell) in keys:
            return True
        return bool(names) and cell.type == "uri" and not names.isdisjoint(lookup.names(cell.value))  # type: ignore[union-attr]

    # the group's own key (0.942 for every supplier tied at 0.942) names no row apart from the others
    return [row for group in ties.groups for row in group.candidates if any(named(cell) for cell in row if cell not in group.key)]


def _refused(output: SystemOutput) -> tuple[str, str] | None:
    """(error kind, message) when the output cannot be judged before executing anything."""
    if output.error is not None:
        return output.error_kind or "other", output.error
    if output.stop_reason in ("content_filter", "safety"):
        return output.stop_reason, f"withheld by a {output.stop_reason.replace('_', ' ')} (finish reason {output.finish_reason})"
    has_content = bool(output.sparql and output.sparql.strip()) or output.answer is not None
    if output.stop_reason == "length" and not has_content:
        return "truncated_empty", f"cut off at the output limit before any answer (finish reason {output.finish_reason})"
    if output.stop_reason == "other":
        return "other", f"stopped for an unexpected reason: {output.finish_reason}"
    if not has_content:
        return "empty", "the system returned neither SPARQL nor an answer list"
    return None


def execute_candidate(sparql: str | None, store: Store, config: KgevalConfig) -> Execution:
    """Execute the candidate's SPARQL read-only and name what happened (DESIGN invariant 5):
    a query the guard refuses, that does not parse or that the engine rejects, or that runs past
    the candidate budget is the model's failure; the store failing on it is the harness's."""
    if not sparql or not sparql.strip():
        return Execution()
    first = _run_once(sparql, store, config)
    prefixes = config.store.predeclared_prefixes
    if first.failure != "invalid_sparql" or not prefixes:
        return first
    needed = _needed_prefixes(sparql, prefixes)
    if not needed:
        return first  # not a predeclared prefix it lacked (an engine's rejection, a syntax error): its own error stands
    second = _run_once(_declaring(sparql, prefixes, needed), store, config)
    if second.failure == "invalid_sparql":
        return first  # the prefixes were not all it lacked: its own error stands
    return replace(second, prefixes=needed)


def execute_candidate_each(
    sparql: str, kgs: EmbeddedKgs, names: Sequence[str], config: KgevalConfig, known: Sequence[tuple[CellResult, QueryResult] | None] = ()
) -> list[Execution]:
    """`execute_candidate` of one candidate's SPARQL on several KGs served by one sandbox (a
    suite's neighbours), in one request while none fails (`EmbeddedKgs.execute_candidate_each`):
    per KG, what `execute_candidate` on its store would give, named the same way, with the same
    predeclared-prefix retry. `known`: per KG, a result and its cells (that KG's gold) handed
    back, as that very object, when the execution's cells are exactly its cells: no Term built."""
    run = config.run

    def each(text: str, indices: Sequence[int]) -> list[Execution]:
        outcomes = kgs.execute_candidate_each(text, [names[i] for i in indices], timeout_s=run.candidate_timeout_s, row_cap=run.row_cap)
        return [_execution_of(o, text, kgs.store(names[i]), config, known[i] if known else None) for i, o in zip(indices, outcomes, strict=True)]

    executions = each(sparql, range(len(names)))
    prefixes = config.store.predeclared_prefixes
    again = [i for i, execution in enumerate(executions) if execution.failure == "invalid_sparql"]
    needed = _needed_prefixes(sparql, prefixes) if again and prefixes else ()
    if needed:  # as `execute_candidate`: kept only where the prefixes were all it lacked
        for i, second in zip(again, each(_declaring(sparql, prefixes, needed), again), strict=True):
            if second.failure != "invalid_sparql":
                executions[i] = replace(second, prefixes=needed)
    return executions


def _execution_of(
    outcome: tuple[CellResult, QueryResources] | QueryError, sparql: str, store: Store, config: KgevalConfig, known: tuple[CellResult, QueryResult] | None
) -> Execution:
    if isinstance(outcome, QueryError):
        return replace(_failed_execution(outcome, sparql, store, config), resources=outcome.resources)  # type: ignore[arg-type]
    cells, resources = outcome
    result = known[1] if known is not None and cells == known[0] else cells.typed()
    return Execution(result=result, sparql=sparql, resources=resources)


def _run_once(sparql: str, store: Store, config: KgevalConfig) -> Execution:
    run = config.run
    try:  # untrusted: bounded and counted (an embedded store runs it in a sandbox worker)
        result, resources = store.execute_candidate(sparql, timeout_s=run.candidate_timeout_s, row_cap=run.row_cap)
    except QueryError as exc:
        return replace(_failed_execution(exc, sparql, store, config), resources=exc.resources)  # type: ignore[arg-type]
    return Execution(result=result, sparql=sparql, resources=resources)


def _failed_execution(exc: QueryError, sparql: str, store: Store, config: KgevalConfig) -> Execution:
    message = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, QueryTimeout) and config.run.candidate_timeout_counts_as == "error":
        return Execution(error=message, harness="candidate_timeout", sparql=sparql)
    failure = _model_failure(exc) or _failure_of_a_healthy_store(exc, store)
    if failure is None:
        return Execution(error=message, harness="store", sparql=sparql)
    return Execution(error=message, failure=failure, sparql=sparql)


_BUSY_STATUSES = frozenset({429, 502, 503, 504})
"""HTTP statuses of a busy or unreachable server: the harness's, whatever the query."""


def _failure_of_a_healthy_store(exc: QueryError, store: Store) -> FailureKind | None:
    """An engine error answered over HTTP (Virtuoso and Oxigraph answer a function they lack with
    a 500) is the query's when the store, asked at once, runs a trivial query: it is up, and
    fails only on this query. A connection failure or a busy server stays the harness's."""
    status = getattr(exc, "http_status", None)
    if status is None or status in _BUSY_STATUSES:
        return None
    try:
        store.execute("ASK {}", timeout_s=5.0, row_cap=1)
    except QueryError:
        return None
    return "invalid_sparql"


_MODEL_FAILURES: tuple[tuple[type[QueryError], FailureKind], ...] = (
    (QueryRefused, "refused"),
    (QuerySyntaxError, "invalid_sparql"),
    (QueryRejected, "invalid_sparql"),
    (QueryTimeout, "candidate_timeout"),
    (QueryOverBudget, "over_budget"),
)
"""Store errors that are the candidate query's fault, by class (kgeval.errors). Any other
StoreError (the store down, unreachable, a server fault) is the harness's."""


def _model_failure(exc: QueryError) -> FailureKind | None:
    for error_class, kind in _MODEL_FAILURES:
        if isinstance(exc, error_class):
            return kind
    return None


def _declaring(sparql: str, prefixes: dict[str, str], names: list[str] | tuple[str, ...]) -> str:
    """`sparql` with PREFIX lines for `names` before it (a leading byte-order mark dropped: one
    inside a text is refused)."""
    return "".join(f"PREFIX {name}: <{prefixes[name]}>\n" for name in names) + sparql.removeprefix("\ufeff")


def _needed_prefixes(sparql: str, prefixes: dict[str, str]) -> tuple[str, ...]:
    """The predeclared prefixes the query uses without declaring them, in the order it meets
    them; empty when it lacks another or none. Read by the lexer alone, which names the first
    undeclared prefix it meets: a few microseconds a prefix (the guard once per predeclared
    prefix cost ~0.5 s each on a 5 KB query, outside the candidate's deadline)."""
    needed: list[str] = []
    while True:
        try:
            canonical_tokens(_declaring(sparql, prefixes, needed))
        except QuerySyntaxError as exc:
            missing = exc.undeclared_prefix
            if missing is None:  # another syntax error: the run with these prefixes says it
                return tuple(needed)
            if missing not in prefixes or missing in needed:
                return ()  # it lacks a prefix production does not declare either
            needed.append(missing)
            continue
        except QueryError:
            return tuple(needed)
        return tuple(needed)
