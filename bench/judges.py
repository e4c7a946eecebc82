"""Judge throughput: 100,000 answers against 2,000-item golds; prints item checks per second.

    python bench/judges.py [--answers 100000] [--items 20] [--golds 50] [--repeat 3]

An item check is one answer item (a list item, or an executed result row) compared with a
gold. Golds are prepared once per gold object (cached), as in a run. Target: >= 1,000,000 item
checks per second on one core for the membership path (seed judge, answer lists).

The membership path is bound by memory latency when many large golds are judged in turn (each
answer text is looked up among its gold's 2,000 spellings, and 50 such golds are ~15 MB of
strings and tables): the bench also prints it with 1 and 10 golds in turn. For scale, the shipped
sample holdout has 9 questions on the membership path, with golds of 37 to 2,323 rows.

Calibration: the bench also times a bare `for _ in range(10_000_000): pass` at top level (CPU
seconds, best of 3) and prints the rates scaled to a reference core that runs it in 0.15-0.20 s
(a typical modern core). The measured figures are printed as measured; the scaled ones only help compare
machines (interpreter-bound code scales roughly with that loop, memory-bound code may not).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
import random
import statistics
import time

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

from kgeval.config import JudgesConfig  # noqa: E402
from kgeval.holdout import Question  # noqa: E402
from kgeval.judges import Candidate, judges_from_config  # noqa: E402
from kgeval.stores import QueryResult, Term  # noqa: E402

BASE = "http://bench.example/entities/Thing/"
Q = Question(id="b", question="?", sparql="SELECT ?x WHERE { ?x ?p ?o }", domain="d", kg="k")


def make_gold(g: int, size: int) -> QueryResult:
    rows = [[Term.iri(f"{BASE}{g}-{i}")] for i in range(size)]
    return QueryResult(form="select", vars=["x"], rows=rows, total=size)


def make_answers(n: int, items: int, golds: int, size: int, rng: random.Random) -> list[tuple[int, list[str]]]:
    """Answers as IRI strings: ~90% in their gold, ~10% not (so both branches run)."""
    out = []
    for a in range(n):
        g = a % golds
        out.append((g, [f"{BASE}{g}-{rng.randrange(size) if rng.random() < 0.9 else size + i}" for i in range(items)]))
    return out


REFERENCE_LOOP = (0.15, 0.20)
"""CPU seconds of the bare loop on a typical modern core (fast, slow end)."""


BARE_LOOP = compile("for _ in range(10_000_000): pass", "<bare loop>", "exec")


def bare_loop_seconds() -> float:
    """CPU seconds of `for _ in range(10_000_000): pass` run as a script's top level runs it
    (as `python -c` does: `_` is a global), best of 3."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        exec(BARE_LOOP, {})  # noqa: S102 - a constant loop
        best = min(best, time.process_time() - start)
    return best


def bench(label: str, judge, golds, make_candidates, repeat: int, loop: float) -> None:  # noqa: ANN001
    """Best and median of `repeat` passes, each over freshly built answers (new string objects,
    so every pass hashes its answers as a run does); the best is the least disturbed by the
    machine's other load (timeit's rule), the median shows the spread."""
    rates = []
    for _ in range(repeat):
        candidates = make_candidates()
        checks = sum(len(c.items) if c.items is not None else len(c.result.rows) for _, c in candidates)
        for g in golds:  # prepare golds outside the timing, as a run's first attempt would
            judge.judge(Q, g, candidates[0][1])
        start = time.process_time()  # CPU time of this process: robust when the machine is shared
        for g, candidate in candidates:
            judge.judge(Q, golds[g], candidate)
        rates.append(checks / (time.process_time() - start))
        del candidates
    best, median = max(rates), statistics.median(rates)
    low, high = (best * loop / ref for ref in reversed(REFERENCE_LOOP))
    print(
        f"{label:<38} {checks:>10,} item checks  best {best:>10,.0f}/s  median {median:>10,.0f}/s"
        f"  (reference core: {low:,.0f}-{high:,.0f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=100_000)
    parser.add_argument("--items", type=int, default=20, help="items (or result rows) per answer")
    parser.add_argument("--golds", type=int, default=50)
    parser.add_argument("--gold-size", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3, help="passes per judge (best and median printed)")
    args = parser.parse_args()
    golds = [make_gold(g, args.gold_size) for g in range(args.golds)]

    def answers(in_turn: int = args.golds) -> list[tuple[int, list[str]]]:
        return make_answers(args.answers, args.items, in_turn, args.gold_size, random.Random(4))

    def lists(in_turn: int = args.golds) -> list[tuple[int, Candidate]]:
        return [(g, Candidate(items=items)) for g, items in answers(in_turn)]

    def results() -> list[tuple[int, Candidate]]:
        return [
            (g, Candidate(result=QueryResult(form="select", vars=["x"], rows=[[Term.iri(i)] for i in items], total=len(items))))
            for g, items in answers()
        ]

    judges = judges_from_config(JudgesConfig())
    loop = bare_loop_seconds()
    print(
        f"calibration: bare loop of 10,000,000 iterations {loop:.3f}s CPU here, "
        f"{REFERENCE_LOOP[0]:.2f}-{REFERENCE_LOOP[1]:.2f}s on a reference core: this machine is "
        f"{loop / REFERENCE_LOOP[1]:.1f}-{loop / REFERENCE_LOOP[0]:.1f}x slower; reference-core rates (of the best pass) in brackets"
    )
    print(
        f"{args.answers:,} answers of {args.items} items against {args.golds} golds of {args.gold_size:,} rows, "
        f"best and median of {args.repeat} passes"
    )
    bench("seed (membership), answer lists", judges["seed"], golds, lists, args.repeat, loop)
    bench("seed (membership), executed results", judges["seed"], golds, results, args.repeat, loop)
    bench("execution, answer lists", judges["execution"], golds, lists, args.repeat, loop)
    bench("execution, executed results", judges["execution"], golds, results, args.repeat, loop)
    print("the membership path by golds in turn (fewer golds: less memory touched):")
    for few in sorted({1, 10} - {args.golds}):
        fresh = judges_from_config(JudgesConfig())["seed"]
        bench(f"seed (membership), lists, {few} gold{'s' if few > 1 else ''}", fresh, golds[:few], lambda few=few: lists(few), args.repeat, loop)


if __name__ == "__main__":
    main()
