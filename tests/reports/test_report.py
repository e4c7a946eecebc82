import pytest
from statsmodels.stats.proportion import proportion_confint

from kgeval.checklists import pre_eval_checklist
from kgeval.holdout import load_holdout
from kgeval.config import KgevalConfig
from kgeval.reports import Accuracy, build_report, export_lines, format_accuracy, render_json, render_markdown, run_headline, wilson_interval
from kgeval.runs import ResultsDB, execute_run
from kgeval.systems import WeakSystem
import json

from tests.conftest import REPO


def test_wilson_known_value():
    low, high = wilson_interval(277, 302)
    assert round(low, 4) == 0.8807 and round(high, 4) == 0.9433
    assert (low, high) == pytest.approx(proportion_confint(277, 302, method="wilson"))


def test_accuracy_always_has_an_interval():
    text = format_accuracy(Accuracy.of(55, 60))
    assert text.startswith("91.7% [") and "(55/60)" in text
    assert format_accuracy(Accuracy.of(0, 0)).startswith("n/a")


def test_report_and_export_of_a_weak_run(mini_holdout, mini_gold, tmp_path):
    with ResultsDB(tmp_path / "r.duckdb") as db:
        meta = execute_run(load_holdout(mini_holdout), mini_gold, WeakSystem(), KgevalConfig(), db, checklist=pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml"))
        report = build_report(db, meta.run_id)
        lines = [json.loads(line) for line in export_lines(db, meta.run_id)]
    md = render_markdown(report)
    assert "## Accuracy:" in md and "Wilson" in md and "### By KG" in md and "Seed-to-seed spread" in md
    assert f"({report.overall.correct}/{report.overall.n})" in md
    assert len(report.wrong) == report.overall.n - report.overall.correct
    assert json.loads(render_json(report))["overall"]["n"] == report.overall.n
    assert len(lines) == report.attempts
    first = lines[0]
    assert {"kg", "question_id", "seed", "verdicts"} <= first.keys()
    assert {"judge", "correct", "path", "matched", "unmatched"} <= first["verdicts"][0].keys()
    # the report's count of correct attempts for seed 0 matches the export's
    seed0 = sum(1 for r in lines if r["seed"] == 0 and r["verdicts"] and r["verdicts"][0]["correct"])
    assert report.seed_spread.per_seed[0].correct == seed0


def test_run_headline_is_the_reports_accuracy_and_harness(mini_holdout, mini_gold, tmp_path):
    """What `kgeval run` prints as it ends (without building the whole report) is the report's
    own figure: the same majority, count and Wilson interval, the same harness counts."""
    from tests.oversight import synthetic_run

    with ResultsDB(tmp_path / "r.duckdb") as db:
        meta = execute_run(load_holdout(mini_holdout), mini_gold, WeakSystem(), KgevalConfig(), db, checklist=pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml"))
        synthetic_run(db, "split", {"q1": [True, True, False], "q2": [False, True, False], "q3": [True, False, True]})
        for run_id in (meta.run_id, "split"):
            report = build_report(db, run_id)
            harness, overall = run_headline(db, run_id)
            assert harness == report.harness
            assert overall == report.overall.model_copy(update={"at_least": None}), run_id
            assert format_accuracy(overall) == format_accuracy(report.overall)
    assert 0 < report.overall.correct < report.overall.n  # majorities of mixed seeds counted


def test_groups_and_questions_read_numbers_as_numbers(tmp_path):
    """A benchmark's KGs and question ids carry numbers (kg1 ... kg20, QALD ids 1 ... 1034): the
    report lists kg2 before kg10 and question 9 before question 10, as a reader scans them."""
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.stores import EmbeddedStore
    from tests.conftest import MINI_QUESTIONS, write_holdout

    root = tmp_path / "holdout"
    for kg in ("kg10", "kg2", "kg1"):
        numbered = [{**q, "id": f"{kg}-{n}", "domain": f"d{kg[2:]}"} for n, q in zip((1, 2, 3, 9, 10, 11, 20, 100), MINI_QUESTIONS)]
        write_holdout(root, numbered, kg=kg)
    holdout = load_holdout(root)
    assert rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold").ok
    with ResultsDB(tmp_path / "r.duckdb") as db:
        meta = execute_run(holdout, tmp_path / "gold", WeakSystem(), KgevalConfig(), db, checklist=pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml"))
        report = build_report(db, meta.run_id)
    assert [a.group for a in report.by_kg] == ["kg1", "kg2", "kg10"]
    assert [a.group for a in report.by_domain] == ["d1", "d2", "d10"]
    assert [m.group for m in report.macro_prf] == ["overall", "kg1", "kg2", "kg10"]
    wrong = [w.question_id for w in report.wrong]
    assert len(wrong) > 3 and wrong == sorted(wrong, key=lambda q: (int(q.split("-")[0][2:]), int(q.split("-")[1])))
    md = render_markdown(report)
    assert md.index("| kg2 |") < md.index("| kg10 |")
