"""Accepts are checked again on their question's suite; the report gives test-suite accuracy,
the coincidental accepts with the neighbour where each diverges, and the accepts it could not
check; the audit sampler draws the coincidental ones first; compare refuses a run judged with
suites beside one judged without."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kgeval.audit._sample import accepted_items, draw_sample
from kgeval.checklists import pre_eval_checklist
from kgeval.config import KgevalConfig, RunConfig, SuiteConfig
from kgeval.gold import load_gold, read_suites
from kgeval.holdout import load_holdout
from kgeval.reports import build_report
from kgeval.runs import ChecklistFailed, ResultsDB, blocking, comparability, execute_run
from kgeval.systems import OracleSystem, ReplaySystem
from tests.suites.conftest import REPO

CHECKLIST = pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")


def _run(holdout: Path, gold: Path, system, db_path: Path, **config):
    with ResultsDB(db_path) as db:
        meta = execute_run(load_holdout(holdout), gold, system, KgevalConfig(run=RunConfig(seeds=1), **config), db, checklist=CHECKLIST)
    with ResultsDB(db_path, read_only=True) as db:
        return meta, build_report(db, meta.run_id), {(q, s): v for q, s, v in db.verdicts(meta.run_id) if v.judge == meta.primary_judge}


def test_the_oracle_passes_every_suite(hr_suites, tmp_path: Path) -> None:
    holdout, gold, _ = hr_suites
    meta, report, verdicts = _run(holdout, gold, OracleSystem(), tmp_path / "r.duckdb")
    assert meta.suite_manifest_sha256 == read_suites(gold).manifest_sha256
    assert report.test_suite_accuracy.correct == report.test_suite_accuracy.n == report.overall.n == 17
    assert report.suites.coincidental == [] and report.suites.unchecked == 0
    for verdict in verdicts.values():
        outcome = verdict.details["suite"]
        assert outcome["checked"] and outcome["passed"] and all(o["correct"] for o in outcome["neighbours"])


def test_hard_coded_answers_are_coincidental_and_lists_unchecked(hr_suites, tmp_path: Path) -> None:
    holdout, gold, _ = hr_suites
    entries = load_gold(gold)
    employees = " ".join(f"<{row[0].value}>" for row in entries["hr-02"].result.rows)
    count = entries["hr-03"].result.rows[0][0].value
    replay = tmp_path / "replay.jsonl"
    records = [
        {"kg": "hr", "question_id": "hr-02", "sparql": f"SELECT ?employee WHERE {{ VALUES ?employee {{ {employees} }} }}"},
        {"kg": "hr", "question_id": "hr-03", "sparql": f"SELECT ({count} AS ?count) WHERE {{}}"},
        {"kg": "hr", "question_id": "hr-01", "answer": [entries["hr-01"].result.rows[0][0].value]},
    ]
    others = [{"kg": "hr", "question_id": q.id, "sparql": q.sparql} for q in load_holdout(holdout).questions() if q.id not in ("hr-01", "hr-02", "hr-03")]
    replay.write_text("".join(json.dumps(r) + "\n" for r in records + others))
    meta, report, verdicts = _run(holdout, gold, ReplaySystem(replay, load_holdout(holdout)), tmp_path / "r.duckdb")
    suites = read_suites(gold)
    assert report.overall.correct == report.overall.n == 17  # each is accepted on the shipped KG
    assert report.test_suite_accuracy.correct == 14
    coincidental = {c.question_id: c for c in report.suites.coincidental}
    assert set(coincidental) == {"hr-02", "hr-03"}
    for qid, c in coincidental.items():
        assert c.neighbour in suites.suite(qid).neighbours
        assert verdicts[(qid, 0)].details["suite"]["diverges"] == c.neighbour
    assert report.suites.unchecked == 1 and "answer list only" in next(iter(report.suites.unchecked_why))
    with ResultsDB(tmp_path / "r.duckdb", read_only=True) as db:
        sample = draw_sample(meta.run_id, accepted_items(db, meta.run_id, load_gold(gold)), 3, seed=0)
    assert {i.question_id for i in sample.items[:2]} == {"hr-02", "hr-03"}  # drawn first
    assert sample.items[0].stratum.startswith("coincidental / diverges on hr~n")


def test_compare_refuses_runs_judged_with_and_without_suites(hr_suites, tmp_path: Path) -> None:
    holdout, gold, _ = hr_suites
    db = tmp_path / "r.duckdb"
    with_suites, *_ = _run(holdout, gold, OracleSystem(), db)
    without, report, verdicts = _run(holdout, gold, OracleSystem(), db, suite=SuiteConfig(check_accepts=False))
    assert without.suite_manifest_sha256 is None and report.test_suite_accuracy is None
    assert all("suite" not in v.details for v in verdicts.values())
    differences = blocking(comparability(with_suites, without))
    assert [d.field for d in differences] == ["suite_manifest_sha256"]
    compare = [sys.executable, "-m", "kgeval", "compare", with_suites.run_id, without.run_id, "--db", str(db)]
    refused = subprocess.run(compare, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert refused.returncode == 1 and "test suites (judged with and without them" in refused.stderr
    forced = subprocess.run([*compare, "--force"], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert forced.returncode == 0, forced.stderr


def test_the_checklist_requires_suites_when_configured(hr_suites, tmp_path: Path) -> None:
    holdout, gold, _ = hr_suites
    bare = tmp_path / "gold"
    shutil.copytree(gold, bare, symlinks=True)
    shutil.rmtree(bare / "suites")
    required = {"suite": SuiteConfig(required=True)}
    with pytest.raises(ChecklistFailed, match="suites: no suites at"):
        _run(holdout, bare, OracleSystem(), tmp_path / "a.duckdb", **required)
    _run(holdout, bare, OracleSystem(), tmp_path / "b.duckdb")  # not required: the run goes on, judged without suites
    meta, report, _ = _run(holdout, gold, OracleSystem(), tmp_path / "c.duckdb", **required)
    assert report.test_suite_accuracy.correct == 17
    with ResultsDB(tmp_path / "c.duckdb", read_only=True) as db:
        receipt = {i.item: i for i in db.receipt(meta.run_id).items}
    assert receipt["suites"].passed and "current for every question" in receipt["suites"].observed


def test_damaged_suites_refuse_the_run(hr_suites, tmp_path: Path) -> None:
    holdout, gold, _ = hr_suites
    damaged = tmp_path / "gold"
    shutil.copytree(gold, damaged, symlinks=True)
    record = next((damaged / "suites" / "current" / "suites").iterdir())
    record.write_text(record.read_text().replace('"hr-01"', '"hr-99"', 1))
    with pytest.raises(ChecklistFailed, match="suites do not verify"):
        _run(holdout, damaged, OracleSystem(), tmp_path / "a.duckdb")


def test_show_puts_the_neighbours_rows_beside_its_gold(hr_suites, tmp_path: Path) -> None:
    holdout, gold, _ = hr_suites
    count = load_gold(gold)["hr-03"].result.rows[0][0].value
    replay = tmp_path / "replay.jsonl"
    records = [{"kg": "hr", "question_id": q.id, "sparql": q.sparql} for q in load_holdout(holdout).questions() if q.id != "hr-03"]
    records.append({"kg": "hr", "question_id": "hr-03", "sparql": f"SELECT ({count} AS ?count) WHERE {{}}"})
    replay.write_text("".join(json.dumps(r) + "\n" for r in records))
    meta, _, verdicts = _run(holdout, gold, ReplaySystem(replay, load_holdout(holdout)), tmp_path / "r.duckdb")
    neighbour = verdicts[("hr-03", 0)].details["suite"]["diverges"]
    there = read_suites(gold).entry(neighbour, "hr-03").result.rows[0][0].value
    shown = subprocess.run(
        [sys.executable, "-m", "kgeval", "show", meta.run_id, "hr-03", "--db", str(tmp_path / "r.duckdb"), "--format", "json"],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    sample = json.loads(shown.stdout)
    assert sample["suite_neighbour"] == neighbour
    assert [r["cells"][0].split("^^")[0] for r in sample["suite_gold_table"]["rows"]] == [there]
    assert [r["cells"][0].split("^^")[0] for r in sample["suite_answer_table"]["rows"]] == [count]
    text = subprocess.run([sys.executable, "-m", "kgeval", "show", meta.run_id, "hr-03", "--db", str(tmp_path / "r.duckdb")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)  # fmt: skip
    assert "diverges" in text.stdout and f"gold of {neighbour}" in text.stdout


def test_seeds_checked_at_once_share_one_check(hr_suites, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two attempts with the same query checked at the same time (a run dispatches a question's
    seeds together) run it once on each neighbour: the second waits for the first's outcome."""
    import threading
    from concurrent.futures import Future

    import kgeval.runs._suite_check as suite_check
    from kgeval.judges import judges_from_config

    holdout, gold, _ = hr_suites
    cfg = KgevalConfig()
    question = next(q for q in load_holdout(holdout).questions() if q.id == "hr-03")
    checker = suite_check.SuiteChecker(read_suites(gold), cfg, judges_from_config(cfg.judges)[cfg.judges.primary])
    first_in, release, second_waits = threading.Event(), threading.Event(), threading.Event()
    runs: list[str] = []
    checking: set[int] = set()
    on = checker._on

    def held(q, sparql, neighbour, *executed):  # noqa: ANN001, ANN202 - the first check holds until the second has arrived
        runs.append(neighbour)
        checking.add(threading.get_ident())
        (second_waits if len(checking) > 1 else first_in).set()  # a second thread checking too: it did not wait
        assert release.wait(60)
        return on(q, sparql, neighbour, *executed)

    class Watched(Future):
        def result(self, timeout=None):  # noqa: ANN001, ANN202
            second_waits.set()
            return super().result(timeout)

    monkeypatch.setattr(checker, "_on", held)
    monkeypatch.setattr(suite_check, "Future", Watched, raising=False)
    outcomes: list[dict] = []
    threads = [threading.Thread(target=lambda: outcomes.append(checker.outcome(question, question.sparql))) for _ in range(2)]
    threads[0].start()
    assert first_in.wait(60)
    threads[1].start()
    assert second_waits.wait(60)
    release.set()
    for t in threads:
        t.join(60)
    checker.close()
    assert runs == checker.suites.suite(question.id).neighbours  # once on each neighbour, not twice
    assert len(outcomes) == 2 and outcomes[0] == outcomes[1] and outcomes[0]["checked"] and outcomes[0]["passed"]


def test_the_checkers_outcomes_are_bounded_by_what_a_run_needs(hr_suites) -> None:
    """The outcomes a checker keeps for seeds that repeat a query are those of the questions in
    flight (`run.concurrency` x `run.seeds`, twice over), least recently used out, not every
    text a run ever checked: an evicted text asked again is checked again, with the same outcome."""
    import kgeval.runs._suite_check as suite_check
    from kgeval.judges import judges_from_config

    holdout, gold, _ = hr_suites
    cfg = KgevalConfig(run=RunConfig(concurrency=1, seeds=2))
    question = next(q for q in load_holdout(holdout).questions() if q.id == "hr-03")
    checker = suite_check.SuiteChecker(read_suites(gold), cfg, judges_from_config(cfg.judges)[cfg.judges.primary])
    checked: list[str] = []
    outcome = checker._outcome
    checker._outcome = lambda q, sparql: checked.append(sparql) or outcome(q, sparql)  # type: ignore[method-assign]
    texts = [f"{question.sparql}\n# attempt {i}\n" for i in range(10)]
    try:
        first = [checker.outcome(question, t) for t in texts]
        assert len(checker._outcomes) == 4 and checked == texts
        assert checker.outcome(question, texts[-1]) == first[-1] and checked == texts  # held: not checked again
        assert checker.outcome(question, texts[0]) == first[0] and checked == [*texts, texts[0]]  # evicted: checked again
    finally:
        checker.close()
    assert all(o["checked"] and o["passed"] for o in first)


def test_a_result_equal_to_a_neighbours_gold_gets_the_outcome_the_full_judge_gives(hr_suites) -> None:
    """A result whose cells are a neighbour gold's is handed that gold's result, and the judge's
    accept of it is reused for the question and neighbour: every outcome is the one judging each
    result in full gives (reference queries, the same ones again, answers that differ on
    neighbours or fail), and the shortcut was taken."""
    import kgeval.runs._suite_check as suite_check
    from kgeval.judges import judges_from_config

    holdout, gold, _ = hr_suites
    cfg = KgevalConfig()
    judge = judges_from_config(cfg.judges)[cfg.judges.primary]
    questions = list(load_holdout(holdout).questions())
    asked = [(q, q.sparql) for q in questions]
    asked += [(q, q.sparql.replace("SELECT", "SELECT DISTINCT", 1)) for q in questions if "SELECT" in q.sparql]  # other cells or not
    asked += [(q, q.sparql + "\nLIMIT 1") for q in questions if "LIMIT" not in q.sparql]  # cut on some neighbours
    asked += [(questions[0], "SELECT ?x WHERE { ?x ?p ?o } LIMIT 2"), (questions[1], "ASK { ?s ?p ?o }"), (questions[2], "SELECT ?x WHERE { ?x ?p }")]

    class Full(suite_check.SuiteChecker):  # every result judged in full
        def __init__(self, *args) -> None:  # noqa: ANN002
            super().__init__(*args)
            self._gold_accepts = None

        def _held(self, neighbour: str, question_id: str):  # noqa: ANN202
            return suite_check._Held(self.suites.entry(neighbour, question_id), None)

    fast, full = suite_check.SuiteChecker(read_suites(gold), cfg, judge), Full(read_suites(gold), cfg, judge)
    try:
        shortcut = [fast.outcome(q, sparql) for q, sparql in asked] + [fast._outcome(q, q.sparql) for q in questions]
        judged = [full.outcome(q, sparql) for q, sparql in asked] + [full._outcome(q, q.sparql) for q in questions]
    finally:
        fast.close()
        full.close()
    assert shortcut == judged
    assert fast._gold_accepts and len(fast._gold_accepts) == sum(len(read_suites(gold).suite(q.id).neighbours) for q in questions)
    assert any(not o["passed"] for o in judged if o.get("checked")) and all(o["checked"] for o in judged[: len(questions)])


def test_the_reference_text_runs_on_no_neighbour_and_one_character_more_does(hr_suites) -> None:
    """An accept whose text is the question's reference (line endings and surrounding whitespace
    aside) is given each neighbour's gold as its result, executing nothing: no neighbour
    sandbox opens, and the outcome is the one executing it gives. A text one character longer
    inside is executed."""
    import kgeval.runs._suite_check as suite_check
    from kgeval.judges import judges_from_config

    holdout, gold, _ = hr_suites
    cfg = KgevalConfig()
    judge = judges_from_config(cfg.judges)[cfg.judges.primary]
    questions = list(load_holdout(holdout).questions())

    class Executing(suite_check.SuiteChecker):  # every text executed on the neighbours
        _is_reference = staticmethod(lambda question, sparql: False)

    fast, executing = suite_check.SuiteChecker(read_suites(gold), cfg, judge), Executing(read_suites(gold), cfg, judge)
    texts = [(q, text) for q in questions for text in (q.sparql, "\r\n " + q.sparql.replace("\n", "\r\n") + "\n\t")]
    try:
        given = [fast.outcome(q, text) for q, text in texts]
        assert fast.closeables() == []  # nothing executed: the neighbours' sandbox never opened
        executed = [executing.outcome(q, text) for q, text in texts]
        assert given == executed and all(o["checked"] and o["passed"] for o in given)
        near = questions[0].sparql.replace("WHERE", "WHERE ", 1)
        assert near != questions[0].sparql and fast.outcome(questions[0], near)["checked"]
        assert len(fast.closeables()) == 1  # one character more: executed on the neighbours
    finally:
        fast.close()
        executing.close()


def test_a_run_of_reference_answers_loads_no_neighbour(hr_suites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose accepts are all reference texts opens no neighbours' sandbox (the neighbours
    load at the first check that executes on them); the same answers with a comment line are
    executed on them, with the same suite outcomes."""
    import kgeval.runs._suite_check as suite_check

    opened: list[list[str]] = []

    class Counted(suite_check.EmbeddedKgs):  # the real sandbox, its openings counted
        def __init__(self, kgs, candidates, **kw) -> None:  # noqa: ANN001, ANN003
            opened.append(sorted(kgs))
            super().__init__(kgs, candidates, **kw)

    monkeypatch.setattr(suite_check, "EmbeddedKgs", Counted)
    holdout, gold, _ = hr_suites
    questions = list(load_holdout(holdout).questions())
    _, _, given = _run(holdout, gold, OracleSystem(), tmp_path / "oracle.duckdb", suite=SuiteConfig(check_accepts=True))
    assert opened == []
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps({"kg": "hr", "question_id": q.id, "sparql": q.sparql + "\n# not the reference text"}) + "\n" for q in questions))
    _, _, executed = _run(holdout, gold, ReplaySystem(replay, load_holdout(holdout)), tmp_path / "replay.duckdb", suite=SuiteConfig(check_accepts=True))
    assert len(opened) == 1
    assert {k: v.details["suite"] for k, v in given.items()} == {k: v.details["suite"] for k, v in executed.items()}


def test_a_line_break_inside_a_long_string_is_not_the_reference_text() -> None:
    """Line endings are one query only where a line break is white space or ends a comment: in a
    long string it is the literal's value, so `\"\"\"a\\rb\"\"\"` is not the reference's
    `\"\"\"a\\nb\"\"\"` and is executed on the neighbours, not handed their gold."""
    from kgeval.holdout import Question
    from kgeval.runs._suite_check import SuiteChecker

    def asked(sparql: str) -> Question:
        return Question(id="q", question="Which?", sparql=sparql, domain="hr", kg="hr")

    reference = 'SELECT ?x WHERE {\n  ?x <http://example.org/p> """a\nb""" .\n}'
    assert SuiteChecker._is_reference(asked(reference), reference)
    assert not SuiteChecker._is_reference(asked(reference), reference.replace('a\nb', 'a\rb'))
    assert not SuiteChecker._is_reference(asked(reference), reference.replace('a\nb', 'a\r\nb'))
    plain = "SELECT ?x WHERE {\n  ?x <http://example.org/p> 'a' . # a note\n}"
    assert SuiteChecker._is_reference(asked(plain), " " + plain.replace("\n", "\r\n") + "\n")  # layout aside, still the reference
    assert SuiteChecker._is_reference(asked(plain), plain.replace("\n", "\r"))


def test_only_sparql_white_space_around_the_reference_is_set_aside() -> None:
    """A form feed or a no-break space after the reference is no SPARQL white space (the guard
    refuses the text): it is not the reference text, and is executed, not handed the gold."""
    from kgeval.holdout import Question
    from kgeval.runs._suite_check import SuiteChecker

    reference = "SELECT ?x WHERE { ?x <http://example.org/p> 'a' }"
    question = Question(id="q", question="Which?", sparql=reference, domain="hr", kg="hr")
    assert SuiteChecker._is_reference(question, " \t\r\n" + reference + "\n \t")
    assert not SuiteChecker._is_reference(question, reference + "\x0c")
    assert not SuiteChecker._is_reference(question, "\u00a0" + reference)


def test_a_volatile_query_is_executed_again_at_each_check(hr_suites, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checks of the same text share one execution on the neighbours, but a text that calls a
    volatile function (RAND(), NOW(), UUID(), STRUUID(), BNODE()) is executed again at every
    check: its result may change from one execution to the next. (How many outcomes are held:
    test_the_checkers_outcomes_are_bounded_by_what_a_run_needs.)"""
    import kgeval.runs._suite_check as suite_check
    from kgeval.judges import judges_from_config

    holdout, gold, _ = hr_suites
    cfg = KgevalConfig()
    question = next(q for q in load_holdout(holdout).questions() if q.id == "hr-03")
    executed: list[str] = []
    real = suite_check.execute_candidate_each

    def counted(sparql, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202 - the real execution, counted
        executed.append(sparql)
        return real(sparql, *args, **kw)

    monkeypatch.setattr(suite_check, "execute_candidate_each", counted)
    checker = suite_check.SuiteChecker(read_suites(gold), cfg, judges_from_config(cfg.judges)[cfg.judges.primary])
    steady = question.sparql + "# not the reference text\n"
    volatile = {f: question.sparql.replace("WHERE {", "WHERE { FILTER(" + f + ")", 1) for f in ("RAND() >= 0", "YEAR(NOW()) > 2000", "STRLEN(STRUUID()) > 0", "isIRI(UUID())", "isBlank(BNODE())")}
    try:
        for _ in range(2):
            assert checker.outcome(question, steady)["passed"]
            for text in volatile.values():
                outcome = checker.outcome(question, text)
                assert outcome["checked"] and outcome["passed"], outcome
        assert executed.count(steady) == 1
        assert all(executed.count(text) == 2 for text in volatile.values()), executed
    finally:
        checker.close()


def test_a_neighbour_file_changed_after_the_suites_were_read_is_not_loaded(hr_suites, tmp_path: Path) -> None:
    """A run's checker loads a neighbour only as the bytes the suites' verified manifest records:
    a file changed after `read_suites` (here, one triple more) leaves the accept unchecked,
    naming why, never checked on other data; the unchanged suites check it."""
    import kgeval.runs._suite_check as suite_check
    from kgeval.judges import judges_from_config

    holdout, gold, _ = hr_suites
    copy = tmp_path / "gold"
    shutil.copytree(gold, copy, symlinks=True)
    cfg = KgevalConfig()
    judge = judges_from_config(cfg.judges)[cfg.judges.primary]
    question = next(q for q in load_holdout(holdout).questions() if q.id == "hr-03")
    text = question.sparql + "# not the reference text\n"
    suites = read_suites(copy)
    first = suites.neighbour_kg(suites.suite(question.id).neighbours[0]).files[0]
    intact = suite_check.SuiteChecker(suites, cfg, judge)
    try:
        assert intact.outcome(question, text)["passed"]
    finally:
        intact.close()
    with first.open("a", encoding="utf-8") as handle:
        handle.write('<http://example.org/hr/entities/x> <http://example.org/hr/vocab/officeCity> "Toronto" .\n')
    changed = suite_check.SuiteChecker(suites, cfg, judge)
    try:
        outcome = changed.outcome(question, text)
    finally:
        changed.close()
    assert outcome["checked"] is False and "changed" in outcome["why"], outcome
