"""Whose failure is it, on real SPARQL servers (issue 12): an engine rejecting the candidate's
query is the model's; a store that is down or busy is the harness's. And the documented list of
prefixes Virtuoso predeclares is checked against a real Virtuoso."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request

from kgeval.config import PREDECLARED_PREFIXES, KgevalConfig, StoreConfig
from kgeval.runs._attempt import execute_candidate
from kgeval.stores import open_store
from tests.conftest import PREFIX

CONFIG = KgevalConfig()


def test_a_function_the_engine_lacks_is_the_models_failure(sparql_server):
    """Oxigraph server and Virtuoso answer an unknown function with HTTP 500; they are up (a
    trivial query runs), so the failure is the query's. Fuseki (ARQ) evaluates it as an
    expression error, as SPARQL 1.1 (section 17.3) has it: BIND leaves ?x unbound, and the
    answer is judged like any other. (In the afn: namespace, which the guard lets a query call;
    a function of most other namespaces is refused before it is sent.)"""
    store = open_store(sparql_server.config("mini"), [], "mini")
    query = PREFIX + "SELECT ?x WHERE { ?p ex:age ?a . BIND(<http://jena.apache.org/ARQ/function#kgeval-guess>(?a) AS ?x) }"
    execution = execute_candidate(query, store, CONFIG)
    if sparql_server.product == "fuseki":
        assert (execution.failure, execution.harness) == (None, None), execution.error
        assert execution.result.total == 3 and all(row == [None] for row in execution.result.rows)
    else:
        assert (execution.failure, execution.harness) == ("invalid_sparql", None), execution.error
    elsewhere = execute_candidate(query.replace("http://jena.apache.org/ARQ/function#kgeval-guess", "http://example.org/fn/guess"), store, CONFIG)
    assert (elsewhere.failure, elsewhere.harness) == ("refused", None), elsewhere.error
    # the reference-like query on the same store runs: the store is healthy
    assert execute_candidate(PREFIX + "SELECT ?p WHERE { ?p ex:age ?a }", store, CONFIG).result.total == 3


def test_a_store_that_is_down_is_the_harness_failure(sparql_server):
    down = open_store(StoreConfig(kind="sparql", endpoint="http://127.0.0.1:9/query", data_version="x"), [])
    execution = execute_candidate(PREFIX + "SELECT ?p WHERE { ?p ex:age ?a }", down, CONFIG)
    assert (execution.failure, execution.harness) == (None, "store")


def test_virtuoso_predeclares_the_documented_prefixes(virtuoso_server):
    """Every prefix of the "virtuoso" list expands as documented on a fresh Virtuoso (sent raw:
    kgeval's own guard would refuse an undeclared prefix before any request leaves)."""
    for name, iri in PREDECLARED_PREFIXES["virtuoso"].items():
        query = f"SELECT (STR({name}:x) AS ?i) WHERE {{}}"
        url = virtuoso_server.endpoint + "?" + urllib.parse.urlencode({"query": query})
        request = urllib.request.Request(url, headers={"Accept": "application/sparql-results+json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            doc = json.loads(response.read())
        assert doc["results"]["bindings"][0]["i"]["value"] == iri + "x", name


def test_a_query_missing_predeclared_prefixes_runs_as_in_production(virtuoso_server):
    config = KgevalConfig(store=StoreConfig(kind="sparql", endpoint=virtuoso_server.endpoint, data_version="x", predeclared_prefixes="virtuoso"))
    store = open_store(virtuoso_server.config("mini"), [], "mini")
    # no PREFIX lines: rdfs (which the guard's parser, rdflib, knows by itself) and sioc (which it does not)
    query = "SELECT ?name WHERE { ?d rdfs:label ?name . FILTER(lang(?name) = 'de') OPTIONAL { ?d sioc:name ?f } }"
    assert execute_candidate(query, store, KgevalConfig()).failure == "invalid_sparql"  # default: none predeclared
    execution = execute_candidate(query, store, config)
    assert execution.failure is None and execution.prefixes == ("rdfs", "sioc") and [r[0].value for r in execution.result.rows] == ["Vertrieb"]


def test_a_candidate_over_the_servers_row_limit_is_the_models_failure(virtuoso_server):
    """Red team 6: Virtuoso cuts a result at its ResultSetMaxRows and says so in a header. For a
    reference query that is a StoreError (the gold would be short); a candidate got the same, so
    a model's over-broad query was excused as the harness's failure and left out of accuracy."""
    store = open_store(virtuoso_server.config("mini"), [], "mini")
    broad = "SELECT ?a WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"  # far more rows than the tests' 10,000
    execution = execute_candidate(broad, store, CONFIG)
    assert (execution.failure, execution.harness) == ("over_budget", None), execution.error
    assert "own limit of" in execution.error


def test_xpath_functions_are_refused_before_they_reach_the_server(virtuoso_server):
    """Red team 6: the guard let a query call any fn: (XPath) function, and Virtuoso 7.2 hands
    those to its XPath engine: `fn:document("x")` ended the whole server, so that attempt and
    every later one of the run failed as the harness's (so did `fn:tokenize("x", 1, 2)`).
    Refused now, before any request; the server still answers."""
    store = open_store(virtuoso_server.config("mini"), [], "mini")
    crash = PREFIX + 'PREFIX fn: <http://www.w3.org/2005/xpath-functions#> SELECT ?r WHERE { BIND(fn:document("x") AS ?r) }'
    execution = execute_candidate(crash, store, CONFIG)
    assert (execution.failure, execution.harness) == ("refused", None), execution.error
    assert execute_candidate(PREFIX + "SELECT ?p WHERE { ?p ex:age ?a }", store, CONFIG).result.total == 3
