"""Audit and review logs are hash chains: every edit, deletion, reordering or forged row is
detected by every reader (the library, `kgeval report`, `audit show`, `review status`, the
service), reported as "<log> log broken at record N", and nothing of a broken log is read.

Without an integrity key a forger who recomputes every hash passes (anyone can compute
sha256); with a key (`KGEVAL_INTEGRITY_KEY`) even that is caught."""

from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import pytest

from kgeval._chain import MIGRATE_ENV, BrokenLog, ChainedTable
from kgeval.audit import AuditLog, accepted_items, draw_sample, record_decision
from kgeval.errors import InputError
from kgeval.gold import load_gold
from kgeval.holdout import load_holdout
from kgeval.integrity import KEY_ENV
from kgeval.review import ReviewLog, Reviewer, question_content_sha256, record_review
from kgeval.runs import ResultsDB
from tests.conftest import REPO
from tests.oversight import run_system, write_access

KEY = "k" * 32
ANN, HANA = "ann", Reviewer(name="hana", domains=("hr",))


@pytest.fixture
def audited(mini_holdout, mini_gold, tmp_path):
    """A finished run with a stored sample and five audit decisions (two disagree), and three
    review approvals; returns (db path, run id, sample id)."""
    db = tmp_path / "r.duckdb"
    run_id = run_system(mini_holdout, mini_gold, db, "oracle", seeds=2)
    gold = load_gold(mini_gold)
    with ResultsDB(db) as results:
        items = accepted_items(results, run_id, gold)
    sample = draw_sample(run_id, items, 6, seed=3)
    with AuditLog(db) as log:
        log.save_sample(sample)
        for i, item in enumerate(sample.items[:5]):
            record_decision(log, items, item.key, item.sha256(), ANN, "disagree" if i < 2 else "agree", "checked")
    questions = {q.id: q for q in load_holdout(mini_holdout).questions()}
    with ReviewLog(db) as log:
        for qid in ("mini-01", "mini-02", "mini-03"):
            record_review(log, questions[qid], gold.get(qid), HANA, "approve", question_content_sha256(questions[qid], gold.get(qid)))
    return db, run_id, sample.sample_id


def _sql(db, statement: str, params: list | None = None) -> None:
    con = duckdb.connect(str(db))
    con.execute(statement, params or [])
    con.close()


def _forge_plain(db, table: ChainedTable, values: tuple) -> None:
    """Append a row with a correctly recomputed plain chain (what anyone without the key can do)."""
    con = duckdb.connect(str(db))
    length, head = con.execute("SELECT length, head_sha256 FROM log_heads WHERE log = ?", [table.log]).fetchone()
    row_sha = table._row_sha256(length + 1, head, values)
    names = ", ".join((*table.columns, "seq", "prev_sha256", "row_sha256", "tag"))
    con.execute(f"INSERT INTO {table.table} ({names}) VALUES ({', '.join('?' * (len(values) + 4))})", [*values, length + 1, head, row_sha, None])
    con.execute("UPDATE log_heads SET length = ?, head_sha256 = ? WHERE log = ?", [length + 1, row_sha, table.log])
    con.close()


AUDIT_TAMPERS = {
    "edit a decision": ("UPDATE audit_records SET decision = 'agree' WHERE seq = 1", 1),
    "delete a middle decision": ("DELETE FROM audit_records WHERE seq = 2", 2),
    "delete the newest decision": ("DELETE FROM audit_records WHERE seq = 5", 5),
    "swap two decisions' order": ("UPDATE audit_records SET seq = 7 - seq WHERE seq IN (3, 4)", 3),
    "insert a forged decision": (
        "INSERT INTO audit_records (run_id, question_id, seed, item_sha256, auditor, decision, note, recorded_at) "
        "SELECT run_id, question_id, seed, item_sha256, 'mallory', 'agree', '', recorded_at FROM audit_records WHERE seq = 1", 6),
}  # fmt: skip


@pytest.mark.parametrize("tamper", sorted(AUDIT_TAMPERS))
def test_every_tampering_of_the_audit_log_is_caught_by_every_reader(audited, mini_gold, tmp_path, tamper):
    db, run_id, sample_id = audited
    with ResultsDB(db, read_only=True), AuditLog(db, read_only=True) as log:
        assert len(log.records(run_id)) == 5  # intact: read
    statement, record = AUDIT_TAMPERS[tamper]
    _sql(db, statement)
    expected = f"audit log broken at record {record}"
    with AuditLog(db, read_only=True) as log, pytest.raises(BrokenLog, match=expected):
        log.records(run_id)
    with AuditLog(db) as log, pytest.raises(BrokenLog, match=expected):  # never written onto
        log.append(_any_record(run_id))
    # the report shows its other figures, the audit's withheld (a failed check); `audit show`
    # refuses the log as every reader refuses a tampered results database (exit 2)
    for command, code in ((["report", run_id], 1), (["audit", "show", run_id, sample_id], 2)):
        done = _kgeval(*command, "--db", str(db), "--gold", str(mini_gold))
        assert done.returncode == code, done.stderr
        assert expected in done.stderr and "Traceback" not in done.stderr
    # the report still shows the run's figures, says no audit figure is shown, and fails the check
    report = _kgeval("report", run_id, "--db", str(db), "--gold", str(mini_gold))
    assert "(8/8)" in report.stdout and f"audits not shown: {db}: {expected}" in report.stdout
    assert "false-accept" not in report.stdout.lower().split("### notes")[0]


def _any_record(run_id: str):
    from kgeval.audit import AuditRecord

    return AuditRecord(run_id=run_id, question_id="mini-01", seed=0, item_sha256="0" * 64, auditor="x", decision="agree", recorded_at="2026-01-01T00:00:00")


def test_deleting_a_sample_row_is_caught_by_audit_show(audited, mini_gold):
    db, run_id, sample_id = audited
    _sql(db, "DELETE FROM audit_samples WHERE seq = 6")  # the sample's last item
    done = _kgeval("audit", "show", run_id, sample_id, "--db", str(db), "--gold", str(mini_gold))
    assert done.returncode == 2 and "audit sample log broken at record 6" in done.stderr
    assert done.stdout == ""  # not one item shown from a broken log


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE gold_reviews SET question_id = 'mini-04' WHERE seq = 1",  # moves an approval
        "INSERT INTO gold_reviews (kg, question_id, domain, content_sha256, reviewer, decision, note, recorded_at) "
        "SELECT kg, 'mini-04', domain, content_sha256, 'mallory', 'approve', '', recorded_at FROM gold_reviews WHERE seq = 1",
        "DELETE FROM gold_reviews WHERE seq = 3",
    ],
    ids=["edit", "forged approval", "delete newest"],
)
def test_a_tampered_review_log_approves_nothing_everywhere(audited, mini_holdout, mini_gold, statement):
    """A broken review log is named (BrokenLog, exit 1) by every reader, never read as an empty one."""
    db, run_id, _ = audited
    _sql(db, statement)
    with ReviewLog(db, read_only=True) as log, pytest.raises(BrokenLog, match=f"{db}: review log broken at record"):
        log.records()
    status = _kgeval("review", "status", "--db", str(db), "--holdout", str(mini_holdout), "--gold", str(mini_gold))
    assert status.returncode == 2 and f"{db}: review log broken at record" in status.stderr and status.stdout == ""
    report = _kgeval("report", run_id, "--db", str(db), "--gold", str(mini_gold), "--format", "json")
    assert report.returncode == 1 and "review log broken at record" in report.stderr, report.stderr
    shown = json.loads(report.stdout)
    assert shown["review"] is None and shown["review_refused"].startswith(f"gold review not shown: {db}: review log broken at record")
    assert shown["overall"]["n"] == 8  # the run's figures are still shown


def test_the_service_reports_a_broken_log_and_shows_nothing_of_it(audited, mini_holdout, mini_gold, tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from kgeval.config import KgevalConfig
    from kgeval.service import ServiceSettings, create_app, load_access

    db, run_id, sample_id = audited
    _sql(db, "DELETE FROM audit_records WHERE seq = 5")
    _sql(db, "UPDATE gold_reviews SET reviewer = 'rita' WHERE seq = 2")
    access = load_access(write_access(tmp_path / "access.yaml"), env={})
    settings = ServiceSettings(db=db, holdout=mini_holdout, gold=mini_gold, config=KgevalConfig(), access=access)
    headers = {"Authorization": "Bearer auditor-token"}
    with TestClient(create_app(settings)) as client:
        sample = client.get(f"/runs/{run_id}/audit/samples/{sample_id}", headers=headers)
        assert sample.status_code == 409 and "audit log broken at record 5" in sample.json()["detail"]
        # the report keeps the run's figures and says why no audit figure is shown (as for a refused gold)
        report = client.get(f"/runs/{run_id}/report", headers=headers)
        assert report.status_code == 200 and report.json()["audit"] is None
        assert "audit log broken at record 5" in report.json()["audit_refused"] and report.json()["overall"]["n"] == 8
        # the run page's routes read the audit state of each sample: the same 409 (the sample was a 400)
        for route in (f"/runs/{run_id}/samples", f"/runs/{run_id}/samples/mini-01?seed=0"):
            page = client.get(route, headers=headers)
            assert page.status_code == 409 and "log broken at record" in page.json()["detail"], (route, page.text)
        review = client.get("/review/questions", headers=headers)
        assert review.status_code == 409 and "review log broken at record 2" in review.json()["detail"]


def test_with_a_key_a_recomputed_chain_is_still_caught(audited, monkeypatch):
    db, run_id, _ = audited
    from kgeval.audit._store import _RECORDS

    # written without a key: the plain chain is all there is, and a recomputed forgery passes it
    _forge_plain(db, _RECORDS, (run_id, "mini-01", 0, "0" * 64, "mallory", "agree", "", "2026-01-01T00:00:00"))
    with AuditLog(db, read_only=True) as log:
        assert "mallory" in {r.auditor for r in log.records(run_id)}
    # with a key, the same kind of forgery fails its tag
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv(MIGRATE_ENV, "1")
    signed = db.parent / "signed.duckdb"
    with AuditLog(signed) as log:
        log.append(_any_record(run_id))
        log.append(_any_record(run_id))
    with AuditLog(signed, read_only=True) as log:
        assert len(log.records(run_id)) == 2
    _forge_plain(signed, _RECORDS, (run_id, "mini-01", 0, "0" * 64, "mallory", "agree", "", "2026-01-01T00:00:00"))
    with AuditLog(signed, read_only=True) as log, pytest.raises(BrokenLog, match="record 3: record 3: no integrity tag"):
        log.records(run_id)
    monkeypatch.setenv(KEY_ENV, "another key entirely, 32 bytes.")
    _sql(signed, "DELETE FROM audit_records WHERE seq = 3")
    _sql(signed, "UPDATE log_heads SET length = 2, head_sha256 = (SELECT row_sha256 FROM audit_records WHERE seq = 2) WHERE log = 'audit'")
    with AuditLog(signed, read_only=True) as log, pytest.raises(BrokenLog, match="signed with another key"):
        log.records(run_id)


def test_a_store_written_before_chains_is_chained_on_first_write_and_then_protected(tmp_path, monkeypatch):
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    con.execute(
        "CREATE TABLE audit_records (run_id VARCHAR NOT NULL, question_id VARCHAR NOT NULL, seed INTEGER NOT NULL, "
        "item_sha256 VARCHAR NOT NULL, auditor VARCHAR NOT NULL, decision VARCHAR NOT NULL, note VARCHAR NOT NULL, recorded_at VARCHAR NOT NULL)"
    )
    con.execute(
        "CREATE TABLE audit_samples (sample_id VARCHAR, run_id VARCHAR, accepts INTEGER, seed INTEGER, created_at VARCHAR, "
        "position INTEGER, item JSON, item_sha256 VARCHAR, PRIMARY KEY (sample_id, position))"
    )
    for i, decision in enumerate(["agree", "disagree", "agree"]):
        con.execute("INSERT INTO audit_records VALUES ('r', ?, 0, ?, 'ann', ?, '', ?)", [f"q{i}", "a" * 64, decision, f"2025-01-0{i + 1}"])
    con.close()
    monkeypatch.setenv(KEY_ENV, KEY)
    with AuditLog(db, read_only=True) as log, pytest.raises(BrokenLog, match="3 records without a hash chain"):
        log.records("r")  # unchained evidence is not trusted
    with pytest.raises(BrokenLog, match=MIGRATE_ENV):
        AuditLog(db)  # chaining needs the operator's word: dropping a chain must not get rows signed
    monkeypatch.setenv(MIGRATE_ENV, "1")
    with AuditLog(db) as log:
        assert [r.decision for r in log.records("r")] == ["agree", "disagree", "agree"]
    monkeypatch.delenv(MIGRATE_ENV)
    con = duckdb.connect(str(db))
    assert con.execute("SELECT length, migrated_rows FROM log_heads WHERE log = 'audit'").fetchone() == (3, 3)
    con.execute("UPDATE audit_records SET decision = 'agree' WHERE seq = 2")
    con.close()
    with AuditLog(db, read_only=True) as log, pytest.raises(BrokenLog, match="record 2: its content no longer matches"):
        log.records("r")


def test_an_invalid_stored_value_is_named_not_a_traceback(audited, mini_gold):
    db, run_id, sample_id = audited
    # a valid chain over an invalid value: what a buggy older writer could have left
    from kgeval.audit._store import _RECORDS

    _forge_plain(db, _RECORDS, (run_id, "mini-01", 0, "0" * 64, "ann", "maybe", "", "2026-01-01T00:00:00"))
    with AuditLog(db, read_only=True) as log, pytest.raises(InputError, match="audit log: decision on mini-01 seed 0: invalid stored value: decision"):
        log.records(run_id)
    done = _kgeval("report", run_id, "--db", str(db), "--gold", str(mini_gold))
    assert done.returncode == 2 and "invalid stored value" in done.stderr and "Traceback" not in done.stderr


def _kgeval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgeval", *args], cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.fixture(params=["no key", "key"])
def key_mode(request, monkeypatch) -> str:
    """Listed before `audited`: with "key", the store is written and read under an integrity key."""
    if request.param == "key":
        monkeypatch.setenv(KEY_ENV, KEY)
    return request.param


def _rechain_plain(db, table: ChainedTable) -> None:
    """Recompute the table's whole chain and head without a key (what anyone can do after an edit)."""
    con = duckdb.connect(str(db))
    rows = con.execute(f"SELECT {', '.join(table.columns)} FROM {table.table} ORDER BY seq").fetchall()
    con.execute(f"DELETE FROM {table.table}")
    prev = ""
    for seq, values in enumerate(rows, 1):
        row_sha = table._row_sha256(seq, prev, tuple(values))
        names = ", ".join((*table.columns, "seq", "prev_sha256", "row_sha256", "tag"))
        con.execute(f"INSERT INTO {table.table} ({names}) VALUES ({', '.join('?' * (len(values) + 4))})", [*values, seq, prev, row_sha, None])
        prev = row_sha
    con.execute("UPDATE log_heads SET length = ?, head_sha256 = ?, tag = NULL WHERE log = ?", [len(rows), prev, table.log])
    con.close()


SAMPLE_DELETIONS = {
    # the first item (a "disagree" decision on it) deleted: the chain breaks at its row
    "delete the row": (["DELETE FROM audit_samples WHERE position = 0"], False, "audit sample log broken at record 1"),
    # ... and the chain recomputed: without a key only the sample's own id (a hash over its items) shows it
    "delete, renumber, recompute the chain": (
        ["DELETE FROM audit_samples WHERE position = 0", "UPDATE audit_samples SET position = position - 1"], True, None,
    ),
}  # fmt: skip


@pytest.mark.parametrize("deletion", sorted(SAMPLE_DELETIONS))
def test_a_deleted_sample_item_withholds_the_audit_figures(key_mode, audited, mini_gold, deletion):
    """issue 35 item 2: `kgeval report` counted the decision on an item deleted from its stored
    sample (exit 0, the false-accept rate published); `audit show` noticed. Every reader of the
    decisions now checks the run's samples whole, with and without the integrity key."""
    db, run_id, sample_id = audited
    before = _kgeval("report", run_id, "--db", str(db), "--gold", str(mini_gold), "--format", "json")
    assert before.returncode == 0 and json.loads(before.stdout)["audit"]["counts"]["disagree"] == 2, before.stderr
    statements, rechain, expected = SAMPLE_DELETIONS[deletion]
    for statement in statements:
        _sql(db, statement)
    if rechain:
        from kgeval.audit._store import _SAMPLES

        _rechain_plain(db, _SAMPLES)
        expected = "no integrity tag" if key_mode == "key" else f"audit sample {sample_id} of run {run_id} is not whole"
    report = _kgeval("report", run_id, "--db", str(db), "--gold", str(mini_gold), "--format", "json")
    assert report.returncode == 1, (report.returncode, report.stderr)
    shown = json.loads(report.stdout)
    assert shown["audit"] is None and expected in shown["audit_refused"] and str(db) in report.stderr
    assert shown["overall"]["n"] == 8  # the run's own figures stay
    show = _kgeval("audit", "show", run_id, sample_id, "--db", str(db), "--gold", str(mini_gold))
    assert show.returncode == 2 and expected in show.stderr and show.stdout == ""
    with AuditLog(db, read_only=True) as log, pytest.raises(BrokenLog, match=expected):
        log.records(run_id)


def _strip_chain(db, table: ChainedTable) -> None:
    """Drop the table's chain columns and its head row: the log as if written before chains."""
    con = duckdb.connect(str(db))
    for column in ("seq", "prev_sha256", "row_sha256", "tag"):
        con.execute(f"ALTER TABLE {table.table} DROP COLUMN {column}")
    con.execute("DELETE FROM log_heads WHERE log = ?", [table.log])
    con.close()


def test_a_log_that_lost_its_chain_is_broken_without_a_key(audited, mini_holdout, mini_gold, monkeypatch):
    """issue 35 item 3: without an integrity key, deleting the review log's chain columns and head
    row and inserting a forged approval was accepted silently (and chained by the next writer)."""
    from kgeval.audit._store import _RECORDS
    from kgeval.review._store import _REVIEWS

    monkeypatch.delenv(KEY_ENV, raising=False)
    db, run_id, _ = audited
    _strip_chain(db, _REVIEWS)
    _sql(db, "INSERT INTO gold_reviews SELECT kg, 'mini-04', domain, content_sha256, 'mallory', 'approve', '', recorded_at FROM gold_reviews LIMIT 1")
    expected = f"{db}: review log broken at record 1: it holds 4 records without a hash chain"
    with ReviewLog(db, read_only=True) as log, pytest.raises(BrokenLog, match=expected):
        log.records()
    with pytest.raises(BrokenLog, match=MIGRATE_ENV):
        ReviewLog(db)  # a writer does not chain (and so bless) the forged row either
    status = _kgeval("review", "status", "--db", str(db), "--holdout", str(mini_holdout), "--gold", str(mini_gold))
    assert status.returncode == 2 and expected in " ".join(status.stderr.split()) and "approved" not in status.stdout
    # the same for the audit log: a forged "agree" behind a stripped chain withholds the audit figures
    _strip_chain(db, _RECORDS)
    _sql(db, "INSERT INTO audit_records SELECT run_id, question_id, seed, item_sha256, 'mallory', 'agree', '', recorded_at FROM audit_records LIMIT 1")
    report = _kgeval("report", run_id, "--db", str(db), "--gold", str(mini_gold), "--format", "json")
    assert report.returncode == 1 and json.loads(report.stdout)["audit"] is None
    assert "audit log broken at record 1: it holds 6 records without a hash chain" in json.loads(report.stdout)["audit_refused"]
    # the operator's word chains the log as it stands (after checking it)
    monkeypatch.setenv(MIGRATE_ENV, "1")
    with ReviewLog(db) as log:
        assert [r.reviewer for r in log.records()].count("mallory") == 1


def test_broken_audit_records_are_named_with_their_file_and_what_they_say(audited, mini_gold):
    """issue 35 item 9: `audit show` on an edited or deleted audit record names the file and the
    record (whose decision, on which question and seed), not only a record number or a hash."""
    db, run_id, sample_id = audited
    with AuditLog(db, read_only=True) as log:
        first = log.records(run_id)[0]
    _sql(db, "UPDATE audit_records SET decision = 'agree' WHERE seq = 1")
    edited = _kgeval("audit", "show", run_id, sample_id, "--db", str(db), "--gold", str(mini_gold))
    said = " ".join(edited.stderr.split())
    assert edited.returncode == 2 and f"{db}: audit log broken at record 1: its content no longer matches its hash" in said
    assert f"it now reads: ann's agree on run {run_id} question {first.question_id} seed {first.seed}" in said
    _sql(db, "UPDATE audit_records SET decision = 'disagree' WHERE seq = 1")
    _sql(db, "DELETE FROM audit_records WHERE seq = 2")
    deleted = _kgeval("audit", "show", run_id, sample_id, "--db", str(db), "--gold", str(mini_gold))
    said = " ".join(deleted.stderr.split())
    assert deleted.returncode == 2 and f"{db}: audit log broken at record 2: record 2 is missing (deleted?)" in said
    assert f"the record before it: ann's disagree on run {run_id} question {first.question_id} seed {first.seed}" in said
    assert "the next stored record is number 3: ann's agree on" in said  # the deleted one itself is gone: its neighbours say where
