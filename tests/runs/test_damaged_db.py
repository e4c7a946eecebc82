"""A damaged results database (truncated, overwritten with garbage) gives every command that
reads it a message naming the file and what is wrong, exit 2: never a DuckDB traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kgeval.audit import AuditLog, accepted_items, draw_sample
from kgeval.gold import load_gold
from kgeval.runs import ResultsDB
from tests.checklists.test_checklist import _cli_checklist
from tests.conftest import REPO
from tests.oversight import run_system


@pytest.fixture(scope="module")
def results_file(tmp_path_factory):
    """A real results file: an oracle run of 3 seeds on the mini holdout, with an audit sample."""
    from tests.conftest import write_holdout
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.holdout import load_holdout
    from kgeval.stores import EmbeddedStore

    tmp = tmp_path_factory.mktemp("damaged")
    holdout = write_holdout(tmp / "holdout")
    assert rebuild_gold(load_holdout(holdout), lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp / "gold").ok
    db = tmp / "r.duckdb"
    run_id = run_system(holdout, tmp / "gold", db, "oracle", seeds=3)
    with ResultsDB(db) as results:
        items = accepted_items(results, run_id, load_gold(tmp / "gold"))
    sample = draw_sample(run_id, items, 5, seed=1)
    with AuditLog(db) as log:
        log.save_sample(sample)
    return tmp, db, run_id, sample.sample_id


def _commands(tmp, db, run_id, sample_id) -> dict[str, list[str]]:
    gold, holdout = str(tmp / "gold"), str(tmp / "holdout")
    return {
        "report": ["report", run_id, "--db", str(db), "--gold", gold],
        "run": ["run", "--system", "oracle", "--db", str(db), "--gold", gold, "--holdout", holdout, "--checklist", str(_cli_checklist(tmp))],
        "resume": ["run", "--resume", run_id, "--db", str(db)],
        "audit sample": ["audit", "sample", run_id, "--db", str(db), "--gold", gold],
        "audit show": ["audit", "show", run_id, sample_id, "--db", str(db), "--gold", gold],
        "export": ["export", run_id, "--db", str(db)],
    }


@pytest.mark.parametrize("damage", ["truncated to half", "garbage"])
def test_every_command_names_the_damaged_file(results_file, tmp_path, damage):
    tmp, good, run_id, sample_id = results_file
    data = good.read_bytes()
    for name, args in _commands(tmp, tmp_path / "damaged.duckdb", run_id, sample_id).items():
        damaged = tmp_path / "damaged.duckdb"
        damaged.write_bytes(data[: len(data) // 2] if damage == "truncated to half" else b"this is not a database\n" * 4000)
        done = subprocess.run([sys.executable, "-m", "kgeval", *args], cwd=REPO, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2, (name, done.returncode, done.stderr[-2000:])
        assert "Traceback" not in done.stderr, (name, done.stderr[-2000:])
        assert str(damaged) in done.stderr and ("damaged" in done.stderr or "not a valid DuckDB" in done.stderr), (name, done.stderr)
