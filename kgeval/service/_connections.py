"""The HTTP connections of `kgeval serve`: idle, header and body timeouts, and a bound on them.

uvicorn's own keep-alive timeout bounds only the time between two requests of a connection:
a connection that sends nothing, or sends its headers or body a byte at a time, is held for
ever, and 300 of them exhaust the server's file descriptors so that /health no longer answers.
`timed_protocol` is uvicorn's h11 protocol with a deadline for each phase of receiving a
request (`service.idle_timeout_s` before its first byte, `service.header_timeout_s` for its
headers, `service.body_timeout_s` for its body): past it the caller gets 408 and the
connection is closed. Once the request is in, the response is the route's (bounded by
`service.request_timeout_s`). `server_options` gives uvicorn those and the connection bound.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Literal

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from kgeval.config import ServiceConfig

log = logging.getLogger("kgeval.service")

Phase = Literal["headers", "body"]


class _TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, with the idle timer armed from the connection's start and a
    deadline on the headers and on the body of each request (`service` set by the factory)."""

    service: ServiceConfig

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._phase: Phase | None = None
        self._deadline: asyncio.TimerHandle | None = None
        # uvicorn arms its keep-alive timer only after a response: a silent new connection is idle too
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        state = self.conn.their_state
        self._enter("headers" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state is h11.IDLE:  # the next request starts with its first byte
            self._enter(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self._enter(None)
        super().connection_lost(exc)

    def _enter(self, phase: Phase | None) -> None:
        """Arm the deadline of `phase` when the request enters it (None: nothing to wait for)."""
        if phase == self._phase:
            return
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._phase = phase
        if phase is not None:
            limit = self.service.header_timeout_s if phase == "headers" else self.service.body_timeout_s
            self._deadline = self.loop.call_later(limit, self._too_slow, phase, limit)

    def _too_slow(self, phase: Phase, limit: float) -> None:
        """408 when no response has started (else the connection is only closed), then close."""
        self._deadline = None
        if self.transport.is_closing():
            return
        setting = f"service.{'header' if phase == 'headers' else 'body'}_timeout_s"
        detail = f"the request's {phase} took longer than {limit:g} s ({setting}); send the whole request at once"
        log.warning("%s %s: closed (%s)", *(self.client or ("?", 0)), detail)
        if self.cycle is None or self.cycle.response_complete or not self.cycle.response_started:
            body = json.dumps({"detail": detail}).encode()
            head = f"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
            self.transport.write(head.encode() + body)
        if self.cycle is not None:
            self.cycle.disconnected = True  # the route reads no more of it, and answers nothing
        self.transport.close()


def timed_protocol(service: ServiceConfig) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol under `service`'s idle, header and body timeouts."""
    return type("TimedH11Protocol", (_TimedH11Protocol,), {"service": service})


def server_options(service: ServiceConfig) -> dict[str, Any]:
    """uvicorn.run's options for `service`'s connection timeouts and bounds."""
    return {
        "http": timed_protocol(service),
        "timeout_keep_alive": service.idle_timeout_s,
        "limit_concurrency": service.max_connections,
        "h11_max_incomplete_event_size": service.max_header_bytes,
    }


FILES_BESIDE_CONNECTIONS = 128
"""Open files the service needs beside its connections (the database, stores, workers' pipes)."""


def raise_open_files(service: ServiceConfig) -> str | None:
    """Raise this process's open-file limit to its hard limit (a connection is an open file);
    a warning naming the settings when that still leaves too few for `service.max_connections`:
    past the limit the server accepts no connection at all, /health included, until one closes."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    needed = service.max_connections + FILES_BESIDE_CONNECTIONS
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return None
    return (
        f"open-file limit {soft} is below service.max_connections ({service.max_connections}) + {FILES_BESIDE_CONNECTIONS}: "
        f"slow clients can take every file until the timeouts close them; raise it (ulimit -n {needed}) or lower service.max_connections"
    )
