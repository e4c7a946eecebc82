"""N attempts in flight on worker threads, a shared rate limit, results handed back to the
calling thread one at a time (so database writes stay serialized)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
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


def dispatch(jobs: Iterable[J], work: Callable[[J], R], on_done: Callable[[R], None], *, concurrency: int) -> int:
    """Run `work` on every job with `concurrency` in flight; call `on_done` on this thread as
    each completes. At most `concurrency` jobs are started ahead of completion, so a killed
    process loses at most those. Returns the number of jobs done. If `work` or `on_done` raises
    (or the process is interrupted), jobs not yet started are cancelled and the error propagates."""
    pending = iter(jobs)
    done_count = 0
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="kgeval-attempt")
    in_flight: set[Future[R]] = set()
    try:
        _fill(pool, pending, work, in_flight, concurrency)
        while in_flight:
            finished, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in finished:
                on_done(future.result())
                done_count += 1
            _fill(pool, pending, work, in_flight, concurrency)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return done_count


def _fill(pool: ThreadPoolExecutor, pending, work, in_flight: set, concurrency: int) -> None:  # noqa: ANN001
    while len(in_flight) < concurrency:
        job = next(pending, None)
        if job is None:
            return
        in_flight.add(pool.submit(work, job))
