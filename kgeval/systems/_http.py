"""The production system behind an HTTP endpoint.

Request:  POST <url>  {"question": "...", "kg": "hr", "seed": 0}
Response: 200 {"sparql": "..." | null, "answer": [...] | null, "stop_reason": "stop" | "length" |
          "content_filter" | "safety" | ...}; the served version in a response header.

Every failure becomes a `SystemOutput` with an error kind (timeout, transport, rate_limited,
other); nothing raises, so a broken endpoint can never look like a wrong answer.
"""

from __future__ import annotations

import json
import os
from typing import Any, get_args

import httpx

from kgeval.config import HttpSystemConfig
from kgeval.errors import InputError
from kgeval.holdout import Question
from kgeval.systems._model import StopReason, SystemOutput

_STOP_REASONS = set(get_args(StopReason))


def failure_from_exception(exc: Exception) -> SystemOutput:
    """Classify a client failure: timeouts, then connection/protocol failures. By class name as
    well as by httpx's classes: SDKs may use their own copy of httpx (google-genai's httpx2)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, httpx.TimeoutException | TimeoutError) or any("Timeout" in n for n in names):
        return SystemOutput(stop_reason="other", error=f"timed out: {type(exc).__name__}", error_kind="timeout")
    if isinstance(exc, httpx.TransportError | ConnectionError) or names & {"TransportError", "NetworkError", "ProtocolError"}:
        return SystemOutput(stop_reason="other", error=f"transport failure: {type(exc).__name__}: {exc}", error_kind="transport")
    return SystemOutput(stop_reason="other", error=f"{type(exc).__name__}: {exc}", error_kind="other")


def failure_from_status(status: int, body: str, served: str | None = None) -> SystemOutput:
    """429 is rate limiting, 5xx a transient server failure, any other non-2xx a hard error."""
    kind = "rate_limited" if status == 429 else "transport" if status >= 500 else "other"
    return SystemOutput(
        stop_reason="other",
        error=f"HTTP {status}: {body[:200]}",
        error_kind=kind,
        http_status=status,
        served_version=served,
    )


class HttpSystem:
    """The production endpoint; thread-safe (one pooled httpx client)."""

    name = "http"
    kind = "endpoint"

    def __init__(self, config: HttpSystemConfig, *, concurrency: int = 8) -> None:
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
        self._client = httpx.Client(
            timeout=config.timeout_s,
            headers=headers,
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        )

    def close(self) -> None:
        self._client.close()

    def respond(self, question: Question, seed: int) -> SystemOutput:
        payload = {"question": question.question, "kg": question.kg, "seed": seed}
        try:
            response = self._client.post(self.config.url, json=payload)  # type: ignore[arg-type]
        except httpx.HTTPError as exc:
            return failure_from_exception(exc)
        served = response.headers.get(self.config.version_header)
        if response.status_code >= 300:
            return failure_from_status(response.status_code, response.text, served)
        output = _parse_body(response.text)
        return output.model_copy(update={"served_version": served, "http_status": response.status_code})


def _parse_body(text: str) -> SystemOutput:
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        return SystemOutput(stop_reason="other", error=f"malformed response: not valid JSON ({exc.msg} at {exc.pos})", error_kind="other")
    if not isinstance(body, dict):
        return SystemOutput(stop_reason="other", error=f"malformed response: a JSON {type(body).__name__}, not an object", error_kind="other")
    sparql, answer, reason = body.get("sparql"), body.get("answer"), body.get("stop_reason") or "stop"
    if sparql is not None and not isinstance(sparql, str):
        return SystemOutput(stop_reason="other", error="malformed response: 'sparql' is not a string", error_kind="other")
    if answer is not None and not isinstance(answer, list):
        return SystemOutput(stop_reason="other", error="malformed response: 'answer' is not a list", error_kind="other")
    stop = reason if reason in _STOP_REASONS else "other"
    return SystemOutput(sparql=sparql, answer=answer, stop_reason=stop, finish_reason=str(reason))
