"""CPython's cyclic garbage collector, kept out of kgeval's hot loops: run seldom while a gold
rebuild or a run runs (`with RARE_COLLECTIONS:`), not at all while a load builds what then
stays alive (`without_collections`), and not over what a program holds when it ends
(`kgeval.cli.main` freezes it: the interpreter's collection at exit then walks nothing).

Rare collections: `with RARE_COLLECTIONS:`. Rebuilds and runs in threads of one process share
it: the first to enter saves the settings, the last to leave puts them back.

Why: both allocate hundreds of thousands of short-lived container objects (cells, row keys,
Terms, verdicts) and hold thousands at a time (a rebuild's rows being ranked; a run's gold
entries in flight, prepared golds, the label index). With the default thresholds the collector
runs every 700 net allocations and its older generations re-scan everything the process holds:
measured 13% of a rebuild, up to twice the engine's own time on a 5,000-row unordered result; in
a replay run (bench/run.py) 270-335 young, 24-30 middle and 2 full collections per run, 86-152
ms of the run process's ~1.1-1.4 s of CPU, holding the interpreter lock (34-41 ms with these
settings). Reference counting still frees every object at once; only cyclic garbage (rare here:
a failed query's traceback) waits for the next, rarer collection. `gc.freeze()` moves what
exists when the first holder enters (the modules; the holdout, stores and verified gold index
of a dispatch entered first) out of the collector's sight. A run holds it from its plan to its
seal, and `kgeval run` from its imports to its headline (issue 43: a 22-KG replay process made
293 young, 25 middle and 2 full collections, 0.4-0.6 s of its CPU, and 0.18-0.21 s more at
exit; now 96 young and 8 middle, ~0.25 s).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class RareCollections:
    """Collections every `FIRST_THRESHOLD` net allocations instead of 700, and what exists at
    entry frozen, while any holder is inside (a context manager; re-entrant across threads)."""

    FIRST_THRESHOLD = 100_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._saved = gc.get_threshold()

    def __enter__(self) -> None:
        with self._lock:
            if self._holders == 0:
                self._saved = gc.get_threshold()
                gc.freeze()
                gc.set_threshold(max(self._saved[0], self.FIRST_THRESHOLD), *self._saved[1:])
            self._holders += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                gc.set_threshold(*self._saved)
                gc.unfreeze()


RARE_COLLECTIONS = RareCollections()


def without_collections(load: Callable[[], T]) -> T:
    """`load()` with the collector paused, then back as it was: for a load that builds hundreds
    of thousands of objects which all stay alive (a run's verified gold index), where the
    passes the allocations triggered over them were half of loading a gold's CPU."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return load()
    finally:
        if was_enabled:
            gc.enable()
