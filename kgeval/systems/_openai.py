"""Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, TGI, LiteLLM ...)
through the official `openai` client: the same schema-summary + guarded few-shot prompt as the
gemini system (kgeval/systems/_prompt.py).

The answer is the message's `content`; a structured `refusal` is a safety stop, never read as
an answer. Finish reasons map to terminal states (stop, length, content_filter; tool calls and
anything else: other); token usage (reasoning tokens apart) and the served model (with the
system fingerprint when the endpoint gives one) are recorded per attempt. Retries belong to
the runner (each try recorded), so the client's own retries are off; a 429's or 503's
Retry-After is passed on to it.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from kgeval.config import OpenAISystemConfig
from kgeval.errors import InputError
from kgeval.holdout import Question
from kgeval.systems._examples import FewShotBank
from kgeval.systems._http import failure_from_exception, failure_from_status
from kgeval.systems._model import StopReason, SystemOutput, Usage, malformed_reply
from kgeval.systems._prompt import INSTRUCTION, PromptedModel, output_from_text

_FINISH: dict[str, StopReason] = {"stop": "stop", "length": "length", "content_filter": "content_filter"}
_KEYLESS = "unused"
"""The key sent to an endpoint that takes none (the client insists on one)."""


class OpenAISystem(PromptedModel):
    """An OpenAI-compatible endpoint as a system under test; thread-safe once prepared."""

    name = "openai"

    def __init__(self, config: OpenAISystemConfig, *, bank: FewShotBank | None = None, client: Any = None) -> None:
        if not config.model:
            raise InputError("system 'openai' needs systems.openai.model in the configuration (--config FILE)")
        reasoning = {
            "model": config.model,
            "base_url": config.base_url,
            "max_tokens": config.max_tokens,
            "temperature": config.temperature,
            "reasoning_effort": config.reasoning_effort,
        }
        super().__init__(config, bank, reasoning)
        self.config: OpenAISystemConfig = config
        self._client = client if client is not None else _make_client(config)
        self._client.chat.completions  # noqa: B018 - the client imports its resources on first use: here, not in the first calls

    def respond(self, question: Question, seed: int) -> SystemOutput:
        options: dict[str, Any] = {"reasoning_effort": self.config.reasoning_effort} if self.config.reasoning_effort else {}
        messages = [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": self.prompt(question)}]
        started = time.perf_counter()  # the latency is the call's: the prompt is built before it
        output = self._complete(messages, seed, options)
        return output.model_copy(update={"call_ms": (time.perf_counter() - started) * 1000})

    def _complete(self, messages: list[dict[str, str]], seed: int, options: dict[str, Any]) -> SystemOutput:
        import openai

        try:
            response = self._client.chat.completions.create(
                model=self.config.model, messages=messages, temperature=self.config.temperature, seed=seed,
                max_completion_tokens=self.config.max_tokens, **options,
            )  # fmt: skip
        except openai.APIStatusError as exc:
            return failure_from_status(exc.status_code, str(exc.message), retry_after=exc.response.headers.get("retry-after"))
        except openai.APITimeoutError as exc:  # before APIConnectionError: it is one
            return failure_from_exception("timeout", exc)
        except openai.APIConnectionError as exc:
            return failure_from_exception("transport", exc)
        except openai.APIResponseValidationError as exc:
            return malformed_reply(self.name, self._where, str(exc), exc.body)
        except json.JSONDecodeError as exc:  # a 200 whose body is not JSON (a proxy's HTML page)
            return malformed_reply(self.name, self._where, f"not JSON ({exc.msg} at character {exc.pos})", exc.doc)
        return output_from_completion(response, self._where)

    @property
    def _where(self) -> str:
        base = getattr(self._client, "base_url", None) or self.config.base_url  # the client's: it reads OPENAI_BASE_URL too
        return f"POST {str(base or 'https://api.openai.com/v1').rstrip('/')}/chat/completions"


def _make_client(config: OpenAISystemConfig) -> Any:
    from openai import OpenAI

    api_key = os.environ.get(config.api_key_env) if config.api_key_env else _KEYLESS
    if not api_key:
        raise InputError(
            f"system 'openai': environment variable {config.api_key_env} (systems.openai.api_key_env) is not set; "
            "set api_key_env: null for an endpoint without keys"
        )
    from openai import DefaultHttpxClient

    from kgeval.systems._deadline_httpx import deadline_transport, http_module_of

    # timeout_s is a deadline for the whole call (a trickled or endless reply times out at it)
    transport = deadline_transport(config.timeout_s, http_module_of(DefaultHttpxClient))
    http = DefaultHttpxClient(transport=transport, timeout=config.timeout_s)
    return OpenAI(api_key=api_key, base_url=config.base_url, timeout=config.timeout_s, max_retries=0, http_client=http)


def output_from_completion(response: Any, where: str = "chat completion") -> SystemOutput:
    """A SystemOutput from a ChatCompletion: the first choice's content, its finish reason. A
    reply that is not one (text where JSON belongs, a field of another type: the client does not
    validate) is a harness error naming `where` it came from, the field and what it held."""
    problem = _malformed(response)
    if problem is not None:
        return malformed_reply("openai", where, *problem)
    usage, served = _usage(response.usage), _served(response)
    if not response.choices:
        return SystemOutput(stop_reason="other", finish_reason=None, served_version=served, usage=usage, error="the response has no choices", error_kind="other")
    choice = response.choices[0]
    message = choice.message
    finish = choice.finish_reason
    if getattr(message, "refusal", None):
        return SystemOutput(stop_reason="safety", finish_reason=f"refusal: {message.refusal[:200]}", served_version=served, usage=usage)
    stop = _FINISH.get(finish, "other") if finish else "stop"
    return output_from_text(message.content or "", stop, finish_reason=finish, served_version=served, usage=usage)


def _malformed(response: Any) -> tuple[str, object] | None:
    """(what is wrong, what was received) when `response` is not a chat completion the adapter
    can read; None when it is."""
    if not hasattr(response, "choices"):
        return f"not a chat completion (a {type(response).__name__})", response
    if response.choices is not None and not isinstance(response.choices, list):
        return f"choices is a {type(response.choices).__name__}, not a list", response.choices
    if not response.choices:
        return None
    choice = response.choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        return "choices[0] has no message", choice
    fields = (
        ("choices[0].finish_reason", getattr(choice, "finish_reason", None)),
        ("choices[0].message.content", getattr(message, "content", None)),
        ("choices[0].message.refusal", getattr(message, "refusal", None)),
    )
    for name, value in fields:
        if value is not None and not isinstance(value, str):
            return f"{name} is a {type(value).__name__}, not a string", value
    return None


def _served(response: Any) -> str | None:
    fingerprint = getattr(response, "system_fingerprint", None)
    return f"{response.model} ({fingerprint})" if response.model and fingerprint else response.model


def _usage(usage: Any) -> Usage | None:
    if usage is None:
        return None
    details = getattr(usage, "completion_tokens_details", None)
    return Usage(
        prompt_tokens=usage.prompt_tokens,
        candidates_tokens=usage.completion_tokens,
        thoughts_tokens=getattr(details, "reasoning_tokens", None),
        total_tokens=usage.total_tokens,
    )
