"""Acceptance test 7: a query that names the entities of an ORDER BY ... LIMIT answer (supplier
names where the gold has supplier IRIs) and breaks a tie at the cut differently from the engine
is judged against the acceptable answer it chose, as a query giving the IRIs is, and as an
answer list naming them is (CK25 question 46: the fifth of the top five suppliers by average
reliability is any of ten tied at 0.942)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kgeval.config import JudgesConfig, ExecutionJudgeConfig, LabelRulesConfig
from kgeval.gold import TieInfo
from kgeval.gold._ties import TieGroup
from kgeval.holdout import Question
from kgeval.judges import Candidate, ExecutionJudge, kg_lookup
from kgeval.runs._attempt import judge_candidate
from kgeval.stores import EmbeddedStore, QueryResult, Term
from tests.conftest import CK25_MISSING

PV = "http://ld.company.org/prod-vocab/"
PI = "http://ld.company.org/prod-instances/"
DEC = "http://www.w3.org/2001/XMLSchema#decimal"
REFERENCE = (
    f"PREFIX pv: <{PV}>\nSELECT DISTINCT ?result (AVG(?reliabilityIndex) AS ?averageReliabilityIndex)\n"
    "WHERE { ?hardware pv:reliabilityIndex ?reliabilityIndex . ?hardware pv:hasSupplier ?result . }\n"
    "GROUP BY ?result ORDER BY DESC(?averageReliabilityIndex) LIMIT 2"
)
TOP, ENGINE, OTHER, THIRD = (PI + "suppl-" + s for s in ("2a51afd9-a3de-45ee-8ada-b74203fed37b", "0d183bba-b1df-4c41-be10-c0896378b406",
                                                          "89dbd72a-3118-4fdf-bdf4-671c351a4b66", "ae3e7157-5d50-464c-9b47-e14e1b30ce4c"))  # fmt: skip


@pytest.fixture(scope="module")
def ck25():
    root = os.environ.get("KGEVAL_CK25")
    if not root or not (Path(root) / "graphs" / "prod-inst.ttl").exists():
        pytest.skip(CK25_MISSING)
    store = EmbeddedStore([Path(root) / "graphs" / "prod-inst.ttl"])
    config = JudgesConfig(execution=ExecutionJudgeConfig(labels=LabelRulesConfig(kg_predicates={"ck25": (PV + "name",)})))
    yield store, kg_lookup(store, "ck25", config, timeout_s=30)
    store.close()


def _row(iri: str, avg: str) -> list[Term]:
    return [Term.iri(iri), Term.literal(avg, DEC)]


def _setup():
    question = Question(id="ck25-46", question="What are the top 2 suppliers with best average reliability?", sparql=REFERENCE,
                        domain="corporate", kg="ck25", order_sensitive=True)  # fmt: skip
    gold = QueryResult(form="select", vars=["result", "averageReliabilityIndex"], rows=[_row(TOP, "0.962"), _row(ENGINE, "0.942")], total=2, ordered=True)
    ties = TieInfo(
        certain=[_row(TOP, "0.962")],
        groups=[TieGroup(key=[Term.literal("0.942", DEC)], candidates=[_row(i, "0.942") for i in (ENGINE, OTHER, THIRD)], choose=1)],
    )
    return question, gold, ties


def _names(store, iris: list[str]) -> list[str]:
    values = " ".join(f"<{i}>" for i in iris)
    result = store.execute(f"PREFIX pv: <{PV}> SELECT ?i ?n WHERE {{ VALUES ?i {{ {values} }} ?i pv:name ?n }}", timeout_s=30, row_cap=100)
    by_iri = {row[0].value: row[1].value for row in result.rows}
    return [by_iri[i] for i in iris]


def _judged(ck25, rows: list[list[Term]]):
    store, lookup = ck25
    question, gold, ties = _setup()
    result = QueryResult(form="select", vars=["name", "avgR"], rows=rows, total=len(rows), ordered=True)
    candidate = Candidate(result=result, sparql="SELECT ?name ?avgR WHERE { }", lookup=lookup)
    verdicts, resolved = judge_candidate(question, {"execution": ExecutionJudge(ExecutionJudgeConfig(labels=LabelRulesConfig(label_for_entity=True)))}, gold, candidate, ties)
    return verdicts[0], resolved


def test_names_of_the_other_tied_row_are_judged_against_that_acceptable_answer(ck25):
    top, other = _names(ck25[0], [TOP, OTHER])
    verdict, resolved = _judged(ck25, [[Term.literal(top), Term.literal("0.962", DEC)], [Term.literal(other), Term.literal("0.942", DEC)]])
    assert resolved and verdict.correct, verdict.reason
    assert verdict.details.get("rule") == "label_for_entity"


def test_names_of_a_row_outside_the_tie_are_still_wrong(ck25):
    # the third-best supplier (0.951 on the full KG) is no tied row: nothing to resolve, wrong
    top, third_best = _names(ck25[0], [TOP, PI + "suppl-11f1284a-d6f0-4822-b716-3e70d1fb91df"])
    verdict, resolved = _judged(ck25, [[Term.literal(top), Term.literal("0.962", DEC)], [Term.literal(third_best), Term.literal("0.942", DEC)]])
    assert not resolved and not verdict.correct


def test_the_shared_key_alone_names_no_tied_row(ck25):
    # only the key value (0.942, every candidate's) and a name of no supplier: the engine's choice stays
    top = _names(ck25[0], [TOP])[0]
    verdict, resolved = _judged(ck25, [[Term.literal(top), Term.literal("0.962", DEC)], [Term.literal("Nobody GmbH"), Term.literal("0.942", DEC)]])
    assert not resolved and not verdict.correct
