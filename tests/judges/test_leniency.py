"""Issue 32: each leniency rule's default and its switch. For every rule, one answer only that rule
makes right: the default judge decides it as the rule's default says, switching the rule flips the
verdict, `details["leniency"]["alone"]` names the rule, and near misses stay wrong with the rule on.
The defaults follow one principle (docs/scoring.md): an answer is accepted only when it states the
same entities and values as the gold, without guessing."""

from __future__ import annotations

import re

import pytest

from kgeval.config import ExecutionJudgeConfig
from kgeval.holdout import Question
from kgeval.judges import RULES, Candidate, ExecutionJudge, lenient_config, rules_on, standard_config, with_rules
from tests.conftest import REPO
from tests.judges.test_wikidata_style import PREFIXES, WIKI_TTL
from tests.judges.conftest import turtle_kg

SIBLINGS_TTL = "wd:Q3 wdt:P3373 wd:Q4 . wd:Q4 wdt:P3373 wd:Q3 . wd:Q6 wdt:P3373 wd:Q7186 . wd:Q7186 wdt:P3373 wd:Q6 .\n"
DEFAULTS = {
    "label_columns": True, "extra_columns": False, "duplicates": True, "entity_for_label": True, "label_for_entity": False, "symmetric_pairs": True, "split_listing": True, "approximate_numbers": True,
    "yes_no": True, "answer_phrases": True, "sparql_notation": True, "name_with_id": True, "written_dates": True, "year_for_date": False,
    "units": True, "number_words": True, "hedged_numbers": False, "sentence_values": False, "other_languages": True,
}  # fmt: skip
"""The decision for each rule (docs/scoring.md's table says why)."""

AUSTRIA_NAME = PREFIXES + "SELECT ?n WHERE { wd:Q1741 wdt:P17 ?c . ?c rdfs:label ?n FILTER(LANG(?n) = 'en') }"
AUSTRIA = PREFIXES + "SELECT ?c WHERE { wd:Q1741 wdt:P17 ?c }"
RUNTIME = PREFIXES + "SELECT ?d WHERE { wd:Q104123 wdt:P2047 ?d }"
BORN_1994 = PREFIXES + "SELECT ?d WHERE { wd:Q4 wdt:P569 ?d }"
BORN_1915 = PREFIXES + "SELECT ?d WHERE { wd:Q6 wdt:P569 ?d }"
SEASONS = PREFIXES + "SELECT ?n WHERE { wd:Q104123 wdt:P1113 ?n }"
HUMANS = PREFIXES + "SELECT ?n WHERE { ?p wdt:P31 wd:Q5 ; rdfs:label ?n }"
SIBLINGS = PREFIXES + "SELECT ?a ?b WHERE { ?a wdt:P3373 ?b FILTER(STR(?a) < STR(?b)) }"
AVERAGE = "SELECT (AVG(?x) AS ?avg) WHERE { VALUES ?x { 1.0 2.0 4.0 } }"
CITIES = PREFIXES + "SELECT ?c WHERE { ?c wdt:P31 wd:Q515 }"
HUMAN_COUNT = PREFIXES + "SELECT (COUNT(?p) AS ?n) WHERE { ?p wdt:P31 wd:Q5 }"

CASES = {
    # rule: (question, reference, answer (SPARQL or items), near misses)
    "label_columns": ("Which cities are there?", CITIES, PREFIXES + "SELECT ?c ?cLabel WHERE { ?c wdt:P31 wd:Q515 ; rdfs:label ?cLabel FILTER(LANG(?cLabel) = 'en') }",
                      [PREFIXES + "SELECT ?c ?code WHERE { ?c wdt:P31 wd:Q515 OPTIONAL { ?c wdt:P281 ?code } }",  # a value that is no label
                       PREFIXES + "SELECT ?c ?l WHERE { ?c wdt:P31 wd:Q515 . wd:Q40 rdfs:label ?l FILTER(LANG(?l) = 'en') }",  # another entity's label
                       PREFIXES + "SELECT ?c ?t WHERE { ?c wdt:P31 ?t FILTER(?t = wd:Q515) }"]),  # an extra IRI column
    "extra_columns": ("How many humans are there?", HUMAN_COUNT, PREFIXES + "SELECT ?t (COUNT(?p) AS ?n) WHERE { ?p wdt:P31 ?t FILTER(?t = wd:Q5) } GROUP BY ?t",
                      [PREFIXES + "SELECT ?p (COUNT(?y) AS ?n) WHERE { ?p wdt:P31 wd:Q5 ; ?x ?y } GROUP BY ?p",  # a count per human
                       PREFIXES + "SELECT ?t (COUNT(?p) AS ?n) WHERE { ?p wdt:P31 ?t FILTER(?t = wd:Q5) . ?p ?x ?y } GROUP BY ?t"]),  # another count
    "duplicates": ("Which cities are there?", CITIES, PREFIXES + "SELECT ?c WHERE { ?c wdt:P31 wd:Q515 ; rdfs:label ?l }",
                   [PREFIXES + "SELECT ?c WHERE { { ?c wdt:P31 wd:Q515 ; rdfs:label ?l } UNION { BIND(wd:Q40 AS ?c) } }",  # one entity more
                    PREFIXES + "SELECT ?c WHERE { wd:Q220 rdfs:label ?l BIND(wd:Q220 AS ?c) }"]),  # Rome twice, Vienna missing
    "entity_for_label": ("Which country is Vienna in?", AUSTRIA_NAME, AUSTRIA, [PREFIXES + "SELECT ?c WHERE { wd:Q220 wdt:P31 ?c }"]),
    "label_for_entity": ("Which country is Vienna in?", AUSTRIA, AUSTRIA_NAME, [PREFIXES + "SELECT ?n WHERE { wd:Q515 rdfs:label ?n }"]),
    "symmetric_pairs": ("Which people are siblings?", SIBLINGS, PREFIXES + "SELECT * WHERE { VALUES (?a ?b) { (wd:Q4 wd:Q3) (wd:Q6 wd:Q7186) } }",
                        [PREFIXES + "SELECT * WHERE { VALUES (?a ?b) { (wd:Q4 wd:Q3) } }",
                         PREFIXES + "SELECT * WHERE { VALUES (?a ?b) { (wd:Q4 wd:Q3) (wd:Q6 wd:Q3) } }"]),
    "split_listing": ("Which humans are there?", HUMANS, ["Marie Curie and Somebody"], [["Marie Curie and Someone"], ["Marie Curie"]]),
    "approximate_numbers": ("What is the average?", AVERAGE, ["2.333333"], [["2.33"], ["2.3333"], ["2.333334"]]),
    "yes_no": ("Is Vienna in Austria?", PREFIXES + "ASK { wd:Q1741 wdt:P17 wd:Q40 }", ["Yes, it is."], [["No"], ["No idea, but I would guess yes."]]),
    "answer_phrases": ("How many seasons?", SEASONS, ["The answer is 3."], [["The answer is 4."]]),
    "sparql_notation": ("Which country is Vienna in?", AUSTRIA, ["wd:Q40"], [["wd:Q41"], ["xx:Q40"]]),
    "name_with_id": ("Which country is Vienna in?", AUSTRIA, ["Austria (Q40)"], [["Austria (Q41)"]]),
    "written_dates": ("When was Someone else born?", BORN_1915, ["May 15, 1915"], [["May 16, 1915"], ["05/06/1915"]]),
    "year_for_date": ("When was Someone born?", BORN_1994, ["1994"], [["1995"]]),
    "units": ("How long is Pulp Fiction in minutes?", RUNTIME, ["154 minutes"], [["155 minutes"], ["154 hours"]]),
    "number_words": ("How many seasons?", SEASONS, ["three"], [["four"]]),
    "hedged_numbers": ("How long is Pulp Fiction in minutes?", RUNTIME, ["about 154"], [["about 150"], ["more than 154"]]),
    "sentence_values": ("How long is Pulp Fiction in minutes?", RUNTIME, ["The film runs for 154 minutes."],
                        [["The film runs for 150 minutes."], ["It is not 154 minutes."]]),
    "other_languages": ("When was Someone else born?", BORN_1915, ["15. Mai 1915"], [["16. Mai 1915"]]),
}  # fmt: skip


@pytest.fixture(scope="module")
def wiki(tmp_path_factory):
    return turtle_kg(tmp_path_factory, WIKI_TTL + SIBLINGS_TTL, "wiki")


def _judge(wiki, judge: ExecutionJudge, rule: str, answer):  # noqa: ANN001
    store, lookup = wiki
    text, reference, _, _ = CASES[rule]
    question = Question(id=f"l-{rule}", question=text, sparql=reference, domain="geography", kg="wiki")
    gold = store.execute(reference, timeout_s=30, row_cap=2000)
    if isinstance(answer, str):
        candidate = Candidate(result=store.execute(answer, timeout_s=30, row_cap=2000), sparql=answer, lookup=lookup)
    else:
        candidate = Candidate(items=answer, lookup=lookup)
    return judge.judge(question, gold, candidate)


def test_every_rule_has_a_case_and_a_decided_default():
    assert set(CASES) == set(RULES) == set(DEFAULTS)
    assert rules_on(ExecutionJudgeConfig()) == DEFAULTS


@pytest.mark.parametrize("rule", sorted(CASES))
def test_the_rule_decides_its_case_as_its_default_says_and_its_switch_flips_it(wiki, rule):
    default = ExecutionJudge(ExecutionJudgeConfig())
    verdict = _judge(wiki, default, rule, CASES[rule][2])
    assert verdict.correct is DEFAULTS[rule], verdict.reason
    assert rule in verdict.details["leniency"]["alone"], verdict.details["leniency"]
    assert verdict.details["leniency"]["standard"] is False and verdict.details["leniency"]["lenient"] is True
    switched = ExecutionJudge(with_rules(ExecutionJudgeConfig(), {rule: not DEFAULTS[rule]}))
    assert _judge(wiki, switched, rule, CASES[rule][2]).correct is not DEFAULTS[rule]


@pytest.mark.parametrize("rule", sorted(CASES))
def test_near_misses_stay_wrong_with_the_rule_on(wiki, rule):
    on = ExecutionJudge(with_rules(ExecutionJudgeConfig(), {rule: True}))
    for miss in CASES[rule][3]:
        verdict = _judge(wiki, on, rule, miss)
        assert not verdict.correct, (miss, verdict.reason)
        assert verdict.details["leniency"]["standard"] is False


def test_standard_and_lenient_configurations_switch_every_rule():
    assert not any(rules_on(standard_config(ExecutionJudgeConfig())).values())
    assert standard_config(ExecutionJudgeConfig()).vacuous is False  # an empty result equals an empty gold
    lenient = lenient_config(ExecutionJudgeConfig())
    assert all(rules_on(lenient).values()) and lenient.labels.shared_names


def test_a_plain_accept_needs_no_rule_and_no_extra_judgement(wiki, monkeypatch):
    judge = ExecutionJudge(ExecutionJudgeConfig())
    asked = []
    monkeypatch.setattr(ExecutionJudge, "_variant", lambda self, name: asked.append(name) or pytest.fail(f"judged again under {name}"))
    verdict = _judge(wiki, judge, "label_for_entity", AUSTRIA)  # the gold's own query
    assert verdict.correct and verdict.details["leniency"] == {"standard": True, "lenient": True, "alone": []} and not asked


def test_docs_table_states_each_rule_and_its_default():
    text = (REPO / "docs" / "scoring.md").read_text(encoding="utf-8")
    assert "by default an answer is accepted only when it states the same entities and values as the gold, without guessing" in " ".join(text.split())
    section = text[text.index("## Leniency is opt-in"):]
    section = section[: section.find("\n## ", 1) if "\n## " in section else None]  # the table of this section only
    rows = dict(re.findall(r"^\| `(\w+)` \|[^|]*\| (on|off) \|", section, re.MULTILINE))
    assert rows == {rule: "on" if on else "off" for rule, on in DEFAULTS.items()}


def test_a_reject_is_judged_again_only_where_a_switched_off_rule_can_apply(wiki, monkeypatch):
    """A rule can only accept more: a wrong number no reading found anything in is judged once; a
    hedged one (found by a reading that is off) is judged with every rule on, then that rule alone."""
    asked: list[str] = []
    real = ExecutionJudge._variant
    monkeypatch.setattr(ExecutionJudge, "_variant", lambda self, name: asked.append(name) or real(self, name))
    judge = ExecutionJudge(ExecutionJudgeConfig())
    verdict = _judge(wiki, judge, "units", ["155"])
    assert not verdict.correct and verdict.details["leniency"] == {"standard": False, "lenient": False, "alone": []} and asked == []
    verdict = _judge(wiki, judge, "hedged_numbers", ["about 154"])
    assert verdict.details["readings_off"] == ["hedged_numbers"] and asked == ["lenient", "+hedged_numbers"]
    asked.clear()  # names for an entity, labels at hand: label-for-entity may apply
    verdict = _judge(wiki, judge, "label_for_entity", AUSTRIA_NAME)
    assert asked == ["lenient", "+label_for_entity"] and verdict.details["leniency"]["alone"] == ["label_for_entity"]


def test_an_executed_result_is_read_for_literals_once_for_every_seed_sharing_it(wiki, monkeypatch):
    """Whether label-for-entity may read an executed answer (it holds a literal) is read once per
    result (`_HOLDS_LITERAL`, by identity: the seeds of a question share one execution), and for
    each result itself: a result of names is judged again under the rule, one of IRIs is not."""
    from kgeval.judges import _execution
    from kgeval.judges._cache import GoldCache

    read: list = []
    monkeypatch.setattr(_execution, "_HOLDS_LITERAL", GoldCache(lambda result: read.append(result) or _execution._holds_literal(result)))
    asked: list[str] = []
    real = ExecutionJudge._variant
    monkeypatch.setattr(ExecutionJudge, "_variant", lambda self, name: asked.append(name) or real(self, name))
    store, lookup = wiki
    judge = ExecutionJudge(ExecutionJudgeConfig())
    question = Question(id="l-names", question="Which country is Vienna in?", sparql=AUSTRIA, domain="geography", kg="wiki")
    gold = store.execute(AUSTRIA, timeout_s=30, row_cap=2000)
    names = store.execute(AUSTRIA_NAME, timeout_s=30, row_cap=2000)
    for _ in range(3):  # three seeds, one execution
        verdict = judge.judge(question, gold, Candidate(result=names, sparql=AUSTRIA_NAME, lookup=lookup))
        assert "label_for_entity" in verdict.details["leniency"]["alone"], verdict.details
    assert read == [names] and asked.count("+label_for_entity") == 3
    wrong = PREFIXES + "SELECT ?c WHERE { wd:Q220 wdt:P31 ?c }"  # entities, the wrong ones
    iris = store.execute(wrong, timeout_s=30, row_cap=2000)
    asked.clear()
    verdict = judge.judge(question, gold, Candidate(result=iris, sparql=wrong, lookup=lookup))
    assert iris.rows and not verdict.correct and read == [names, iris] and "+label_for_entity" not in asked, verdict.details
