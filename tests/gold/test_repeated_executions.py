"""A reference query's repeated executions in one sandbox request (`Store.execute_repeated`):
the worker sends a later execution's cells only when its terms differ from the first's, and the
gold built so is the gold built in process, where every execution is converted and compared."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgeval.config import GoldConfig
from kgeval.gold import rebuild_gold
from kgeval.holdout import load_holdout
from kgeval.stores import EmbeddedStore
from kgeval.stores._embedded import _request
from tests.conftest import write_holdout

X = "http://x/"
# 30 items (more than the row cap of 8 below, fewer than the rows a worker holds to compare),
# each with a price and a name
TTL = "".join(f'<{X}i{k}> <{X}price> {k % 7} ; <{X}name> "item {k}"@en .\n' for k in range(30))
P = f"PREFIX x: <{X}> "
QUERIES = {
    "under-cap": "SELECT ?s ?n WHERE { ?s x:name ?n FILTER(?s = x:i3 || ?s = x:i4) }",
    "over-cap": "SELECT ?s ?p WHERE { ?s x:price ?p }",  # unordered, cut by the cap: the smallest keys kept
    "ordered-over-cap": "SELECT ?s WHERE { ?s x:price ?p } ORDER BY ?p ?s",
    "tied-cut": "SELECT ?s WHERE { ?s x:price ?p } ORDER BY ?p LIMIT 3",
    "group": "SELECT ?p (COUNT(?s) AS ?n) WHERE { ?s x:price ?p } GROUP BY ?p",
    "empty": "SELECT ?s WHERE { ?s x:price 99 }",
    "ask": "ASK { x:i1 x:price 1 }",
    "rand": "SELECT (RAND() AS ?r) WHERE {}",  # a new value each execution: sent, never "the same"
    "rand-over-cap": "SELECT ?s (RAND() AS ?r) WHERE { ?s x:price ?p }",
    "rand-ordered": "SELECT ?s (RAND() AS ?r) WHERE { ?s x:price ?p } ORDER BY ?s",
    "bnode": "SELECT ?s ?b WHERE { ?s x:price 2 BIND(BNODE() AS ?b) }",  # fresh labels: other terms, the same hash
    "uuid-ask": "ASK { BIND(STRUUID() AS ?u) FILTER(STRLEN(?u) > 0) }",
}
QUESTIONS = [{"id": qid, "question": f"question {qid}?", "sparql": P + sparql, "domain": "test"} for qid, sparql in QUERIES.items()]
VOLATILE = {"rand", "rand-over-cap", "rand-ordered"}


@pytest.fixture(scope="module")
def holdout(tmp_path_factory) -> Path:
    return write_holdout(tmp_path_factory.mktemp("repeated") / "h", QUESTIONS, ttl=TTL, kg="t")


def _entries(holdout: Path, local_copy: bool, executions: int) -> dict:
    stores: list[EmbeddedStore] = []

    def store_for(kg):  # noqa: ANN001, ANN202
        stores.append(EmbeddedStore(kg.files, local_copy=local_copy))
        return stores[-1]

    try:
        report = rebuild_gold(load_holdout(holdout), store_for, GoldConfig(row_cap=8, executions=executions), None)
    finally:
        for store in stores:
            store.close()
    assert report.ok, report.failures
    return {e.question_id: e for e in report.entries}


def _unlabelled(entry: dict) -> dict:
    """An entry with its blank nodes' labels dropped (each execution makes fresh ones)."""
    for row in entry["result"]["rows"]:
        for cell in row:
            if cell is not None and cell["type"] == "bnode":
                cell["value"] = "_"
    return entry


@pytest.mark.parametrize("executions", [2, 3])
def test_sandboxed_repeated_executions_build_the_gold_built_in_process(holdout, executions):
    in_process, sandboxed = _entries(holdout, True, executions), _entries(holdout, False, executions)
    assert in_process.keys() == sandboxed.keys() == QUERIES.keys()
    for qid, entry in sandboxed.items():
        expected = in_process[qid]
        assert len(entry.execution_sha256s) == executions, qid
        assert entry.nondeterministic == expected.nondeterministic, qid
        if qid in VOLATILE:  # every execution a new answer: as many hashes as executions
            assert len(set(entry.execution_sha256s)) == executions, qid
            assert entry.nondeterministic[0] == f"{executions} different results in {executions} executions", qid
            continue
        assert _unlabelled(entry.model_dump()) == _unlabelled(expected.model_dump()), qid  # hashes, result, flags, ties: all of it
        assert len(set(entry.execution_sha256s)) == 1, qid


def test_a_later_execution_is_sent_only_when_its_terms_differ(holdout):
    """The worker's replies: the first execution's cells, then None for each later one whose
    terms were the first's (nothing converted, sent or decoded), cells for one that differed."""
    store = EmbeddedStore(load_holdout(holdout).kgs[0].files, local_copy=False)
    try:
        for qid, expect_same in [("under-cap", True), ("over-cap", True), ("ordered-over-cap", True), ("rand", False), ("rand-over-cap", False), ("bnode", False)]:
            shape = store._guard(P + QUERIES[qid])  # noqa: SLF001
            replies = store.sandbox.run_all(_request(shape.text, False, shape.ordered, 8, None, 30, executions=3), 30)
            assert len(replies) == 3 and replies[0].answer is not None, qid
            assert [r.answer is None for r in replies[1:]] == [expect_same] * 2, qid
            assert all(r.answer.rows for r in replies if r.answer is not None), qid
        [pid] = store.sandbox.worker_pids()  # one worker served every request: each reply read whole, none left over
        results = store.execute_repeated(P + QUERIES["over-cap"], executions=2, timeout_s=30, row_cap=8)
        assert results[1] is results[0] and store.sandbox.worker_pids() == [pid]
    finally:
        store.close()


@pytest.mark.parametrize("executions", [1, 2, 3])
def test_an_entry_built_on_a_first_execution_given_is_the_entry_built_whole(holdout, executions):
    """`build_entry(..., first=)` (a suite build hands over the reference's plain execution on a
    neighbour) runs only the later executions: the entry is the one built running all of them,
    and a query whose answer changes from one execution to the next is still found out."""
    from kgeval.gold._build import build_entry

    config = GoldConfig(row_cap=8, executions=executions)
    loaded = load_holdout(holdout)
    store = RecordingStore(loaded.kgs[0].files, local_copy=False)
    try:
        for question in loaded.questions():
            whole = build_entry("t", question, store, config)
            store.repeated.clear()
            first = store.execute_cells(question.sparql, timeout_s=30, row_cap=8)
            given = build_entry("t", question, store, config, first)
            assert store.repeated[:1] == ([executions - 1] if executions > 1 else []), question.id  # the first is not run again
            if question.id in VOLATILE:
                assert given.nondeterministic == whole.nondeterministic, question.id
                continue
            assert _unlabelled(given.model_dump()) == _unlabelled(whole.model_dump()), question.id
    finally:
        store.close()


class RecordingStore(EmbeddedStore):
    """Records how many executions each `execute_repeated` asks for."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.repeated: list[int] = []

    def execute_repeated(self, query: str, *, executions: int, timeout_s: float, row_cap: int):  # noqa: ANN201
        self.repeated.append(executions)
        return super().execute_repeated(query, executions=executions, timeout_s=timeout_s, row_cap=row_cap)


def test_a_failing_later_execution_fails_the_request_and_the_worker_serves_on(holdout):
    """An execution that fails ends the request with its error, as the first failing
    execution ended the rebuild's executions before; the worker is not retired by it."""
    store = EmbeddedStore(load_holdout(holdout).kgs[0].files, local_copy=False)
    try:
        unbound_service = "SELECT * WHERE { SERVICE ?u { ?s ?p ?o } }"
        request = (unbound_service, False, False, 8, None, None, 65, False, None, 3)
        from kgeval.errors import QueryRejected

        with pytest.raises(QueryRejected, match="service name is unbound"):
            store.sandbox.run_all(request, 30)
        [pid] = store.sandbox.worker_pids()
        assert store.execute_repeated(P + QUERIES["ask"], executions=2, timeout_s=30, row_cap=8)[1].boolean is True
        assert store.sandbox.worker_pids() == [pid]
    finally:
        store.close()


def test_a_held_unordered_result_keeps_the_rows_keep_rows_keeps():
    """The first execution of an unordered result the worker holds whole is keyed in one go and
    cut by one sort: the rows kept, their order and the total are those of the streaming
    `keep_rows` path `evaluate` takes, whatever the terms (blank nodes share one key: their
    rows keep their arrival order), the cap, or the result's size around the rows held."""
    import random

    import pyoxigraph as ox

    from kgeval.stores._engine import _compared_rows, _held_rows, _kept_cell_rows

    rng = random.Random(11)
    terms = [
        None, ox.NamedNode("http://x/a"), ox.NamedNode("http://x/b"), ox.Literal("1", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")),
        ox.Literal("a\\\"b"), ox.Literal("chat", language="fr"), ox.Literal("chat"), *(ox.BlankNode(f"b{i}") for i in range(6)),
    ]
    for _ in range(300):
        row_cap = rng.choice([1, 2, 5, 600])
        width = rng.choice([1, 2, 3])
        size = rng.choice([0, 1, row_cap, row_cap + 1, _held_rows(row_cap), _held_rows(row_cap) + 1, rng.randint(0, 40)])
        rows = [tuple(rng.choice(terms) for _ in range(width)) for _ in range(size)]
        variables = tuple(f"v{i}" for i in range(width))
        answer = _compared_rows(variables, iter(rows), False, row_cap, [])
        assert (answer.rows, answer.total) == _kept_cell_rows(iter(rows), False, row_cap), (row_cap, size)
