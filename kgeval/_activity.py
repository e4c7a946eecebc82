"""What a long-running command is doing now: the steps in flight and since when.

A step (a reference query being built, an attempt waiting on its system) enters `Activity` as it
starts and leaves as it ends, from whatever thread runs it; a heartbeat reads `describe()`
every few seconds and prints it, so a query running to its timeout is named while it runs,
not only once it finished (a rebuild that printed nothing for 381 s looked hung).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_SHOWN = 3
"""Steps a description names one by one (the longest-running first)."""


class Activity:
    """The steps in flight, by name, with their start times (monotonic)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        """`name` is running for as long as the block runs."""
        with self._lock:
            self._running[name] = time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                self._running.pop(name, None)

    def describe(self) -> str | None:
        """"running hr-07 for 34 s, hr-08 for 2 s", the longest-running first; None when idle."""
        now = time.monotonic()
        with self._lock:
            running = sorted(self._running.items(), key=lambda item: item[1])
        if not running:
            return None
        named = ", ".join(f"{name} for {now - since:.0f} s" for name, since in running[:_SHOWN])
        return "running " + named + (f" and {len(running) - _SHOWN} more" if len(running) > _SHOWN else "")
