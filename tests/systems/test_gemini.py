"""The Gemini adapter with the REAL google-genai client, pointed at a loopback server that
answers with generateContent JSON as the API does (thought parts, finish reasons, usage)."""

from __future__ import annotations

import pytest

from kgeval.config import GeminiSystemConfig, KgevalConfig, RunConfig
from kgeval.judges import judges_from_config
from kgeval.runs import run_attempt
from kgeval.guards import Example
from kgeval.systems import GeminiSystem, guarded_bank
from tests.servers import LoopbackServer, Reply, generate_content

CFG = KgevalConfig(run=RunConfig(seeds=1, retry_backoff_s=0.0))
BANK = [
    Example(kg="shop", question="Who works in the warehouse?", sparql="SELECT ?p WHERE { ?p <http://x/worksIn> <http://x/warehouse> }"),
    Example(kg="mini", question="Who works in sales?", sparql="SELECT ?leak WHERE { ?leak ?p ?o }"),
    Example(kg="shop", question="How many orders are there?", sparql="SELECT (COUNT(?o) AS ?n) WHERE { ?o a <http://x/Order> }"),
]


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "test")


def _attempt(mini, reply, question_index=1, **config):
    holdout, gold, store = mini
    question = holdout.kgs[0].questions[question_index]
    bank = guarded_bank(BANK, holdout, KgevalConfig())
    with LoopbackServer(lambda path, body, n: reply(n) if callable(reply) else reply) as server:
        system = GeminiSystem(GeminiSystemConfig(base_url=server.url, **config), bank=bank)
        system.prepare("mini", store)
        attempt, verdicts = run_attempt(question, 0, system, store, judges_from_config(CFG.judges), gold[question.id].result, CFG)
    return attempt, verdicts, server.requests, system


def test_sparql_from_text_parts_not_thoughts_with_usage_and_version(mini):
    holdout = mini[0]
    reference = holdout.kgs[0].questions[1].sparql
    # the thought part comes first and itself contains a (wrong) query
    body = generate_content(f"```sparql\n{reference}\n```", thought="Maybe ```sparql\nASK { FILTER(false) }\n```")
    attempt, verdicts, requests, system = _attempt(mini, Reply(body=body), thinking_budget=512, max_output_tokens=2048)
    assert attempt.state == "answered" and verdicts[0].correct, verdicts[0].reason
    assert attempt.sparql == reference.strip()
    assert attempt.finish_reason == "STOP" and attempt.served_version == "gemini-2.5-flash-001"
    assert (attempt.usage.prompt_tokens, attempt.usage.candidates_tokens, attempt.usage.thoughts_tokens) == (812, 41, 230)
    path, request = requests[0]
    assert path.endswith("/models/gemini-2.5-flash:generateContent")
    generation = request["generationConfig"]
    assert generation["maxOutputTokens"] == 2048 and generation["seed"] == 0
    thinking = generation["thinkingConfig"]
    assert thinking.get("thinkingBudget", thinking.get("thinking_budget")) == 512
    assert system.reasoning["thinking_budget"] == 512 and system.reasoning["max_output_tokens"] == 2048


def test_prompt_has_schema_and_examples_but_never_holdout_ones(mini):
    body = generate_content("```sparql\nASK {}\n```")
    _, _, requests, _ = _attempt(mini, Reply(body=body))
    prompt = requests[0][1]["contents"][0]["parts"][0]["text"]
    assert "<http://example.org/mini/vocab/worksIn>" in prompt and "Classes (instances)" in prompt
    assert "Who works in the warehouse?" in prompt
    assert "?leak" not in prompt  # an example from the holdout KG is refused by the bank's guards


@pytest.mark.parametrize(
    ("body", "state", "kind"),
    [
        (generate_content(None, thought="thinking until the limit", finish="MAX_TOKENS"), "error", "truncated_empty"),
        (generate_content("```sparql\nSELECT ?p WHERE { ?p <http://exa", finish="MAX_TOKENS"), "error", "truncated_empty"),
        (generate_content("```sparql\nASK {}\n```", finish="SAFETY"), "error", "safety"),
        (generate_content("partial", finish="PROHIBITED_CONTENT"), "error", "content_filter"),
        (generate_content("", thought=None, finish="STOP"), "error", "empty"),
        (generate_content("```sparql\nASK {}\n```", finish="MALFORMED_FUNCTION_CALL"), "error", "other"),
        ({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": 9}, "modelVersion": "m"}, "error", "content_filter"),
    ],
)
def test_finish_reasons_land_in_named_states(mini, body, state, kind):
    attempt, verdicts, _, _ = _attempt(mini, Reply(body=body))
    assert (attempt.state, attempt.error_kind) == (state, kind), attempt.error
    assert verdicts == []


def _text_part_as_list() -> dict:
    body = generate_content()
    body["candidates"][0]["content"]["parts"][1]["text"] = ["ASK {}"]
    return body


HTML = "<html><head><title>502 Bad Gateway</title></head><body>" + "<center>nginx</center>" * 30 + "</body></html>"


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (Reply(body=_text_part_as_list()), ["candidates.0.content.parts.1.text: Input should be a valid string", "received ['ASK {}']"]),
        (Reply(body=HTML, headers={"Content-Type": "text/html"}), ["not JSON (Expecting value at character 0)", "'<html><head><title>502 Bad Gateway", f"({len(HTML):,} characters)"]),
    ],
    ids=["a text part a list", "an HTML page"],
)
def test_a_malformed_reply_is_a_harness_error_naming_system_url_and_what_came(mini, reply, said):
    """As for the http and openai systems: an error state naming the system, the endpoint, what
    is wrong and what was received (it was 'malformed response: Expecting value: line 1 column 1
    (char 0)', and pydantic's whole multi-line report)."""
    attempt, verdicts, _, _ = _attempt(mini, reply)
    assert (attempt.state, attempt.error_kind, verdicts) == ("error", "other", []), attempt.error
    assert attempt.error.startswith("system 'gemini': POST http://127.0.0.1:") and ":generateContent: malformed reply: " in attempt.error, attempt.error
    assert all(part in attempt.error for part in said), attempt.error


def test_prose_without_a_query_is_the_models_failure_judged_wrong(mini):
    """A reply with text but no query at a natural stop is the model's invalid SPARQL: judged
    wrong and in the denominator (DESIGN invariant 5), never excused as a harness error (it was:
    a model answering in prose scored higher than one writing wrong SPARQL)."""
    attempt, verdicts, _, _ = _attempt(mini, Reply(body=generate_content("I cannot answer that from this schema.", finish="STOP")))
    assert attempt.state == "answered" and attempt.error_kind is None and attempt.extra["failure"] == "invalid_sparql"
    assert verdicts and all(not v.correct and v.path == "invalid_sparql" for v in verdicts)
    assert all("the response has text but no SPARQL query" in v.reason for v in verdicts)


def test_cut_off_but_runnable_query_is_incomplete_and_judged(mini):
    reference = mini[0].kgs[0].questions[1].sparql
    attempt, verdicts, _, _ = _attempt(mini, Reply(body=generate_content(f"```sparql\n{reference}", finish="MAX_TOKENS")))
    assert attempt.state == "incomplete" and attempt.finish_reason == "MAX_TOKENS"
    assert verdicts and verdicts[0].correct


@pytest.mark.parametrize(("status", "kind", "tries"), [(429, "rate_limited", 3), (500, "transport", 3), (403, "other", 1)])
def test_api_errors_are_classified_and_transient_ones_retried(mini, status, kind, tries):
    error = {"error": {"code": status, "message": "nope", "status": "X"}}
    attempt, verdicts, requests, _ = _attempt(mini, Reply(status=status, body=error))
    assert (attempt.state, attempt.error_kind) == ("error", kind)
    assert len(attempt.tries) == len(requests) == tries and verdicts == []


def test_timeout_through_the_client(mini):
    attempt, _, requests, _ = _attempt(mini, Reply(body=generate_content(), hold=True), timeout_s=0.5)
    assert attempt.error_kind == "timeout", attempt.error
    assert len(attempt.tries) == 3


def test_missing_api_key_is_a_clear_error(monkeypatch):
    from kgeval.errors import InputError

    monkeypatch.delenv("GEMINI_API_KEY")
    with pytest.raises(InputError, match="GEMINI_API_KEY"):
        GeminiSystem(GeminiSystemConfig())
