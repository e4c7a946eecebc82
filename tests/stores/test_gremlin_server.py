"""The Gremlin store against a real Apache TinkerPop Gremlin Server (issue 33): websocket
transport, GraphBinary, the server's own result types and its `evaluationTimeout`.

One server per session (infra/gremlin-server's configuration, TinkerGraph, a free port of
127.0.0.1), installed by infra/servers/install-gremlin-server.sh; without Java or the jars the
tests skip, under KGEVAL_REQUIRE_SERVERS=1 they fail. The server holds:
- the sample holdout's HR graph as a property graph (each typed subject a vertex labelled by
  its class, literals as properties, links as edges: `sample_hr_as_property_graph`), which
  Gremlin versions of the sample's HR questions (GREMLIN_HR) query;
- one vertex with a property of every Java number type, a Date and an OffsetDateTime (written
  by a Groovy script: gremlinpython cannot send a Java float, byte or Date distinctly);
- a complete graph of 30 vertices, on which a path-distinct repeat() never ends.
Neptune's own engine cannot run here: what is Neptune-only (the SigV4 handshake) is tested
against the loopback verifier in test_gremlin.py.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import rdflib
from gremlin_python.driver.client import Client
from gremlin_python.driver.driver_remote_connection import DriverRemoteConnection
from gremlin_python.driver.serializer import GraphSONSerializersV3d0
from gremlin_python.process.anonymous_traversal import traversal
from gremlin_python.statics import bigdecimal

from kgeval.checklists import pre_eval_checklist
from kgeval.config import GoldConfig, KgevalConfig, RunConfig, StoreConfig
from kgeval.errors import QueryRefused, QuerySyntaxError, QueryTimeout, StoreError
from kgeval.gold import rebuild_gold
from kgeval.holdout import load_holdout
from kgeval.runs import ResultsDB, execute_run
from kgeval.stores import EmbeddedStore, Term, open_store
from kgeval.stores._gremlin import GremlinStore, server_connection
from kgeval.systems import OracleSystem, ReplaySystem
from tests.checklists.test_checklist import _cli_checklist
from tests.conftest import REPO, write_holdout
from tests.stores.servers import cpu_rates_until_idle, cpu_seconds_over, gremlin_server_lib, launch_gremlin_server, stop

pytestmark = pytest.mark.gremlin_server

XSD = "http://www.w3.org/2001/XMLSchema#"
RDFS_LABEL = rdflib.RDFS.label
EVALUATION_TIMEOUT_MS = 5000
"""The server's own limit (gremlin-server.yaml's evaluationTimeout, for these tests)."""
NEVER_ENDS = "g.V().hasLabel('node').repeat(both().simplePath()).times(30).count()"
"""Every simple path of 30 steps in a complete graph of 30 vertices: 29! of them. (The plain
`g.V().repeat(both()).times(30)` ends at once on TinkerGraph: its traversers are bulked.)"""
IDLE_WINDOW_S = 4.0
IDLE_CPU_S = 1.0
"""CPU-seconds the server may use in IDLE_WINDOW_S after a stopped traversal: idle, it uses
about 0.01 per second, but the JVM's wind-down after a long interrupted traversal (its threads
ending, a collection) took 0.51 in a quiet fresh-clone CI run. One still running uses up to a
core (4 CPU-seconds here), at least a third of one on a loaded 2-core machine (over 1.3)."""

GREMLIN_HR = [
    ("hr-01", "g.V().has('Employee', 'name', 'Karen Novak').out('worksIn').values('iri')"),
    ("hr-02", "g.V().has('Department', 'name', 'Engineering').in('worksIn').hasLabel('Employee').values('iri')"),
    ("hr-03", "g.V().has('Office', 'officeCity', 'Toronto').in('basedIn').hasLabel('Employee').dedup().count()"),
    ("hr-06", "g.V().hasLabel('Employee').order().by('salary', desc).limit(5).project('employee', 'salary').by('iri').by('salary')"),
    ("hr-07", "g.V().has('Department', 'name', 'Legal').in('worksIn').has('remote', true).values('iri')"),
    ("hr-08", "g.V().hasLabel('Department').where(__.in('worksIn').hasLabel('Employee')).project('departmentName', 'employees').by('name').by(__.in('worksIn').hasLabel('Employee').count())"),
    ("hr-09", "g.V().has('Department', 'name', 'Finance').in('worksIn').values('salary').mean()"),
    ("hr-10", "g.V().has('Project', 'name', 'Project Apollo').in('memberOf').where(out('hasSkill').has('name', 'Python')).values('iri')"),
    ("hr-13", "g.V().has('Employee', 'name', 'Karen Schmidt').out('hasTitle').values('name_de')"),
    ("hr-14", "g.V().has('name', 'Oliver Brennan').in('reportsTo').dedup().count()"),
    ("hr-15", "g.V().has('Employee', 'name', 'Nadia Brant').values('email')"),
    ("hr-17", "g.V().hasLabel('Department').order().by('budget', desc).limit(3).project('department', 'budget').by('iri').by('budget')"),
]
"""Gremlin versions of the sample holdout's HR questions, over `sample_hr_as_property_graph`."""

TYPED_SCRIPT = (
    "g.addV('typed').property('int', 7i).property('long', 8000000000L).property('float', 1.5f)"
    ".property('double', 2.25d).property('bigdecimal', 3.125G).property('biginteger', 123456789012345678901234567890G)"
    ".property('byte', (byte) 9).property('short', (short) -12).property('flag', true).property('text', 'Straße')"
    ".property('date', new Date(1706696100000L)).property('offset', java.time.OffsetDateTime.parse('2024-01-31T10:15:00Z')).iterate()"
)
TYPED_EXPECTED = {
    "int": Term.literal("7", XSD + "integer"),
    "long": Term.literal("8000000000", XSD + "integer"),
    "float": Term.literal("1.5", XSD + "double"),
    "double": Term.literal("2.25", XSD + "double"),
    "bigdecimal": Term.literal("3.125", XSD + "decimal"),
    "biginteger": Term.literal("123456789012345678901234567890", XSD + "integer"),
    "byte": Term.literal("9", XSD + "integer"),
    "short": Term.literal("-12", XSD + "integer"),
    "flag": Term.literal("true", XSD + "boolean"),
    "text": Term.literal("Straße"),
    "date": Term.literal("2024-01-31T10:15:00Z", XSD + "dateTime"),
    "offset": Term.literal("2024-01-31T10:15:00Z", XSD + "dateTime"),
}


@dataclass
class GremlinServer:
    endpoint: str
    process: subprocess.Popen

    def config(self, **extra: Any) -> StoreConfig:
        return StoreConfig(kind="gremlin", endpoint=self.endpoint, data_version="test:sample-hr-pg", product_version="3.8.1", **extra)

    def counts(self) -> tuple[int, int, int]:
        """Vertices, edges and properties (vertex and edge properties) on the server."""
        connection = DriverRemoteConnection(self.endpoint, "g")
        try:
            g = traversal().with_(connection)
            return g.V().count().next(), g.E().count().next(), g.V().properties().count().next() + g.E().properties().count().next()
        finally:
            connection.close()


@pytest.fixture(scope="session")
def gremlin_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GremlinServer]:
    endpoint, process = launch_gremlin_server(tmp_path_factory.mktemp("gremlin-server"), EVALUATION_TIMEOUT_MS)
    try:
        load(endpoint)
        yield GremlinServer(endpoint, process)
    finally:
        stop(process)


def _local(iri: str) -> str:
    return iri.rstrip("/").rsplit("/", 1)[-1].rsplit("#", 1)[-1]


def _value(literal: rdflib.Literal) -> Any:
    if literal.datatype == rdflib.XSD.decimal:
        return bigdecimal(Decimal(str(literal)))
    if literal.datatype == rdflib.XSD.date:
        day = literal.toPython()
        return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
    return literal.toPython()


LOAD_SCRIPT = """
def added = [:]
vertices.each { v -> def x = graph.addVertex(T.id, v['id'], T.label, v['label']); v['properties'].each { key, value -> x.property(key, value) }; added[v['id']] = x }
edges.each { e -> added[e[0]].addEdge(e[1], added[e[2]]) }
"""
"""Loads the graph sent as bindings in one request, through TinkerGraph's structure API (one small
script to compile, no traversal per element; typed values arrive by GraphBinary: BigDecimal,
OffsetDateTime)."""


def sample_hr_as_property_graph(ttl: Path) -> tuple[list[dict], list[list]]:
    """Each subject with an rdf:type a vertex labelled by the class's local name, with `iri`;
    rdfs:label as `name` (`name_<lang>` when tagged); other literals by the predicate's local
    name; a link between two such subjects an edge labelled by the predicate's local name."""
    graph = rdflib.Graph().parse(ttl)
    ids = {s: i for i, s in enumerate(sorted(set(graph.subjects(rdflib.RDF.type, None))), start=1)}
    vertices = []
    for subject, vid in ids.items():
        properties = {"iri": str(subject)}
        for p, o in graph.predicate_objects(subject):
            if isinstance(o, rdflib.Literal):
                key = ("name" if p == RDFS_LABEL else _local(str(p))) + (f"_{o.language}" if o.language else "")
                properties[key] = _value(o)
        vertices.append({"id": vid, "label": _local(str(graph.value(subject, rdflib.RDF.type))), "properties": properties})
    return vertices, [[ids[s], _local(str(p)), ids[o]] for s, p, o in graph if p != rdflib.RDF.type and o in ids and s in ids]


def load(endpoint: str) -> None:
    """The HR graph, the complete graph and the typed vertex, in one request."""
    hr_vertices, hr_edges = sample_hr_as_property_graph(REPO / "holdout" / "hr" / "kg.ttl")
    k_vertices, k_edges = complete_graph(30, first_id=len(hr_vertices) + 1)
    client = Client(endpoint, "g")
    try:
        loaded = client.submit(LOAD_SCRIPT + TYPED_SCRIPT + "\ng.V().count()", {"vertices": hr_vertices + k_vertices, "edges": hr_edges + k_edges},
                               request_options={"evaluationTimeout": 300_000})
        assert loaded.all().result() == [len(hr_vertices) + len(k_vertices) + 1]
    finally:
        client.close()


def complete_graph(size: int, first_id: int) -> tuple[list[dict], list[list]]:
    """Vertices `node` (property k) and an edge `link` between every two of them."""
    ids = range(first_id, first_id + size)
    vertices = [{"id": vid, "label": "node", "properties": {"k": vid - first_id}} for vid in ids]
    return vertices, [[a, "link", b] for a in ids for b in ids if a < b]


def cells(result) -> list[list[str | None]]:
    return [[c.value if c else None for c in row] for row in result.rows]


def _comparable(term: Term | None) -> Any:
    try:
        return Decimal(term.value) if term else None
    except ArithmeticError:
        return term.value


# -- installing and serving ------------------------------------------------------------------


def test_install_script_is_idempotent():
    """Run again over the installed jars, it leaves them and says so."""
    gremlin_server_lib()  # skips (or fails under KGEVAL_REQUIRE_SERVERS=1) when not installed
    done = subprocess.run(["bash", str(REPO / "infra" / "servers" / "install-gremlin-server.sh")],
                          check=False, capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert "already installed" in done.stdout


def test_the_server_speaks_graphbinary_and_graphson(gremlin_server):
    """gremlinpython's default (GraphBinary) and GraphSON 3 both answer, the same."""
    answers = []
    for serializer in (None, GraphSONSerializersV3d0()):
        extra = {"message_serializer": serializer} if serializer else {}
        connection = DriverRemoteConnection(gremlin_server.endpoint, "g", **extra)
        try:
            answers.append(traversal().with_(connection).V().has_label("Employee").count().next())
        finally:
            connection.close()
    assert answers == [320, 320]


def test_endpoint_must_be_a_websocket():
    from kgeval.errors import InputError

    with pytest.raises(InputError, match="must be ws://HOST:8182/gremlin"):
        server_connection("http://127.0.0.1:8182/gremlin")


# -- the sample's property-graph questions: gold and runs -----------------------------------


@pytest.fixture(scope="module")
def sparql_gold() -> dict[str, Any]:
    """The sample holdout's HR answers to its reference SPARQL, on the embedded store."""
    holdout = load_holdout(REPO / "holdout")
    [hr] = [kg for kg in holdout.kgs if kg.id == "hr"]
    store = EmbeddedStore(hr.files)
    sparql = {q.id: q.sparql for q in holdout.questions()}
    return {qid: store.execute(sparql[qid], timeout_s=60, row_cap=2000) for qid, _ in GREMLIN_HR}


@pytest.fixture(scope="module")
def pg_holdout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sample = {q.id: q for q in load_holdout(REPO / "holdout").questions()}
    questions = [{"id": qid, "question": sample[qid].question, "gremlin": gremlin, "domain": "hr", "tags": [str(t) for t in sample[qid].tags],
                  **({"expect_empty": True} if sample[qid].expect_empty else {}), **({"order_sensitive": True} if sample[qid].order_sensitive else {})}
                 for qid, gremlin in GREMLIN_HR]
    return write_holdout(tmp_path_factory.mktemp("pg") / "holdout", questions, "# a property graph: its data is on the Gremlin Server\n", kg="hr")


@pytest.fixture(scope="module")
def pg_gold(gremlin_server, pg_holdout: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    gold_dir = tmp_path_factory.mktemp("pg-gold") / "gold"
    store = open_store(gremlin_server.config(), [], "hr")
    report = rebuild_gold(load_holdout(pg_holdout), lambda kg: store, GoldConfig(), gold_dir)
    assert report.ok, report.failures
    return gold_dir


def test_gremlin_gold_equals_the_sparql_gold_of_the_sample(gremlin_server, pg_holdout, sparql_gold, tmp_path):
    """Each Gremlin question's gold, rebuilt on the server, holds the same values as the sample's
    SPARQL gold (IRIs as the `iri` property, decimals, counts, dates, language-tagged names)."""
    store = open_store(gremlin_server.config(), [], "hr")
    report = rebuild_gold(load_holdout(pg_holdout), lambda kg: store, GoldConfig(), tmp_path / "gold")
    assert report.ok, report.failures
    gold = {e.question_id: e for e in report.entries}
    assert gold["hr-03"].engine == "gremlin-server" and gold["hr-03"].kg_sha256 == "test:sample-hr-pg"
    for qid, _ in GREMLIN_HR:
        mine, theirs = gold[qid].result, sparql_gold[qid]
        assert mine.total == theirs.total, qid
        rows = sorted([_comparable(c) for c in row] for row in mine.rows)
        expected = sorted([_comparable(c) for c in row] for row in theirs.rows)
        if qid == "hr-09":  # AVG of decimals: SPARQL engines round differently from BigDecimal's mean
            assert abs(rows[0][0] - expected[0][0]) < Decimal("0.01"), (rows, expected)
        else:
            assert rows == expected, qid
    assert gold["hr-06"].result.ordered and gold["hr-06"].result.rows[0][1].datatype == XSD + "decimal"
    assert gold["hr-07"].result.total == 0


def _replay_run(holdout: Path, gold: Path, config: KgevalConfig, tmp_path: Path, answers: dict[str, str]) -> tuple[Any, ResultsDB]:
    checklist = _cli_checklist(tmp_path)
    db = ResultsDB(tmp_path / "r.duckdb")
    loaded = load_holdout(holdout)
    execute_run(loaded, gold, OracleSystem(), config, db, checklist=pre_eval_checklist(checklist))
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps({"kg": "hr", "question_id": qid, "seed": 0, "sparql": text}) + "\n" for qid, text in answers.items()))
    metadata = execute_run(loaded, gold, ReplaySystem(replay, loaded), config, db, checklist=pre_eval_checklist(checklist), replay=replay)
    return metadata, db


def _run_config(gremlin_server: GremlinServer, timeout_s: float = 30.0) -> KgevalConfig:
    return KgevalConfig(store=gremlin_server.config(), run=RunConfig(seeds=1, concurrency=2, candidate_timeout_s=timeout_s, retry_backoff_s=0.0))


def test_oracle_and_replay_runs_on_the_server(gremlin_server, pg_holdout, pg_gold, tmp_path):
    """A replay of right, reformulated, wrong and never-ending traversals: the right ones are
    correct, the wrong one is not, the never-ending one is a candidate_timeout, and the run goes
    on to the end (every question has its verdict)."""
    answers = dict(GREMLIN_HR)
    answers["hr-01"] = "g.V().has('name', 'Karen Novak').outE('worksIn').inV().values('iri')"  # same answer, other path
    answers["hr-03"] = "g.V().hasLabel('Employee').count()"  # wrong
    answers["hr-15"] = NEVER_ENDS  # runs its whole timeout: 30 s, which the right ones never need on any machine
    metadata, db = _replay_run(pg_holdout, pg_gold, _run_config(gremlin_server), tmp_path, answers)
    with db:
        [oracle] = [r for r in db.runs(status=None) if r.system != "replay"]
        oracle_verdicts = db.verdicts(oracle.run_id)
        verdicts: dict[str, list] = {}
        for qid, _, verdict in db.verdicts(metadata.run_id):
            verdicts.setdefault(qid, []).append(verdict)
        states = {a.question_id: a.state for a in db.attempts(metadata.run_id)}
    assert oracle_verdicts and all(v.correct for _, _, v in oracle_verdicts)
    assert set(verdicts) == set(states) == {qid for qid, _ in GREMLIN_HR}
    assert all(v.correct for qid in ("hr-01", "hr-06", "hr-17") for v in verdicts[qid])
    assert not any(v.correct for v in verdicts["hr-03"])
    assert {v.path for v in verdicts["hr-15"]} == {"candidate_timeout"} and not any(v.correct for v in verdicts["hr-15"])


def test_the_neptune_gremlin_store_runs_over_the_same_websocket(gremlin_server, aws_test_credentials):
    """The neptune-gremlin kind (a SigV4-signed handshake, which a Gremlin Server ignores) over
    the same transport: the same rows as the gremlin kind. What Neptune does with the signature
    is tested on the loopback verifier (test_gremlin.py), never here."""
    neptune = StoreConfig(kind="neptune-gremlin", endpoint=gremlin_server.endpoint, region="eu-west-1",
                          data_version="test:sample-hr-pg", allow_insecure_http=True)
    query = "g.V().hasLabel('Department').order().by('budget', desc).limit(3).project('d', 'budget').by('name').by('budget')"
    signed = open_store(neptune, []).execute(query, timeout_s=30, row_cap=10)
    plain = open_store(gremlin_server.config(), []).execute(query, timeout_s=30, row_cap=10)
    assert signed.rows == plain.rows and len(signed.rows) == 3 and signed.ordered


# -- result types -----------------------------------------------------------------------------


@pytest.mark.parametrize("key", list(TYPED_EXPECTED))
def test_every_java_type_maps_to_a_typed_literal(gremlin_server, key):
    store = open_store(gremlin_server.config(), [])
    result = store.execute(f"g.V().hasLabel('typed').values('{key}')", timeout_s=30, row_cap=10)
    assert result.rows == [[TYPED_EXPECTED[key]]]


def test_a_map_of_every_type_is_one_row_of_columns(gremlin_server):
    store = open_store(gremlin_server.config(), [])
    result = store.execute("g.V().hasLabel('typed').valueMap()", timeout_s=30, row_cap=10)
    assert sorted(result.vars) == sorted(TYPED_EXPECTED)
    assert dict(zip(result.vars, result.rows[0])) == TYPED_EXPECTED


def test_vertices_edges_and_element_maps(gremlin_server):
    store = open_store(gremlin_server.config(), [])
    vertex = store.execute("g.V().has('Employee', 'name', 'Karen Novak')", timeout_s=30, row_cap=10)
    vid = vertex.rows[0][0].value.removeprefix("urn:gremlin:vertex:")
    assert vertex.rows[0][0] == Term.iri("urn:gremlin:vertex:" + vid) and vid.isdigit()
    edges = store.execute("g.V().has('Employee', 'name', 'Karen Novak').outE('worksIn')", timeout_s=30, row_cap=10)
    assert edges.total == 1 and edges.rows[0][0].value.startswith("urn:gremlin:edge:")
    element = store.execute("g.V().has('Employee', 'name', 'Karen Novak').elementMap('name', 'remote')", timeout_s=30, row_cap=10)
    assert element.vars == ["id", "label", "name", "remote"]
    assert element.rows == [[Term.literal(vid, XSD + "integer"), Term.literal("Employee"), Term.literal("Karen Novak"), element.rows[0][3]]]
    assert element.rows[0][3].datatype == XSD + "boolean"


def test_paths_and_lists_have_no_cell_form_as_on_gremlite(gremlin_server):
    store = open_store(gremlin_server.config(), [])
    with pytest.raises(StoreError, match="Path result has no single-cell form"):
        store.execute("g.V().has('name', 'Karen Novak').out('worksIn').path()", timeout_s=30, row_cap=10)
    with pytest.raises(StoreError, match="list result has no single-cell form"):
        store.execute("g.V().hasLabel('Department').values('name').fold()", timeout_s=30, row_cap=10)


def test_typed_number_literals_reach_the_server_as_their_java_types(gremlin_server):
    """`3.125m` is sent as a BigDecimal (it was a Python Decimal, which gremlinpython cannot
    send), `8000000000L` a long, `-12s` a short, `9b` a byte."""
    store = open_store(gremlin_server.config(), [])
    query = "g.V().hasLabel('typed').has('bigdecimal', 3.125m).has('long', 8000000000L).has('short', -12s).has('byte', 9b).count()"
    assert store.execute(query, timeout_s=30, row_cap=1).rows == [[Term.literal("1", XSD + "integer")]]
    over = store.execute("g.V().hasLabel('Employee').has('salary', gt(150000.00m)).count()", timeout_s=30, row_cap=1)
    assert 0 < int(over.rows[0][0].value) < 320


def test_bulked_traversers_are_counted_not_expanded(gremlin_server):
    """TinkerGraph bulks the traversers of repeat(): 30 traversers stand for 30 * 29^10 results.
    The total is the sum of the bulks (the server's own count() agrees) and the row cap keeps 5
    rows; expanding the bulks ran until the deadline, filling memory."""
    store = open_store(gremlin_server.config(), [])
    result = store.execute("g.V().hasLabel('node').repeat(both()).times(10)", timeout_s=20, row_cap=5)
    count = store.execute("g.V().hasLabel('node').repeat(both()).times(10).count()", timeout_s=20, row_cap=1)
    assert result.total == 30 * 29**10 == int(count.rows[0][0].value)
    assert len(result.rows) == 5 and result.truncated


# -- timeouts: the server stops ---------------------------------------------------------------


def test_the_server_stops_at_kgevals_timeout(gremlin_server):
    """kgeval sends its timeout as the request's evaluationTimeout: the attempt is a
    QueryTimeout and the server is idle right after it (measured from /proc)."""
    store = open_store(gremlin_server.config(), [])
    with pytest.raises(QueryTimeout):
        store.execute_candidate(NEVER_ENDS, timeout_s=2.0, row_cap=10)
    used = cpu_seconds_over(gremlin_server.process.pid, IDLE_WINDOW_S)
    assert used < IDLE_CPU_S, f"the server used {used:.2f} CPU-s in the {IDLE_WINDOW_S} s after the timeout"
    assert store.execute("g.V().hasLabel('node').count()", timeout_s=30, row_cap=1).rows[0][0].value == "30"


def test_without_the_request_option_only_the_servers_own_limit_stops_it(gremlin_server):
    """The control: a store that does not send evaluationTimeout gets its QueryTimeout from
    kgeval's deadline while the server keeps a core busy, until the server's own
    evaluationTimeout (gremlin-server.yaml) stops the traversal."""
    store = GremlinStore(server_connection(gremlin_server.endpoint), data_version="v", name="gremlin-server", version="3.8.1")
    sent = time.monotonic()
    with pytest.raises(QueryTimeout, match="longer than 1 s"):
        store.execute(NEVER_ENDS, timeout_s=1.0, row_cap=10)
    # every CPU-second the traversal gets until the server's own limit (a loaded machine gives it
    # at least a third of a core: over 1.3 CPU-s in these 4 s), not a shorter window's share
    busy = cpu_seconds_over(gremlin_server.process.pid, max(2.5, sent + EVALUATION_TIMEOUT_MS / 1000 - time.monotonic()))
    assert busy > IDLE_CPU_S, f"the server used only {busy:.2f} CPU-s after kgeval's deadline: the traversal was not running"
    rates = cpu_rates_until_idle(gremlin_server.process.pid, 0.0, within_s=60, window_s=IDLE_WINDOW_S, slack=IDLE_CPU_S / IDLE_WINDOW_S)
    used = rates[-1] * IDLE_WINDOW_S
    assert used < IDLE_CPU_S, f"the server used {used:.2f} CPU-s in {IDLE_WINDOW_S} s windows after its own evaluationTimeout ({rates})"


def test_the_servers_own_limit_is_a_candidate_timeout(gremlin_server):
    """When the server's evaluationTimeout answers first (status 598, here its own 5 s limit
    under kgeval's 60 s), the query timed out: a QueryTimeout (a candidate_timeout in a run),
    not a store failure counted against the harness."""
    store = GremlinStore(server_connection(gremlin_server.endpoint), data_version="v", name="gremlin-server", version="3.8.1")
    with pytest.raises(QueryTimeout, match="stopped the traversal at its evaluationTimeout"):
        store.execute_candidate(NEVER_ENDS, timeout_s=60.0, row_cap=10)


# -- untrusted traversals ---------------------------------------------------------------------

HOSTILE = [
    "g.V().map{ it.get().property('name', 'x') }",
    "g.inject(1).map{ graph.addVertex('x') }",
    "g.V().sideEffect{ it.get().remove() }",
    "g.io('/tmp/kgeval-export.xml').write()",
    "g.io('/etc/passwd').read()",
    "g.call('tinker.search')",
    "g.V().call('tinker.degree.centrality')",
    "g.addV('intruder')",
    "g.V().has('name', 'Karen Novak').addE('knows').to(V().has('name', 'Nadia Brant'))",
    "g.V().hasLabel('node').drop()",
    "g.E().drop()",
    "g.V().properties('email').drop()",
    "g.V().has('name', 'Karen Novak').property('salary', 1)",
    "g.V().has('name', 'Karen Novak').property(single, 'salary', 1)",
    "g.mergeV([name: 'x'])",
    "g.mergeV()",
    "g.V().mergeE([(T.label): 'x'])",
    "g.V().as('a').mergeE()",
    "g.V().as('a').V().addE('x').from('a')",
    "g.inject(1).addV('intruder')",
    "g.V().property(list, 'name', 'x')",
    "g.E().properties().drop()",
    "g.tx().commit()",
    "g.V().subgraph('x').cap('x')",
    "g.V().sack(sum).by('salary')",
    "g.V().coalesce(has('name', 'nobody'), addV('intruder'))",
    "g.V().sideEffect(drop())",
    "g.V().local(properties().drop())",
    "g.withSideEffect('x', 1).V()",
    "g.with('evaluationTimeout', 999999999).V()",
    "graph.addVertex('intruder')",
    "g.V().drop(); g.V().count()",
    "g.V().choose(has('name'), __.property('name', 'x'), identity())",
]


def test_untrusted_traversals_are_refused_before_a_connection_opens(gremlin_server):
    opened = []
    connect = server_connection(gremlin_server.endpoint)
    store = GremlinStore(lambda: opened.append(1) or connect(), data_version="v", name="gremlin-server", version="3.8.1", server_timeout=True)
    for query in HOSTILE:
        with pytest.raises((QueryRefused, QuerySyntaxError)):
            store.execute_candidate(query, timeout_s=60, row_cap=10)
    assert opened == []


def test_untrusted_traversals_through_a_run_leave_the_graph_unchanged(gremlin_server, pg_holdout, pg_gold, tmp_path):
    """Every hostile traversal, as a replayed answer of a run: each attempt is refused or does
    not parse (a model failure, never sent), and the server's graph counts are unchanged."""
    before = gremlin_server.counts()
    config = _run_config(gremlin_server).model_copy(update={"run": RunConfig(seeds=2, concurrency=2, candidate_timeout_s=10.0, retry_backoff_s=0.0)})
    slots = [(qid, seed) for seed in range(2) for qid, _ in GREMLIN_HR]
    checklist = _cli_checklist(tmp_path)
    loaded = load_holdout(pg_holdout)
    replay = tmp_path / "hostile.jsonl"
    replay.write_text("".join(json.dumps({"kg": "hr", "question_id": qid, "seed": seed, "sparql": HOSTILE[i % len(HOSTILE)]}) + "\n"
                              for i, (qid, seed) in enumerate(slots)))
    with ResultsDB(tmp_path / "r.duckdb") as db:
        execute_run(loaded, pg_gold, OracleSystem(), config, db, checklist=pre_eval_checklist(checklist))
        metadata = execute_run(loaded, pg_gold, ReplaySystem(replay, loaded), config, db, checklist=pre_eval_checklist(checklist), replay=replay)
        verdicts = db.verdicts(metadata.run_id)
    assert len({(q, s) for q, s, _ in verdicts}) == len(slots) and not any(v.correct for _, _, v in verdicts)
    paths = {v.path for _, _, v in verdicts}
    assert paths == {"refused", "invalid_sparql"}, paths
    assert gremlin_server.counts() == before
