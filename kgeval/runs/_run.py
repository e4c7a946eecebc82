"""`kgeval run`: every question x seed against a system, persisted and judged as it completes."""

from __future__ import annotations

import secrets
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import kgeval
from kgeval._files import sha256_json
from kgeval.config import KgevalConfig
from kgeval.errors import QueryError
from kgeval.gold import load_gold, verify_gold
from kgeval.holdout import Holdout, Question, verify_holdout
from kgeval.judges import Candidate, Judge, Verdict, judges_from_config
from kgeval.runs._db import ResultsDB
from kgeval.runs._model import Attempt, RunMetadata, RunQuestion
from kgeval.stores import QueryResult, Store, open_store
from kgeval.systems import System, SystemOutput

Progress = Callable[[str], None]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


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
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{system}-{secrets.token_hex(3)}"


def execute_run(
    holdout: Holdout,
    gold_dir: Path,
    system: System,
    config: KgevalConfig,
    db: ResultsDB,
    progress: Progress | None = None,
) -> RunMetadata:
    """Run every question x seed; return the finished run's metadata."""
    holdout_sha = verify_holdout(holdout.root)
    gold_sha = verify_gold(gold_dir, holdout)
    gold = load_gold(gold_dir)
    judges = judges_from_config(config.judges)
    seeds = list(range(config.run.seeds))
    metadata = RunMetadata(
        run_id=new_run_id(system.name),
        system=system.name,
        system_version=system.version,
        holdout=str(holdout.root),
        holdout_manifest_sha256=holdout_sha,
        gold_manifest_sha256=gold_sha,
        seeds=seeds,
        primary_judge=config.judges.primary,
        judge_versions={name: j.version for name, j in judges.items()},
        config_sha256=sha256_json(config.model_dump(mode="json")),
        kgeval_version=kgeval.__version__,
        git_commit=git_commit(),
        started_at=_now(),
    )
    db.create_run(metadata, [_run_question(q) for q in holdout.questions()])
    for kg in holdout.kgs:
        store = open_store(config.store, kg.files)
        for question in kg.questions:
            for seed in seeds:
                attempt, verdicts = run_attempt(question, seed, system, store, judges, gold[question.id].result, config)
                db.record_attempt(metadata.run_id, attempt, verdicts)
                if progress:
                    progress(question.id)
    metadata = metadata.model_copy(update={"finished_at": _now()})
    db.finish_run(metadata)
    return metadata


def _run_question(q: Question) -> RunQuestion:
    return RunQuestion(kg=q.kg, question_id=q.id, question=q.question, domain=q.domain, qtype=q.qtype, honeypot=q.honeypot)


def run_attempt(
    question: Question,
    seed: int,
    system: System,
    store: Store,
    judges: dict[str, Judge],
    gold: QueryResult,
    config: KgevalConfig,
) -> tuple[Attempt, list[Verdict]]:
    """Ask the system once, execute its SPARQL read-only, and judge the answer."""
    started = time.perf_counter()
    output = system.respond(question, seed)
    latency_ms = (time.perf_counter() - started) * 1000
    base = {
        "kg": question.kg,
        "question_id": question.id,
        "seed": seed,
        "sparql": output.sparql,
        "answer": output.answer,
        "stop_reason": output.stop_reason,
        "latency_ms": latency_ms,
    }
    if output.error is not None:
        kind = "missing" if output.stop_reason == "missing" else "system_error"
        return Attempt(**base, state="error", error_kind=kind, error=output.error), []
    result, sparql_error = _execute_candidate(output, store, config)
    if sparql_error and output.answer is None:
        return Attempt(**base, state="error", error_kind="invalid_sparql", error=sparql_error), []
    candidate = Candidate(items=output.answer, result=result, sparql_error=sparql_error)
    verdicts = [judge.judge(question, gold, candidate) for judge in judges.values()]
    extra = {"sparql_error": sparql_error} if sparql_error else {}
    total = result.total if result is not None else None
    return Attempt(**base, state="answered", result_total=total, extra=extra), verdicts


def _execute_candidate(
    output: SystemOutput, store: Store, config: KgevalConfig
) -> tuple[QueryResult | None, str | None]:
    if not output.sparql:
        return None, None
    try:
        result = store.execute(output.sparql, timeout_s=config.run.query_timeout_s, row_cap=config.run.row_cap)
    except QueryError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return result, None


__all__ = ["execute_run", "git_commit", "new_run_id", "run_attempt"]
