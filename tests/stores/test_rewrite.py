from pathlib import Path

import pytest

from kgeval.errors import StoreError
from kgeval.stores import EmbeddedStore, order_probe, query_determinism

P = "PREFIX ex: <http://x/> "
TTL = "".join(f"<http://x/i{i}> <http://x/price> {p} ; <http://x/label> \"LIMIT {i}\" .\n" for i, p in enumerate([1, 2, 2, 3]))


@pytest.fixture
def store(tmp_path: Path) -> EmbeddedStore:
    (tmp_path / "kg.ttl").write_text(TTL)
    return EmbeddedStore([tmp_path / "kg.ttl"])


def test_probe_drops_slice_and_distinct_and_projects_unprojected_keys(store):
    probe = order_probe(P + 'SELECT DISTINCT ?i WHERE { ?i ex:price ?p ; ex:label ?l FILTER(?l != "LIMIT 9") } ORDER BY DESC(?p) LIMIT 1 OFFSET 1')
    assert (probe.key_vars, probe.distinct, probe.descending) == (("__kgeval_key0",), True, (True,))
    result = store.execute(probe.text, timeout_s=60, row_cap=100)
    assert result.total == 4 and len(result.vars) == 2
    assert '"LIMIT 9"' in probe.text  # the string literal is untouched: only located clauses are edited
    assert [r[1].value for r in result.rows] == ["3", "2", "2", "1"]


def test_probe_reuses_projected_key_columns_and_projects_aggregates(store):
    probe = order_probe(P + "SELECT ?p (COUNT(?i) AS ?n) WHERE { ?i ex:price ?p } GROUP BY ?p ORDER BY DESC(COUNT(?i)) ?p LIMIT 1")
    assert probe.key_vars == ("__kgeval_key0", "p")
    rows = store.execute(probe.text, timeout_s=60, row_cap=100).rows
    assert [(r[0].value, r[2].value) for r in rows] == [("2", "2"), ("1", "1"), ("3", "1")]


def test_probe_of_select_star_lists_its_variables(store):
    probe = order_probe(P + "SELECT * WHERE { ?i ex:price ?p } ORDER BY (?p * 2) LIMIT 2")
    result = store.execute(probe.text, timeout_s=60, row_cap=100)
    assert set(result.vars) == {"i", "p", "__kgeval_key0"} and probe.key_vars == ("__kgeval_key0",) and result.total == 4


def test_determinism_scan():
    assert query_determinism("SELECT (RAND() AS ?r) (NOW() AS ?n) WHERE {}").volatile == ("NOW()", "RAND()")
    grouped = query_determinism(P + "SELECT ?p (COUNT(?i) AS ?n) WHERE { ?i ex:price ?p } GROUP BY ?p")
    assert grouped.engine_dependent == ()  # rdflib's implicit SAMPLE of grouped variables is not the query's
    sampled = query_determinism(P + "SELECT (SAMPLE(?i) AS ?s) WHERE { ?i ex:price ?p } GROUP BY ?p")
    assert "SAMPLE() picks an engine-chosen value" in sampled.engine_dependent
    cast = query_determinism("PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> SELECT (xsd:int(\"3\") AS ?x) (xsd:integer(\"3\") AS ?y) WHERE {}")
    assert cast.engine_dependent == ("calls <http://www.w3.org/2001/XMLSchema#int>, which is not a SPARQL 1.1 function",)
    assert query_determinism(P + "SELECT ?i WHERE { ?i ex:price ?p } LIMIT 2").engine_dependent[0].startswith("LIMIT/OFFSET without ORDER BY")


def test_embedded_store_casts_to_derived_integer_types(store):
    q = 'PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> SELECT (xsd:int("41") + 1 AS ?a) (xsd:int(3.9) AS ?b) (xsd:byte(300) AS ?c) (xsd:int("x") AS ?d) WHERE {}'
    row = store.execute(q, timeout_s=60, row_cap=10).rows[0]
    assert row[0].value == "42" and row[1].value == "3"  # 3.9 truncates toward zero
    assert row[2] is None and row[3] is None  # out of range / not an integer: an error, so unbound


def test_unsupported_function_is_a_store_error(store):
    with pytest.raises(StoreError, match="not supported"):
        store.execute("SELECT (<http://jena.apache.org/ARQ/function#nosuchfn>(1) AS ?x) WHERE {}", timeout_s=60, row_cap=10)


def test_order_variables_reads_plain_keys_in_any_case():
    from kgeval.stores import order_variables

    assert order_variables(P + "select ?i ?p where { ?i ex:price ?p } order by desc(?p) (?i) limit 2") == ("p", "i")
    assert order_variables(P + "select ?i where { ?i ex:price ?p } order by desc(?p * 2)") is None
    assert order_variables(P + "select ?i where { { select ?i where { ?i ex:price ?p } order by ?p } }") is None


def test_probe_of_a_query_whose_names_hold_dots_runs(tmp_path):
    """The tie probe is an edit of the approved text: names with several dots are full IRIs
    there, so the engine runs the probe (it refused `dbr:A.C._Milan`)."""
    from tests.stores.dotted_names import SPORTS_TTL, TIED, R

    (tmp_path / "kg.ttl").write_text(SPORTS_TTL)
    probe = order_probe(TIED)
    result = EmbeddedStore([tmp_path / "kg.ttl"]).execute(probe.text, timeout_s=60, row_cap=100)
    assert "LIMIT" not in probe.text and probe.key_vars == ("club",)
    assert sorted(r[result.vars.index("club")].value.removeprefix(R) for r in result.rows) == ["A.C._Milan", "A.C._Milan", "A.F.C._Bournemouth"]
