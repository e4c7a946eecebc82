"""A damaged results database is named as damaged, never read as an empty one (DESIGN invariant
9): every reader of the results file, the review log, the audit store and approvals (each CLI
command and each service route) gives a message naming the file and what is wrong (exit 2, or
HTTP 500), never a DuckDB traceback, and changes nothing. Damages: the first 4 KB of the file,
zero bytes, random bytes, another program's DuckDB database, and a DuckDB database with kgeval's
table names over other columns."""

from __future__ import annotations

import random
import subprocess
import sys

import duckdb
import pytest
from typer.testing import CliRunner

from kgeval.audit import AuditLog, accepted_items, draw_sample
from kgeval.cli import app
from kgeval.gold import load_gold
from kgeval.holdout import load_holdout
from kgeval.review import Reviewer, ReviewLog, question_content_sha256, record_review
from kgeval.runs import ResultsDB
from tests.checklists.test_checklist import _cli_checklist
from tests.conftest import REPO
from tests.oversight import TOKENS, run_system, write_access


@pytest.fixture(scope="module")
def results_file(tmp_path_factory):
    """A real results file: an oracle run of 3 seeds on the mini holdout, an audit sample and an
    approved question (mini-01)."""
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.stores import EmbeddedStore
    from tests.conftest import write_holdout

    tmp = tmp_path_factory.mktemp("damaged")
    holdout = write_holdout(tmp / "holdout")
    assert rebuild_gold(load_holdout(holdout), lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp / "gold").ok
    db = tmp / "r.duckdb"
    run_id = run_system(holdout, tmp / "gold", db, "oracle", seeds=3)
    gold = load_gold(tmp / "gold")
    with ResultsDB(db) as results:
        items = accepted_items(results, run_id, gold)
    sample = draw_sample(run_id, items, 5, seed=1)
    with AuditLog(db) as log:
        log.save_sample(sample)
    question = next(q for q in load_holdout(holdout).questions() if q.id == "mini-01")
    with ReviewLog(db) as log:
        record_review(log, question, gold["mini-01"], Reviewer(name="hana", domains=("hr",)), "approve", question_content_sha256(question, gold["mini-01"]))
    write_access(tmp / "access.yaml")
    return tmp, db, run_id, sample.sample_id


def _foreign_duckdb(path, tables: dict[str, str]) -> bytes:
    con = duckdb.connect(str(path))
    for name, columns in tables.items():
        con.execute(f"CREATE TABLE {name} ({columns})")
        con.execute(f"INSERT INTO {name} DEFAULT VALUES")
    con.close()
    return path.read_bytes()


DAMAGES = {
    "first 4 KB": lambda good, path: good[:4096],
    "zero bytes": lambda good, path: b"",
    "random bytes": lambda good, path: random.Random(35).randbytes(64 * 1024),
    "another program's DuckDB": lambda good, path: _foreign_duckdb(path, {"measurements": "station VARCHAR, value DOUBLE"}),
    "kgeval's table names, other columns": lambda good, path: _foreign_duckdb(
        path, {"runs": "id INTEGER", "gold_reviews": "who VARCHAR", "audit_samples": "x INTEGER", "audit_records": "y INTEGER", "log_heads": "log VARCHAR"}
    ),
}  # fmt: skip


def _commands(tmp, db, run_id, sample_id) -> dict[str, list[str]]:
    gold, holdout, access = str(tmp / "gold"), str(tmp / "holdout"), str(tmp / "access.yaml")
    some_sha = "0" * 64
    review = ["--holdout", holdout, "--gold", gold, "--db", str(db), "--access", access, "--token", TOKENS["hana"]["token"], "--sha256", some_sha]
    return {
        "report": ["report", run_id, "--db", str(db), "--gold", gold],
        "runs": ["runs", "--db", str(db)],
        "run": ["run", "--system", "oracle", "--db", str(db), "--gold", gold, "--holdout", holdout, "--checklist", str(_cli_checklist(tmp))],
        "run --resume": ["run", "--resume", run_id, "--db", str(db)],
        "export": ["export", run_id, "--db", str(db)],
        "export parquet": ["export", run_id, "--db", str(db), "--format", "parquet", "--output", str(db.parent / "parquet")],
        "export qald": ["export", run_id, "--db", str(db), "--format", "qald"],
        "compare": ["compare", run_id, run_id, "--db", str(db)],
        "rejudge": ["rejudge", run_id, "--db", str(db)],
        "show": ["show", run_id, "mini-01", "--db", str(db), "--gold", gold, "--holdout", holdout],
        "audit sample": ["audit", "sample", run_id, "--db", str(db), "--gold", gold],
        "audit show": ["audit", "show", run_id, sample_id, "--db", str(db), "--gold", gold],
        "audit record": ["audit", "record", run_id, "mini-01", "--seed", "0", "--decision", "agree", "--sha256", some_sha, "--auditor", "ann", "--db", str(db), "--gold", gold],
        "review status": ["review", "status", "--db", str(db), "--holdout", holdout, "--gold", gold],
        "review approve": ["review", "approve", "mini-02", *review],
        "review request-changes": ["review", "request-changes", "mini-02", "--note", "why", *review],
    }


READERS = [
    "report", "runs", "run", "run --resume", "export", "export parquet", "export qald", "compare", "rejudge", "show",
    "audit sample", "audit show", "audit record", "review status", "review approve", "review request-changes",
]  # fmt: skip
"""Every command that reads the results file (`_commands`)."""


def _contents(path, data: bytes) -> object:
    """What "nothing was changed" compares: a DuckDB file's tables and rows (DuckDB may rewrite
    its header when a writer closes it), any other file's bytes."""
    if data[8:12] != b"DUCK" or len(data) < 16 * 1024:  # not a whole DuckDB file
        return path.read_bytes()
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
        return {t: con.execute(f"SELECT * FROM {t}").fetchall() for t in tables}
    finally:
        con.close()


def _named_damage(shown: str, db) -> bool:
    return str(db) in shown and ("damaged" in shown or "not a kgeval" in shown)


@pytest.mark.parametrize("damage", sorted(DAMAGES))
@pytest.mark.parametrize("reader", READERS)
def test_every_command_names_the_damaged_file(results_file, tmp_path, reader, damage):
    tmp, good, run_id, sample_id = results_file
    damaged = tmp_path / "damaged.duckdb"
    data = DAMAGES[damage](good.read_bytes(), damaged)
    damaged.write_bytes(data)
    before = _contents(damaged, data)
    result = CliRunner().invoke(app, _commands(tmp, damaged, run_id, sample_id)[reader])
    shown = result.output
    assert result.exit_code == 2, (reader, result.exit_code, shown[-2000:], result.exception)
    assert "Traceback" not in shown and _named_damage(shown, damaged), (reader, shown)
    assert "never_reviewed" not in shown and "reading as empty" not in shown  # never read as an empty store
    assert _contents(damaged, data) == before, "the damaged file was changed"
    assert not damaged.with_name(damaged.name + ".wal").exists()


def test_review_status_on_the_first_4_kb_exits_2_in_a_real_process(results_file, tmp_path):
    """issue 35 item 1 as filed: `kgeval review status --db DAMAGED` exited 0, printed "reading as
    empty" and listed the approved question as never reviewed."""
    tmp, good, _, _ = results_file
    intact = subprocess.run([sys.executable, "-m", "kgeval", "review", "status", "--questions", "--db", str(good), "--holdout", str(tmp / "holdout"), "--gold", str(tmp / "gold")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert intact.returncode == 0 and "mini-01\thr\tapproved\t" in intact.stdout, intact.stderr
    damaged = tmp_path / "damaged.duckdb"
    damaged.write_bytes(good.read_bytes()[:4096])
    done = subprocess.run([sys.executable, "-m", "kgeval", "review", "status", "--db", str(damaged), "--holdout", str(tmp / "holdout"), "--gold", str(tmp / "gold")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stdout, done.stderr)
    assert f"{damaged}: results database is damaged" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_serve_refuses_to_start_on_a_damaged_file(results_file, tmp_path, damage):
    tmp, good, _, _ = results_file
    damaged = tmp_path / "damaged.duckdb"
    data = DAMAGES[damage](good.read_bytes(), damaged)
    damaged.write_bytes(data)
    before = _contents(damaged, data)
    args = ["serve", "--port", "9", "--db", str(damaged), "--holdout", str(tmp / "holdout"), "--gold", str(tmp / "gold"), "--access", str(tmp / "access.yaml")]
    try:  # a process, with a timeout: a serve that starts would not return
        done = subprocess.run([sys.executable, "-m", "kgeval", *args], cwd=REPO, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"serve started on a damaged file ({damage})")
    assert done.returncode == 2 and _named_damage(done.stderr, damaged) and "Traceback" not in done.stderr, done.stderr
    assert _contents(damaged, data) == before


def _routes(run_id: str, sample_id: str) -> list[tuple[str, str, dict | None]]:
    return [
        ("GET", "/runs", None),
        ("GET", f"/runs/{run_id}", None),
        ("GET", f"/runs/{run_id}/report", None),
        ("GET", f"/runs/{run_id}/samples", None),
        ("GET", f"/runs/{run_id}/samples/mini-01?seed=0", None),
        ("GET", f"/runs/{run_id}/audit/samples", None),
        ("GET", f"/runs/{run_id}/audit/samples/{sample_id}", None),
        ("POST", f"/runs/{run_id}/audit/samples", {"accepts": 3}),
        ("POST", f"/runs/{run_id}/audit/records", {"question_id": "mini-01", "seed": 0, "decision": "agree", "item_sha256": "0" * 64}),
        ("GET", "/review/questions", None),
        ("GET", "/review/questions/mini-01", None),
        ("POST", "/review/questions/mini-01", {"decision": "approve", "content_sha256": "0" * 64}),
    ]


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_every_service_route_names_the_damaged_file(results_file, tmp_path, damage):
    """The file damaged while the service runs: each route answers 500 naming the file, and
    never lists a question as never reviewed."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from kgeval.config import KgevalConfig
    from kgeval.service import ServiceSettings, create_app, load_access

    tmp, good, run_id, sample_id = results_file
    db = tmp_path / "r.duckdb"
    db.write_bytes(good.read_bytes())
    settings = ServiceSettings(db=db, holdout=tmp / "holdout", gold=tmp / "gold", config=KgevalConfig(), access=load_access(tmp / "access.yaml", env={}))
    headers = {"Authorization": f"Bearer {TOKENS['admin']['token']}"}
    with TestClient(create_app(settings)) as client:
        assert client.get("/review/questions", headers=headers).status_code == 200
        damaged = tmp_path / "other.duckdb"
        data = DAMAGES[damage](good.read_bytes(), damaged)
        db.write_bytes(data)
        before = _contents(db, data)
        for method, route, body in _routes(run_id, sample_id):
            answer = client.request(method, route, headers=headers, json=body)
            assert answer.status_code == 500, (route, answer.status_code, answer.text[:500])
            assert _named_damage(answer.json()["detail"], db), (route, answer.text[:500])
    assert _contents(db, data) == before
