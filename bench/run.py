"""A replay run's time as a ratio to the raw engine time of its candidate queries.

Generates a multi-KG holdout (several KGs of a few thousand people, departments and projects,
questions of every type with messy reference SPARQL: mixed-case keywords, comments, nested
sub-selects, aggregates with AS, ORDER BY ... LIMIT), builds its gold, and writes a replay
file of N predictions over questions x seeds: most seeds repeat the reference or a variant of
it (seeds repeat texts, as real models do), some are wrong, reformatted, do not parse, give an
answer list only, or are missing.

Then, in this one process:
- raw engine: pyoxigraph's own `Store.query` on every prediction's candidate SPARQL, every
  solution and term read (what a bare loop over the replay file would cost), once before and
  once after each run (their mean is the baseline), and the same for the distinct texts only;
- the run: `execute_run` with the replay system (guard, execution, judges, DuckDB writes),
  a checklist that passes at once (the checklist's cost is not the run path's).

Prints the run time as a ratio to the raw engine time (target: within 2x; best and median),
the CPU of the run process and of its sandbox processes apart (on two cores their sum / 2
bounds the wall from below), then where one more run's time goes: store and gold loading, the guard's parsing, the sandbox
round trips (candidate queries run in worker processes), the rest of candidate execution
(terms, results), trusted in-process queries, the judges, the DuckDB writes. Each run starts
with the process's caches emptied (parsed queries, built terms), as a fresh `kgeval run` would.

    python bench/run.py [--predictions 1050] [--kgs 4] [--people 1500] [--repeat 3] [--judges-passes 15]

With `--judges-passes N`, one more run's judge calls are replayed N times with fresh judges and
their CPU alone printed (best and median): a figure the load of a shared machine moves less than
the shares table's wall seconds.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyoxigraph as ox  # noqa: E402
import yaml  # noqa: E402

from kgeval.config import GoldConfig, KgevalConfig, RunConfig  # noqa: E402
from kgeval.gold import GoldIndex, rebuild_gold  # noqa: E402
from kgeval.holdout import load_holdout, seal_holdout  # noqa: E402
from kgeval.judges import judges_from_config  # noqa: E402
import kgeval.gold._store as gold_store_module  # noqa: E402
import kgeval.gold._index as gold_index_module  # noqa: E402
import kgeval.runs._attempt as attempt_module  # noqa: E402
import kgeval.runs._run as run_module  # noqa: E402
import kgeval.judges._execution as execution_module  # noqa: E402
import kgeval.judges._execution_rules as execution_rules_module  # noqa: E402
import kgeval.stores._base as base_module  # noqa: E402
import kgeval.stores._query as query_module  # noqa: E402
import kgeval.stores._value_size as value_size_module  # noqa: E402
import kgeval.stores._rewrite as rewrite_module  # noqa: E402
import kgeval.stores._factory as factory_module  # noqa: E402
import kgeval.stores._results as results_module  # noqa: E402
from kgeval.stores._sandbox import WorkerPool, stop_zygote  # noqa: E402
from kgeval.runs import ResultsDB, execute_run  # noqa: E402
from kgeval.runs._journal import RunJournal  # noqa: E402
from kgeval.runs._model import Receipt  # noqa: E402
from kgeval.stores import EmbeddedStore  # noqa: E402
from kgeval.stores._query import _analyse  # noqa: E402
from kgeval.systems import ReplaySystem  # noqa: E402

DOMAINS = ("hr", "retail", "pharma", "energy", "logistics", "media", "banking", "travel")
PREFIXES = "PREFIX ex: <{ns}vocab/>\nPREFIX e: <{ns}e/>\nPREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"


def kg_turtle(ns: str, people: int, rng: random.Random) -> str:
    """A company graph: people in departments and projects, with ages, salaries, labels."""
    depts, projects = max(4, people // 60), max(6, people // 25)
    lines = [f"@prefix ex: <{ns}vocab/> .", f"@prefix e: <{ns}e/> .",
             "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .", "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> ."]  # fmt: skip
    for d in range(depts):
        lines.append(f'e:d{d} a ex:Dept ; rdfs:label "Dept {d}"@en, "Abteilung {d}"@de ; ex:budget "{rng.randint(1, 90) * 1000}"^^xsd:integer .')
    for j in range(projects):
        lines.append(f'e:j{j} a ex:Project ; rdfs:label "Project {j}"@en ; ex:ownedBy e:d{rng.randrange(depts)} .')
    for p in range(people):
        salary = f"{rng.randint(30, 180)}{rng.randint(0, 999):03d}.{rng.randint(0, 99):02d}"
        members = " ; ".join(f"ex:memberOf e:j{rng.randrange(projects)}" for _ in range(rng.randint(0, 3)))
        lines.append(
            f'e:p{p} a ex:Person ; rdfs:label "Person {p}"@en ; ex:age "{rng.randint(20, 66)}"^^xsd:integer ; '
            f'ex:salary "{salary}"^^xsd:decimal ; ex:worksIn e:d{rng.randrange(depts)}'
            + (f" ; ex:manages e:p{rng.randrange(people)}" if rng.random() < 0.1 else "")
            + (f" ; {members}" if members else "") + " ."
        )
    return "\n".join(lines) + "\n"


def question_templates(rng: random.Random, people: int) -> list[tuple[str, str, list[str]]]:
    """(question, SPARQL body without prefixes, tags): one of each shape, messy on purpose."""
    p, d, j, age = rng.randrange(people), rng.randrange(max(4, people // 60)), rng.randrange(max(6, people // 25)), rng.randint(25, 60)
    return [
        (f"Where does person {p} work?", f"select ?d where {{ e:p{p} ex:worksIn ?d }}", ["lookup"]),
        (f"Who works in dept {d}?", f"SELECT DISTINCT ?p WHERE {{\n  ?p ex:worksIn e:d{d} . # staff\n}}", ["list"]),
        (f"How many people are older than {age}?", f"Select (COUNT(?p) AS ?n) Where {{ ?p a ex:Person ; ex:age ?a . FILTER(?a > {age}) }}", ["count"]),
        (f"Is person {p} in dept {d}?", f"ASK {{ e:p{p} ex:worksIn e:d{d} }}", ["ask"]),
        ("Average salary per department?", "select ?d (avg(?s) as ?avg) where { ?p ex:worksIn ?d ; ex:salary ?s } group by ?d", ["aggregate"]),
        (f"Top 5 earners of dept {d}?", f"SELECT ?p ?s WHERE {{ ?p ex:worksIn e:d{d} ; ex:salary ?s }} ORDER BY DESC(?s) ?p LIMIT 5", ["order-limit"]),
        ("Departments with more than 20 people?",
         "SELECT ?d ?n WHERE {\n  { select ?d (count(?p) as ?n) where { ?p ex:worksIn ?d } GROUP BY ?d }\n  FILTER(?n > 20)\n}", ["aggregate"]),
        (f"German name of dept {d}?", f'SELECT ?l WHERE {{ e:d{d} rdfs:label ?l FILTER(lang(?l) = "de") }}', ["lookup", "lang-literal"]),
        (f"Who is on project {j} with its owner?",
         f"SELECT ?p ?o WHERE {{ ?p ex:memberOf e:j{j} . e:j{j} ex:ownedBy ?o . }} # two hops", ["multi-hop", "list"]),
        ("List every person.", "SELECT ?p WHERE { ?p a ex:Person }", ["large-list"]),
    ]


ANSWER_KINDS = {
    "reference": lambda ref, prefixes, rng: {"sparql": prefixes + ref},
    "reformatted": lambda ref, prefixes, rng: {"sparql": "# reformatted by the model\n" + prefixes + ref.replace("{", "{ ").replace("}", " }\n")},
    "wrong": lambda ref, prefixes, rng: {"sparql": prefixes + ref.replace("ex:worksIn", "ex:memberOf").replace("LIMIT 5", "LIMIT 7")},
    "prefixes forgotten": lambda ref, prefixes, rng: {"sparql": ref + " # prefixes forgotten"},  # undeclared prefix: does not parse
    "brace lost": lambda ref, prefixes, rng: {"sparql": prefixes + ref.replace("}", "", 1)},  # does not parse
    "answer list": lambda ref, prefixes, rng: {"answer": [f"e:p{rng.randrange(100)}"]},
    "no such property": lambda ref, prefixes, rng: {"sparql": prefixes + "SELECT ?x WHERE { ?x ex:noSuchProperty ?y }"},  # vacuous: no rows
    "empty answer": lambda ref, prefixes, rng: {"answer": []},  # vacuous: states nothing
}
"""How a recorded answer is made from its question's reference SPARQL body."""
SHARES = ((0.55, "reference"), (0.65, "reformatted"), (0.80, "wrong"), (0.90, "prefixes forgotten"), (0.95, "brace lost"), (1.0, "answer list"))
"""This bench's answers: (upper bound of the roll, kind), in order."""


def candidate_for(reference: str, prefixes: str, seed_roll: float, rng: random.Random, shares: tuple = SHARES) -> dict:
    """One prediction of the kind `seed_roll` falls in (`shares`): by default the reference (most
    seeds), a reformatting, a wrong variant, a text that does not parse, an answer list only."""
    return ANSWER_KINDS[next(kind for bound, kind in shares if seed_roll < bound)](reference, prefixes, rng)


def write_bench_holdout(root: Path, predictions: int, kgs: int, people: int, seeds: int) -> tuple[Path, Path]:
    """The holdout under root/holdout and the replay file root/replay.jsonl."""
    rng = random.Random(13)
    per_kg = -(-predictions // (kgs * seeds))
    records = []
    for k in range(kgs):
        kg, ns = f"{DOMAINS[k % len(DOMAINS)]}{k}", f"http://example.org/bench{k}/"
        prefixes = PREFIXES.format(ns=ns)
        (root / "holdout" / kg).mkdir(parents=True)
        (root / "holdout" / kg / "kg.ttl").write_text(kg_turtle(ns, people, rng), encoding="utf-8")
        questions = []
        while len(questions) < per_kg:
            for text, body, tags in question_templates(rng, people):
                qid = f"{kg}-{len(questions) + 1:04d}"
                questions.append({"id": qid, "question": text, "sparql": prefixes + body, "domain": kg, "tags": tags})
                for seed in range(seeds):
                    rec = {"kg": kg, "question_id": qid, "seed": seed, **candidate_for(body, prefixes, rng.random(), rng)}
                    if rng.random() > 0.02:  # a few records missing: a harness error, not scored
                        records.append(rec)
                if len(questions) == per_kg:
                    break
        doc = {"kg": kg, "title": f"bench KG {k}", "questions": questions}
        (root / "holdout" / kg / "questions.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    seal_holdout(root / "holdout")
    replay = root / "replay.jsonl"
    replay.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return root / "holdout", replay


def load_stores(holdout) -> dict[str, ox.Store]:  # noqa: ANN001 - a Holdout
    """Each KG of the holdout in its own pyoxigraph store, by KG id."""
    stores = {}
    for kg in holdout.kgs:
        stores[kg.id] = ox.Store()
        for path in kg.files:
            stores[kg.id].bulk_load(path=str(path), format=ox.RdfFormat.TURTLE)
    return stores


def raw_engine_seconds(holdout_root: Path, replay: Path, *, distinct: bool) -> tuple[float, int, float]:
    """pyoxigraph alone on the replay's candidate queries: (seconds inside the engine, queries,
    CPU seconds of this process meanwhile)."""
    stores = load_stores(load_holdout(holdout_root))
    texts = [(r["kg"], r["sparql"]) for r in map(json.loads, replay.read_text().splitlines()) if r.get("sparql")]
    if distinct:
        texts = list(dict.fromkeys(texts))
    started, cpu = time.perf_counter(), time.process_time()
    for kg, text in texts:
        try:
            result = stores[kg].query(text)
        except (SyntaxError, OSError, RuntimeError):
            continue
        if isinstance(result, ox.QuerySolutions):
            for solution in result:
                for term in solution:
                    term  # noqa: B018 - reading every term is part of the engine's work
    return time.perf_counter() - started, len(texts), time.process_time() - cpu


def _passing_checklist(plan, db):  # noqa: ANN001, ANN202, ARG001 - the bench measures the run path only
    return Receipt(checklist_sha256="bench", items=[])


class _Timers:
    """Seconds spent inside named functions, summed over every thread, and their call counts."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def wrap(self, label: str, fn):  # noqa: ANN001, ANN201
        def timed(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                with self._lock:
                    self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - t0
                    self.calls[label] = self.calls.get(label, 0) + 1

        return timed


class _TimedEngine:
    """A pyoxigraph Store whose query calls and result iteration are timed (the engine alone)."""

    def __init__(self, inner: ox.Store, timers: _Timers) -> None:
        self._inner, self._timers = inner, timers

    def query(self, query: str, **kwargs):  # noqa: ANN003, ANN201
        result = self._timers.wrap("engine", self._inner.query)(query, **kwargs)
        if isinstance(result, ox.QuerySolutions):
            return _TimedSolutions(result, self._timers)
        return result


class _TimedSolutions:
    def __init__(self, inner: ox.QuerySolutions, timers: _Timers) -> None:
        self._next, self.variables = timers.wrap("engine", inner.__next__), inner.variables

    def __iter__(self):  # noqa: ANN204
        return self

    def __next__(self):  # noqa: ANN204
        return self._next()


def forget_process_caches() -> None:
    """Empty every cache a process keeps across runs, so each run pays for parsing and term
    building as a fresh `kgeval run` would."""
    _analyse.cache_clear()
    query_module.terminals.cache_clear()
    query_module._shape_of.cache_clear()
    query_module.mentioned_iris.cache_clear()
    value_size_module.estimated_value_bytes.cache_clear()
    rewrite_module.order_variables.cache_clear()
    query_module._algebra.cache_clear()
    execution_module.order_keys.cache_clear()
    execution_rules_module.lists_pairs_once.cache_clear()
    results_module._TERMS.clear()
    gold_store_module._SCANNED.clear()
    gold_index_module._VERIFIED.clear()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sandbox_start_cpu(holdout, workers: int) -> tuple[float, float]:  # noqa: ANN001 - a Holdout
    """(CPU s, wall s) of starting the sandbox of every KG and nothing else, as a run starts it:
    the zygote, each KG's template loading its KG, `workers` workers forked from each; no query.
    A fixed cost of the run that the raw baseline does not pay (it loads its stores before its
    clock starts)."""
    cpu0, wall0 = _children_cpu(), time.perf_counter()
    stores = [EmbeddedStore(kg.files, local_copy=False) for kg in holdout.kgs]
    for store in stores:
        store.start_ahead(workers)
    deadline = time.monotonic() + 300
    while sum(len(s.sandbox.worker_pids()) for s in stores) < workers * len(stores) and time.monotonic() < deadline:
        time.sleep(0.005)
    wall = time.perf_counter() - wall0
    for store in stores:
        store.close()
    stop_zygote()  # reaps the zygote, which reaped the templates: their CPU counts now
    return _children_cpu() - cpu0, wall


def timed_run(holdout_root: Path, gold: Path, replay: Path, db_path: Path, cfg: KgevalConfig) -> tuple[float, int, float, float]:
    """(seconds of execute_run, attempts written, CPU seconds of this process, CPU seconds of the
    sandbox processes it started: the zygote, templates and workers). CPU is a figure the other
    loads of a shared machine disturb less than time; on two cores the two CPU figures together
    bound the wall time from below (their sum / 2)."""
    forget_process_caches()
    holdout = load_holdout(holdout_root)
    with ResultsDB(db_path) as db:
        started, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
        meta = execute_run(holdout, gold, ReplaySystem(replay), cfg, db, checklist=_passing_checklist)
        seconds, own_cpu = time.perf_counter() - started, time.process_time() - cpu
        gc.collect()  # the run's stores are closed: their workers are reaped and counted
        stop_zygote()  # and the templates, reaped by the zygote: counted once it is reaped (a fresh process starts its own)
        sandbox_cpu = _children_cpu() - children
        attempts = len(db.attempts(meta.run_id))
    return seconds, attempts, own_cpu, sandbox_cpu


def run_with_shares(holdout_root: Path, gold: Path, replay: Path, db_path: Path, cfg: KgevalConfig) -> tuple[float, _Timers]:
    """One more run with timers around each area of the run path (a little overhead each)."""
    timers = _Timers()

    def open_timed_store(config, files, kg=None, **kwargs):  # noqa: ANN001, ANN003, ANN202
        store = original["open_store"](config, files, kg, **kwargs)
        if isinstance(store, EmbeddedStore) and store._store is not None:  # a run's stores hold no local copy
            store._local_store = _TimedEngine(store._store, timers)
        return store

    original = {"open_store": factory_module.open_store, "guard_query": base_module.guard_query, "judge": attempt_module.judge_candidate,
                "execute": EmbeddedStore.execute_candidate, "write": ResultsDB.append_attempt_rows, "journal": RunJournal.append, "index_gold": run_module.index_gold, "entry": GoldIndex.entry,
                "sandbox": WorkerPool.run, "trusted": EmbeddedStore._trusted}  # fmt: skip
    factory_module.open_store = timers.wrap("store loading", open_timed_store)
    run_module.index_gold = timers.wrap("gold loading", original["index_gold"])  # the verifying scan
    # each entry read when its question starts, on the worker threads: summed over threads, so
    # not a share of the run's wall time to subtract
    GoldIndex.entry = timers.wrap("gold entries", original["entry"])
    executing = threading.local()  # the guard's time inside candidate execution, to subtract from it

    def execute_candidate(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        executing.now = True
        try:
            return original["execute"](*args, **kwargs)
        finally:
            executing.now = False

    def guard_query(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        label = "guard in execution" if getattr(executing, "now", False) else "guard elsewhere"
        return timers.wrap(label, original["guard_query"])(*args, **kwargs)

    base_module.guard_query = guard_query
    attempt_module.judge_candidate = timers.wrap("judges", original["judge"])
    EmbeddedStore.execute_candidate = timers.wrap("execute", execute_candidate)
    WorkerPool.run = timers.wrap("sandbox", original["sandbox"])
    EmbeddedStore._trusted = timers.wrap("trusted", original["trusted"])  # the judges' lookups, through the same workers
    ResultsDB.append_attempt_rows = timers.wrap("DuckDB writes", original["write"])
    RunJournal.append = timers.wrap("journal lines", original["journal"])
    try:
        seconds, _, _, _ = timed_run(holdout_root, gold, replay, db_path, cfg)
    finally:
        factory_module.open_store, base_module.guard_query = original["open_store"], original["guard_query"]
        attempt_module.judge_candidate, EmbeddedStore.execute_candidate = original["judge"], original["execute"]
        WorkerPool.run, EmbeddedStore._trusted = original["sandbox"], original["trusted"]
        ResultsDB.append_attempt_rows, run_module.index_gold, GoldIndex.entry = original["write"], original["index_gold"], original["entry"]
        RunJournal.append = original["journal"]
    return seconds, timers


def judges_replayed(holdout_root: Path, gold: Path, replay: Path, db_path: Path, cfg: KgevalConfig, passes: int) -> list[float]:
    """CPU seconds of the judges alone, once per pass: one more run records every
    `judge_candidate` call (its question, gold, candidate and ties), then each pass judges them
    all again in order with judges built afresh from the configuration and the process's caches
    emptied, as a run's judges start. The KG's labels the candidates' lookups fetched during the
    run stay fetched (the trusted queries are not the judges' CPU). Every pass must give the
    same verdicts."""
    calls, original = [], attempt_module.judge_candidate

    def recorded(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append((args, kwargs))
        return original(*args, **kwargs)

    attempt_module.judge_candidate = recorded
    try:
        timed_run(holdout_root, gold, replay, db_path, cfg)
    finally:
        attempt_module.judge_candidate = original
    seconds, verdicts = [], None
    for _ in range(passes):
        forget_process_caches()
        judges = judges_from_config(cfg.judges)
        cpu = time.process_time()
        judged = [original(args[0], judges, *args[2:], **kwargs) for args, kwargs in calls]
        seconds.append(time.process_time() - cpu)
        dumped = [[v.model_dump(mode="json") for v in pair[0]] for pair in judged]
        assert verdicts in (None, dumped), "a pass gave other verdicts"
        verdicts = dumped
    print(f"judges alone: {len(calls)} judge_candidate calls of one run replayed {passes} times with fresh judges: "
          f"CPU best {min(seconds):.3f} s, median {statistics.median(seconds):.3f} s")
    return seconds


def print_shares(seconds: float, timers: _Timers) -> None:
    t = timers.seconds
    rows = [
        ("store opening (hashing the KG files; the KG loads in the sandbox workers)", t.get("store loading", 0.0)),
        ("gold loading: the verifying scan before dispatch (kgeval/gold)", t.get("gold loading", 0.0)),
        ("gold entries read as their questions start (summed over threads)", t.get("gold entries", 0.0)),
        ("guard: query parsing (kgeval/stores/_query.py; every query, trusted ones too)", t.get("guard in execution", 0.0) + t.get("guard elsewhere", 0.0)),
        ("candidates' sandbox round trips: engine in the workers, IPC, worker start-up", t.get("sandbox", 0.0) - t.get("trusted", 0.0)),
        ("candidate execution besides guard and sandbox (terms, result)", t.get("execute", 0.0) - t.get("guard in execution", 0.0) - t.get("sandbox", 0.0) + t.get("trusted", 0.0)),
        ("trusted queries (labels, vocabulary) in the sandbox workers (within the judges)", t.get("trusted", 0.0)),
        ("in-process engine (none in a run: the run process holds no copy of the KG)", t.get("engine", 0.0)),
        ("judges (kgeval/judges)", t.get("judges", 0.0)),
        (f"journal lines, fsync'd (kgeval/runs/_journal.py; {timers.calls.get('journal lines', 0)} lines)", t.get("journal lines", 0.0)),
        (f"DuckDB writes (kgeval/runs/_db.py; {timers.calls.get('DuckDB writes', 0)} transactions)", t.get("DuckDB writes", 0.0)),
    ]
    print(f"where a run's time goes (one more run, one worker thread, {seconds:.3f} s; the writer thread overlaps the worker):")
    for label, value in rows:
        print(f"  {label:<72} {value:8.3f} s  {value / seconds:6.1%} of the run")


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg()) + " (1/5/15 min)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--predictions", type=int, default=1050)
    parser.add_argument("--kgs", type=int, default=4)
    parser.add_argument("--people", type=int, default=1500)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--no-shares", action="store_true", help="skip the table of where one more run's time goes")
    parser.add_argument("--judges-passes", type=int, default=0, help="also replay one more run's judge calls this many times with fresh judges (their CPU alone)")
    parser.add_argument("--persist-within-s", type=float, default=RunConfig().persist_within_s, help="run.persist_within_s (default: the configuration's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        holdout_root, replay = write_bench_holdout(tmp, args.predictions, args.kgs, args.people, args.seeds)
        holdout = load_holdout(holdout_root)
        report = rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp / "gold")
        assert report.ok, report.failures
        n_records = len(replay.read_text().splitlines())
        print(f"machine: {os.cpu_count()} cores, load average {_load()} at the start (ratios of one build move with the load)")
        sizes = sorted(map(len, load_stores(holdout).values()))
        print(f"holdout: {len(holdout.kgs)} KGs of {sizes[0]:,}-{sizes[-1]:,} triples ({sum(sizes):,} in all), {len(holdout.questions())} questions, "
              f"{args.seeds} seeds; {n_records} predictions in the replay")
        print(f"{'run':>4} {'raw all s':>10} {'raw distinct s':>15} {'run s':>8} {'attempts':>9} {'x raw all':>10} {'x raw distinct':>15} {'CPU x raw all':>14}"
              f" {'CPU run process s':>18} {'CPU sandbox s':>14}")
        ratios, cpu_ratios, run_cpus, sandbox_cpus = [], [], [], []
        for i in range(args.repeat):
            raw_before, n_all, raw_cpu_before = raw_engine_seconds(holdout_root, replay, distinct=False)
            raw_distinct, n_distinct, _ = raw_engine_seconds(holdout_root, replay, distinct=True)
            cfg = KgevalConfig(run=RunConfig(seeds=args.seeds, concurrency=args.concurrency, retry_backoff_s=0.0, persist_within_s=args.persist_within_s))
            seconds, attempts, run_cpu, sandbox_cpu = timed_run(holdout_root, tmp / "gold", replay, tmp / f"run-{i}.duckdb", cfg)
            cpu = run_cpu + sandbox_cpu
            run_cpus.append(run_cpu)
            sandbox_cpus.append(sandbox_cpu)
            # the raw loop again after the run: their mean is the baseline, so a slow or fast
            # moment of the shared machine on one side of the run moves the ratio less
            raw_after, _, raw_cpu_after = raw_engine_seconds(holdout_root, replay, distinct=False)
            raw_all, raw_cpu = (raw_before + raw_after) / 2, (raw_cpu_before + raw_cpu_after) / 2
            ratios.append(seconds / raw_all)
            cpu_ratios.append(cpu / raw_cpu)
            print(f"{i + 1:>4} {raw_all:>10.3f} {raw_distinct:>15.3f} {seconds:>8.3f} {attempts:>9} {ratios[-1]:>9.2f}x {seconds / raw_distinct:>14.2f}x {cpu_ratios[-1]:>13.2f}x"
                  f" {run_cpu:>18.3f} {sandbox_cpu:>14.3f}")
        print(f"load average {_load()} at the end")
        print(f"run / raw all: best {min(ratios):.2f}x, median {statistics.median(ratios):.2f}x over {len(ratios)} runs (target: within 2x); "
              f"CPU seconds (run: this process + its sandbox workers): best {min(cpu_ratios):.2f}x, median {statistics.median(cpu_ratios):.2f}x")
        print(f"CPU split (median): the run process {statistics.median(run_cpus):.3f} s, its sandbox processes (zygote, templates, workers) "
              f"{statistics.median(sandbox_cpus):.3f} s")
        print(f"raw all = {n_all} candidate texts executed one by one (the mean of a pass before and one after each run); raw distinct = the {n_distinct} distinct (KG, text) pairs")
        workers = min(args.concurrency, KgevalConfig().store.candidates.workers)
        start_cpu, start_wall = sandbox_start_cpu(holdout, workers)
        print(f"of which a fixed cost the raw baseline does not pay: starting the sandbox alone (the zygote, {len(holdout.kgs)} templates loading their KG, "
              f"{workers * len(holdout.kgs)} workers; no query) takes {start_cpu:.3f} s of CPU ({start_cpu / raw_cpu:.2f}x the raw pass's CPU), {start_wall:.3f} s wall")
        print("run = execute_run with the replay system: store opening, guard, execution, judges, DuckDB writes")
        if args.judges_passes:
            cfg = KgevalConfig(run=RunConfig(seeds=args.seeds, concurrency=1, retry_backoff_s=0.0, persist_within_s=args.persist_within_s))
            judges_replayed(holdout_root, tmp / "gold", replay, tmp / "judges.duckdb", cfg, args.judges_passes)
        if args.no_shares:
            return
        # one worker thread: with more, time waiting for a lock (rdflib's parser is serialized)
        # would be counted once per waiting thread
        cfg = KgevalConfig(run=RunConfig(seeds=args.seeds, concurrency=1, retry_backoff_s=0.0, persist_within_s=args.persist_within_s))
        print_shares(*run_with_shares(holdout_root, tmp / "gold", replay, tmp / "shares.duckdb", cfg))

if __name__ == "__main__":
    main()
