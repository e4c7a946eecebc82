"""An ended run's rows are sealed: a verdict flipped, an attempt deleted or the metadata edited
with any DuckDB client after the run ended is refused by every reader, which names the run and
the table that changed; with an integrity key, a seal recomputed without the key is refused too."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import duckdb
import pytest
from typer.testing import CliRunner

from kgeval.cli import app
from kgeval.integrity import KEY_ENV
from kgeval.reports import build_report
from kgeval.runs import ResultsDB, RunChanged
from kgeval.runs._seal import run_digests, seal_run
from tests.conftest import REPO
from tests.oversight import run_system, synthetic_run

KEY = "a release owner's key, 32 bytes."

EDITS = {
    "verdict flipped": ("verdicts", "UPDATE verdicts SET correct = NOT correct WHERE run_id = ? AND question_id = (SELECT min(question_id) FROM verdicts WHERE run_id = ?) AND seed = 0", "verdicts: 6 rows, edited"),
    "attempt deleted": ("attempts", "DELETE FROM attempts WHERE run_id = ? AND seed = 1 AND question_id = (SELECT min(question_id) FROM attempts WHERE run_id = ?)", "attempts: 6 rows sealed, 5 now"),
    "verdict added": ("verdicts", "INSERT INTO verdicts SELECT * REPLACE ('other' AS judge) FROM verdicts WHERE run_id = ? AND seed = 0 AND question_id = (SELECT min(question_id) FROM verdicts WHERE run_id = ?)", "verdicts: 6 rows sealed, 7 now"),
    "primary judge changed": ("runs", "UPDATE runs SET metadata = json_merge_patch(metadata, '{\"primary_judge\": \"other\"}') WHERE run_id = ? AND ? IS NOT NULL", "runs: 1 rows, edited"),
    "question renamed": ("run_questions", "UPDATE run_questions SET question = 'edited?' WHERE run_id = ? AND question_id = (SELECT min(question_id) FROM run_questions WHERE run_id = ?)", "run_questions: 3 rows, edited"),
}


def _synthetic(path, run_id="r1"):
    with ResultsDB(path) as db:
        synthetic_run(db, run_id, {"q1": [True, False], "q2": [True, True], "q3": [False, False]})
    return path


def _edit(path, sql, run_id="r1"):
    con = duckdb.connect(str(path))
    con.execute(sql, [run_id, run_id])
    con.close()


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edit_after_the_run_ended_is_refused_naming_the_table(tmp_path, edit):
    path = _synthetic(tmp_path / "r.duckdb")
    with ResultsDB(path, read_only=True) as db:
        before = build_report(db, "r1").overall
    assert (before.correct, before.n) == (1, 3)  # by majority of seeds: q2 only
    _table, sql, said = EDITS[edit]
    _edit(path, sql)
    with ResultsDB(path, read_only=True) as db:
        for read in (db.metadata, db.attempts, db.verdicts, db.questions, lambda r: build_report(db, r)):
            with pytest.raises(RunChanged) as caught:
                read("r1")
            assert "run r1 changed after it was sealed" in str(caught.value) and said in str(caught.value) and str(path) in str(caught.value)


def test_other_runs_of_the_file_are_still_read_and_the_list_names_the_changed_one(tmp_path):
    path = _synthetic(tmp_path / "r.duckdb")
    with ResultsDB(path) as db:
        synthetic_run(db, "r2", {"q1": [True, True]})
    _edit(path, EDITS["verdict flipped"][1])
    with ResultsDB(path, read_only=True) as db:
        assert build_report(db, "r2").overall.correct == 1
    listed = CliRunner().invoke(app, ["runs", "--db", str(path)])
    assert listed.exit_code == 2
    rows = {line.split("\t")[0]: line.split("\t") for line in listed.stdout.splitlines()}
    assert rows["r1"][2:4] == ["changed", "not shown: changed after it was sealed"] and rows["r2"][2] == "finished"
    assert "run r1 changed after it was sealed (verdicts" in listed.stderr


def _every_row(path) -> object:  # noqa: ANN001
    from tests.runs.test_damaged_db import _contents

    return _contents(path, path.read_bytes())


def test_every_command_refuses_a_changed_run(tmp_path):
    """A real oracle run: report, export (jsonl, parquet), show, audit sample, compare, rejudge and
    runs each refuse it as a damaged database is refused (exit 2), naming the database, the run and
    what changed, and write nothing; the unedited copy passes the same commands."""
    holdout, gold = tmp_path / "holdout", tmp_path / "gold"
    from tests.conftest import write_holdout
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.holdout import load_holdout
    from kgeval.stores import EmbeddedStore

    write_holdout(holdout)
    assert rebuild_gold(load_holdout(holdout), lambda kg: EmbeddedStore(kg.files), GoldConfig(), gold).ok
    good = tmp_path / "good.duckdb"
    run_id = run_system(holdout, gold, good, "oracle", seeds=2)
    other = run_system(holdout, gold, good, "weak", seeds=2)
    changed = tmp_path / "changed.duckdb"
    shutil.copy(good, changed)
    _edit(changed, "UPDATE verdicts SET correct = false WHERE run_id = ? AND seed = 0 AND ? IS NOT NULL", run_id)
    qid = "mini-01"
    commands = {
        "report": ["report", run_id, "--gold", str(gold)],
        "export jsonl": ["export", run_id],
        "export parquet": ["export", run_id, "--format", "parquet", "-o", str(tmp_path / "pq")],
        "show": ["show", run_id, qid, "--gold", str(gold), "--holdout", str(holdout)],
        "audit sample": ["audit", "sample", run_id, "--gold", str(gold)],
        "compare": ["compare", other, run_id],
        "rejudge": ["rejudge", run_id],
        "runs": ["runs"],
    }
    for name, args in commands.items():
        before = _every_row(changed)
        ok = subprocess.run([sys.executable, "-m", "kgeval", *args, "--db", str(good)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert ok.returncode == 0, (name, ok.stderr[-2000:])
        done = subprocess.run([sys.executable, "-m", "kgeval", *args, "--db", str(changed)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2, (name, done.returncode, done.stdout[-500:], done.stderr[-2000:])
        assert "Traceback" not in done.stderr, (name, done.stderr[-2000:])
        said = " ".join(done.stderr.split())
        assert f"{changed}: run {run_id} changed after it was sealed (verdicts: 32 rows, edited)" in said, (name, done.stderr[-2000:])
        assert _every_row(changed) == before, name  # the refusal wrote nothing
        if name != "runs":  # `runs` lists every run, the changed one as "changed"
            assert done.stdout.strip() == "", (name, done.stdout[-500:])


def test_a_refused_run_is_sealed_as_it_is_created(tmp_path):
    path = tmp_path / "r.duckdb"
    with ResultsDB(path) as db:
        synthetic_run(db, "r1", {"q1": [True]})
        con = db._con
        con.execute("INSERT INTO runs SELECT 'r9', 'refused', json_merge_patch(metadata, '{\"run_id\": \"r9\"}') FROM runs WHERE run_id = 'r1'")
        seal_run(con, "r9")  # as create_run(..., status="refused") does in its transaction
    _edit(path, "UPDATE runs SET status = 'finished' WHERE run_id = ? AND ? IS NOT NULL", "r9")
    with ResultsDB(path, read_only=True) as db, pytest.raises(RunChanged, match="runs: 1 rows, edited"):
        db.metadata("r9")


def test_a_running_run_is_not_checked_and_is_sealed_when_it_ends(tmp_path):
    path = _synthetic(tmp_path / "r.duckdb")
    _edit(path, "UPDATE runs SET status = 'running' WHERE run_id = ? AND ? IS NOT NULL")
    _edit(path, "DELETE FROM run_seals WHERE run_id = ? AND ? IS NOT NULL")
    with ResultsDB(path) as db:
        assert db.status("r1") == "running"  # being written: no seal to check yet
        db.finish_run(db.metadata("r1"))
    with ResultsDB(path, read_only=True) as db:
        assert db.status("r1") == "finished" and len(db.attempts("r1")) == 6
    _edit(path, EDITS["attempt deleted"][1])
    with ResultsDB(path, read_only=True) as db, pytest.raises(RunChanged):
        db.attempts("r1")


def test_without_a_key_a_run_ended_before_seals_existed_is_read(tmp_path):
    path = _synthetic(tmp_path / "r.duckdb")
    _edit(path, "DELETE FROM run_seals WHERE run_id = ? AND ? IS NOT NULL")
    with ResultsDB(path, read_only=True) as db, pytest.raises(RunChanged, match="its seal was removed"):
        db.verdicts("r1")  # its start record says a sealing kgeval wrote it
    _edit(path, "DELETE FROM run_starts WHERE run_id = ? AND ? IS NOT NULL")  # as a run from before seals
    with ResultsDB(path, read_only=True) as db:
        assert build_report(db, "r1").overall.correct == 1


def test_with_a_key_a_seal_recomputed_without_it_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    path = _synthetic(tmp_path / "r.duckdb")
    with ResultsDB(path, read_only=True) as db:
        assert build_report(db, "r1").overall.correct == 1  # sealed and tagged under the key
    _edit(path, "UPDATE verdicts SET correct = true WHERE run_id = ? AND question_id = 'q3' AND ? IS NOT NULL")
    monkeypatch.delenv(KEY_ENV)
    con = duckdb.connect(str(path))
    con.execute("DELETE FROM run_seals WHERE run_id = 'r1'")
    seal_run(con, "r1")  # an editor without the key reseals: the plain hashes match again
    con.close()
    with ResultsDB(path, read_only=True) as db:
        assert build_report(db, "r1").overall.correct == 2  # without the key, nothing can tell: q3 is now right
    monkeypatch.setenv(KEY_ENV, KEY)
    with ResultsDB(path, read_only=True) as db, pytest.raises(RunChanged, match="no integrity tag"):
        db.verdicts("r1")
    _edit(path, "DELETE FROM run_seals WHERE run_id = ? AND ? IS NOT NULL")
    _edit(path, "DELETE FROM run_starts WHERE run_id = ? AND ? IS NOT NULL")
    with ResultsDB(path, read_only=True) as db, pytest.raises(RunChanged, match="has no seal, and an integrity key is configured"):
        db.verdicts("r1")


def test_an_edited_seal_is_named(tmp_path):
    path = _synthetic(tmp_path / "r.duckdb")
    _edit(path, "UPDATE run_seals SET tables = json_merge_patch(tables, '{\"attempts\": [6, \"0\"]}') WHERE run_id = ? AND ? IS NOT NULL")
    with ResultsDB(path, read_only=True) as db, pytest.raises(RunChanged, match="seal was edited"):
        db.attempts("r1")


def test_the_seal_covers_every_column_of_every_row(tmp_path):
    """Each table's digest moves when any one value of any one row moves (not just counts)."""
    path = _synthetic(tmp_path / "r.duckdb")
    con = duckdb.connect(str(path))
    before = run_digests(con, "r1")
    for table, column, value in [("attempts", "latency_ms", "1.5"), ("verdicts", "reason", "'x'"), ("attempts", "answer", "'[\"q9\"]'"), ("checklist_items", "passed", "false")]:
        con.execute(f"UPDATE {table} SET {column} = {value} WHERE run_id = 'r1'")
        after = run_digests(con, "r1")
        rows = con.execute(f"SELECT count(*) FROM {table} WHERE run_id = 'r1'").fetchone()[0]
        assert (after[table] != before[table]) == (rows > 0), table
        assert all(after[t] == before[t] for t in before if t != table)
        before = after
    con.close()


def test_the_service_answers_409_for_a_changed_run_and_lists_it(tmp_path, mini_holdout, mini_gold):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from kgeval.config import KgevalConfig
    from kgeval.service import ServiceSettings, create_app, load_access
    from tests.oversight import TOKENS, write_access

    path = _synthetic(tmp_path / "r.duckdb")
    _edit(path, EDITS["verdict flipped"][1])
    settings = ServiceSettings(db=path, holdout=mini_holdout, gold=mini_gold, config=KgevalConfig(), access=load_access(write_access(tmp_path / "access.yaml"), env={}))
    headers = {"Authorization": f"Bearer {TOKENS['admin']['token']}"}
    with TestClient(create_app(settings)) as client:
        listed = client.get("/runs", headers=headers)
        assert listed.status_code == 200
        (row,) = listed.json()
        assert row["status"] == "changed" and "verdicts: 6 rows, edited" in row["problem"]
        for route in ("/runs/r1", "/runs/r1/report"):
            answer = client.get(route, headers=headers)
            assert answer.status_code == 409 and "changed after it was sealed" in answer.json()["detail"], (route, answer.text[:500])


def test_the_checklist_does_not_take_a_changed_control_run_as_evidence(mini_holdout, mini_gold, tmp_path):
    """The weak control's accuracy is read before every run (caught.yaml weak_above_60): a weak
    run whose verdicts were edited fails that item, naming the run, and nothing is sent."""
    from kgeval.checklists import pre_eval_checklist
    from kgeval.config import KgevalConfig, RunConfig
    from kgeval.holdout import load_holdout
    from kgeval.runs import ChecklistFailed, execute_run
    from kgeval.systems import OracleSystem

    path = tmp_path / "r.duckdb"
    weak = run_system(mini_holdout, mini_gold, path, "weak", seeds=1)
    _edit(path, "UPDATE verdicts SET correct = false WHERE run_id = ? AND ? IS NOT NULL", weak)
    with ResultsDB(path) as db, pytest.raises(ChecklistFailed) as refused:
        execute_run(load_holdout(mini_holdout), mini_gold, OracleSystem(), KgevalConfig(run=RunConfig(seeds=1)), db, checklist=pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml"))
    (item,) = [i for i in refused.value.receipt.failures() if "weak" in i.item]
    assert f"weak run {weak} cannot be read" in item.observed and "changed after it was sealed (verdicts" in item.observed


# ---- found by a hostile tester: ways around the seal ----------------------------------------


def _real_run(tmp_path, mini_holdout, mini_gold, system="weak"):
    path = tmp_path / "real.duckdb"
    return path, run_system(mini_holdout, mini_gold, path, system, seeds=1)


def test_a_sealed_run_set_back_to_running_is_refused_and_cannot_be_sealed_again(tmp_path, mini_holdout, mini_gold):
    """Status set to 'running', verdicts flipped, then `--resume`: before, every reader showed
    the edited figures (a running run was not checked) and the resume sealed them anew, signed."""
    path, run_id = _real_run(tmp_path, mini_holdout, mini_gold)
    _edit(path, "UPDATE runs SET status = 'running' WHERE run_id = ? AND ? IS NOT NULL", run_id)
    _edit(path, "UPDATE verdicts SET correct = true WHERE run_id = ? AND ? IS NOT NULL", run_id)
    with ResultsDB(path, read_only=True) as db, pytest.raises(RunChanged, match="was sealed when it ended but now reads as running"):
        build_report(db, run_id)
    resumed = CliRunner().invoke(app, ["run", "--resume", run_id, "--db", str(path)])
    assert resumed.exit_code == 2 and "now reads as running" in resumed.output, resumed.output
    con = duckdb.connect(str(path))
    with pytest.raises(RunChanged, match="cannot end again"):
        seal_run(con, run_id)
    con.close()


def test_a_run_made_up_in_the_file_is_not_resumed_and_sealed(tmp_path, mini_holdout, mini_gold):
    path, run_id = _real_run(tmp_path, mini_holdout, mini_gold, "oracle")
    con = duckdb.connect(str(path))
    fake = "20991231T000000-weak-fa4e00"
    con.execute("INSERT INTO runs SELECT ?, 'running', json_merge_patch(metadata, json_object('run_id', ?, 'system', 'weak')) FROM runs WHERE run_id = ?", [fake, fake, run_id])
    for table in ("run_questions", "attempts", "verdicts"):
        con.execute(f"INSERT INTO {table} SELECT * REPLACE (? AS run_id) FROM {table} WHERE run_id = ?", [fake, run_id])
    con.close()
    resumed = CliRunner().invoke(app, ["run", "--resume", fake, "--db", str(path)])
    assert resumed.exit_code == 2 and "has no record of its start" in resumed.output, resumed.output
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT status FROM runs WHERE run_id = ?", [fake]).fetchone()[0] == "running"  # not sealed
    assert con.execute("SELECT count(*) FROM run_seals WHERE run_id = ?", [fake]).fetchone()[0] == 0
    con.close()
    with ResultsDB(path, read_only=True) as db, pytest.raises(RunChanged, match="has no record of its start"):
        db.status(fake)  # nor read


def test_a_run_whose_start_was_edited_is_not_resumed(tmp_path, mini_holdout, mini_gold):
    path, run_id = _real_run(tmp_path, mini_holdout, mini_gold)
    _edit(path, "UPDATE runs SET status = 'running' WHERE run_id = ? AND ? IS NOT NULL", run_id)
    _edit(path, "DELETE FROM run_seals WHERE run_id = ? AND ? IS NOT NULL", run_id)  # as if killed before it ended
    _edit(path, "UPDATE runs SET metadata = json_merge_patch(metadata, '{\"system_version\": \"2\"}') WHERE run_id = ? AND ? IS NOT NULL", run_id)
    resumed = CliRunner().invoke(app, ["run", "--resume", run_id, "--db", str(path)])
    assert resumed.exit_code == 2 and "differs from what it was at its start" in resumed.output, resumed.output


def test_without_a_key_a_removed_seal_is_refused_for_a_run_that_was_sealed(tmp_path, mini_holdout, mini_gold):
    path, run_id = _real_run(tmp_path, mini_holdout, mini_gold)
    _edit(path, "DELETE FROM run_seals WHERE run_id = ? AND ? IS NOT NULL", run_id)
    with ResultsDB(path, read_only=True) as db, pytest.raises(RunChanged, match="its seal was removed"):
        db.verdicts(run_id)


def test_an_edit_that_puts_the_files_time_back_is_still_seen(tmp_path):
    """The process remembers a checked seal while the file is unchanged: putting its size and
    modification time back (os.utime) must not make an edited file look unchanged."""
    import os

    from kgeval.runs._db import _file_state

    path = _synthetic(tmp_path / "r.duckdb")
    before, stat = _file_state(path), path.stat()
    path.write_bytes(path.read_bytes())  # same bytes, same size: rewritten
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert _file_state(path) != before


def _record_progress_again(path, run_id):
    """Recompute each write batch's record of a run over its rows as they are now (no key)."""
    from kgeval.runs._seal import _rows_sha256

    con = duckdb.connect(str(path))
    for seq, keys in con.execute("SELECT seq, keys FROM run_progress WHERE run_id = ?", [run_id]).fetchall():
        pairs = [tuple(k) for k in json.loads(keys)]
        attempts = [r for r in con.execute("SELECT * FROM attempts WHERE run_id = ?", [run_id]).fetchall() if (r[2], r[3]) in pairs]
        verdicts = [r for r in con.execute("SELECT * FROM verdicts WHERE run_id = ?", [run_id]).fetchall() if (r[1], r[2]) in pairs]
        con.execute("UPDATE run_progress SET rows_sha256 = ? WHERE run_id = ? AND seq = ?", [_rows_sha256(attempts, verdicts), run_id, seq])
    con.close()


def test_invalid_stored_values_are_named_not_tracebacks(tmp_path, mini_holdout, mini_gold):
    path, run_id = _real_run(tmp_path, mini_holdout, mini_gold)
    broken = tmp_path / "broken.duckdb"
    shutil.copy(path, broken)
    _edit(broken, "UPDATE runs SET metadata = '{}' WHERE run_id = ? AND ? IS NOT NULL", run_id)
    listed = CliRunner().invoke(app, ["runs", "--db", str(broken)])
    assert listed.exit_code == 2 and f"run {run_id}: invalid stored metadata" in listed.output and "Traceback" not in listed.output, listed.output
    running = tmp_path / "running.duckdb"
    shutil.copy(path, running)
    _edit(running, "UPDATE runs SET status = 'running' WHERE run_id = ? AND ? IS NOT NULL", run_id)
    _edit(running, "DELETE FROM run_seals WHERE run_id = ? AND ? IS NOT NULL", run_id)
    _edit(running, "UPDATE attempts SET state = 'bogus' WHERE run_id = ? AND ? IS NOT NULL", run_id)
    _record_progress_again(running, run_id)  # without a key anyone can; readers check a running run's records
    report = CliRunner().invoke(app, ["report", run_id, "--db", str(running)])
    assert report.exit_code == 2 and "invalid stored value" in report.output and "attempt mini-0" in report.output, report.output


# ---- a killed run's rows, edited before `--resume` ----------------------------------------


def _killed(tmp_path, mini_holdout, mini_gold):
    """A run interrupted after 9 attempts (oracle answers, some wrong by design: not here)."""
    from kgeval.checklists import pre_eval_checklist
    from kgeval.config import KgevalConfig, RunConfig
    from kgeval.holdout import load_holdout
    from kgeval.runs import execute_run
    from tests.runs.test_resume import _Interrupting

    path = tmp_path / "killed.duckdb"
    checklist = pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")
    with ResultsDB(path) as db:
        with pytest.raises(KeyboardInterrupt):
            execute_run(load_holdout(mini_holdout), mini_gold, _Interrupting(10), KgevalConfig(run=RunConfig(seeds=3, concurrency=1)), db, checklist=checklist)
        (run,) = db.runs(status="running")
    return path, run.run_id


def _resume(path, run_id):
    from kgeval.checklists import pre_eval_checklist
    from kgeval.runs import resume_run
    from kgeval.systems import system_from_name

    checklist = pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")
    with ResultsDB(path) as db:
        return resume_run(run_id, db, lambda meta, c: system_from_name("oracle"), checklist=checklist)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("UPDATE verdicts SET correct = NOT correct WHERE run_id = ? AND question_id = (SELECT min(question_id) FROM verdicts WHERE run_id = ?)", "were changed after it wrote them"),
        ("INSERT INTO attempts SELECT * REPLACE (seed + 100 AS seed) FROM attempts WHERE run_id = ? AND ? IS NOT NULL LIMIT 1", "it did not write"),
        ("DELETE FROM run_progress WHERE run_id = ? AND ? IS NOT NULL", "it did not write"),
        ("DELETE FROM attempts WHERE run_id = ? AND question_id = (SELECT min(question_id) FROM attempts WHERE run_id = ?)", "were changed after it wrote them"),
        ("UPDATE runs SET metadata = json_merge_patch(metadata, '{\"primary_judge\": \"seed\"}') WHERE run_id = ? AND ? IS NOT NULL", "differs from what it was at its start"),
        ("UPDATE run_questions SET question = 'EDITED' WHERE run_id = ? AND question_id = (SELECT min(question_id) FROM run_questions WHERE run_id = ?)", "differs from what it was at its start"),
        ("UPDATE checklist_items SET passed = true, detail = 'edited' WHERE run_id = ? AND phase = 'start' AND position = (SELECT min(position) FROM checklist_items WHERE run_id = ?)", "differs from what it was at its start"),
    ],
    ids=["verdict-flipped", "attempt-added", "records-removed", "attempt-removed", "primary-judge", "question-text", "start-checklist"],
)
def test_a_killed_runs_rows_edited_before_resume_are_not_continued(tmp_path, mini_holdout, mini_gold, edit, message):
    """A hostile tester's way round the seal: kill a run, edit what it wrote, `--resume`: the
    resumed run was sealed (signed, with a key) over the edited rows as its own."""
    path, run_id = _killed(tmp_path, mini_holdout, mini_gold)
    con = duckdb.connect(str(path))
    con.execute(edit, [run_id, run_id])
    con.close()
    with pytest.raises(RunChanged, match=message):
        _resume(path, run_id)
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone()[0] == "running"  # not sealed
    assert con.execute("SELECT count(*) FROM run_seals WHERE run_id = ?", [run_id]).fetchone()[0] == 0
    con.close()
    with ResultsDB(path, read_only=True) as db, pytest.raises(RunChanged, match=message):
        build_report(db, run_id)  # nor reported


def test_a_killed_runs_rows_edited_in_the_file_are_not_reported(tmp_path, mini_holdout, mini_gold):
    """Red team 6: a killed run stays "running" and has no seal; its verdicts flipped in the file
    were reported as they were (10% to 100% on the sample holdout, with a key configured too),
    and `kgeval runs` listed the edited accuracy. Readers now check a running run's start and
    write-batch records, as `--resume` does."""
    path, run_id = _killed(tmp_path, mini_holdout, mini_gold)
    with ResultsDB(path, read_only=True) as db:
        assert build_report(db, run_id).overall.n > 0  # untouched: reported as it is
    _edit(path, "UPDATE verdicts SET correct = NOT correct WHERE run_id = ? AND ? IS NOT NULL", run_id)
    with ResultsDB(path, read_only=True) as db, pytest.raises(RunChanged, match="were changed after it wrote them"):
        build_report(db, run_id)
    listed = CliRunner().invoke(app, ["runs", "--db", str(path)])
    assert "were changed after it wrote them" in listed.output and "%" not in listed.output, listed.output


class _Lockstep:
    """Oracle answers, the k-th call interrupting (`_Interrupting`), each call answered only once
    every earlier attempt's group is recorded: one group per attempt, so several write batches,
    however the machine's load lets attempts pile up behind a write (under load, attempts that
    completed during one write shared the next group, and a run could end with one batch)."""

    name, version, kind, pipeline, reasoning = "oracle", "1", "control", None, {}

    def __init__(self, k: int, monkeypatch) -> None:  # noqa: ANN001 - pytest's fixture
        import threading

        from kgeval.runs._journal import RunWriter
        from tests.runs.test_resume import _Interrupting

        self.inner, self.groups, self.changed = _Interrupting(k), [0], threading.Condition()
        record = RunWriter.record

        def counted(writer, rows):  # noqa: ANN001, ANN202
            record(writer, rows)
            with self.changed:
                self.groups[0] += 1
                self.changed.notify_all()

        monkeypatch.setattr(RunWriter, "record", counted)

    def respond(self, question, seed):  # noqa: ANN001, ANN201
        with self.changed:
            assert self.changed.wait_for(lambda: self.groups[0] >= self.inner.calls, timeout=60), "an attempt's group was never recorded"
        return self.inner.respond(question, seed)


def test_a_killed_runs_batch_deleted_whole_is_not_run_again(tmp_path, mini_holdout, mini_gold, monkeypatch):
    """A red-team pass deleted one write batch whole (its attempts, verdicts and record) and
    resumed: those attempts ran again (with a system that answers differently each time, a way to
    re-roll chosen attempts). A batch's record missing before the last one's is now named. (The
    last batch deleted whole cannot be told from a kill just before it was written.)"""
    from kgeval.checklists import pre_eval_checklist
    from kgeval.config import KgevalConfig, RunConfig
    from kgeval.holdout import load_holdout
    from kgeval.runs import execute_run
    path = tmp_path / "killed.duckdb"
    checklist = pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")
    config = KgevalConfig(run=RunConfig(seeds=3, concurrency=1, persist_within_s=0, db_flush_s=0))  # a batch per group
    with ResultsDB(path) as db:
        with pytest.raises(KeyboardInterrupt):
            execute_run(load_holdout(mini_holdout), mini_gold, _Lockstep(10, monkeypatch), config, db, checklist=checklist)
        (run,) = db.runs(status="running")
    con = duckdb.connect(str(path))
    assert con.execute("SELECT count(*) FROM run_progress WHERE run_id = ?", [run.run_id]).fetchone()[0] >= 2
    keys = json.loads(con.execute("SELECT keys FROM run_progress WHERE run_id = ? AND seq = 0", [run.run_id]).fetchone()[0])
    for question_id, seed in keys:
        con.execute("DELETE FROM attempts WHERE run_id = ? AND question_id = ? AND seed = ?", [run.run_id, question_id, seed])
        con.execute("DELETE FROM verdicts WHERE run_id = ? AND question_id = ? AND seed = ?", [run.run_id, question_id, seed])
    con.execute("DELETE FROM run_progress WHERE run_id = ? AND seq = 0", [run.run_id])
    con.close()
    with pytest.raises(RunChanged, match="records of write batch\\(es\\) 0 are gone"):
        _resume(path, run.run_id)


def test_a_killed_run_resumes_and_with_a_key_a_recomputed_record_is_refused(tmp_path, mini_holdout, mini_gold, monkeypatch):
    """Without the key anyone can recompute a batch's hash (as a seal's); with it, the record's
    tag no longer matches."""
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.holdout import load_holdout
    from kgeval.runs._seal import _rows_sha256
    from kgeval.stores import EmbeddedStore
    from tests.conftest import write_holdout

    path, run_id = _killed(tmp_path, mini_holdout, mini_gold)
    assert _resume(path, run_id).finished_at  # untouched: resumed and sealed

    monkeypatch.setenv(KEY_ENV, KEY)  # holdout, gold and run all under the key
    holdout, gold = write_holdout(tmp_path / "signed" / "holdout"), tmp_path / "signed" / "gold"
    assert rebuild_gold(load_holdout(holdout), lambda kg: EmbeddedStore(kg.files), GoldConfig(), gold).ok
    path, run_id = _killed(tmp_path / "signed", holdout, gold)
    con = duckdb.connect(str(path))
    assert con.execute("UPDATE verdicts SET correct = NOT correct WHERE run_id = ?", [run_id]).fetchone()[0] > 0
    for seq, keys in con.execute("SELECT seq, keys FROM run_progress WHERE run_id = ?", [run_id]).fetchall():
        mine = {tuple(k) for k in json.loads(keys)}
        attempts = [r for r in con.execute("SELECT * FROM attempts WHERE run_id = ?", [run_id]).fetchall() if (r[2], r[3]) in mine]
        verdicts = [r for r in con.execute("SELECT * FROM verdicts WHERE run_id = ?", [run_id]).fetchall() if (r[1], r[2]) in mine]
        con.execute("UPDATE run_progress SET rows_sha256 = ? WHERE run_id = ? AND seq = ?", [_rows_sha256(attempts, verdicts), run_id, seq])
    con.close()
    with pytest.raises(RunChanged, match="integrity tag does not match"):
        _resume(path, run_id)


def test_the_run_that_sealed_a_file_is_not_hashed_again_until_the_file_changes(tmp_path, monkeypatch):
    """A run seals its rows from the connection that holds the file; the file's state once
    checkpointed stands for a check in this process, so the headline `kgeval run` reads right
    after does not hash the whole run again. Any write to the file after it (here a verdict
    flipped) changes that state: the next reader checks, and refuses the edit."""
    import kgeval.runs._db as db_module

    checked, check_seal = [], db_module.check_seal
    monkeypatch.setattr(db_module, "check_seal", lambda *a, **k: checked.append(a[2]) or check_seal(*a, **k))
    path = _synthetic(tmp_path / "r.duckdb")
    with ResultsDB(path, read_only=True) as db:
        assert db.metadata("r1").run_id == "r1" and len(db.verdicts("r1")) == 6
    assert checked == []
    _edit(path, EDITS["verdict flipped"][1])
    with ResultsDB(path, read_only=True) as db, pytest.raises(RunChanged, match="verdicts: 6 rows, edited"):
        db.metadata("r1")
    assert checked == ["r1"]
