"""The server itself stops a query at kgeval's timeout, where its protocol allows it, and a
partial answer sent at that limit is a timeout, never a result.

Real Virtuoso 7.2 (tests/stores/servers.py, loaded without any server-side time limit, so
only the per-request `timeout` can stop a query); loopback endpoints for the request kgeval
sends to Fuseki and Amazon Neptune, which cannot run here (Neptune's request is signed by
botocore's real SigV4 signer and verified by the loopback handler, as test_neptune.py does;
what Neptune does with the hint is its documentation's word, not tested).
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request

import pytest

from kgeval.config import CandidateQueryConfig, GoldConfig, KgevalConfig, StoreConfig
from kgeval.errors import QueryOverBudget, QueryRejected, QueryTimeout, StoreError
from kgeval.gold import rebuild_gold
from kgeval.holdout import load_holdout
from kgeval.runs._attempt import execute_candidate
from kgeval.stores import guard_query, open_store
from kgeval.stores._rewrite import NEPTUNE_HINTS
from tests.conftest import write_holdout
from tests.stores.loopback import ASK_TRUE, Recorded, loopback
from tests.stores.servers import cpu_rates_until_idle, cpu_seconds_over, launch_virtuoso, stop
from tests.stores.sigv4_verify import REGION, signature_problem

CARTESIAN_ORDER = "SELECT ?a ?d ?g WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } ORDER BY DESC(STR(?c)) STR(?f) ?i"
CARTESIAN_GROUP_CONCAT = 'SELECT (GROUP_CONCAT(STR(?o); separator=",") AS ?all) WHERE { ?a ?b ?o . ?c ?d ?e . ?f ?g ?h }'


def _cpu_rate(pid: int, window_s: float) -> float:
    return cpu_seconds_over(pid, window_s) / window_s


@pytest.mark.parametrize("query", [CARTESIAN_ORDER, CARTESIAN_GROUP_CONCAT], ids=["order-by", "group-concat"])
def test_virtuoso_stops_the_query_at_kgevals_timeout(virtuoso_server, query):
    """Virtuoso answers at its per-request timeout with HTTP 500 or 200 plus SQL state S1TAT and
    the rows it had (anytime semantics): each is a QueryTimeout. Its CPU is back to its idle
    baseline within seconds (waited for up to 60 s: a loaded machine stretches its wind-down);
    without the `timeout` parameter the sort runs on for minutes."""
    store = open_store(virtuoso_server.config("mini"), [], kg="mini")
    assert store.name.startswith("sparql-endpoint:Virtuoso")  # as a run records it before any candidate
    pid = virtuoso_server.process.pid
    idle = _cpu_rate(pid, 3.0)
    with pytest.raises(QueryTimeout, match="partial answer|longer than"):
        store.execute_candidate(query, timeout_s=2.0, row_cap=100)
    rates = cpu_rates_until_idle(pid, idle, within_s=60)
    assert rates[-1] <= idle + 0.12, f"Virtuoso still burns {rates[-1]:.2f} cores 60 s after the timeout (idle {idle:.2f}; {rates})"


def test_virtuoso_is_sent_its_timeout_parameter(virtuoso_server):
    """Without configuration the product is learned from the Server header of the first answer
    (recording the engine's name does it before a run's first candidate): later requests carry
    timeout=<ms>, trusted queries too: two seconds under kgeval's (Virtuoso looks at its timeout
    every two seconds), never under the one second it reads."""
    store = open_store(virtuoso_server.config("mini"), [], kg="mini")
    assert store.name.startswith("sparql-endpoint:Virtuoso")
    assert store.timeout_parameters(30) == {"timeout": "28000"}
    assert store.timeout_parameters(2.5) == {"timeout": "1000"}
    assert store.execute("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1).boolean is True
    other_kg = open_store(virtuoso_server.config("types"), [], kg="types")  # a run's next KG: same endpoint
    assert other_kg.timeout_parameters(4.5) == {"timeout": "2500"}


GROUPED_CROSS_PRODUCT = "SELECT ?b (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } GROUP BY ?b"
"""Counts over hr's 10^11-row cross product: at its timeout Virtuoso answers the counts so far."""


def _post(server, graph: str, query: str, parameters: dict[str, str]) -> tuple[int, dict[str, str], dict]:
    form = urllib.parse.urlencode({"query": query, "default-graph-uri": graph, **parameters}).encode()
    request = urllib.request.Request(server.endpoint, data=form, headers={"Accept": "application/sparql-results+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, dict(response.headers), json.loads(response.read())


def test_virtuosos_partial_answer_is_never_a_result(virtuoso_server, tmp_path):
    """Virtuoso's anytime answer at its timeout, as it really comes (HTTP 200, the rows counted so
    far, `X-SQL-State: S1TAT`, `X-SQL-Message`, `X-Exec-Milliseconds`, `X-Exec-DB-Activity`), is a
    QueryTimeout: a candidate's candidate_timeout, a reference query's failure, never rows and never
    a stored gold. The store sends Virtuoso its own timeout and waits a minute, so the answer is
    Virtuoso's own. The timeout is the first of 1, 2, 4, 8, 16 s at which Virtuoso's partial answer
    holds rows: on a loaded machine it may have counted none by the first second (an empty
    partial answer is refused as well, but proves less)."""
    config = virtuoso_server.config("sample")
    for ms in (1000, 2000, 4000, 8000, 16000):
        partial = {"timeout": str(ms)}
        status, headers, doc = _post(virtuoso_server, config.kg_graphs["hr"], GROUPED_CROSS_PRODUCT, partial)
        assert (status, headers.get("X-SQL-State")) == (200, "S1TAT"), headers
        if doc["results"]["bindings"]:
            break
    assert doc["results"]["bindings"], "the partial answer holds rows (within 16 s)"
    assert {"X-SQL-Message", "X-Exec-Milliseconds", "X-Exec-DB-Activity"} <= headers.keys()

    def store(kg_id: str):
        opened = open_store(config, [], kg=kg_id)
        opened.timeout_parameters = lambda _: partial  # type: ignore[method-assign]
        return opened

    with pytest.raises(QueryTimeout, match="partial answer"):
        store("hr").execute_candidate(GROUPED_CROSS_PRODUCT, timeout_s=60, row_cap=100)
    with pytest.raises(QueryTimeout, match="partial answer"):
        store("hr").execute(GROUPED_CROSS_PRODUCT, timeout_s=60, row_cap=100)
    question = {"id": "hr-bomb", "question": "Triples per predicate, cubed", "sparql": GROUPED_CROSS_PRODUCT, "domain": "hr", "tags": ["count"]}
    holdout = load_holdout(write_holdout(tmp_path / "holdout", [question], kg="hr"))
    report = rebuild_gold(holdout, lambda kg: store(kg.id), GoldConfig(timeout_s=60), tmp_path / "gold")
    assert not report.ok and not report.entries
    assert [f.question_id for f in report.failures] == ["hr-bomb"] and "partial answer" in report.failures[0].error


def _form(request: Recorded) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(request.body.decode())


@pytest.mark.parametrize(("product", "expected"), [("Virtuoso", ["58500"]), ("Apache Jena Fuseki", ["60.5"]), ("oxigraph", None)])
def test_the_timeout_parameter_each_product_reads(product, expected):
    """Virtuoso: milliseconds, two seconds under kgeval's; Fuseki: seconds; Oxigraph server has no
    per-request timeout (it ignores one), so none is sent (its bound is `--timeout-s`)."""
    with loopback() as (url, recorded):
        store = open_store(StoreConfig(kind="sparql", endpoint=url + "/sparql", data_version="x", product=product), [])
        store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=60.5, row_cap=1)
    assert _form(recorded[-1]).get("timeout") == expected


ROWS = '{"head": {"vars": ["o"]}, "results": {"bindings": [{"o": {"type": "literal", "value": "x"}}'


@pytest.mark.parametrize(
    "reply",
    [
        (200, {"Content-Type": "application/sparql-results+json", "X-SQL-State": "S1TAT",
               "X-SQL-Message": "RC...: Returning incomplete results, query interrupted by result timeout."}, (ROWS + "]}}").encode()),
        (500, {"Content-Type": "text/plain"}, (ROWS + ",\t" * 40_000 + "Virtuoso S1TAT Error RC...: Returning incomplete results, "
                                               "query interrupted by result timeout.\n\nSPARQL query:\nSELECT ?o").encode()),
    ],
    ids=["200-with-header", "500-rows-then-error"],
)
def test_a_partial_answer_at_the_servers_limit_is_a_timeout(reply):
    """Both shapes Virtuoso 7.2 sends (recorded from the real server above): never rows, never
    a harness error; the second has the error only after 80 KB of rows."""
    with loopback(lambda _: reply) as (url, _):
        store = open_store(StoreConfig(kind="sparql", endpoint=url + "/sparql", data_version="x", product="Virtuoso"), [])
        with pytest.raises(QueryTimeout, match="partial answer"):
            store.execute_candidate("SELECT ?o WHERE { ?s ?p ?o }", timeout_s=60, row_cap=10)


@pytest.mark.parametrize(
    ("code", "aborted"),
    [("SR177", "Virtuoso 4000X Error SR177: Misc Transaction Error"), ("SR203", "Virtuoso HY008 Error SR203: Async statement killed by SQLCancel.")],
    ids=["SR177", "SR203"],
)
def test_an_abort_at_the_servers_timeout_is_a_timeout(code, aborted, monkeypatch):
    """Virtuoso sometimes ends a query its timeout stopped with SR177 (seen in CI on the cartesian
    ORDER BY above) or SR203 (a four-way cross product while other requests came in): once the
    limit it was sent has passed (28 s for kgeval's 30 s: before kgeval's deadline), a timeout;
    before it, the same error stays a store error. The store reads a fake clock that only the
    server moves: whether the limit has passed cannot turn on the machine's load."""
    import kgeval.stores._sparql as sparql_module

    clock = _StillClock()
    monkeypatch.setattr(sparql_module, "time", clock)
    body = f"{aborted}\n\nSPARQL query:\nSELECT ?o".encode()

    def at_its_limit(request: Recorded):
        clock.now += int(_form(request)["timeout"][0]) / 1000  # the server ran to the limit it was sent
        return 500, {"Content-Type": "text/plain"}, body

    with loopback(at_its_limit) as (url, _):
        store = open_store(StoreConfig(kind="sparql", endpoint=url + "/sparql", data_version="x", product="Virtuoso"), [])
        with pytest.raises(QueryTimeout, match=f"the server aborted it: .*{code}"):
            store.execute_candidate("SELECT ?o WHERE { ?s ?p ?o }", timeout_s=30, row_cap=10)
    with loopback(lambda _: (500, {"Content-Type": "text/plain"}, body)) as (url, _):  # the clock stands still: at once
        store = open_store(StoreConfig(kind="sparql", endpoint=url + "/sparql", data_version="x", product="Virtuoso"), [])
        with pytest.raises(StoreError, match=code) as caught:
            store.execute_candidate("SELECT ?o WHERE { ?s ?p ?o }", timeout_s=30, row_cap=10)
        assert not isinstance(caught.value, QueryTimeout)


class _StillClock:
    """Stands in for the `time` module of kgeval.stores._sparql: `monotonic()` moves only when a
    test moves `now` (the socket's own timeout still runs on the real clock)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_other_server_errors_stay_store_errors():
    with loopback(lambda _: (500, {"Content-Type": "text/plain"}, b"Virtuoso 42000 Error SR186: No permission")) as (url, _):
        store = open_store(StoreConfig(kind="sparql", endpoint=url + "/sparql", data_version="x", product="Virtuoso"), [])
        with pytest.raises(StoreError, match="SR186") as caught:
            store.execute_candidate("SELECT ?o WHERE { ?s ?p ?o }", timeout_s=60, row_cap=10)
        assert not isinstance(caught.value, (QueryTimeout, QueryRejected))


COST_GRAPH = "urn:kgeval:test:cost"
CROSS_COUNT = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"


@pytest.fixture(scope="module")
def costly_virtuoso(tmp_path_factory):
    """A real Virtuoso whose `MaxQueryCostEstimationTime` is 1 s, over 3,000 triples: it refuses
    a three-way cross product before running it (estimated at minutes)."""
    workdir = tmp_path_factory.mktemp("virtuoso-cost")
    kg = workdir / "kg.nt"
    kg.write_text("".join(f'<http://x/s{i}> <http://x/p{i % 7}> "v{i}" .\n' for i in range(3000)), encoding="utf-8")
    endpoint, process = launch_virtuoso(workdir, [(COST_GRAPH, kg)], max_query_s=1)
    yield open_store(StoreConfig(kind="sparql", endpoint=endpoint, data_version="t", kg_graphs={"k": COST_GRAPH}), [kg], kg="k")
    stop(process)


def test_virtuosos_refusal_by_cost_estimate_is_the_querys_over_budget(costly_virtuoso):
    """Virtuoso answers a query over its cost estimate limit with HTTP 500 (`42000 Error The
    estimated execution time ... exceeds the limit`): the query's cost, decided before it ran, so
    a candidate is judged wrong as `over_budget` (it was a store error, which a run then read as
    invalid SPARQL) and a reference query fails, named; the server is well."""
    store = costly_virtuoso
    with pytest.raises(QueryOverBudget, match=r"estimated execution time, [\d,]+ s, is over the server's limit of 1 s") as caught:
        store.execute_candidate(CROSS_COUNT, timeout_s=30, row_cap=10)
    assert caught.value.resources is not None and "MaxQueryCostEstimationTime" in str(caught.value)
    execution = execute_candidate(CROSS_COUNT, store, KgevalConfig())
    assert (execution.failure, execution.harness) == ("over_budget", None), execution.error
    with pytest.raises(QueryOverBudget):
        store.execute(CROSS_COUNT, timeout_s=30, row_cap=10)
    assert store.execute("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", timeout_s=30, row_cap=1).rows[0][0].value == "3000"


@pytest.mark.usefixtures("aws_test_credentials")
def test_neptune_request_carries_the_timeout_hint_and_is_signed():
    """The signed request Neptune would receive: the guard's text with `hint:Query
    hint:queryTimeout <ms>` first in the top-level WHERE; the signature verifies with botocore."""
    base: list[str] = []

    def verify(request: Recorded):
        problem = signature_problem(request, base[0])
        return (403, {}, problem.encode()) if problem else ASK_TRUE

    with loopback(verify) as (url, recorded):
        base.append(url)
        config = StoreConfig(kind="neptune-sparql", endpoint=url + "/sparql", region=REGION, data_version="n1", allow_insecure_http=True)
        store = open_store(config, [])
        assert store.execute_candidate("ask { ?s ?p ?o }", timeout_s=2.5, row_cap=1)[0].boolean is True
    sent = _form(recorded[0])
    assert sent["query"] == [f"ASK {{ <{NEPTUNE_HINTS}Query> <{NEPTUNE_HINTS}queryTimeout> 2500 . ?s ?p ?o }}"]
    assert "timeout" not in sent
    assert guard_query(sent["query"][0]).text == sent["query"][0]  # the hinted text is itself approved


@pytest.mark.usefixtures("aws_test_credentials")
def test_neptune_hint_above_the_cluster_limit_is_a_store_error():
    """Neptune refuses a hint at or above its neptune_query_timeout with HTTP 400: the cluster's
    setting is at fault, not the model's query, so it is never scored as the candidate's error."""
    body = json.dumps({"code": "MalformedQueryException", "detailedMessage": "Malformed query: Query hint 'queryTimeout' must be less than neptune_query_timeout DB Parameter Group"}).encode()
    with loopback(lambda _: (400, {"Content-Type": "application/json"}, body)) as (url, _):
        config = StoreConfig(kind="neptune-sparql", endpoint=url + "/sparql", region=REGION, data_version="n1", allow_insecure_http=True)
        with pytest.raises(StoreError, match="raise the cluster's neptune_query_timeout") as caught:
            open_store(config, []).execute_candidate("SELECT * WHERE { ?s ?p ?o }", timeout_s=300, row_cap=1)
        assert not isinstance(caught.value, QueryRejected)


def test_oxigraph_server_is_not_left_sorting_a_cross_product(oxigraph_server):
    """Oxigraph server does not stop a sort at its `--timeout-s` (measured: an ORDER BY over a
    456k-row cross product ran 20 s past a 3 s limit). An ordered candidate is counted first
    (a count stops at the timeout) and refused over max_sorted_rows; the server stays idle.
    A legitimate ordered query is answered as before."""
    config = oxigraph_server.config("mini").model_copy(update={"candidates": CandidateQueryConfig(max_sorted_rows=10_000)})
    store = open_store(config, [], kg="mini")
    assert store.name.startswith("sparql-endpoint:Oxigraph")
    result, _ = store.execute_candidate("SELECT ?s ?o WHERE { ?s ?p ?o } ORDER BY ?o LIMIT 3", timeout_s=60, row_cap=10)
    assert len(result.rows) == 3 and result.ordered
    pid = oxigraph_server.process.pid
    idle = _cpu_rate(pid, 3.0)
    with pytest.raises(QueryOverBudget, match="max_sorted_rows"):
        store.execute_candidate(CARTESIAN_ORDER, timeout_s=60, row_cap=100)
    busy = _cpu_rate(pid, 4.0)
    assert busy <= idle + 0.12, f"Oxigraph server still burns {busy:.2f} cores (idle {idle:.2f})"


@pytest.mark.parametrize(("body", "expected"), [(b"Query timed out\n", QueryTimeout), (b"Service Unavailable: overloaded\n", StoreError)])
def test_fuseki_at_its_own_time_limit_is_a_timeout(body, expected):
    """Fuseki answers a query its limit stopped with HTTP 503 "Query timed out" (recorded from
    Fuseki 5.6, tests/stores/test_fuseki.py): the query's timeout; any other 503 is the
    server's failure."""
    with loopback(lambda _: (503, {"Content-Type": "text/plain", "Fuseki-Request-Id": "7"}, body)) as (url, _):
        store = open_store(StoreConfig(kind="sparql", endpoint=url + "/kgeval/sparql", data_version="x", product="fuseki"), [])
        with pytest.raises(expected) as caught:
            store.execute_candidate("SELECT ?o WHERE { ?s ?p ?o }", timeout_s=60, row_cap=10)
    assert isinstance(caught.value, QueryTimeout) == (expected is QueryTimeout)
