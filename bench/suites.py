"""Test suites: what they cost to build and to judge with, and what they tell apart.

In this one process, for the sample holdout (and CK25 with $KGEVAL_CK25):
- the suite build (`kgeval suite build --force`: fuzz, distil, build the neighbours' golds),
  wall seconds against the target of 60 s on 2 cores, the CPU of this process and that of
  the sandbox workers (its descendants, read from /proc while the build runs);
- the suite store: bytes on disk of the version, and the memory `read_suites` holds (peak
  traced allocations while it verifies and indexes the store);
- the kill rate per question (distribution, median, the strict rate counting equivalent mutants
  as not told apart) and the mutant kinds no neighbour separates;
- a replay run (the stress set's sample cases and the reference queries, seeds as the set
  needs) judged with the suites and the same run without them, alternated `--repeat` times:
  the ratio of their median wall times (target: within 1.5x), and their CPU: this process's
  and its sandbox processes' (the zygote stopped after each run, so it has reaped them).

    python bench/suites.py [--repeat 3] [--skip-ck25] [--verdicts FILE] [--not-reference] [--scale S] [--neighbours N]

`--verdicts FILE`: every verdict of the first replay run judged with suites, field for field
(sorted JSON), to compare a change's verdicts with the code before it (`cmp` the two files).
`--not-reference`: every replayed answer gets a `# not the reference text` line, so no accept is
its question's reference text and every check executes on the neighbours (the worst case).
`--scale S`: build the suites with `suite.scale` S (share of each class's entities a neighbour
keeps; the default configuration's otherwise); `--neighbours N`: `suite.neighbours` N.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._proc import cpu_ticks, process_tree  # noqa: E402
from kgeval.config import KgevalConfig, RunConfig, SuiteConfig  # noqa: E402
from kgeval.gold import build_suites, read_suites, rebuild_gold, suites_path  # noqa: E402
from kgeval.holdout import load_holdout  # noqa: E402
from kgeval.judges import judges_from_config  # noqa: E402
from kgeval.runs import ResultsDB, execute_run, neighbour_store, suite_differs  # noqa: E402
from kgeval.runs import Receipt  # noqa: E402
from kgeval.stores import open_store  # noqa: E402
from kgeval.stores._sandbox import stop_zygote  # noqa: E402
from kgeval.systems import ReplaySystem  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TARGET_BUILD_S = 60.0
TARGET_RUN_RATIO = 1.5


def _cpu(who: int = resource.RUSAGE_SELF) -> float:
    """CPU seconds of this process (the sandbox workers' are not counted: they are forked from
    a zygote that outlives the build, so the kernel has not charged them to this process yet);
    RUSAGE_CHILDREN: of the sandbox processes reaped so far (`stop_zygote` reaps them all)."""
    own = resource.getrusage(who)
    return own.ru_utime + own.ru_stime


class SandboxCpu:
    """CPU seconds of this process's descendants (the sandbox's zygote, templates and workers)
    while it is entered, read from /proc every 0.2 s: a worker that ends between two reads loses
    at most its last 0.2 s. `own`: this reader's CPU, to take off this process's."""

    def __init__(self) -> None:
        self._start = {pid: cpu_ticks(pid) for pid in self._descendants()}
        self._seen: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.own = 0.0

    def __enter__(self) -> SandboxCpu:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def seconds(self) -> float:
        return sum(t - self._start.get(pid, 0) for pid, t in self._seen.items()) / os.sysconf("SC_CLK_TCK")

    def _run(self) -> None:
        while True:
            for pid in self._descendants():
                self._seen[pid] = max(self._seen.get(pid, 0), cpu_ticks(pid))
            self.own = time.thread_time()
            if self._stop.wait(0.2):
                return

    @staticmethod
    def _descendants() -> list[int]:
        return process_tree(os.getpid())[1:]


def _store_for(cfg: KgevalConfig):
    return lambda kg: open_store(cfg.store, kg.files, kg.id, graphs=kg.graphs, local_copy=False)


def build(name: str, holdout_dir: Path, gold: Path, cfg: KgevalConfig) -> None:
    holdout = load_holdout(holdout_dir)
    rebuild_gold(holdout, _store_for(cfg), cfg.gold, gold)
    differs = suite_differs(judges_from_config(cfg.judges)[cfg.judges.primary])
    cpu0, wall0 = _cpu(), time.perf_counter()
    with SandboxCpu() as sandbox:
        report = build_suites(holdout, _store_for(cfg), neighbour_store(cfg), differs, cfg.suite, cfg.gold, suites_path(gold), force=True)
    wall, own = time.perf_counter() - wall0, _cpu() - cpu0 - sandbox.own
    print(f"\n## {name}: {len(holdout.questions())} questions, {len(holdout.kgs)} KGs, suite.neighbours {cfg.suite.neighbours}, suite.scale {cfg.suite.scale}")
    print(f"suite build: {wall:.1f} s wall ({wall / TARGET_BUILD_S:.2f} of the {TARGET_BUILD_S:.0f} s target; load average "
          f"{os.getloadavg()[0]:.1f}); CPU {own:.1f} s in this process (fuzzing, judging, writing), "
          f"{sandbox.seconds:.1f} s in the sandbox workers (the queries)")
    _store_figures(gold)
    _kill_figures(report.suites)


def _store_figures(gold: Path) -> None:
    version = read_suites(gold).version
    size = sum(p.stat().st_size for p in version.rglob("*") if p.is_file())
    neighbours = sum(p.stat().st_size for p in (version / "neighbours").rglob("*") if p.is_file())
    tracemalloc.start()
    suites = read_suites(gold)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    kept = sum(len(r.neighbours) for r in suites.kgs.values())
    print(f"suite store: {size / 1e6:.1f} MB on disk ({neighbours / 1e6:.1f} MB of {kept} neighbour KGs); "
          f"read_suites holds {held / 1e6:.2f} MB (peak {peak / 1e6:.2f} MB while verifying)")


def _kill_figures(questions: list) -> None:
    rates = [s.kill_rate for s in questions if s.kill_rate is not None]
    strict = [s.strict_kill_rate for s in questions if s.strict_kill_rate is not None]
    bins = Counter("100%" if r == 1 else f"{int(r * 10) * 10}-{int(r * 10) * 10 + 9}%" for r in rates)
    sizes = Counter(len(s.neighbours) for s in questions)
    status = Counter(m.status for s in questions for m in s.mutants)
    print(f"kill rate per question: median {statistics.median(rates):.0%}, mean {statistics.mean(rates):.1%} over {len(rates)} questions "
          f"(strict, equivalent mutants counted as not told apart: median {statistics.median(strict):.0%}, mean {statistics.mean(strict):.1%})")
    print("  distribution: " + ", ".join(f"{k}: {bins[k]}" for k in sorted(bins, key=lambda k: -int(k.split('-')[0].rstrip('%')))))
    print(f"  mutants: {sum(status.values())} ({', '.join(f'{k} {n}' for k, n in status.most_common())})")
    print(f"  suite sizes (neighbours per question): {dict(sorted(sizes.items()))}")
    survivors = Counter(m.kind for s in questions for m in s.survivors)
    equivalent = Counter(m.kind for s in questions for m in s.mutants if m.status == "equivalent")
    print(f"  kinds no neighbour separates (survived): {dict(survivors.most_common()) or '-'}")
    print(f"  kinds equal to the reference on every KG (equivalent): {dict(equivalent.most_common()) or '-'}")


def _passing(plan, db) -> Receipt:  # noqa: ANN001
    return Receipt(checklist_sha256="bench", items=[])


def replay_ratio(holdout_dir: Path, gold: Path, repeat: int, verdicts: Path | None = None, not_reference: bool = False) -> None:
    from tests.suites.stress.cases import load_cases, write_replay

    holdout = load_holdout(holdout_dir)
    replay = gold.parent / "stress.jsonl"
    mapping = write_replay(load_cases(holdout="sample"), replay, [(q.kg, q.id, q.sparql) for q in holdout.questions()])
    seeds = max(s for _, s in mapping) + 1
    if not_reference:  # a harmless comment: the same results, no text equal to a reference's
        records = [json.loads(line) for line in replay.read_text(encoding="utf-8").splitlines()]
        records = [{**r, "sparql": r["sparql"] + "\n# not the reference text"} if r.get("sparql") else r for r in records]
        replay.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    times: dict[bool, list[tuple[float, float, float]]] = {True: [], False: []}
    checked = 0
    stop_zygote()  # the build's sandbox processes reaped: each run's own are counted below
    for round_ in range(repeat):
        for with_suites in (True, False):
            cfg = KgevalConfig(run=RunConfig(seeds=seeds), suite=SuiteConfig(check_accepts=with_suites))
            db_path = gold.parent / f"r-{round_}-{with_suites}.duckdb"
            t0, own0, sandbox0 = time.perf_counter(), _cpu(), _cpu(resource.RUSAGE_CHILDREN)
            with ResultsDB(db_path) as db:
                meta = execute_run(holdout, gold, ReplaySystem(replay, holdout), cfg, db, checklist=_passing)
                if with_suites:
                    checked = sum("suite" in v.details for _, _, v in db.verdicts(meta.run_id))
                    if verdicts is not None and round_ == 0:
                        _write_verdicts(db, meta.run_id, verdicts)
            wall = time.perf_counter() - t0
            stop_zygote()  # reaps the zygote, which reaped the run's templates and workers: their CPU counts now
            times[with_suites].append((wall, _cpu() - own0, _cpu(resource.RUSAGE_CHILDREN) - sandbox0))
    on, off = ([statistics.median(t[k] for t in times[w]) for k in range(3)] for w in (True, False))
    answers = "every answer with a comment line, none a reference text" if not_reference else "the reference queries where no stress case is"
    print(f"\n## replay run, sample holdout ({seeds} seeds, {len(holdout.questions()) * seeds} attempts, {checked} accepts checked on their suites; {answers})")
    print(f"with suites {on[0]:.2f} s, without {off[0]:.2f} s (medians of {repeat}): ratio {on[0] / off[0]:.2f} (target within {TARGET_RUN_RATIO}x); "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"CPU (medians): this process {on[1]:.2f} s with, {off[1]:.2f} s without; its sandbox processes {on[2]:.2f} s with, {off[2]:.2f} s "
          f"without; together ratio {(on[1] + on[2]) / (off[1] + off[2]):.2f}")


def _write_verdicts(db: ResultsDB, run_id: str, path: Path) -> None:
    rows = [[q, seed, v.model_dump(mode="json")] for q, seed, v in db.verdicts(run_id)]
    rows.sort(key=lambda r: (r[0], r[1], r[2]["judge"]))
    path.write_text(json.dumps(rows, sort_keys=True, indent=0) + "\n")
    print(f"verdicts of the run judged with suites: {path} ({len(rows)} verdicts)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-ck25", action="store_true")
    parser.add_argument("--verdicts", type=Path, help="write the verdicts of the first run judged with suites here (JSON)")
    parser.add_argument("--not-reference", action="store_true", help="add a comment line to every replayed answer: no accept is a reference text")
    parser.add_argument("--scale", type=float, help="suite.scale: share of each class's entities a neighbour keeps")
    parser.add_argument("--neighbours", type=int, help="suite.neighbours: neighbour KGs made per holdout KG")
    args = parser.parse_args()
    cfg = KgevalConfig()
    shape = {"scale": args.scale, "neighbours": args.neighbours}
    cfg = cfg.model_copy(update={"suite": cfg.suite.model_copy(update={k: v for k, v in shape.items() if v is not None})})
    print(f"cores: {os.cpu_count()}; load average {os.getloadavg()[0]:.1f} (figures on a loaded machine are slower)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(REPO / "holdout", root / "sample" / "holdout")
        build("sample holdout", root / "sample" / "holdout", root / "sample" / "gold", cfg)
        ck25 = Path(os.environ.get("KGEVAL_CK25", "/nonexistent"))
        if not args.skip_ck25 and (ck25 / "questions.yml").is_file():
            from kgeval.interop import import_text2sparql

            import_text2sparql(ck25, "ck25", root / "ck25" / "holdout")
            build("CK25", root / "ck25" / "holdout", root / "ck25" / "gold", cfg)
        replay_ratio(root / "sample" / "holdout", root / "sample" / "gold", args.repeat, args.verdicts, args.not_reference)


if __name__ == "__main__":
    main()
