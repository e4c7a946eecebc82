"""Issue 4, item 5: one regression test each. Each was proven by reverting its fix once and
watching it fail (the commit message says which line was reverted)."""

import json

from kgeval.config import ExecutionJudgeConfig, JudgesConfig
from kgeval.gold import load_gold
from kgeval.holdout import Question
from kgeval.judges import Candidate, ExecutionJudge, judges_from_config
from kgeval.stores import QueryResult, Term

BASE = "http://x/entities/ConsumerComplaint/"
Q = Question(id="q", question="?", sparql="SELECT ?c WHERE { ?c ?p ?o }", domain="d", kg="k")
JUDGES = judges_from_config(JudgesConfig())
SEED, EXEC = JUDGES["seed"], JUDGES["execution"]


def complaints(ids, *, total=None, label=False):
    rows = [[Term.iri(f"{BASE}{i}")] + ([Term.literal(f"Complaint {i}")] if label else []) for i in ids]
    total = len(rows) if total is None else total
    return QueryResult(form="select", vars=["c", "label"][: 1 + label], rows=rows, total=total, truncated=total > len(rows))


def test_display_cut_to_ten_is_never_the_gold(mini_gold):
    gold = load_gold(mini_gold)["mini-06"].result
    display = json.loads((mini_gold / "display" / "mini.json").read_text())["mini-06"]
    assert display.endswith("… (30 total)") and len(gold.rows) == gold.total == 30
    full = [f"http://example.org/mini/entities/item{i}" for i in range(30)]
    assert SEED.judge(Q, gold, Candidate(items=full)).correct
    assert EXEC.judge(Q, gold, Candidate(items=full)).correct
    shown = [s.strip() for s in display.removesuffix(" … (30 total)").split(",")]
    verdict = EXEC.judge(Q, gold, Candidate(items=shown))
    assert len(shown) == 10 and not verdict.correct and verdict.details["strict_subset"] == "10 of 30"


def test_uri_tail_formatting():
    gold = complaints([12345, 678])
    for items in (["12345", "678"], [12345, 678], [f"<{BASE}12345>", f"{BASE}678/"], ["http://x/entities/ConsumerComplaint/12345", "678"]):
        assert SEED.judge(Q, gold, Candidate(items=items)).correct, items
        assert EXEC.judge(Q, gold, Candidate(items=items)).correct, items


def test_fifteen_item_slice_of_400_accepted_by_membership_with_recall_shown():
    verdict = SEED.judge(Q, complaints(range(400)), Candidate(items=[str(i) for i in range(15)]))
    assert verdict.correct and verdict.path == "membership"
    assert verdict.details["recall"] == 15 / 400 and verdict.details["strict_subset"] == "15 of 400"
    assert "recall 0.037" in verdict.reason and "strict_subset: 15 of 400" in verdict.reason


def test_strict_subset_rejected_by_execution():
    verdict = EXEC.judge(Q, complaints(range(400)), Candidate(result=complaints(range(12))))
    assert not verdict.correct and verdict.details["recall"] == 12 / 400
    assert verdict.details["strict_subset"] == "12 of 400" and "strict_subset: 12 of 400" in verdict.reason
    # the seed judge, were it primary, says so too
    assert SEED.judge(Q, complaints(range(400)), Candidate(result=complaints(range(12)))).details["strict_subset"] == "12 of 400"


def test_five_safe_items():
    gold = complaints(range(400))
    safe = [str(i) for i in range(5)]
    assert SEED.judge(Q, gold, Candidate(items=safe)).correct  # the known weakness, kept by name
    verdict = EXEC.judge(Q, gold, Candidate(items=safe))
    assert not verdict.correct and verdict.details["recall"] == 5 / 400


def test_ask_false():
    gold = QueryResult(form="ask", boolean=False, total=1)
    for judge in (SEED, EXEC):
        assert judge.judge(Q, gold, Candidate(result=QueryResult(form="ask", boolean=False, total=1))).correct
        assert judge.judge(Q, gold, Candidate(items=[False])).correct
        assert judge.judge(Q, gold, Candidate(items=["false"])).correct
        assert not judge.judge(Q, gold, Candidate(result=QueryResult(form="ask", boolean=True, total=1))).correct
        assert not judge.judge(Q, gold, Candidate(items=[])).correct


def test_empty_gold_with_empty_answer():
    empty = complaints([])
    for judge in (SEED, EXEC):
        assert judge.judge(Q, empty, Candidate(result=complaints([]))).correct
        assert judge.judge(Q, empty, Candidate(items=[])).correct
        assert not judge.judge(Q, empty, Candidate(result=complaints([1]))).correct
    verdict = EXEC.judge(Q, empty, Candidate(result=complaints([])))
    assert verdict.details["precision"] == verdict.details["recall"] == 1.0


def test_label_column_beside_the_iri_column():
    """Issue 40: an extra column is a named rule. Without the KG's labels at hand nothing says the
    column holds labels (`label_columns` needs them: tests/judges/test_leniency.py), so it is an
    extra column, accepted only with `extra_columns` on."""
    verdict = EXEC.judge(Q, complaints(range(30)), Candidate(result=complaints(range(30), label=True)))
    assert not verdict.correct and verdict.path == "extra_columns" and verdict.details["extra_columns"] == ["label"]
    wide = ExecutionJudge(ExecutionJudgeConfig(extra_columns=True)).judge(Q, complaints(range(30)), Candidate(result=complaints(range(30), label=True)))
    assert wide.correct and wide.details["comparator_rules"] == ["extra_columns"] and wide.details["leniency"]["alone"] == ["extra_columns"]
    assert SEED.judge(Q, complaints(range(30)), Candidate(result=complaints(range(30), label=True))).correct


def test_label_instead_of_the_iri():
    gold = QueryResult(form="select", vars=["p"], rows=[[Term.iri("http://x/e/alice")], [Term.iri("http://x/e/bob")]], total=2)
    labels = QueryResult(form="select", vars=["name"], rows=[[Term.literal("Alice")], [Term.literal("Bob")]], total=2)
    verdict = EXEC.judge(Q, gold, Candidate(result=labels))
    assert not verdict.correct and verdict.details["recall"] == 0.0
    assert "no shared value between gold ?p and answer ?name" in verdict.reason


def test_an_answer_list_of_sparql_json_terms_is_read_as_their_values():
    """Acceptance test 6 (4 of 480 records): QALD-style answer objects in an answer list
    (`{"type": "uri", "value": ...}`, a typed literal) are their values, not their JSON text."""
    gold = complaints([12345, 678])
    items = [{"type": "uri", "value": f"{BASE}12345"}, {"type": "literal", "value": "678", "datatype": "http://www.w3.org/2001/XMLSchema#integer"}]
    assert SEED.judge(Q, gold, Candidate(items=items)).correct
    assert EXEC.judge(Q, gold, Candidate(items=items)).correct
    assert not EXEC.judge(Q, gold, Candidate(items=[{"type": "uri", "value": f"{BASE}12345"}, {"type": "uri", "value": f"{BASE}1"}])).correct
    # a blank node's label names nothing outside its own result
    assert not EXEC.judge(Q, gold, Candidate(items=[{"type": "uri", "value": f"{BASE}12345"}, {"type": "bnode", "value": "678"}])).correct


def test_a_german_or_spanish_text_listing_several_things_is_read_as_them():
    """Acceptance test 6: `ISWC, ESWC, ACL y NeurIPS`, `Kochgeschirr und Tassen` list several
    things as `A, B and C` does."""
    names = ["ISWC", "ESWC", "ACL", "NeurIPS"]
    gold = QueryResult(form="select", vars=["v"], rows=[[Term.literal(n)] for n in names], total=4)
    assert EXEC.judge(Q, gold, Candidate(items=["ISWC, ESWC, ACL y NeurIPS"])).correct
    assert EXEC.judge(Q, gold, Candidate(items=["ISWC, ESWC, ACL und NeurIPS"])).correct
    assert not EXEC.judge(Q, gold, Candidate(items=["ISWC, ESWC y ACL"])).correct


def test_a_mailto_or_tel_iri_is_answered_by_its_address():
    """Acceptance test 6 (uni-52): a KG giving e-mail addresses as `mailto:` IRIs (foaf:mbox) is
    answered `karen@uni.example`, as a grader accepts; `tel:` likewise. Another address is
    still wrong, and the IRI as written still right."""
    gold = QueryResult(form="select", vars=["m"], rows=[[Term.iri("mailto:karen@uni.example")], [Term.iri("tel:+49-30-1234")]], total=2)
    for items in (["karen@uni.example", "+49-30-1234"], ["mailto:karen@uni.example", "tel:+49-30-1234"]):
        assert SEED.judge(Q, gold, Candidate(items=items)).correct, items
        assert EXEC.judge(Q, gold, Candidate(items=items)).correct, items
    for items in (["karl@uni.example", "+49-30-1234"], ["karen@uni.example"]):
        assert not SEED.judge(Q, gold, Candidate(items=items)).correct, items
        assert not EXEC.judge(Q, gold, Candidate(items=items)).correct, items
