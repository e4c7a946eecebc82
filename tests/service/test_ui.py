"""The routes behind the run page (kgeval/service/_ui.py), in process, over an oracle run and a
newer replay run of the mini holdout."""

from __future__ import annotations

import pytest

from tests.oversight import write_access
from tests.service.conftest import Served, auth
from tests.viewing import two_runs


@pytest.fixture
def served(mini_holdout, mini_gold, tmp_path) -> Served:
    db = tmp_path / "r.duckdb"
    oracle, replay = two_runs(mini_holdout, mini_gold, db, tmp_path)
    served = Served(mini_holdout, mini_gold, db, write_access(tmp_path / "access.yaml"), replay)
    served.oracle = oracle  # type: ignore[attr-defined]
    return served


def test_the_samples_of_a_run_one_line_per_attempt(client, served):
    lines = client.get(f"/runs/{served.run_id}/samples", headers=auth("ann")).json()
    assert len(lines) == 16
    wrong = sorted({line["question_id"] for line in lines if line["outcome"] == "wrong"})
    assert wrong == ["mini-01", "mini-02", "mini-05", "mini-06", "mini-08"]
    assert [(line["question_id"], line["error_kind"]) for line in lines if line["outcome"] == "error"] == [("mini-04", "missing")]
    assert [line["disagreement"] for line in lines if line["question_id"] == "mini-06"] == [True, True]
    assert {line["audit_state"] for line in lines if line["outcome"] == "correct"} == {"unaudited"}


def test_one_sample_whole_with_highlighted_sparql(client, served):
    body = client.get(f"/runs/{served.run_id}/samples/mini-02", params={"seed": 1}, headers=auth("hana")).json()
    sample = body["sample"]
    assert sample["seed"] == 1 and sample["gold_table"]["counts"] == {"matched": 1, "missing": 1}
    assert sample["execution"]["source"] == "re-executed"
    assert "<span" in body["sparql_html"] and "&lt;http://example.org/mini/vocab/&gt;" in body["sparql_html"]
    assert sample["audit"] is None  # a wrong answer is no accept: nothing to audit
    accepted = client.get(f"/runs/{served.run_id}/samples/mini-03", headers=auth("ann")).json()["sample"]
    assert accepted["audit"]["state"] == "unaudited" and len(accepted["audit"]["item_sha256"]) == 64


def test_an_audit_decision_from_the_sample_view_counts(client, served):
    sample = client.get(f"/runs/{served.run_id}/samples/mini-04", headers=auth("ann")).json()["sample"]
    body = {"question_id": "mini-04", "seed": 0, "decision": "agree", "item_sha256": sample["audit"]["item_sha256"]}
    assert client.post(f"/runs/{served.run_id}/audit/records", json=body, headers=auth("ann")).status_code == 200
    again = client.get(f"/runs/{served.run_id}/samples/mini-04", headers=auth("ann")).json()["sample"]
    assert again["audit"]["state"] == "agree"
    report = client.get(f"/runs/{served.run_id}/report", headers=auth("ann")).json()
    assert report["audit"]["counts"]["audited"] == 1


def test_unknown_runs_questions_and_seeds_are_404_and_builders_may_not_read(client, served):
    assert client.get("/runs/nope/samples", headers=auth("ann")).status_code == 404
    missing = client.get(f"/runs/{served.run_id}/samples/mini-99", headers=auth("ann"))
    assert missing.status_code == 404 and "no question 'mini-99'" in missing.json()["detail"]
    assert client.get(f"/runs/{served.run_id}/samples/mini-02", params={"seed": 9}, headers=auth("ann")).status_code == 404
    assert client.get(f"/runs/{served.run_id}/samples", headers=auth("bob")).status_code == 403
    assert client.get(f"/runs/{served.run_id}/samples").status_code == 401


def test_compare_pairs_every_question_and_marks_the_flips(client, served):
    body = client.get("/compare", params={"a": served.oracle, "b": served.run_id}, headers=auth("admin")).json()
    flips = sorted(p["question_id"] for p in body["questions"] if p["flip"])
    # mini-01: one seed right, one broken (wrong): a tie, not correct; mini-04: its judged seed is right
    assert flips == ["mini-01", "mini-02", "mini-05", "mini-06", "mini-08"]
    first = next(p for p in body["questions"] if p["question_id"] == "mini-01")
    assert first["a"]["outcomes"] == ["correct", "correct"] and first["b"]["outcomes"] == ["correct", "wrong"]
    fourth = next(p for p in body["questions"] if p["question_id"] == "mini-04")
    assert fourth["b"]["outcomes"] == ["correct", "error"] and not fourth["flip"]


def test_a_reviewer_gets_the_gold_with_its_flags_and_rows(client, served):
    body = client.get("/review/questions/mini-06/gold", headers=auth("rita")).json()
    assert body["gold"]["flags"] == [] and body["gold"]["review_state"] == "never_reviewed"
    assert body["table"]["total"] == 30 and {r["mark"] for r in body["table"]["rows"]} == {None}
    empty = client.get("/review/questions/mini-07/gold", headers=auth("hana")).json()
    assert empty["gold"]["flags"] == ["empty"] and empty["table"]["rows"] == []


def test_the_sign_in_page_is_styled_and_says_when_a_token_is_unknown(client):
    page = client.get("/ui")
    assert page.status_code == 401 and "<style>" in page.text and 'id="token"' in page.text
    refused = client.post("/session", content="token=wrong", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert refused.status_code == 401 and 'class="error">Unknown token.' in refused.text


def test_a_slow_candidate_query_does_not_hold_up_other_requests(client, served):
    """The sample's SPARQL runs outside the service's lock: while one runs, the run page's other
    requests are answered (with the lock held, the second request would wait for the first)."""
    import threading

    state = client.app.state.kgeval
    started, release, ran = threading.Event(), threading.Event(), threading.Event()
    real_store = state.store

    class SlowStore:
        def __init__(self, store):  # noqa: ANN001
            self._store = store
            self.name, self.version = store.name, store.version

        def execute_candidate(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - the sample view runs the run's candidate path
            started.set()
            release.wait(120)  # a stall bound: the test releases it
            ran.set()
            return self._store.execute_candidate(*args, **kwargs)

    state.store = lambda kg: SlowStore(real_store(kg))
    slow: dict = {}
    worker = threading.Thread(target=lambda: slow.update(r=client.get(f"/runs/{served.run_id}/samples/mini-02", headers=auth("ann"))))
    worker.start()
    try:
        assert started.wait(60)
        lines = client.get(f"/runs/{served.run_id}/samples", headers=auth("ann"))
        answered_while_slow = not ran.is_set()  # the slow request is still inside its query
    finally:
        release.set()
        worker.join(120)
    assert lines.status_code == 200 and answered_while_slow
    assert slow["r"].status_code == 200 and slow["r"].json()["sample"]["gold_table"]["counts"] == {"matched": 1, "missing": 1}
