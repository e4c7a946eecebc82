"""The report's judge figures: every enabled judge side by side, their disagreements with
recall, and never a verdict of another judge version in a figure."""

import json

import duckdb
from typer.testing import CliRunner

from kgeval.checklists import pre_eval_checklist
from kgeval.cli import app
from kgeval.config import KgevalConfig, RunConfig
from kgeval.holdout import load_holdout
from kgeval.reports import build_report, render_markdown
from kgeval.runs import ResultsDB, execute_run
from kgeval.runs._seal import seal_run
from kgeval.systems import ReplaySystem
from tests.conftest import MINI_QUESTIONS
from tests.conftest import REPO

ITEMS = [f"http://example.org/mini/entities/item{i}" for i in range(30)]


def _replay_run(tmp_path, mini_holdout, mini_gold, seeds=1):
    records = [{"kg": "mini", "question_id": q["id"], "sparql": q["sparql"]} for q in MINI_QUESTIONS]
    # mini-06 lists 30 items: ten of them pass membership (seed) and fail execution (recall 1/3)
    records[5] = {"kg": "mini", "question_id": "mini-06", "answer": ITEMS[:10]}
    path = tmp_path / "replay.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    db_path = tmp_path / "r.duckdb"
    with ResultsDB(db_path) as db:
        meta = execute_run(load_holdout(mini_holdout), mini_gold, ReplaySystem(path), KgevalConfig(run=RunConfig(seeds=seeds)), db, checklist=pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml"))
    return db_path, meta


def test_disagreement_table_with_recall(mini_holdout, mini_gold, tmp_path):
    db_path, meta = _replay_run(tmp_path, mini_holdout, mini_gold)
    with ResultsDB(db_path, read_only=True) as db:
        report = build_report(db, meta.run_id)
    assert meta.primary_judge == "execution" and report.overall.correct == len(MINI_QUESTIONS) - 1
    pairs = {(d.accepts, d.rejects): d.questions for d in report.disagreements}
    assert pairs[("execution", "seed")] == []
    (item,) = pairs[("seed", "execution")]
    assert item.question_id == "mini-06" and item.recall == 10 / 30 and item.strict_subset == "10 of 30"
    by_judge = {a.group.split(" ")[0]: a.correct for a in report.by_judge}
    assert by_judge == {"seed": len(MINI_QUESTIONS), "execution": len(MINI_QUESTIONS) - 1}
    md = render_markdown(report)
    assert "### Judge disagreement" in md and "| seed | execution | 1 | mini-06 (0.333, strict_subset: 10 of 30) |" in md


def test_report_never_mixes_judge_versions(mini_holdout, mini_gold, tmp_path):
    db_path, meta = _replay_run(tmp_path, mini_holdout, mini_gold)
    con = duckdb.connect(str(db_path))
    con.execute("UPDATE verdicts SET version = 'execution-0+old', correct = NOT correct WHERE judge = 'execution' AND question_id IN ('mini-01', 'mini-06')")
    con.execute("DELETE FROM run_seals WHERE run_id = ?", [meta.run_id])
    seal_run(con, meta.run_id)  # a run holding two versions of a judge, as written: not an edit after the fact
    con.close()
    with ResultsDB(db_path, read_only=True) as db:
        report = build_report(db, meta.run_id)
    # the two re-versioned verdicts are left out of every figure, not counted with flipped outcomes
    assert report.overall.n == len(MINI_QUESTIONS) - 2 and report.overall.correct == report.overall.n
    assert report.judged_attempts == len(MINI_QUESTIONS) - 2
    assert all(d.questions == [] for d in report.disagreements)
    assert {a.group.split(" ")[0]: a.n for a in report.by_judge} == {"seed": len(MINI_QUESTIONS), "execution": len(MINI_QUESTIONS) - 2}


def test_cli_report_shows_the_disagreement_table(mini_holdout, mini_gold, tmp_path):
    db_path, meta = _replay_run(tmp_path, mini_holdout, mini_gold)
    result = CliRunner().invoke(app, ["report", meta.run_id, "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    assert "Judge disagreement" in result.output and "mini-06 (0.333" in result.output
    exported = CliRunner().invoke(app, ["export", meta.run_id, "--db", str(db_path)])
    lines = [json.loads(line) for line in exported.output.splitlines()]
    mini06 = next(r for r in lines if r["question_id"] == "mini-06")
    assert {v["judge"]: v["details"].get("recall") for v in mini06["verdicts"]} == {"seed": 10 / 30, "execution": 10 / 30}
