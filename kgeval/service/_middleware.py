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


_CREDENTIAL_PARAM = re.compile(
    r"(?P<name>(?:^|(?<=[?&;\s\"']))[\w.%-]*(?:token|secret|passw|pwd|key|auth|sig|credential|session|cookie|code)[\w.%-]*=)[^&;#\s\"']*",
    re.IGNORECASE,
)
"""A query-string parameter whose name is credential-like (token, access_token, api_key,
apikey, key, password, secret, auth, sig, signature, X-Amz-Signature, X-Amz-Credential,
session, code ...), its value up to the next separator."""
REDACTED = "REDACTED"


def redact_credentials(text: str) -> str:
    """`text` with the value of every credential-like query-string parameter replaced."""
    return _CREDENTIAL_PARAM.sub(lambda m: m["name"] + REDACTED, text) if "=" in text else text


class RedactCredentials(logging.Filter):
    """Redacts credential-like query-string values in every record a handler writes (uvicorn's
    access log formats the request line with the query string: a token sent as `?token=` would
    otherwise be written verbatim). Headers are never logged, Authorization included."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_credentials(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact_credentials(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: redact_credentials(v) if isinstance(v, str) else v for k, v in record.args.items()}
        return True


def service_log_config(level: str) -> dict:
    """uvicorn's logging configuration plus the `kgeval.service` logger: one JSON object per
    request on stderr (uvicorn's access log stays on stdout, as uvicorn writes it). Every
    handler redacts credential-like query-string values (`RedactCredentials`)."""
    from uvicorn.config import LOGGING_CONFIG

    config = {key: dict(value) if isinstance(value, dict) else value for key, value in LOGGING_CONFIG.items()}
    config["formatters"] = {**LOGGING_CONFIG["formatters"], "json": {"()": JsonLogFormatter}}
    config["filters"] = {"redact": {"()": RedactCredentials}}
    handlers = {**LOGGING_CONFIG["handlers"], "json": {"formatter": "json", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"}}
    config["handlers"] = {name: {**handler, "filters": ["redact"]} for name, handler in handlers.items()}
    config["loggers"] = {**LOGGING_CONFIG["loggers"], "kgeval": {"handlers": ["json"], "level": level.upper(), "propagate": False}}
    return config
