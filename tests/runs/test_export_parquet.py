"""A run's attempts and verdicts as Parquet (DuckDB COPY), through `kgeval export`, read back
with pyarrow: every attempt and verdict, typed columns, JSON columns as JSON text."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
from typer.testing import CliRunner

from kgeval.cli import app
from kgeval.runs import ResultsDB
from tests.oversight import run_system


def test_parquet_export_round_trips_every_attempt_and_verdict(mini_holdout, mini_gold, tmp_path):
    db = tmp_path / "r.duckdb"
    run_id = run_system(mini_holdout, mini_gold, db, "weak", seeds=2)
    run_system(mini_holdout, mini_gold, db, "oracle", seeds=2)  # another run in the same file: not exported
    out = tmp_path / "export"
    result = CliRunner().invoke(app, ["export", run_id, "--db", str(db), "--format", "parquet", "-o", str(out)])
    assert result.exit_code == 0, result.output
    attempts, verdicts = pq.read_table(out / "attempts.parquet"), pq.read_table(out / "verdicts.parquet")
    with ResultsDB(db, read_only=True) as results:
        stored_attempts, stored_verdicts = results.attempts(run_id), results.verdicts(run_id)
    assert attempts.num_rows == len(stored_attempts) == 16 and set(attempts.column("run_id").to_pylist()) == {run_id}
    assert verdicts.num_rows == len(stored_verdicts) and set(verdicts.column("judge").to_pylist()) == {"seed", "execution"}
    assert f"attempts.parquet: {attempts.num_rows} rows" in result.output
    rows = attempts.to_pylist()
    by_key = {(a.question_id, a.seed): a for a in stored_attempts}
    for row in rows:
        stored = by_key[(row["question_id"], row["seed"])]
        assert (row["state"], row["sparql"], row["latency_ms"]) == (stored.state, stored.sparql, stored.latency_ms)
        assert [t["n"] for t in json.loads(row["tries"])] == [t.n for t in stored.tries]
    correct = sum(v.correct for _, _, v in stored_verdicts)
    assert sum(verdicts.column("correct").to_pylist()) == correct and verdicts.schema.field("correct").type == "bool"
    assert not list(out.glob(".*.tmp"))  # written to temporary names, then renamed


def test_export_of_an_unknown_run_is_a_clear_error(mini_holdout, mini_gold, tmp_path):
    db = tmp_path / "r.duckdb"
    run_system(mini_holdout, mini_gold, db, "oracle", seeds=1)
    result = CliRunner().invoke(app, ["export", "nope", "--db", str(db), "--format", "parquet", "-o", str(tmp_path / "x")])
    assert result.exit_code == 2 and "no run 'nope'" in result.output
    assert not (tmp_path / "x" / "attempts.parquet").exists()


def test_parquet_export_to_a_file_is_one_file_a_row_per_attempt(mini_holdout, mini_gold, tmp_path):
    """Issue 44 item 12: `-o run.parquet` made a directory that pandas read as attempt and
    verdict rows mixed. A name ending in .parquet is one file: a row per attempt, its verdicts
    in a list column."""
    db = tmp_path / "r.duckdb"
    run_id = run_system(mini_holdout, mini_gold, db, "weak", seeds=2)
    out = tmp_path / "run.parquet"
    result = CliRunner().invoke(app, ["export", run_id, "--db", str(db), "--format", "parquet", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.is_file() and f"wrote 16 attempts, each with its verdicts, to {out}" in result.output
    rows = pq.read_table(out).to_pylist()
    with ResultsDB(db, read_only=True) as results:
        stored = {(q, s, v.judge): v.correct for q, s, v in results.verdicts(run_id)}
    assert len(rows) == 16 and {(r["question_id"], r["seed"]) for r in rows} == {(q, s) for q, s, _ in stored}
    for row in rows:
        assert [v["judge"] for v in row["verdicts"]] == ["execution", "seed"]
        assert all(v["correct"] == stored[(row["question_id"], row["seed"], v["judge"])] for v in row["verdicts"])
    assert not list(tmp_path.glob(".*.tmp"))
