"""Heavy work of the service: anything that executes queries or scans much (a contamination
check, judging, a report, an audit sample, a sample view that runs a stored candidate again).

Each heavy request runs on a small shared pool (`service.heavy_workers`) under a time limit
(`service.request_timeout_s`, 503 after it), and counts against its caller's share: at most
`service.heavy_per_caller` heavy requests of one caller are in flight at once (429 with
Retry-After beyond), whichever route they came by, so one caller's slow requests cannot hold
every worker, or a KG's sandbox workers, while another caller waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import anyio
from fastapi import HTTPException

from kgeval.errors import CheckFailed, DatabaseBusy, KgevalError
from kgeval.review import NotPermitted
from kgeval.runs import DamagedDatabase, DiskFull
from kgeval.service._access import Principal
from kgeval.service._state import ServiceState

T = TypeVar("T")


def http_error(exc: KgevalError) -> HTTPException:
    """A kgeval error as the HTTP status it means to a caller."""
    if isinstance(exc, NotPermitted):
        return HTTPException(403, str(exc))
    if isinstance(exc, CheckFailed):
        return HTTPException(409, str(exc))
    if isinstance(exc, DatabaseBusy):
        return HTTPException(503, str(exc), headers={"Retry-After": "1"})
    if isinstance(exc, DiskFull):
        return HTTPException(507, str(exc))
    if isinstance(exc, DamagedDatabase):  # the service's own store, not the request, is at fault
        return HTTPException(500, str(exc))
    return HTTPException(400, str(exc))


class WorkTimeout(Exception):
    """A heavy request passed `service.request_timeout_s` (checked between units of work)."""


def deadline_check(deadline: float) -> Callable[[], None]:
    """A callable the work calls between units; raises WorkTimeout once past `deadline`."""

    def check() -> None:
        if time.monotonic() > deadline:
            raise WorkTimeout

    return check


class _HeavyTurn:
    """One caller's turn of heavy work (`service.heavy_per_caller`), given back when the work
    ends: by the worker thread when it ran (a timed-out request's work runs on until its next
    deadline check, or its candidate query's end, and holds the turn until then), else by the
    request (cancelled before a thread took the work)."""

    def __init__(self, state: ServiceState, caller: Principal) -> None:
        self._state, self._caller = state, caller.name
        if not state.take_heavy_turn(self._caller):
            limit = state.settings.service.heavy_per_caller
            raise HTTPException(
                429, f"{caller.name} has {limit} heavy request(s) in flight already (service.heavy_per_caller); retry when one has ended",
                headers={"Retry-After": _HEAVY_RETRY_AFTER},
            )
        self._lock, self._started, self._ended = threading.Lock(), False, False

    def run(self, work: Callable[[Callable[[], None]], T], check: Callable[[], None]) -> T:
        with self._lock:
            if self._ended:  # the request gave up before this thread started
                raise WorkTimeout
            self._started = True
        try:
            return work(check)
        finally:
            self._end()

    def abandon(self) -> None:
        """The request is over: give the turn back unless a thread has taken the work."""
        with self._lock:
            if self._started or self._ended:
                return
            self._ended = True
        self._state.end_heavy_turn(self._caller)

    def _end(self) -> None:
        with self._lock:
            self._ended = True
        self._state.end_heavy_turn(self._caller)


_HEAVY_RETRY_AFTER = "1"
"""Seconds a caller over `service.heavy_per_caller` is asked to wait (its own requests end it)."""


async def bounded(state: ServiceState, caller: Principal, work: Callable[[Callable[[], None]], T], at_least_s: float = 0.0) -> T:
    """Run `work` (given a deadline check) on the heavy-request pool under the request time
    limit (or `at_least_s`, when longer), off the event loop, so /health and light routes keep
    answering. On timeout the caller gets 503 at once; the work stops at its next deadline check.
    A caller with `service.heavy_per_caller` heavy requests in flight gets 429 with Retry-After,
    so that one caller's slow requests cannot hold every worker."""
    limit = max(state.settings.service.request_timeout_s, at_least_s)
    deadline = time.monotonic() + limit
    timed_out = HTTPException(503, f"the request took longer than {limit:g} s (service.request_timeout_s); send less per request")
    turn = _HeavyTurn(state, caller)
    try:
        with anyio.fail_after(limit):
            return await anyio.to_thread.run_sync(turn.run, work, deadline_check(deadline), limiter=state.heavy, abandon_on_cancel=True)
    except (TimeoutError, WorkTimeout):
        raise timed_out from None
    except KgevalError as exc:
        raise http_error(exc) from None
    finally:
        turn.abandon()


def query_time_s(state: ServiceState) -> float:
    """The time limit of a request that executes a candidate query: long enough for the query
    to run its whole `run.candidate_timeout_s` and be judged (or shown) past it, never a 503."""
    return 2 * state.settings.config.run.candidate_timeout_s + 10
