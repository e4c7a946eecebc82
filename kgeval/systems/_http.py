"""The production system behind an HTTP endpoint.

Request:  POST <url>  {"question": "...", "kg": "hr", "seed": 0}
Response: 200 {"sparql": "..." | null, "answer": [...] | null, "stop_reason": "stop" | "length" |
          "content_filter" | "safety" | ...}; the served version in a response header.

Every failure becomes a `SystemOutput` with an error kind (timeout, transport, rate_limited,
other); nothing raises, so a broken endpoint can never look like a wrong answer.

The client is urllib3 (a pooled connection per worker thread, no retries of its own: the run
retries and records every try). It costs a third of httpx's CPU per call, and a run with 32
calls in flight spends its CPU on its own work, not on the client (bench/dispatch.py).

`timeout_s` is a deadline for the whole call: connecting, sending, the headers and the whole
body. urllib3's timeouts (as every client's read timeout) bound each socket read, so a reply
trickled a byte at a time, or an endless body, would run for ever; a watchdog thread shuts the
call's socket down at its deadline instead (`CallDeadline`), and the try ends as the
endpoint's timeout, whatever it had read.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, get_args

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.exceptions import NewConnectionError, ProtocolError, ProxyError, SSLError, TimeoutError as Urllib3Timeout

from kgeval.config import HttpSystemConfig
from kgeval.errors import InputError
from kgeval.holdout import Question
from kgeval.systems._deadline import CallDeadline, current_call
from kgeval.systems._model import OutputCut, StopReason, SystemOutput, head_of, malformed_reply

_STOP_REASONS = set(get_args(StopReason))


def failure_from_status(status: int, body: str, served: str | None = None, retry_after: str | None = None) -> SystemOutput:
    """429 is rate limiting, 5xx a transient server failure, any other non-2xx a hard error;
    `retry_after` is the response's Retry-After header, when it sent one."""
    kind = "rate_limited" if status == 429 else "transport" if status >= 500 else "other"
    return SystemOutput(
        stop_reason="other",
        error=f"HTTP {status}: {body[:200]}",
        error_kind=kind,
        http_status=status,
        served_version=served,
        retry_after_s=retry_after_seconds(retry_after),
    )


def retry_after_seconds(value: str | None) -> float | None:
    """An HTTP Retry-After header (delay-seconds or an HTTP-date) as seconds from now; None
    when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds()) if when.tzinfo else None


class HttpSystem:
    """The production endpoint; thread-safe (one urllib3 pool)."""

    name = "http"
    kind = "endpoint"

    def __init__(self, config: HttpSystemConfig, *, concurrency: int = 8, max_output_bytes: int = 1 << 20) -> None:
        if not config.url:
            raise InputError("system 'http' needs systems.http.url in the configuration (--config FILE)")
        self.config = config
        self.version = config.declared_version
        self.pipeline = config.pipeline
        self.reasoning: dict[str, Any] = {}
        headers = dict(config.headers)
        if config.token_env:
            token = os.environ.get(config.token_env)
            if not token:
                raise InputError(f"system 'http': environment variable {config.token_env} (systems.http.token_env) is not set")
            headers["Authorization"] = f"Bearer {token}"
        headers["Content-Type"] = "application/json"
        self._headers = headers
        self._max_output_bytes = max_output_bytes
        self._pool = urllib3.PoolManager(maxsize=concurrency, retries=False, timeout=urllib3.Timeout(total=config.timeout_s))
        self._pool.pool_classes_by_scheme = {"http": _WatchedPool, "https": _WatchedHTTPSPool}  # type: ignore[assignment]

    def close(self) -> None:
        self._pool.clear()

    def guards(self) -> list[EndpointGuards]:
        """The endpoint's example-bank guards, as it reports them (for the pre-eval checklist)."""
        return [EndpointGuards(self.config.guards_url, self._pool, self._headers)]

    def respond(self, question: Question, seed: int) -> SystemOutput:
        body = json.dumps({"question": question.question, "kg": question.kg, "seed": seed}).encode()
        call = CallDeadline(self.config.timeout_s)
        try:
            with call:
                response = self._pool.request("POST", self.config.url, body=body, headers=self._headers, redirect=False, preload_content=False)  # type: ignore[arg-type]
                try:
                    data, cut = read_bounded(response, self._max_output_bytes + _ENVELOPE_BYTES, self._max_output_bytes)
                finally:
                    if call.expired:
                        response.close()  # its socket is shut: never back into the pool as it is
                    response.release_conn()
        except (Urllib3Error, OSError) as exc:
            if call.expired:
                return self._past_deadline()
            if not isinstance(exc, Urllib3Error):
                raise
            return _failure_from_urllib3(exc)
        if call.expired:  # whatever was read by then is a cut reply, never an answer
            return self._past_deadline()
        served = response.headers.get(self.config.version_header)
        text = data.decode("utf-8", "replace")
        if cut is not None and response.status < 300:  # over run.max_output_bytes: judged wrong, never parsed
            return SystemOutput(raw_text=head_of(text, self._max_output_bytes), cut=cut, served_version=served, http_status=response.status)
        if response.status >= 300:
            return failure_from_status(response.status, text, served, response.headers.get("Retry-After"))
        output = _parse_body(text, f"POST {self.config.url} (HTTP {response.status}, Content-Type {response.headers.get('Content-Type') or 'not given'})")
        return output.model_copy(update={"served_version": served, "http_status": response.status})


    def _past_deadline(self) -> SystemOutput:
        return SystemOutput(
            stop_reason="other", error_kind="timeout",
            error=f"timed out: no whole reply within {self.config.timeout_s:g} s (systems.http.timeout_s, a deadline for the call: headers and body)",
        )  # fmt: skip


class _Watched:
    """A connection that names its socket to the call in flight on its thread, once connected."""

    def request(self, *args: Any, **kwargs: Any) -> None:
        call = current_call()
        if call is not None:
            if self.sock is None:  # type: ignore[attr-defined]
                self.connect()  # type: ignore[attr-defined]
            call.uses(self.sock)  # type: ignore[attr-defined]
        super().request(*args, **kwargs)  # type: ignore[misc]


class _WatchedConnection(_Watched, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


class _WatchedPool(HTTPConnectionPool):
    ConnectionCls = _WatchedConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_ENVELOPE_BYTES = 64 * 1024
"""What a reply may hold beside its output (field names, the stop reason) within the bound."""


def read_bounded(response: urllib3.BaseHTTPResponse, cap: int, limit: int) -> tuple[bytes, OutputCut | None]:
    """A reply's body, read no further than `cap` bytes kept: past it, the rest is only counted
    and hashed, and the body comes back as its head with the cut (its size and sha256)."""
    kept, size, digest = bytearray(), 0, hashlib.sha256()
    for piece in response.stream(64 * 1024):
        size += len(piece)
        digest.update(piece)
        if len(kept) <= cap:
            kept += piece[: cap + 1 - len(kept)]
    if size <= cap:
        return bytes(kept), None
    return bytes(kept[:limit]), OutputCut(part="body", bytes=size, sha256=digest.hexdigest(), limit=limit)


def failure_from_exception(kind: str, exc: BaseException) -> SystemOutput:
    """A client failure of `kind` (timeout, transport or other), its message naming the exception."""
    name = type(exc).__name__
    error = {"timeout": f"timed out: {name}", "transport": f"transport failure: {name}: {exc}"}.get(kind, f"{name}: {exc}")
    return SystemOutput(stop_reason="other", error=error, error_kind=kind)


def _failure_from_urllib3(exc: Urllib3Error) -> SystemOutput:
    """urllib3's failures by kind. A refused connection is a transport failure, although urllib3
    makes NewConnectionError a subclass of ConnectTimeoutError."""
    if isinstance(exc, NewConnectionError | ProtocolError | ProxyError | SSLError):
        return failure_from_exception("transport", exc)
    return failure_from_exception("timeout" if isinstance(exc, Urllib3Timeout) else "other", exc)


def _parse_body(text: str, where: str) -> SystemOutput:
    """The endpoint's JSON reply; one that is not what the contract says (not JSON, as an HTML
    page a proxy sends with status 200; a field of the wrong type) is a harness error naming
    `where` it came from and what was received."""
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        return malformed_reply("http", where, f"not JSON ({exc.msg} at character {exc.pos})", text)
    if not isinstance(body, dict):
        return malformed_reply("http", where, f"a JSON {_json_type(body)}, not an object", body)
    sparql, answer, reason = body.get("sparql"), body.get("answer"), body.get("stop_reason")
    for name, value, expected in (("sparql", sparql, str), ("answer", answer, list), ("stop_reason", reason, str)):
        if value is not None and not isinstance(value, expected):
            return malformed_reply("http", where, f"{name!r} is a JSON {_json_type(value)}, not {'a string' if expected is str else 'an array'}", value)
    reason = reason or "stop"
    stop = reason if reason in _STOP_REASONS else "other"
    return SystemOutput(sparql=sparql, answer=answer, stop_reason=stop, finish_reason=reason)


def _json_type(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), type(value).__name__)


class EndpointGuards:
    """The production endpoint's example-bank guards: its bank runs in its process, so it
    reports them at `systems.http.guards_url` (GET -> a JSON list of {"name", "active",
    "details"}), read when the checklist runs. An endpoint that cannot report has no active
    guard, and the reason shows in the checklist's receipt."""

    name = "systems.http.guards_url"

    def __init__(self, url: str | None, pool: urllib3.PoolManager, headers: dict[str, str]) -> None:
        self.url, self._pool, self._headers = url, pool, headers

    def status(self) -> list[dict[str, Any]]:
        if not self.url:
            raise InputError("not set: the endpoint's example-bank guards cannot be observed")
        try:
            response = self._pool.request("GET", self.url, headers=self._headers, redirect=False)
        except Urllib3Error as exc:
            raise InputError(f"GET {self.url}: {_failure_from_urllib3(exc).error}") from None
        if response.status != 200:
            raise InputError(f"GET {self.url}: HTTP {response.status}")
        try:
            body = json.loads(response.data)
        except ValueError as exc:
            raise InputError(f"GET {self.url}: not valid JSON ({exc})") from None
        if not isinstance(body, list) or not all(isinstance(g, dict) and isinstance(g.get("name"), str) and isinstance(g.get("active"), bool) for g in body):
            raise InputError(f'GET {self.url}: expected a JSON list of {{"name": str, "active": bool, "details": ...}}')
        return body
