"""Fault injection through the real HTTP path: a loopback endpoint that times out, fails with
5xx or 429, sends malformed JSON, an empty answer, a truncated one, a content-filter stop.
Each lands in its named terminal state; none is judged (so none can count as a wrong answer)."""

from __future__ import annotations

import pytest

from kgeval.config import HttpSystemConfig, KgevalConfig, RunConfig
from kgeval.judges import judges_from_config
from kgeval.runs import run_attempt
from kgeval.systems import HttpSystem
from tests.conftest import MINI_QUESTIONS
from tests.servers import LoopbackServer, Reply

REFERENCE = MINI_QUESTIONS[1]["sparql"]  # "Who works in sales?"
FAST_RETRY = KgevalConfig(run=RunConfig(seeds=1, retry_backoff_s=0.0, max_tries=3))
TIMEOUT_S = 0.3
"""The client's timeout where a try must time out: the server holds its reply until it closes."""
ANSWER_WITHIN_S = 60.0
"""The client's timeout where a reply must be read: no loaded machine takes this long."""

FAULTS = {
    "timeout": (lambda n: Reply(body={"sparql": REFERENCE}, hold=True), "error", "timeout", 3),
    "http 503": (lambda n: Reply(status=503, body="<html>upstream unavailable</html>"), "error", "transport", 3),
    "http 429": (lambda n: Reply(status=429, body={"error": "slow down"}), "error", "rate_limited", 3),
    "http 400": (lambda n: Reply(status=400, body={"error": "bad kg"}), "error", "other", 1),
    "malformed json": (lambda n: Reply(body='{"sparql": "SELECT', headers={}), "error", "other", 1),
    "not an object": (lambda n: Reply(body=["SELECT ?x {}"]), "error", "other", 1),
    "empty answer": (lambda n: Reply(body={"sparql": None, "answer": None}), "error", "empty", 1),
    "empty sparql string": (lambda n: Reply(body={"sparql": "  "}), "error", "empty", 1),
    "truncated, nothing usable": (lambda n: Reply(body={"sparql": "SELECT ?p WHERE { ?p <http://exa", "stop_reason": "length"}), "error", "truncated_empty", 1),
    "truncated, no text": (lambda n: Reply(body={"stop_reason": "length"}), "error", "truncated_empty", 1),
    "content filter": (lambda n: Reply(body={"sparql": REFERENCE, "stop_reason": "content_filter"}), "error", "content_filter", 1),
    "safety": (lambda n: Reply(body={"stop_reason": "safety"}), "error", "safety", 1),
    # a model failure: judged wrong by every judge, never a harness error state (DESIGN invariant 5)
    "invalid sparql": (lambda n: Reply(body={"sparql": "SELEKT nothing"}), "answered", None, 1),
    "unknown stop reason": (lambda n: Reply(body={"sparql": REFERENCE, "stop_reason": "recitation"}), "error", "other", 1),
    "503 then ok": (lambda n: Reply(status=503, body="busy") if n == 1 else Reply(body={"sparql": REFERENCE}), "answered", None, 2),
    "truncated but substantial": (lambda n: Reply(body={"sparql": REFERENCE, "stop_reason": "length"}), "incomplete", None, 1),
    "answer list": (lambda n: Reply(body={"answer": ["alice", "bob"]}), "answered", None, 1),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_fault_lands_in_its_terminal_state(mini, fault):
    holdout, gold, store = mini
    reply, state, kind, tries = FAULTS[fault]
    question = holdout.kgs[0].questions[1]
    timeout_s = TIMEOUT_S if kind == "timeout" else ANSWER_WITHIN_S
    with LoopbackServer(lambda path, body, n: reply(n)) as server:
        system = HttpSystem(HttpSystemConfig(url=server.url + "/answer", timeout_s=timeout_s, declared_version="prod-7"))
        attempt, verdicts = run_attempt(question, 0, system, store, judges_from_config(FAST_RETRY.judges), gold[question.id].result, FAST_RETRY)
        system.close()
        received = server.await_count(tries)
    assert (attempt.state, attempt.error_kind) == (state, kind), attempt.error
    assert len(attempt.tries) == tries == received
    assert [t.n for t in attempt.tries] == list(range(1, tries + 1))
    if state == "error":
        assert verdicts == [], "an error state must never be judged"
        assert attempt.error
    elif fault == "invalid sparql":
        assert verdicts and all(not v.correct and v.path == "invalid_sparql" for v in verdicts), verdicts
    else:
        assert verdicts and verdicts[0].correct, verdicts[0].reason
    if kind in ("timeout", "transport", "rate_limited"):
        assert all(t.outcome == kind for t in attempt.tries)


LOGIN_PAGE = "<!DOCTYPE html><html><head><title>Sign in to the corporate proxy</title></head><body>" + "<p>Please sign in.</p>" * 40 + "</body></html>"
MALFORMED = {
    "an HTML page with 200": (Reply(body=LOGIN_PAGE, headers={"Content-Type": "text/html; charset=utf-8"}), ["Content-Type text/html; charset=utf-8", "not JSON", "'<!DOCTYPE html><html><head><title>Sign in to the corporate proxy", f"({len(LOGIN_PAGE):,} characters)"]),
    "stop_reason a list": (Reply(body={"sparql": REFERENCE, "stop_reason": ["stop", "length"]}), ["'stop_reason' is a JSON array, not a string", "['stop', 'length']"]),
    "stop_reason a number": (Reply(body={"sparql": REFERENCE, "stop_reason": 0}), ["'stop_reason' is a JSON number, not a string", "received 0"]),
    "stop_reason an empty list": (Reply(body={"sparql": REFERENCE, "stop_reason": []}), ["'stop_reason' is a JSON array, not a string", "received []"]),
    "answer a string": (Reply(body={"answer": "alice, bob"}), ["'answer' is a JSON string, not an array", "'alice, bob'"]),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_reply_is_a_harness_error_naming_system_url_and_what_came(mini, case):
    """A reply the endpoint (or a proxy before it) garbled is the harness's failure, never the
    model's: an error state, never judged, its message naming the system, the URL, what is wrong
    and what was received (cut to 200 characters). It was 'system raised TypeError: unhashable
    type: list' for a list stop_reason, 'malformed response: not valid JSON (Expecting value
    at 0)' for an HTML page, and an empty-list stop_reason was read as 'stop' and judged."""
    holdout, gold, store = mini
    reply, said = MALFORMED[case]
    question = holdout.kgs[0].questions[1]
    with LoopbackServer(lambda path, body, n: reply) as server:
        system = HttpSystem(HttpSystemConfig(url=server.url + "/answer", timeout_s=ANSWER_WITHIN_S))
        attempt, verdicts = run_attempt(question, 0, system, store, judges_from_config(FAST_RETRY.judges), gold[question.id].result, FAST_RETRY)
        system.close()
    assert (attempt.state, attempt.error_kind, verdicts, len(attempt.tries)) == ("error", "other", [], 1), attempt.error
    assert attempt.error.startswith(f"system 'http': POST {server.url}/answer (HTTP 200, "), attempt.error
    assert all(part in attempt.error for part in said), attempt.error
    assert "Please sign in.</p>" * 12 not in attempt.error  # truncated


def test_request_shape_and_version_header(mini):
    holdout, gold, store = mini
    question = holdout.kgs[0].questions[0]
    reply = Reply(body={"sparql": question.sparql}, headers={"X-System-Version": "prod-7+build.42"})
    with LoopbackServer(lambda path, body, n: reply) as server:
        system = HttpSystem(HttpSystemConfig(url=server.url + "/v1/answer", declared_version="prod-7"))
        attempt, verdicts = run_attempt(question, 2, system, store, judges_from_config(FAST_RETRY.judges), gold[question.id].result, FAST_RETRY)
        system.close()
    path, body = server.requests[0]
    assert path == "/v1/answer"
    assert body == {"question": question.question, "kg": "mini", "seed": 2}  # no question id, no reference
    assert attempt.state == "answered" and attempt.served_version == "prod-7+build.42"
    assert attempt.tries[0].http_status == 200


def test_refused_connection_is_a_transport_failure(mini):
    """urllib3 makes NewConnectionError a ConnectTimeoutError: it must still read as transport."""
    import socket

    holdout, gold, store = mini
    question = holdout.kgs[0].questions[1]
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    system = HttpSystem(HttpSystemConfig(url=f"http://127.0.0.1:{port}/answer", timeout_s=ANSWER_WITHIN_S))  # refused at once
    attempt, verdicts = run_attempt(question, 0, system, store, judges_from_config(FAST_RETRY.judges), gold[question.id].result, FAST_RETRY)
    system.close()
    assert (attempt.state, attempt.error_kind) == ("error", "transport"), attempt.error
    assert [t.outcome for t in attempt.tries] == ["transport"] * 3 and verdicts == []


def test_missing_url_is_a_clear_error():
    from kgeval.errors import InputError

    with pytest.raises(InputError, match="systems.http.url"):
        HttpSystem(HttpSystemConfig())


def test_retry_after_header_parsing():
    from datetime import UTC, datetime, timedelta
    from email.utils import format_datetime

    from kgeval.systems._http import retry_after_seconds

    assert retry_after_seconds("3") == 3.0 and retry_after_seconds(" 0.5 ") == 0.5 and retry_after_seconds("-2") == 0.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=3600), usegmt=True)
    assert 3540 < retry_after_seconds(later) <= 3600  # a minute's slack for a stalled machine, not five seconds
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: no wait


def test_a_reply_over_the_output_budget_is_judged_wrong_and_read_no_further(mini):
    """A reply over `run.max_output_bytes` (here 64 KiB) is the model's failure: judged wrong as
    over budget, stored cut with the size and sha256 of the whole body, never parsed."""
    import hashlib
    import json

    holdout, gold, store = mini
    question = holdout.kgs[0].questions[1]
    body = {"sparql": REFERENCE + " # " + "x" * (3 << 20)}
    config = KgevalConfig(run=RunConfig(seeds=1, max_output_bytes=64 * 1024))
    with LoopbackServer(lambda path, _, n: Reply(body=body)) as server:
        system = HttpSystem(HttpSystemConfig(url=server.url + "/answer", timeout_s=ANSWER_WITHIN_S), max_output_bytes=config.run.max_output_bytes)
        attempt, verdicts = run_attempt(question, 0, system, store, judges_from_config(config.judges), gold[question.id].result, config)
        system.close()
    sent = json.dumps(body).encode()
    assert attempt.state == "answered" and attempt.extra["failure"] == "over_budget", attempt
    assert attempt.extra["output_cut"] == {"part": "body", "bytes": len(sent), "sha256": hashlib.sha256(sent).hexdigest(), "limit": 64 * 1024}
    assert verdicts and all(not v.correct and v.path == "over_budget" for v in verdicts), verdicts


def test_a_model_text_over_the_output_budget_is_judged_wrong(mini):
    """The same bound for outputs a model SDK gave whole (openai, gemini): its text over the limit."""
    from kgeval.runs import judge_output
    from kgeval.systems import SystemOutput

    holdout, gold, store = mini
    question = holdout.kgs[0].questions[1]
    config = KgevalConfig(run=RunConfig(seeds=1, max_output_bytes=1000))
    output = SystemOutput(sparql=REFERENCE, raw_text="```sparql\n" + REFERENCE + "\n```\n" + "Because " * 500)
    attempt, verdicts = judge_output(question, 0, output, store, judges_from_config(config.judges), gold[question.id].result, config)
    assert attempt.extra["output_cut"]["part"] == "text" and attempt.extra["output_cut"]["bytes"] > 1000
    assert verdicts and all(not v.correct and v.path == "over_budget" for v in verdicts), verdicts


DEADLINE_S = 2.0
"""`timeout_s` of the deadline tests, as in the attack (a trickled reply took 46.5 s per try)."""
SLOW = {
    "trickled body": Reply(body={"sparql": REFERENCE}, trickle="body", trickle_pad=100_000),
    "trickled headers": Reply(body={"sparql": REFERENCE}, trickle="headers", trickle_pad=10_000),
    "endless body": Reply(trickle="endless", trickle_gap_s=0.01),
}


@pytest.mark.parametrize("case", list(SLOW))
def test_timeout_s_is_a_deadline_for_the_whole_call(mini, case):
    """A reply that keeps coming, a byte at a time (each read well within any read timeout) or
    without end, ends as the endpoint's timeout at `timeout_s`: on main a trickled reply ran
    until the server stopped (here 120 s; 46.5 s per try in the attack), an endless one too.
    The bound asserted is 15 times the deadline: a stall's, not a margin."""
    import time

    holdout, gold, store = mini
    question = holdout.kgs[0].questions[1]
    once = KgevalConfig(run=RunConfig(seeds=1, retry_backoff_s=0.0, max_tries=1))
    with LoopbackServer(lambda path, body, n: SLOW[case]) as server:
        system = HttpSystem(HttpSystemConfig(url=server.url + "/answer", timeout_s=DEADLINE_S))
        started = time.monotonic()
        attempt, verdicts = run_attempt(question, 0, system, store, judges_from_config(once.judges), gold[question.id].result, once)
        took = time.monotonic() - started
        system.close()
    assert (attempt.state, attempt.error_kind, verdicts) == ("error", "timeout", []), attempt.error
    assert "systems.http.timeout_s" in attempt.error and took < 15 * DEADLINE_S, (took, attempt.error)


def test_a_reply_in_many_pieces_within_the_deadline_is_read_whole(mini):
    """The deadline ends only a call past it: a reply sent a byte at a time that ends in time is
    read and judged, as any reply is (the connection is used again after it, too)."""
    holdout, gold, store = mini
    question = holdout.kgs[0].questions[1]
    pieces = Reply(body={"sparql": REFERENCE}, trickle="body", trickle_gap_s=0.0, trickle_pad=200)
    with LoopbackServer(lambda path, body, n: pieces if n == 1 else Reply(body={"sparql": REFERENCE})) as server:
        system = HttpSystem(HttpSystemConfig(url=server.url + "/answer", timeout_s=ANSWER_WITHIN_S))
        for _ in range(2):
            attempt, verdicts = run_attempt(question, 0, system, store, judges_from_config(FAST_RETRY.judges), gold[question.id].result, FAST_RETRY)
            assert attempt.state == "answered" and verdicts[0].correct, attempt.error
        system.close()
