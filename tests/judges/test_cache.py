"""The judges' cache of prepared golds, shared by a run's worker threads."""

import random

from kgeval.judges._cache import GoldCache
from kgeval.stores import QueryResult


def test_golds_evicted_while_other_threads_read_them(race):
    golds = [QueryResult(form="select", vars=["x"], rows=[], total=n) for n in range(7)]
    prepared: list[int] = []
    cache = GoldCache(lambda gold: prepared.append(1) or ("prepared", gold.total), size=3)

    def read(k: int) -> None:
        rng = random.Random(k)
        for _ in range(3000):
            gold = rng.choice(golds)
            assert cache.get(gold) == ("prepared", gold.total)

    race(read, threads=8)
    assert len(prepared) > 7  # golds were evicted and prepared again


def test_a_cached_gold_is_prepared_once():
    gold = QueryResult(form="select", vars=["x"], rows=[], total=1)
    prepared: list[int] = []
    cache = GoldCache(lambda g: prepared.append(1) or object(), size=2)
    first = cache.get(gold)
    assert all(cache.get(gold) is first for _ in range(5))
    assert len(prepared) == 1


def test_a_gold_is_read_once_for_the_readings_of_every_answer_list(monkeypatch):
    """`read_items` reads what it needs of a gold whatever the answer (dates? numbers only? its
    IRI tails) once per gold (`_GOLD_KINDS`, by identity): every answer list, judge and leniency
    variant after the first reads none of its cells again; another gold, equal or not, is read
    for itself, and what was read of one gold never reads another's answers."""
    from kgeval.config import JudgesConfig
    from kgeval.holdout import Question
    from kgeval.judges import Candidate, judges_from_config
    from kgeval.judges import _reading
    from kgeval.stores import Term

    xsd = "http://www.w3.org/2001/XMLSchema#"
    question = Question(id="q", question="When?", sparql="SELECT ?d WHERE { ?s ?p ?d }", domain="d", kg="k")
    dated = QueryResult(form="select", vars=["d"], rows=[[Term.literal("1985-01-01", xsd + "date")]], total=1)
    undated = QueryResult(form="select", vars=["d"], rows=[[Term.literal("1 January 1985")]], total=1)
    read = []
    holds_dates = _reading._holds_dates
    monkeypatch.setattr(_reading, "_holds_dates", lambda gold: read.append(gold) or holds_dates(gold))
    judges = judges_from_config(JudgesConfig())
    for items in (["January 1, 1985"], ["1 Jan 1985"], ["1st of January, 1985"], ["1984"]):
        verdicts = [judge.judge(question, dated, Candidate(items=items)) for judge in judges.values()]
        assert all(v.correct for v in verdicts) == (items != ["1984"]), items
    assert read == [dated], "one reading of the gold for 4 answer lists, 2 judges and their variants"
    copy = dated.model_copy(deep=True)
    assert all(judge.judge(question, copy, Candidate(items=["January 1, 1985"])).correct for judge in judges.values())
    assert all(not judge.judge(question, undated, Candidate(items=["1985-01-01"])).correct for judge in judges.values())
    assert read == [dated, copy, undated]
