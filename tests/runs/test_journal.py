"""A run's journal (issue 41 item 12): what a run persisted only there (killed before it moved it
into the database) is moved in by `--resume` and never sent again; a line cut by the kill is
dropped, a damaged line before whole ones is refused naming the file and line, an edited line is
refused with the integrity key, a kill between the database's transaction and the journal's
emptying duplicates nothing, and two processes never write one run."""

from __future__ import annotations

import duckdb
import pytest

from kgeval.checklists import pre_eval_checklist
from kgeval.config import KgevalConfig, RunConfig
from kgeval.holdout import load_holdout
from kgeval.runs import ResultsDB, RunChanged, execute_run, resume_run
from kgeval.runs._journal import DamagedJournal, RunInProgress, RunJournal, RunWriter, journal_path, journaled_keys
from kgeval.systems import OracleSystem
from tests.conftest import MINI_QUESTIONS, REPO
from tests.runs.test_resume import _Interrupting

SEEDS = 3
KILLED_AFTER = 9
"""Attempts the interrupted run completed (the 10th call interrupts it)."""


class _Counting(OracleSystem):
    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, int]] = []

    def respond(self, question, seed):  # noqa: ANN001, ANN201
        self.asked.append((question.id, seed))
        return super().respond(question, seed)


@pytest.fixture
def journaled(tmp_path, mini_holdout, mini_gold, monkeypatch):
    """(db, run id): a run stopped after KILLED_AFTER attempts, every one of them only in its
    journal, as a kill -9 leaves it between two flushes (no flush at the stop)."""
    path = tmp_path / "r.duckdb"
    monkeypatch.setattr(RunWriter, "close", lambda self: self.journal.close())  # killed: nothing more is written
    config = KgevalConfig(run=RunConfig(seeds=SEEDS, concurrency=1, db_flush_s=3600))
    with ResultsDB(path) as db:
        with pytest.raises(KeyboardInterrupt):
            execute_run(load_holdout(mini_holdout), mini_gold, _Interrupting(KILLED_AFTER + 1), config, db, checklist=_checklist())
        (run,) = db.runs(status="running")
        assert db.done_keys(run.run_id) == set()
    monkeypatch.undo()
    assert len(journaled_keys(path, run.run_id)) == KILLED_AFTER
    return path, run.run_id


def _checklist():  # noqa: ANN202
    return pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")


def _resume(path, run_id) -> _Counting:  # noqa: ANN001
    system = _Counting()
    with ResultsDB(path) as db:
        resume_run(run_id, db, lambda meta, cfg: system, checklist=_checklist())
    return system


def _stored(path, run_id) -> list[tuple[str, int, int]]:  # noqa: ANN001
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT question_id, seed, count(*) FROM attempts WHERE run_id = ? GROUP BY ALL ORDER BY ALL", [run_id]).fetchall()
    finally:
        con.close()


def _every_attempt_once(path, run_id) -> None:  # noqa: ANN001
    assert _stored(path, run_id) == sorted((q["id"], s, 1) for q in MINI_QUESTIONS for s in range(SEEDS))
    assert not journal_path(path, run_id).exists()


def test_attempts_only_in_the_journal_are_moved_in_and_not_sent_again(journaled):
    path, run_id = journaled
    before = journaled_keys(path, run_id)
    system = _resume(path, run_id)
    assert not before & set(system.asked), "an attempt persisted in the journal was sent again"
    assert len(system.asked) == len(MINI_QUESTIONS) * SEEDS - KILLED_AFTER
    _every_attempt_once(path, run_id)


def test_a_line_cut_by_the_kill_is_dropped(journaled):
    path, run_id = journaled
    with open(journal_path(path, run_id), "ab") as journal:
        journal.write(b'0123abcd - [[["' + run_id.encode())  # a write the kill interrupted
    system = _resume(path, run_id)
    assert len(system.asked) == len(MINI_QUESTIONS) * SEEDS - KILLED_AFTER
    _every_attempt_once(path, run_id)


def test_a_damaged_line_before_whole_ones_is_refused_naming_file_and_line(journaled):
    path, run_id = journaled
    journal = journal_path(path, run_id)
    data = bytearray(journal.read_bytes())
    data[100] ^= 0x01  # inside line 1's JSON
    journal.write_bytes(bytes(data))
    with pytest.raises(DamagedJournal, match=rf"{journal}: line 1: damaged"):
        _resume(path, run_id)
    assert _stored(path, run_id) == []  # nothing of it was folded in


def test_with_the_key_an_edited_line_with_its_hash_recomputed_is_refused(tmp_path, monkeypatch):
    import hashlib

    monkeypatch.setenv("KGEVAL_INTEGRITY_KEY", "k" * 32)
    path = journal_path(tmp_path / "r.duckdb", "run-1")
    journal = RunJournal(path, "run-1")
    journal.append(([("run-1", "kg", "q1", 0, "answered")], [("run-1", "q1", 0, "execution", "v", "0" * 64, True)]))
    journal.append(([("run-1", "kg", "q2", 0, "answered")], [("run-1", "q2", 0, "execution", "v", "0" * 64, True)]))
    assert [a[0][2] for a, _ in journal.batches()] == ["q1", "q2"]  # tagged and read back
    journal.close()
    first, rest = path.read_bytes().split(b"\n", 1)
    _, tag, text = first.split(b" ", 2)
    edited = text.replace(b"true", b"false", 1)  # the verdict flipped, its hash recomputed: only the key's tag can tell
    assert edited != text
    path.write_bytes(hashlib.sha256(edited).hexdigest().encode() + b" " + tag + b" " + edited + b"\n" + rest)
    journal = RunJournal(path, "run-1")
    try:
        with pytest.raises(RunChanged, match=rf"{path}: line 1: .*not folded in"):
            journal.batches()
    finally:
        journal.close()


def test_a_kill_between_the_transaction_and_the_emptying_duplicates_nothing(journaled):
    path, run_id = journaled
    journal = RunJournal(journal_path(path, run_id), run_id)
    batches = journal.batches()
    journal.close()
    with ResultsDB(path) as db:  # the flush's transaction went through; the journal was not emptied
        db.append_attempt_rows(run_id, ([r for b in batches for r in b[0]], [r for b in batches for r in b[1]]))
    system = _resume(path, run_id)
    assert len(system.asked) == len(MINI_QUESTIONS) * SEEDS - KILLED_AFTER
    _every_attempt_once(path, run_id)


def test_a_run_another_process_writes_is_not_resumed(journaled):
    path, run_id = journaled
    holder = RunJournal(journal_path(path, run_id), run_id)  # as the run's own process holds it
    try:
        with pytest.raises(RunInProgress, match=f"run {run_id} is being written by another kgeval process"):
            _resume(path, run_id)
    finally:
        holder.close()
    _resume(path, run_id)
    _every_attempt_once(path, run_id)
