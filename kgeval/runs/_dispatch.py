"""N attempts in flight on worker threads, a shared rate limit, results handed back to the
calling thread (so database writes stay serialized).

Results are handed back in groups. A DuckDB commit costs milliseconds of CPU and an fsync
whatever it holds, so one transaction per attempt caps a run at a few dozen attempts a second.
A group is handed back once it holds `batch` results, or its oldest result has waited
`max_wait_s`, or nothing else is in flight: every attempt is still written atomically with its
verdicts, within `max_wait_s` of completing (DESIGN invariant 11), while the throughput
follows the system's."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

J = TypeVar("J")
R = TypeVar("R")


class RateLimiter:
    """At most `per_second` calls per second across threads, evenly spaced (no bursts)."""

    def __init__(self, per_second: float | None) -> None:
        self._interval = 1.0 / per_second if per_second else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def acquire(self) -> None:
        if not self._interval:
            return
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next)
            self._next = slot + self._interval
        if slot > now:
            time.sleep(slot - now)


class _Failed:
    """A worker's exception, carried to the calling thread."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def dispatch(
    jobs: Iterable[J],
    work: Callable[[J], R],
    on_done: Callable[[list[R]], None],
    *,
    concurrency: int,
    batch: int = 1,
    max_wait_s: float = 0.0,
) -> int:
    """Run `work` on every job on `concurrency` worker threads; call `on_done` on this thread
    with groups of completed results (see the module docstring). Workers take the next job as
    soon as they finish one, never waiting for a write; at most `concurrency` results wait to
    be written (workers block beyond that), so a killed process loses at most those and the
    attempts in flight. Returns the number of jobs done. If `work` or `on_done` raises (or the
    process is interrupted), no further job starts and the error propagates."""
    source = iter(jobs)
    source_lock, stop = threading.Lock(), threading.Event()
    results: queue.Queue[R | _Failed] = queue.Queue(maxsize=concurrency)

    def worker() -> None:
        while not stop.is_set():
            with source_lock:
                job = next(source, _END)
            if job is _END:
                return
            try:
                results.put(work(job))  # type: ignore[arg-type]
            except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
                results.put(_Failed(exc))
                return

    threads = [threading.Thread(target=worker, daemon=True, name=f"kgeval-attempt-{i}") for i in range(concurrency)]
    for thread in threads:
        thread.start()
    try:
        return _collect(results, threads, on_done, batch, max_wait_s)
    finally:
        stop.set()


_END = object()


def _collect(results: queue.Queue, threads: list[threading.Thread], on_done, batch: int, max_wait_s: float) -> int:  # noqa: ANN001
    """Take results as they come; hand back a group when it is big enough, old enough, or the
    last. Everything already waiting joins the group, so a writer that falls behind writes
    bigger groups instead of holding the workers up."""
    done_count, group, oldest = 0, [], 0.0
    while True:
        timeout = max(0.0, oldest + max_wait_s - time.monotonic()) if group else 0.05
        items = _drain(results, timeout)
        for item in items:
            if isinstance(item, _Failed):
                raise item.error
        if items and not group:
            oldest = time.monotonic()
        group += items
        finished = results.empty() and not any(t.is_alive() for t in threads)
        if group and (len(group) >= batch or finished or time.monotonic() - oldest >= max_wait_s):
            on_done(group)
            done_count += len(group)
            group = []
        if finished and results.empty():
            return done_count


def _drain(results: queue.Queue, timeout: float) -> list:
    """Every result waiting now, or the first one to arrive within `timeout`."""
    try:
        items = [results.get(timeout=timeout)]
    except queue.Empty:
        return []
    while True:
        try:
            items.append(results.get_nowait())
        except queue.Empty:
            return items
