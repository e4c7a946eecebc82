"""The run's execution cache: seeds of one question that write the same query execute it once,
even when they are in flight at the same moment (the seeds of a question are dispatched
together, so they usually are)."""

from __future__ import annotations

import threading
import time

import pytest

from kgeval.config import KgevalConfig
from kgeval.runs._attempt import Execution, ExecutionCache, _cached_execution
from kgeval.stores import EmbeddedStore
from kgeval.systems import SystemOutput


def _until_waiting(event: threading.Event, n: int) -> None:
    """Return once `n` threads wait on `event` (the cache's mark of a key in flight): whatever
    the machine's load, they then took the waiting path, where a fixed pause only made it
    likely. Reads the Event's condition's waiters (CPython's threading); 60 s is a stall."""
    deadline = time.monotonic() + 60
    while len(event._cond._waiters) < n:  # noqa: SLF001
        assert time.monotonic() < deadline, f"{len(event._cond._waiters)} of {n} threads wait"  # noqa: SLF001
        time.sleep(0.002)


def _together(n: int, call) -> list:
    """`call()` on n threads released at once; their results."""
    barrier, results, lock = threading.Barrier(n), [], threading.Lock()

    def run() -> None:
        barrier.wait()
        value = call()
        with lock:
            results.append(value)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_a_query_in_flight_on_eight_threads_executes_once():
    cache, executed = ExecutionCache(), []

    def execute() -> Execution:
        executed.append(1)
        _until_waiting(cache._running[("kg", "ASK {}")], 7)  # noqa: SLF001 - every other thread asked meanwhile
        return Execution(sparql="ASK {}")

    results = _together(8, lambda: cache.execution(("kg", "ASK {}"), execute, lambda e: True))
    assert len(executed) == 1
    assert sorted(cached for _, cached in results) == [False] + [True] * 7
    assert len({id(execution) for execution, _ in results}) == 1


def test_a_result_that_may_not_recur_is_executed_by_each_waiter():
    cache, executed = ExecutionCache(), []

    def execute() -> Execution:
        executed.append(1)
        if len(executed) == 1:  # the first: held until the three others wait for it
            _until_waiting(cache._running[("kg", "ASK {}")], 3)  # noqa: SLF001
        return Execution(error="QueryTimeout: too slow", failure="candidate_timeout", sparql="ASK {}")

    results = _together(4, lambda: cache.execution(("kg", "ASK {}"), execute, lambda e: e.failure != "candidate_timeout"))
    assert len(executed) == 4 and not any(cached for _, cached in results)


def test_seeds_sharing_a_query_share_one_sandboxed_execution(tmp_path):
    kg = tmp_path / "kg.ttl"
    kg.write_text("<http://e/a> <http://e/p> <http://e/b> .\n", encoding="utf-8")
    store, calls = EmbeddedStore([kg]), []
    original = store.execute_candidate

    def counted(query, **kwargs):
        calls.append(query)
        return original(query, **kwargs)

    store.execute_candidate = counted
    try:
        cache, output = ExecutionCache(), SystemOutput(sparql="SELECT ?o WHERE { <http://e/a> <http://e/p> ?o }")
        executions = _together(6, lambda: _cached_execution("kg", output, store, KgevalConfig(), cache))
    finally:
        store.close()
    assert len(calls) == 1
    assert all(e.result is not None and e.result.total == 1 for e in executions)
    assert sum(e.resources is not None for e in executions) == 1  # what it cost is counted once


def test_a_waiter_executing_on_its_own_does_not_hold_up_other_queries():
    cache = ExecutionCache()
    first_in, first_out, second_in, release = threading.Event(), threading.Event(), threading.Event(), threading.Event()
    calls, lock = [], threading.Lock()

    def slow_timeout() -> Execution:
        with lock:
            calls.append(threading.get_ident())
            n = len(calls)
        if n == 1:  # the first caller: times out once the second waits for it
            first_in.set()
            first_out.wait(60)
        else:  # the waiter executing on its own: held until the quick query was answered
            second_in.set()
            release.wait(60)
        return Execution(error="QueryTimeout: too slow", failure="candidate_timeout", sparql="slow")

    def keep(execution: Execution) -> bool:
        return execution.failure != "candidate_timeout"

    threads = [threading.Thread(target=cache.execution, args=(("kg", "slow"), slow_timeout, keep), daemon=True) for _ in range(2)]
    threads[0].start()
    assert first_in.wait(60)
    threads[1].start()
    _until_waiting(cache._running[("kg", "slow")], 1)  # noqa: SLF001 - the second waits for the first
    first_out.set()
    assert second_in.wait(60)  # the second is executing on its own
    quick_done = threading.Event()
    quick = threading.Thread(target=lambda: cache.execution(("kg", "quick"), lambda: Execution(sparql="quick"), keep) and quick_done.set(), daemon=True)
    quick.start()
    answered = quick_done.wait(60)
    release.set()
    for t in (*threads, quick):
        t.join(60)
    assert answered, "another query waited for the cache while a waiter executed on its own"


def _replayed(mini_holdout, mini_gold, tmp_path, records: list[dict], db_name: str) -> tuple[dict, dict]:
    """A replay run of `records` on the mini holdout (4 seeds): its verdicts by (question, seed,
    judge), and its attempts' (SPARQL, state, result total, extra without the measured cost) by
    (question, seed)."""
    import json

    from kgeval.config import RunConfig
    from kgeval.holdout import load_holdout
    from kgeval.runs import ResultsDB, execute_run
    from kgeval.runs._model import Receipt
    from kgeval.systems import ReplaySystem

    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    with ResultsDB(tmp_path / db_name) as db:
        meta = execute_run(load_holdout(mini_holdout), mini_gold, ReplaySystem(replay), KgevalConfig(run=RunConfig(seeds=4)), db,
                           checklist=lambda plan, db: Receipt(checklist_sha256="test", items=[]))  # fmt: skip
        verdicts = {(q, s, v.judge): v.model_dump() for q, s, v in db.verdicts(meta.run_id)}
        attempts = {
            (a.question_id, a.seed): (a.sparql, a.state, a.result_total, {k: v for k, v in a.extra.items() if k != "query_resources"})
            for a in db.attempts(meta.run_id)
        }
    return verdicts, attempts


def test_seeds_giving_the_same_candidate_are_judged_once(mini_holdout, mini_gold, tmp_path, monkeypatch):
    """Seeds that give the same SPARQL and answer list for a question share one judging (the
    verdicts are a function of question and candidate); another answer list beside the same
    SPARQL, or other SPARQL, is judged on its own. Every verdict is the one judging each
    attempt alone gives, field for field."""
    import kgeval.runs._attempt as attempt_module
    from tests.conftest import MINI_QUESTIONS

    reference, wrong = MINI_QUESTIONS[1]["sparql"], MINI_QUESTIONS[1]["sparql"].replace("e:sales", "e:it")
    records = [
        {"kg": "mini", "question_id": "mini-02", "seed": 0, "sparql": reference},
        {"kg": "mini", "question_id": "mini-02", "seed": 1, "sparql": reference},
        {"kg": "mini", "question_id": "mini-02", "seed": 2, "sparql": reference, "answer": ["Alice"]},
        {"kg": "mini", "question_id": "mini-02", "seed": 3, "sparql": wrong},
        *({"kg": "mini", "question_id": "mini-06", "seed": s, "answer": ["item1", "item2"]} for s in range(4)),
    ]
    calls = []
    judge = attempt_module.judge_candidate
    monkeypatch.setattr(attempt_module, "judge_candidate", lambda *args: calls.append(args[0].id) or judge(*args))

    def verdict_rows(db_name: str) -> dict:
        return _replayed(mini_holdout, mini_gold, tmp_path, records, db_name)[0]

    memoized = verdict_rows("memo.duckdb")
    assert sorted(calls) == ["mini-02"] * 3 + ["mini-06"]
    assert memoized[("mini-02", 0, "seed")] == memoized[("mini-02", 1, "seed")] and len(memoized) == 16
    calls.clear()
    monkeypatch.setattr(attempt_module.VerdictCache, "judged", lambda self, key, judge: judge())  # every attempt judged alone
    alone = verdict_rows("alone.duckdb")
    assert len(calls) == 8 and alone == memoized


def test_a_candidate_that_timed_out_is_judged_again(monkeypatch):
    """A timeout may not recur: its verdicts are not kept for the next seed."""
    import kgeval.runs._attempt as attempt_module
    from kgeval.config import JudgesConfig
    from kgeval.holdout import Question
    from kgeval.judges import judges_from_config
    from kgeval.runs._attempt import VerdictCache, _judged
    from kgeval.stores import QueryResult

    calls = []
    judge = attempt_module.judge_candidate
    monkeypatch.setattr(attempt_module, "judge_candidate", lambda *args: calls.append(1) or judge(*args))
    question = Question(id="q1", kg="k", question="Is there a triple?", sparql="ASK { ?s ?p ?o }", domain="d")
    gold, output = QueryResult(form="ask", boolean=True, total=1), SystemOutput(sparql="ASK { ?s ?p ?o }")
    timed_out = Execution(error="QueryTimeout: too slow", failure="candidate_timeout", sparql=output.sparql)
    answered = Execution(result=QueryResult(form="ask", boolean=True, total=1), sparql=output.sparql)
    judges, cache = judges_from_config(JudgesConfig()), VerdictCache()
    verdicts = [_judged(question, output, e, judges, gold, None, None, cache) for e in (timed_out, timed_out, answered, answered)]
    assert len(calls) == 3  # both timeouts, the answer once
    assert [v.path for v in verdicts[0][0]] == ["candidate_timeout"] * 2 and all(v.correct for v in verdicts[3][0])


def test_seeds_laying_out_one_query_differently_execute_and_are_judged_once(mini_holdout, mini_gold, tmp_path, monkeypatch):
    """Seeds whose SPARQL differs only in layout, comments and keyword case are one query to the
    engine (the guard approves one canonical text): executed once and judged once per answer
    list, with the verdicts each attempt judged alone gets, field for field. A query the guard
    refuses is known by its text as written."""
    import kgeval.runs._attempt as attempt_module
    from kgeval.stores import Store
    from tests.conftest import MINI_QUESTIONS

    reference = MINI_QUESTIONS[1]["sparql"]
    body = reference[reference.upper().index("SELECT"):]
    prefixes = reference[: reference.upper().index("SELECT")]
    relaid = prefixes + "# the same query, laid out otherwise\n" + body.replace("SELECT", "select").replace("WHERE", "\n  where").replace(" ", "   ")
    assert relaid != reference
    refused = prefixes + "DELETE WHERE { ?s ?p ?o }"
    records = [
        {"kg": "mini", "question_id": "mini-02", "seed": 0, "sparql": reference},
        {"kg": "mini", "question_id": "mini-02", "seed": 1, "sparql": relaid},
        {"kg": "mini", "question_id": "mini-02", "seed": 2, "sparql": relaid, "answer": ["Alice"]},
        {"kg": "mini", "question_id": "mini-02", "seed": 3, "sparql": refused},
    ]
    judged, executed = [], []
    judge = attempt_module.judge_candidate
    monkeypatch.setattr(attempt_module, "judge_candidate", lambda *args: judged.append(args[0].id) or judge(*args))
    execute = attempt_module.execute_candidate
    monkeypatch.setattr(attempt_module, "execute_candidate", lambda sparql, *args: executed.append(sparql) or execute(sparql, *args))

    def rows(db_name: str) -> tuple[dict, dict]:
        return _replayed(mini_holdout, mini_gold, tmp_path, records, db_name)

    verdicts, attempts = rows("shared.duckdb")
    # one layout executed (whichever seed reached the cache first: they run in parallel), the other reused it
    assert sorted(executed) in (sorted([reference, refused]), sorted([relaid, refused]))
    assert sorted(judged) == ["mini-02"] * 3  # the reference (and its relaid twin), the answer list, the refused query
    first, twin = attempts[("mini-02", 0)], attempts[("mini-02", 1)]
    assert twin[0] == relaid and first[1:] == twin[1:]  # each attempt keeps its own text
    assert verdicts[("mini-02", 0, "execution")] == verdicts[("mini-02", 1, "execution")]
    assert verdicts[("mini-02", 3, "execution")]["path"] == "refused"
    judged.clear()
    monkeypatch.setattr(Store, "approved_text", lambda self, query: None)  # every text known as written
    monkeypatch.setattr(attempt_module.VerdictCache, "judged", lambda self, key, judge: judge())  # every attempt judged alone
    alone, alone_attempts = rows("alone.duckdb")
    assert len(judged) == 4 and alone == verdicts and alone_attempts == attempts


def test_seeds_judging_one_candidate_together_judge_it_once():
    """Seeds leave a shared execution together: the first judges, the others wait for its
    verdicts (a wrong answer's label rules read the KG, long enough for every seed to miss the
    cache: the acceptance run judged such a candidate four times). A judge that raises leaves
    the next caller to judge."""
    from kgeval.runs._attempt import VerdictCache

    cache, calls, start = VerdictCache(), [], threading.Barrier(4)

    def judge():
        calls.append(1)
        if len(calls) == 1:  # held until the three other seeds wait for its verdicts
            _until_waiting(cache._judging[("k", "q", "SELECT", "approved", None)], 3)  # noqa: SLF001
        return (["verdict"], False)

    def seed(results: list) -> None:
        start.wait()
        results.append(cache.judged(("k", "q", "SELECT", "approved", None), judge))

    results: list = []
    threads = [threading.Thread(target=seed, args=(results,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and results == [(["verdict"], False)] * 4

    def failing():
        raise RuntimeError("judge failed")

    with pytest.raises(RuntimeError):
        cache.judged(("k", "q2", "x", "approved", None), failing)
    assert cache.judged(("k", "q2", "x", "approved", None), judge) == (["verdict"], False)
