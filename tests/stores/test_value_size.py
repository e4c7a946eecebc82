"""The value-size estimate (kgeval/stores/_value_size.py): candidate queries that build a huge
value (CONCAT doubling chains, REPLACE squaring) are refused before any store sees them, and no
legitimate query is: every reference query of the sample holdout and of CK25 ($KGEVAL_CK25),
and hand-written queries in the styles models write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from kgeval.config import CandidateQueryConfig, StoreConfig
from kgeval.errors import QueryOverBudget
from kgeval.holdout import load_holdout
from kgeval.stores import EmbeddedStore, guard_query, open_store
from kgeval.stores._value_size import estimated_value_bytes
from tests.conftest import MINI_TTL
from tests.stores.loopback import ASK_TRUE, loopback

REPO = Path(__file__).resolve().parents[2]
LIMITS = CandidateQueryConfig()
P = "PREFIX ex: <http://example.org/mini/vocab/> PREFIX e: <http://example.org/mini/entities/>\n"


def _doublings(n: int, keyword: str = "CONCAT") -> str:
    binds = " ".join(f"BIND({keyword}(?a{i}, ?a{i}) AS ?a{i + 1})" for i in range(n))
    return f'SELECT (STRLEN(?a{n}) AS ?n) WHERE {{ BIND("0123456789abcdef" AS ?a0) {binds} }}'


BOMBS = {
    "concat-17-doublings": _doublings(17),  # 2 MiB: just over the 1 MiB cap
    "concat-40-doublings": _doublings(40),
    "concat-lowercase-dollar": "select (strlen($a30) as $n) where { bind('xy' as $a0) "
    + " ".join(f"bind(concat($a{i}, $a{i}, $a{i}) as $a{i + 1})" for i in range(30)) + " }",
    "replace-squaring-in-filter": P + 'SELECT ?s WHERE { ?s ex:name ?o FILTER(STRLEN(REPLACE(REPLACE(REPLACE(?o, ".", ?o), ".", ?o), ".", ?o)) > 1) }',
    "replace-chain-bind": P + 'SELECT ?z WHERE { ?s ex:name ?o BIND(REPLACE(?o, "", ?o) AS ?y) BIND(REPLACE(?y, "", ?y) AS ?z) }',
    "ucase-tripling": 'SELECT ?v WHERE { BIND("abcdefgh" AS ?a0) ' + " ".join(f"BIND(UCASE(CONCAT(?a{i}, ?a{i}, ?a{i})) AS ?a{i + 1})" for i in range(12)) + " BIND(?a12 AS ?v) }",
    "squaring-in-order-by": 'SELECT ?s WHERE { ?s ?p ?o } ORDER BY DESC(STRLEN(REPLACE(REPLACE(?o, ".", ?o), ".", ?o)))',
    "doubling-in-subselect-projection": "SELECT ?n WHERE { { SELECT (CONCAT(?b, ?b, ?b, ?b, ?b, ?b, ?b, ?b) AS ?n) WHERE { { SELECT (CONCAT(?a, ?a, ?a, ?a) AS ?b) WHERE { BIND("
    + '"' + "z" * 5000 + '"' + " AS ?x) BIND(CONCAT(?x, ?x, ?x, ?x, ?x, ?x, ?x, ?x, ?x, ?x, ?x, ?x) AS ?a) } } } } }",
    "group-by-expression": P + "SELECT ?k (COUNT(*) AS ?c) WHERE { ?s ex:name ?o } GROUP BY (REPLACE(REPLACE(?o, '', ?o), '', ?o) AS ?k)",
}

LEGITIMATE = {
    "full-name": P + 'SELECT (CONCAT(?first, " ", ?last) AS ?name) WHERE { ?p a ex:Person ; ex:firstName ?first ; ex:lastName ?last }',
    "label-with-lang": P + 'select ?s (concat(str(?l), " (", lang(?l), ")") as ?shown) where { ?s ex:name ?l } order by ?shown limit 20',
    "group-concat-names": P + 'SELECT ?d (GROUP_CONCAT(DISTINCT ?n; SEPARATOR=", ") AS ?names) WHERE { ?p ex:worksIn ?d ; ex:name ?n } GROUP BY ?d',
    "slug": P + 'SELECT ?s (LCASE(REPLACE(STR(?n), "[^A-Za-z0-9]+", "-")) AS ?slug) WHERE { ?s ex:name ?n }',
    "uri-from-name": P + 'SELECT (IRI(CONCAT("http://example.org/mini/entities/", ENCODE_FOR_URI(?n))) AS ?u) WHERE { ?s ex:name ?n }',
    "nested-aggregates": P + """# people per department, with a readable label
        SELECT ?label ?n WHERE {
          { SELECT ?d (COUNT(DISTINCT ?p) AS ?n) WHERE { ?p ex:worksIn ?d } GROUP BY ?d HAVING (COUNT(?p) > 1) }
          OPTIONAL { ?d ex:name ?name }
          BIND(COALESCE(CONCAT(UCASE(SUBSTR(?name, 1, 1)), SUBSTR(?name, 2)), STR(?d)) AS ?label)
        } ORDER BY DESC(?n) ?label""",
    "chained-binds": P + 'SELECT ?c WHERE { ?s ex:name ?n BIND(CONCAT(?n, "-") AS ?a) BIND(CONCAT(?a, STR(?s)) AS ?b) BIND(CONCAT(?b, "#", ?a) AS ?c) }',
    "filter-contains": P + 'SELECT ?s WHERE { ?s ex:name ?n FILTER(CONTAINS(LCASE(CONCAT(?n, " ", STR(?s))), "alice")) }',
}


def _reference_queries() -> list[tuple[str, str]]:
    found = [(f"{kg.id}/{q.id}", q.sparql) for kg in load_holdout(REPO / "holdout").kgs for q in kg.questions]
    ck25 = Path(os.environ.get("KGEVAL_CK25", "/nonexistent"))
    if (ck25 / "questions.yml").is_file():
        found += [(f"ck25/{q['id']}", q["query"]["sparql"]) for q in yaml.safe_load((ck25 / "questions.yml").read_text())["questions"]]
    return found


def _estimate(text: str) -> float:
    return estimated_value_bytes(guard_query(text).text, LIMITS.assumed_value_bytes)


def test_no_reference_query_is_refused():
    """Every reference query stays far below the cap (CK25 adds 50 when $KGEVAL_CK25 is set)."""
    queries = _reference_queries()
    estimates = {name: _estimate(text) for name, text in queries}
    over = {name: size for name, size in estimates.items() if size > LIMITS.max_value_bytes}
    assert over == {}
    assert max(estimates.values()) <= LIMITS.max_value_bytes / 32, max(estimates.items(), key=lambda kv: kv[1])
    assert len(queries) >= (66 if os.environ.get("KGEVAL_CK25") else 16)


@pytest.mark.parametrize("name", sorted(LEGITIMATE))
def test_legitimate_string_building_is_not_refused(name: str, tmp_path: Path):
    store = EmbeddedStore([_kg(tmp_path)], candidates=LIMITS)
    try:
        result, _ = store.execute_candidate(LEGITIMATE[name], timeout_s=30, row_cap=100)
        assert result.form == "select"
    finally:
        store.close()


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_a_value_bomb_is_refused_before_any_store_sees_it(name: str):
    """On a SPARQL endpoint that records requests: QueryOverBudget naming the cap, 0 requests,
    and the error says what the query cost (every candidate failure is counted)."""
    assert _estimate(BOMBS[name]) > LIMITS.max_value_bytes
    with loopback(lambda _: ASK_TRUE) as (url, recorded):
        store = open_store(StoreConfig(kind="sparql", endpoint=url + "/sparql", data_version="x", product="Virtuoso"), [])
        with pytest.raises(QueryOverBudget, match="max_value_bytes") as caught:
            store.execute_candidate(BOMBS[name], timeout_s=60, row_cap=10)
        assert recorded == [] and caught.value.resources is not None


def test_the_estimate_adds_concat_and_follows_binds():
    a, b = '"' + "a" * 100 + '"', '"' + "b" * 200 + '"'
    assert _estimate(f"SELECT (CONCAT({a}, {b}) AS ?v) WHERE {{}}") == len(a) + len(b)
    assert _estimate("SELECT ?b WHERE { ?s ?p ?a BIND(CONCAT(?a, ?a) AS ?b) }") == 2 * LIMITS.assumed_value_bytes
    # the projection reads what its WHERE bound, although it is written first
    assert _estimate("SELECT (CONCAT(?b, ?b) AS ?c) WHERE { ?s ?p ?a BIND(CONCAT(?a, ?a) AS ?b) }") == 4 * LIMITS.assumed_value_bytes


def test_a_smaller_cap_refuses_less_extreme_queries(tmp_path: Path):
    """The cap is configuration: with max_value_bytes of 10 KB, CONCAT of three data values is over."""
    limits = CandidateQueryConfig(max_value_bytes=10_000)
    store = EmbeddedStore([_kg(tmp_path)], candidates=limits)
    try:
        with pytest.raises(QueryOverBudget, match="10,000-byte limit"):
            store.execute_candidate("SELECT (CONCAT(?o, ?o, ?o) AS ?v) WHERE { ?s ?p ?o }", timeout_s=30, row_cap=10)
    finally:
        store.close()


def _kg(tmp_path: Path) -> Path:
    path = tmp_path / "mini.ttl"
    path.write_text(MINI_TTL, encoding="utf-8")
    return path


def test_the_keyword_shortcut_gives_the_full_walks_estimate(monkeypatch):
    """A text with no builder keyword (CONCAT, REPLACE, UCASE, LCASE, ENCODE_FOR_URI, any case)
    is answered 0 without walking its tree: on every query here (bombs, legitimate ones, the
    reference queries), the shortcut's estimate is the full walk's."""
    import re

    import kgeval.stores._value_size as value_size

    texts = [guard_query(t).text for t in [*BOMBS.values(), *LEGITIMATE.values(), *(q for _, q in _reference_queries())]]
    texts += [guard_query(P + "SELECT ?s WHERE { ?s ex:name ?n FILTER(STRLEN(?n) > 3) } ORDER BY ?n").text]
    shortcut = [value_size.estimated_value_bytes.__wrapped__(t, LIMITS.assumed_value_bytes) for t in texts]
    monkeypatch.setattr(value_size, "_BUILDER_WORDS", re.compile(""))  # matches every text: always the full walk
    full = [value_size.estimated_value_bytes.__wrapped__(t, LIMITS.assumed_value_bytes) for t in texts]
    assert shortcut == full
    assert sum(s == 0 for s in shortcut) > 10 and sum(s > 0 for s in shortcut) > 10  # both kinds were compared
