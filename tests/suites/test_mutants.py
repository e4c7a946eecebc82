"""Near-miss mutants of reference queries: every kind, each one a query the guard accepts."""

from __future__ import annotations

import os
from pathlib import Path

import pyoxigraph as ox
import pytest
from rdflib.plugins.sparql import prepareQuery

from kgeval.gold._fuzz import read_kg
from kgeval.gold._mutants import mutants
from kgeval.gold._suite import _alternatives
from kgeval.holdout import load_holdout
from kgeval.stores import guard_query
from tests.conftest import CK25_MISSING, REPO

Q = """PREFIX ex: <http://x/> # a comment the edits never see
SELECT DISTINCT ?p ?n WHERE {
  ?p a ex:Person ; ex:age ?a ; ex:name ?n .
  ?p ex:city "Oslo" .
  FILTER (?a > 30)
} ORDER BY DESC(?a) LIMIT 5"""

G = "PREFIX ex: <http://x/> SELECT ?c (COUNT(DISTINCT ?p) AS ?n) WHERE { ?p ex:city ?c ; ex:dept ?d } GROUP BY ?c ?d"


def _kinds(found) -> set[str]:
    return {m.kind for m in found}


def test_every_kind_is_made_and_guarded() -> None:
    found = mutants(Q, lambda predicate, token: [type(token)("string", '"Bergen"')] if predicate == "http://x/city" else [], limit=100) + mutants(G, limit=100)
    assert _kinds(found) == {
        "drop_filter", "drop_triple", "flip_comparison", "loosen_comparison", "change_constant", "toggle_distinct",
        "count_distinct", "reverse_order", "change_limit", "project_other", "drop_group_key",
    }  # fmt: skip
    for m in found:
        guard_query(m.sparql)
    texts = [m.sparql for m in found]
    assert len(texts) == len(set(texts))


def test_specific_edits() -> None:
    by_kind = {}
    for m in mutants(Q, lambda p, t: [type(t)("string", '"Bergen"')], limit=100):
        by_kind.setdefault(m.kind, []).append(m.sparql)
    assert any("FILTER" not in s for s in by_kind["drop_filter"])
    assert any("?a < 30" in s for s in by_kind["flip_comparison"]) and any("?a >= 30" in s for s in by_kind["loosen_comparison"])
    assert any("ASC ( ?a )" in s for s in by_kind["reverse_order"])
    assert any("LIMIT 6" in s for s in by_kind["change_limit"]) and any("OFFSET 1" in s for s in by_kind["change_limit"])
    assert any('"Bergen"' in s for s in by_kind["change_constant"]) and any("?a > 31" in s for s in by_kind["change_constant"])
    assert any(s.startswith("PREFIX ex: <http://x/> SELECT ?p") for s in by_kind["toggle_distinct"])
    assert any("ex:city" not in s for s in by_kind["drop_triple"]) and any("ex:age" not in s for s in by_kind["drop_triple"])


def test_limit_spreads_over_kinds_and_gremlin_has_none() -> None:
    assert len(mutants(Q, limit=4)) == 4
    assert len(_kinds(mutants(Q, limit=4))) == 4
    assert mutants("g.V().hasLabel('person')") == []


def test_dates_and_numbers_move_by_small_and_larger_steps() -> None:
    q = 'PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> ASK { ?e <http://x/hired> ?h ; <http://x/n> ?n FILTER(?h < "2008-01-01"^^xsd:date && ?n > 5000) }'
    changed = {m.where: [] for m in mutants(q, limit=100) if m.kind == "change_constant"}
    texts = [m.sparql for m in mutants(q, limit=100) if m.kind == "change_constant"]
    assert changed and any('"2007-01-01"' in t for t in texts) and any('"2008-01-02"' in t for t in texts)
    assert any("?n > 6000" in t for t in texts) and any("?n > 5001" in t for t in texts)


MESSY = {  # reference queries as benchmarks write them: grouped by expressions, HAVING, sub-selects, aliased aggregates
    "group by an expression with an alias": """PREFIX ex: <http://x/>
SELECT ?y (COUNT(?p) AS ?n) WHERE { ?p a ex:Person ; ex:born ?d . } GROUP BY (YEAR(?d) AS ?y) ORDER BY ?y""",
    "group by a key and a call": """PREFIX ex: <http://x/>
SELECT ?c (COUNT(*) AS ?n) WHERE { ?p ex:city ?c ; ex:born ?d . } GROUP BY ?c YEAR(?d) ORDER BY DESC(?n) ?c""",
    "having, order by an alias, limit": """PREFIX ex: <http://x/>
SELECT ?dept (COUNT(?e) AS ?n) (AVG(?s) AS ?avg) WHERE { ?e ex:dept ?dept ; ex:salary ?s . FILTER(?s > 1000) }
GROUP BY ?dept HAVING (COUNT(?e) > 2 && AVG(?s) >= 3000) ORDER BY DESC(?n) LIMIT 5""",
    "two keys both projected, order by an aggregate": """PREFIX pv: <http://x/pv/>
SELECT ?cat ?name WHERE { ?hw a pv:Hardware ; pv:hasCategory ?cat . ?cat pv:name ?name . }
GROUP BY ?cat ?name ORDER BY DESC(COUNT(*)) LIMIT 3""",
    "one key projected with aggregates": """PREFIX pv: <http://x/pv/>
SELECT ?cat (MIN(?w) AS ?minWeight) (MAX(?w) AS ?maxWeight) WHERE { ?c a pv:ProductCategory ; pv:name ?cat . ?hw pv:hasCategory ?c ; pv:weight_g ?w . } GROUP BY ?cat""",
    "a key not projected, arithmetic over an aggregate": """PREFIX pv: <http://x/pv/>
SELECT ?name (ROUND(AVG(?amt) * 100) / 100 AS ?avgEur) WHERE { ?sup a pv:Supplier ; pv:name ?name . ?hw pv:hasSupplier ?sup ; pv:price/pv:amount ?amt ; pv:price/pv:currency "EUR" . }
GROUP BY ?sup ?name""",
    "a grouped sub-select": """PREFIX ex: <http://x/>
SELECT ?name ?n WHERE { ?d ex:name ?name . { SELECT ?d (COUNT(?e) AS ?n) WHERE { ?e ex:dept ?d ; ex:age ?a . FILTER(?a >= 30) } GROUP BY ?d HAVING (COUNT(?e) > 1) } } ORDER BY DESC(?n) ?name""",
    "an aggregate over a sub-select with a limit": """PREFIX ex: <http://x/>
SELECT (AVG(?s) AS ?avg) (COUNT(DISTINCT ?e) AS ?k) WHERE { { SELECT ?e ?s WHERE { ?e ex:salary ?s ; ex:city "Oslo" . } ORDER BY DESC(?s) LIMIT 3 } }""",
    "grouped outer over a grouped inner": """PREFIX ex: <http://x/>
SELECT ?city (MAX(?n) AS ?most) WHERE { ?d ex:city ?city . { SELECT ?d (COUNT(?e) AS ?n) WHERE { ?e ex:dept ?d } GROUP BY ?d } } GROUP BY ?city ORDER BY ?city""",
    "group_concat with a separator, sample": """PREFIX ex: <http://x/>
SELECT ?dept (GROUP_CONCAT(DISTINCT ?n; SEPARATOR=", ") AS ?names) (SAMPLE(?e) AS ?one) WHERE { ?e ex:dept ?dept ; ex:name ?n . OPTIONAL { ?e ex:boss ?b } FILTER NOT EXISTS { ?e ex:left true } } GROUP BY ?dept""",
    "values, bind and an implicit group": """PREFIX ex: <http://x/> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
SELECT (COUNT(?e) AS ?n) (SUM(?s) AS ?total) WHERE { VALUES ?city { "Oslo" "Bergen" } ?e ex:city ?city ; ex:salary ?s ; ex:hired ?h . BIND(YEAR(?h) AS ?y) FILTER(?y > 2010 && ?h < "2020-01-01"^^xsd:date) }""",
    "distinct with an order by key and offset": """PREFIX ex: <http://x/>
SELECT DISTINCT ?n ?a WHERE { ?p ex:name ?n ; ex:age ?a . MINUS { ?p ex:retired true } } ORDER BY ASC(?a) DESC(?n) LIMIT 10 OFFSET 2""",
    "ask with exists": """PREFIX ex: <http://x/>
ASK { ?p ex:age ?a . FILTER(?a > 65 && EXISTS { ?p ex:dept ex:Sales }) }""",
    "a projected expression without grouping": """PREFIX ex: <http://x/>
SELECT ?p (CONCAT(?f, " ", ?l) AS ?full) WHERE { ?p ex:first ?f ; ex:last ?l . FILTER(STRLEN(?l) >= 3) } ORDER BY ?full""",
    "having on a key, order by a key expression": """PREFIX ex: <http://x/>
SELECT ?c ?y (COUNT(?p) AS ?n) WHERE { ?p ex:city ?c ; ex:born ?d . BIND(YEAR(?d) AS ?y) } GROUP BY ?c ?y HAVING (?y > 1980) ORDER BY STR(?c) ?y""",
}


def _unparsed(sparql: str, *, rdflib: bool) -> str | None:
    """Why `sparql` does not parse, by the engine's parser (pyoxigraph, on an empty store: a
    SyntaxError is its parser's, including a grouped SELECT using an ungrouped variable) and,
    with `rdflib`, by rdflib's too; None when it parses. (rdflib refuses white space before a
    property path's `*`, which every canonical text has: `cat:subCategoryOf *`, so the shipped
    and CK25 queries' mutants, paths among them, are held to the engine's parser only.)"""
    try:
        ox.Store().query(sparql)
    except SyntaxError as exc:
        return f"pyoxigraph: {exc}"
    except (RuntimeError, ValueError, OSError):
        pass  # it parsed: an empty store does not run some functions
    try:
        prepareQuery(sparql) if rdflib else None
    except Exception as exc:  # noqa: BLE001 - rdflib raises pyparsing's and its own errors
        return f"rdflib: {exc}"
    return None


def _every_mutant_parses(queries: dict[str, str], alternatives=None, *, rdflib: bool = False) -> list[str]:  # noqa: ANN001
    problems = []
    for name, sparql in queries.items():
        assert _unparsed(sparql, rdflib=rdflib) is None, name
        for m in mutants(sparql, alternatives, limit=100):
            if (why := _unparsed(m.sparql, rdflib=rdflib)) is not None:
                problems.append(f"{name}: {m.kind} at {m.where}: {why[:200]}\n  {m.sparql}")
    return problems


def test_every_mutant_of_a_messy_reference_query_parses() -> None:
    """A grouped SELECT may use outside its aggregates only its group keys: a mutant that
    projects another variable, or drops a key the projection, HAVING or ORDER BY still uses,
    does not parse (23 of CK25's mutants did not); nor does a flipped `SEPARATOR=`. None is
    emitted; those that keep the grouping valid still are."""
    assert _every_mutant_parses(MESSY, rdflib=True) == []
    made = {(name, m.kind, m.where) for name, q in MESSY.items() for m in mutants(q, limit=100)}
    assert ("a key not projected, arithmetic over an aggregate", "project_other", "?name") in made  # another key: ?sup
    assert ("a key not projected, arithmetic over an aggregate", "drop_group_key", "?sup") in made
    assert ("group by a key and a call", "drop_group_key", "YEAR( ?d )") in made
    assert ("a grouped sub-select", "project_other", "?name") in made  # the outer SELECT is not grouped


def test_every_mutant_of_the_shipped_reference_queries_parses() -> None:
    holdout = load_holdout(REPO / "holdout")
    for kg in holdout.kgs:
        queries = {q.id: q.sparql for q in kg.questions if q.query_language == "sparql"}
        assert _every_mutant_parses(queries, _alternatives(read_kg(kg.files))) == []


CK25 = Path(os.environ.get("KGEVAL_CK25", "/nonexistent"))


@pytest.mark.skipif(not (CK25 / "questions.yml").is_file(), reason=CK25_MISSING)
def test_every_mutant_of_ck25s_reference_queries_parses(tmp_path: Path) -> None:
    from kgeval.interop import import_text2sparql

    import_text2sparql(CK25, "ck25", tmp_path / "holdout")
    (kg,) = load_holdout(tmp_path / "holdout").kgs
    assert _every_mutant_parses({q.id: q.sparql for q in kg.questions}, _alternatives(read_kg(kg.files))) == []


def test_suites_made_by_another_mutant_generator_are_built_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A suite records its mutants and kill rate: one whose mutants an older generator made
    (some of which did not parse) is distilled again, not kept by the incremental build."""
    import kgeval.gold._suite as suite
    from kgeval.config import GoldConfig, SuiteConfig

    now = suite.settings_sha256(SuiteConfig(), GoldConfig())
    monkeypatch.setattr(suite, "MUTANTS_VERSION", suite.MUTANTS_VERSION - 1)
    assert suite.settings_sha256(SuiteConfig(), GoldConfig()) != now
