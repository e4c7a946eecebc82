"""Model failures are judged wrong; harness failures are excluded and counted (issue 12, part 1).

A realistic two-KG holdout of 50 questions (25 staff lookups, 25 shop prices) on the embedded
store, with replays and systems that fail in each way. Every failure kind lands on its side."""

from __future__ import annotations

import json

import pytest

from kgeval.checklists import pre_eval_checklist
from kgeval.config import KgevalConfig, RunConfig
from kgeval.errors import StoreError
from kgeval.holdout import load_holdout
from kgeval.reports import build_report, render_markdown
from kgeval.runs import ResultsDB, execute_run
from kgeval.systems import OracleSystem, ReplaySystem, SystemOutput
from tests.conftest import REPO, write_holdout
from tests.stores.dotted_names import CASES, REJECTED, SPORTS_TTL, O, R

CHECKLIST = pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")
S, P = "http://example.org/staff/", "http://example.org/shop/"
STAFF_TTL = "".join(
    f'<{S}e{i}> a <{S}Employee> ; <http://www.w3.org/2000/01/rdf-schema#label> "Person {i}" ; <{S}memberOf> <{S}dept{i % 4}> .\n'
    for i in range(25)
) + "".join(f'<{S}dept{d}> a <{S}Department> ; <http://www.w3.org/2000/01/rdf-schema#label> "Dept {d}" .\n' for d in range(4))
SHOP_TTL = "".join(f'<{P}p{i}> a <{P}Product> ; <{P}price> "{i}.25"^^<http://www.w3.org/2001/XMLSchema#decimal> .\n' for i in range(25))


def _questions(kg: str) -> list[dict]:
    if kg == "staff":
        return [
            {"id": f"staff-{i:02d}", "question": f"Which department is Person {i} a member of?", "domain": "hr",
             "sparql": f"PREFIX s: <{S}>\nSELECT ?d WHERE {{ s:e{i} s:memberOf ?d }}"}
            for i in range(25)
        ]
    return [
        {"id": f"shop-{i:02d}", "question": f"What does product {i} cost?", "domain": "retail",
         "sparql": f"PREFIX p: <{P}>\nSELECT ?price WHERE {{ p:p{i} p:price ?price }}"}
        for i in range(25)
    ]


@pytest.fixture(scope="module")
def fifty(tmp_path_factory):
    """A sealed two-KG holdout of 50 questions and its gold."""
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.stores import EmbeddedStore

    root = tmp_path_factory.mktemp("fifty")
    write_holdout(root / "holdout", _questions("staff"), STAFF_TTL, "staff")
    write_holdout(root / "holdout", _questions("shop"), SHOP_TTL, "shop")
    holdout = load_holdout(root / "holdout")
    report = rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), root / "gold")
    assert report.ok
    return holdout, root / "gold"


# broken SPARQL as models write it: a missing brace, an undeclared prefix, a function the
# engine lacks, an update, a mixed-case keyword typo, a SERVICE call
INVALID = [
    ("invalid_sparql", "SELECT ?d WHERE { <%s> <%smemberOf> ?d "),
    ("invalid_sparql", "select ?d where { s:e1 s:memberOf ?d }  # no PREFIX line"),
    ("invalid_sparql", "SELECT ?x WHERE { BIND(<http://jena.apache.org/ARQ/function#kgeval-guess>(1) AS ?x) }"),
    ("refused", "INSERT DATA { <http://x/a> <http://x/b> <http://x/c> }"),
    ("invalid_sparql", "SELEcT ?d WHER { ?s ?p ?d }"),
    ("refused", "SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }"),
]


def _reference_records(holdout) -> list[dict]:
    return [{"kg": q.kg, "question_id": q.id, "sparql": q.sparql} for q in holdout.questions()]


def _run(holdout, gold, system, tmp_path, **run):
    config = KgevalConfig(run=RunConfig(seeds=1, retry_backoff_s=0, **run))
    with ResultsDB(tmp_path / "r.duckdb") as db:
        meta = execute_run(holdout, gold, system, config, db, checklist=CHECKLIST)
        return build_report(db, meta.run_id), db.attempts(meta.run_id)


def _replay(tmp_path, records):
    path = tmp_path / "replay.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return ReplaySystem(path)


def test_ten_invalid_of_fifty_scores_them_wrong_over_fifty(fifty, tmp_path):
    holdout, gold = fifty
    records = _reference_records(holdout)
    for n in range(10):  # 5 on each KG
        kind, text = INVALID[n % len(INVALID)]
        index = n if n < 5 else 25 + n
        records[index]["sparql"] = text % (S + "e1", S) if "%s" in text else text
    report, attempts = _run(holdout, gold, _replay(tmp_path, records), tmp_path)
    assert report.overall is not None and (report.overall.correct, report.overall.n) == (40, 50)
    assert report.harness.withheld is None and report.harness.errors == 0 and not report.excluded
    causes = {(c.group, c.cause): c.questions for c in report.wrong_causes}
    assert causes[("overall", "invalid_sparql")] + causes[("overall", "refused")] == 10
    assert causes[("overall", "refused")] == 3 and causes[("staff", "invalid_sparql")] + causes[("staff", "refused")] == 5
    md = render_markdown(report)
    assert "## Accuracy: 80.0%" in md and "| overall | invalid SPARQL | 7 | 14.0% |" in md
    assert "accuracy if every excluded attempt were wrong: 80.0%" in md


class FlakySystem(OracleSystem):
    """The oracle, but the endpoint fails (transport) on the named questions every try."""

    def __init__(self, failing: set[str]) -> None:
        super().__init__()
        self.failing = failing

    def respond(self, question, seed):
        if question.id in self.failing:
            return SystemOutput(error="connection reset by peer", error_kind="transport")
        return super().respond(question, seed)


@pytest.mark.parametrize(("failures", "withheld"), [(5, False), (6, True)])
def test_transport_failures_are_excluded_and_withhold_above_ten_percent(fifty, tmp_path, failures, withheld):
    holdout, gold = fifty
    failing = {q.id for q in holdout.questions()[:failures]}
    report, _ = _run(holdout, gold, FlakySystem(failing), tmp_path)
    assert len(report.excluded) == failures and {e.kind for e in report.excluded} == {"transport"}
    if withheld:
        assert report.overall is None and "above the 10% limit" in report.harness.withheld
        return
    assert (report.overall.correct, report.overall.n) == (45, 45)
    assert (report.if_excluded_wrong.correct, report.if_excluded_wrong.n) == (45, 50)
    assert "accuracy if every excluded attempt were wrong: 90.0% [" in render_markdown(report)


def test_store_down_is_the_harness_and_engine_rejection_the_model(fifty, tmp_path):
    from kgeval.judges import judges_from_config
    from kgeval.runs._attempt import run_attempt
    from kgeval.stores import open_store
    from kgeval.config import StoreConfig
    from kgeval.gold import load_gold

    holdout, gold_dir = fifty
    question = holdout.questions()[0]
    entry = load_gold(gold_dir)[question.id]
    config = KgevalConfig(run=RunConfig(seeds=1, retry_backoff_s=0, candidate_timeout_s=60))  # the rejection comes at once: no machine needs 60 s
    judges = judges_from_config(config.judges)
    # a real SPARQL store on a loopback port nothing listens on: the store is down
    down = open_store(StoreConfig(kind="sparql", endpoint="http://127.0.0.1:9/query", data_version="x"), holdout.kgs[0].files)
    system = _replay(tmp_path, _reference_records(holdout))
    attempt, verdicts = run_attempt(question, 0, system, down, judges, entry.result, config)
    assert (attempt.state, attempt.error_kind, verdicts) == ("error", "store", [])
    # the embedded engine rejects an unknown function: the query's fault
    from kgeval.stores import EmbeddedStore

    bad = _replay(tmp_path, [{"kg": question.kg, "question_id": question.id, "sparql": INVALID[2][1]}])
    attempt, verdicts = run_attempt(question, 0, bad, EmbeddedStore(holdout.kgs[0].files), judges, entry.result, config)
    assert attempt.state == "answered" and {(v.path, v.correct) for v in verdicts} == {("invalid_sparql", False)}
    assert issubclass(type(StoreError("x")), StoreError)


def test_candidate_timeout_counts_as_configured(fifty, tmp_path):
    from kgeval.errors import QueryTimeout
    from kgeval.gold import load_gold
    from kgeval.judges import judges_from_config
    from kgeval.runs._attempt import run_attempt
    from kgeval.stores import EmbeddedStore

    holdout, gold_dir = fifty
    question = holdout.questions()[0]
    entry = load_gold(gold_dir)[question.id]

    class SlowStore(EmbeddedStore):  # the engine's own deadline, hit: QueryTimeout as every store raises it
        def execute_candidate(self, query, *, timeout_s, row_cap):
            raise QueryTimeout(f"query ran longer than {timeout_s:g} s")

    store = SlowStore(holdout.kgs[0].files)
    system = _replay(tmp_path, _reference_records(holdout))
    for counts_as, state in (("wrong", "answered"), ("error", "error")):
        config = KgevalConfig(run=RunConfig(seeds=1, candidate_timeout_s=0.5, candidate_timeout_counts_as=counts_as))
        attempt, verdicts = run_attempt(question, 0, system, store, judges_from_config(config.judges), entry.result, config)
        assert attempt.state == state
        if counts_as == "wrong":
            assert {v.path for v in verdicts} == {"candidate_timeout"} and not any(v.correct for v in verdicts)
        else:
            assert attempt.error_kind == "candidate_timeout" and verdicts == []


def test_answer_list_beside_failing_sparql_is_judged_as_before(fifty, tmp_path):
    from kgeval.gold import load_gold
    from kgeval.judges import judges_from_config
    from kgeval.runs._attempt import run_attempt
    from kgeval.stores import EmbeddedStore

    holdout, gold_dir = fifty
    question = next(q for q in holdout.questions() if q.id == "staff-01")
    entry = load_gold(gold_dir)[question.id]
    record = {"kg": question.kg, "question_id": question.id, "sparql": "SELECT ?d WHERE {", "answer": [f"{S}dept1"]}
    config = KgevalConfig(run=RunConfig(seeds=1))
    attempt, verdicts = run_attempt(question, 0, _replay(tmp_path, [record]), EmbeddedStore(holdout.kg("staff").files), judges_from_config(config.judges), entry.result, config)
    by_judge = {v.judge: v for v in verdicts}
    assert by_judge["seed"].correct and by_judge["seed"].path == "exact"  # the list is judged
    assert not by_judge["execution"].correct and by_judge["execution"].path == "invalid_sparql"  # the SPARQL is the answer


def test_compare_shows_a_question_turning_invalid_as_a_flip(fifty, tmp_path):
    from kgeval.reports import basic_comparability, compare_runs, render_comparison_markdown

    holdout, gold = fifty
    base = _reference_records(holdout)
    base[0]["sparql"] = base[1]["sparql"]  # A: shop-00 answered with shop-01's query: a wrong result
    cand = [dict(r) for r in base]
    cand[0]["sparql"] = INVALID[0][1] % (S + "e1", S)  # B: shop-00 now invalid (wrong -> invalid)
    cand[2]["sparql"] = INVALID[3][1]  # B: shop-02 refused (right -> refused)
    config = KgevalConfig(run=RunConfig(seeds=1))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with ResultsDB(tmp_path / "r.duckdb") as db:
        run_a = execute_run(holdout, gold, _replay(tmp_path / "a", base), config, db, checklist=CHECKLIST)
        run_b = execute_run(holdout, gold, _replay(tmp_path / "b", cand), config, db, checklist=CHECKLIST)
        c = compare_runs(db, run_a.run_id, run_b.run_id, basic_comparability(run_a, run_b))
    assert c.paired == 50 and c.unpaired == 0  # nothing a model did leaves the paired table
    flips = {f.question_id: (f.a_outcome, f.b_outcome) for f in c.flips}
    assert flips == {"shop-00": ("wrong_result", "invalid_sparql"), "shop-02": ("correct", "refused")}
    md = render_comparison_markdown(c)
    assert "A wrong → B wrong (invalid SPARQL)" in md and "A right → B wrong" in md


def test_predeclared_prefixes_let_the_query_run_and_the_verdict_says_so(tmp_path):
    """On the embedded store (Oxigraph predeclares nothing) a query lacking its PREFIX lines is
    invalid by default; with `store.predeclared_prefixes: virtuoso` it runs as on Virtuoso."""
    from kgeval.config import GoldConfig, StoreConfig
    from kgeval.gold import load_gold, rebuild_gold
    from kgeval.judges import judges_from_config
    from kgeval.runs._attempt import run_attempt
    from kgeval.stores import EmbeddedStore
    from tests.conftest import MINI_QUESTIONS

    root = write_holdout(tmp_path / "holdout")
    holdout = load_holdout(root)
    assert rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold").ok
    question = next(q for q in holdout.questions() if q.id == "mini-08")  # the German name of sales
    entry = load_gold(tmp_path / "gold")[question.id]
    sparql = "SELECT ?l WHERE { <http://example.org/mini/entities/sales> rdfs:label ?l FILTER(lang(?l) = 'de') }"
    system = _replay(tmp_path, [{"kg": "mini", "question_id": "mini-08", "sparql": sparql}])
    store = EmbeddedStore(holdout.kgs[0].files)
    for prefixes, expected in (({}, "invalid_sparql"), ("virtuoso", None)):
        config = KgevalConfig(store=StoreConfig(predeclared_prefixes=prefixes), run=RunConfig(seeds=1))
        attempt, verdicts = run_attempt(question, 0, system, store, judges_from_config(config.judges), entry.result, config)
        execution = next(v for v in verdicts if v.judge == "execution")
        if expected:
            assert execution.path == expected and not execution.correct
        else:
            assert execution.correct and execution.details["predeclared_prefixes"] == ["rdfs"]
            assert "predeclared prefixes rdfs" in execution.reason and attempt.extra["predeclared_prefixes"] == ["rdfs"]
    assert MINI_QUESTIONS


def test_every_query_error_class_lands_on_its_side(fifty):
    """Classification is keyed on kgeval.errors' classes: the model's failures, then the
    harness's (a store error from a store that cannot run a trivial query either)."""
    from kgeval.errors import QueryOverBudget, QueryRefused, QueryRejected, QuerySyntaxError, QueryTimeout
    from kgeval.runs._attempt import execute_candidate
    from kgeval.stores import EmbeddedStore

    holdout, _ = fifty

    def raising(exc):
        class Failing(EmbeddedStore):  # candidates and the store's health query both fail
            def execute(self, query, *, timeout_s, row_cap):
                raise exc

            def execute_candidate(self, query, *, timeout_s, row_cap):
                raise exc

        return Failing(holdout.kgs[0].files)

    expected = {
        QuerySyntaxError("does not parse"): ("invalid_sparql", None),
        QueryRejected("engine rejected it", http_status=400): ("invalid_sparql", None),
        QueryRefused("updates are refused"): ("refused", None),
        QueryTimeout("ran longer than 30 s"): ("candidate_timeout", None),
        QueryOverBudget("over the memory budget"): ("over_budget", None),
        StoreError("connection refused"): (None, "store"),
        StoreError("HTTP 503 busy", http_status=503): (None, "store"),
        StoreError("HTTP 500 engine fault", http_status=500): (None, "store"),  # the health query fails too
    }
    for exc, sides in expected.items():
        execution = execute_candidate("SELECT ?s WHERE { ?s ?p ?o }", raising(exc), KgevalConfig())
        assert (execution.failure, execution.harness) == sides, exc


@pytest.fixture(scope="module")
def sports_store(tmp_path_factory):
    """The embedded store on the sports KG: candidates run in its sandbox workers."""
    from kgeval.stores import EmbeddedStore

    path = tmp_path_factory.mktemp("sports") / "kg.ttl"
    path.write_text(SPORTS_TTL)
    store = EmbeddedStore([path])
    yield store
    store.close()


def _answer(execution) -> set | bool:
    result = execution.result
    return result.boolean if result.form == "ask" else {tuple(t.value for t in row) for row in result.rows}


@pytest.mark.parametrize("case", sorted(CASES))
def test_candidate_names_with_several_dots_are_not_invalid_sparql(case, sports_store):
    """A model naming `dbr:A.C._Milan` wrote valid SPARQL: it was scored invalid_sparql, since
    Oxigraph refused the guard's text (or, for `dbr:Linux_2.6.32` in VALUES, answered nothing)."""
    from kgeval.runs._attempt import execute_candidate

    query, expected = CASES[case]
    execution = execute_candidate(query, sports_store, KgevalConfig())
    assert execution.failure is None and execution.error is None, execution.error
    assert execution.resources.sandboxed and _answer(execution) == expected


def test_a_predeclared_prefix_with_a_dotted_name_runs(sports_store):
    """No PREFIX line: the store's predeclared prefixes are added, as in production."""
    from kgeval.config import StoreConfig
    from kgeval.runs._attempt import execute_candidate

    config = KgevalConfig(store=StoreConfig(predeclared_prefixes={"dbo": O, "dbr": R}))
    execution = execute_candidate("select ?p where { ?p dbo:team dbr:A.C._Milan } # no prefixes", sports_store, config)
    assert (execution.failure, execution.prefixes) == (None, ("dbo", "dbr")), execution.error
    assert _answer(execution) == {(R + "Paolo_Maldini",), (R + "Zlatan_Ibrahimović",)}


def test_the_dbpedia_endpoints_prefixes_by_name(sports_store):
    """`store.predeclared_prefixes: dbpedia`: a TEXT2SPARQL or QALD system's query written for
    DBpedia's endpoint, with no PREFIX lines (`dbo:`, `dbr:`, old `dbpedia-owl:`), runs as it ran
    there; a prefix that endpoint does not declare (`res:`) is still the model's invalid SPARQL."""
    from kgeval.runs._attempt import execute_candidate

    config = KgevalConfig.model_validate({"store": {"predeclared_prefixes": "dbpedia"}})
    execution = execute_candidate("SELECT ?p WHERE { ?p dbpedia-owl:team dbr:A.C._Milan }", sports_store, config)
    assert (execution.failure, set(execution.prefixes)) == (None, {"dbpedia-owl", "dbr"}), execution.error
    assert _answer(execution) == {(R + "Paolo_Maldini",), (R + "Zlatan_Ibrahimović",)}
    execution = execute_candidate("ASK { dbpedia:Linux_2.6.32 dbo:developer dbr:Linus_Torvalds }", sports_store, config)
    assert execution.failure is None and _answer(execution) is True
    # a text starting with a byte-order mark runs as the same text without it (the PREFIX lines go
    # before the text, and a mark inside a text is refused)
    execution = execute_candidate("\ufeffASK { dbpedia:Linux_2.6.32 dbo:developer dbr:Linus_Torvalds }", sports_store, config)
    assert execution.failure is None and _answer(execution) is True and set(execution.prefixes) == {"dbpedia", "dbo", "dbr"}
    assert execute_candidate("SELECT ?p WHERE { ?p dbo:team res:A.C._Milan }", sports_store, config).failure == "invalid_sparql"
    assert execute_candidate("SELECT ?p WHERE { ?p dbo:team dbr:A.C._Milan }", sports_store, KgevalConfig()).failure == "invalid_sparql"


def test_an_engine_error_on_a_candidate_points_into_the_approved_text(sports_store):
    from kgeval.runs._attempt import execute_candidate

    execution = execute_candidate(REJECTED, sports_store, KgevalConfig())
    assert execution.failure == "invalid_sparql"
    assert "error at 1:" in execution.error and "of the text the guard approved (not the query as written)" in execution.error
    assert "BIND ( 1 AS ?player ) }⟨here⟩" in execution.error
