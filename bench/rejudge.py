"""Re-judging a stored run as a ratio to the replay run it re-judges (issue 42: within 1.2x).

Generates bench/run.py's multi-KG holdout and replay file (about 1,000 predictions over
questions x seeds, some wrong, unparsable, answer lists only or missing), builds its gold, runs
the replay once (the source), then, in this one process, alternates rounds of:
- a replay run: `execute_run` with the replay system (reading the replay file, guard,
  execution, judges, DuckDB writes, the seal);
- re-judging the source: what `kgeval rejudge RUN` does (the source's attempts and verdicts
  read from the results database, `rejudge_run`: the same execution, judges and writes, the
  stored answers for a system).
Both start with the process's caches emptied and a checklist that passes at once. Prints each
round's seconds and CPU (this process and its sandbox processes), the rejudge / replay ratio per
round, its median and best; then the peak traced Python memory of one replay run and of one
re-judging (tracemalloc), and their ratio: re-judging holds the source's attempts as the replay
system holds its records, and what a run holds besides.

    python bench/rejudge.py [--predictions 1000] [--kgs 4] [--people 1500] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from run import _children_cpu, _load, _passing_checklist, forget_process_caches, write_bench_holdout  # noqa: E402

from kgeval.config import GoldConfig, KgevalConfig, RunConfig  # noqa: E402
from kgeval.gold import rebuild_gold  # noqa: E402
from kgeval.holdout import load_holdout  # noqa: E402
from kgeval.runs import ResultsDB, RunMetadata, execute_run, rejudge_config, rejudge_run, run_config  # noqa: E402
from kgeval.stores import EmbeddedStore  # noqa: E402
from kgeval.stores._sandbox import stop_zygote  # noqa: E402
from kgeval.systems import ReplaySystem  # noqa: E402


def replay_run(holdout_root: Path, gold: Path, replay: Path, db: ResultsDB, cfg: KgevalConfig) -> RunMetadata:
    return execute_run(load_holdout(holdout_root), gold, ReplaySystem(replay), cfg, db, checklist=_passing_checklist)


def rejudged(holdout_root: Path, gold: Path, source: str, db: ResultsDB) -> RunMetadata:
    """`kgeval rejudge SOURCE` as the command does it, with the bench's checklist."""
    metadata = db.metadata(source)
    cfg = rejudge_config(metadata, None, run_config)
    return rejudge_run(
        metadata, db.attempts(source), db.judge_configs(source), db, cfg, checklist=_passing_checklist, holdout=load_holdout(holdout_root), gold_dir=gold,
        verdicts_sha256=db.sealed_verdicts_sha256(source),
    )  # fmt: skip


def timed(step) -> tuple[float, float, float, RunMetadata]:  # noqa: ANN001
    """(seconds, CPU of this process, CPU of the sandbox processes, the run's metadata) of `step()`."""
    forget_process_caches()
    started, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
    metadata = step()
    seconds, own = time.perf_counter() - started, time.process_time() - cpu
    gc.collect()
    stop_zygote()  # the sandbox's processes reaped: their CPU counted
    return seconds, own, _children_cpu() - children, metadata


def peak_bytes(step) -> int:  # noqa: ANN001
    forget_process_caches()
    tracemalloc.start()
    try:
        step()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        stop_zygote()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--predictions", type=int, default=1000)
    parser.add_argument("--kgs", type=int, default=4)
    parser.add_argument("--people", type=int, default=1500)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        holdout_root, replay = write_bench_holdout(tmp, args.predictions, args.kgs, args.people, args.seeds)
        report = rebuild_gold(load_holdout(holdout_root), lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp / "gold")
        assert report.ok, report.failures
        cfg = KgevalConfig(run=RunConfig(seeds=args.seeds, concurrency=args.concurrency, retry_backoff_s=0.0))
        print(f"machine: {os.cpu_count()} cores, load average {_load()} at the start")
        with ResultsDB(tmp / "r.duckdb") as db:
            source = replay_run(holdout_root, tmp / "gold", replay, db, cfg).run_id
            attempts = len(db.attempts(source))
            print(f"source: replay run {source}, {attempts} attempts ({len(load_holdout(holdout_root).questions())} questions x {args.seeds} seeds)")
            print(f"{'round':>5} {'first':>8} {'replay s':>9} {'rejudge s':>10} {'ratio':>7} {'CPU replay s':>13} {'CPU rejudge s':>14} {'CPU ratio':>10}")
            ratios, cpu_ratios = [], []
            for i in range(args.repeat):
                steps = {
                    "replay": lambda: replay_run(holdout_root, tmp / "gold", replay, db, cfg),
                    "rejudge": lambda: rejudged(holdout_root, tmp / "gold", source, db),
                }
                order = ["replay", "rejudge"] if i % 2 == 0 else ["rejudge", "replay"]  # neither always goes first
                done = {name: timed(steps[name]) for name in order}
                (r_s, r_own, r_kids, _), (j_s, j_own, j_kids, derived) = done["replay"], done["rejudge"]
                assert db.sealed_verdicts_sha256(derived.run_id) == db.sealed_verdicts_sha256(source), "re-judging did not reproduce the source"
                ratios.append(j_s / r_s)
                cpu_ratios.append((j_own + j_kids) / (r_own + r_kids))
                print(f"{i + 1:>5} {order[0]:>8} {r_s:>9.3f} {j_s:>10.3f} {ratios[-1]:>6.2f}x {r_own + r_kids:>13.3f} {j_own + j_kids:>14.3f} {cpu_ratios[-1]:>9.2f}x")
            print(f"load average {_load()} at the end")
            print(f"rejudge / replay run, wall: median {statistics.median(ratios):.2f}x, best {min(ratios):.2f}x; CPU: median {statistics.median(cpu_ratios):.2f}x, "
                  f"best {min(cpu_ratios):.2f}x over {len(ratios)} rounds (target: within 1.2x); every re-judged run gave the source's verdict hash")
            replay_peak = peak_bytes(lambda: replay_run(holdout_root, tmp / "gold", replay, db, cfg))
            rejudge_peak = peak_bytes(lambda: rejudged(holdout_root, tmp / "gold", source, db))
        print(f"peak traced Python memory: replay run {replay_peak / 2**20:.1f} MiB, rejudge {rejudge_peak / 2**20:.1f} MiB ({rejudge_peak / replay_peak:.2f}x)")


if __name__ == "__main__":
    main()
