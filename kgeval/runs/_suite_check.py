"""Accepts checked again on their question's test suite (DESIGN invariant 14).

An attempt the primary judge accepts on the holdout KG is executed again, sandboxed and under
the same candidate budgets, on each neighbour KG of its question's suite (`kgeval.gold`
`read_suites`), and judged there by the same judge against that neighbour's gold (ties resolved
as on the KG). The primary verdict records the outcome in `details["suite"]`:

    {"checked": true, "passed": false, "diverges": "hr~n03",
     "neighbours": [{"neighbour": "hr~n03", "correct": false, "path": "set", "reason": ...}, ...]}

Only accepts are executed again, so the cost follows a run's accuracy, not its size: one
sandbox per holdout KG serves its neighbours (`EmbeddedKgs`), an accept runs on its suite's
neighbours in one request, and a result equal to a neighbour's gold is not judged afresh (see
`SuiteChecker`), with verdicts those of judging every result in full. An accept whose text
is its question's reference query is not executed at all: each neighbour's gold is that text's
result there (`SuiteChecker._executions`), so a run of such accepts loads no neighbour. An accept
given only as an answer list (no SPARQL) cannot run on a neighbour: `checked` is false with the
reason, and the report counts it as unchecked, never as passed; so is an accept of a question
whose suite kept no neighbour (`EMPTY_SUITE`: the reference is not fixed on any of them). A
neighbour on which the store itself failed (a harness error) leaves the accept unchecked too,
never rejected.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, NamedTuple

from kgeval.config import KgevalConfig
from kgeval.errors import KgevalError, QueryOverBudget
from kgeval.gold import GoldEntry, Suites
from kgeval.holdout import KnowledgeGraph, Question
from kgeval.judges import Candidate, ExecutionJudge, Judge, Verdict
from kgeval.runs._attempt import Execution, execute_candidate_each, judge_candidate
from kgeval.stores import CellResult, EmbeddedKgs, EmbeddedStore, QueryResult, Store, checked_result_bytes, query_determinism

SUITE_KEY = "suite"
"""The key of a primary verdict's details holding its suite outcome."""


ENTRIES_HELD = 64
"""Neighbour gold entries a run's checker keeps (least recently used out): the suites of the
questions in flight (a run's concurrency times a suite's few neighbours, twice over), so the
checker's memory follows the questions in flight, as the run's gold does, not the holdout."""

def _outcomes_held(config: KgevalConfig) -> int:
    """Outcomes a checker keeps: a run's jobs are question-major (a question's seeds together)
    with at most `run.concurrency` in flight, so the outcomes of the questions in flight, each
    with up to `run.seeds` texts, twice over; older ones are only checked again if asked again."""
    return 2 * config.run.concurrency * config.run.seeds


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
    entry's ties resolved as a run resolves them): what distillation counts as told apart.
    Asked only about a result whose hash is not the reference's (the gold package's `Differs`:
    distillation hashes each result once, on its cells), so it hashes nothing again."""

    def differs(question: Question, entry: Any, result: QueryResult, sparql: str) -> bool:
        """`entry`: a GoldEntry, or the gold package's Reference (`result`, `result_sha256`, `ties`)."""
        verdicts, _ = judge_candidate(question, {judge.name: judge}, entry.result, Candidate(result=result, sparql=sparql), entry.ties)
        return not verdicts[0].correct

    return differs


class _Held(NamedTuple):
    """A question's gold entry on one neighbour, with the cells its result is compared by."""

    entry: GoldEntry
    known: tuple[CellResult, QueryResult] | None
    """The entry's result as cells and itself (`execute_candidate_each`'s `known`): a candidate
    whose cells are these is handed the entry's result; None when the cells do not give it back."""


class SuiteChecker:
    """Checks accepted attempts on their suites (thread-safe). The neighbours of a holdout KG
    are served by one sandbox (`EmbeddedKgs`: one template, its workers, a store per neighbour
    asked by name), opened once, and an accept runs on its suite's neighbours in one request.

    A result exactly equal to a neighbour's gold (the same cells, so the same QueryResult) is
    handed the gold's own result object, and the primary judge's accept of it is judged once
    per question and neighbour and reused: when the primary judge is the execution judge, whose
    accept of a result reads the result, the gold and its ties, never the candidate's SPARQL
    (that is read by the vacuous rule, which needs the KG lookup no neighbour check gives, and
    by the readings of an answer it rejects). Every other outcome is judged in full."""

    def __init__(self, suites: Suites, config: KgevalConfig, judge: Judge) -> None:
        self.suites, self.config, self.judge = suites, config, judge
        self._kgs: dict[str, EmbeddedKgs] = {}
        self._lock = threading.Lock()
        self._entry = functools.lru_cache(maxsize=ENTRIES_HELD)(self._held)
        """A question's neighbour entries, read once for its seeds' checks (not once per check)
        and the same objects each time, so the judges' prepared golds (kept by identity) are
        found again."""
        self._outcomes: OrderedDict[tuple[str, str], Future[dict[str, Any]]] = OrderedDict()
        """(question id, SPARQL) -> its outcome, or the check under way: seeds that give the
        same query (most do) are checked once, even while they run at once (a run dispatches a
        question's seeds together). The neighbours are read-only and their engine deterministic.
        Bounded (least recently used out) by what a run needs: `_outcomes_held`."""
        self._outcomes_held = _outcomes_held(config)
        self._gold_accepts: dict[tuple[str, str], dict[str, Any]] | None = {} if isinstance(judge, ExecutionJudge) else None
        """(question id, neighbour) -> the judge's accept of a result equal to that neighbour's gold."""

    def _held(self, neighbour: str, question_id: str) -> _Held:
        entry = self.suites.entry(neighbour, question_id)
        result = entry.result
        # the cells hold every field of the result but `truncated`, which `typed()` derives
        # (and an ASK's `ordered`, which it drops): where the entry's are other, no shortcut
        derived = result.total > len(result.rows) if result.form == "select" else False
        same = result.truncated == derived and (result.form == "select" or not (result.ordered or result.vars or result.rows))
        return _Held(entry, (CellResult.of(result), result) if same else None)

    def _neighbours(self, kg: str) -> EmbeddedKgs:
        """The sandbox serving KG `kg`'s neighbours (every neighbour the suite store keeps of it),
        loading exactly the bytes the suites' verified manifest records (`EmbeddedKgs`'s
        `verified`: kgeval wrote them, so they are parsed without validating each term again,
        and a file changed since the suites were read is refused, not loaded)."""
        with self._lock:
            if kg not in self._kgs:
                names = self.suites.kgs[kg].neighbours
                kgs = {n: self.suites.neighbour_kg(n) for n in names}
                verified = {n: self.suites.neighbour_sha256(n) for n in names}
                self._kgs[kg] = EmbeddedKgs({n: (k.files, k.graphs) for n, k in kgs.items()}, self.config.store.candidates, verified=verified)
            return self._kgs[kg]

    def closeables(self) -> list[EmbeddedKgs]:
        """The neighbours' sandboxes opened so far: a run closes them with its own stores,
        several at once."""
        with self._lock:
            return list(self._kgs.values())

    def close(self) -> None:
        for kgs in self.closeables():
            kgs.close()

    def checked(self, question: Question, sparql: str | None, verdict: Verdict) -> Verdict:
        """`verdict` with its suite outcome when it accepts; unchanged when it rejects."""
        if not verdict.correct:
            return verdict
        return verdict.model_copy(update={"details": {**verdict.details, SUITE_KEY: self.outcome(question, sparql)}})

    def outcome(self, question: Question, sparql: str | None) -> dict[str, Any]:
        """The suite outcome of `sparql` for `question`: shared by the checks of the same text
        (see `_outcomes`), but for a text whose result may change from one execution to the
        next (`_repeatable`), which every check executes afresh."""
        if sparql and sparql.strip() and not _repeatable(sparql):
            return self._outcome(question, sparql)
        key = (question.id, sparql or "")
        with self._lock:
            pending = self._outcomes.get(key)
            mine = pending is None
            if mine:
                pending = self._outcomes[key] = Future()
                while len(self._outcomes) > self._outcomes_held:  # a check under way evicted is still awaited by its holders
                    self._outcomes.popitem(last=False)
            else:
                self._outcomes.move_to_end(key)
        if not mine:
            known = pending.result()
            if not _harness(known):
                return known
            return self._outcome(question, sparql)  # a store failure may not recur: checked again
        try:
            known = self._outcome(question, sparql)
        except BaseException as exc:
            self._forget(key, pending)
            pending.set_exception(exc)
            raise
        if _harness(known):
            self._forget(key, pending)
        pending.set_result(known)
        return known

    def _forget(self, key: tuple[str, str], pending: Future[dict[str, Any]]) -> None:
        with self._lock:
            if self._outcomes.get(key) is pending:  # evicted meanwhile, another check may hold the key
                del self._outcomes[key]

    def _outcome(self, question: Question, sparql: str | None) -> dict[str, Any]:
        suite = self.suites.suite(question.id)
        if suite is None:
            return {"checked": False, "why": "the question has no suite (`kgeval suite show` says why)"}
        if suite.query_sha256 != question.sparql_sha256:
            return {"checked": False, "why": "its suite was built for another reference query: `kgeval suite build`"}
        if not suite.neighbours:  # nothing to check on: never a pass (DESIGN invariant 14)
            return {"checked": False, "why": EMPTY_SUITE}
        if not sparql or not sparql.strip():
            return {"checked": False, "why": "answer list only: no SPARQL to execute on a neighbour"}
        held = [self._entry(n, question.id) for n in suite.neighbours]
        executions = self._executions(question, sparql, suite.neighbours, held)
        outcomes = [self._on(question, sparql, n, h.entry, x) for n, h, x in zip(suite.neighbours, held, executions, strict=True)]
        harness = [o for o in outcomes if o.get("harness")]
        failed = next((o["neighbour"] for o in outcomes if o.get("correct") is False), None)
        if harness and failed is None:
            return {"checked": False, "why": f"the store failed on {harness[0]['neighbour']}: {harness[0]['reason']}", "neighbours": outcomes}
        return {"checked": True, "passed": failed is None, "diverges": failed, "neighbours": outcomes}

    def _executions(self, question: Question, sparql: str, neighbours: list[str], held: list[_Held]) -> list[Execution]:
        """`sparql` executed on each neighbour, but where it is the question's reference text and
        that neighbour's gold is what a candidate execution of it gives (see `_is_reference`):
        there the gold's own result, as an execution whose cells equal the gold's is handed."""
        given = self._is_reference(question, sparql)
        executions = {i: Execution(result=h.entry.result, sparql=sparql) for i, h in enumerate(held) if given and self._fits(h)}
        run = [i for i in range(len(held)) if i not in executions]
        if run:  # the sandbox of the KG's neighbours opens (and loads them) at its first execution
            done = execute_candidate_each(sparql, self._neighbours(question.kg), [neighbours[i] for i in run], self.config, [held[i].known for i in run])
            executions.update(zip(run, done, strict=True))
        return [executions[i] for i in range(len(held))]

    @staticmethod
    def _is_reference(question: Question, sparql: str) -> bool:
        """Whether `sparql` is the question's reference text (line endings and the whitespace
        around it aside, nothing looser): each neighbour's gold IS that text's result there,
        computed by the suite build (a neighbour whose gold is not deterministic is left out).
        Line endings are set aside only in a text with no long string (three quotes, either
        kind): there a line break is white space or ends a comment, but in a long string it is
        the literal's value (DESIGN invariant 12: a line break may not make two queries one).
        Not reproduced: a candidate timeout, as the build ran it under the gold's (longer)
        timeout; the accept ran within the candidates' own on the KG the neighbour is fuzzed from."""

        def text(s: str) -> str:
            if "'''" in s or '"""' in s:
                return s.strip(_SPARQL_SPACE)
            return s.replace("\r\n", "\n").replace("\r", "\n").strip(_SPARQL_SPACE)

        return question.query_language == "sparql" and text(sparql) == text(question.sparql)

    def _fits(self, held: _Held) -> bool:
        """Whether a candidate execution of the reference gives this gold's cells: the gold's
        result comes back from its cells (`known`), is whole, under the candidates' row cap, and
        within their value and result sizes (the build ran it on the trusted path, uncapped)."""
        if held.known is None or held.entry.result.truncated or held.entry.result.total >= self.config.run.row_cap:
            return False
        try:
            checked_result_bytes(held.entry.result, self.config.store.candidates)
        except QueryOverBudget:
            return False
        return True

    def _on(self, question: Question, sparql: str, neighbour: str, entry: GoldEntry, execution: Execution) -> dict[str, Any]:
        if execution.harness is not None:
            return {"neighbour": neighbour, "harness": execution.harness, "reason": execution.error or ""}
        rows = execution.result.total if execution.result is not None else None
        decided = {"correct": True, **accepted} if (accepted := self._gold_accept(question, neighbour, entry, execution)) else None
        if decided is None:
            candidate = Candidate(result=execution.result, sparql=execution.sparql or sparql, sparql_error=execution.error, failure=execution.failure)
            verdicts, _ = judge_candidate(question, {self.judge.name: self.judge}, entry.result, candidate, entry.ties)
            v = verdicts[0]
            decided = {"correct": v.correct, "path": v.path, "reason": v.reason}
            if v.correct and execution.result is entry.result and self._gold_accepts is not None:
                self._gold_accepts[(question.id, neighbour)] = {"path": v.path, "reason": v.reason}
        return {"neighbour": neighbour, **decided, "rows": rows, "gold_rows": entry.result.total}

    def _gold_accept(self, question: Question, neighbour: str, entry: GoldEntry, execution: Execution) -> dict[str, Any] | None:
        """The judge's accept already given to a result equal to this neighbour's gold (see the class)."""
        if self._gold_accepts is None or execution.result is not entry.result:
            return None
        return self._gold_accepts.get((question.id, neighbour))


_SPARQL_SPACE = " \t\r\n"
"""SPARQL's white space (its `WS`): not `str.strip()`'s, which takes a form feed or a no-break
space too, characters the guard refuses as the query's own."""


def _repeatable(sparql: str) -> bool:
    """Whether executing `sparql` again on a neighbour gives the result it gave: it calls no
    volatile function (RAND(), NOW(), UUID(), STRUUID(), BNODE()), as the gold build's own scan
    classifies a reference query (`query_determinism`; a gold that calls one is flagged
    nondeterministic). A text the guard refuses is taken as not repeatable (it is checked
    afresh, and fails fast): the retry that declares its missing prefixes is another text."""
    try:
        return not query_determinism(sparql).volatile
    except KgevalError:
        return False
EMPTY_SUITE = "its suite has no neighbour: the reference query is not deterministic or fails on every neighbour made (`kgeval suite show QID` says why)"
"""Why an accept of a question whose suite kept no neighbour is unchecked (the report counts it so)."""


def _harness(outcome: dict[str, Any]) -> bool:
    """Whether a neighbour's store failed in `outcome` (a harness error, not an answer's)."""
    return any(o.get("harness") for o in outcome.get("neighbours", []))
