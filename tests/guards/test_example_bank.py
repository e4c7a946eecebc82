"""Example-bank guards: holdout examples refused at ingest, filtered at ask time, similarity capped."""

from __future__ import annotations

import pytest

from kgeval.config import ExampleBankConfig, GuardsConfig
from kgeval.guards import BankGuards, Example, ExampleBank, ExampleRefused, build_index
from kgeval.holdout import load_holdout
from tests.conftest import REPO

CK25_EXAMPLES = [
    Example(id="ck-1", kg="ck25", question="In which department is Ms. Brant?",
            sparql="PREFIX pv: <http://ld.company.org/prod-vocab/> SELECT ?d WHERE { ?e pv:memberOf ?d }"),
    Example(id="ck-2", kg="ck25", question="What is the telephone of Baldwin Dirksen?",
            sparql="PREFIX pv: <http://ld.company.org/prod-vocab/> SELECT ?p WHERE { ?e pv:phone ?p }"),
    Example(id="ck-3", kg="ck25", question="Who is the manager of Heinrich Hoch?",
            sparql="PREFIX pv: <http://ld.company.org/prod-vocab/> SELECT ?m WHERE { ?e pv:hasManager ?m }"),
]


@pytest.fixture(scope="module")
def guards():
    return BankGuards(build_index(load_holdout(REPO / "holdout"), GuardsConfig()), ExampleBankConfig(max_similarity=0.5))


def test_examples_from_the_holdout_are_refused_at_ingest(guards):
    bank = ExampleBank(guards)
    assert bank.add_many(CK25_EXAMPLES) == [] and len(bank) == 3
    by_kg = Example(kg="hr", question="Anything at all?", sparql="SELECT ?s WHERE { ?s ?p ?o }")
    for spelt in ("HR", " Hr "):  # the holdout's KG however its id is cased or spaced (it was admitted and served)
        with pytest.raises(ExampleRefused, match=f"holdout KG {spelt!r}"):
            bank.add(by_kg.model_copy(update={"kg": spelt}))
    # Another KG id, but the SPARQL names the holdout's vocabulary through a renamed prefix.
    by_iri = Example(kg="mine", question="Who works where?", sparql="PREFIX w: <http://example.org/hr/vocab/> SELECT ?e ?d WHERE { ?e w:worksIn ?d }")
    by_question = Example(kg="mine", question="which department does KAREN NOVAK work in", sparql="SELECT ?d WHERE { ?d ?p ?o }")
    for example, reason in [(by_kg, "holdout KG 'hr'"), (by_iri, "SPARQL has holdout namespace"), (by_question, "question is holdout hr/hr-01")]:
        with pytest.raises(ExampleRefused, match=reason) as caught:
            bank.add(example)
        assert caught.value.exit_code == 3
    assert len(bank) == 3


def test_retrieval_filters_holdout_examples_a_bank_got_around_the_guard(guards):
    leaked = Example(kg="mine", question="In which department does Karen Novak work?", sparql="SELECT ?d WHERE { ?d ?p ?o }")
    kept = guards.filter_retrieved("Who is the manager of Heinrich Hoch?", [leaked, *CK25_EXAMPLES])
    assert leaked not in kept


def test_similarity_cap_drops_near_duplicates_of_the_question_asked(guards):
    bank = ExampleBank(guards)
    bank.add_many(CK25_EXAMPLES)
    got = bank.retrieve("Who is the manager of Heinrich Hoch, please?", k=3)
    assert [e.id for e in got] == ["ck-1", "ck-2"]  # ck-3 is the same question: capped
    assert guards.capped >= 1
    unguarded = ExampleBank(None)
    unguarded.add_many(CK25_EXAMPLES)
    assert unguarded.retrieve("Who is the manager of Heinrich Hoch, please?", k=1)[0].id == "ck-3"


def test_each_guard_reports_whether_it_is_active(guards):
    status = {s.name: s for s in ExampleBank(guards).status()}
    assert set(status) == {"example-bank.ingest", "example-bank.retrieval-filter", "example-bank.similarity-cap"}
    assert all(s.active for s in status.values())
    assert status["example-bank.ingest"].details["holdout_kgs"] == 4
    assert status["example-bank.similarity-cap"].details["max_similarity"] == 0.5
    off = ExampleBank(None).status()
    assert [s.active for s in off] == [False, False, False]
