"""A small per-judge cache of prepared results, so a gold is normalized once, not per answer,
and an answer the seeds of a question share (one execution, `runs.ExecutionCache`) once, not
per seed."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from kgeval.stores import QueryResult

P = TypeVar("P")


class GoldCache(Generic[P]):
    """Prepared golds (or answers) by object identity, least recently used first out.

    A run loads each gold once and judges every seed and judge against the same object, so
    identity is the cheap key (hashing a 2,000-row result per answer would cost more than
    judging it). The cache holds the gold itself, so an id cannot be reused while cached;
    golds are not mutated after loading. A run's worker threads share it: its bookkeeping is
    locked, a gold is prepared outside the lock, and one prepared copy is kept.
    """

    def __init__(self, prepare: Callable[[QueryResult], P], size: int = 256) -> None:
        self._prepare = prepare
        self._size = size
        self._entries: OrderedDict[int, tuple[QueryResult, P]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, gold: QueryResult) -> P:
        key = id(gold)
        with self._lock:
            entry = self._touch(key, gold)
        if entry is not None:
            return entry[1]
        prepared = self._prepare(gold)
        with self._lock:
            entry = self._touch(key, gold)  # another thread may have prepared it meanwhile
            if entry is not None:
                return entry[1]
            self._entries[key] = (gold, prepared)
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return prepared

    def _touch(self, key: int, gold: QueryResult) -> tuple[QueryResult, P] | None:
        """The entry of `gold`, now the most recently used; None when not cached."""
        entry = self._entries.get(key)
        if entry is None or entry[0] is not gold:
            return None
        self._entries.move_to_end(key)
        return entry
