"""Near-miss mutants of reference queries: every kind, each one a query the guard accepts."""

from __future__ import annotations

from kgeval.gold._mutants import mutants
from kgeval.stores import guard_query

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
        if m.kind != "drop_group_key":  # a grouped key still projected does not parse: recorded as undecided
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
