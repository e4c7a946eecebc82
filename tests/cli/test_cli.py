"""The CLI entry points, driven as a user would (subprocess for exit codes and output)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MINI_QUESTIONS, REPO


def kgeval(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgeval", *args], capture_output=True, text=True, cwd=cwd or REPO, timeout=300)


@pytest.mark.parametrize("command", [[], ["holdout"], ["gold"], ["run"], ["report"], ["export"], ["quickstart"], ["holdout", "verify"], ["gold", "rebuild"]])
def test_every_command_has_help(command):
    result = kgeval(*command, "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout


def test_full_flow_on_a_mini_holdout(mini_holdout, tmp_path):
    gold, db = tmp_path / "gold", tmp_path / "r.duckdb"
    assert kgeval("holdout", "verify", "--holdout", str(mini_holdout)).returncode == 0
    rebuilt = kgeval("gold", "rebuild", "--holdout", str(mini_holdout), "--gold", str(gold))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert f"{len(MINI_QUESTIONS)} questions" in rebuilt.stdout
    assert kgeval("gold", "verify", "--holdout", str(mini_holdout), "--gold", str(gold)).returncode == 0
    ran = kgeval("run", "--holdout", str(mini_holdout), "--gold", str(gold), "--system", "oracle", "--seeds", "2", "--db", str(db))
    assert ran.returncode == 0, ran.stderr
    run_id = ran.stdout.strip().splitlines()[-1]
    assert "oracle" in run_id
    report = kgeval("report", run_id, "--db", str(db), "--format", "json")
    data = json.loads(report.stdout)
    assert data["overall"]["correct"] == data["overall"]["n"] == len(MINI_QUESTIONS)
    assert data["overall"]["ci_low"] < 1.0
    md = kgeval("report", run_id, "--db", str(db)).stdout
    assert "Wilson" in md and "100.0% [" in md
    lines = kgeval("export", run_id, "--db", str(db)).stdout.splitlines()
    assert len(lines) == 2 * len(MINI_QUESTIONS)


def test_user_errors_are_messages_with_exit_codes(mini_holdout, tmp_path):
    missing = kgeval("holdout", "verify", "--holdout", str(tmp_path / "nope"))
    assert missing.returncode == 1 and "MANIFEST.json: missing" in missing.stderr and "Traceback" not in missing.stderr
    (mini_holdout / "mini" / "kg.ttl").write_text("# tampered\n")
    tampered = kgeval("holdout", "verify", "--holdout", str(mini_holdout))
    assert tampered.returncode == 1 and "mini/kg.ttl: sha256 differs" in tampered.stderr
    no_run = kgeval("report", "nope", "--db", str(tmp_path / "none.duckdb"))
    assert no_run.returncode == 2 and "does not exist" in no_run.stderr


def test_rebuild_failure_names_kg_and_question(tmp_path):
    from tests.conftest import write_holdout

    questions = [dict(q) for q in MINI_QUESTIONS]
    questions[4]["sparql"] = "SELECT ?x WHERE { ?x ?y }"
    holdout = write_holdout(tmp_path / "h", questions)
    result = kgeval("gold", "rebuild", "--holdout", str(holdout), "--gold", str(tmp_path / "gold"))
    assert result.returncode == 1
    assert "mini: question mini-05:" in result.stderr and "does not parse" in result.stderr
    assert not (tmp_path / "gold" / "MANIFEST.json").exists()
