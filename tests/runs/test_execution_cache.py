"""The run's execution cache: seeds of one question that write the same query execute it once,
even when they are in flight at the same moment (the seeds of a question are dispatched
together, so they usually are)."""

from __future__ import annotations

import threading
import time

from kgeval.config import KgevalConfig
from kgeval.runs._attempt import Execution, ExecutionCache, _cached_execution
from kgeval.stores import EmbeddedStore
from kgeval.systems import SystemOutput


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
        time.sleep(0.2)  # long enough for every other thread to ask meanwhile
        return Execution(sparql="ASK {}")

    results = _together(8, lambda: cache.execution(("kg", "ASK {}"), execute, lambda e: True))
    assert len(executed) == 1
    assert sorted(cached for _, cached in results) == [False] + [True] * 7
    assert len({id(execution) for execution, _ in results}) == 1


def test_a_result_that_may_not_recur_is_executed_by_each_waiter():
    cache, executed = ExecutionCache(), []

    def execute() -> Execution:
        executed.append(1)
        time.sleep(0.05)
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

    def slow_timeout() -> Execution:
        time.sleep(0.3)
        return Execution(error="QueryTimeout: too slow", failure="candidate_timeout", sparql="slow")

    def keep(execution: Execution) -> bool:
        return execution.failure != "candidate_timeout"

    threads = [threading.Thread(target=cache.execution, args=(("kg", "slow"), slow_timeout, keep)) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.4)  # the first has timed out; the second is executing on its own
    started = time.perf_counter()
    cache.execution(("kg", "quick"), lambda: Execution(sparql="quick"), keep)
    waited = time.perf_counter() - started
    for t in threads:
        t.join()
    assert waited < 0.1, f"another query waited {waited:.2f} s for the cache"
