import pytest

from kgeval.config import JudgesConfig, SeedJudgeConfig
from kgeval.errors import InputError
from kgeval.holdout import Question
from kgeval.judges import Candidate, judge_from_config, judges_from_config, normalize_value
from kgeval.judges._seed import LOGIC_VERSION as SEED_LOGIC
from kgeval.stores import QueryResult, Term

Q = Question(id="q", question="?", sparql="SELECT ?x WHERE {?x ?p ?o}", domain="d", kg="k")
XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"
BASE = "http://x/entities/ConsumerComplaint/"


def gold_of(values, *, total=None):
    rows = [[Term.iri(BASE + str(v))] for v in values]
    total = len(rows) if total is None else total
    return QueryResult(form="select", vars=["c"], rows=rows, total=total, truncated=total > len(rows))


def seed(**cfg):
    return judge_from_config("seed", JudgesConfig(seed=SeedJudgeConfig(**cfg)))


def test_uri_tail_match():
    verdict = seed().judge(Q, gold_of([12345]), Candidate(items=["12345"]))
    assert verdict.correct and verdict.path == "exact" and verdict.matched == 1
    assert normalize_value("http://x/entities/ConsumerComplaint/12345") == "12345"
    assert normalize_value("http://x/a/B%40c/") == "b@c"


@pytest.mark.parametrize(
    ("a", "b"),
    [("  Foo   BAR ", "foo bar"), ("1.50", "1.5"), ("-0.20", "-.2"), ("+7", "7"), ("1e3", "1000"), ("-0.0", "0")],
)
def test_literal_and_number_normalization(a, b):
    assert normalize_value(a) == normalize_value(b)


def test_exact_path_rejects_missing_and_extra_items():
    gold = gold_of(range(5))
    assert seed().judge(Q, gold, Candidate(items=[0, 1, 2, 3, 4])).correct
    missing = seed().judge(Q, gold, Candidate(items=[0, 1, 2, 3]))
    assert not missing.correct and missing.missing == 1
    extra = seed().judge(Q, gold, Candidate(items=[0, 1, 2, 3, 4, 99]))
    assert not extra.correct and extra.unmatched == 1


def test_membership_path_precision_threshold():
    gold = gold_of(range(400))
    seven_of_ten = seed().judge(Q, gold, Candidate(items=[*range(7), 1001, 1002, 1003]))
    assert seven_of_ten.correct and seven_of_ten.path == "membership"
    six_of_ten = seed().judge(Q, gold, Candidate(items=[*range(6), 1001, 1002, 1003, 1004]))
    assert not six_of_ten.correct and "precision 0.600" in six_of_ten.reason


def test_five_item_minimum():
    gold = gold_of(range(400))
    assert not seed().judge(Q, gold, Candidate(items=[0, 1, 2, 3])).correct
    assert seed().judge(Q, gold, Candidate(items=[0, 1, 2, 3, 4])).correct
    # duplicates do not count twice toward the minimum
    assert not seed().judge(Q, gold, Candidate(items=[0, 0, 1, 2, 3])).correct


def test_threshold_between_paths_is_configurable():
    gold = gold_of(range(20))
    assert seed().judge(Q, gold, Candidate(items=list(range(5)))).path == "membership"
    assert seed(exact_below=21).judge(Q, gold, Candidate(items=list(range(5)))).path == "exact"


def test_ask_and_count_compare_as_values():
    ask = QueryResult(form="ask", boolean=False, total=1)
    assert seed().judge(Q, ask, Candidate(items=[False])).correct
    assert seed().judge(Q, ask, Candidate(items=["false"])).correct
    assert not seed().judge(Q, ask, Candidate(items=[True])).correct
    count = QueryResult(form="select", vars=["n"], rows=[[Term.literal("42", XSD_INT)]], total=1)
    assert seed().judge(Q, count, Candidate(items=[42])).correct
    assert seed().judge(Q, count, Candidate(items=["42.0"])).correct
    assert not seed().judge(Q, count, Candidate(items=[42, 43])).correct


def test_executed_result_is_judged_row_by_row():
    gold = gold_of(range(3))
    same = gold_of(range(3))
    assert seed().judge(Q, gold, Candidate(result=same)).correct
    labelled = QueryResult(form="select", vars=["c", "l"], rows=[[Term.iri(BASE + str(i)), Term.literal(f"c{i}")] for i in range(3)], total=3)
    assert seed().judge(Q, gold, Candidate(result=labelled)).correct


def test_empty_gold_and_no_answer():
    empty = gold_of([])
    assert seed().judge(Q, empty, Candidate(items=[])).correct
    assert not seed().judge(Q, empty, Candidate(items=["x"])).correct
    none = seed().judge(Q, empty, Candidate())
    assert not none.correct and none.path == "no_answer"


def test_verdict_records_judge_identity_and_thresholds_change_version():
    verdict = seed().judge(Q, gold_of([1]), Candidate(items=["1"]))
    assert verdict.judge == "seed" and verdict.version.startswith(f"seed-{SEED_LOGIC}+") and len(verdict.config_sha256) == 64
    assert seed().version != seed(min_precision=0.8).version
    assert seed().version == seed().version


def test_judges_only_from_config():
    with pytest.raises(InputError, match="unknown judge"):
        judge_from_config("lenient", JudgesConfig())
    with pytest.raises(InputError, match="primary judge"):
        judges_from_config(JudgesConfig(primary="exec", enabled=("seed",)))
