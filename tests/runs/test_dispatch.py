"""Concurrency: N attempts in flight, a shared rate limit, results handed back on one thread;
and an end-to-end HTTP run whose faults become a harness report, not an accuracy."""

from __future__ import annotations

import threading
import time

import pytest

from kgeval.checklists import pre_eval_checklist
from kgeval.config import HttpSystemConfig, KgevalConfig, PipelineConfig, RunConfig
from kgeval.holdout import load_holdout
from kgeval.reports import build_report, render_markdown
from kgeval.runs import RateLimiter, ResultsDB, dispatch, execute_run
from kgeval.systems import HttpSystem, OracleSystem
from tests.checklists.test_checklist import _cli_checklist
from tests.conftest import MINI_QUESTIONS
from tests.servers import LoopbackServer, Reply


def test_dispatch_keeps_n_in_flight_and_calls_back_on_the_calling_thread():
    lock, active, peak, seen_threads = threading.Lock(), [0], [0], set()
    eight_in_flight = threading.Event()

    def work(job):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            if active[0] == 8:
                eight_in_flight.set()
        eight_in_flight.wait(60)  # the first jobs hold until 8 run at once (serial dispatch: never)
        with lock:
            active[0] -= 1
        return job

    done = []
    caller = threading.get_ident()

    def on_done(results):
        seen_threads.add(threading.get_ident())
        done.extend(results)

    assert dispatch(range(40), work, on_done, concurrency=8) == 40
    assert sorted(done) == list(range(40)) and peak[0] == 8  # 8 in flight at once, never more
    assert seen_threads == {caller}


def test_dispatch_stops_on_a_failing_callback():
    calls = []

    def on_done(results):
        calls.append(results)
        if len(calls) == 3:
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        dispatch(range(100), lambda j: j, on_done, concurrency=2)
    assert len(calls) == 3 and sum(map(len, calls)) <= 6


def test_rate_limiter_spaces_calls_across_threads():
    limiter = RateLimiter(50.0)
    stamps, lock = [], threading.Lock()

    def call(_):
        limiter.acquire()
        with lock:
            stamps.append(time.monotonic())

    threads = [threading.Thread(target=call, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stamps.sort()
    span = stamps[-1] - stamps[0]
    assert span >= 19 / 50 * 0.95  # 20 calls at 50/s take at least 0.38 s
    assert RateLimiter(None)._interval == 0


FAULT_BY_QUESTION = {
    MINI_QUESTIONS[0]["question"]: Reply(status=503, body="busy"),
    MINI_QUESTIONS[1]["question"]: Reply(body='{"sparql": "SELEC'),
    MINI_QUESTIONS[2]["question"]: Reply(body={"sparql": None}),
    MINI_QUESTIONS[3]["question"]: Reply(body={"stop_reason": "length"}),
    MINI_QUESTIONS[4]["question"]: Reply(body={"sparql": "ASK {}", "stop_reason": "content_filter"}),
}


def test_http_run_with_faults_publishes_a_harness_report_not_an_accuracy(mini_holdout, mini_gold, tmp_path):
    by_text = {q["question"]: q for q in MINI_QUESTIONS}

    def reply(path, body, n):
        return FAULT_BY_QUESTION.get(body["question"]) or Reply(body={"sparql": by_text[body["question"]]["sparql"]})

    checklist = pre_eval_checklist(_cli_checklist(tmp_path))
    cfg = KgevalConfig(run=RunConfig(seeds=2, concurrency=4, retry_backoff_s=0.0, rate_limit_per_s=200))
    with LoopbackServer(reply) as server, ResultsDB(tmp_path / "r.duckdb") as db:
        execute_run(load_holdout(mini_holdout), mini_gold, OracleSystem(), cfg, db, checklist=checklist)
        system = HttpSystem(HttpSystemConfig(url=server.url, declared_version="prod-7", pipeline=PipelineConfig(default={"schema_in_prompt": True})))
        meta = execute_run(load_holdout(mini_holdout), mini_gold, system, cfg, db, checklist=checklist)
        report = build_report(db, meta.run_id)
        verdict_keys = {(q, s) for q, s, _ in db.verdicts(meta.run_id)}
        attempts = db.attempts(meta.run_id)
    assert report.errors == {"transport": 2, "other": 2, "empty": 2, "truncated_empty": 2, "content_filter": 2}
    assert report.overall is None and "10 of 16 attempts" in report.harness.withheld
    assert report.harness.retried_attempts == 2 and report.harness.tries == 16 + 2 * 2
    # no error attempt was judged: nothing can count as a wrong answer
    errors = {(a.question_id, a.seed) for a in attempts if a.state == "error"}
    assert errors and not errors & verdict_keys
    md = render_markdown(report)
    assert "NO ACCURACY PUBLISHED" in md and "**transport**: 2" in md and "HTTP 503" in md
    assert meta.system_version == "prod-7" and meta.finished_at


def test_workers_go_on_while_a_slow_write_holds_the_calling_thread():
    """Completed results wait in the queue during a write instead of holding the workers: with
    a bound of `concurrency`, eight workers waited on every commit and a run went at eight
    attempts per commit (6 or more writes here instead of 3)."""
    calls, worked, lock = [], [0], threading.Lock()
    all_worked, writing = threading.Event(), threading.Event()

    def work(job):
        if job:  # the first result is written alone, at once; the rest are worked during that write
            writing.wait(60)
        with lock:
            worked[0] += 1
            if worked[0] == 160:
                all_worked.set()
        return job

    def on_done(results):
        calls.append(len(results))
        writing.set()
        if len(calls) == 1:  # a slow first commit: held until every job was worked (or 60 s)
            all_worked.wait(60)

    assert dispatch(range(160), work, on_done, concurrency=8, batch=1000, max_wait_s=0.05) == 160
    assert sum(calls) == 160
    assert all_worked.is_set() and calls == [1, 159], f"writes of {calls}: the workers waited on the writer"
