"""A deadline for a whole call to a model endpoint: connecting, sending, the headers and the
whole body.

Every HTTP client's read timeout (urllib3's, httpx's) bounds each socket read only: a reply
trickled a byte at a time, or a body that never ends, keeps a call going for ever. A call here
names the socket it uses; one watchdog thread shuts that socket down at the call's deadline,
which ends a read blocked on it at once, and the call is marked expired, so that its caller
reports the endpoint's timeout whatever it had read (DESIGN invariant 5: a harness error kind,
never an answer cut short). `kgeval.systems._http` uses it through its urllib3 connections;
`kgeval.systems._deadline_httpx` gives the httpx-based SDKs (openai, gemini) the same.
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time


class CallDeadline:
    """One call's deadline: at `timeout_s` from its start the watchdog marks it expired and
    shuts down the socket it uses (`uses`). As a context manager it is the current thread's
    call (`current_call`), for a connection to name its socket to."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + timeout_s
        self.expired = False
        self.ended = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        _WATCHDOG.watch(self)

    def __enter__(self) -> CallDeadline:
        _current.call = self
        return self

    def __exit__(self, *exc: object) -> None:
        _current.call = None
        self.end()

    def end(self) -> None:
        with self._lock:
            self.ended = True

    def uses(self, sock: socket.socket | None) -> None:
        with self._lock:
            self._sock = sock
            if self.expired:
                _shut(sock)

    def expire(self) -> None:
        with self._lock:
            if self.ended:
                return
            self.expired = True
            _shut(self._sock)


def _shut(sock: socket.socket | None) -> None:
    try:
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed: nothing to interrupt


_current = threading.local()


def current_call() -> CallDeadline | None:
    """The call the current thread is making, if any."""
    return getattr(_current, "call", None)


class _Watchdog:
    """One daemon thread that expires calls at their deadlines (a timer thread per call would
    start a thread on every call of a run)."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, CallDeadline]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, call: CallDeadline) -> None:
        with self._wake:
            sooner = not self._due or call.deadline < self._due[0][0]
            heapq.heappush(self._due, (call.deadline, next(self._order), call))
            if self._thread is None or not self._thread.is_alive():  # none yet, or not in this forked child
                self._thread = threading.Thread(target=self._expire_due, name="kgeval-call-deadlines", daemon=True)
                self._thread.start()
            if sooner:  # else the thread already wakes in time: no wake-up (and no GIL hand-off) per call
                self._wake.notify()

    def _expire_due(self) -> None:
        with self._wake:
            while True:
                while self._due and self._due[0][2].ended:
                    heapq.heappop(self._due)
                wait = self._due[0][0] - time.monotonic() if self._due else None
                if wait is None or wait > 0:
                    self._wake.wait(wait)
                    continue
                heapq.heappop(self._due)[2].expire()


_WATCHDOG = _Watchdog()
