"""Accepts checked again on their question's test suite (DESIGN invariant 14).

An attempt the primary judge accepts on the holdout KG is executed again, sandboxed and under
the same candidate budgets, on each neighbour KG of its question's suite (`kgeval.gold`
`read_suites`), and judged there by the same judge against that neighbour's gold (ties resolved
as on the KG). The primary verdict records the outcome in `details["suite"]`:

    {"checked": true, "passed": false, "diverges": "hr~n03",
     "neighbours": [{"neighbour": "hr~n03", "correct": false, "path": "set", "reason": ...}, ...]}

Only accepts are executed again, so the cost follows a run's accuracy, not its size. An accept
given only as an answer list (no SPARQL) cannot run on a neighbour: `checked` is false with the
reason, and the report counts it as unchecked, never as passed. A neighbour on which the
store itself failed (a harness error) leaves the accept unchecked too, never rejected.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

from kgeval.config import KgevalConfig
from kgeval.errors import KgevalError
from kgeval.gold import Suites
from kgeval.holdout import KnowledgeGraph, Question
from kgeval.judges import Candidate, Judge, Verdict
from kgeval.runs._attempt import execute_candidate, judge_candidate
from kgeval.stores import EmbeddedStore, QueryResult, Store

SUITE_KEY = "suite"
"""The key of a primary verdict's details holding its suite outcome."""


NEIGHBOUR_WORKERS = 1
"""Sandbox workers per neighbour while a run checks accepts. A run's checks spread over every
neighbour of the holdout (32 on the sample holdout, each in 8 or so questions' suites) and the
seeds of a question share one check, so a second worker of a neighbour is seldom busy and costs
a fork, a process and its start thread (bench/suites.py). The build keeps `store.candidates.workers`."""


ENTRIES_HELD = 64
"""Neighbour gold entries a run's checker keeps (least recently used out): the suites of the
questions in flight (a run's concurrency times a suite's few neighbours, twice over), so the
checker's memory follows the questions in flight, as the run's gold does, not the holdout."""


def neighbour_store(config: KgevalConfig, workers: int | None = None) -> Callable[[KnowledgeGraph], Store]:
    """Opens a neighbour KG on an embedded store with no copy in this process: its queries
    (reference, mutants, candidates) run in sandbox workers, bounded as candidates are.
    `workers`: at most this many sandbox workers per neighbour (default `store.candidates.workers`);
    every other limit is the candidates' own."""
    limits = config.store.candidates if workers is None else config.store.candidates.model_copy(update={"workers": workers})

    def open_one(kg: KnowledgeGraph) -> Store:
        return EmbeddedStore(kg.files, graphs=kg.graphs, candidates=limits, local_copy=False)

    return open_one


def suite_differs(judge: Judge) -> Callable[[Question, Any, QueryResult, str], bool]:
    """Whether `judge` rejects a mutant's result against the reference's entry on one KG (the
    entry's ties resolved as a run resolves them): what distillation counts as told apart."""

    def differs(question: Question, entry: Any, result: QueryResult, sparql: str) -> bool:
        """`entry`: a GoldEntry, or the gold package's Reference (`result`, `result_sha256`, `ties`)."""
        if result.sha256() == entry.result_sha256:
            return False
        verdicts, _ = judge_candidate(question, {judge.name: judge}, entry.result, Candidate(result=result, sparql=sparql), entry.ties)
        return not verdicts[0].correct

    return differs


class SuiteChecker:
    """Checks accepted attempts on their suites; opens each neighbour's store once (thread-safe)."""

    def __init__(self, suites: Suites, config: KgevalConfig, judge: Judge) -> None:
        self.suites, self.config, self.judge = suites, config, judge
        self._stores: dict[str, Store] = {}
        self._lock = threading.Lock()
        self._open = neighbour_store(config, NEIGHBOUR_WORKERS)
        self._entry = functools.lru_cache(maxsize=ENTRIES_HELD)(suites.entry)
        """A question's neighbour entries, read once for its seeds' checks (not once per check)
        and the same objects each time, so the judges' prepared golds (kept by identity) are
        found again."""
        self._outcomes: dict[tuple[str, str], Future[dict[str, Any]]] = {}
        """(question id, SPARQL) -> its outcome, or the check under way: seeds that give the
        same query (most do) are checked once, even while they run at once (a run dispatches a
        question's seeds together). The neighbours are read-only and their engine deterministic."""

    def _store(self, neighbour: str) -> Store:
        with self._lock:
            if neighbour not in self._stores:
                self._stores[neighbour] = self._open(self.suites.neighbour_kg(neighbour))
            return self._stores[neighbour]

    def start_ahead(self, questions: Iterable[Question]) -> None:
        """Open the neighbours of `questions`' suites, in that order, and have each load its KG
        in a sandbox worker now (`Store.start_ahead`), while the run reads its gold and judges
        its first attempts: their first checks then find the neighbour loaded. A neighbour that
        cannot open is left to the check that needs it, which reports why."""
        names = dict.fromkeys(n for q in questions if (suite := self.suites.suite(q.id)) is not None for n in suite.neighbours)
        for neighbour in names:
            try:
                self._store(neighbour).start_ahead(1)
            except KgevalError:
                continue

    def closeables(self) -> list[Store]:
        """The neighbours' stores opened so far: a run closes them with its own, several at once
        (one after another, the 32 of the sample holdout took ~1 s of a run's end)."""
        with self._lock:
            return list(self._stores.values())

    def close(self) -> None:
        for store in self.closeables():
            store.close()

    def checked(self, question: Question, sparql: str | None, verdict: Verdict) -> Verdict:
        """`verdict` with its suite outcome when it accepts; unchanged when it rejects."""
        if not verdict.correct:
            return verdict
        return verdict.model_copy(update={"details": {**verdict.details, SUITE_KEY: self.outcome(question, sparql)}})

    def outcome(self, question: Question, sparql: str | None) -> dict[str, Any]:
        key = (question.id, sparql or "")
        with self._lock:
            pending = self._outcomes.get(key)
            mine = pending is None
            if mine:
                pending = self._outcomes[key] = Future()
        if not mine:
            known = pending.result()
            if not _harness(known):
                return known
            return self._outcome(question, sparql)  # a store failure may not recur: checked again
        try:
            known = self._outcome(question, sparql)
        except BaseException as exc:
            self._forget(key)
            pending.set_exception(exc)
            raise
        if _harness(known):
            self._forget(key)
        pending.set_result(known)
        return known

    def _forget(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._outcomes.pop(key, None)

    def _outcome(self, question: Question, sparql: str | None) -> dict[str, Any]:
        suite = self.suites.suite(question.id)
        if suite is None:
            return {"checked": False, "why": "the question has no suite (`kgeval suite show` says why)"}
        if suite.query_sha256 != question.sparql_sha256:
            return {"checked": False, "why": "its suite was built for another reference query: `kgeval suite build`"}
        if not sparql or not sparql.strip():
            return {"checked": False, "why": "answer list only: no SPARQL to execute on a neighbour"}
        outcomes = [self._on(question, sparql, n) for n in suite.neighbours]
        harness = [o for o in outcomes if o.get("harness")]
        failed = next((o["neighbour"] for o in outcomes if o.get("correct") is False), None)
        if harness and failed is None:
            return {"checked": False, "why": f"the store failed on {harness[0]['neighbour']}: {harness[0]['reason']}", "neighbours": outcomes}
        return {"checked": True, "passed": failed is None, "diverges": failed, "neighbours": outcomes}

    def _on(self, question: Question, sparql: str, neighbour: str) -> dict[str, Any]:
        entry = self._entry(neighbour, question.id)
        execution = execute_candidate(sparql, self._store(neighbour), self.config)
        if execution.harness is not None:
            return {"neighbour": neighbour, "harness": execution.harness, "reason": execution.error or ""}
        candidate = Candidate(result=execution.result, sparql=execution.sparql or sparql, sparql_error=execution.error, failure=execution.failure)
        verdicts, _ = judge_candidate(question, {self.judge.name: self.judge}, entry.result, candidate, entry.ties)
        v = verdicts[0]
        rows = execution.result.total if execution.result is not None else None
        return {"neighbour": neighbour, "correct": v.correct, "path": v.path, "reason": v.reason, "rows": rows, "gold_rows": entry.result.total}


def _harness(outcome: dict[str, Any]) -> bool:
    """Whether a neighbour's store failed in `outcome` (a harness error, not an answer's)."""
    return any(o.get("harness") for o in outcome.get("neighbours", []))
