"""The judges' cache of prepared golds, shared by a run's worker threads."""

import random

from kgeval.judges._cache import GoldCache
from kgeval.stores import QueryResult


def test_golds_evicted_while_other_threads_read_them(race):
    golds = [QueryResult(form="select", vars=["x"], rows=[], total=n) for n in range(7)]
    prepared: list[int] = []
    cache = GoldCache(lambda gold: prepared.append(1) or ("prepared", gold.total), size=3)

    def read(k: int) -> None:
        rng = random.Random(k)
        for _ in range(3000):
            gold = rng.choice(golds)
            assert cache.get(gold) == ("prepared", gold.total)

    race(read, threads=8)
    assert len(prepared) > 7  # golds were evicted and prepared again


def test_a_cached_gold_is_prepared_once():
    gold = QueryResult(form="select", vars=["x"], rows=[], total=1)
    prepared: list[int] = []
    cache = GoldCache(lambda g: prepared.append(1) or object(), size=2)
    first = cache.get(gold)
    assert all(cache.get(gold) is first for _ in range(5))
    assert len(prepared) == 1
