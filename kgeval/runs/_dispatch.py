"""N attempts in flight on worker threads, a shared rate limit, results handed back to the
calling thread (so database writes stay serialized).

Results are handed back in groups. A DuckDB commit costs milliseconds of CPU and an fsync
whatever it holds, so one transaction per attempt caps a run at a few dozen attempts a second.
A group is handed back once it holds `batch` results, or `max_wait_s` has passed since the
previous group, or nothing else is in flight: every attempt is still written atomically with
its verdicts, within `max_wait_s` of completing (DESIGN invariant 11), while the throughput
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
    on_idle: Callable[[], None] | None = None,
) -> int:
    """Run `work` on every job on `concurrency` worker threads; call `on_done` on this thread
    with groups of completed results (see the module docstring). Workers take the next job as
    soon as they finish one, never waiting for a write: every result waiting when a group is
    handed back goes into it, so a result waits at most `max_wait_s` plus one write whatever
    the queue holds. At most `max(concurrency, batch)` results wait (workers block beyond
    that): a bound of `concurrency` alone made eight workers wait on every commit, so a run
    went at eight attempts per commit, not at the system's pace. A killed process loses the
    results waiting and the attempts in flight; a resume runs them again. Returns the number of
    jobs done. `on_idle` is called on this thread whenever no result came for a while (a
    twentieth of a second): a run moves its journal into the database then, however slow the
    system. If `work`, `on_done` or `on_idle` raises (or the process is interrupted), no further
    job starts and the error propagates."""
    source = iter(jobs)
    source_lock, stop, all_done = threading.Lock(), threading.Event(), threading.Event()
    results: queue.Queue[R | _Failed] = queue.Queue(maxsize=max(concurrency, batch))
    running = [concurrency]

    def worker() -> None:
        try:
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
        finally:
            with source_lock:
                running[0] -= 1
                if not running[0]:
                    all_done.set()  # every result is in the queue

    threads = [threading.Thread(target=worker, daemon=True, name=f"kgeval-attempt-{i}") for i in range(concurrency)]
    for thread in threads:
        thread.start()
    try:
        return _collect(results, all_done, on_done, batch, max_wait_s, on_idle)
    finally:
        stop.set()


_END = object()


def _collect(results: queue.Queue, all_done: threading.Event, on_done, batch: int, max_wait_s: float, on_idle=None) -> int:  # noqa: ANN001
    """Take results as they come; hand back a group when it is big enough, or the last, or
    max_wait_s has passed since the previous group was handed back. A result arriving after a
    quiet spell is written at once; under a stream of results, one transaction per max_wait_s
    takes everything waiting (each waited at most max_wait_s). A commit holds this thread for
    milliseconds of DuckDB work and hands the interpreter lock back and forth with the
    workers, so fewer, bigger groups leave the workers their time. While a group fills, this
    thread sleeps out the window instead of waking at every result (each wake took the
    interpreter lock from a worker: a thousand times in a run of a thousand attempts); it wakes
    early when the last worker is done. When a worker fails or this thread is interrupted, the
    results already completed are handed back before the error propagates: nothing completed is
    lost to the grouping."""
    done_count, group, last = 0, [], float("-inf")
    try:
        while True:
            if group:
                all_done.wait(max(0.0, last + max_wait_s - time.monotonic()))
                items = _drain(results, 0.0)
            else:
                items = _drain(results, 0.05)
                if not items and on_idle is not None:
                    on_idle()
            failed = next((item for item in items if isinstance(item, _Failed)), None)
            group += [item for item in items if not isinstance(item, _Failed)]
            if failed is not None:
                raise failed.error
            finished = all_done.is_set() and results.empty()
            if group and (len(group) >= batch or finished or time.monotonic() - last >= max_wait_s):
                handing, group = group, []
                on_done(handing)
                done_count, last = done_count + len(handing), time.monotonic()
            if finished and results.empty():
                return done_count
    except BaseException:
        if group:
            on_done(group)
        raise


def _drain(results: queue.Queue, timeout: float) -> list:
    """Every result waiting now, or the first one to arrive within `timeout`."""
    try:
        items = [results.get(timeout=timeout) if timeout > 0 else results.get_nowait()]
    except queue.Empty:
        return []
    while True:
        try:
            items.append(results.get_nowait())
        except queue.Empty:
            return items
