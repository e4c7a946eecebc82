"""Comparing two runs: the paired table, flips both ways, refusal of incomparable runs."""

import json

from kgeval.reports import basic_comparability, compare_runs, render_comparison_html, render_comparison_json, render_comparison_markdown
from kgeval.runs import ResultsDB
from tests.cli.test_cli import kgeval
from tests.oversight import synthetic_run

A = {"q1": [True], "q2": [True], "q3": [False], "q4": [False], "q5": [True]}
B = {"q1": [True], "q2": [False], "q3": [True], "q4": [True], "q5": [True]}


def test_paired_table_and_flips(tmp_path):
    with ResultsDB(tmp_path / "r.duckdb") as db:
        synthetic_run(db, "a", A, system="base")
        synthetic_run(db, "b", B, system="cand")
        check = basic_comparability(db.metadata("a"), db.metadata("b"))
        c = compare_runs(db, "a", "b", check)
    assert check.comparable and check.differences == ["system: base vs cand"]
    assert (c.both_correct, c.a_only, c.b_only, c.both_wrong) == (2, 1, 2, 0)
    assert {(f.question_id, f.a_correct) for f in c.flips} == {("q2", True), ("q3", False), ("q4", False)}
    assert c.difference == (4 - 3) / 5
    assert c.diff_ci_low < c.difference < c.diff_ci_high
    md = render_comparison_markdown(c)
    assert "A right → B wrong" in md and "A wrong → B right" in md and "McNemar" in md and "Newcombe" in md
    assert "INCOMPARABLE" not in md


def test_incomparable_runs_are_refused_unless_forced_and_then_every_page_says_so(tmp_path):
    db_path = tmp_path / "r.duckdb"
    with ResultsDB(db_path) as db:
        synthetic_run(db, "a", A)
        synthetic_run(db, "b", B, gold_sha="x" * 64)
    refused = kgeval("compare", "a", "b", "--db", str(db_path))
    assert refused.returncode == 1
    assert "not comparable" in refused.stderr and "gold manifest" in refused.stderr and "--force" in refused.stderr
    forced = kgeval("compare", "a", "b", "--db", str(db_path), "--force", "--format", "json")
    assert forced.returncode == 0, forced.stderr
    data = json.loads(forced.stdout)
    assert data["forced"] is True and data["warning"].startswith("INCOMPARABLE RUNS") and "gold manifest" in data["warning"]
    with ResultsDB(db_path, read_only=True) as db:
        c = compare_runs(db, "a", "b", basic_comparability(db.metadata("a"), db.metadata("b")), forced=True)
    assert render_comparison_markdown(c).count("INCOMPARABLE RUNS") == 2  # first and last lines
    page = render_comparison_html(c)
    assert page.count('<p class="warning">INCOMPARABLE RUNS') == 2  # a banner at the top and the bottom
    assert json.loads(render_comparison_json(c))["comparability"]["blocking"]


def test_a_flip_names_the_seed_that_flipped_on_each_side(tmp_path):
    """Where seeds disagree, a flip opens each side on a seed showing that side's outcome: q1 is
    right in A (seeds 0, 1 right) and wrong in B by majority (seed 0 right, 1 and 2 wrong), so B
    shows seed 1, not seed 0, which agrees with A."""
    with ResultsDB(tmp_path / "r.duckdb") as db:
        synthetic_run(db, "a", {"q1": [True, True, False], "q2": [False, False, True]})
        synthetic_run(db, "b", {"q1": [True, False, False], "q2": [False, True, True]})
        c = compare_runs(db, "a", "b", basic_comparability(db.metadata("a"), db.metadata("b")))
    seeds = {f.question_id: (f.a_seed, f.b_seed) for f in c.flips}
    assert seeds == {"q1": (0, 1), "q2": (0, 1)}
    md = render_comparison_markdown(c)
    assert "| kg/q1 | correct | wrong | A right → B wrong | 0 / 1 |" in md and "`kgeval show a KG/QID --seed S`" in md
    assert "| kg/q2 | wrong | correct | A wrong → B right | 0 / 1 |" in md and "seeds A / B" in render_comparison_html(c)


def _run_with_rules(db, run_id: str, execution: dict) -> None:  # noqa: ANN001
    """A one-question run judged by the execution judge configured as `execution`."""
    from kgeval.config import JudgesConfig
    from kgeval.judges import judge_from_config
    from kgeval.runs import Attempt, RunMetadata, RunQuestion
    from tests.oversight import _verdict

    judges = JudgesConfig.model_validate({"execution": execution, "enabled": ["execution"]})
    metadata = RunMetadata(
        run_id=run_id, system="sys", system_version="1", holdout="holdout", holdout_manifest_sha256="h" * 64, gold_manifest_sha256="g" * 64,
        seeds=[0], primary_judge="execution", judge_versions={"execution": judge_from_config("execution", judges).version},
        config_sha256="c" * 64, config={"judges": judges.model_dump(mode="json")}, kgeval_version="0.1.0", started_at="2025-01-01T00:00:00+00:00",
    )
    db.create_run(metadata, [RunQuestion(kg="kg", question_id="q1", question="question q1?", domain="d", qtype="list", honeypot=False)])
    db.record_attempt(run_id, Attempt(kg="kg", question_id="q1", seed=0, state="answered", answer=["x"]), [_verdict("execution", True, "exact")])
    db.finish_run(metadata)


def test_runs_judged_with_different_rule_sets_are_refused_naming_the_rules(tmp_path):
    """Issue 32: `compare` refuses runs whose judges switched leniency rules differently, and says which."""
    db_path = tmp_path / "r.duckdb"
    with ResultsDB(db_path) as db:
        _run_with_rules(db, "strict", {})
        _run_with_rules(db, "lenient", {"labels": {"label_for_entity": True}, "readings": {"hedged_numbers": True}})
        _run_with_rules(db, "same", {})
    refused = kgeval("compare", "strict", "lenient", "--db", str(db_path))
    assert refused.returncode == 1
    assert "rule set of judge execution: label_for_entity off in run strict, on in run lenient; hedged_numbers off in run strict, on in run lenient" in refused.stderr
    assert "--force" in refused.stderr
    forced = kgeval("compare", "strict", "lenient", "--db", str(db_path), "--force", "--format", "json")
    assert forced.returncode == 0, forced.stderr
    assert "label_for_entity off in run strict" in json.loads(forced.stdout)["warning"]
    same = kgeval("compare", "strict", "same", "--db", str(db_path), "--format", "json")
    assert same.returncode == 0, same.stderr
    assert not json.loads(same.stdout)["comparability"]["blocking"]
