"""Apache Jena Fuseki as a gold store and a candidate store (issue 33).

Two real Fuseki servers on 127.0.0.1 (the jar infra/servers/install.sh installs, on Java 17):
the shipped infra/fuseki/config.ttl as it is, serving the sample holdout, which the CLI rebuilds
the gold from and runs the oracle, weak and replay systems against through
infra/fuseki/kgeval-store.yaml; and the session's (tests/stores/conftest.py), loaded with the
test holdouts and CK25. The hostile corpus (test_hostile.py) and the server's CPU after a bomb
(test_server_cpu.py) run on the session's too; so do the SPARQL store's own tests
(test_sparql.py and others, through the `sparql_server` fixture).
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kgeval.config import GoldConfig, StoreConfig
from kgeval.errors import QueryRefused, QueryTimeout
from kgeval.gold import read_gold, rebuild_gold
from kgeval.holdout import load_holdout
from kgeval.stores import EmbeddedStore, open_store
from tests.conftest import CK25_MISSING, REPO
from tests.stores.hostile_corpus import CPU_BOMBS
from tests.stores.servers import FUSEKI_CONFIG, FUSEKI_VERSION, serve_fuseki, stop
from tests.stores.test_gold_engines import documented_differences

pytestmark = pytest.mark.fuseki

STORE_YAML = REPO / "infra" / "fuseki" / "kgeval-store.yaml"
SAMPLE = REPO / "holdout"


def kgeval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgeval", *args], capture_output=True, text=True, cwd=REPO, timeout=600)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Fuseki started with infra/fuseki/config.ttl unchanged; its SPARQL endpoint."""
    endpoint, process = serve_fuseki(tmp_path_factory.mktemp("fuseki-shipped"), FUSEKI_CONFIG)
    yield endpoint
    stop(process)


@pytest.fixture(scope="module")
def store_yaml(shipped: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """infra/fuseki/kgeval-store.yaml with the endpoint moved to the test server's port."""
    config = yaml.safe_load(STORE_YAML.read_text(encoding="utf-8"))
    config["store"]["endpoint"] = shipped
    path = tmp_path_factory.mktemp("fuseki-yaml") / "kgeval.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def fuseki_gold(store_yaml: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    gold = tmp_path_factory.mktemp("fuseki-gold") / "gold"
    rebuilt = kgeval("gold", "rebuild", "--config", str(store_yaml), "--holdout", str(SAMPLE), "--gold", str(gold))
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    return gold


def _count(endpoint: str, graph: str | None) -> int:
    config = StoreConfig(kind="sparql", endpoint=endpoint, data_version="x", default_graphs=(graph,) if graph else ())
    result = open_store(config, []).execute("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", timeout_s=60, row_cap=1)
    return int(result.rows[0][0].value)


def test_the_shipped_config_serves_each_kg_in_its_graph_and_their_union(shipped):
    """config.ttl's relative paths find holdout/ from the checkout; each KG is in the graph
    kgeval-store.yaml names, with the triples the embedded store loads; the default graph
    (no default-graph-uri) is their union."""
    graphs = yaml.safe_load(STORE_YAML.read_text(encoding="utf-8"))["store"]["kg_graphs"]
    holdout = load_holdout(SAMPLE)
    assert set(graphs) == {kg.id for kg in holdout.kgs}
    counts = {kg: _count(shipped, graph) for kg, graph in graphs.items()}
    for kg in holdout.kgs:
        embedded = EmbeddedStore(kg.files).execute("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", timeout_s=60, row_cap=1)
        assert counts[kg.id] == int(embedded.rows[0][0].value) > 0, kg.id
    assert _count(shipped, None) == sum(counts.values())


def test_cli_gold_rebuild_on_fuseki_records_the_engine_and_matches_the_embedded_gold(fuseki_gold, store_yaml):
    """`kgeval gold rebuild --config infra/fuseki/kgeval-store.yaml`: every question built,
    the engine and version read from the server, the data version the YAML declares; hashes
    as the embedded store's except where docs/engines.md says why."""
    gold = read_gold(fuseki_gold)
    holdout = load_holdout(SAMPLE)
    assert len(gold.entries) == len(holdout.questions()) and not gold.failures
    assert {(e.engine, e.engine_version, e.kg_sha256) for e in gold.entries.values()} == {
        ("sparql-endpoint:Fuseki", FUSEKI_VERSION, "sample-holdout")
    }
    embedded = rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), None)
    differing = {e.question_id for e in embedded.entries if e.result_sha256 != gold.entries[e.question_id].result_sha256}
    assert differing == {q for h, q in documented_differences()["fuseki"] if h == "sample"}
    verified = kgeval("gold", "verify", "--config", str(store_yaml), "--holdout", str(SAMPLE), "--gold", str(fuseki_gold))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def _run(system: str, store_yaml: Path, gold: Path, db: Path, *extra: str) -> dict:
    ran = kgeval("run", "--system", system, "--config", str(store_yaml), "--holdout", str(SAMPLE), "--gold", str(gold),
                 "--db", str(db), "--seeds", "1", *extra)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    run_id = ran.stdout.strip().splitlines()[-1]
    report = kgeval("report", run_id, "--db", str(db), "--format", "json")
    assert report.returncode == 0, report.stderr
    return json.loads(report.stdout)["overall"]


@pytest.fixture(scope="module")
def oracle_run(store_yaml, fuseki_gold, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The oracle's run (the checklist's positive control, before any other system): the
    results database and its overall figures."""
    db = tmp_path_factory.mktemp("fuseki-runs") / "r.duckdb"
    return db, _run("oracle", store_yaml, fuseki_gold, db)


def test_oracle_run_on_fuseki_is_all_correct(oracle_run):
    """The oracle answers with each reference query, executed on Fuseki by the execution judge."""
    _, overall = oracle_run
    assert overall["correct"] == overall["n"] == len(load_holdout(SAMPLE).questions())


def test_weak_run_on_fuseki_scores_below_the_oracle(store_yaml, fuseki_gold, oracle_run):
    overall = _run("weak", store_yaml, fuseki_gold, oracle_run[0])
    assert overall["n"] == len(load_holdout(SAMPLE).questions())
    assert 0 <= overall["correct"] < overall["n"]


def test_replay_run_on_fuseki_judges_each_recorded_query(store_yaml, fuseki_gold, oracle_run, tmp_path):
    """Replayed SPARQL is executed on Fuseki: the reference queries are correct, a query for
    another KG's data is wrong, an update is refused before it is sent and scored wrong."""
    questions = load_holdout(SAMPLE).questions()
    wrong = {questions[0].id: "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1", questions[1].id: "INSERT DATA { <urn:x> <urn:y> <urn:z> }"}
    records = [{"kg": q.kg, "question_id": q.id, "seed": 0, "sparql": wrong.get(q.id, q.sparql)} for q in questions]
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    overall = _run("replay", store_yaml, fuseki_gold, oracle_run[0], "--replay", str(replay))
    assert (overall["n"], overall["correct"]) == (len(questions), len(questions) - 2)
    assert _count(str(yaml.safe_load(store_yaml.read_text())["store"]["endpoint"]), "urn:x") == 0


def test_the_shipped_endpoint_refuses_updates_itself(shipped):
    """Behind kgeval's guard, the server is query-only too: SPARQL Update, on the query
    endpoint or an /update path, changes nothing."""
    before = _count(shipped, None)
    service = shipped.rsplit("/", 1)[0]
    for url in (shipped, service + "/update", service):
        data = urllib.parse.urlencode({"update": "INSERT DATA { <urn:x> <urn:y> <urn:z> }"}).encode()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=30)
        assert refused.value.code in (400, 404, 405), url
    assert _count(shipped, None) == before


def test_kgeval_refuses_writes_before_they_reach_fuseki(fuseki_server):
    store = open_store(fuseki_server.config("mini"), [], kg="mini")
    for query in ("INSERT DATA { <urn:x> <urn:y> <urn:z> }", "LOAD <http://127.0.0.1:9/x.ttl>", "DROP ALL",
                  "SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }"):
        with pytest.raises(QueryRefused):
            store.execute_candidate(query, timeout_s=60, row_cap=10)


def test_fuseki_is_known_by_its_request_id_header(fuseki_server):
    """Fuseki 5 sends no Server header: the store knows it by Fuseki-Request-Id, reads its
    version from /$/server, and sends its `timeout` (seconds) with every request."""
    request = urllib.request.Request(fuseki_server.endpoint + "?" + urllib.parse.urlencode({"query": "ASK {}"}))
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.headers.get("Server") is None and answer.headers.get("Fuseki-Request-Id")
    store = open_store(fuseki_server.config("mini"), [], kg="mini")
    assert (store.name, store.version) == ("sparql-endpoint:Fuseki", FUSEKI_VERSION)
    assert store.timeout_parameters(2.5) == {"timeout": "2.5"}


def test_a_query_fuseki_stops_at_its_own_limit_is_a_timeout(fuseki_server):
    """A server limit below kgeval's (here the `timeout` sent is a third of it) answers HTTP
    503 "Query timed out" before kgeval's deadline: the query's timeout (a candidate's
    `candidate_timeout`), never a store failure that would excuse the model."""
    store = open_store(fuseki_server.config("sample"), [], kg="hr")
    store.timeout_parameters = lambda timeout_s: {"timeout": f"{timeout_s / 3:g}"}  # type: ignore[method-assign]
    with pytest.raises(QueryTimeout, match="the server stopped the query at its time limit"):
        store.execute_candidate(CPU_BOMBS["cross-join"], timeout_s=15, row_cap=10)


def test_ck25_gold_on_fuseki_matches_the_embedded_gold_except_where_explained(fuseki_server, ck25_holdout):
    """CK25, each file in the named graph its `.graph` names, read as one default graph: every
    question builds; a hash differs from the embedded store's only where docs/engines.md
    says why, or where the embedded gold's tie set accepts Fuseki's rows."""
    if ck25_holdout is None:
        pytest.skip(CK25_MISSING)
    config = fuseki_server.config("ck25")
    assert len(config.default_graphs) == 2
    on_fuseki = rebuild_gold(ck25_holdout, lambda kg: open_store(config, kg.files, kg.id), GoldConfig(), None)
    assert on_fuseki.ok, on_fuseki.failures
    embedded = {e.question_id: e for e in rebuild_gold(ck25_holdout, lambda kg: EmbeddedStore(kg.files, graphs=kg.graphs), GoldConfig(), None).entries}
    documented = {q for h, q in documented_differences()["fuseki"] if h == "ck25"}
    unexplained = [e.question_id for e in on_fuseki.entries
                   if e.result_sha256 != embedded[e.question_id].result_sha256 and e.question_id not in documented
                   and not (embedded[e.question_id].ties and embedded[e.question_id].ties.accepts(e.result.rows))]
    assert len(on_fuseki.entries) == 50 and unexplained == []
