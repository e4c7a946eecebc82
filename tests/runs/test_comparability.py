"""Comparability: two runs compare only under the same conditions of measurement; every
difference is named, and `kgeval compare` refuses (exit 1) with the fields that differ."""

from __future__ import annotations

from kgeval.checklists import pre_eval_checklist
from kgeval.config import KgevalConfig, RunConfig
from kgeval.holdout import load_holdout
from kgeval.runs import ResultsDB, comparability, execute_run, plan_run
from kgeval.systems import OracleSystem, WeakSystem
from tests.cli.test_cli import kgeval
from tests.conftest import REPO

CHECKLIST = REPO / "checklists" / "pre_eval.yaml"


def test_comparability_names_blocking_and_reported_fields(mini_holdout, mini_gold):
    holdout = load_holdout(mini_holdout)
    a = plan_run(holdout, mini_gold, OracleSystem(), KgevalConfig(run=RunConfig(seeds=2))).metadata
    b = plan_run(holdout, mini_gold, WeakSystem(), KgevalConfig(run=RunConfig(seeds=3))).metadata
    diffs = {d.field: d for d in comparability(a, b)}
    assert diffs["seeds"].blocking and not diffs["system"].blocking
    assert diffs["config_sha256"].blocking is False
    assert [d.field for d in comparability(a, a)] == []
    c = b.model_copy(update={"seeds": a.seeds, "reasoning": {"thinking_budget": 0}, "served_versions": ["m-002"]})
    diffs = comparability(a, c)
    assert not [d for d in diffs if d.blocking]
    assert {"reasoning", "served_versions", "system"} <= {d.field for d in diffs}
    assert "seeds" in "; ".join(d.describe() for d in comparability(a, b))


def test_cli_compare_refuses_incomparable_runs_and_names_fields(mini_holdout, mini_gold, tmp_path):
    db_path = tmp_path / "r.duckdb"
    checklist = pre_eval_checklist(CHECKLIST)
    with ResultsDB(db_path) as db:
        two = execute_run(load_holdout(mini_holdout), mini_gold, OracleSystem(), KgevalConfig(run=RunConfig(seeds=2)), db, checklist=checklist)
        weak = execute_run(load_holdout(mini_holdout), mini_gold, WeakSystem(), KgevalConfig(run=RunConfig(seeds=2)), db, checklist=checklist)
        three = execute_run(load_holdout(mini_holdout), mini_gold, WeakSystem(), KgevalConfig(run=RunConfig(seeds=3)), db, checklist=checklist)
    ok = kgeval("compare", two.run_id, weak.run_id, "--db", str(db_path))
    assert ok.returncode == 0, ok.stderr
    assert "system: oracle vs weak" in ok.stdout
    refused = kgeval("compare", two.run_id, three.run_id, "--db", str(db_path))
    assert refused.returncode == 1
    assert "not comparable: seeds: [0, 1] vs [0, 1, 2]" in refused.stderr


def test_compare_refuses_a_withheld_run_and_names_the_judge_that_differs(mini_holdout, mini_gold, tmp_path):
    """A run whose report withholds its accuracy (too many harness errors) has no accuracy to
    compare; and a judge configured otherwise is named with both of its versions, whole."""
    import json

    from kgeval.config import ExecutionJudgeConfig, JudgesConfig
    from kgeval.systems import ReplaySystem
    from tests.conftest import MINI_QUESTIONS

    db_path, checklist = tmp_path / "r.duckdb", pre_eval_checklist(CHECKLIST)
    replay = tmp_path / "replay.jsonl"  # two of the eight questions unanswered: 25% missing, over the 10% limit
    replay.write_text("\n".join(json.dumps({"kg": "mini", "question_id": q["id"], "seed": s, "sparql": q["sparql"]}) for q in MINI_QUESTIONS[2:] for s in (0, 1)))
    lax = KgevalConfig(run=RunConfig(seeds=2), judges=JudgesConfig(execution=ExecutionJudgeConfig(min_recall=0.5)))
    with ResultsDB(db_path) as db:
        oracle = execute_run(load_holdout(mini_holdout), mini_gold, OracleSystem(), KgevalConfig(run=RunConfig(seeds=2)), db, checklist=checklist)
        partial = execute_run(load_holdout(mini_holdout), mini_gold, ReplaySystem(replay), KgevalConfig(run=RunConfig(seeds=2)), db, checklist=checklist)
        other_judge = execute_run(load_holdout(mini_holdout), mini_gold, OracleSystem(), lax, db, checklist=checklist)
    refused = kgeval("compare", oracle.run_id, partial.run_id, "--db", str(db_path))
    assert refused.returncode == 1
    assert f"run {partial.run_id}: its report withholds its accuracy (4 of 16 attempts (25.0%) ended in an error" in refused.stderr
    forced = kgeval("compare", oracle.run_id, partial.run_id, "--db", str(db_path), "--force")
    assert forced.returncode == 0 and "its report withholds its accuracy" in forced.stdout  # every page says why
    judges = kgeval("compare", oracle.run_id, other_judge.run_id, "--db", str(db_path))
    assert judges.returncode == 1
    versions_a, versions_b = oracle.judge_versions["execution"], other_judge.judge_versions["execution"]
    assert f"judge versions execution: {versions_a} vs {versions_b}" in judges.stderr and "seed:" not in judges.stderr
