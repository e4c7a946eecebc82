"""Peak memory of an UNCHANGED gold rebuild (every entry reused) against the number of questions.

For each --questions N: a generated holdout of one KG (bench/gold_rebuild.py's generator) is
built once (force), then rebuilt unchanged in a fresh process, whose peak resident size
(ru_maxrss) is printed after loading the holdout and the store, and after the rebuild. The
difference is what the reuse of the previous gold costs. Run it with another checkout first on
PYTHONPATH to measure that checkout's rebuild on the same files.

    python bench/gold_reuse_memory.py [--questions 1000,10000] [--triples 50000] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.append(str(REPO))  # last: a checkout given in PYTHONPATH wins
sys.path.append(str(REPO / "bench"))


def _rebuild(holdout_dir: Path, gold: Path, force: bool) -> None:
    """In this process: load, rebuild, print the peak RSS (MB) before and after, and the time."""
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.holdout import load_holdout
    from kgeval.stores import EmbeddedStore

    holdout = load_holdout(holdout_dir)
    stores = {kg.id: EmbeddedStore(kg.files) for kg in holdout.kgs}
    for store in stores.values():
        store.load()  # the KGs in memory before the figure below (else loaded on first use)
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    report = rebuild_gold(holdout, lambda kg: stores[kg.id], GoldConfig(), gold, force=force)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{loaded:.0f} {peak:.0f} {seconds:.2f} {len(report.built)} {len(report.reused)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", default="1000,10000")
    parser.add_argument("--triples", type=int, default=50_000)
    parser.add_argument("--workdir", type=Path, default=None, help="keep holdouts and golds here (built once, reused)")
    parser.add_argument("--_rebuild", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._rebuild:
        _rebuild(Path(args._rebuild[0]), Path(args._rebuild[1]), args._rebuild[2] == "force")
        return
    from gold_rebuild import generate_holdout

    import kgeval

    print(f"kgeval from {Path(kgeval.__file__).parent}; KG of ~{args.triples:,} triples")
    print(f"{'questions':>9} {'RSS loaded MB':>14} {'RSS peak MB':>12} {'reuse MB':>9} {'unchanged rebuild s':>20}")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or Path(tmp)
        for n in (int(x) for x in args.questions.split(",")):
            root, gold = work / f"h{n}", work / f"gold{n}"
            if not root.exists():
                generate_holdout(root, n, 1, args.triples)
            if not gold.exists():
                _child(root, gold, "force")
            loaded, peak, seconds, built, reused = _child(root, gold, "unchanged").split()
            assert int(built) == 0 and int(reused) == n, f"{n} questions: {built} executed, {reused} reused"
            print(f"{n:>9} {loaded:>14} {peak:>12} {int(peak) - int(loaded):>9} {float(seconds):>20.2f}", flush=True)


def _child(root: Path, gold: Path, mode: str) -> str:
    done = subprocess.run([sys.executable, __file__, "--_rebuild", str(root), str(gold), mode], capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


if __name__ == "__main__":
    main()
