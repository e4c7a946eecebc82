"""One attempt: call the system (again, after a transient failure, up to the cap), name the
terminal state, execute the SPARQL read-only, judge what is judgeable.

Terminal states (DESIGN invariant 5):
- error: the system reported a failure (its kind), a filter withheld the output
  (content_filter, safety), it stopped for another reason (other), it was cut off before
  anything usable (truncated_empty), it gave nothing (empty), or its SPARQL does not run and
  it gave no answer list (invalid_sparql). Never judged.
- incomplete: cut off at the output limit, yet with SPARQL that runs or an answer list:
  judged, and flagged.
- answered: judged.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Protocol

from kgeval.config import KgevalConfig
from kgeval.errors import QueryError
from kgeval.gold import TieInfo
from kgeval.holdout import Question
from kgeval.judges import Candidate, Judge, Verdict
from kgeval.runs._model import Attempt, Try
from kgeval.stores import QueryResources, QueryResult, Store
from kgeval.systems import TRANSIENT_ERRORS, System, SystemOutput


class Limiter(Protocol):
    def acquire(self) -> None: ...


class ExecutionCache:
    """Results of candidate SPARQL already executed in this run, by (KG, query text). The store
    is read-only and deterministic, so the same query returns the same result (or error): seeds
    that produce the same query are executed once. Thread-safe."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, str], tuple[QueryResult | None, str | None]] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> tuple[QueryResult | None, str | None] | None:
        with self._lock:
            return self._results.get(key)

    def put(self, key: tuple[str, str], value: tuple[QueryResult | None, str | None]) -> None:
        with self._lock:
            self._results[key] = value


def _call(system: System, question: Question, seed: int) -> SystemOutput:
    """A system that raises instead of reporting is still a named failure, not a crash."""
    try:
        return system.respond(question, seed)
    except Exception as exc:  # noqa: BLE001 - any failure of the system becomes an error state
        return SystemOutput(stop_reason="other", error=f"system raised {type(exc).__name__}: {exc}", error_kind="other")


def call_with_retries(
    system: System, question: Question, seed: int, config: KgevalConfig, limiter: Limiter | None = None
) -> tuple[SystemOutput, list[Try]]:
    """Call the system; try again after a transient failure, at most `run.max_tries` times,
    waiting `run.retry_backoff_s` doubled each time. Every try is returned."""
    tries: list[Try] = []
    for n in range(1, config.run.max_tries + 1):
        if limiter is not None:
            limiter.acquire()
        started_at, t0 = datetime.now(UTC).isoformat(timespec="milliseconds"), time.perf_counter()
        output = _call(system, question, seed)
        kind = (output.error_kind or "other") if output.error is not None else None
        tries.append(
            Try(
                n=n,
                started_at=started_at,
                latency_ms=(time.perf_counter() - t0) * 1000,
                outcome=kind or "ok",
                error=output.error,
                http_status=output.http_status,
            )
        )
        if kind not in TRANSIENT_ERRORS or n == config.run.max_tries:
            return output, tries
        time.sleep(config.run.retry_backoff_s * 2 ** (n - 1))
    raise AssertionError("unreachable: max_tries >= 1")


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
) -> tuple[Attempt, list[Verdict]]:
    """Ask the system (with retries), name the terminal state, judge what is judgeable.

    With `ties` (the gold's acceptable answers at an ORDER BY ... LIMIT cut), the judges compare
    against the acceptable answer closest to the candidate's result."""
    started = time.perf_counter()
    output, tries = call_with_retries(system, question, seed, config, limiter)
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
        "tries": tries,
    }
    refused = _refused(output)
    if refused is not None:
        kind, error = refused
        return Attempt(**base, state="error", error_kind=kind, error=error), []
    key = (question.kg, output.sparql or "")
    cached = cache.get(key) if cache is not None else None
    resources: QueryResources | None = None
    if cached is not None:
        result, sparql_error = cached
    else:
        result, sparql_error, resources = _execute_candidate(output, store, config)
    if cache is not None and cached is None and not (sparql_error or "").startswith("QueryTimeout"):
        cache.put(key, (result, sparql_error))  # a timeout may not recur: never cached
    if resources is not None:  # what executing the candidate cost (not when a cached result was reused)
        base["extra"] = {"query_resources": resources.model_dump(mode="json")}
    cut_off = output.stop_reason == "length"
    if sparql_error and output.answer is None:
        kind = "truncated_empty" if cut_off else "invalid_sparql"
        return Attempt(**base, state="error", error_kind=kind, error=sparql_error), []
    candidate = Candidate(items=output.answer, result=result, sparql_error=sparql_error)
    verdicts, tie_resolved = judge_candidate(question, judges, gold, candidate, ties)
    extra = {**base.pop("extra", {}), **({"sparql_error": sparql_error} if sparql_error else {})}
    if tie_resolved:
        extra["tie_resolved"] = "judged against the acceptable answer with the candidate's choice at the tied cut"
    total = result.total if result is not None else None
    state = "incomplete" if cut_off else "answered"
    return Attempt(**base, state=state, result_total=total, extra=extra), verdicts


def judge_candidate(
    question: Question, judges: dict[str, Judge], gold: QueryResult, candidate: Candidate, ties: TieInfo | None = None
) -> tuple[list[Verdict], bool]:
    """Every judge's verdict on `candidate`; with `ties`, against the acceptable answer closest to
    the candidate's result. Also says whether the tie resolution changed the gold judged."""
    judged = gold
    if ties is not None and ties.tied and candidate.result is not None:
        judged = ties.resolve(gold, candidate.result.rows)
    return [judge.judge(question, judged, candidate) for judge in judges.values()], judged is not gold


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


def _execute_candidate(
    output: SystemOutput, store: Store, config: KgevalConfig
) -> tuple[QueryResult | None, str | None, QueryResources | None]:
    """The candidate's result or error, and what executing it cost (untrusted: bounded)."""
    if not output.sparql or not output.sparql.strip():
        return None, None, None
    try:
        result, resources = store.execute_candidate(output.sparql, timeout_s=config.run.query_timeout_s, row_cap=config.run.row_cap)
    except QueryError as exc:
        return None, f"{type(exc).__name__}: {exc}", exc.resources  # type: ignore[return-value]
    return result, None, resources
