"""kgeval used from any directory: data paths found by the documented rules (flag, the current
directory, $KGEVAL_HOME), the checklist shipped in the package, `--version`, `kgeval runs`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from kgeval import __version__
from kgeval.cli._common import found_path
from tests.conftest import MINI_QUESTIONS


def kgeval_in(cwd: Path, *args: str, home: Path | None = None, **variables: str) -> subprocess.CompletedProcess:
    """`kgeval ARGS` run in `cwd`, with KGEVAL_HOME `home` (else unset), the model keys of the
    environment unset, and `variables` set."""
    unset = ("KGEVAL_HOME", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY")
    env = {k: v for k, v in os.environ.items() if k not in unset} | variables
    if home is not None:
        env["KGEVAL_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "kgeval", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def _home(tmp_path: Path, mini_holdout: Path, mini_gold: Path) -> Path:
    """A KGEVAL_HOME holding only the holdout and its gold (no checklists/, no config)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "holdout").symlink_to(mini_holdout)
    (home / "gold").symlink_to(mini_gold)
    return home


def _replay_file(workdir: Path) -> Path:
    """Recorded answers (the reference queries, and one wrong answer list) for both seeds."""
    lines = [
        {"kg": "mini", "question_id": q["id"], "seed": seed, "sparql": q["sparql"]} if q["id"] != "mini-02" else
        {"kg": "mini", "question_id": q["id"], "seed": seed, "answer": ["nobody"]}
        for q in MINI_QUESTIONS for seed in (0, 1)
    ]  # fmt: skip
    path = workdir / "answers.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_run_report_and_runs_from_a_directory_holding_only_a_results_file(tmp_path, mini_holdout, mini_gold):
    home = _home(tmp_path, mini_holdout, mini_gold)
    work = tmp_path / "elsewhere"
    work.mkdir()
    _replay_file(work)
    ran = kgeval_in(work, "run", "--system", "replay", "--replay", "answers.jsonl", "--seeds", "2", home=home)
    assert ran.returncode == 0, ran.stderr
    run_id = ran.stdout.strip().splitlines()[-1]
    assert (work / "kgeval.duckdb").exists() and not (home / "kgeval.duckdb").exists()  # results stay where you work
    report = kgeval_in(work, "report", run_id, "--format", "json", home=home)
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert (data["overall"]["correct"], data["overall"]["n"]) == (len(MINI_QUESTIONS) - 1, len(MINI_QUESTIONS))
    assert data["review"] is not None  # the gold was found under KGEVAL_HOME: review coverage is shown
    listed = kgeval_in(work, "runs", home=home)
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.strip().splitlines()
    assert header.split("\t") == ["run", "system", "status", "accuracy", "started", "derived from"]
    assert row.split("\t")[:3] == [run_id, "replay", "finished"] and "(7/8)" in row.split("\t")[3] and row.split("\t")[5] == "-"
    # without KGEVAL_HOME the same directory has no holdout: a clear error naming the path
    lost = kgeval_in(work, "run", "--system", "replay", "--replay", "answers.jsonl")
    assert lost.returncode == 2 and "holdout" in lost.stderr


def test_version_and_runs_of_an_empty_database(tmp_path):
    version = kgeval_in(tmp_path, "--version")
    assert version.returncode == 0 and version.stdout.strip() == f"kgeval {__version__}"
    missing = kgeval_in(tmp_path, "runs")
    assert missing.returncode == 2 and "kgeval.duckdb" in missing.stderr


def test_path_rules(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    home = tmp_path / "home"
    monkeypatch.delenv("KGEVAL_HOME", raising=False)
    assert found_path("gold") == Path("gold")
    monkeypatch.setenv("KGEVAL_HOME", str(home))
    assert found_path("gold") == home / "gold"  # not here: the home's (even to create it)
    assert found_path("kgeval.duckdb", create_in_home=False) == Path("kgeval.duckdb")  # a database is created here
    (home).mkdir()
    (home / "kgeval.duckdb").touch()
    assert found_path("kgeval.duckdb", create_in_home=False) == home / "kgeval.duckdb"
    (tmp_path / "gold").mkdir()
    (tmp_path / "kgeval.duckdb").touch()
    assert found_path("gold") == Path("gold") and found_path("kgeval.duckdb", create_in_home=False) == Path("kgeval.duckdb")


def test_a_clones_database_does_not_capture_runs_made_elsewhere(tmp_path, mini_holdout, mini_gold):
    """KGEVAL_HOME pointing at a repository clone (for its holdout and gold) where `kgeval
    quickstart` left a kgeval.duckdb: a run from another directory writes ./kgeval.duckdb there,
    and run and report each say on stderr, in one line, which database they used."""
    clone = _home(tmp_path, mini_holdout, mini_gold)
    (clone / ".git").mkdir()
    in_clone = kgeval_in(clone, "run", "--system", "oracle", "--seeds", "1", home=clone)
    assert in_clone.returncode == 0, in_clone.stderr
    assert f"results database: {clone / 'kgeval.duckdb'}\n" in in_clone.stderr
    work = tmp_path / "elsewhere"
    work.mkdir()
    ran = kgeval_in(work, "run", "--system", "oracle", "--seeds", "1", home=clone)
    assert ran.returncode == 0, ran.stderr
    assert [line for line in ran.stderr.splitlines() if line.startswith("results database:")] == [f"results database: {work / 'kgeval.duckdb'}"]
    assert (work / "kgeval.duckdb").exists()
    run_id = ran.stdout.strip().splitlines()[-1]
    in_clone_runs = kgeval_in(clone, "runs", home=clone)
    assert run_id not in in_clone_runs.stdout  # the clone's database kept only the run made there
    report = kgeval_in(work, "report", run_id, "--format", "json", home=clone)
    assert report.returncode == 0 and f"results database: {work / 'kgeval.duckdb'}" in report.stderr, report.stderr
    # a KGEVAL_HOME that is not a clone keeps its shared database
    shutil.rmtree(clone / ".git")
    (work / "kgeval.duckdb").unlink()
    shared = kgeval_in(work, "report", in_clone.stdout.strip().splitlines()[-1], "--format", "json", home=clone)
    assert shared.returncode == 0 and f"results database: {clone / 'kgeval.duckdb'}" in shared.stderr, shared.stderr
