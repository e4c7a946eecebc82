"""The Gremlin store: parsing and the read-only guard, result mapping, and execution against a
real Gremlin engine.

Backend: gremlite (PyPI), a Gremlin engine over SQLite that plugs into gremlinpython as a
RemoteConnection, so these tests run real gremlinpython traversals and get real gremlinpython
Vertex/Edge/dict results back, with no server to start. The websocket transport, GraphBinary,
a server's own result types and its `evaluationTimeout` are tested against a real Apache
TinkerPop Gremlin Server in test_gremlin_server.py (marker gremlin_server). gremlite 0.1.2 does
not implement numeric P predicates, so the tests here use them only in parsing. The Neptune
connection's SigV4-signed websocket handshake is checked against a loopback server that
verifies the signature (Neptune itself cannot run here).
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

import pytest
from gremlin_python.process.anonymous_traversal import traversal
from gremlin_python.process.traversal import P, T, TextP
from gremlin_python.statics import SingleByte, bigdecimal, long, short

from kgeval.config import GoldConfig, StoreConfig
from kgeval.errors import QueryRefused, QuerySyntaxError, StoreError
from kgeval.gold import rebuild_gold
from kgeval.holdout import load_holdout
from kgeval.stores import Term, open_store
from kgeval.stores._gremlin import GremlinStore, term_from_gremlin
from kgeval.stores._gremlin_parse import parse_gremlin
from tests.conftest import write_holdout
from tests.stores.loopback import loopback, timeout_on_a_silent_server
from tests.stores.sigv4_verify import REGION, signature_problem

try:
    import gremlite
except ImportError:  # pragma: no cover - installed by the test extra
    if os.environ.get("KGEVAL_REQUIRE_SERVERS") == "1":
        raise
    pytest.skip("gremlite (pip install gremlite) is the local Gremlin engine", allow_module_level=True)
XSD = "http://www.w3.org/2001/XMLSchema#"


@pytest.fixture(scope="module")
def graph_db(tmp_path_factory) -> Path:
    """A small property graph: 3 people in 2 departments, written with gremlinpython."""
    path = tmp_path_factory.mktemp("gremlin") / "graph.db"
    connection = gremlite.SQLiteConnection(path)
    g = traversal().with_(connection)
    sales = g.add_v("dept").property("name", "Sales").next()
    g.add_v("dept").property("name", "IT").to_list()
    for name, age, score in (("Alice", 34, 1.5), ("Bob", 41, 2.25), ("Carol", 29, 3.0)):
        (g.V(sales).as_("d").add_v("person").property("name", name).property("age", age).property("score", score)
         .as_("p").add_e("worksIn").from_("p").to("d").to_list())
    connection.commit()
    connection.close()
    return path


@pytest.fixture
def store(graph_db) -> GremlinStore:
    return GremlinStore(lambda: gremlite.SQLiteConnection(graph_db), data_version="test-graph-1", name="gremlite", version=gremlite.__version__ if hasattr(gremlite, "__version__") else "0.1.2")


def cells(result):
    return [[c.canonical() if c else None for c in row] for row in result.rows]


def test_values_become_typed_literals(store):
    names = store.execute("g.V().hasLabel('person').values('name')", timeout_s=60, row_cap=10)
    assert names.vars == ["value"] and sorted(cells(names)) == [['"Alice"'], ['"Bob"'], ['"Carol"']]
    ages = store.execute("g.V().hasLabel('person').values('age')", timeout_s=60, row_cap=10)
    assert sorted(r[0].value for r in ages.rows) == ["29", "34", "41"] and ages.rows[0][0].datatype == XSD + "integer"
    score = store.execute("g.V().has('name', 'Bob').values('score')", timeout_s=60, row_cap=10)
    assert score.rows == [[Term.literal("2.25", XSD + "double")]]
    count = store.execute("g.V().hasLabel('person').count()", timeout_s=60, row_cap=10)
    assert count.rows == [[Term.literal("3", XSD + "integer")]]


def test_vertices_and_edges_become_iri_like_terms(store):
    depts = store.execute("g.V().has('name', 'Alice').out('worksIn')", timeout_s=60, row_cap=10)
    assert len(depts.rows) == 1 and depts.rows[0][0].value.startswith("urn:gremlin:vertex:")
    same = store.execute("g.V().has('name', 'Sales')", timeout_s=60, row_cap=10)
    assert same.rows == depts.rows
    edges = store.execute("g.E().hasLabel('worksIn')", timeout_s=60, row_cap=10)
    assert edges.total == 3 and all(r[0].value.startswith("urn:gremlin:edge:") for r in edges.rows)


def test_projections_become_columns_and_order_is_kept(store):
    query = "g.V().hasLabel('person').order().by('age', desc).project('name', 'age').by('name').by('age')"
    result = store.execute(query, timeout_s=60, row_cap=10)
    assert result.vars == ["name", "age"] and result.ordered is True
    assert [r[0].value for r in result.rows] == ["Bob", "Alice", "Carol"]
    element = store.execute("g.V().has('person', 'name', 'Carol').elementMap()", timeout_s=60, row_cap=10)
    assert element.vars == ["id", "label", "name", "age", "score"]
    assert element.rows[0][1:3] == [Term.literal("person"), Term.literal("Carol")]


def test_value_map_singletons_and_anonymous_traversals(store):
    result = store.execute("g.V().hasLabel('dept').where(__.in('worksIn')).valueMap('name')", timeout_s=60, row_cap=10)
    assert result.vars == ["name"] and result.rows == [[Term.literal("Sales")]]
    text = store.execute("g.V().hasLabel('person').has('name', TextP.startingWith('C')).values('name')", timeout_s=60, row_cap=10)
    assert cells(text) == [['"Carol"']]


def test_row_cap_keeps_the_true_total(store):
    result = store.execute("g.V().hasLabel('person').values('name')", timeout_s=60, row_cap=2)
    assert (result.total, len(result.rows), result.truncated) == (3, 2, True)
    assert cells(result) == [['"Alice"'], ['"Bob"']]  # canonically smallest, as on every store


def test_lists_have_no_cell_form(store):
    with pytest.raises(StoreError, match="list result has no single-cell form: unfold"):
        store.execute("g.V().hasLabel('person').values('name').fold()", timeout_s=60, row_cap=10)


@pytest.mark.parametrize(
    "query, step",
    [
        ("g.V().drop()", "drop"),
        ("g.addV('person').property('name', 'Mallory')", "addV"),
        ("g.V().has('name', 'Alice').property('age', 99)", "property"),
        ("g.V().sideEffect(__.drop())", "drop"),
        ("g.V().where(out().drop())", "drop"),
        ("g.V().mergeV([name: 'x'])", None),  # map literals do not parse at all
        ("g.io('graph.xml').read()", "io"),
        ("g.V().call('tx')", "call"),
        ("g.withSideEffect('a', 1).V()", "withSideEffect"),
    ],
)
def test_writes_are_refused_before_any_connection(graph_db, query, step):
    opened = []
    store = GremlinStore(lambda: opened.append(1) or gremlite.SQLiteConnection(graph_db), data_version="v", name="gremlite", version="x")
    with pytest.raises((QueryRefused, QuerySyntaxError)) as info:
        store.execute(query, timeout_s=60, row_cap=10)
    if step:
        assert isinstance(info.value, QueryRefused) and step in str(info.value)
    assert opened == []
    assert store.execute("g.V().hasLabel('person').count()", timeout_s=60, row_cap=1).rows[0][0].value == "3"


@pytest.mark.parametrize(
    "query, message",
    [
        ("g.V().map{ it.get() }", "unexpected '{'"),
        ("g.V(); g.V().drop()", "unexpected ';'"),
        ("SELECT ?x WHERE { ?x ?p ?o }", "unexpected"),
        ("g.V().has('age', someVariable)", "variables are not allowed"),
        ("g.V", "expected '\\('"),
        ("g.inject(1", "EOF"),
        ("g.V().has('name', \"\"\"x\"\"\")", "unsupported string literal"),
        ("g.inject(0x10)", "column 10: unsupported number literal '0x10'"),
        ("g.inject(1j)", "unsupported number literal"),
    ],
)
def test_what_is_not_gremlin_method_chains_does_not_parse(query, message):
    with pytest.raises(QuerySyntaxError, match=message):
        parse_gremlin(query)


def test_parser_builds_gremlinpython_bytecode():
    parsed = parse_gremlin("g.V().has('age', P.gt(30L)).has('name', within('Alice', 'Bob')).order().by('age', Order.desc).limit(2).values('name')")
    steps = parsed.bytecode.step_instructions
    assert steps[0] == ["V"] and steps[1] == ["has", "age", P.gt(30)]
    assert steps[2] == ["has", "name", P.within("Alice", "Bob")]
    assert steps[4][2].name == "desc" and steps[5] == ["limit", 2]
    assert parsed.ordered is True
    literals = parse_gremlin("g.inject(1, -2.5, 3.0d, 4.1m, true, null, 'x', [1, 2]).is(neq(0).and(lt(10)))")
    assert literals.bytecode.step_instructions[0] == ["inject", 1, -2.5, 3.0, bigdecimal("4.1"), True, None, "x", [1, 2]]
    typed = parse_gremlin("g.inject(1b, 2S, 3i, 4L, 5n, -6.25m)").bytecode.step_instructions[0][1:]
    assert [type(v) for v in typed[:3]] == [SingleByte, short, int] and typed == [1, 2, 3, long(4), 5, bigdecimal("-6.25")]
    assert parse_gremlin("g.V().group().by(T.label).by(count())").steps == ("V", "group", "by", "by", "count")
    assert parse_gremlin("g.V().has('n', TextP.notContaining('x'))").bytecode.step_instructions[1][2] == TextP.not_containing("x")
    assert parse_gremlin("g.V().values('age').order().by(desc)").bytecode.step_instructions[3] == ["by", parse_gremlin("g.V().order().by(desc)").bytecode.step_instructions[2][1]]
    assert parse_gremlin("g.V().project('a').by(id)").bytecode.step_instructions[2] == ["by", T.id]


@pytest.mark.parametrize("query", [
    "g.V().local(" + "local(" * 600 + "out()" + ")" * 601,
    "g.inject(" + "[" * 3000 + "]" * 3000 + ")",
], ids=["anonymous", "lists"])
def test_deep_nesting_is_refused_not_a_crash(query):
    """It was a RecursionError out of the parser (no QueryError: not a named attempt state)."""
    with pytest.raises(QueryRefused, match="deeper than 64 levels"):
        parse_gremlin(query)
    assert parse_gremlin("g.V().local(" * 1 + "local(" * 30 + "out()" + ")" * 31).steps.count("local") == 31


def test_size_limit_applies_to_gremlin():
    with pytest.raises(QueryRefused, match="byte limit"):
        parse_gremlin("g.V().has('name', '" + "x" * 100 + "')", max_bytes=50)


def test_term_mapping_of_gremlinpython_objects():
    from gremlin_python.structure.graph import Edge, Vertex, VertexProperty

    alice = Vertex("v/1 a", "person")
    assert term_from_gremlin(alice) == Term.iri("urn:gremlin:vertex:v%2F1%20a")
    assert term_from_gremlin(Edge(7, alice, "knows", Vertex(2))) == Term.iri("urn:gremlin:edge:7")
    assert term_from_gremlin(VertexProperty(3, "name", "Alice", alice)) == Term.literal("Alice")
    assert term_from_gremlin(True) == Term.literal("true", XSD + "boolean")
    assert term_from_gremlin(Decimal("1.50")) == Term.literal("1.50", XSD + "decimal")
    assert term_from_gremlin(None) is None
    with pytest.raises(StoreError, match="dict result has no single-cell form"):
        term_from_gremlin({"a": 1})


def test_gremlin_reference_questions_rebuild_gold(graph_db, tmp_path):
    questions = [
        {"id": "pg-01", "question": "Who works in sales?", "gremlin": "g.V().has('name', 'Sales').in('worksIn').values('name')", "domain": "hr"},
        {"id": "pg-02", "question": "How many departments?", "gremlin": "g.V().hasLabel('dept').count()", "domain": "hr"},
    ]
    holdout = load_holdout(write_holdout(tmp_path / "holdout", questions, kg="pg"))
    assert holdout.questions()[0].query_language == "gremlin"
    store = GremlinStore(lambda: gremlite.SQLiteConnection(graph_db), data_version="test-graph-1", name="gremlite", version="0.1.2")
    report = rebuild_gold(holdout, lambda kg: store, GoldConfig(), tmp_path / "gold")
    assert report.ok, report.failures
    gold = {e.question_id: e for e in report.entries}
    assert gold["pg-01"].result.total == 3 and gold["pg-01"].engine == "gremlite"
    assert gold["pg-02"].result.rows == [[Term.literal("2", XSD + "integer")]]
    assert gold["pg-02"].kg_sha256 == "test-graph-1"


def test_a_question_has_exactly_one_reference_query(tmp_path):
    from kgeval.errors import InputError

    both = [{"id": "x-01", "question": "q", "sparql": "ASK {}", "gremlin": "g.V()", "domain": "d"}]
    with pytest.raises(InputError, match="exactly one reference query"):
        load_holdout(write_holdout(tmp_path / "a", both))
    neither = [{"id": "x-01", "question": "q", "domain": "d"}]
    with pytest.raises(InputError, match="exactly one reference query"):
        load_holdout(write_holdout(tmp_path / "b", neither))


# -- Neptune Gremlin: the SigV4-signed websocket handshake, on a loopback verifier ------------


def neptune_gremlin(url: str) -> StoreConfig:
    return StoreConfig(kind="neptune-gremlin", endpoint=url.replace("http://", "ws://") + "/gremlin",
                       region=REGION, data_version="pg-load-1", allow_insecure_http=True)


def test_neptune_gremlin_handshake_is_signed(aws_test_credentials):
    with loopback(lambda r: (403, {}, b"not a gremlin server")) as (url, recorded):
        store = open_store(neptune_gremlin(url), [])
        with pytest.raises(StoreError, match="403"):
            store.execute("g.V().count()", timeout_s=60, row_cap=1)
    assert len(recorded) == 1 and recorded[0].path == "/gremlin"
    assert recorded[0].headers.get("Upgrade") == "websocket"
    assert signature_problem(recorded[0], url) is None
    assert signature_problem(recorded[0], url, secret_key="wrong") == "signature does not match"


def test_neptune_gremlin_times_out_on_a_silent_server(aws_test_credentials):
    def execute(url, budget):
        open_store(neptune_gremlin(url), []).execute("g.V().count()", timeout_s=budget, row_cap=1)

    budget, message, recorded = timeout_on_a_silent_server(execute, first_budget_s=0.5)
    assert f"longer than {budget:g} s" in message and len(recorded) == 1
