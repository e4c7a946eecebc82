"""Dispatch throughput against a loopback system with a fixed 200 ms latency.

Ideal throughput with N attempts in flight is N / 0.2 s. Prints the achieved throughput as a
share of ideal for each N (target at N = 32: >= 90%), for the dispatch phase (first call to
last attempt persisted: the threads, the HTTP client, SPARQL execution, judging and one DuckDB
transaction per attempt) and for the whole `execute_run` (plus opening stores, the checklist).

    python bench/dispatch.py [--attempts 640] [--latency 0.2] [--n 1 8 32 64]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml  # noqa: E402

from kgeval.checklists import pre_eval_checklist  # noqa: E402
from kgeval.config import GoldConfig, HttpSystemConfig, KgevalConfig, PipelineConfig, RunConfig  # noqa: E402
from kgeval.gold import rebuild_gold  # noqa: E402
from kgeval.holdout import load_holdout  # noqa: E402
from kgeval.runs import ResultsDB, execute_run  # noqa: E402
from kgeval.stores import EmbeddedStore  # noqa: E402
from kgeval.systems import HttpSystem, OracleSystem  # noqa: E402
from tests.conftest import MINI_QUESTIONS, REPO, write_holdout  # noqa: E402


def _checklist(tmp: Path) -> Path:
    data = yaml.safe_load((REPO / "checklists" / "pre_eval.yaml").read_text())
    data["production_profile"] = {"default": {"schema_in_prompt": True}}
    data["caught"] = str(REPO / "checklists" / "caught.yaml")
    path = tmp / "pre_eval.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--attempts", type=int, default=640, help="attempts per measurement (questions x seeds)")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--n", type=int, nargs="+", default=[1, 8, 32, 64])
    args = parser.parse_args()
    by_text = {q["question"]: q["sparql"] for q in MINI_QUESTIONS}
    seeds = max(1, args.attempts // len(MINI_QUESTIONS))
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        holdout = load_holdout(write_holdout(tmp / "holdout"))
        rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp / "gold")
        checklist = pre_eval_checklist(_checklist(tmp))
        (tmp / "answers.json").write_text(json.dumps(by_text))
        # the system runs in its own process, as a real endpoint would: its threads must not
        # compete with the run's for this interpreter's lock
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.servers", str(tmp / "answers.json"), str(args.latency)], cwd=REPO, stdout=subprocess.PIPE, text=True
        )
        url = server.stdout.readline().strip()
        print(f"loopback system: fixed {args.latency * 1000:.0f} ms latency; {seeds * len(MINI_QUESTIONS)} attempts per run")
        print(f"{'N':>4} {'ideal/s':>8} {'dispatch/s':>11} {'share':>7} {'whole run/s':>12} {'share':>7} {'CPU ms/att':>10} {'call ms':>8} {'attempt ms':>10}")
        for n in args.n:
            cfg = KgevalConfig(run=RunConfig(seeds=seeds, concurrency=n, retry_backoff_s=0.0))
            with ResultsDB(tmp / f"bench-{n}.duckdb") as db:
                execute_run(holdout, tmp / "gold", OracleSystem(), KgevalConfig(run=RunConfig(seeds=1)), db, checklist=checklist)
                system = HttpSystem(HttpSystemConfig(url=url, pipeline=PipelineConfig(default={"schema_in_prompt": True})), concurrency=n)
                started, cpu = time.perf_counter(), time.process_time()
                meta = execute_run(holdout, tmp / "gold", system, cfg, db, checklist=checklist)
                whole, cpu = time.perf_counter() - started, time.process_time() - cpu
                attempts = db.attempts(meta.run_id)
                first = min(datetime.fromisoformat(a.tries[0].started_at) for a in attempts)
                last = datetime.fromisoformat(meta.finished_at)
                dispatch_s = (last - first).total_seconds()
                assert all(a.state == "answered" for a in attempts), "the bench system must answer every attempt"
            call_ms = sum(a.tries[0].latency_ms for a in attempts) / len(attempts)
            attempt_ms = sum(a.latency_ms for a in attempts) / len(attempts)
            ideal = n / args.latency
            d_rate, w_rate = len(attempts) / dispatch_s, len(attempts) / whole
            print(f"{n:>4} {ideal:>8.1f} {d_rate:>11.1f} {d_rate / ideal:>7.1%} {w_rate:>12.1f} {w_rate / ideal:>7.1%} {cpu / len(attempts) * 1000:>10.1f} {call_ms:>8.1f} {attempt_ms:>10.1f}")
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
