"""Questions of one KG built at once (`gold.concurrency`): the gold is the same bytes whatever
the number, written in question order; the builds really overlap; a harness fault stops the
rebuild in question order; an interrupted rebuild does not wait for a query in flight.

The stores are real embedded stores whose reference queries run in their sandbox workers, as
`kgeval gold rebuild` opens them (`local_copy=False`)."""

from __future__ import annotations

import hashlib
import random
import threading
from pathlib import Path

import pytest
import yaml

from kgeval.config import GoldConfig
from kgeval.gold import rebuild_gold
from kgeval.holdout import load_holdout, seal_holdout
from kgeval.stores import EmbeddedStore
from tests.conftest import MINI_QUESTIONS, write_holdout

TEMPLATES = [
    # messy reference queries as benchmarks write them: mixed-case keywords, comments, ties at a
    # LIMIT, aggregates, OPTIONAL, sub-selects, a volatile function, and queries that fail
    "PREFIX v: <{p}>\nSELECT ?name WHERE {{ <{p}p{e}> v:name ?name }}",
    "prefix v: <{p}>\nselect ?x where {{ ?x v:dept <{p}d{d}> }} # everyone in one department",
    "PREFIX v: <{p}>\nSELECT (COUNT(?x) AS ?n) WHERE {{ ?x v:age ?a . FILTER(?a > {a}) }}",
    "PREFIX v: <{p}>\nASK {{ <{p}p{e}> v:dept <{p}d{d}> }}",
    "PREFIX v: <{p}>\nSELECT ?d (AVG(?s) AS ?avg) (count(*) as ?n) WHERE {{ ?x v:dept ?d ; v:salary ?s }} GROUP BY ?d",
    "PREFIX v: <{p}>\nSELECT ?x ?age WHERE {{ ?x v:age ?age }} order by ?age limit {k}  # ties at the cut",
    "PREFIX v: <{p}>\nSELECT ?x ?mail WHERE {{ ?x v:dept <{p}d{d}> OPTIONAL {{ ?x v:mail ?mail }} }}",
    "PREFIX v: <{p}>\nSELECT ?d ?top WHERE {{ {{ SELECT ?d (MAX(?s) AS ?top) WHERE {{ ?x v:dept ?d ; v:salary ?s }} GROUP BY ?d }} }}",
    "PREFIX v: <{p}>\nSELECT ?x WHERE {{ ?x v:age ?a }}",  # over the row cap below: cut by key
    "PREFIX v: <{p}>\nASK {{ BIND(STRUUID() AS ?u) FILTER(STRLEN(?u) > 0) }}",  # volatile (the same answer each time)
    "PREFIX v: <{p}>\nSELECT ?x WHERE {{ ?x v:age ?a FILTER(v:nofunction(?a)) }}",  # the engine rejects it
    "PREFIX v: <{p}>\nSELECT ?x WHERE {{ ?x v:age }}",  # a syntax error
]


@pytest.fixture(scope="module")
def holdout(tmp_path_factory) -> Path:
    """Three KGs of 120 people each, 40 questions each drawn from TEMPLATES."""
    root, rng = tmp_path_factory.mktemp("concurrent") / "h", random.Random(7)
    for k in range(3):
        kg, p = f"kg{k}", f"http://example.org/kg{k}/"
        lines = []
        for i in range(120):
            lines.append(f'<{p}p{i}> <{p}name> "Person {i}"@en ; <{p}age> {rng.randint(20, 30)} ; <{p}dept> <{p}d{rng.randrange(6)}> ;')
            lines.append(f'  <{p}salary> "{rng.randint(300, 900)}.50"^^<http://www.w3.org/2001/XMLSchema#decimal> .')
            if rng.random() < 0.6:
                lines.append(f'<{p}p{i}> <{p}mail> "p{i}@kg{k}.example" .')
        questions = []
        for q in range(40):
            text = rng.choice(TEMPLATES).format(p=p, e=rng.randrange(120), d=rng.randrange(6), a=rng.randint(20, 30), k=rng.choice([1, 3, 5]))
            questions.append({"id": f"{kg}-{q}", "question": f"question {q} on {kg}?", "sparql": text, "domain": "test"})
        (root / kg).mkdir(parents=True)
        (root / kg / "kg.ttl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (root / kg / "questions.yaml").write_text(yaml.safe_dump({"kg": kg, "questions": questions}, sort_keys=False), encoding="utf-8")
    seal_holdout(root)
    return root


def _files(gold: Path) -> dict[str, str]:
    version = gold / (gold / "current").readlink()
    return {str(f.relative_to(version)): hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(version.rglob("*")) if f.is_file()}


def _rebuild(holdout: Path, gold: Path, concurrency: int, store_class: type[EmbeddedStore] = EmbeddedStore, **kwargs):  # noqa: ANN003, ANN202
    stores: list[EmbeddedStore] = []

    def store_for(kg):  # noqa: ANN001, ANN202
        stores.append(store_class(kg.files, local_copy=False))
        return stores[-1]

    try:
        return rebuild_gold(load_holdout(holdout), store_for, GoldConfig(row_cap=50, concurrency=concurrency), gold, **kwargs)
    finally:
        for store in stores:
            store.close()


def test_the_gold_is_the_same_bytes_whatever_the_concurrency(holdout, tmp_path):
    seen: dict[int, list[str]] = {1: [], 3: []}
    one = _rebuild(holdout, tmp_path / "one", 1, progress=lambda qid, _: seen[1].append(qid))
    three = _rebuild(holdout, tmp_path / "three", 3, progress=lambda qid, _: seen[3].append(qid))
    questions = [q.id for q in load_holdout(holdout).questions()]
    assert seen[1] == seen[3] == questions  # progress in question order
    assert _files(tmp_path / "one") == _files(tmp_path / "three")
    assert len(_files(tmp_path / "one")) >= 4  # a manifest and files for three KGs
    assert one.built == three.built and [f.question_id for f in one.failures] == [f.question_id for f in three.failures]
    assert one.flagged == three.flagged
    # the holdout holds what makes a gold interesting: failures, a volatile query, ties
    assert one.failures and one.built and one.flagged["nondeterministic"] and one.flagged["tied"]


class _MeetingStore(EmbeddedStore):
    """Each reference query waits, up to 60 s, until another one has started beside it."""

    barrier = threading.Barrier(2, timeout=60)

    def execute_repeated(self, query: str, *, executions: int, timeout_s: float, row_cap: int):  # noqa: ANN201
        _MeetingStore.barrier.wait()  # BrokenBarrierError when no other query came
        return super().execute_repeated(query, executions=executions, timeout_s=timeout_s, row_cap=row_cap)


def test_two_questions_are_built_at_once(tmp_path):
    questions = [q for q in MINI_QUESTIONS if not q["sparql"].lstrip().upper().startswith("ASK")][:4]
    holdout = write_holdout(tmp_path / "h", questions)
    report = _rebuild(holdout, tmp_path / "gold", 2, _MeetingStore)
    assert report.ok and len(report.built) == 4


class _FailingStore(EmbeddedStore):
    """The third reference query raises what no query can (a harness fault, not a `QueryError`,
    which would be that question's failure); every query asked is recorded."""

    asked: list[str] = []

    def execute_repeated(self, query: str, *, executions: int, timeout_s: float, row_cap: int):  # noqa: ANN201
        _FailingStore.asked.append(query)
        if len(_FailingStore.asked) == 3:
            raise RuntimeError("the harness broke")
        return super().execute_repeated(query, executions=executions, timeout_s=timeout_s, row_cap=row_cap)


def test_a_harness_fault_stops_the_rebuild_in_question_order_and_leaves_the_gold_in_force(holdout, tmp_path):
    gold = tmp_path / "gold"
    _rebuild(holdout, gold, 1)
    before = _files(gold)
    seen: list[str] = []
    _FailingStore.asked = []
    with pytest.raises(RuntimeError, match="harness broke"):
        _rebuild(holdout, gold, 2, _FailingStore, force=True, progress=lambda qid, _: seen.append(qid))
    assert len(seen) == 2  # the two questions before the failure, no later one
    assert seen == [q.id for q in load_holdout(holdout).questions()][:2]
    assert len(_FailingStore.asked) <= 3 + 2  # at most `concurrency` questions started past the failure
    assert _files(gold) == before


class _HeldStore(EmbeddedStore):
    """The second reference query is held until the test lets it go (60 s at most)."""

    release, holding, held = threading.Event(), threading.Event(), threading.Event()
    calls = 0

    def execute_repeated(self, query: str, *, executions: int, timeout_s: float, row_cap: int):  # noqa: ANN201
        _HeldStore.calls += 1
        if _HeldStore.calls == 2:
            _HeldStore.holding.set()
            _HeldStore.release.wait(60)
            _HeldStore.held.set()
        return super().execute_repeated(query, executions=executions, timeout_s=timeout_s, row_cap=row_cap)


def test_an_interrupted_rebuild_does_not_wait_for_a_query_in_flight(tmp_path):
    holdout = write_holdout(tmp_path / "h")
    gold = tmp_path / "gold"
    _rebuild(holdout, gold, 1)
    before = _files(gold)

    def interrupt(question_id: str, outcome: str) -> None:
        assert _HeldStore.holding.wait(60), "the second question was never started beside the first"
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            _rebuild(holdout, gold, 2, _HeldStore, force=True, progress=interrupt)
        assert not _HeldStore.held.is_set()  # returned while the held query is still in flight
    finally:
        _HeldStore.release.set()
    assert _files(gold) == before
