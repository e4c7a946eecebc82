"""The SPARQL 1.1 Protocol store, against real Oxigraph server and Virtuoso on 127.0.0.1, and a
loopback server for what a healthy real server will not do on demand (slow answers, HTTP
errors, auth checks)."""

from __future__ import annotations

import base64
from urllib.parse import parse_qs

import pytest

from kgeval.config import StoreAuthConfig, StoreConfig
from kgeval.errors import InputError, StoreError
from kgeval.stores import EmbeddedStore, Term, open_store
from kgeval.stores._sparql import term_from_json
from tests.conftest import EX, PREFIX
from tests.stores.loopback import ASK_TRUE, loopback, timeout_on_a_silent_server
from tests.stores.conftest import TP, T
from tests.stores.servers import VIRTUOSO_MAX_ROWS, graph_iri

XSD = "http://www.w3.org/2001/XMLSchema#"
E = f"{EX}entities/"


def mini_store(server, **extra):
    return open_store(server.config("mini", **extra), [], "mini")


def test_terms_stay_typed(sparql_server):
    store = open_store(sparql_server.config("types"), [], "types")
    result = store.execute(TP + "SELECT ?p ?o WHERE { t:a ?p ?o FILTER(isLiteral(?o)) }", timeout_s=60, row_cap=100)
    cells = {(row[0].value.removeprefix(T), row[1].value): row[1] for row in result.rows}
    assert cells[("date", "2024-01-31")] == Term.literal("2024-01-31", XSD + "date")
    assert cells[("n", "7")] == Term.literal("7", XSD + "integer")
    # Virtuoso keeps values, not lexical forms (docs/engines.md): its booleans read "1"/"0",
    # and integers beyond 64 bits become decimals
    virtuoso = sparql_server.product == "virtuoso"
    flag = "1" if virtuoso else "true"
    assert cells[("flag", flag)] == Term.literal(flag, XSD + "boolean")
    assert cells[("big", "12345678901234567890")].datatype == XSD + ("decimal" if virtuoso else "integer")
    assert cells[("name", "Haus")] == Term.literal("Haus", lang="de")
    assert cells[("name", "house")] == Term.literal("house", lang="en-gb")
    assert cells[("name", "plain")] == cells[("str", "typed")].model_copy(update={"value": "plain"}) == Term.literal("plain")
    assert cells[("when", "2024-01-31T10:15:00Z")].datatype == XSD + "dateTime"
    assert {k[0] for k in cells} == {"date", "when", "flag", "ratio", "n", "big", "name", "str"}


def test_ask_true_and_false(sparql_server):
    store = mini_store(sparql_server)
    assert store.execute(PREFIX + "ASK { e:carol ex:worksIn e:it }", timeout_s=60, row_cap=10).boolean is True
    assert store.execute(PREFIX + "ASK { e:carol ex:worksIn e:sales }", timeout_s=60, row_cap=10).boolean is False


def test_unbound_cells_and_blank_nodes(sparql_server):
    store = open_store(sparql_server.config("types"), [], "types")
    query = TP + "SELECT ?s ?x ?c ?z WHERE { ?s t:addr ?x . ?x t:city ?c OPTIONAL { ?x t:zip ?z } }"
    rows = {row[2].value: row for row in store.execute(query, timeout_s=60, row_cap=10).rows}
    assert rows["Paris"][3] is None and rows["Berlin"][3] == Term.literal("10115")
    assert rows["Paris"][1].type == rows["Berlin"][1].type == "bnode"
    assert rows["Paris"][1].value != rows["Berlin"][1].value


def test_row_cap_and_true_total_as_in_the_embedded_store(sparql_server, server_holdouts):
    query = PREFIX + "SELECT ?i ?v WHERE { ?i ex:price ?v }"
    remote = mini_store(sparql_server).execute(query, timeout_s=60, row_cap=7)
    local = EmbeddedStore(server_holdouts["mini"].kg("mini").files).execute(query, timeout_s=60, row_cap=7)
    assert (remote.total, len(remote.rows), remote.truncated) == (30, 7, True)
    assert remote.rows == local.rows and remote.sha256() == local.sha256()


def test_default_and_named_graph_selection(sparql_server):
    graph = graph_iri("mini", "mini")
    count = PREFIX + "SELECT (COUNT(*) AS ?n) WHERE { ?p a ex:Person }"
    selected = open_store(StoreConfig(kind="sparql", endpoint=sparql_server.endpoint, data_version="t", default_graphs=(graph,)), [])
    assert selected.execute(count, timeout_s=60, row_cap=1).rows[0][0].value == "3"
    other = open_store(StoreConfig(kind="sparql", endpoint=sparql_server.endpoint, data_version="t", default_graphs=("urn:kgeval:test:none",)), [])
    assert other.execute(count, timeout_s=60, row_cap=1).rows[0][0].value == "0"
    named = open_store(StoreConfig(kind="sparql", endpoint=sparql_server.endpoint, data_version="t", named_graphs=(graph,)), [])
    in_graph = PREFIX + "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?p a ex:Person } } GROUP BY ?g"
    assert [[c.value for c in row] for row in named.execute(in_graph, timeout_s=60, row_cap=10).rows] == [[graph, "3"]]


def test_engine_name_and_version_come_from_the_server(sparql_server):
    store = mini_store(sparql_server)
    product = {"oxigraph": "Oxigraph", "virtuoso": "Virtuoso", "fuseki": "Fuseki"}[sparql_server.product]
    assert store.name == f"sparql-endpoint:{product}"
    assert store.version[:1].isdigit()
    assert store.data_sha256 == "test:mini"


def test_a_configured_product_still_reads_its_version_from_the_server(sparql_server):
    """`store.product` set (as docs/engines.md advises) and no `product_version`: the identity a
    run's checklist reads before any query must be the one the gold recorded after its queries
    (it read `unknown`: every run on the endpoint was refused, every rebuild executed everything)."""
    store = mini_store(sparql_server, product=sparql_server.product)
    before = store.version
    store.execute("ASK {}", timeout_s=60, row_cap=1)
    assert before == store.version
    assert before[:1].isdigit()
    assert store.name == f"sparql-endpoint:{sparql_server.product}"


def test_a_server_side_row_limit_is_an_error_not_a_short_gold(virtuoso_server):
    store = mini_store(virtuoso_server)
    big = "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"  # far more rows than ResultSetMaxRows
    with pytest.raises(StoreError, match=f"own limit of {VIRTUOSO_MAX_ROWS} rows.*ResultSetMaxRows"):
        store.execute(big, timeout_s=60, row_cap=10)


def test_http_errors_name_the_endpoint_and_status(oxigraph_server):
    wrong = oxigraph_server.endpoint.replace("/query", "/nowhere")
    store = open_store(StoreConfig(kind="sparql", endpoint=wrong, data_version="t"), [])
    with pytest.raises(StoreError, match=rf"{wrong}: HTTP 404"):
        store.execute("ASK {}", timeout_s=60, row_cap=1)
    with loopback(lambda r: (503, {}, b"overloaded, try later")) as (url, _):
        with pytest.raises(StoreError, match=r"/sparql: HTTP 503 .*overloaded"):
            open_store(StoreConfig(kind="sparql", endpoint=url + "/sparql", data_version="t"), []).execute("ASK {}", timeout_s=60, row_cap=1)


def test_unreachable_endpoint(oxigraph_server):
    with loopback() as (url, _):
        pass  # the port is closed again
    store = open_store(StoreConfig(kind="sparql", endpoint=url + "/sparql", data_version="t"), [])
    with pytest.raises(StoreError, match="cannot reach"):
        store.execute("ASK {}", timeout_s=60, row_cap=1)


def test_timeout_names_the_endpoint():
    def execute(url, budget):
        open_store(StoreConfig(kind="sparql", endpoint=url + "/sparql", data_version="t"), []).execute("ASK { ?s ?p ?o }", timeout_s=budget, row_cap=1)

    budget, message, recorded = timeout_on_a_silent_server(execute, first_budget_s=0.3)
    assert message.endswith(f"/sparql: query ran longer than {budget:g} s"), message
    assert message.startswith("http://127.0.0.1:") and len(recorded) == 1


def test_basic_auth_is_sent(monkeypatch):
    def check(request):
        expected = "Basic " + base64.b64encode(b"reader:s3cret").decode()
        return ASK_TRUE if request.headers.get("Authorization") == expected else (401, {}, b"who are you")

    monkeypatch.setenv("KGEVAL_TEST_PW", "s3cret")
    with loopback(check) as (url, recorded):
        auth = StoreAuthConfig(username="reader", password_env="KGEVAL_TEST_PW")
        store = open_store(StoreConfig(kind="sparql", endpoint=url + "/sparql", data_version="t", auth=auth), [])
        assert store.execute("ASK { ?s ?p ?o }", timeout_s=60, row_cap=1).boolean is True
        monkeypatch.setenv("KGEVAL_TEST_PW", "wrong")
        store = open_store(StoreConfig(kind="sparql", endpoint=url + "/sparql", data_version="t", auth=auth), [])
        with pytest.raises(StoreError, match="HTTP 401"):
            store.execute("ASK { ?s ?p ?o }", timeout_s=60, row_cap=1)
        params = parse_qs(recorded[0].body.decode())
        assert params["query"] == ["ASK { ?s ?p ?o }"]


def test_missing_password_variable_is_an_input_error(monkeypatch):
    monkeypatch.delenv("KGEVAL_TEST_PW", raising=False)
    auth = StoreAuthConfig(username="reader", password_env="KGEVAL_TEST_PW")
    with pytest.raises(InputError, match="KGEVAL_TEST_PW"):
        open_store(StoreConfig(kind="sparql", endpoint="http://127.0.0.1:9/sparql", data_version="t", auth=auth), [])


def test_remote_store_config_needs_endpoint_and_data_version():
    with pytest.raises(ValueError, match="needs endpoint, data_version"):
        StoreConfig(kind="sparql")


def test_virtuoso_typed_literal_cells():
    cell = {"type": "typed-literal", "datatype": XSD + "integer", "value": "7"}
    assert term_from_json(cell, "e") == Term.literal("7", XSD + "integer")
    assert term_from_json({"type": "literal", "xml:lang": "DE", "value": "Haus"}, "e") == Term.literal("Haus", lang="de")
    assert term_from_json(None, "e") is None
    with pytest.raises(StoreError, match="unsupported result cell type 'triple'"):
        term_from_json({"type": "triple", "value": {}}, "e")


def test_non_json_answer_is_a_store_error():
    with loopback(lambda r: (200, {"Content-Type": "text/html"}, b"<html>login</html>")) as (url, _):
        store = open_store(StoreConfig(kind="sparql", endpoint=url + "/sparql", data_version="t"), [])
        with pytest.raises(StoreError, match="not SPARQL JSON"):
            store.execute("ASK {}", timeout_s=60, row_cap=1)


@pytest.mark.parametrize(
    ("datatype", "written", "read"),
    [("decimal", "0.50", "0.5"), ("decimal", "+007.10", "7.1"), ("decimal", "2.0", "2"), ("decimal", "-0.0", "0"),
     ("decimal", "12345678901234567890.000", "12345678901234567890"), ("integer", "007", "7"), ("integer", "+5", "5"),
     ("integer", "1_000", "1_000"), ("decimal", "1e3", "1e3"), ("double", "1.50E2", "1.50E2"), ("int", "007", "007")],
)
def test_integers_and_decimals_are_read_in_canonical_form(datatype, written, read):
    """Fuseki answers with the data's lexical form (`0.50`), Oxigraph and Virtuoso with the
    canonical one (`0.5`): the store reads xsd:integer and xsd:decimal canonically, as the
    embedded store does, so one value makes one gold; what is not such a lexical form, or of
    another datatype, is kept as written."""
    term = term_from_json({"type": "literal", "datatype": XSD + datatype, "value": written}, "http://x/sparql")
    assert (term.value, term.datatype) == (read, XSD + datatype)
    if read != written and datatype in ("integer", "decimal"):
        store = EmbeddedStore([])
        embedded = store.execute(f'SELECT ?v WHERE {{ BIND("{written}"^^<{XSD}{datatype}> AS ?v) }}', timeout_s=60, row_cap=1)
        assert embedded.rows[0][0].value == read  # the form the embedded store (Oxigraph) gives
