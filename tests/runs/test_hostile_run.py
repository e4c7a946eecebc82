"""A whole `kgeval run` whose system answers with hostile SPARQL (tests/stores/hostile_corpus.py):
the run completes, every attempt ends in a named state, nothing reaches the network, a kill -9
mid-run leaves no sandbox worker behind, and `--resume` finishes the run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import yaml

from kgeval.checklists import pre_eval_checklist
from kgeval.config import KgevalConfig, RunConfig
from kgeval.holdout import load_holdout
from kgeval.runs import ResultsDB, execute_run
from kgeval.systems import OracleSystem
from tests.checklists.test_checklist import _cli_checklist
from tests.conftest import MINI_QUESTIONS, REPO
from tests.stores.hostile_corpus import hostile_queries
from tests.stores.loopback import loopback

SEEDS = 11  # 8 questions x 11 seeds >= the 85 corpus queries
NAMED_STATES = {"answered", "incomplete", "error"}


def _worker_children(parent: int) -> set[int]:
    """Sandbox worker processes started by `parent`."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and b"kgeval.stores._worker" in cmdline:
            found.add(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return False


def _kill_mid_run(args: list[str], db_path: Path, slots: int):
    """Start the run, SIGKILL it some seconds into the bombs, and check that its sandbox workers
    die with it; the killed run's record. A kill that came before the first attempt was stored
    (a loaded machine is slow to start) is no mid-run kill: the run is resumed (or started
    again) and killed after twice the wait, so where the kill lands does not turn on the load."""
    wait_s = 4.0
    while True:
        with ResultsDB(db_path) as db:
            started = [r for r in db.runs(status=None) if r.system == "replay"]
        command = ["--resume", started[0].run_id, "--db", str(db_path)] if started else args
        run = subprocess.Popen([sys.executable, "-m", "kgeval", "run", *command], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        workers: set[int] = set()
        deadline = time.monotonic() + 120
        while not workers and run.poll() is None and time.monotonic() < deadline:
            workers = _worker_children(run.pid)
            time.sleep(0.05)
        assert workers, "the run started no sandbox worker"
        time.sleep(wait_s)  # into the bombs
        workers |= _worker_children(run.pid)
        run.send_signal(signal.SIGKILL)
        run.wait()
        gone_by = time.monotonic() + 60
        while any(_alive(pid) for pid in workers) and time.monotonic() < gone_by:
            time.sleep(0.2)
        assert not any(_alive(pid) for pid in workers), "sandbox workers outlived their killed run"
        with ResultsDB(db_path) as db:
            killed = next((r for r in db.runs(status=None) if r.system == "replay"), None)
            done = len(db.done_keys(killed.run_id)) if killed else 0
        assert done < slots, "the kill did not land mid-run: every attempt was stored"
        if done:
            return killed
        wait_s *= 2
        assert wait_s <= 128, "no attempt stored in 2 minutes of a run"


def test_hostile_run_completes_every_attempt_named_and_resumes(mini_holdout, mini_gold, tmp_path):
    db_path = tmp_path / "r.duckdb"
    checklist = _cli_checklist(tmp_path)
    with ResultsDB(db_path) as db:  # the oracle control first: the checklist requires it
        execute_run(load_holdout(mini_holdout), mini_gold, OracleSystem(), KgevalConfig(run=RunConfig(seeds=1)), db, checklist=pre_eval_checklist(checklist))
    with loopback() as (url, recorded):
        corpus = hostile_queries(url)
        slots = [(q["id"], seed) for seed in range(SEEDS) for q in MINI_QUESTIONS]
        records = [{"kg": "mini", "question_id": qid, "seed": seed, "sparql": corpus[i % len(corpus)].text} for i, (qid, seed) in enumerate(slots)]
        replay = tmp_path / "hostile.jsonl"
        replay.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        config = tmp_path / "hostile.yaml"
        config.write_text(yaml.safe_dump({
            "run": {"seeds": SEEDS, "concurrency": 4, "query_timeout_s": 2.0, "retry_backoff_s": 0.0},
            "store": {"candidates": {"memory_mb": 256, "max_result_bytes": 1 << 20}},
        }))
        args = ["--system", "replay", "--replay", str(replay), "--config", str(config), "--holdout", str(mini_holdout),
                "--gold", str(mini_gold), "--db", str(db_path), "--checklist", str(checklist)]
        killed = _kill_mid_run(args, db_path, len(slots))
        resumed = subprocess.run([sys.executable, "-m", "kgeval", "run", "--resume", killed.run_id, "--db", str(db_path)],
                                 cwd=REPO, capture_output=True, text=True, timeout=600)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert resumed.stdout.strip().splitlines()[-1] == killed.run_id
        assert recorded == [], f"outbound requests: {[(r.method, r.path) for r in recorded]}"

    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.execute("SELECT question_id, seed, state, error_kind, extra FROM attempts WHERE run_id = ?", [killed.run_id]).fetchall()
    status = con.execute("SELECT status FROM runs WHERE run_id = ?", [killed.run_id]).fetchone()[0]
    con.close()
    assert status == "finished"
    assert sorted((q, s) for q, s, *_ in rows) == sorted(slots)  # each exactly once
    assert {state for _, _, state, _, _ in rows} <= NAMED_STATES
    assert all(kind is not None for _, _, state, kind, _ in rows if state == "error")
    errors = [json.loads(extra or "{}").get("sparql_error", "") for *_, extra in rows] + [kind or "" for *_, kind, _ in rows]
    assert any("QueryOverBudget" in e for e in errors) or any(kind == "invalid_sparql" for *_, kind, _ in rows)
    costs = [json.loads(extra)["query_resources"] for *_, extra in rows if extra and "query_resources" in json.loads(extra)]
    assert costs and all(c["wall_ms"] >= 0 for c in costs) and any(c["sandboxed"] for c in costs)
