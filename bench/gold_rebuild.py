"""Rebuild the sample holdout's gold and split the time: kgeval's own work vs the store's.

Time "in the store" is measured around pyoxigraph's own calls only (Store.query and each
step of its result iterator); everything else (parsing for the guard, term conversion,
row capping, hashing, writing) is kgeval's.

    python bench/gold_rebuild.py [--holdout holdout] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kgeval.config import GoldConfig  # noqa: E402
from kgeval.gold import rebuild_gold  # noqa: E402
from kgeval.holdout import load_holdout  # noqa: E402
from kgeval.stores import EmbeddedStore  # noqa: E402
from kgeval.stores._query import _analyse  # noqa: E402


class _Clock:
    seconds = 0.0


class _TimedIterator:
    def __init__(self, inner, clock: _Clock) -> None:  # noqa: ANN001
        self._inner, self._clock = inner, clock
        self.variables = getattr(inner, "variables", None)

    def __iter__(self):  # noqa: ANN204
        return self

    def __next__(self):  # noqa: ANN204
        t0 = time.perf_counter()
        try:
            return next(self._inner)
        finally:
            self._clock.seconds += time.perf_counter() - t0

    def __bool__(self) -> bool:
        return bool(self._inner)


class _TimedStore:
    """Wraps a pyoxigraph Store and times its query calls and result iteration."""

    def __init__(self, inner, clock: _Clock) -> None:  # noqa: ANN001
        self._inner, self._clock = inner, clock

    def query(self, query: str, **kwargs):  # noqa: ANN003, ANN201
        t0 = time.perf_counter()
        result = self._inner.query(query, **kwargs)
        self._clock.seconds += time.perf_counter() - t0
        return result if isinstance(result, bool) or not hasattr(result, "__next__") else _TimedIterator(result, self._clock)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holdout", type=Path, default=Path("holdout"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    holdout = load_holdout(args.holdout)
    print(f"holdout {args.holdout}: {len(holdout.kgs)} KGs, {len(holdout.questions())} questions")
    print(f"{'run':>4} {'total s':>9} {'load s':>8} {'store s':>9} {'kgeval s':>9} {'kgeval share':>13}")
    for i in range(args.repeat):
        _analyse.cache_clear()  # each run pays for parsing, as a fresh process would
        clock = _Clock()

        def store_for(kg, clock=clock):  # noqa: ANN001, ANN202
            store = EmbeddedStore(kg.files)
            store._store = _TimedStore(store._store, clock)  # measure inside pyoxigraph only
            return store

        with tempfile.TemporaryDirectory() as out:
            report = rebuild_gold(holdout, store_for, GoldConfig(), Path(out))
        assert report.ok, report.failures
        query_total = report.total_seconds - report.load_seconds
        own = query_total - clock.seconds
        print(f"{i + 1:>4} {report.total_seconds:>9.3f} {report.load_seconds:>8.3f} {clock.seconds:>9.3f} {own:>9.3f} {own / query_total:>12.1%}")
    print("run 1 also pays one-time warm-up (rdflib's grammar, imports).")
    print("load = building the stores from KG files; store = inside pyoxigraph's query calls;")
    print("kgeval = the rest of query handling (guard parse, term conversion, capping, hashing, writing).")


if __name__ == "__main__":
    main()
