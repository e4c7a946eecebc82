"""Every output path a command writes (`-o`/`--output`, `--report-json`) that cannot be written:
one line naming the path and the OS's reason, exit 2, no traceback, nothing partial left."""

from __future__ import annotations

import json
import os
import traceback

import pytest
from typer.testing import CliRunner

from kgeval.cli import app
from kgeval.config import GoldConfig
from kgeval.gold import rebuild_gold
from kgeval.holdout import load_holdout
from kgeval.stores import EmbeddedStore
from tests.conftest import write_holdout
from tests.oversight import run_system


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(holdout, gold, db, run id) of one oracle run on the mini holdout."""
    root = tmp_path_factory.mktemp("outputs")
    holdout = write_holdout(root / "holdout")
    rebuild_gold(load_holdout(holdout), lambda kg: EmbeddedStore(kg.files), GoldConfig(), root / "gold")
    return holdout, root / "gold", root / "r.duckdb", run_system(holdout, root / "gold", root / "r.duckdb", "oracle", seeds=1)


def _invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    shown = result.output + ("".join(traceback.format_exception(result.exception)) if result.exception and not isinstance(result.exception, SystemExit) else "")
    return result.exit_code, shown


def _files(root) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def _blockers(tmp_path):
    """Paths in the way: an existing directory, a file where a directory should be."""
    (tmp_path / "a_dir").mkdir()
    (tmp_path / "a_file").write_text("kept as it was\n")
    return tmp_path / "a_dir", tmp_path / "a_file"


@pytest.mark.parametrize(
    ("fmt", "where", "reason"),
    [
        ("jsonl", "a_dir", "Is a directory"),
        ("jsonl", "a_file/attempts.jsonl", "a_file is not a directory"),
        ("jsonl", "a_file/sub/attempts.jsonl", "Not a directory"),
        ("qald", "a_dir", "Is a directory"),
        ("qald", "a_file/seed0.json", "a_file is not a directory"),
        ("parquet", "a_file", "it is a file; --format parquet writes into a directory"),
        ("parquet", "a_file/pq", "Not a directory"),
    ],
)
def test_export_to_a_path_that_cannot_be_written_is_one_line(run, tmp_path, fmt, where, reason):
    _, _, db, run_id = run
    _blockers(tmp_path)
    before = _files(tmp_path)
    code, shown = _invoke("export", run_id, "--db", str(db), "--format", fmt, "-o", str(tmp_path / where))
    assert code == 2, shown
    assert "Traceback" not in shown and f"{tmp_path / where}: cannot write" in shown and reason in shown, shown
    assert "damaged" not in shown
    assert _files(tmp_path) == before and (tmp_path / "a_file").read_text() == "kept as it was\n"


def test_a_parquet_write_that_fails_is_the_outputs_fault_not_a_damaged_database(run, tmp_path):
    """DuckDB's COPY failing to write was reported as '<db>: results database is damaged ...
    restore it from a backup'. Here its temporary file's name is taken by a directory; an
    earlier export in the directory is kept as it was, and nothing is added."""
    _, _, db, run_id = run
    out = tmp_path / "pq"
    assert _invoke("export", run_id, "--db", str(db), "--format", "parquet", "-o", str(out))[0] == 0
    earlier = {name: (out / name).read_bytes() for name in ("attempts.parquet", "verdicts.parquet")}
    (out / ".verdicts.parquet.tmp").mkdir()  # the second file fails: the first must not be half-exported
    code, shown = _invoke("export", run_id, "--db", str(db), "--format", "parquet", "-o", str(out))
    assert code == 2 and "Traceback" not in shown, shown
    assert f"{out}: cannot write the Parquet export" in shown and "damaged" not in shown and str(db) not in shown, shown
    assert {name: (out / name).read_bytes() for name in earlier} == earlier
    assert sorted(p.name for p in out.iterdir()) == [".verdicts.parquet.tmp", "attempts.parquet", "verdicts.parquet"]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into a read-only directory")
def test_export_into_a_directory_without_permission(run, tmp_path):
    _, _, db, run_id = run
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        code, shown = _invoke("export", run_id, "--db", str(db), "-o", str(locked / "a.jsonl"))
    finally:
        locked.chmod(0o700)
    assert code == 2 and f"{locked / 'a.jsonl'}: cannot write the export: Permission denied" in shown, shown
    assert not list(locked.iterdir())


def test_gold_export_to_a_directory(run, tmp_path):
    holdout, gold, _, _ = run
    code, shown = _invoke("gold", "export", "--holdout", str(holdout), "--gold", str(gold), "-o", str(tmp_path))
    assert code == 2 and "Traceback" not in shown and f"{tmp_path}: cannot write the QALD JSON: Is a directory" in shown, shown
    assert not list(tmp_path.iterdir())


def test_contamination_report_json_that_cannot_be_written_keeps_the_outcome(run, tmp_path):
    """The scan's summary is printed before the report is written; a leak is still exit 3."""
    holdout, _, _, _ = run
    clean, leaky = tmp_path / "clean.jsonl", tmp_path / "leaky.jsonl"
    clean.write_text(json.dumps({"prompt": "What is the capital of France?"}) + "\n")
    leaky.write_text(json.dumps({"prompt": "Who works in sales?"}) + "\n")
    args = ["contamination", "check", "--holdout", str(holdout), "--gate-dir", str(tmp_path / "no_gate"), "--report-json", str(tmp_path)]
    code, shown = _invoke(*args, str(clean))
    assert code == 2 and "clean: 1 files, 1 records" in shown and f"{tmp_path}: cannot write the report: Is a directory" in shown, shown
    assert "Traceback" not in shown
    code, shown = _invoke(*args, str(leaky))
    assert code == 3 and "CONTAMINATED" in shown and f"{tmp_path}: cannot write the report" in shown, shown


@pytest.mark.parametrize("fmt", ["jsonl", "qald"])
@pytest.mark.parametrize("how", ["same", "relative", "link"])
def test_an_export_over_the_results_database_is_refused(run, tmp_path, fmt, how):
    """`kgeval export RUN -o kgeval.duckdb` replaced the results database (every run, audit and
    approval in it) with the export's lines."""
    import shutil

    _, _, shared, run_id = run
    db = tmp_path / "r.duckdb"
    shutil.copyfile(shared, db)
    before = db.read_bytes()
    output = {"same": str(db), "relative": str(tmp_path / "." / "r.duckdb"), "link": str(tmp_path / "out.json")}[how]
    if how == "link":
        (tmp_path / "out.json").hardlink_to(db)
    code, shown = _invoke("export", run_id, "--db", str(db), "--format", fmt, "-o", output)
    assert code == 2 and "Traceback" not in shown, shown
    assert "is the --db file" in " ".join(shown.split()), shown
    assert db.read_bytes() == before
