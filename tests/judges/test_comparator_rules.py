"""Issue 40: what the default execution judge accepts beyond the field's comparator is a named
rule (`label_columns`, `extra_columns`, `duplicates`), and the owners' near misses stay wrong by
default: 20 templates x 3 columns for "the distinct template type codes", a grouped count with its
key beside it for a bare count. Executed on a small pyoxigraph store."""

from __future__ import annotations

import pytest

from kgeval.config import ExecutionJudgeConfig
from kgeval.holdout import Question
from kgeval.judges import Candidate, ExecutionJudge, with_rules
from tests.judges.conftest import turtle_kg

PREFIXES = "PREFIX ex: <http://example.org/>\nPREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"
CODES = ("AA", "BB", "CC", "DD", "EE")
TTL = (
    "@prefix ex: <http://example.org/> .\n@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
    + "".join(f'ex:t{i} a ex:Template ; rdfs:label "Template {i}"@en ; ex:typeCode "{CODES[i % 5]}" .\n' for i in range(20))
    + 'ex:c1 a ex:City ; rdfs:label "Tromsø"@en, "Tromso"@de ; <http://schema.org/description> "city in northern Norway"@en .\n'
    + 'ex:c2 a ex:City ; rdfs:label "Oslo"@en ; <http://schema.org/description> "capital of Norway"@en ; ex:motto "Unanimiter et constanter" .\n'
)
DISTINCT_CODES = PREFIXES + "SELECT DISTINCT ?code WHERE { ?t a ex:Template ; ex:typeCode ?code }"
TEMPLATE_COUNT = PREFIXES + "SELECT (COUNT(?t) AS ?n) WHERE { ?t a ex:Template }"
CITIES = PREFIXES + "SELECT ?c WHERE { ?c a ex:City }"
CITY_NAMES = PREFIXES + "SELECT ?n WHERE { ?c a ex:City ; rdfs:label ?n FILTER(LANG(?n) = 'en') }"
DEFAULT = ExecutionJudge(ExecutionJudgeConfig())


@pytest.fixture(scope="module")
def kg(tmp_path_factory):
    return turtle_kg(tmp_path_factory, TTL, "kg")


def _judge(kg, reference: str, answer: str, judge: ExecutionJudge = DEFAULT, *, labels: bool = True):  # noqa: ANN001
    store, lookup = kg
    question = Question(id="q", question="?", sparql=reference, domain="d", kg="kg")
    result = store.execute(answer, timeout_s=30, row_cap=2000)
    return judge.judge(question, store.execute(reference, timeout_s=30, row_cap=2000), Candidate(result=result, sparql=answer, lookup=lookup if labels else None))


def test_twenty_templates_with_three_columns_are_not_the_distinct_type_codes(kg):
    """The owners' case: its third column, de-duplicated, equals the gold."""
    answer = PREFIXES + "SELECT ?t ?name ?code WHERE { ?t a ex:Template ; rdfs:label ?name ; ex:typeCode ?code }"
    verdict = _judge(kg, DISTINCT_CODES, answer)
    assert not verdict.correct and verdict.path == "extra_columns", verdict.reason
    assert "?t" in verdict.reason and "?name" in verdict.reason and "rule extra_columns off" in verdict.reason
    assert verdict.details["leniency"] == {"standard": False, "lenient": True, "alone": ["extra_columns"]}
    both = ExecutionJudge(with_rules(ExecutionJudgeConfig(), {"extra_columns": True}))
    accepted = _judge(kg, DISTINCT_CODES, answer, both)  # what the rule (with duplicates) would accept: counted, not hidden
    assert accepted.correct and accepted.details["comparator_rules"] == ["extra_columns", "duplicates"]
    multiset = ExecutionJudge(with_rules(ExecutionJudgeConfig(), {"extra_columns": True, "duplicates": False}))
    assert _judge(kg, DISTINCT_CODES, answer, multiset).path == "duplicates"  # 20 rows of 5 codes


def test_a_grouped_count_with_its_key_is_not_the_bare_count(kg):
    answer = PREFIXES + "SELECT ?type (COUNT(?t) AS ?n) WHERE { ?t a ?type FILTER(?type = ex:Template) } GROUP BY ?type"
    verdict = _judge(kg, TEMPLATE_COUNT, answer)
    assert not verdict.correct and verdict.path == "extra_columns" and verdict.details["leniency"]["alone"] == ["extra_columns"]
    assert _judge(kg, TEMPLATE_COUNT, PREFIXES + "SELECT (COUNT(?t) AS ?n) WHERE { ?t a ex:Template }").correct


def test_the_codes_repeated_are_the_codes_by_the_duplicates_rule(kg):
    repeated = PREFIXES + "SELECT ?code WHERE { ?t a ex:Template ; ex:typeCode ?code }"
    verdict = _judge(kg, DISTINCT_CODES, repeated)
    assert verdict.correct and verdict.details["comparator_rules"] == ["duplicates"] and "20 answer rows, 5 gold rows" in verdict.reason
    assert verdict.details["leniency"] == {"standard": False, "lenient": True, "alone": ["duplicates"]}
    missing = PREFIXES + "SELECT ?code WHERE { ?t a ex:Template ; ex:typeCode ?code FILTER(?code != 'EE') }"
    assert not _judge(kg, DISTINCT_CODES, missing).correct  # a code missing is not a repeat


def test_a_label_column_in_several_languages_needs_both_rules(kg):
    """`?c ?l` over every label: Tromsø twice (en, de), so the aligned column repeats a row."""
    answer = PREFIXES + "SELECT ?c ?l WHERE { ?c a ex:City ; rdfs:label ?l }"
    verdict = _judge(kg, CITIES, answer)
    assert verdict.correct and verdict.details["comparator_rules"] == ["label_columns", "duplicates"]
    assert verdict.details["leniency"] == {"standard": False, "lenient": True, "alone": ["label_columns", "duplicates"]}
    no_labels_at_hand = _judge(kg, CITIES, answer, labels=False)
    assert not no_labels_at_hand.correct and no_labels_at_hand.path == "extra_columns"


def test_a_label_column_of_another_entity_is_an_extra_column(kg):
    answer = PREFIXES + "SELECT ?c ?l WHERE { ?c a ex:City . ex:t1 rdfs:label ?l }"
    verdict = _judge(kg, CITIES, answer, ExecutionJudge(with_rules(ExecutionJudgeConfig(), {"label_columns": True})))
    assert not verdict.correct and verdict.path == "extra_columns"


def test_headline_never_exceeds_lenient_on_every_answer_here(kg):
    answers = [
        PREFIXES + "SELECT ?t ?name ?code WHERE { ?t a ex:Template ; rdfs:label ?name ; ex:typeCode ?code }",
        PREFIXES + "SELECT ?code WHERE { ?t a ex:Template ; ex:typeCode ?code }",
        PREFIXES + "SELECT ?c ?l WHERE { ?c a ex:City ; rdfs:label ?l }",
        PREFIXES + "SELECT ?c WHERE { ?c a ex:City }",
        PREFIXES + "SELECT ?x WHERE { ?x a ex:Nothing }",
    ]
    seen = set()
    for reference in (DISTINCT_CODES, TEMPLATE_COUNT, CITIES):
        for answer in answers:
            verdict = _judge(kg, reference, answer)
            figures = verdict.details["leniency"]
            assert not verdict.correct or figures["lenient"], (reference, answer)
            seen.add((verdict.correct, figures["standard"], figures["lenient"]))
    assert {(True, True, True), (True, False, True), (False, False, True), (False, False, False)} <= seen


def test_a_description_column_is_a_label_column_and_a_motto_is_not(kg):
    """Wikidata's `?xDescription` beside `?x`: the KG's schema:description of each entity."""
    described = PREFIXES + "SELECT ?c ?d WHERE { ?c a ex:City ; <http://schema.org/description> ?d }"
    verdict = _judge(kg, CITIES, described)
    assert verdict.correct and verdict.details["comparator_rules"] == ["label_columns"], verdict.reason
    other = PREFIXES + "SELECT ?c ?d WHERE { ?c a ex:City OPTIONAL { ?c ex:motto ?d } }"  # a value of the entity, not its name
    assert _judge(kg, CITIES, other).path == "extra_columns"
    swapped = PREFIXES + "SELECT ?c ?d WHERE { ?c a ex:City . ?x <http://schema.org/description> ?d FILTER(?x != ?c) }"
    assert _judge(kg, CITIES, swapped).path == "extra_columns"  # the other city's description beside each


def test_the_entities_beside_the_names_asked_for_are_a_label_column(kg):
    """A gold of names, an answer of `?c ?cLabel`: the extra column holds the entities the names name."""
    answer = PREFIXES + "SELECT ?c ?n WHERE { ?c a ex:City ; rdfs:label ?n FILTER(LANG(?n) = 'en') }"
    verdict = _judge(kg, CITY_NAMES, answer)
    assert verdict.correct and verdict.details["comparator_rules"] == ["label_columns"], verdict.reason
    wrong = PREFIXES + "SELECT ?t ?n WHERE { ?c a ex:City ; rdfs:label ?n FILTER(LANG(?n) = 'en') BIND(ex:t1 AS ?t) }"
    assert not _judge(kg, CITY_NAMES, wrong).correct  # an entity that does not bear the name


@pytest.mark.parametrize("suffix", ["__name", "__entity"])
def test_an_answer_column_named_as_the_label_rules_name_theirs_is_still_an_extra_column(kg, suffix):
    """Only a column the label rules derived beside an answer's (`with_named_columns`) is counted
    with its source: an answer's own `?c__name` of other values is an extra column, as `?c_name` is."""
    answer = PREFIXES + f"SELECT ?c ?c{suffix} WHERE {{ ?c a ex:City BIND(42 AS ?c{suffix}) }}"
    verdict = _judge(kg, CITIES, answer)
    assert not verdict.correct and verdict.path == "extra_columns", verdict.reason
    assert verdict.details["leniency"] == {"standard": False, "lenient": True, "alone": ["extra_columns"]}
