"""Tie probes on reference queries as people write them (issue 13): keywords in any case,
comments, nested sub-selects, aggregates with AS, GROUP BY/HAVING, VALUES, OFFSET.

Each query cuts a group of equal ORDER BY keys with its LIMIT/OFFSET; the gold rebuild must
find the tie (never leave it "unchecked"), with the acceptable answers the data gives.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kgeval.config import GoldConfig
from kgeval.holdout import load_holdout
from kgeval.stores import EmbeddedStore, order_probe
from tests.conftest import write_holdout

X = "http://example.org/shop/"
TTL = f"""@prefix ex: <{X}> .
ex:i1 ex:price 5 ; ex:cat ex:c1 ; ex:label "one" .
ex:i2 ex:price 3 ; ex:cat ex:c1 ; ex:label "two" .
ex:i3 ex:price 3 ; ex:cat ex:c2 ; ex:label "three" .
ex:i4 ex:price 3 ; ex:cat ex:c2 ; ex:label "four" .
ex:i5 ex:price 1 ; ex:cat ex:c3 ; ex:label "five" .
ex:i6 ex:price 8 ; ex:cat ex:c3 ; ex:label "six" .
"""
P = f"prefix ex: <{X}>\n"

# id -> (query, how many tied candidates straddle the cut, how many of them the answer holds)
CORPUS: dict[str, tuple[str, int, int]] = {
    "lowercase": (P + "select ?i where { ?i ex:price ?p } order by desc(?p) limit 3", 3, 1),
    "mixed-case-distinct": (P + "Select Distinct ?i Where { ?i ex:price ?p } Order By ?p Limit 2", 3, 1),
    "count-as-lowercase": (P + "select ?c (count(*) as ?n) where { ?i ex:cat ?c } group by ?c order by desc(?n) limit 1", 3, 1),
    "having": (P + "SELECT ?c (COUNT(?i) AS ?n) WHERE { ?i ex:cat ?c } GROUP BY ?c HAVING (count(?i) > 1) ORDER BY asc(?n) LIMIT 2", 3, 2),
    "order-by-aggregate": (P + "select ?c where { ?i ex:cat ?c } group by ?c order by desc(count(?i)) limit 1", 3, 1),
    "nested-subselect": (
        P + "SELECT ?i ?p WHERE { { select ?i (max(?x) as ?p) where { ?i ex:price ?x } group by ?i order by ?i } } ORDER BY DESC(?p) LIMIT 3",
        3, 1,
    ),
    "comments-everywhere": (
        "# the dearest items\n" + P + "SELECT ?i # the item\nWHERE { ?i ex:price ?p . # its price\n} # done\n"
        "ORDER BY DESC(?p) # by price\nLIMIT 3 # three",
        3, 1,
    ),
    "values": (P + "select ?i where { values ?c { ex:c1 ex:c2 } ?i ex:cat ?c ; ex:price ?p } order by ?p limit 1", 3, 1),
    "offset": (P + "select ?i where { ?i ex:price ?p } order by ?p offset 1 limit 1", 3, 1),
    "expression-key": (P + "select ?i where { ?i ex:price ?p } order by (?p * -1) limit 3", 3, 1),
    "select-star": (P + "select * where { ?i ex:price ?p } order by asc(?p) limit 2", 3, 1),
    "keyword-named-variables": (P + "select ?order ?limit where { ?order ex:price ?limit } order by ?limit limit 2", 3, 1),
    "limit-without-order": (P + "select ?i where { ?i ex:price ?p } limit 2", 6, 2),
    "trailing-values": (P + "SELECT ?i ?p WHERE { ?i ex:price ?p } ORDER BY ?p LIMIT 2 VALUES ?p { 1 3 }", 3, 1),
    "builtin-key": (P + "select ?i where { ?i ex:price ?p ; ex:label ?l } order by desc(strlen(str(?p))) ?p limit 2", 3, 1),
}


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory):
    from kgeval.gold import rebuild_gold  # the gold package is the user of the probe

    questions = [{"id": f"tie-{key}", "question": key, "sparql": query, "domain": "test", "tags": ["list"]} for key, (query, _, _) in CORPUS.items()]
    root = write_holdout(tmp_path_factory.mktemp("ties") / "holdout", questions, TTL, kg="shop")
    report = rebuild_gold(load_holdout(root), lambda kg: EmbeddedStore(kg.files), GoldConfig(), None)
    assert report.ok, report.failures
    return {entry.question_id.removeprefix("tie-"): entry for entry in report.entries}


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_tie_at_the_cut_is_found(case, rebuilt):
    entry = rebuilt[case]
    _, candidates, choose = CORPUS[case]
    assert entry.tie_check_error is None, f"tie check left unchecked: {entry.tie_check_error}"
    assert entry.ties is not None and entry.ties.tied
    assert [(len(g.candidates), g.choose) for g in entry.ties.groups][-1] == (candidates, choose)


def test_probe_reads_keywords_in_any_case():
    probe = order_probe(P + "select distinct ?c (count(*) as ?n) where { ?i ex:cat ?c } group by ?c order by desc(?n) ?c limit 1 offset 1")
    assert (probe.key_vars, probe.distinct, probe.descending) == (("n", "c"), True, (True, False))
    assert "LIMIT" not in probe.text and "OFFSET" not in probe.text and "DISTINCT" not in probe.text.split("WHERE")[0]


def test_probe_runs_on_the_store(tmp_path: Path):
    (tmp_path / "kg.ttl").write_text(TTL)
    store = EmbeddedStore([tmp_path / "kg.ttl"])
    probe = order_probe(CORPUS["order-by-aggregate"][0])
    result = store.execute(probe.text, timeout_s=60, row_cap=100)
    assert sorted(r[result.vars.index("__kgeval_key0")].value for r in result.rows) == ["2", "2", "2"]
