"""A small per-judge cache of prepared golds, so a gold is normalized once, not per answer."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from kgeval.stores import QueryResult

P = TypeVar("P")


class GoldCache(Generic[P]):
    """Prepared golds by object identity, least recently used first out.

    A run loads each gold once and judges every seed and judge against the same object, so
    identity is the cheap key (hashing a 2,000-row result per answer would cost more than
    judging it). The cache holds the gold itself, so an id cannot be reused while cached;
    golds are not mutated after loading.
    """

    def __init__(self, prepare: Callable[[QueryResult], P], size: int = 256) -> None:
        self._prepare = prepare
        self._size = size
        self._entries: OrderedDict[int, tuple[QueryResult, P]] = OrderedDict()

    def get(self, gold: QueryResult) -> P:
        key = id(gold)
        entry = self._entries.get(key)
        if entry is not None and entry[0] is gold:
            self._entries.move_to_end(key)
            return entry[1]
        prepared = self._prepare(gold)
        self._entries[key] = (gold, prepared)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)
        return prepared
