"""What a system under test returns for one attempt, and how it describes itself."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal, Protocol

from pydantic import BaseModel, field_validator

from kgeval.config import PipelineConfig
from kgeval.holdout import Question

StopReason = Literal["stop", "length", "content_filter", "safety", "missing", "other"]
"""Why a system stopped, normalized across providers: a natural end, cut off at its output
limit, withheld by a content filter or a safety filter, no recorded answer (replay), or
anything else (the provider's own reason is kept in `SystemOutput.finish_reason`)."""

ErrorKind = Literal[
    "empty",
    "truncated_empty",
    "content_filter",
    "safety",
    "timeout",
    "transport",
    "rate_limited",
    "invalid_sparql",
    "missing",
    "store",
    "candidate_timeout",
    "other",
]
"""Why an attempt ended without a judgeable answer: a harness failure (the system could not
answer through no fault of its own). Never judged, never in accuracy; counted, and above
`run.max_error_share` no accuracy is published (DESIGN invariant 5).

empty: the system answered nothing; truncated_empty: cut off before anything usable;
content_filter / safety: withheld by a filter; timeout, transport (connection failures and
5xx), rate_limited (429): the call failed; missing: a replay file has no record for the
attempt; store: the graph store failed on the candidate's query (down, unreachable, a server
fault) though the query itself was acceptable; candidate_timeout: the candidate's query ran past
`run.candidate_timeout_s` and `run.candidate_timeout_counts_as` is "error"; other: anything else
(a malformed reply: `malformed_reply`; a 4xx, ...), with the detail in the error text.

invalid_sparql: a response with text but no query (`_prompt.output_from_text`) is the model's
own failure: the run judges it wrong (path invalid_sparql), never excludes it; runs recorded
before model failures were judged keep it as an error state. A model's other failures (SPARQL
that does not parse or run, a refused query, a candidate timeout by default) are judged wrong
too, see `kgeval.judges.FailureKind`."""

TRANSIENT_ERRORS: frozenset[str] = frozenset({"timeout", "transport", "rate_limited"})
"""Error kinds worth another try: the same call may succeed a moment later."""


class Usage(BaseModel):
    """Token usage of one call, as the provider reported it."""

    prompt_tokens: int | None = None
    candidates_tokens: int | None = None
    """Tokens of the visible output."""
    thoughts_tokens: int | None = None
    """Tokens spent on thinking (not part of the visible output)."""
    total_tokens: int | None = None


class OutputCut(BaseModel):
    """An output over `run.max_output_bytes`: judged wrong as over budget (the model's failure,
    DESIGN invariant 5), and stored cut, with the size and sha256 of the whole."""

    part: Literal["sparql", "text", "answer", "body"]
    """What was over: the SPARQL, the model's whole text, the answer list (as JSON), or an
    endpoint's whole reply body (read no further than the limit)."""
    bytes: int
    """Size of the whole, in bytes: UTF-8, or as the replay file holds it (JSON escapes included)."""
    sha256: str
    """sha256 of those bytes."""
    limit: int
    """`run.max_output_bytes` when it was cut."""

    def reason(self) -> str:
        return f"the output's {self.part} is {self.bytes:,} bytes, over the {self.limit:,}-byte limit (run.max_output_bytes); stored cut"


class SystemOutput(BaseModel):
    """One attempt's raw output, as the system gave it."""

    sparql: str | None = None
    """The SPARQL the system generated, when it generated one."""
    answer: list[Any] | None = None
    """The answer items the system gave, when it gave a list."""
    stop_reason: StopReason = "stop"
    """Why the system stopped, normalized."""
    finish_reason: str | None = None
    """The provider's own stop reason (e.g. Gemini's "MAX_TOKENS"), kept verbatim."""
    error: str | None = None
    """Set when the system failed to produce an answer; says what failed."""
    error_kind: ErrorKind | None = None
    """The adapter's classification of `error` (timeout, transport, ...); "other" if unset."""
    http_status: int | None = None
    served_version: str | None = None
    """The version the system reported serving this call (a version header, a model version)."""
    usage: Usage | None = None
    raw_text: str | None = None
    """The visible text a model produced (thought parts excluded), when it produced text."""
    retry_after_s: float | None = None
    """How long the system asked to be left alone before another try (an HTTP `Retry-After`
    on a 429 or 503), in seconds; the runner waits at least this long before retrying."""
    cut: OutputCut | None = None
    """Set when the output was over `run.max_output_bytes`: what it holds is the head of it."""
    call_ms: float | None = None
    """Milliseconds the call to the model or endpoint took, measured by the system around the
    request alone (not the prompt's few-shot retrieval, nor a client's first-use imports); the
    attempt's latency. None: the runner times the whole `respond()`."""

    @field_validator("sparql", "answer", "finish_reason", "error", "served_version", "raw_text", mode="before")
    @classmethod
    def _storable_text(cls, value: Any) -> Any:
        """A lone surrogate (a legal JSON escape, "\\ud800") cannot be stored as UTF-8: the run's
        database write failed on it and the run died. It becomes U+FFFD, as any decoder would."""
        return _storable(value)


def bounded_output(output: SystemOutput, max_bytes: int) -> SystemOutput:
    """`output`, or, when its SPARQL, its text or its answer list (as JSON) is over `max_bytes`
    UTF-8 bytes, its head with `cut` saying what was over, its size and hash (a system that read
    it cut already, as the replay reader and the HTTP system do, set `cut` itself)."""
    if output.cut is not None:
        return output
    answer = json.dumps(output.answer, default=repr, ensure_ascii=False) if output.answer is not None else None
    for part, text in (("sparql", output.sparql), ("text", output.raw_text), ("answer", answer)):
        data = text.encode("utf-8", "surrogatepass") if text else b""
        if len(data) > max_bytes:
            cut = OutputCut(part=part, bytes=len(data), sha256=hashlib.sha256(data).hexdigest(), limit=max_bytes)
            kept = None if output.answer is None or len(answer.encode("utf-8", "surrogatepass")) > max_bytes else output.answer  # type: ignore[union-attr]
            update = {"cut": cut, "sparql": head_of(output.sparql, max_bytes), "raw_text": head_of(output.raw_text, max_bytes), "answer": kept}
            return output.model_copy(update=update)
    return output


def head_of(text: str | None, max_bytes: int) -> str | None:
    """The longest head of `text` of at most `max_bytes` UTF-8 bytes."""
    if text is None or len(text) * 4 <= max_bytes:
        return text
    return text.encode("utf-8", "surrogatepass")[:max_bytes].decode("utf-8", "ignore")


ANSWER_DEPTH = 32
"""How deep lists and objects may nest in what a system gives; a container deeper down is kept as
`TOO_DEEP` (no answer item is one: it is judged wrong, as any list or object item is)."""
TOO_DEEP = f"(nested more than {ANSWER_DEPTH} levels deep)"


def _storable(value: Any) -> Any:
    """`value` with every text in it (in lists and objects) storable, nested at most
    ANSWER_DEPTH deep. A loop, not recursion: an answer nested 500 deep (1 KB of valid JSON)
    raised RecursionError, and the results database's JSON refuses more than 255 levels; either
    made the model's attempt a harness error or ended the run (DESIGN invariant 5)."""
    root = [value]
    pending: list[tuple[list | dict, Any, int]] = [(root, 0, 0)]
    while pending:
        container, key, depth = pending.pop()
        item = container[key]
        if isinstance(item, str):
            container[key] = item.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        elif isinstance(item, list | dict) and depth > ANSWER_DEPTH:
            container[key] = TOO_DEEP
        elif isinstance(item, list):
            container[key] = copy = list(item)
            pending.extend((copy, i, depth + 1) for i in range(len(copy)))
        elif isinstance(item, dict):
            container[key] = copy = dict(item)
            pending.extend((copy, k, depth + 1) for k in copy)
    return root[0]


SHOWN_CHARS = 200
"""How much of a malformed reply an error message quotes."""


def malformed_reply(system: str, where: str, problem: str, received: object) -> SystemOutput:
    """A reply the harness cannot read (an HTML page where JSON belongs, a field of the wrong
    type): the endpoint's or a proxy's failure, not the model's, so a harness error (kind
    "other", never judged: DESIGN invariant 5) whose message names the system, where the reply
    came from, what is wrong and what was received (truncated)."""
    return SystemOutput(
        stop_reason="other",
        error=f"system {system!r}: {where}: malformed reply: {problem}; received {shown(received)}",
        error_kind="other",
    )


def shown(value: object) -> str:
    """`value` for an error message: its repr, cut at SHOWN_CHARS characters with the full size said."""
    text = value if isinstance(value, str) else repr(value)
    quote = repr if isinstance(value, str) else str
    if len(text) <= SHOWN_CHARS:
        return quote(text)
    return f"{quote(text[:SHOWN_CHARS])}... ({len(text):,} characters)"


class System(Protocol):
    """A system under test. `respond` must be deterministic for a given (question, seed)
    where the system allows it; seeds make sampling variance visible. `respond` may be called
    from several threads at once; it reports failures in `SystemOutput.error`, never raises."""

    name: str
    version: str
    """Declared version (for replay: a hash of the replay file)."""
    kind: Literal["control", "replay", "endpoint", "model"]
    pipeline: PipelineConfig | None
    """The pipeline features the system declares (None: a control or a replay, no pipeline)."""
    reasoning: dict[str, Any]
    """Reasoning settings that change answers (thinking budget, max output tokens, ...)."""

    def respond(self, question: Question, seed: int) -> SystemOutput: ...
