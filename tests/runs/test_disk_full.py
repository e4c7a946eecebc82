"""A full disk is not a damaged database (issue 35 item 5): a run whose results file fills its
filesystem stops saying "no space left on device: nothing lost; free space and `kgeval run
--resume RUN`" (it said "database is damaged ... restore it from a backup", advice that throws
good data away). A real ENOSPC on a small tmpfs (4 MB: the database file alone takes 2.3 MB, and the run journals
its attempts beside it before they reach the file): after space is freed the resume finishes the
run with every attempt once, and none saved before the failure lost."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from kgeval.runs import ResultsDB
from kgeval.runs._journal import journaled_keys
from tests.conftest import MINI_QUESTIONS, REPO

SEEDS = 200


def _mount_small_tmpfs(path) -> None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("a real full disk needs a small tmpfs, and mounting one needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


def _kgeval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgeval", *args], cwd=REPO, capture_output=True, text=True, timeout=600)


def _saved(db) -> tuple[str, list[tuple[str, int]]]:
    """(status, every persisted (question, seed), duplicates in the database included) of the
    file's one run: in the database, or in the run's journal (fsync'd, not yet moved in)."""
    with ResultsDB(db) as results:  # read-write: replays the write-ahead log as a resume would
        (run,) = results.runs(status=None)
        rows = [(q, s) for q, s in results._con.execute("SELECT question_id, seed FROM attempts WHERE run_id = ?", [run.run_id]).fetchall()]
        status = results.status(run.run_id)
    return status, rows + sorted(journaled_keys(db, run.run_id) - set(rows))


def test_a_full_disk_says_nothing_is_lost_and_the_run_resumes(mini_holdout, mini_gold, tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    _mount_small_tmpfs(small)
    try:
        db = small / "r.duckdb"
        checklist = str(REPO / "checklists" / "pre_eval.yaml")
        full = _kgeval("run", "--system", "oracle", "--seeds", str(SEEDS), "--db", str(db), "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--checklist", checklist)
        assert full.returncode == 2, (full.returncode, full.stderr[-2000:])
        stderr = " ".join(full.stderr.split())
        found = re.search(r"no space left on device: nothing lost; free space and `kgeval run --resume (\S+)`", stderr)
        assert found and str(db) in stderr, stderr
        assert "damaged" not in stderr and "backup" not in stderr and "Traceback" not in stderr, stderr
        run_id = found.group(1)
        subprocess.run(["mount", "-o", "remount,size=64m", str(small)], check=True)
        status, before = _saved(db)
        total = len(MINI_QUESTIONS) * SEEDS
        assert status == "running" and 0 < len(before) < total and len(set(before)) == len(before)
        resumed = _kgeval("run", "--resume", run_id, "--db", str(db))
        assert resumed.returncode == 0 and resumed.stdout.strip().splitlines()[-1] == run_id, resumed.stderr[-2000:]
        status, after = _saved(db)
        assert status == "finished" and len(after) == len(set(after)) == total  # none twice
        assert set(before) <= set(after)  # none lost
    finally:
        subprocess.run(["umount", str(small)], check=False)
