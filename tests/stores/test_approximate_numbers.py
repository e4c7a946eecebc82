"""One holdout of approximate numbers (xsd:float, xsd:double) judged on the embedded store, a
real Oxigraph server and a real Virtuoso: the same answers get the same verdicts.

The same AVG over xsd:float is 6.9037037 on pyoxigraph and 6.9037027 on Oxigraph server (the
order the engine adds in), Virtuoso's is an xsd:decimal, and Virtuoso writes an xsd:double with
6 significant digits (618833.0 for 618832.9): compared at 12 digits, a right answer was right on
one store and wrong on another (the cross-store acceptance test of the xstore branch)."""

from __future__ import annotations

import pytest

from kgeval.config import JudgesConfig
from kgeval.holdout import Question
from kgeval.judges import Candidate, judge_from_config
from kgeval.stores import EmbeddedStore, open_store
from tests.stores.conftest import APPROX_MEAN, APPROX_QUESTIONS


def _store(request, server_holdouts):
    if request.param == "embedded":
        return EmbeddedStore(server_holdouts["approx"].kgs[0].files)
    return open_store(request.getfixturevalue(f"{request.param}_server").config("approx"), [], "approx")


@pytest.fixture(params=["embedded", "oxigraph", "virtuoso"])
def approx_store(request, server_holdouts):
    return _store(request, server_holdouts)


def _verdict(store, qid: str, *, sparql: str | None = None, items: list | None = None):
    spec = next(q for q in APPROX_QUESTIONS if q["id"] == qid)
    question = Question(kg="approx", domain="test", **{k: spec[k] for k in ("id", "question", "sparql")})
    gold = store.execute(question.sparql, timeout_s=30, row_cap=100)
    result = store.execute(question.sparql.split("SELECT")[0] + sparql, timeout_s=30, row_cap=100) if sparql else None
    return judge_from_config("execution", JudgesConfig()).judge(question, gold, Candidate(result=result, items=items))


def test_an_average_of_floats_is_the_same_number_on_every_store(approx_store):
    as_double = "SELECT (AVG(xsd:double(?r)) AS ?avg) WHERE { ?i ap:rating ?r }"
    assert _verdict(approx_store, "approx-01", sparql=as_double).correct
    assert _verdict(approx_store, "approx-01", items=[f"{APPROX_MEAN:.7g}"]).correct
    assert not _verdict(approx_store, "approx-01", items=[f"{APPROX_MEAN:.2g}"]).correct  # 6.9 is not the average 6.90...
    assert not _verdict(approx_store, "approx-01", items=[f"{APPROX_MEAN + 0.0001:.7g}"]).correct


def test_a_stored_double_is_the_same_number_on_every_store(approx_store):
    assert _verdict(approx_store, "approx-02", items=["618832.9"]).correct
    assert _verdict(approx_store, "approx-02", sparql="SELECT (xsd:decimal(?a) AS ?d) WHERE { ap:japan ap:area ?a }").correct
    assert not _verdict(approx_store, "approx-02", items=["618836"]).correct
    assert not _verdict(approx_store, "approx-02", items=["618832"]).correct


def test_integers_keep_every_digit(approx_store):
    assert _verdict(approx_store, "approx-03", items=[200]).correct
    assert not _verdict(approx_store, "approx-03", items=[201]).correct
