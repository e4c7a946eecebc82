"""The Wikidata label service (`SERVICE wikibase:label`), emulated by the guard in plain SPARQL.

An acceptance test on Wikidata-style data (QALD-10 / LC-QuAD 2.0 style queries without PREFIX
lines) had 10 records whose query was right on Wikidata and used the label service: all were
scored wrong (`refused`), and reference queries using it could not be imported. These tests run
the emulated queries on the embedded store (its sandbox workers for candidates) and compare
every row with what WDQS documents for the same data."""

from __future__ import annotations

import pytest

from kgeval.config import PREDECLARED_PREFIXES, KgevalConfig
from kgeval.errors import QueryRefused
from kgeval.runs._attempt import execute_candidate
from kgeval.stores import EmbeddedStore, guard_query, mentioned_iris

WD = PREDECLARED_PREFIXES["wikidata"]
PREFIXES = "".join(f"PREFIX {name}: <{WD[name]}>\n" for name in ("wd", "wdt", "wikibase", "bd", "rdfs", "schema", "skos"))
TTL = """
@prefix wd: <http://www.wikidata.org/entity/> . @prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . @prefix schema: <http://schema.org/> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
wd:Q25188 rdfs:label "Inception"@en ; wdt:P57 wd:Q25191 ; wdt:P161 wd:Q38111, wd:Q99, wd:Q103 .
wd:Q25191 rdfs:label "Christopher Nolan"@en, "Christophe Nolan"@fr ; schema:description "British-American filmmaker"@en ;
    skos:altLabel "Chris Nolan"@en, "Christopher Jonathan James Nolan"@en ; wdt:P31 wd:Q5 ; wdt:P19 wd:Q84 .
wd:Q38111 rdfs:label "Leonardo DiCaprio"@en ; wdt:P31 wd:Q5 .
wd:Q103 rdfs:label "Ellen Page"@EN-GB ; wdt:P31 wd:Q5 .
wd:Q99 wdt:P31 wd:Q5 .
wd:Q84 rdfs:label "London"@en, "Londres"@fr .
<http://example.org/untagged> rdfs:label "no tag" ; wdt:P31 wd:Q5 .
"""
AUTO = 'SERVICE wikibase:label { bd:serviceParam wikibase:language "[AUTO_LANGUAGE],en". }'


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("wd") / "wd.ttl"
    path.write_text(TTL, encoding="utf-8")
    return EmbeddedStore([path])


def _rows(store, body: str, prefixes: str = PREFIXES) -> set[tuple]:  # noqa: ANN001
    result = store.execute(prefixes + body, timeout_s=30, row_cap=100)
    return {tuple(cell.value if cell is not None else None for cell in row) for row in result.rows}


def test_automatic_mode_labels_every_named_variable(store):
    rows = _rows(store, f"SELECT ?actor ?actorLabel WHERE {{ wd:Q25188 wdt:P161 ?actor . {AUTO} }}")
    assert rows == {
        (WD["wd"] + "Q38111", "Leonardo DiCaprio"),
        (WD["wd"] + "Q103", "Q103"),  # an en-GB label is not "en" (WDQS matches the code exactly): the id
        (WD["wd"] + "Q99", "Q99"),  # no label in any language: the entity id
    }


def test_languages_are_tried_in_order_and_the_clause_may_come_first(store):
    rows = _rows(store, 'SELECT ?d ?dLabel WHERE { SERVICE wikibase:label { bd:serviceParam wikibase:language "fr,en" } wd:Q25188 wdt:P57 ?d }')
    assert rows == {(WD["wd"] + "Q25191", "Christophe Nolan")}
    rows = _rows(store, 'SELECT ?d ?dLabel WHERE { wd:Q25188 wdt:P57 ?d SERVICE wikibase:label { bd:serviceParam wikibase:language "de, en" } }')
    assert rows == {(WD["wd"] + "Q25191", "Christopher Nolan")}


def test_description_and_alternative_labels(store):
    rows = _rows(store, f"SELECT ?d ?dDescription ?dAltLabel WHERE {{ wd:Q25188 wdt:P57 ?d . {AUTO} }}")
    assert len(rows) == 1
    (_, description, alternatives), = rows
    assert description == "British-American filmmaker"
    assert sorted(alternatives.split(", ")) == ["Chris Nolan", "Christopher Jonathan James Nolan"]
    result = store.execute(PREFIXES + f"SELECT ?dAltLabel WHERE {{ wd:Q25188 wdt:P57 ?d . {AUTO} }}", timeout_s=30, row_cap=10)
    assert result.rows[0][0].lang == "en"  # tagged as WDQS tags it, whatever the engine's GROUP_CONCAT does (docs/engines.md)


def test_manual_mode_names_the_variables(store):
    body = 'SELECT ?d ?name ?about WHERE { wd:Q25188 wdt:P57 ?d . SERVICE wikibase:label { bd:serviceParam wikibase:language "en" . ?d rdfs:label ?name ; schema:description ?about } }'
    assert _rows(store, body) == {(WD["wd"] + "Q25191", "Christopher Nolan", "British-American filmmaker")}


def test_a_variable_left_unbound_is_not_joined_with_every_labelled_entity(store):
    # Leonardo has no birthplace: WDQS leaves ?placeLabel unbound, a plain OPTIONAL join would
    # bind ?place to every entity with a label
    rows = _rows(store, f"SELECT ?p ?place ?placeLabel WHERE {{ wd:Q25188 wdt:P161|wdt:P57 ?p OPTIONAL {{ ?p wdt:P19 ?place }} {AUTO} }}")
    assert (WD["wd"] + "Q38111", None, None) in rows
    assert (WD["wd"] + "Q25191", WD["wd"] + "Q84", "London") in rows
    assert len(rows) == 4


def test_untagged_labels_come_after_the_languages_asked(store):
    rows = _rows(store, f"SELECT ?x ?xLabel WHERE {{ ?x wdt:P31 wd:Q5 FILTER(isIRI(?x) && STRSTARTS(STR(?x), 'http://example.org/')) {AUTO} }}")
    assert rows == {("http://example.org/untagged", "no tag")}


def test_grouping_and_ordering_by_the_label(store):
    result = store.execute(PREFIXES + f"SELECT ?x ?xLabel (COUNT(?film) AS ?n) WHERE {{ ?film wdt:P161 ?x . {AUTO} }} GROUP BY ?x ?xLabel ORDER BY ?xLabel", timeout_s=30, row_cap=100)
    labels = [row[1].value for row in result.rows]
    assert labels == sorted(labels) and "Leonardo DiCaprio" in labels


def test_full_iri_silent_and_a_sub_select(store):
    body = ("SELECT ?d ?dLabel WHERE { { SELECT ?d ?dLabel WHERE { wd:Q25188 wdt:P57 ?d . "
            'SERVICE SILENT <http://wikiba.se/ontology#label> { <http://www.bigdata.com/rdf#serviceParam> <http://wikiba.se/ontology#language> "en" } } } }')  # fmt: skip
    assert _rows(store, body) == {(WD["wd"] + "Q25191", "Christopher Nolan")}


def test_a_variable_the_query_binds_itself_is_left_alone(store):
    body = f'SELECT ?d ?dLabel WHERE {{ wd:Q25188 wdt:P57 ?d . ?d rdfs:label ?dLabel FILTER(LANG(?dLabel) = "fr") {AUTO} }}'
    assert _rows(store, body) == {(WD["wd"] + "Q25191", "Christophe Nolan")}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('SELECT ?d WHERE { ?d ?p ?o SERVICE wikibase:label { bd:serviceParam wikibase:language "en" . SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } } }', "nested group"),
        ('SELECT ?d WHERE { ?d ?p ?o SERVICE wikibase:label { bd:serviceParam wikibase:language "en" . ?d ?p ?o } }', "the triple"),
        ('SELECT ?d WHERE { ?d ?p ?o SERVICE wikibase:label { bd:serviceParam wikibase:limit "5" } }', "parameter"),
        ("SELECT ?d ?dLabel WHERE { ?d ?p ?o SERVICE wikibase:label { } }", "names no language"),
        ('SELECT ?d WHERE { ?d ?p ?o SERVICE <http://wikiba.se/ontology#other> { bd:serviceParam wikibase:language "en" } }', "SERVICE clauses are refused"),
        ('SELECT ?d WHERE { ?d ?p ?o SERVICE wikibase:label { bd:serviceParam wikibase:language "en\\" } SERVICE <http://127.0.0.1:9/> { ?a ?b ?c" } }', "parameter"),
    ],
    ids=["nested-service", "other-triple", "other-parameter", "no-language", "other-wikibase-service", "escaped-quote"],
)
def test_anything_else_in_or_beside_it_is_refused(body, message):
    with pytest.raises(QueryRefused, match=message):
        guard_query(PREFIXES + body)


def test_its_growth_is_bounded():
    names = " ".join(f"?v{i} ?v{i}Label ?v{i}Description ?v{i}AltLabel" for i in range(60))
    languages = ",".join(f"l{i}" for i in range(40))
    bound = " ".join(f"?v{i} ?p ?o ." for i in range(60))
    body = f'SELECT {names} WHERE {{ {bound} SERVICE wikibase:label {{ bd:serviceParam wikibase:language "{languages}" }} }}'
    with pytest.raises(QueryRefused, match="would add over"):
        guard_query(PREFIXES + body)


def test_the_judges_read_the_query_that_runs():
    text = PREFIXES + f"SELECT ?x ?xLabel WHERE {{ ?x wdt:P31 wd:Q5 . {AUTO} }}"
    iris = mentioned_iris(text)
    assert "http://wikiba.se/ontology#label" not in iris and WD["bd"] + "serviceParam" not in iris
    assert not any(iri.startswith("urn:kgeval") for iri in iris)  # kgeval's own placeholder is no vocabulary of the KG


def test_a_candidate_using_it_runs_in_the_sandbox_with_wikidatas_prefixes(store):
    config = KgevalConfig.model_validate({"store": {"predeclared_prefixes": "wikidata"}})
    # no PREFIX lines, as models write for WDQS
    execution = execute_candidate(f"SELECT ?d ?dLabel WHERE {{ wd:Q25188 wdt:P57 ?d . {AUTO} }}", store, config)
    assert execution.failure is None and execution.result is not None, execution.error
    assert [(row[0].value, row[1].value) for row in execution.result.rows] == [(WD["wd"] + "Q25191", "Christopher Nolan")]
    assert set(execution.prefixes) == {"wd", "wdt", "wikibase", "bd"}
    assert execution.resources is not None and execution.resources.sandboxed


def test_generated_label_service_queries_are_refused_or_run_never_crash(store):
    """600 generated queries mixing the clause's statements, its place in the group and what
    stands beside it (OPTIONAL, MINUS, UNION, VALUES, BIND, sub-selects, ORDER BY a label):
    the guard approves or refuses each with a named error, and every approved one runs on the
    engine (an emulation that wrote invalid SPARQL would be a model's `invalid_sparql`)."""
    import random

    from kgeval.errors import QuerySyntaxError

    statements = ['bd:serviceParam wikibase:language "en" .', 'bd:serviceParam wikibase:language "fr,en" .', "?x rdfs:label ?xn .",
                  "?y rdfs:label ?yn .", "?y schema:description ?yd .", "?x skos:altLabel ?xa .", "?z rdfs:label ?zn ."]  # fmt: skip
    beside = ["", "?y wdt:P19 ?z", "OPTIONAL { ?y wdt:P19 ?z }", "FILTER(?x != ?y)", "{ SELECT ?x ?y WHERE { ?x wdt:P161 ?y } }",
              "MINUS { ?y wdt:P9 ?w }", "BIND(STR(?y) AS ?s)", "VALUES ?x { wd:Q25188 }", "{ ?x wdt:P161 ?y } UNION { ?x wdt:P57 ?y }"]  # fmt: skip
    projections = ["*", "?x ?xLabel", "?y ?yLabel ?yDescription ?yAltLabel", "?yLabel", "?x ?xn ?yn", "?z ?zLabel", "(COUNT(?y) AS ?c)", "DISTINCT ?yLabel"]
    rng = random.Random(7)
    approved, refusals = 0, set()
    for _ in range(600):
        body = " ".join(rng.sample(statements, rng.randint(1, 3)))
        first, second = rng.sample(beside, 2)
        service = f"SERVICE {rng.choice(['', 'SILENT '])}wikibase:label {{ {body} }}"
        if rng.random() < 0.5:  # after a triple with or without its dot: `A SERVICE ... B`
            where = [rng.choice(["?x wdt:P161 ?y .", "?x wdt:P161 ?y"]), service, first, second]
        else:
            where = [service, "?x wdt:P161 ?y .", first, second]
        query = PREFIXES + f"SELECT {rng.choice(projections)} WHERE {{ {' '.join(where)} }} {rng.choice(['', 'ORDER BY ?yLabel', 'LIMIT 2'])}"
        try:
            guard_query(query)
        except (QueryRefused, QuerySyntaxError) as exc:
            refusals.add(str(exc)[:40])
            continue
        approved += 1
        store.execute(query, timeout_s=30, row_cap=100)  # raises on anything the engine rejects
    assert approved > 200
    assert refusals == {"SERVICE wikibase:label names no language"}, refusals  # nothing else generated is invalid


def test_two_clauses_binding_one_variable_bind_it_once(store):
    # Two clauses in one group (a model writing one per language, or repeating the clause):
    # both would BIND ?dLabel, an engine error scored invalid_sparql though WDQS answers. The
    # first clause binds it; the second sees it bound. Likewise for a clause in a nested group.
    two = 'SERVICE wikibase:label { bd:serviceParam wikibase:language "fr" }'
    rows = _rows(store, f"SELECT ?d ?dLabel WHERE {{ wd:Q25188 wdt:P57 ?d . {two} {AUTO} }}")
    assert rows == {(WD["wd"] + "Q25191", "Christophe Nolan")}
    rows = _rows(store, f"SELECT ?d ?dLabel WHERE {{ wd:Q25188 wdt:P57 ?d . {AUTO} {two} }}")
    assert rows == {(WD["wd"] + "Q25191", "Christopher Nolan")}
    nested = f"SELECT ?d ?dLabel ?p ?pLabel WHERE {{ {{ wd:Q25188 wdt:P57 ?d . {two} }} ?d wdt:P19 ?p . {AUTO} }}"
    assert _rows(store, nested) == {(WD["wd"] + "Q25191", "Christophe Nolan", WD["wd"] + "Q84", "London")}
    union = f"SELECT ?d ?dLabel WHERE {{ {{ wd:Q25188 wdt:P57 ?d . {two} }} UNION {{ wd:Q25188 wdt:P57 ?d . {AUTO} }} }}"
    assert _rows(store, union) == {(WD["wd"] + "Q25191", "Christophe Nolan"), (WD["wd"] + "Q25191", "Christopher Nolan")}


def test_query_hints_are_left_out_as_wdqs_reads_them(store):
    # WDQS reads `hint:` triples as instructions to its optimizer; as triple patterns they
    # match nothing, and a query right on Wikidata returned no row (scored wrong).
    hint = PREFIXES + f"PREFIX hint: <{WD['hint']}>\n"
    rows = _rows(store, f'SELECT ?d ?dLabel WHERE {{ hint:Query hint:optimizer "None" . wd:Q25188 wdt:P57 ?d . hint:Prior hint:runFirst true . {AUTO} }}', hint)
    assert rows == {(WD["wd"] + "Q25191", "Christopher Nolan")}
    full = "SELECT ?a WHERE { wd:Q25188 wdt:P161 ?a . <http://www.bigdata.com/queryHints#Query> <http://www.bigdata.com/queryHints#optimizer> 'None' }"
    assert len(_rows(store, full, hint)) == 3
    # only a whole hint triple goes: a hint IRI anywhere else stays a pattern (matching nothing)
    assert _rows(store, "SELECT ?a WHERE { wd:Q25188 wdt:P161 ?a . ?a hint:optimizer 'None' }", hint) == set()
    assert "queryHints" not in guard_query(hint + 'ASK { hint:Query hint:optimizer "None" }').text.split("ASK")[1]
    # a VALUES block holds data: three hint IRIs there are three values, not a hint
    values = "SELECT ?x WHERE { VALUES ?x { hint:a hint:b hint:c } }"
    assert "VALUES ?x { hint:a hint:b hint:c }" in guard_query(hint + values).text
    assert len(_rows(store, values, hint)) == 3
