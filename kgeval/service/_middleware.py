"""ASGI middleware of the service: authenticate before any body is read, and log each request.

Authentication happens here, on the headers alone: an unauthenticated caller gets its 401
before a byte of its body is read (FastAPI reads and parses a body before it runs a route's
dependencies, so a dependency would read 100 MB to refuse it). The body limit itself is
Starlette's `RequestBodyLimitMiddleware`, inside this one: it refuses a declared Content-Length
over the limit before reading, and counts a chunked body's bytes as they arrive.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from urllib.parse import unquote_plus

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kgeval.service._access import Principal

log = logging.getLogger("kgeval.service")

SESSION_COOKIE = "kgeval_session"
PAGE_HEADER = "X-Kgeval-Page"
DOCS_ASSETS = "/docs/assets"
DOCS_ASSET_TYPES = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css", "favicon.png": "image/png"}
"""The files Swagger UI's page loads, by name, with their media types; served without a token
(public library code, like the sign-in page)."""
PUBLIC_PATHS = frozenset({"/health", "/ui", "/docs", "/session"} | {f"{DOCS_ASSETS}/{name}" for name in DOCS_ASSET_TYPES})
"""Paths that answer without a token: liveness, and the pages and sign-in that ask for one
(they check the session themselves)."""

Authenticator = Callable[[str | None, str | None], Principal | None]
"""(bearer token, session id) -> the principal, or None."""


class AuthError(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def principal_from_headers(headers: Headers, method: str, authenticate: Authenticator) -> Principal:
    """The caller named by `Authorization: Bearer` or the page's session cookie. A cookie alone
    may change nothing without the page's header, which a cross-site form cannot send."""
    auth = headers.get("authorization", "")
    token = auth[7:].strip() if auth.lower().startswith("bearer ") else None
    session_id = cookie_parser(headers.get("cookie", "")).get(SESSION_COOKIE) if token is None else None
    principal = authenticate(token, session_id)
    if principal is None:
        raise AuthError(401, "a valid token is required")
    if session_id and method not in ("GET", "HEAD") and headers.get(PAGE_HEADER) != "1":
        raise AuthError(
            403, f"cookie-authenticated changes need the {PAGE_HEADER} header (the run page /ui sends it); from /docs or a script, "
            "send your token instead: press Authorize in /docs and give it, or send Authorization: Bearer TOKEN",
        )  # fmt: skip
    return principal


class AuthFirst:
    """Refuse a request without a valid token (401) or session before its body is read; put
    the principal in the request's state for the routes' role checks."""

    def __init__(self, app: ASGIApp, authenticate: Authenticator) -> None:
        self.app, self.authenticate = app, authenticate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        try:
            principal = principal_from_headers(Headers(scope=scope), scope["method"], self.authenticate)
        except AuthError as exc:
            await _refuse(send, exc)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)


async def _refuse(send: Send, exc: AuthError) -> None:
    """Answer without reading the body; the server closes the connection, body unread."""
    body = json.dumps({"detail": exc.detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
    if exc.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": exc.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class RequestLog:
    """One structured record per request on the `kgeval.service` logger: method, path,
    status, duration, caller, request and response bytes (never the token or the body)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, seen = time.perf_counter(), {"status": 500, "bytes_out": 0, "bytes_in": 0}

        async def counting_receive() -> Message:
            message = await receive()
            seen["bytes_in"] += len(message.get("body", b""))
            return message

        async def counting_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
            elif message["type"] == "http.response.body":
                seen["bytes_out"] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, counting_receive, counting_send)
        finally:
            principal = scope.get("state", {}).get("principal")
            client = scope.get("client")
            log.info(
                "%s %s %s", scope["method"], scope["path"], seen["status"],
                extra={"request": {
                    "method": scope["method"], "path": scope["path"], "status": seen["status"],
                    "ms": round((time.perf_counter() - started) * 1000, 1),
                    "principal": principal.name if principal else None,
                    "client": client[0] if client else None, "bytes_in": seen["bytes_in"], "bytes_out": seen["bytes_out"],
                }},
            )  # fmt: skip


class JsonLogFormatter(logging.Formatter):
    """A log record as one JSON object per line (time, level, logger, message, and the
    request's fields when it is a request record), for log collectors."""

    def format(self, record: logging.LogRecord) -> str:
        data = {"time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"), "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        data.update(getattr(record, "request", {}))
        if record.exc_info:
            data["error"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False)


_URL_PARAM = re.compile(
    r"(?P<head>(?:[?&;]|%3[bBfF]|%26)(?P<name>(?:[\w.~+-]|%[0-9A-Fa-f]{2})*?)(?:=|%3[dD]))(?P<value>[^&;#\s\"']*)"
)
"""A parameter of a URL (a query-string one, or a path one, `/runs;token=T`): after `?`, `&` or
`;`, raw or percent-encoded (uvicorn's access log quotes the path), its value up to the next
raw separator (an encoded one stays inside the value: none of it is shown)."""
_CREDENTIAL_NAME = re.compile(r"token|secret|passw|pwd|key|auth|sig|credential|session|cookie|code|bearer|jwt", re.IGNORECASE)
_FREE_PARAM = re.compile(r"(?P<head>(?:^|(?<=[\s\"']))(?P<name>[\w.%-]+)=)(?P<value>[^&;#\s\"']*)")
"""`name=value` in free text (an error message): redacted when the name is credential-like."""
_BEARER = re.compile(r"(?P<head>bearer(?:\s|\+|%20|%2[bB]|:)+)(?P<value>[^\s&;#\"',]+)", re.IGNORECASE)
"""A Bearer credential anywhere: in a parameter's value (`?x=Bearer%20T`) or in free text."""
_PLAIN_VALUE = re.compile(r"[\w.-]*")
REDACTED = "REDACTED"


def _name(raw: str) -> str:
    """A parameter's name as the server reads it (percent-escapes decoded, however deep)."""
    for _ in range(4):
        decoded = unquote_plus(raw)
        if decoded == raw:
            break
        raw = decoded
    return raw.lower()


def redact_credentials(text: str, kept: frozenset[str] = frozenset()) -> str:
    """`text` with every URL parameter's value replaced, except a parameter the API declares
    (`kept`, the routes' query parameters) holding a plain value (word characters, dots,
    dashes); with every credential-like `name=value` and every Bearer value replaced. The rule
    goes by shape, not by a list of names: a token sent as `?t=`, `?jwt=`, `?%74oken=`,
    `;token=` or `?x=Bearer T` is never written."""
    if "=" not in text and "%3" not in text.upper() and "bearer" not in text.lower():
        return text

    def url_param(m: re.Match) -> str:
        keep = _name(m["name"]) in kept and _PLAIN_VALUE.fullmatch(m["value"])
        return m[0] if keep else m["head"] + REDACTED

    def free_param(m: re.Match) -> str:
        return m["head"] + REDACTED if _CREDENTIAL_NAME.search(_name(m["name"])) else m[0]

    text = _URL_PARAM.sub(url_param, text)
    text = _FREE_PARAM.sub(free_param, text)
    return _BEARER.sub(lambda m: m["head"] + REDACTED, text)


def _redacted(value: object, kept: frozenset[str]) -> object:
    return redact_credentials(value, kept) if isinstance(value, str) else value


class RedactCredentials(logging.Filter):
    """Redacts credentials (`redact_credentials`) in every record a handler writes: its
    message, its arguments (uvicorn's access log formats the request line with its query
    string) and the request fields of kgeval's JSON record (its path may carry `;token=`).
    Headers are never logged, Authorization included."""

    def __init__(self, kept: list[str] | tuple[str, ...] = ()) -> None:
        super().__init__()
        self.kept = frozenset(name.lower() for name in kept)

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_credentials(record.msg, self.kept)
        if isinstance(record.args, tuple):
            record.args = tuple(_redacted(a, self.kept) for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: _redacted(v, self.kept) for k, v in record.args.items()}
        request = getattr(record, "request", None)
        if isinstance(request, dict):
            record.request = {k: _redacted(v, self.kept) for k, v in request.items()}
        return True


def service_log_config(level: str, app: ASGIApp | None = None) -> dict:
    """uvicorn's logging configuration plus the `kgeval.service` logger: one JSON object per
    request on stderr (uvicorn's access log stays on stdout, as uvicorn writes it). Every
    handler redacts credentials (`RedactCredentials`), keeping the plain values of the query
    parameters `app`'s routes declare (`query_parameters`)."""
    from uvicorn.config import LOGGING_CONFIG

    config = {key: dict(value) if isinstance(value, dict) else value for key, value in LOGGING_CONFIG.items()}
    config["formatters"] = {**LOGGING_CONFIG["formatters"], "json": {"()": JsonLogFormatter}}
    config["filters"] = {"redact": {"()": RedactCredentials, "kept": sorted(query_parameters(app))}}
    handlers = {**LOGGING_CONFIG["handlers"], "json": {"formatter": "json", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"}}
    config["handlers"] = {name: {**handler, "filters": ["redact"]} for name, handler in handlers.items()}
    config["loggers"] = {**LOGGING_CONFIG["loggers"], "kgeval": {"handlers": ["json"], "level": level.upper(), "propagate": False}}
    return config


def query_parameters(app: ASGIApp | None) -> set[str]:
    """The query parameters the app's routes declare (their values are kept in the log)."""
    from fastapi.routing import APIRoute

    return {p.alias for route in getattr(app, "routes", ()) if isinstance(route, APIRoute) for p in route.dependant.query_params}
