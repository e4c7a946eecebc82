"""Gold review: rights per domain, approvals bound to the content hash, stale vs never reviewed,
changes_requested is never approval, a missing or corrupt store approves nothing."""

import pytest
import yaml

from kgeval.errors import CheckFailed, InputError
from kgeval.gold import load_gold
from kgeval.holdout import load_holdout
from kgeval.runs import DamagedDatabase
from kgeval.review import NotPermitted, Reviewer, ReviewLog, current_hashes, question_content_sha256, record_review, review_coverage, review_states

HANA = Reviewer(name="hana", domains=("hr",))


def _question(holdout, qid):
    return next(q for q in load_holdout(holdout).questions() if q.id == qid)


def _approve(log, holdout, gold, qid, reviewer=HANA, decision="approve", note=""):
    q = _question(holdout, qid)
    entry = load_gold(gold)[qid]
    return record_review(log, q, entry, reviewer, decision, question_content_sha256(q, entry), note)


def test_reviewer_of_one_domain_cannot_approve_another(tmp_path, mini_holdout, mini_gold):
    with ReviewLog(tmp_path / "r.duckdb") as log:
        with pytest.raises(NotPermitted, match="not 'retail'"):
            _approve(log, mini_holdout, mini_gold, "mini-06")  # a retail question
        _approve(log, mini_holdout, mini_gold, "mini-01")
        assert [r.question_id for r in log.records()] == ["mini-01"]
    assert Reviewer(name="x", domains=("*",)).may_review("retail")


def test_editing_a_question_makes_its_approval_stale(tmp_path, mini_holdout, mini_gold):
    with ReviewLog(tmp_path / "r.duckdb") as log:
        _approve(log, mini_holdout, mini_gold, "mini-01")
        _approve(log, mini_holdout, mini_gold, "mini-02")
        records = log.records()
    gold = load_gold(mini_gold)
    before = review_states(current_hashes(load_holdout(mini_holdout).questions(), gold), records)
    assert before["mini-01"] == before["mini-02"] == "approved" and before["mini-03"] == "never_reviewed"
    path = mini_holdout / "mini" / "questions.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["questions"][0]["question"] = "In which department does Alice work?"
    doc["questions"][1]["sparql"] += " LIMIT 100"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    after = review_states(current_hashes(load_holdout(mini_holdout).questions(), gold), records)
    assert after["mini-01"] == after["mini-02"] == "stale"  # distinct from never reviewed
    assert after["mini-03"] == "never_reviewed"


def test_changes_requested_never_counts_as_approval(tmp_path, mini_holdout, mini_gold):
    with ReviewLog(tmp_path / "r.duckdb") as log:
        _approve(log, mini_holdout, mini_gold, "mini-01")
        _approve(log, mini_holdout, mini_gold, "mini-01", decision="changes_requested", note="label, not IRI")
        with pytest.raises(InputError, match="needs a note"):
            _approve(log, mini_holdout, mini_gold, "mini-03", decision="changes_requested")
        coverage = review_coverage(load_holdout(mini_holdout).questions(), load_gold(mini_gold), log, target=0.2)
    assert coverage.approved == 0 and coverage.changes_requested == 1


def test_a_decision_on_an_outdated_view_is_refused(tmp_path, mini_holdout, mini_gold):
    q = _question(mini_holdout, "mini-01")
    with ReviewLog(tmp_path / "r.duckdb") as log, pytest.raises(CheckFailed, match="changed since it was shown"):
        record_review(log, q, load_gold(mini_gold)["mini-01"], HANA, "approve", "f" * 64)


def test_a_missing_store_approves_nothing(tmp_path, mini_holdout, mini_gold):
    path = tmp_path / "r.duckdb"
    questions, gold = load_holdout(mini_holdout).questions(), load_gold(mini_gold)
    with ReviewLog(path, read_only=True) as log:
        assert log.records() == [] and "does not exist" in log.problem
        coverage = review_coverage(questions, gold, log, target=0.2)
    assert coverage.approved == 0 and coverage.store_problem and not coverage.meets_target


@pytest.mark.parametrize("damage", ["garbage", "truncated", "zero bytes"])
def test_a_damaged_store_is_named_never_read_as_empty(tmp_path, mini_holdout, mini_gold, damage):
    path = tmp_path / "r.duckdb"
    with ReviewLog(path) as log:
        for qid in ("mini-01", "mini-02", "mini-03"):
            _approve(log, mini_holdout, mini_gold, qid)
    data = {"garbage": b"this is not a database\n" * 100, "truncated": path.read_bytes()[:5000], "zero bytes": b""}[damage]
    path.write_bytes(data)
    for read_only in (True, False):  # neither read as empty nor written over
        with pytest.raises(DamagedDatabase, match=f"{path}: results database is damaged"):
            ReviewLog(path, read_only=read_only)
    assert path.read_bytes() == data


def test_coverage_against_target(tmp_path, mini_holdout, mini_gold):
    questions, gold = load_holdout(mini_holdout).questions(), load_gold(mini_gold)
    with ReviewLog(tmp_path / "r.duckdb") as log:
        _approve(log, mini_holdout, mini_gold, "mini-01")
        low = review_coverage(questions, gold, log, target=0.2)
        _approve(log, mini_holdout, mini_gold, "mini-02")
        met = review_coverage(questions, gold, log, target=0.2)
    assert (low.approved, low.meets_target) == (1, False)  # 1/8 < 20%
    assert (met.approved, met.meets_target) == (2, True)  # 2/8 >= 20%
    assert {d.domain: (d.approved, d.questions) for d in met.by_domain} == {"hr": (2, 7), "retail": (0, 1)}


def test_report_coverage_counts_the_questions_a_run_scores(tmp_path, mini_holdout, mini_gold):
    """An excluded question is not asked, so its gold is not reviewed for the run: 2 approved of
    the 6 scored questions is 33%, not 2 of 8 (25%)."""
    from kgeval.config import KgevalConfig
    from kgeval.holdout import exclude_questions
    from kgeval.reports._oversight import review_summary
    from kgeval.runs import ResultsDB

    exclude_questions(mini_holdout, ["mini-03", "mini-04"], why="reference query times out on the engine")
    db = tmp_path / "r.duckdb"
    with ReviewLog(db) as log:
        _approve(log, mini_holdout, mini_gold, "mini-01")
        _approve(log, mini_holdout, mini_gold, "mini-02")
    with ResultsDB(db) as results:
        coverage = review_summary(results, None, mini_gold, mini_holdout, KgevalConfig(), [])
    assert (coverage.questions, coverage.approved) == (6, 2)
    assert round(coverage.coverage, 3) == 0.333
