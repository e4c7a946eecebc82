"""`kgeval run` as a process against a plain pyoxigraph script as a process, on a generated
benchmark shaped like the real ones; both timed from their start (interpreter, imports, KG
loading) to their exit.

The benchmark: `--kgs` KGs (default 22) of different sizes (people from `--min-people` to
`--max-people`, so a few hundred to ~20k triples each), questions of every shape from
bench/run.py's generator (messy reference SPARQL), `--seeds` answers per question (>= 1,000 in
all by default), recorded in a replay file whose consecutive records are mostly on different KGs
(as a benchmark's answers come, question after question). About 30% of the answers are invalid or
vacuous: a prefix forgotten or a brace lost (does not parse), a query on a property no KG has (no
rows), an empty answer list. Its gold is built once, before any clock starts.

kgeval's bytecode is compiled first (as an installed package's is). Then, alternating in this one process, `--repeat` times:
- raw: `python -c` a plain script that loads every KG into a pyoxigraph Store and executes every
  recorded SPARQL text of the replay file in file order, reading every term (what a bare loop
  over the replay costs: no guard, no sandbox, no judge, no database);
- kgeval: `python -m kgeval run --system replay --replay FILE` with the shipped configuration
  and checklist (sandbox, budgets, judges, DuckDB writes, the run sealed).
The raw process runs before and after each kgeval run; their mean is that run's baseline, so a
slow or fast moment of the shared machine on one side moves the ratio less. Wall seconds and
CPU seconds (the process and the descendants it waited for, from wait4) of each, ratios, their
median (target: within 3x wall), and the load average at the start and the end.

Verdicts: every kgeval run's attempts and verdicts, field for field as bench/verdict_parity.py
compares them (everything but run ids, times, latencies and measured resources), are the same
across the runs of one invocation (else exit 1), and every executed query ran sandboxed;
`--save-verdicts FILE` writes them, `--compare-verdicts FILE` compares them with a file an
earlier build wrote (exit 1 and the differences listed when any field of any attempt or verdict
differs): the generator is seeded, so two builds judge the same answers.

    python bench/run_process.py [--kgs 22] [--questions-per-kg 16] [--seeds 3] [--repeat 3]
                                [--save-verdicts F] [--compare-verdicts F] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml  # noqa: E402

import run as run_bench  # noqa: E402 - bench/run.py: the KG and question generator
from run import _children_cpu, _load  # noqa: E402
import verdict_parity  # noqa: E402 - bench/verdict_parity.py: a run's rows, compared field for field
from kgeval.config import GoldConfig  # noqa: E402
from kgeval.gold import rebuild_gold  # noqa: E402
from kgeval.holdout import load_holdout, seal_holdout  # noqa: E402
from kgeval.runs import ResultsDB  # noqa: E402
from kgeval.stores import EmbeddedStore  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

RAW_SCRIPT = """
import json, sys
import pyoxigraph as ox
holdout, replay = sys.argv[1], sys.argv[2]
from pathlib import Path
stores = {}
for kg_dir in sorted(p for p in Path(holdout).iterdir() if p.is_dir()):
    store = stores[kg_dir.name] = ox.Store()
    for ttl in sorted(kg_dir.glob("*.ttl")):
        store.bulk_load(path=str(ttl), format=ox.RdfFormat.TURTLE)
executed = 0
for line in open(replay, encoding="utf-8"):
    record = json.loads(line)
    if not record.get("sparql"):
        continue
    try:
        result = stores[record["kg"]].query(record["sparql"])
    except (SyntaxError, OSError, RuntimeError):
        continue
    executed += 1
    if isinstance(result, ox.QuerySolutions):
        for solution in result:
            for term in solution:
                term
print(executed)
"""


SHARES = ((0.40, "reference"), (0.48, "reformatted"), (0.70, "wrong"), (0.80, "prefixes forgotten"), (0.85, "brace lost"),
          (0.95, "no such property"), (1.0, "empty answer"))  # fmt: skip
"""Mostly the reference, a reformatting or a wrong variant; 30% invalid or vacuous (does not
parse, runs to no rows, states nothing): kinds of bench/run.py's generator."""


def write_benchmark(root: Path, kgs: int, per_kg: int, seeds: int, people: tuple[int, int]) -> tuple[Path, Path]:
    """The holdout under root/holdout (sealed) and the replay file root/replay.jsonl, its records
    shuffled so most follow one on another KG."""
    rng = random.Random(43)
    records = []
    for k in range(kgs):
        kg, ns = f"{run_bench.DOMAINS[k % len(run_bench.DOMAINS)]}{k}", f"http://example.org/bench{k}/"
        size = people[0] + (people[1] - people[0]) * k // max(1, kgs - 1)
        prefixes = run_bench.PREFIXES.format(ns=ns)
        (root / "holdout" / kg).mkdir(parents=True)
        (root / "holdout" / kg / "kg.ttl").write_text(run_bench.kg_turtle(ns, size, rng), encoding="utf-8")
        questions = []
        while len(questions) < per_kg:
            for text, body, tags in run_bench.question_templates(rng, size)[: per_kg - len(questions)]:
                qid = f"{kg}-{len(questions) + 1:04d}"
                questions.append({"id": qid, "question": text, "sparql": prefixes + body, "domain": kg, "tags": tags})
                records += [{"kg": kg, "question_id": qid, "seed": s, **run_bench.candidate_for(body, prefixes, rng.random(), rng, SHARES)} for s in range(seeds)]
        doc = {"kg": kg, "title": f"generated KG {k}", "questions": questions}
        (root / "holdout" / kg / "questions.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    seal_holdout(root / "holdout")
    rng.shuffle(records)
    replay = root / "replay.jsonl"
    replay.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return root / "holdout", replay


def run_process(argv: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall s, CPU s, stdout): CPU from RUSAGE_CHILDREN before and after (the process and every
    descendant it, or its children, waited for)."""
    cpu0 = _children_cpu()
    started = time.perf_counter()
    ran = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if ran.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv[:5]))} ... exited {ran.returncode}:\n{ran.stderr[-3000:]}")
    return wall, _children_cpu() - cpu0, ran.stdout


def run_rows(db: Path, run_id: str) -> dict[str, dict]:
    """Every verdict and attempt of the run as bench/verdict_parity.py compares them (all fields
    but times, ids and measured resources); fails when an executed query ran outside the sandbox."""
    with ResultsDB(db, read_only=True) as results:
        for attempt in results.attempts(run_id):
            resources = attempt.extra.get("query_resources")
            if resources and resources.get("result_bytes") is not None and not resources["sandboxed"]:
                raise SystemExit(f"{attempt.question_id}/{attempt.seed}: its query ran outside the sandbox: {resources}")
        return verdict_parity.rows_of_run(results, run_id, "process")


def main() -> None:  # noqa: PLR0915 - one bench, read top to bottom
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kgs", type=int, default=22)
    parser.add_argument("--questions-per-kg", type=int, default=16)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--min-people", type=int, default=150)
    parser.add_argument("--max-people", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--save-verdicts", type=Path, help="write the runs' attempts and verdicts (JSON) here")
    parser.add_argument("--compare-verdicts", type=Path, help="compare the runs' attempts and verdicts with this file, field for field")
    parser.add_argument("--workdir", type=Path, help="keep the benchmark here (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = args.workdir or Path(tmp_name)
        tmp.mkdir(parents=True, exist_ok=True)
        holdout_root, replay = write_benchmark(tmp, args.kgs, args.questions_per_kg, args.seeds, (args.min_people, args.max_people))
        holdout = load_holdout(holdout_root)
        report = rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp / "gold")
        assert report.ok, report.failures
        records = [json.loads(line) for line in replay.read_text().splitlines()]
        switches = sum(a["kg"] != b["kg"] for a, b in zip(records, records[1:], strict=False))
        invalid = sum(1 for r in records if not r.get("sparql") or any(m in r["sparql"] for m in ("noSuchProperty", "forgotten")) or r["sparql"].count("}") < r["sparql"].count("{"))
        sizes = sorted(sum(1 for line in f.read_text().splitlines() if line.strip()) for kg in holdout.kgs for f in kg.files)
        print(f"machine: {os.cpu_count()} cores, load average {_load()} at the start")
        print(f"benchmark: {len(holdout.kgs)} KGs of {sizes[0]:,}-{sizes[-1]:,} Turtle lines, {len(holdout.questions())} questions x {args.seeds} seeds "
              f"= {len(records)} answers; {switches / max(1, len(records) - 1):.0%} of answers on another KG than the one before; "
              f"{invalid / len(records):.0%} invalid or vacuous")
        # an installed kgeval has its bytecode compiled: a PYTHONDONTWRITEBYTECODE shell would
        # otherwise have every kgeval process compile its ~28k lines again (~10% of its samples)
        compileall.compile_dir(str(REPO / "kgeval"), quiet=1)
        raw_argv = [sys.executable, "-c", RAW_SCRIPT, str(holdout_root), str(replay)]

        def kgeval_argv(i: int) -> list[str]:
            return [sys.executable, "-m", "kgeval", "run", "--system", "replay", "--replay", str(replay), "--seeds", str(args.seeds),
                    "--holdout", str(holdout_root), "--gold", str(tmp / "gold"), "--db", str(tmp / f"run-{i}.duckdb")]  # fmt: skip

        print(f"{'run':>4} {'raw s':>7} {'kgeval s':>9} {'x raw':>7} {'raw CPU s':>10} {'kgeval CPU s':>13} {'CPU x raw':>10}")
        raw = [run_process(raw_argv, tmp)]
        ratios, cpu_ratios, verdicts = [], [], []
        for i in range(args.repeat):
            wall, cpu, stdout = run_process(kgeval_argv(i), tmp)
            raw.append(run_process(raw_argv, tmp))
            raw_wall, raw_cpu = (raw[-2][0] + raw[-1][0]) / 2, (raw[-2][1] + raw[-1][1]) / 2
            ratios.append(wall / raw_wall)
            cpu_ratios.append(cpu / raw_cpu)
            print(f"{i + 1:>4} {raw_wall:>7.3f} {wall:>9.3f} {ratios[-1]:>6.2f}x {raw_cpu:>10.3f} {cpu:>13.3f} {cpu_ratios[-1]:>9.2f}x", flush=True)
            verdicts.append(run_rows(tmp / f"run-{i}.duckdb", stdout.strip().splitlines()[-1]))
        print(f"load average {_load()} at the end")
        print(f"kgeval run / raw script, both processes from their start: median {statistics.median(ratios):.2f}x wall "
              f"(best {min(ratios):.2f}x; target: within 3x), median {statistics.median(cpu_ratios):.2f}x CPU (best {min(cpu_ratios):.2f}x)")
        print(f"raw = a plain script loading the {len(holdout.kgs)} KGs into pyoxigraph and executing {raw[0][2].strip()} texts that parse, "
              "the mean of the passes before and after each run")
        failed = False
        for i, other in enumerate(verdicts[1:], start=2):
            if len(diff := verdict_parity.differences(verdicts[0], other)) > 1:
                print(f"verdicts of run {i} against run 1's: " + "\n".join(diff))
                failed = True
        if not failed:
            print(f"verdicts: {len(verdicts[0])} rows (attempts and verdicts), the same field for field in all {len(verdicts)} runs")
        if args.save_verdicts:
            args.save_verdicts.write_text(json.dumps(verdicts[0], sort_keys=True, indent=0), encoding="utf-8")
            print(f"verdicts written to {args.save_verdicts}")
        if args.compare_verdicts:
            diff = verdict_parity.differences(json.loads(args.compare_verdicts.read_text()), verdicts[0])
            print(f"verdicts against {args.compare_verdicts}: " + "\n".join(diff))
            failed = failed or len(diff) > 1
        if failed:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
