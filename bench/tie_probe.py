"""The gold rebuild's tie checks alone, reading the order probe as far as the check needs
(`EmbeddedStore.execute_probe`) and whole (every row up to `gold.tie_probe_rows`, as before),
each as a RATIO to raw pyoxigraph reading every cell of the same probe texts in process.

Runs every tie check (`find_ties`) of bench/gold_rebuild.py's generated holdout through the
sandbox workers, as `kgeval gold rebuild` does (`local_copy=False`), `--repeat` times, the two
ways alternated; prints per pass the wall and CPU seconds of each way (this process and the
stores' workers) and their ratios to raw, and checks that both ways decide every tie alike.

    python bench/tie_probe.py [--questions 300] [--kgs 3] [--triples 60000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gold_rebuild  # noqa: E402
from gold_rebuild import cpu_seconds, generate_holdout, timed_raw  # noqa: E402

from kgeval.config import GoldConfig  # noqa: E402
from kgeval.gold._ties import find_ties, needs_tie_check  # noqa: E402
from kgeval.holdout import load_holdout  # noqa: E402
from kgeval.stores import EmbeddedStore, ProbeCut, Store, guard_query, order_probe  # noqa: E402
from kgeval.stores._engine import load_kg  # noqa: E402


class WholeProbeStore(EmbeddedStore):
    """The embedded store reading every probe row up to the cap (the tie check's way before)."""

    def execute_probe(self, probe: str, cut: ProbeCut, *, timeout_s: float, row_cap: int):  # noqa: ANN201
        return Store.execute_probe(self, probe, cut, timeout_s=timeout_s, row_cap=row_cap)


def _checks(holdout, stores):  # noqa: ANN001, ANN202
    """(kg id, query, shape, limited result) of every question whose gold gets a tie check."""
    checks = []
    for question in holdout.questions():
        shape = guard_query(question.sparql)
        result = stores[question.kg].execute(question.sparql, timeout_s=60, row_cap=GoldConfig().row_cap)
        if needs_tie_check(shape, result):
            checks.append((question.kg, question.sparql, shape, result))
    return checks


def _timed(stores: dict, checks: list) -> tuple[float, float, list]:
    """Wall and CPU seconds of every tie check on `stores`, and what each decided."""
    probe_rows = GoldConfig().tie_probe_rows
    cpu, started, decided = cpu_seconds(stores), time.perf_counter(), []
    for kg, query, shape, result in checks:
        ties = find_ties(stores[kg], query, shape, result, timeout_s=60, probe_rows=probe_rows)
        decided.append(ties.model_dump_json())
    return time.perf_counter() - started, cpu_seconds(stores) - cpu, decided


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--kgs", type=int, default=3)
    parser.add_argument("--triples", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        holdout = load_holdout(generate_holdout(Path(tmp) / "generated", args.questions, args.kgs, args.triples))
        early = {kg.id: EmbeddedStore(kg.files, graphs=kg.graphs, local_copy=False) for kg in holdout.kgs}
        whole = {kg.id: WholeProbeStore(kg.files, graphs=kg.graphs, local_copy=False) for kg in holdout.kgs}
        for kg in holdout.kgs:
            gold_rebuild.RAW[id(early[kg.id])] = load_kg(kg.files, kg.graphs)
        checks = _checks(holdout, early)
        _checks(holdout, whole)  # starts the other stores' workers
        sent = [(early[kg], order_probe(query).text) for kg, query, _, _ in checks]
        print(f"{len(checks)} tie checks ({args.questions} questions, {args.kgs} KGs, {args.triples} triples)")
        print(f"{'pass':>4} {'raw s':>7} {'early s':>8} {'whole s':>8} {'early/raw wall':>15} {'whole/raw wall':>15} {'early/raw CPU':>14} {'whole/raw CPU':>14}")
        ratios: dict[str, list[float]] = {name: [] for name in ("ew", "ww", "ec", "wc")}
        for i in range(args.repeat):
            sides = [("early", early), ("whole", whole)] if i % 2 == 0 else [("whole", whole), ("early", early)]
            timed = {name: _timed(stores, checks) for name, stores in sides}
            raw, raw_cpu = timed_raw(sent)
            assert timed["early"][2] == timed["whole"][2], "the early stop decided a tie otherwise than the whole probe"
            (ew, ec, _), (ww, wc, _) = timed["early"], timed["whole"]
            for name, value in zip(ratios, (ew / raw, ww / raw, ec / raw_cpu, wc / raw_cpu)):
                ratios[name].append(value)
            print(f"{i + 1:>4} {raw:>7.3f} {ew:>8.3f} {ww:>8.3f} {ew / raw:>14.2f}x {ww / raw:>14.2f}x {ec / raw_cpu:>13.2f}x {wc / raw_cpu:>13.2f}x", flush=True)
        median = {name: statistics.median(values) for name, values in ratios.items()}
        print(f"median {'':>24} {median['ew']:>14.2f}x {median['ww']:>14.2f}x {median['ec']:>13.2f}x {median['wc']:>13.2f}x")
        for store in (*early.values(), *whole.values()):
            store.close()


if __name__ == "__main__":
    main()
