"""The seed judge's fast paths (memoized answer texts, injective golds, verdicts built without
pydantic's per-field work) give the verdicts of the straightforward implementation
(seed_reference.py: the judge as it was before them), field for field, on random inputs."""

import random

import pytest

from kgeval.config import JudgesConfig, SeedJudgeConfig
from kgeval.holdout import Question
from kgeval.judges import Candidate, judge_from_config
from kgeval.stores import QueryResult, Term
from tests.judges.seed_reference import SeedJudge as ReferenceSeedJudge

Q = Question(id="q", question="?", sparql="SELECT ?x WHERE {?x ?p ?o}", domain="d", kg="k")
BASE = "http://x/entities/Thing/"
XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"


def _value(rng: random.Random, pool: int):
    v = rng.randrange(pool)
    form = rng.randrange(9)
    if form == 0:
        return v
    if form == 1:
        return f"  <{BASE}{v}>  "
    if form == 2:
        return f"{BASE}{v}/"
    if form == 3:
        return f"V{v}"  # case-folded to v{v}
    if form == 4:
        return rng.choice([True, False, 1.5, "1.50", "true", None, [v], {"a": v}])
    return f"{BASE}{v}"


def _cell(rng: random.Random, pool: int) -> Term | None:
    v = rng.randrange(pool)
    form = rng.randrange(6)
    if form == 0:
        return None
    if form == 1:
        return Term.literal(str(v), XSD_INT)
    if form == 2:
        return Term.literal(f"v{v}", lang="en")
    return Term.iri(f"{BASE}{v}")


def _gold(rng: random.Random) -> QueryResult:
    if rng.random() < 0.1:
        return QueryResult(form="ask", boolean=rng.random() < 0.5, total=1)
    size, width, pool = rng.choice([1, 3, 8, 30, 120]), rng.choice([1, 1, 2]), rng.choice([10, 60, 300])
    rows = [[_cell(rng, pool) if width > 1 else Term.iri(f"{BASE}{rng.randrange(pool)}") for _ in range(width)] for _ in range(size)]
    total = size + (rng.randrange(50) if rng.random() < 0.2 else 0)
    return QueryResult(form="select", vars=[f"v{j}" for j in range(width)], rows=rows, total=total, truncated=total > size)


def _candidate(rng: random.Random, pool: int = 300) -> Candidate:
    kind = rng.randrange(4)
    if kind == 0:
        return Candidate()
    if kind == 1:
        rows = [[_cell(rng, pool)] for _ in range(rng.randrange(12))]
        total = len(rows) + (rng.randrange(5) if rng.random() < 0.2 else 0)
        return Candidate(result=QueryResult(form="select", vars=["x"], rows=rows, total=total, truncated=total > len(rows)))
    return Candidate(items=[_value(rng, pool) for _ in range(rng.randrange(25))])


def _near(rng: random.Random, gold: QueryResult) -> Candidate:
    """An answer list mostly spelt as the gold spells its cells, with other spellings of the
    same values (the seed judge's memos then hold two texts of one key) and a few texts outside."""
    texts = [term.value for row in gold.rows for term in row if term is not None] or ["x"]
    items = []
    for _ in range(rng.randrange(1, 25)):
        text, draw = rng.choice(texts), rng.random()
        if draw < 0.75:
            items.append(text)
        elif draw < 0.95:
            items.append(rng.choice([f"  <{text}>  ", f"{text}/", text.upper()]))
        else:
            items.append(f"{BASE}outside-{rng.randrange(5)}")
    return Candidate(items=items)


def _same(fast, reference) -> None:
    assert type(fast) is type(reference)
    assert fast.__dict__ == reference.__dict__
    assert list(fast.__dict__) == list(reference.__dict__)
    assert fast.model_fields_set == reference.model_fields_set
    assert fast.__pydantic_extra__ == reference.__pydantic_extra__
    assert fast.__pydantic_private__ == reference.__pydantic_private__
    assert fast.model_dump_json() == reference.model_dump_json()


def _judged_by_both(rng: random.Random, cfg: SeedJudgeConfig, golds: list[QueryResult], answers: int, near: float = 0.0):
    """(fast verdict, reference verdict) on random answers, each pair checked by `_same` first
    (the reference's version and config hash replaced by the fast judge's); a share `near` of
    the answers are spelt like their gold (`_near`)."""
    fast = judge_from_config("seed", JudgesConfig(seed=cfg))
    reference = ReferenceSeedJudge(cfg)
    for _ in range(answers):
        gold = rng.choice(golds)
        candidate = _near(rng, gold) if gold.form == "select" and rng.random() < near else _candidate(rng)
        verdict = fast.judge(Q, gold, candidate)
        expected = reference.judge(Q, gold, candidate)
        _same(verdict, expected.model_copy(update={"version": fast.version, "config_sha256": fast.config_sha256}))
        yield verdict, expected


@pytest.mark.parametrize("seed", range(6))
def test_fast_seed_judge_matches_the_reference(seed):
    rng = random.Random(seed)
    cfg = SeedJudgeConfig(exact_below=rng.choice([1, 5, 50, 1000]), min_items=rng.choice([1, 5]))
    golds = [_gold(rng) for _ in range(12)]
    for verdict, expected in _judged_by_both(rng, cfg, golds, 1500):
        assert verdict.config_sha256 != expected.config_sha256  # the logic version is part of the hash


@pytest.mark.parametrize("seed", range(6))
def test_answers_spelt_like_the_gold(seed):
    """Answers made of the gold's own spellings take the lone-text path; other spellings of the
    same values crowd a value's texts, in the memo and within one answer."""
    rng = random.Random(200 + seed)
    cfg = SeedJudgeConfig(exact_below=rng.choice([5, 50, 1000]), min_items=rng.choice([1, 5]))
    golds = [_gold(rng) for _ in range(4)]
    accepted = sum(verdict.correct for verdict, _ in _judged_by_both(rng, cfg, golds, 1500, near=0.9))
    assert accepted > 100  # the answers near their gold are often right, so both verdicts are seen


@pytest.mark.parametrize("seed", range(2))
def test_memos_starting_over_change_no_verdict(seed, monkeypatch):
    """With tiny memo bounds the gold indexes and the verdict memo start over all the time;
    verdicts stay those of the reference."""
    import kgeval.judges._seed as seed_module

    monkeypatch.setattr(seed_module, "_MEMO_LIMIT", 3)
    forgotten = []
    forget = seed_module.GoldIndex.forget
    monkeypatch.setattr(seed_module.GoldIndex, "forget", lambda index: forgotten.append(1) or forget(index))
    rng = random.Random(100 + seed)
    cfg = SeedJudgeConfig(exact_below=rng.choice([5, 50]))
    golds = [_gold(rng) for _ in range(6)]
    for _ in _judged_by_both(rng, cfg, golds, 800, near=0.5):
        pass  # each pair is checked as it is made
    assert len(forgotten) > 20  # the bound was reached and the memos started over, many times


@pytest.mark.parametrize("memo_limit", [8, 64])
def test_judging_from_many_threads_at_once(memo_limit, monkeypatch, race):
    """A run judges on its worker threads, all against the same gold indexes: memos met,
    crowded and started over by several threads at once (tiny memo bound) leave every verdict
    that of the reference, judged alone."""
    import kgeval.judges._seed as seed_module

    monkeypatch.setattr(seed_module, "_MEMO_LIMIT", memo_limit)
    rng = random.Random(300)
    cfg = SeedJudgeConfig(exact_below=5, min_items=1)
    golds = [g for g in (_gold(rng) for _ in range(40)) if g.form == "select"][:3]
    work = [(gold, _near(rng, gold)) for gold in golds for _ in range(700)]
    rng.shuffle(work)
    reference = ReferenceSeedJudge(cfg)
    expected = [reference.judge(Q, gold, candidate).model_dump(exclude={"version", "config_sha256"}) for gold, candidate in work]
    fast = judge_from_config("seed", JudgesConfig(seed=cfg))
    got: list = [None] * len(work)

    def judge_every_eighth(start: int) -> None:
        for i in range(start, len(work), 8):
            got[i] = fast.judge(Q, *work[i]).model_dump(exclude={"version", "config_sha256"})

    race(judge_every_eighth, threads=8)
    wrong = [i for i in range(len(work)) if got[i] != expected[i]]
    assert not wrong, f"{len(wrong)} of {len(work)} verdicts differ from the reference, e.g. {got[wrong[0]]} vs {expected[wrong[0]]}"
