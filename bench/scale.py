"""Scale figures: store load, gold rebuild and a replay run over one ~1M-triple KG with N
generated questions; times as RATIOS to raw pyoxigraph on the same query texts, and peak memory
per phase.

    python bench/scale.py [--triples 1000000] [--questions 1000] [--seeds 1] [--whole-kg-share 0.1]
                          [--workdir DIR] [--phases load,gold,run] [--tracemalloc]

The KG and questions come from the generator of `bench/run.py` (people, departments and projects
with rdfs:labels in two languages, integer, decimal and language-tagged literals; messy
reference SPARQL: mixed-case keywords, comments, sub-selects, aggregates with AS, ORDER BY ...
LIMIT), plus a second file of hire dates (xsd:date), flags (xsd:boolean) and e-mail strings and
one question shape over it. `--whole-kg-share` of the questions are shapes that read the whole
KG (counts and aggregates over every person, the list of every person: 125k+ rows); the others
are anchored on an entity (lookups, one department's staff, a project's members, ASK, top 5 of a
department), as most benchmark questions are. On a 1M-triple KG a whole-KG query costs the
engine ~0.5-1 s, an anchored one a few ms: the share, not kgeval, sets the absolute time.

Each phase runs in its own process (so each peak resident size, ru_maxrss, is that phase's):
- load: raw `pyoxigraph.Store.bulk_load` vs `EmbeddedStore(files)` (loading + file hashing);
- gold: `rebuild_gold` (force) vs raw pyoxigraph on exactly the texts it sent (bench/gold_rebuild.py's
  RecordingStore), then an unchanged rebuild; memory above the loaded store;
- run: `execute_run` with the replay system (sandbox workers, guard, judges, DuckDB) vs raw
  pyoxigraph on the replay's candidate texts (bench/run.py's raw_engine_seconds); the sandbox
  workers' peak (each holds its own copy of the KG) is read from RUSAGE_CHILDREN.
`--tracemalloc` also traces the Python heap's peak in the gold and run phases (it slows Python
code 2-3x: use those runs for memory, not time).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

import pyoxigraph as ox  # noqa: E402
import yaml  # noqa: E402

import gold_rebuild as gold_bench  # noqa: E402 - bench/gold_rebuild.py: RecordingStore, raw_seconds
import run as run_bench  # noqa: E402 - bench/run.py: the KG and question generator, the raw replay loop
from kgeval.config import GoldConfig, KgevalConfig, RunConfig  # noqa: E402
from kgeval.gold import rebuild_gold  # noqa: E402
from kgeval.holdout import load_holdout, seal_holdout  # noqa: E402
from kgeval.stores import EmbeddedStore  # noqa: E402
from kgeval.stores._sandbox import stop_zygote  # noqa: E402

TRIPLES_PER_PERSON = 9.75  # bench/run.py's graph (~6.8 a person) + this file's extra facts (~2.9)
WHOLE_KG_TAGS = {"count", "aggregate", "large-list"}  # bench/run.py's shapes that read every person
XSD = "http://www.w3.org/2001/XMLSchema#"


# ---- generation -------------------------------------------------------------------------


def extra_turtle(ns: str, people: int, rng: random.Random) -> str:
    """Hire dates, active flags and e-mails of every person: dates, booleans and plain strings."""
    lines = [f"@prefix ex: <{ns}vocab/> .", f"@prefix e: <{ns}e/> .", f"@prefix xsd: <{XSD}> ."]
    for p in range(people):
        date = f"{rng.randint(1995, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        mail = f' ; ex:email "person.{p}@example.org"' if rng.random() < 0.9 else ""
        lines.append(f'e:p{p} ex:hired "{date}"^^xsd:date ; ex:active {"true" if rng.random() < 0.8 else "false"}{mail} .')
    return "\n".join(lines) + "\n"


def hired_question(rng: random.Random, people: int) -> tuple[str, str, list[str]]:
    d, year = rng.randrange(max(4, people // 60)), rng.randint(2000, 2024)
    body = (f"SELECT ?p ?h WHERE {{\n  ?p ex:worksIn e:d{d} ; ex:hired ?h ; ex:active true .\n"
            f'  filter (?h >= "{year}-01-01"^^<{XSD}date>)  # still active\n}} order by ?h')  # fmt: skip
    return (f"Who in dept {d} joined since {year} and is still active?", body, ["list", "typed-literal"])


def pick_question(rng: random.Random, people: int, whole_kg_share: float) -> tuple[str, str, list[str]]:
    """One question: a whole-KG shape with probability `whole_kg_share`, else an anchored one."""
    shapes = run_bench.question_templates(rng, people) + [hired_question(rng, people)]
    whole = [s for s in shapes if WHOLE_KG_TAGS & set(s[2])]
    anchored = [s for s in shapes if not WHOLE_KG_TAGS & set(s[2])]
    return rng.choice(whole if rng.random() < whole_kg_share else anchored)


def generate(root: Path, triples: int, questions: int, seeds: int, whole_kg_share: float) -> None:
    """root/holdout (one KG: two Turtle files, `questions` questions, sealed) and root/replay.jsonl."""
    rng = random.Random(13)
    people = max(100, round(triples / TRIPLES_PER_PERSON))
    kg, ns = "corp", "http://example.org/scale/"
    prefixes = run_bench.PREFIXES.format(ns=ns)
    kg_dir = root / "holdout" / kg
    kg_dir.mkdir(parents=True)
    (kg_dir / "kg.ttl").write_text(run_bench.kg_turtle(ns, people, rng), encoding="utf-8")
    (kg_dir / "kg-extra.ttl").write_text(extra_turtle(ns, people, rng), encoding="utf-8")
    items, records = [], []
    for i in range(questions):
        text, body, tags = pick_question(rng, people, whole_kg_share)
        qid = f"{kg}-{i + 1:05d}"
        items.append({"id": qid, "question": text, "sparql": prefixes + body, "domain": kg, "tags": tags})
        for seed in range(seeds):
            records.append({"kg": kg, "question_id": qid, "seed": seed, **run_bench.candidate_for(body, prefixes, rng.random(), rng)})
    doc = {"kg": kg, "title": "scale bench KG", "questions": items}
    (kg_dir / "questions.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    seal_holdout(root / "holdout")
    (root / "replay.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


# ---- measuring, one phase per process ---------------------------------------------------


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident size now (VmRSS), or its peak since the last `reset_peak` (VmHWM)."""
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith(field + ":")) / 1024


def reset_peak() -> None:
    """Reset VmHWM to the current resident size (Linux >= 4.0), so the next peak is the next
    step's own: pyoxigraph's bulk load peaks ~35% above the loaded store, which would hide it."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def peak_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def cpu_s(who: int = resource.RUSAGE_SELF) -> float:
    """CPU seconds (user + system, every thread) used so far: on a shared machine it moves
    far less with the other jobs' load than wall time does."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def phase_load(root: Path, args: argparse.Namespace) -> dict:
    files = load_holdout(root / "holdout").kgs[0].files
    t0, cpu0 = time.perf_counter(), cpu_s()
    raw = ox.Store()
    for path in files:
        raw.bulk_load(path=str(path), format=ox.RdfFormat.TURTLE)
    raw_s, raw_cpu, triples = time.perf_counter() - t0, cpu_s() - cpu0, len(raw)
    del raw
    gc.collect()
    t0, cpu0 = time.perf_counter(), cpu_s()
    store = EmbeddedStore(files)
    store.load()  # loaded on first use otherwise
    kgeval_s, kgeval_cpu = time.perf_counter() - t0, cpu_s() - cpu0
    return {"triples": triples, "raw_load_s": raw_s, "kgeval_load_s": kgeval_s, "raw_load_cpu_s": raw_cpu, "kgeval_load_cpu_s": kgeval_cpu, "rss_loaded_mb": rss_mb(), "peak_mb": peak_mb(), "_keep": id(store)}


def phase_gold(root: Path, args: argparse.Namespace) -> dict:
    holdout = load_holdout(root / "holdout")
    t0 = time.perf_counter()
    stores = {kg.id: gold_bench.RecordingStore(kg.files) for kg in holdout.kgs}
    for store in stores.values():
        store.load()
    load_s, rss_loaded = time.perf_counter() - t0, rss_mb()
    reset_peak()
    if args.tracemalloc:
        tracemalloc.start()
    cpu0 = cpu_s()
    report = rebuild_gold(holdout, lambda kg: stores[kg.id], GoldConfig(), root / "gold", force=True)
    rebuild_cpu = cpu_s() - cpu0
    traced = tracemalloc.get_traced_memory()[1] / 2**20 if args.tracemalloc else None
    tracemalloc.stop()
    peak_rebuild = rss_mb("VmHWM")  # since the store was loaded
    sent = list(gold_bench.RecordingStore.sent)
    cpu0 = cpu_s()
    raw_s = gold_bench.raw_seconds(sent)
    raw_cpu = cpu_s() - cpu0
    engine_s, engine_cpu = engine_only_seconds(sent)
    again = rebuild_gold(holdout, lambda kg: stores[kg.id], GoldConfig(), root / "gold")
    assert not again.built, "an unchanged rebuild executed queries"
    peak_unchanged = rss_mb("VmHWM")
    return {
        "questions": len(holdout.questions()), "load_s": load_s, "rss_loaded_mb": rss_loaded,
        "rebuild_s": report.total_seconds - report.load_seconds, "raw_s": raw_s, "rebuild_cpu_s": rebuild_cpu, "raw_cpu_s": raw_cpu, "engine_only_s": engine_s, "engine_only_cpu_s": engine_cpu, "texts_sent": len(sent),
        "distinct_texts": len({t for _, t in sent}), "failed": len(report.failures), "flagged": {k: len(v) for k, v in report.flagged.items() if v},
        "peak_rebuild_mb": peak_rebuild, "unchanged_s": again.total_seconds, "peak_after_unchanged_mb": peak_unchanged, "peak_with_loading_mb": peak_mb(),
        "python_heap_peak_mb": traced,
    }  # fmt: skip


def phase_run(root: Path, args: argparse.Namespace) -> dict:
    cfg = KgevalConfig(run=RunConfig(seeds=args.seeds, concurrency=args.concurrency, retry_backoff_s=0.0))
    if args.tracemalloc:
        tracemalloc.start()
    cpu0 = cpu_s() + cpu_s(resource.RUSAGE_CHILDREN)
    seconds, timers = run_bench.run_with_shares(root / "holdout", root / "gold", root / "replay.jsonl", root / f"run-{time.time_ns()}.duckdb", cfg)
    traced = tracemalloc.get_traced_memory()[1] / 2**20 if args.tracemalloc else None
    tracemalloc.stop()
    gc.collect()  # the run's stores are collected: their sandbox workers are stopped and reaped
    stop_zygote()  # the templates' zygote too: their CPU and peak memory count once it is reaped
    time.sleep(1)
    peak_run, peak_workers = peak_mb(), peak_mb(resource.RUSAGE_CHILDREN)
    run_cpu = cpu_s() + cpu_s(resource.RUSAGE_CHILDREN) - cpu0  # the sandbox workers' CPU included
    raw_all, raw_cpu, n_all = raw_replay_seconds(root)
    raw_distinct, n_distinct = float("nan"), 0
    if not args.all_texts_only:
        raw_distinct, n_distinct, _ = run_bench.raw_engine_seconds(root / "holdout", root / "replay.jsonl", distinct=True)
    # the gold's verifying scan runs before dispatch; its entries are read on the worker threads
    # as their questions start (inside the run's time, like any other per-attempt work)
    loading = timers.seconds.get("store loading", 0.0) + timers.seconds.get("gold loading", 0.0)
    return {
        "run_s": seconds, "store_loading_s": timers.seconds.get("store loading", 0.0), "gold_loading_s": timers.seconds.get("gold loading", 0.0), "gold_entries_thread_s": timers.seconds.get("gold entries", 0.0),
        "run_without_loading_s": seconds - loading, "raw_all_s": raw_all, "run_cpu_s": run_cpu, "raw_all_cpu_s": raw_cpu, "candidate_texts": n_all, "raw_distinct_s": raw_distinct,
        "distinct_candidate_texts": n_distinct, "peak_run_mb": peak_run, "peak_worker_mb": peak_workers, "python_heap_peak_mb": traced,
        "shares_s": {k: round(v, 3) for k, v in timers.seconds.items()},
    }  # fmt: skip


def engine_only_seconds(sent: list) -> tuple[float, float]:
    """(wall s, CPU s) of pyoxigraph evaluating the same texts with no term read at all (each
    solution is only counted): the floor under any consumer. gold_rebuild.py's raw loop reads
    every cell of every row, beyond the row cap too, which kgeval only counts."""
    from kgeval.stores._functions import DERIVED_INTEGER_CASTS

    wall0, cpu0 = time.perf_counter(), cpu_s()
    for store, text in sent:
        try:
            result = store._store.query(text, custom_functions=DERIVED_INTEGER_CASTS)
        except (SyntaxError, OSError, RuntimeError):
            continue
        if isinstance(result, ox.QuerySolutions):
            sum(1 for _ in result)
        else:
            bool(result)
    return time.perf_counter() - wall0, cpu_s() - cpu0


def raw_replay_seconds(root: Path) -> tuple[float, float, int]:
    """(wall s, CPU s, texts): pyoxigraph alone on every candidate text of the replay, each
    solution's terms read: bench/run.py's raw loop (loading apart)."""
    wall, texts, cpu = run_bench.raw_engine_seconds(root / "holdout", root / "replay.jsonl", distinct=False)
    return wall, cpu, texts


PHASES = {"load": phase_load, "gold": phase_gold, "run": phase_run}


def run_phase_process(name: str, root: Path, args: argparse.Namespace) -> dict:
    command = [sys.executable, __file__, "--phase", name, "--workdir", str(root), "--seeds", str(args.seeds), "--concurrency", str(args.concurrency)]
    if args.tracemalloc:
        command.append("--tracemalloc")
    if args.all_texts_only:
        command.append("--all-texts-only")
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"phase {name} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["phase_wall_s"] = time.perf_counter() - started
    return result


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), platform.processor())
    load = os.getloadavg()
    return f"{os.cpu_count()} CPUs ({cpu}), load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, Python {platform.python_version()}, pyoxigraph {ox.__version__}"


def _heap_peak(r: dict, separator: str) -> str:
    """The phase's tracemalloc peak, when it was measured."""
    peak = r["python_heap_peak_mb"]
    return "" if peak is None else f"{separator}Python heap peak {peak:.0f} MB (tracemalloc)"


def report(results: dict[str, dict], args: argparse.Namespace) -> None:
    print(f"\nmachine at the end: {machine()}")
    if "load" in results:
        r = results["load"]
        print(f"load   {r['triples']:,} triples: kgeval {r['kgeval_load_s']:.1f} s, raw bulk_load {r['raw_load_s']:.1f} s "
              f"({r['kgeval_load_s'] / r['raw_load_s']:.2f}x; CPU {r['kgeval_load_cpu_s']:.1f} s / {r['raw_load_cpu_s']:.1f} s); RSS with the store loaded {r['rss_loaded_mb']:.0f} MB, peak {r['peak_mb']:.0f} MB")  # fmt: skip
    if "gold" in results:
        r = results["gold"]
        heap = _heap_peak(r, ", ")
        print(f"gold   {r['questions']:,} questions: rebuild {r['rebuild_s']:.1f} s, raw {r['raw_s']:.1f} s on the {r['texts_sent']:,} texts it sent "
              f"({r['distinct_texts']:,} distinct) = {r['rebuild_s'] / r['raw_s']:.2f}x; unchanged rebuild {r['unchanged_s']:.1f} s; "
              f"{r['failed']} failed; flagged {r['flagged']}")  # fmt: skip
        print(f"       CPU: rebuild {r['rebuild_cpu_s']:.1f} s, raw {r['raw_cpu_s']:.1f} s = {r['rebuild_cpu_s'] / r['raw_cpu_s']:.2f}x; "
              f"engine only (no term read) {r.get('engine_only_cpu_s', float('nan')):.1f} s = {r['rebuild_cpu_s'] / r.get('engine_only_cpu_s', float('nan')):.2f}x")  # fmt: skip
        print(f"       peak RSS during the rebuild {r['peak_rebuild_mb']:.0f} MB = store loaded {r['rss_loaded_mb']:.0f} MB + "
              f"{r['peak_rebuild_mb'] - r['rss_loaded_mb']:.0f} MB; {r['peak_after_unchanged_mb']:.0f} MB through the unchanged rebuild; "
              f"{r['peak_with_loading_mb']:.0f} MB with the bulk load's peak{heap}")  # fmt: skip
    if "run" in results:
        r = results["run"]
        heap = _heap_peak(r, "; ")
        print(f"run    {r['candidate_texts']:,} candidate texts ({args.seeds} seed(s)): run {r['run_s']:.1f} s (store loading {r['store_loading_s']:.1f} s, "
              f"gold scan {r['gold_loading_s']:.1f} s; entries read on the workers {r.get('gold_entries_thread_s', 0.0):.1f} s summed over threads); raw {r['raw_all_s']:.1f} s = {r['run_s'] / r['raw_all_s']:.2f}x, "
              f"{r['run_without_loading_s'] / r['raw_all_s']:.2f}x without loading"
              + (f"; raw on the {r['distinct_candidate_texts']:,} distinct texts {r['raw_distinct_s']:.1f} s" if r["distinct_candidate_texts"] else ""))  # fmt: skip
        print(f"       CPU: run {r['run_cpu_s']:.1f} s with its sandbox workers, the KG's load included (in its sandbox "
              f"template, whose forks are the workers; the run process loads no copy), raw {r['raw_all_cpu_s']:.1f} s = {r['run_cpu_s'] / r['raw_all_cpu_s']:.2f}x")  # fmt: skip
        print(f"       peak RSS {r['peak_run_mb']:.0f} MB (run process), {r['peak_worker_mb']:.0f} MB (largest sandbox worker){heap}; shares {r['shares_s']}")
    print("ratios: kgeval / raw pyoxigraph on the same query texts in the same process; store loading excluded unless said.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=int, default=1_000_000)
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--whole-kg-share", type=float, default=0.1, help="share of questions that read the whole KG (default 0.1)")
    parser.add_argument("--concurrency", type=int, default=RunConfig().concurrency)
    parser.add_argument("--workdir", type=Path, help="keep the generated holdout, gold and results here (reused when it holds a holdout)")
    parser.add_argument("--phases", default="load,gold,run")
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--all-texts-only", action="store_true", help="run phase: time raw pyoxigraph on every candidate text, not again on the distinct ones")
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:  # inside one phase's process
        result = PHASES[args.phase](args.workdir, args)
        result.pop("_keep", None)
        print(json.dumps(result))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = args.workdir or Path(tmp)
        print(f"machine at the start: {machine()}", flush=True)
        if not (root / "holdout").is_dir():
            t0 = time.perf_counter()
            generate(root, args.triples, args.questions, args.seeds, args.whole_kg_share)
            print(f"generated {args.questions:,} questions, {args.seeds} seed(s), ~{args.triples:,} triples in {time.perf_counter() - t0:.0f} s", flush=True)
        results = {}
        for name in args.phases.split(","):
            results[name] = run_phase_process(name, root, args)
            print(f"phase {name}: {json.dumps(results[name])}", flush=True)
        report(results, args)


if __name__ == "__main__":
    main()
