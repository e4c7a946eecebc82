"""Gemini through google-genai: SPARQL from the question, the KG schema and retrieved examples.

Text is taken from the response parts by type: text parts that are not thoughts, in order.
Thought parts are counted, never read as the answer; a response whose only text is a thought
is empty. Finish reason, token usage (prompt, candidates, thoughts) and the served model
version are recorded with every attempt. Retries belong to the runner (each try recorded), so
the client's own retries are off.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import httpx

from kgeval.config import GeminiSystemConfig
from kgeval.errors import InputError
from kgeval.holdout import Question
from kgeval.systems._examples import FewShotBank
from kgeval.systems._http import failure_from_exception, failure_from_status
from kgeval.systems._model import StopReason, SystemOutput, Usage, malformed_reply
from kgeval.systems._prompt import INSTRUCTION, PromptedModel, output_from_text

_FINISH: dict[str, StopReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "safety",
    "IMAGE_SAFETY": "safety",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "RECITATION": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MODEL_ARMOR": "content_filter",
}


def _failure_from_httpx(exc: Exception) -> SystemOutput:
    """Classify a client failure: timeouts, then connection/protocol failures. By class name as
    well as by httpx's classes: SDKs may use their own copy of httpx (google-genai's httpx2)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, httpx.TimeoutException | TimeoutError) or any("Timeout" in n for n in names):
        return failure_from_exception("timeout", exc)
    if isinstance(exc, httpx.TransportError | ConnectionError) or names & {"TransportError", "NetworkError", "ProtocolError"}:
        return failure_from_exception("transport", exc)
    return failure_from_exception("other", exc)


class GeminiSystem(PromptedModel):
    """Gemini as a system under test; thread-safe once the KG schemas are prepared."""

    name = "gemini"

    def __init__(self, config: GeminiSystemConfig, *, bank: FewShotBank | None = None, client: Any = None) -> None:
        reasoning = {
            "model": config.model,
            "thinking_budget": config.thinking_budget,
            "include_thoughts": config.include_thoughts,
            "max_output_tokens": config.max_output_tokens,
            "temperature": config.temperature,
        }
        super().__init__(config, bank, reasoning)
        self.config: GeminiSystemConfig = config
        self._client = client if client is not None else _make_client(config)

    def respond(self, question: Question, seed: int) -> SystemOutput:
        from google.genai import types

        config = types.GenerateContentConfig(
            system_instruction=INSTRUCTION,
            temperature=self.config.temperature,
            seed=seed,
            max_output_tokens=self.config.max_output_tokens,
            thinking_config=types.ThinkingConfig(
                thinking_budget=self.config.thinking_budget, include_thoughts=self.config.include_thoughts
            ),
        )
        prompt, started = self.prompt(question), time.perf_counter()  # the latency is the call's: the prompt is built before it
        output = self._generate(prompt, config)
        return output.model_copy(update={"call_ms": (time.perf_counter() - started) * 1000})

    def _generate(self, prompt: str, config: Any) -> SystemOutput:
        from google.genai import errors

        try:
            response = self._client.models.generate_content(model=self.config.model, contents=prompt, config=config)
        except errors.APIError as exc:
            headers = getattr(getattr(exc, "response", None), "headers", None) or {}
            return failure_from_status(int(exc.code or 0), str(exc.message or exc), retry_after=headers.get("retry-after"))
        except ValueError as exc:  # the SDK could not parse a 200 body: not JSON, or not its schema
            return _malformed(exc, self._where)
        except Exception as exc:  # noqa: BLE001 - transport failures of httpx (or httpx2), classified
            return _failure_from_httpx(exc)
        return output_from_response(response)

    @property
    def _where(self) -> str:
        base = (self.config.base_url or "https://generativelanguage.googleapis.com").rstrip("/")
        return f"POST {base} models/{self.config.model}:generateContent"


def _malformed(exc: ValueError, where: str) -> SystemOutput:
    """The SDK's parse failure as a malformed reply: what is wrong and what was received."""
    if isinstance(exc, json.JSONDecodeError):
        return malformed_reply("gemini", where, f"not JSON ({exc.msg} at character {exc.pos})", exc.doc)
    errors = getattr(exc, "errors", None)
    if callable(errors):  # pydantic's ValidationError: the first field that does not fit
        first = errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        return malformed_reply("gemini", where, f"{field}: {first['msg']}", first.get("input"))
    return malformed_reply("gemini", where, "the client could not read it", str(exc))


def _make_client(config: GeminiSystemConfig) -> Any:
    from google import genai
    from google.genai import types

    api_key = os.environ.get(config.api_key_env)
    if not api_key:
        raise InputError(f"system 'gemini': environment variable {config.api_key_env} (systems.gemini.api_key_env) is not set")
    from kgeval.systems._deadline_httpx import deadline_transport

    # timeout_s is a deadline for the whole call (a trickled or endless reply times out at it)
    transport = deadline_transport(config.timeout_s)
    options = types.HttpOptions(base_url=config.base_url, timeout=int(config.timeout_s * 1000), client_args={"transport": transport})
    return genai.Client(api_key=api_key, http_options=options)


def output_from_response(response: Any) -> SystemOutput:
    """A SystemOutput from a GenerateContentResponse: text parts by type, never by position."""
    usage = _usage(response.usage_metadata)
    served = response.model_version
    if not response.candidates:
        block = response.prompt_feedback.block_reason if response.prompt_feedback else None
        if block is not None:
            name = getattr(block, "name", str(block))
            stop: StopReason = "safety" if name == "SAFETY" else "content_filter"
            return SystemOutput(stop_reason=stop, finish_reason=f"prompt blocked: {name}", served_version=served, usage=usage)
        return SystemOutput(stop_reason="stop", finish_reason=None, served_version=served, usage=usage)
    candidate = response.candidates[0]
    finish = getattr(candidate.finish_reason, "name", None) if candidate.finish_reason is not None else None
    parts = (candidate.content.parts or []) if candidate.content else []
    text = "".join(p.text for p in parts if p.text and not p.thought)
    stop = _FINISH.get(finish, "other") if finish else "stop"
    return output_from_text(text, stop, finish_reason=finish, served_version=served, usage=usage)


def _usage(meta: Any) -> Usage | None:
    if meta is None:
        return None
    return Usage(
        prompt_tokens=meta.prompt_token_count,
        candidates_tokens=meta.candidates_token_count,
        thoughts_tokens=meta.thoughts_token_count,
        total_tokens=meta.total_token_count,
    )
