"""The `openai` system with the REAL openai client, pointed at a loopback server that answers
/v1/chat/completions as an OpenAI-compatible endpoint does (vLLM, Ollama, LiteLLM ...):
finish reasons, refusals, usage, served model, errors and Retry-After."""

from __future__ import annotations

import time

import pytest

from kgeval.config import GeminiSystemConfig, KgevalConfig, OpenAISystemConfig, RunConfig
from kgeval.judges import judges_from_config
from kgeval.runs import run_attempt
from kgeval.systems import GeminiSystem, OpenAISystem, guarded_bank, system_from_name
from tests.servers import LoopbackServer, Reply
from tests.systems.test_gemini import BANK

CFG = KgevalConfig(run=RunConfig(seeds=1, retry_backoff_s=0.0))


def chat_completion(content: str | None = "```sparql\nASK {}\n```", *, finish: str | None = "stop", refusal: str | None = None, model: str = "qwen2.5-coder-7b", fingerprint: str | None = "fp_3a1") -> dict:
    """A chat.completion body as OpenAI-compatible servers send it."""
    message = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1764460800, "model": model, "system_fingerprint": fingerprint,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 640, "completion_tokens": 38, "total_tokens": 678, "completion_tokens_details": {"reasoning_tokens": 12}},
    }  # fmt: skip


def _attempt(mini, reply, question_index=1, config=CFG, **settings):
    holdout, gold, store = mini
    question = holdout.kgs[0].questions[question_index]
    bank = guarded_bank(BANK, holdout, KgevalConfig())
    with LoopbackServer(lambda path, body, n: reply(n) if callable(reply) else reply) as server:
        system = OpenAISystem(OpenAISystemConfig(model="qwen2.5-coder-7b", base_url=f"{server.url}/v1", api_key_env=None, **settings), bank=bank)
        system.prepare("mini", store)
        attempt, verdicts = run_attempt(question, 0, system, store, judges_from_config(config.judges), gold[question.id].result, config)
    return attempt, verdicts, server.requests, system


def test_answer_usage_served_model_and_the_gemini_prompt(mini, monkeypatch):
    holdout, _, store = mini
    reference = holdout.kgs[0].questions[1].sparql
    attempt, verdicts, requests, system = _attempt(mini, Reply(body=chat_completion(f"Here it is:\n```sparql\n{reference}\n```")), max_tokens=900)
    assert attempt.state == "answered" and verdicts[0].correct, verdicts[0].reason
    assert attempt.sparql == reference.strip() and attempt.finish_reason == "stop"
    assert attempt.served_version == "qwen2.5-coder-7b (fp_3a1)"
    assert (attempt.usage.prompt_tokens, attempt.usage.candidates_tokens, attempt.usage.thoughts_tokens, attempt.usage.total_tokens) == (640, 38, 12, 678)
    path, request = requests[0]
    assert path == "/v1/chat/completions" and request["model"] == "qwen2.5-coder-7b"
    assert request["seed"] == 0 and request["max_completion_tokens"] == 900 and request["temperature"] == 0
    system_message, user_message = request["messages"]
    # the very prompt the gemini system sends: one prompt code for every model
    monkeypatch.setenv("GEMINI_API_KEY", "unused")
    gemini = GeminiSystem(GeminiSystemConfig(), bank=guarded_bank(BANK, holdout, KgevalConfig()))
    gemini.prepare("mini", store)
    assert user_message["content"] == gemini.prompt(holdout.kgs[0].questions[1])
    assert "Who works in the warehouse?" in user_message["content"] and "?leak" not in user_message["content"]
    assert system_message["role"] == "system" and "SPARQL" in system_message["content"]
    assert system.pipeline.for_kg("mini") == {"few_shot_retrieval": True, "few_shot_k": 5, "schema_in_prompt": True}


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (chat_completion(None, finish="length"), "truncated_empty"),
        (chat_completion("```sparql\nSELECT ?p WHERE { ?p <http://exa", finish="length"), "truncated_empty"),
        (chat_completion("", finish="content_filter"), "content_filter"),
        (chat_completion(None, refusal="I can't help with that."), "safety"),
        (chat_completion("", finish="stop"), "empty"),
        (chat_completion(None, finish="tool_calls"), "other"),
        (chat_completion("```sparql\nASK {}\n```", finish="abort"), "other"),  # vLLM's aborted request
        ({**chat_completion(), "choices": []}, "other"),
    ],
)
def test_finish_reasons_land_in_named_states(mini, body, kind):
    attempt, verdicts, _, _ = _attempt(mini, Reply(body=body))
    assert (attempt.state, attempt.error_kind) == ("error", kind), attempt.error
    assert verdicts == []


def _with_choice(**fields) -> dict:
    body = chat_completion()
    choice = body["choices"][0]
    for name, value in fields.items():
        if name.startswith("message_"):
            choice["message"][name.removeprefix("message_")] = value
        else:
            choice[name] = value
    return body


HTML = "<html><head><title>502 Bad Gateway</title></head><body>" + "<center>nginx</center>" * 30 + "</body></html>"


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (Reply(body=_with_choice(finish_reason=["stop", "length"])), ["choices[0].finish_reason is a list, not a string", "['stop', 'length']"]),
        (Reply(body=_with_choice(finish_reason={"type": "stop"})), ["choices[0].finish_reason is a dict, not a string", "{'type': 'stop'}"]),
        (Reply(body=_with_choice(message_content=[{"type": "text", "text": "ASK {}"}])), ["choices[0].message.content is a list, not a string", "'text': 'ASK {}'"]),
        (Reply(body=HTML, headers={"Content-Type": "text/html"}), ["not a chat completion (a str)", "'<html><head><title>502 Bad Gateway", f"({len(HTML):,} characters)"]),
        (Reply(body=HTML), ["not JSON (Expecting value at character 0)", "'<html><head><title>502 Bad Gateway"]),  # sent as application/json
    ],
    ids=["finish_reason a list", "finish_reason an object", "content a list", "an HTML page", "an HTML page said to be JSON"],
)
def test_a_malformed_reply_is_a_harness_error_naming_system_url_and_what_came(mini, reply, said):
    """A reply the client does not validate is read by the adapter: a field of another type, or
    no JSON at all, is the endpoint's or a proxy's failure (an error state, never judged), its
    message naming the system, the URL, the field and what it held. It was 'system raised
    TypeError: unhashable type: 'list'' (or AttributeError, JSONDecodeError)."""
    attempt, verdicts, _, _ = _attempt(mini, reply)
    assert (attempt.state, attempt.error_kind, verdicts, len(attempt.tries)) == ("error", "other", [], 1), attempt.error
    assert attempt.error.startswith("system 'openai': POST http://127.0.0.1:") and "/v1/chat/completions: malformed reply: " in attempt.error, attempt.error
    assert all(part in attempt.error for part in said), attempt.error
    assert "<center>nginx</center>" * 10 not in attempt.error  # truncated


def test_prose_without_a_query_is_the_models_failure_judged_wrong(mini):
    """A reply with text but no query at a natural stop is the model's invalid SPARQL: judged
    wrong and in the denominator (DESIGN invariant 5), never excused as a harness error (it was:
    a model answering in prose scored higher than one writing wrong SPARQL)."""
    attempt, verdicts, _, _ = _attempt(mini, Reply(body=chat_completion("I cannot answer that from this schema.", finish="stop")))
    assert attempt.state == "answered" and attempt.error_kind is None and attempt.extra["failure"] == "invalid_sparql"
    assert verdicts and all(not v.correct and v.path == "invalid_sparql" for v in verdicts)
    assert all("the response has text but no SPARQL query" in v.reason for v in verdicts)


def test_cut_off_but_runnable_query_is_incomplete_and_judged(mini):
    reference = mini[0].kgs[0].questions[1].sparql
    attempt, verdicts, _, _ = _attempt(mini, Reply(body=chat_completion(f"```sparql\n{reference}", finish="length")))
    assert attempt.state == "incomplete" and attempt.finish_reason == "length"
    assert verdicts and verdicts[0].correct


@pytest.mark.parametrize(("status", "kind", "tries"), [(429, "rate_limited", 3), (503, "transport", 3), (401, "other", 1), (400, "other", 1)])
def test_api_errors_are_classified_and_transient_ones_retried(mini, status, kind, tries):
    error = {"error": {"message": "nope", "type": "invalid_request_error", "code": None}}
    attempt, verdicts, requests, _ = _attempt(mini, Reply(status=status, body=error))
    assert (attempt.state, attempt.error_kind) == ("error", kind)
    assert len(attempt.tries) == len(requests) == tries and verdicts == []
    assert all(t.http_status == status for t in attempt.tries)


def test_retry_after_is_honoured(mini):
    """429 with Retry-After: 1, then an answer: the second try waits at least the second the
    server asked for, although the configured backoff is 10 ms."""
    seen: list[float] = []

    def reply(n: int) -> Reply:
        seen.append(time.monotonic())
        if n == 1:
            return Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "1"})
        return Reply(body=chat_completion())

    config = KgevalConfig(run=RunConfig(seeds=1, retry_backoff_s=0.01))
    attempt, _, requests, _ = _attempt(mini, reply, config=config)
    assert [t.outcome for t in attempt.tries] == ["rate_limited", "ok"] and len(requests) == 2
    assert seen[1] - seen[0] >= 1.0


def test_timeout_and_refused_connection(mini):
    attempt, _, _, _ = _attempt(mini, Reply(body=chat_completion(), hold=True), timeout_s=0.5)
    assert attempt.error_kind == "timeout" and len(attempt.tries) == 3, attempt.error
    holdout, gold, store = mini
    with LoopbackServer(lambda *_: Reply()) as server:
        url = f"{server.url}/v1"
    system = OpenAISystem(OpenAISystemConfig(model="m", base_url=url, api_key_env=None))  # the server is gone
    system.prepare("mini", store)
    output = system.respond(holdout.kgs[0].questions[0], 0)
    assert output.error_kind == "transport", output.error


def test_configuration_errors_are_clear(monkeypatch):
    from kgeval.errors import InputError

    with pytest.raises(InputError, match="systems.openai.model"):
        system_from_name("openai", config=KgevalConfig())
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(InputError, match="OPENAI_API_KEY.*api_key_env: null"):
        OpenAISystem(OpenAISystemConfig(model="m"))


DEADLINE_S = 2.0
TRICKLES = {
    "trickled body": Reply(body={"x": 1}, trickle="body", trickle_pad=100_000),
    "trickled headers": Reply(body={"x": 1}, trickle="headers", trickle_pad=10_000),
    "endless body": Reply(trickle="endless", trickle_gap_s=0.01),
}


@pytest.mark.parametrize("case", list(TRICKLES))
@pytest.mark.parametrize("name", ["openai", "gemini"])
def test_timeout_s_is_a_deadline_for_the_whole_call_of_the_sdk_systems(mini, monkeypatch, name, case):
    """The SDKs read through httpx, whose timeout bounds each read: a reply trickled a byte at
    a time, or an endless body, held a call with `timeout_s: 2` past 25 s. With the deadline
    transport the attempt ends as the endpoint's timeout; 15 times the deadline is a stall's
    bound, not a margin (on main each ran until the server stopped, 120 s)."""
    monkeypatch.setenv("GEMINI_API_KEY", "test")
    holdout, gold, store = mini
    question = holdout.kgs[0].questions[1]
    once = KgevalConfig(run=RunConfig(seeds=1, retry_backoff_s=0.0, max_tries=1))
    with LoopbackServer(lambda path, body, n: TRICKLES[case]) as server:
        if name == "openai":
            system = OpenAISystem(OpenAISystemConfig(model="m", base_url=f"{server.url}/v1", api_key_env=None, timeout_s=DEADLINE_S))
        else:
            system = GeminiSystem(GeminiSystemConfig(base_url=server.url, timeout_s=DEADLINE_S))
        system.prepare("mini", store)
        started = time.monotonic()
        attempt, verdicts = run_attempt(question, 0, system, store, judges_from_config(once.judges), gold[question.id].result, once)
        took = time.monotonic() - started
    assert (attempt.state, attempt.error_kind, verdicts) == ("error", "timeout", []), attempt.error
    assert took < 15 * DEADLINE_S, took


@pytest.mark.parametrize("name", ["openai", "gemini"])
def test_a_reply_in_many_pieces_within_the_deadline_is_read_by_the_sdk_systems(mini, monkeypatch, name):
    monkeypatch.setenv("GEMINI_API_KEY", "test")
    from tests.servers import generate_content

    holdout, gold, store = mini
    question = holdout.kgs[0].questions[1]
    body = chat_completion(f"```sparql\n{question.reference_query}\n```") if name == "openai" else generate_content(f"```sparql\n{question.reference_query}\n```")
    with LoopbackServer(lambda path, _, n: Reply(body=body, trickle="body", trickle_gap_s=0.0, trickle_pad=200)) as server:
        if name == "openai":
            system = OpenAISystem(OpenAISystemConfig(model="m", base_url=f"{server.url}/v1", api_key_env=None, timeout_s=60))
        else:
            system = GeminiSystem(GeminiSystemConfig(base_url=server.url, timeout_s=60))
        system.prepare("mini", store)
        for _ in range(2):
            attempt, verdicts = run_attempt(question, 0, system, store, judges_from_config(CFG.judges), gold[question.id].result, CFG)
            assert attempt.state == "answered" and verdicts[0].correct, attempt.error


class _SlowBank:
    """A bank whose retrieval takes an hour on the clock the runner reads (the clock is moved,
    nobody waits): the first attempts of a run once reported ~8.7 s where the call took 39 ms."""

    def __init__(self, bank, clock) -> None:
        self.bank, self.clock = bank, clock

    def retrieve(self, question: str, k: int = 3):
        self.clock["offset"] += 3600.0
        return self.bank.retrieve(question, k)

    def __getattr__(self, name: str):
        return getattr(self.bank, name)


def test_latency_is_the_call_alone_not_the_prompts_retrieval(mini, monkeypatch):
    """Issue 44 item 13: an attempt's latency (and each try's) measures the call to the
    endpoint, not what the system did before it."""
    holdout, gold, store = mini
    question = holdout.kgs[0].questions[1]
    clock, real = {"offset": 0.0}, time.perf_counter
    monkeypatch.setattr(time, "perf_counter", lambda: real() + clock["offset"])
    bank = _SlowBank(guarded_bank(BANK, holdout, KgevalConfig()), clock)
    with LoopbackServer(lambda path, body, n: Reply(body=chat_completion())) as server:
        system = OpenAISystem(OpenAISystemConfig(model="m", base_url=f"{server.url}/v1", api_key_env=None), bank=bank)
        system.prepare("mini", store)
        attempt, _ = run_attempt(question, 0, system, store, judges_from_config(CFG.judges), gold[question.id].result, CFG)
    assert clock["offset"] == 3600.0  # the retrieval ran, in the attempt
    assert attempt.state == "answered" and len(attempt.tries) == 1
    assert attempt.tries[0].latency_ms < 3_600_000 and attempt.latency_ms < 3_600_000, (attempt.tries[0].latency_ms, attempt.latency_ms)
