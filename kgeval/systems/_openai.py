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

import os
from typing import Any

from kgeval.config import OpenAISystemConfig
from kgeval.errors import InputError
from kgeval.holdout import Question
from kgeval.systems._examples import FewShotBank
from kgeval.systems._http import failure_from_exception, failure_from_status
from kgeval.systems._model import StopReason, SystemOutput, Usage
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

    def respond(self, question: Question, seed: int) -> SystemOutput:
        import openai

        options: dict[str, Any] = {"reasoning_effort": self.config.reasoning_effort} if self.config.reasoning_effort else {}
        messages = [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": self.prompt(question)}]
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
            return SystemOutput(stop_reason="other", error=f"malformed response: {exc}", error_kind="other")
        return output_from_completion(response)


def _make_client(config: OpenAISystemConfig) -> Any:
    from openai import OpenAI

    api_key = os.environ.get(config.api_key_env) if config.api_key_env else _KEYLESS
    if not api_key:
        raise InputError(
            f"system 'openai': environment variable {config.api_key_env} (systems.openai.api_key_env) is not set; "
            "set api_key_env: null for an endpoint without keys"
        )
    return OpenAI(api_key=api_key, base_url=config.base_url, timeout=config.timeout_s, max_retries=0)


def output_from_completion(response: Any) -> SystemOutput:
    """A SystemOutput from a ChatCompletion: the first choice's content, its finish reason."""
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
