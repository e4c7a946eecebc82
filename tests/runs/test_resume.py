"""Nothing is lost: a real `kgeval run` process killed at random points, many times, then
resumed, ends with exactly one attempt per (question, seed), and no persisted attempt is ever
sent again."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time

import duckdb
import pytest
import yaml

from kgeval.checklists import pre_eval_checklist
from kgeval.config import KgevalConfig, RunConfig
from kgeval.errors import CheckFailed
from kgeval.holdout import load_holdout
from kgeval.runs import ChecklistFailed, ResultsDB, execute_run, resume_run
from kgeval.runs._journal import journaled_keys
from kgeval.systems import OracleSystem, SystemOutput, system_from_name
from tests.checklists.test_checklist import _cli_checklist
from tests.conftest import MINI_QUESTIONS, REPO
from tests.servers import LoopbackServer, Reply

SEEDS = 10
KILLS = 15
MID_RUN_KILLS = 5
"""Kills go on past KILLS until this many landed mid-dispatch (some attempts stored, not all):
on a loaded machine a kill often comes before the process stored anything."""
BY_TEXT = {q["question"]: q for q in MINI_QUESTIONS}


def _start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kgeval", "run", *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _state(db_path) -> tuple[str | None, set, int]:
    """(run id, persisted keys, attempt rows) — opening read-write replays the WAL a kill left.
    Persisted: in the database, or in the run's journal only (an attempt is persisted once its
    journal line is written; the next resume moves it in): an attempt lost from the journal, or
    sent again although it was there, fails the test as one lost from the database does."""
    with ResultsDB(db_path) as db:
        runs = db.runs(status=None)
        http = [r for r in runs if r.system == "http"]
        if not http:
            return None, set(), 0
        run_id = http[0].run_id
        rows = db._con.execute("SELECT count(*) FROM attempts WHERE run_id = ?", [run_id]).fetchone()[0]
        stored = db.done_keys(run_id)
        assert rows == len(stored), "an attempt was stored twice"
        return run_id, stored | journaled_keys(db_path, run_id), rows


def test_killed_runs_resume_without_losing_or_repeating_attempts(mini_holdout, mini_gold, tmp_path):
    rng = random.Random(6)
    db_path = tmp_path / "r.duckdb"
    checklist = _cli_checklist(tmp_path)
    with ResultsDB(db_path) as db:  # the oracle control first: the checklist requires it
        execute_run(load_holdout(mini_holdout), mini_gold, OracleSystem(), KgevalConfig(run=RunConfig(seeds=1)), db, checklist=pre_eval_checklist(checklist))

    def reply(path, body, n):
        if "question" not in body:  # a request cut short by the kill
            return Reply(status=400, body={"error": "incomplete request"})
        return Reply(body={"sparql": BY_TEXT[body["question"]]["sparql"]}, delay_s=0.03, headers={"X-System-Version": "prod-7"})

    with LoopbackServer(reply) as server:
        config = tmp_path / "http.yaml"
        http = {"url": server.url, "declared_version": "prod-7", "pipeline": {"default": {"schema_in_prompt": True}}}
        config.write_text(yaml.safe_dump({"systems": {"http": http}, "run": {"seeds": SEEDS, "concurrency": 4, "retry_backoff_s": 0.0}}))
        fresh = ["--system", "http", "--config", str(config), "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db_path), "--checklist", str(checklist)]
        total = len(MINI_QUESTIONS) * SEEDS
        mid_run_kills, resent, kills, patience = 0, [], 0, 0
        while kills < KILLS or mid_run_kills < MID_RUN_KILLS:
            assert kills < 60, f"{kills} kills, only {mid_run_kills} of them mid-dispatch"
            kills += 1
            run_id, done_before, _ = _state(db_path)
            if len(done_before) == total:
                break
            first_request = server.count()
            proc = _start(fresh if run_id is None else ["--resume", run_id, "--db", str(db_path)])
            if rng.random() < 0.25:  # anywhere: during start-up, the checklist, or dispatch
                time.sleep(rng.uniform(0.2, 4.0))
            else:  # after a random number of calls reached the system (more after kills that stored nothing)
                target = first_request + rng.randint(1, 20) + patience
                deadline = time.monotonic() + 60
                while server.count() < target and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.005)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            run_id, done_after, _ = _state(db_path)
            assert done_before <= done_after, "a persisted attempt was lost"
            mid_run_kills += 0 < len(done_after) < total and done_after != done_before
            patience = 0 if done_after != done_before else patience + 4
            for _, body in server.requests[first_request:]:
                if "question" not in body:
                    continue
                key = (BY_TEXT[body["question"]]["id"], body["seed"])
                if key in done_before:
                    resent.append(key)
        assert resent == [], f"attempts already persisted were sent again: {resent}"
        assert mid_run_kills >= 5, f"only {mid_run_kills} kills landed mid-dispatch"
        run_id, _, _ = _state(db_path)
        finished = subprocess.run([sys.executable, "-m", "kgeval", "run", "--resume", run_id, "--seeds", "7", "--db", str(db_path)], cwd=REPO, capture_output=True, text=True, timeout=300)
        assert finished.returncode == 0, finished.stderr
        assert f"--resume continues {run_id} with the configuration, system and seeds it recorded: --seeds ignored" in " ".join(finished.stderr.split())
        assert finished.stdout.strip().splitlines()[-1] == run_id
    con = duckdb.connect(str(db_path), read_only=True)
    keys = con.execute("SELECT question_id, seed, count(*) FROM attempts WHERE run_id = ? GROUP BY ALL", [run_id]).fetchall()
    status = con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]
    states = con.execute("SELECT DISTINCT state FROM attempts WHERE run_id = ?", [run_id]).fetchall()
    phases = con.execute("SELECT count(DISTINCT phase) FROM checklist_items WHERE run_id = ?", [run_id]).fetchone()[0]
    con.close()
    assert sorted((q, s) for q, s, _ in keys) == sorted((q["id"], s) for q in MINI_QUESTIONS for s in range(SEEDS))
    assert all(n == 1 for _, _, n in keys)
    assert status == "finished" and states == [("answered",)]
    assert phases >= 2  # the start receipt and at least one resume receipt


class _Interrupting:
    """Oracle answers; the k-th call interrupts the process, as Ctrl-C would."""

    name, version, kind, pipeline, reasoning = "oracle", "1", "control", None, {}

    def __init__(self, k: int) -> None:
        self.k, self.calls = k, 0

    def respond(self, question, seed):
        self.calls += 1
        if self.calls == self.k:
            raise KeyboardInterrupt
        return SystemOutput(sparql=question.sparql)


def test_resume_in_process_and_refusal_when_gold_changed(mini_holdout, mini_gold, tmp_path):
    checklist = pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")
    cfg = KgevalConfig(run=RunConfig(seeds=3, concurrency=1))
    with ResultsDB(tmp_path / "r.duckdb") as db:
        with pytest.raises(KeyboardInterrupt):
            execute_run(load_holdout(mini_holdout), mini_gold, _Interrupting(10), cfg, db, checklist=checklist)
        (run,) = db.runs(status="running")
        assert len(db.done_keys(run.run_id)) == 9
        resumed = resume_run(run.run_id, db, lambda meta, c: system_from_name("oracle"), checklist=checklist)
        assert len(db.attempts(resumed.run_id)) == 3 * len(MINI_QUESTIONS) and db.status(run.run_id) == "finished"
        assert resumed.resumed_at and resumed.finished_at
        # a finished run resumes to itself; a run whose gold changed refuses to resume
        assert resume_run(run.run_id, db, lambda meta, c: system_from_name("oracle"), checklist=checklist).run_id == run.run_id
        with pytest.raises(KeyboardInterrupt):
            execute_run(load_holdout(mini_holdout), mini_gold, _Interrupting(3), cfg, db, checklist=checklist)
        (stopped,) = db.runs(status="running")
        manifest = mini_gold / "MANIFEST.json"
        manifest.write_text(manifest.read_text().replace('"row_cap"', '"row_cap" ', 1))
        with pytest.raises(CheckFailed, match="gold_manifest_sha256"):
            resume_run(stopped.run_id, db, lambda meta, c: system_from_name("oracle"), checklist=checklist)


def test_a_resume_refused_by_the_checklist_does_not_block_the_next(mini_holdout, mini_gold, tmp_path):
    """A resume the checklist refuses (here a gold file edited, then restored) stores its
    receipt; the next resume, once the cause is fixed, must store its own and finish the run,
    not die on the first one's key (it raised a DuckDB ConstraintException: the run could never
    be resumed again)."""
    checklist = pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")
    cfg = KgevalConfig(run=RunConfig(seeds=2, concurrency=1))
    oracle = lambda meta, c: system_from_name("oracle")  # noqa: E731
    with ResultsDB(tmp_path / "r.duckdb") as db:
        with pytest.raises(KeyboardInterrupt):
            execute_run(load_holdout(mini_holdout), mini_gold, _Interrupting(5), cfg, db, checklist=checklist)
        (run,) = db.runs(status="running")
        kg_file = mini_gold / "current" / "mini.json"
        original = kg_file.read_text()
        kg_file.write_text(original.replace('"value":"http', '"value":"https', 1))
        with pytest.raises(ChecklistFailed):
            resume_run(run.run_id, db, oracle, checklist=checklist)
        kg_file.write_text(original)
        resumed = resume_run(run.run_id, db, oracle, checklist=checklist)
        assert db.status(run.run_id) == "finished" and len(db.attempts(run.run_id)) == 2 * len(MINI_QUESTIONS)
        phases = db.receipt_phases(run.run_id)
        assert phases == ["resume-1", "resume-2", "start"], phases
        assert not db.receipt(run.run_id, "resume-1").passed and db.receipt(run.run_id, "resume-2").passed
        assert len(resumed.resumed_at) == 1


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (("Who works in sales?", "Who works in the sales team?"), "question mini-02: question text 'Who works in sales?' then, 'Who works in the sales team?' now"),
        (("SELECT ?p WHERE { ?p ex:worksIn e:sales }", "SELECT DISTINCT ?p WHERE { ?p ex:worksIn e:sales }"), "question mini-02: reference SPARQL changed (its gold in"),
    ],
    ids=["question text", "reference SPARQL"],
)
def test_a_refused_resume_names_the_questions_file_the_question_and_the_field(mini_holdout, mini_gold, tmp_path, edit, said):
    """issue 35 item 9: `run --resume` after a questions.yaml edit said only that the question
    set's hash changed; it names the file, the question and what changed in it."""
    checklist = pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")
    with ResultsDB(tmp_path / "r.duckdb") as db:
        with pytest.raises(KeyboardInterrupt):
            execute_run(load_holdout(mini_holdout), mini_gold, _Interrupting(3), KgevalConfig(run=RunConfig(seeds=2, concurrency=1)), db, checklist=checklist)
        (stopped,) = db.runs(status="running")
        questions = mini_holdout / "mini" / "questions.yaml"
        text = questions.read_text()
        assert text.count(edit[0]) == 1
        questions.write_text(text.replace(edit[0], edit[1]))
        with pytest.raises(CheckFailed) as refused:
            resume_run(stopped.run_id, db, lambda meta, c: system_from_name("oracle"), checklist=checklist)
    assert f"{questions}: {said}" in str(refused.value)
