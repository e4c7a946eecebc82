"""Helpers for tests of reports, audits, reviews and the service: a finished run on the mini
holdout, runs with hand-made verdicts, and an access file."""

from __future__ import annotations

from pathlib import Path

import yaml

from kgeval.config import KgevalConfig, RunConfig
from kgeval.holdout import load_holdout
from kgeval.judges import Verdict
from kgeval.runs import Attempt, ResultsDB, RunMetadata, RunQuestion, execute_run
from kgeval.systems import OracleSystem, WeakSystem

TOKENS = {
    "admin": {"token": "admin-token", "roles": ["admin"]},
    "ann": {"token": "auditor-token", "roles": ["auditor"]},
    "hana": {"token": "hr-reviewer-token", "roles": ["reviewer"], "domains": ["hr"]},
    "rita": {"token": "retail-reviewer-token", "roles": ["reviewer"], "domains": ["retail"]},
    "bob": {"token": "builder-token", "roles": ["builder"]},
}


def write_access(path: Path) -> Path:
    path.write_text(yaml.safe_dump({"tokens": [{"name": n, **t} for n, t in TOKENS.items()]}), encoding="utf-8")
    return path


def run_system(holdout: Path, gold: Path, db_path: Path, system: str = "oracle", seeds: int = 2) -> str:
    cfg = KgevalConfig(run=RunConfig(seeds=seeds))
    sut = OracleSystem() if system == "oracle" else WeakSystem()
    with ResultsDB(db_path) as db:
        return execute_run(load_holdout(holdout), gold, sut, cfg, db).run_id


def _verdict(judge: str, correct: bool, path: str = "exact") -> Verdict:
    return Verdict(judge=judge, version=f"{judge}-1", config_sha256="0" * 64, correct=correct, path=path, reason=f"{judge} says {correct}")


def synthetic_run(
    db: ResultsDB,
    run_id: str,
    outcomes: dict[str, list[bool]],
    *,
    second_judge: dict[tuple[str, int], bool] | None = None,
    seeds: list[int] | None = None,
    paths: dict[str, str] | None = None,
    kgs: dict[str, str] | None = None,
    **meta: str,
) -> None:
    """A run whose primary ("seed") verdicts are `outcomes[qid][seed]`; `second_judge` adds an
    "other" judge's verdict on the (question, seed) keys it names."""
    seeds = seeds if seeds is not None else list(range(max(len(v) for v in outcomes.values())))
    metadata = RunMetadata(
        run_id=run_id, system=meta.get("system", "sys"), system_version=meta.get("system_version", "1"), holdout="holdout",
        holdout_manifest_sha256=meta.get("holdout_sha", "h" * 64), gold_manifest_sha256=meta.get("gold_sha", "g" * 64),
        seeds=seeds, primary_judge="seed", judge_versions={"seed": "seed-1", "other": "other-1"},
        config_sha256="c" * 64, kgeval_version="0.1.0", started_at="2025-01-01T00:00:00+00:00",
    )
    kgs = kgs or {}
    questions = [RunQuestion(kg=kgs.get(q, "kg"), question_id=q, question=f"question {q}?", domain="d", qtype="list", honeypot=False) for q in outcomes]
    db.create_run(metadata, questions)
    for qid, results in outcomes.items():
        for seed, ok in enumerate(results):
            verdicts = [_verdict("seed", ok, (paths or {}).get(qid, "exact"))]
            if second_judge and (qid, seed) in second_judge:
                verdicts.append(_verdict("other", second_judge[(qid, seed)]))
            attempt = Attempt(kg=kgs.get(qid, "kg"), question_id=qid, seed=seed, state="answered", answer=[qid])
            db.record_attempt(run_id, attempt, verdicts)
    db.finish_run(metadata)
