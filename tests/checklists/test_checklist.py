"""The pre-eval checklist: every item can fail on its own, the receipt is stored with the run,
and `kgeval run` with a failing item exits 1 having sent nothing."""

from __future__ import annotations

import json
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from kgeval.checklists import evaluate_checklist, load_checklist, pre_eval_checklist
from kgeval.config import GeminiSystemConfig, HttpSystemConfig, KgevalConfig, PipelineConfig, RunConfig
from kgeval.errors import InputError
from kgeval.holdout import load_holdout
from kgeval.runs import ChecklistFailed, ResultsDB, execute_run, plan_run
from kgeval.guards import Example
from kgeval.systems import GeminiSystem, HttpSystem, OracleSystem, SystemOutput, WeakSystem, guarded_bank
from tests.cli.test_cli import kgeval
from tests.conftest import REPO
from tests.servers import LoopbackServer, Reply

SHIPPED = REPO / "checklists" / "pre_eval.yaml"
PRODUCTION = PipelineConfig(default={"few_shot_retrieval": True, "few_shot_k": 5, "schema_in_prompt": True})
GUARDS = ("example-bank.ingest", "example-bank.retrieval-filter", "example-bank.similarity-cap")
GUARD_ITEMS = {f"guards:{name}" for name in GUARDS}


def _guard_report(*inactive):
    """The example-bank guards as kgeval.guards reports them: a list of named statuses."""
    return [{"name": n, "active": n not in inactive, "details": {"holdout_kgs": 1, "holdout_questions": 3}} for n in GUARDS]


def _receipt(holdout, gold, system, db, config=None, compare_with=None, guards=()):
    plan = plan_run(load_holdout(holdout), gold, system, config or KgevalConfig(run=RunConfig(seeds=1)), compare_with=compare_with)
    return evaluate_checklist(load_checklist(SHIPPED), plan, db, guards)


def _failed(receipt):
    return {i.item for i in receipt.failures()}


def _http(url="http://127.0.0.1:9/none", pipeline=PRODUCTION):
    return HttpSystem(HttpSystemConfig(url=url, declared_version="prod-7", pipeline=pipeline))


class _WrongOracle:
    """Named like the oracle control, but answers wrongly: a broken harness's oracle."""

    name, version, kind, pipeline, reasoning = "oracle", "1", "control", None, {}

    def respond(self, question, seed):
        return SystemOutput(answer=["Atlantis"])  # not "nothing", which answers an empty gold rightly


class _StrongWeak(OracleSystem):
    """Named like the weak control, but always right: a judge that accepts too much looks like this."""

    name = "weak"


def test_controls_pass_the_shipped_checklist(mini_holdout, mini_gold, tmp_path):
    with ResultsDB(tmp_path / "r.duckdb") as db:
        receipt = _receipt(mini_holdout, mini_gold, OracleSystem(), db)
    assert receipt.passed, receipt.failures()
    assert [i.item for i in receipt.items][:5] == ["holdout_manifest", "gold", "gold_failures", "empty_gold", "pipeline_parity"]
    assert {"caught:oracle_below_99", "caught:gold_engine_version", "caught:gold_row_cap", "caught:weak_above_60"} <= {i.item for i in receipt.items}


def test_tampered_holdout_and_gold_fail_their_items(mini_holdout, mini_gold, tmp_path):
    path = mini_gold / "mini.json"
    path.write_text(path.read_text().replace("alice", "alicia", 1))
    with ResultsDB(tmp_path / "r.duckdb") as db:
        assert _failed(_receipt(mini_holdout, mini_gold, OracleSystem(), db)) == {"gold", "gold_failures", "empty_gold"}  # an unreadable gold vouches for nothing
        (mini_holdout / "mini" / "kg.ttl").write_text("# tampered\n", encoding="utf-8")
        failed = _receipt(mini_holdout, mini_gold, OracleSystem(), db)
    assert "holdout_manifest" in _failed(failed)


def test_gold_from_another_holdout_fails(mini_holdout, mini_gold, tmp_path):
    manifest = json.loads((mini_gold / "MANIFEST.json").read_text())
    manifest["holdout_manifest_sha256"] = "0" * 64
    (mini_gold / "MANIFEST.json").write_text(json.dumps(manifest))
    with ResultsDB(tmp_path / "r.duckdb") as db:
        receipt = _receipt(mini_holdout, mini_gold, OracleSystem(), db)
    assert _failed(receipt) == {"gold"}
    assert "built from a different holdout" in next(i for i in receipt.items if i.item == "gold").detail


def test_gold_built_on_another_engine_version_is_caught(mini_holdout, mini_gold, tmp_path):
    manifest = json.loads((mini_gold / "MANIFEST.json").read_text())
    manifest["engines"] = [{"name": "oxigraph-embedded", "version": "0.3.22"}]
    (mini_gold / "MANIFEST.json").write_text(json.dumps(manifest))
    with ResultsDB(tmp_path / "r.duckdb") as db:
        receipt = _receipt(mini_holdout, mini_gold, OracleSystem(), db)
    assert _failed(receipt) == {"caught:gold_engine_version"}
    assert "0.3.22" in receipt.failures()[0].observed


def test_pipeline_parity_compares_every_kg(mini_holdout, mini_gold, tmp_path):
    off_for_mini = PipelineConfig(default=PRODUCTION.default, per_kg={"mini": {"few_shot_retrieval": False}})
    with ResultsDB(tmp_path / "r.duckdb") as db:
        receipt = _receipt(mini_holdout, mini_gold, _http(pipeline=off_for_mini), db)
        parity = next(i for i in receipt.items if i.item == "pipeline_parity")
        assert not parity.passed and "mini: few_shot_retrieval=False (production True)" in parity.detail
        undeclared = _receipt(mini_holdout, mini_gold, _http(pipeline=PipelineConfig()), db)
    assert "pipeline_parity" in _failed(undeclared)


def test_guards_must_report_active_where_examples_are_retrieved(mini_holdout, mini_gold, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "test")
    examples = [Example(kg="shop", question="How many orders are there?", sparql="ASK {}")]
    unguarded = GeminiSystem(GeminiSystemConfig(base_url="http://127.0.0.1:9"), bank=guarded_bank(examples, None, KgevalConfig()))
    guarded = GeminiSystem(GeminiSystemConfig(base_url="http://127.0.0.1:9"), bank=guarded_bank(examples, load_holdout(mini_holdout), KgevalConfig()))
    names = GUARD_ITEMS
    with ResultsDB(tmp_path / "r.duckdb") as db:
        bad = _receipt(mini_holdout, mini_gold, unguarded, db)
        good = _receipt(mini_holdout, mini_gold, guarded, db)
        # the production endpoint's guards come from outside (kgeval.guards): absent -> fail
        http_none = _receipt(mini_holdout, mini_gold, _http(), db)

        class Report:
            """A guard provider outside the system, reporting like kgeval.guards."""

            def __init__(self, *inactive):
                self.inactive = inactive

            def status(self):
                return _guard_report(*self.inactive)

        http_off = _receipt(mini_holdout, mini_gold, _http(), db, guards=[Report("example-bank.retrieval-filter")])
        http_on = _receipt(mini_holdout, mini_gold, _http(), db, guards=[Report()])
    assert names <= _failed(bad)
    assert "bank built without guards" in next(i for i in bad.items if i.item == "guards:example-bank.ingest").detail
    assert not names & _failed(good)
    assert names <= _failed(http_none)
    assert names & _failed(http_off) == {"guards:example-bank.retrieval-filter"}
    assert not names & _failed(http_on)


def test_apples_to_apples_with_named_runs(mini_holdout, mini_gold, tmp_path):
    checklist = pre_eval_checklist(SHIPPED)
    with ResultsDB(tmp_path / "r.duckdb") as db:
        two = execute_run(load_holdout(mini_holdout), mini_gold, OracleSystem(), KgevalConfig(run=RunConfig(seeds=2)), db, checklist=checklist)
        same = _receipt(mini_holdout, mini_gold, WeakSystem(), db, config=KgevalConfig(run=RunConfig(seeds=2)), compare_with=[two.run_id])
        other = _receipt(mini_holdout, mini_gold, WeakSystem(), db, config=KgevalConfig(run=RunConfig(seeds=3)), compare_with=[two.run_id])
        unknown = _receipt(mini_holdout, mini_gold, WeakSystem(), db, compare_with=["no-such-run"])
    assert same.passed, same.failures()
    assert _failed(other) == {"apples_to_apples:oracle"} and "seeds" in other.failures()[0].observed
    assert _failed(unknown) == {"apples_to_apples"}


def test_compared_systems_must_match_the_latest_run_of_each_other(mini_holdout, mini_gold, tmp_path, monkeypatch):
    """http and gemini are the compared systems: an http run is checked against gemini's last run."""
    from kgeval.runs import Receipt

    monkeypatch.setenv("GEMINI_API_KEY", "test")
    with ResultsDB(tmp_path / "r.duckdb") as db:
        gemini = GeminiSystem(GeminiSystemConfig(base_url="http://127.0.0.1:9"))
        plan = plan_run(load_holdout(mini_holdout), mini_gold, gemini, KgevalConfig(run=RunConfig(seeds=2)))
        db.create_run(plan.metadata, [], Receipt(checklist_sha256="x", items=[]))
        db.finish_run(plan.metadata)
        receipt = _receipt(mini_holdout, mini_gold, _http(), db, config=KgevalConfig(run=RunConfig(seeds=1)))
    assert "apples_to_apples:gemini" in _failed(receipt)


def test_broken_controls_are_caught(mini_holdout, mini_gold, tmp_path):
    checklist = pre_eval_checklist(SHIPPED)
    holdout = load_holdout(mini_holdout)
    cfg = KgevalConfig(run=RunConfig(seeds=1))
    with ResultsDB(tmp_path / "r.duckdb") as db:
        # no oracle run yet: a production system may not run
        assert "caught:oracle_below_99" in _failed(_receipt(mini_holdout, mini_gold, _http(pipeline=PRODUCTION), db, guards=[]))
        execute_run(holdout, mini_gold, _WrongOracle(), cfg, db, checklist=checklist)
        receipt = _receipt(mini_holdout, mini_gold, WeakSystem(), db)
        assert _failed(receipt) == {"caught:oracle_below_99"}
        assert "0.0% of attempts correct" in receipt.failures()[0].observed
        # the oracle control itself may always run (it produces the evidence), and fixes it
        execute_run(holdout, mini_gold, OracleSystem(), cfg, db, checklist=checklist)
        execute_run(holdout, mini_gold, _StrongWeak(), cfg, db, checklist=checklist)
        receipt = _receipt(mini_holdout, mini_gold, OracleSystem(), db)
    assert _failed(receipt) == {"caught:weak_above_60"}


def test_refused_run_stores_its_receipt_and_sends_nothing(mini_holdout, mini_gold, tmp_path):
    with LoopbackServer(lambda p, b, n: Reply(body={"sparql": "ASK {}"})) as server:
        system = _http(url=server.url, pipeline=PipelineConfig(default={"few_shot_retrieval": False}))
        with ResultsDB(tmp_path / "r.duckdb") as db:
            with pytest.raises(ChecklistFailed, match="pipeline_parity") as refused:
                execute_run(load_holdout(mini_holdout), mini_gold, system, KgevalConfig(), db, checklist=pre_eval_checklist(SHIPPED))
            (run,) = db.runs(status="refused")
            stored = db.receipt(run.run_id)
    assert server.requests == []
    assert stored.items == refused.value.receipt.items and not stored.passed


def test_malformed_checklists_name_file_and_field(tmp_path):
    bad = tmp_path / "pre_eval.yaml"
    shutil.copy(REPO / "checklists" / "caught.yaml", tmp_path / "caught.yaml")
    bad.write_text(yaml.safe_dump({"items": ["gold", "vibes"], "production_profile": {"default": {}}}))
    with pytest.raises(InputError, match=r"pre_eval.yaml: items.1"):
        load_checklist(bad)
    (tmp_path / "caught.yaml").write_text(yaml.safe_dump({"entries": [{"id": "x", "caught": "c", "lesson": "l", "check": {"kind": "astrology"}}]}))
    bad.write_text(yaml.safe_dump({"items": ["gold"], "production_profile": {"default": {}}}))
    with pytest.raises(InputError, match=r"caught.yaml: entry 1: check.kind"):
        load_checklist(bad)
    with pytest.raises(InputError, match="checklist file missing"):
        load_checklist(tmp_path / "nope.yaml")


def _cli_checklist(tmp_path: Path) -> Path:
    """The shipped checklist with a production profile the http test config can match
    (no few-shot retrieval, so no example-bank guard is needed)."""
    data = yaml.safe_load(SHIPPED.read_text())
    data["production_profile"] = {"default": {"schema_in_prompt": True}}
    shutil.copy(REPO / "checklists" / "caught.yaml", tmp_path / "caught.yaml")
    path = tmp_path / "pre_eval.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_cli_run_with_one_failing_item_exits_1_and_sends_nothing(mini_holdout, mini_gold, tmp_path):
    checklist, db = _cli_checklist(tmp_path), tmp_path / "r.duckdb"
    with LoopbackServer(lambda p, b, n: Reply(body={"sparql": b.get("question") and "ASK {}"})) as server:
        config = tmp_path / "http.yaml"
        pipeline = {"default": {"schema_in_prompt": True}}
        config.write_text(yaml.safe_dump({"systems": {"http": {"url": server.url, "declared_version": "prod-7", "pipeline": pipeline}}}))
        args = ["--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db), "--checklist", str(checklist), "--seeds", "1"]
        refused = kgeval("run", "--system", "http", "--config", str(config), *args)
        assert refused.returncode == 1, refused.stderr
        assert "caught:oracle_below_99" in refused.stderr and "nothing was dispatched" in refused.stderr
        assert "pipeline_parity" not in refused.stderr  # exactly one item failed
        assert server.requests == []
        # the positive control: once the oracle has run on this gold, the same command dispatches
        assert kgeval("run", "--system", "oracle", *args).returncode == 0
        ran = kgeval("run", "--system", "http", "--config", str(config), *args)
        assert ran.returncode == 0, ran.stderr
        assert server.count() > 0


@pytest.mark.parametrize(
    "reply, failing, detail",
    [
        (Reply(body=_guard_report()), set(), None),
        (Reply(body=_guard_report("example-bank.retrieval-filter")), {"guards:example-bank.retrieval-filter"}, "holdout_questions=3"),
        (Reply(status=503, body="down"), "all", "HTTP 503"),
        (Reply(body={"ingest": True}), "all", "expected a JSON list"),
        (Reply(body="[{"), "all", "not valid JSON"),
        (None, "all", "guards_url: status() raised InputError: not set"),
    ],
    ids=["all active", "one inactive", "5xx", "not a list", "malformed", "no guards_url"],
)
def test_production_endpoint_reports_its_guards_over_http(mini_holdout, mini_gold, tmp_path, reply, failing, detail):
    """The endpoint's bank runs out of process: the checklist reads its guards at
    systems.http.guards_url (a real GET on a loopback server)."""
    names = GUARD_ITEMS
    with LoopbackServer(lambda path, body, n: reply) as server, ResultsDB(tmp_path / "r.duckdb") as db:
        url = server.url + "/guards" if reply is not None else None
        system = HttpSystem(HttpSystemConfig(url="http://127.0.0.1:9/none", declared_version="prod-7", pipeline=PRODUCTION, guards_url=url))
        receipt = _receipt(mini_holdout, mini_gold, system, db)
        system.close()
    assert names & _failed(receipt) == (names if failing == "all" else failing)
    if reply is not None:
        assert server.requests == [("/guards", {"_method": "GET"})]
    if detail:
        failed = [i for i in receipt.items if i.item in names and not i.passed]
        assert failed and all(detail in i.detail for i in failed), [i.detail for i in failed]


def test_cli_runs_the_production_endpoint_with_few_shot_retrieval(mini_holdout, mini_gold, tmp_path):
    """With the shipped production profile (few-shot retrieval on), `kgeval run --system http`
    dispatches once the endpoint reports its guards active, and refuses while one is inactive."""
    checklist, db = _cli_checklist(tmp_path), tmp_path / "r.duckdb"
    data = yaml.safe_load(checklist.read_text())
    data["production_profile"] = yaml.safe_load(SHIPPED.read_text())["production_profile"]
    checklist.write_text(yaml.safe_dump(data))
    report = {"guards": _guard_report("example-bank.ingest")}
    answers = LoopbackServer(lambda p, b, n: Reply(body={"sparql": "ASK {}"}))
    guards = LoopbackServer(lambda p, b, n: Reply(body=report["guards"]))
    with answers, guards:
        config = tmp_path / "http.yaml"
        http = {"url": answers.url, "declared_version": "prod-7", "pipeline": data["production_profile"], "guards_url": guards.url + "/guards"}
        config.write_text(yaml.safe_dump({"systems": {"http": http}}))
        args = ["--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db), "--checklist", str(checklist), "--seeds", "1"]
        assert kgeval("run", "--system", "oracle", *args).returncode == 0  # the caught checks need a control run
        refused = kgeval("run", "--system", "http", "--config", str(config), *args)
        assert refused.returncode == 1 and "guards:example-bank.ingest: inactive" in refused.stderr, refused.stderr
        assert answers.requests == []
        report["guards"] = _guard_report()
        ran = kgeval("run", "--system", "http", "--config", str(config), *args)
        assert ran.returncode == 0, ran.stderr
        assert answers.count() > 0 and guards.count() == 2


def test_an_unconfirmed_empty_gold_refuses_the_run_until_confirmed(tmp_path):
    """Issue 12: an empty gold may come from a broken reference query; the run is refused until
    the question says expect_empty: true or a domain reviewer approved that gold."""
    from kgeval.config import GoldConfig, KgevalConfig, RunConfig
    from kgeval.gold import load_gold, rebuild_gold
    from kgeval.holdout import load_holdout
    from kgeval.review import Reviewer, ReviewLog, question_content_sha256, record_review
    from kgeval.runs import ResultsDB, execute_run
    from kgeval.runs._run import ChecklistFailed
    from kgeval.stores import EmbeddedStore
    from kgeval.systems import OracleSystem
    from tests.conftest import MINI_QUESTIONS, REPO, write_holdout

    questions = [{k: v for k, v in q.items() if k != "expect_empty"} for q in MINI_QUESTIONS]
    root = write_holdout(tmp_path / "holdout", questions)
    holdout = load_holdout(root)
    assert rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold").ok
    checklist = pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")
    config = KgevalConfig(run=RunConfig(seeds=1))
    db_path = tmp_path / "r.duckdb"
    with ResultsDB(db_path) as db, pytest.raises(ChecklistFailed) as refused:
        execute_run(holdout, tmp_path / "gold", OracleSystem(), config, db, checklist=checklist)
    failed = {i.item: i for i in refused.value.receipt.failures()}
    assert set(failed) == {"empty_gold"} and "mini/mini-07" in failed["empty_gold"].detail and "expect_empty" in failed["empty_gold"].detail
    question = next(q for q in holdout.questions() if q.id == "mini-07")
    entry = load_gold(tmp_path / "gold")["mini-07"]
    with ReviewLog(db_path) as log:
        record_review(log, question, entry, Reviewer(name="hana", domains=("hr",)), "approve", question_content_sha256(question, entry))
    with ResultsDB(db_path) as db:
        meta = execute_run(holdout, tmp_path / "gold", OracleSystem(), config, db, checklist=checklist)
        receipt = {i.item: i for i in db.receipt(meta.run_id).items}
    assert meta.finished_at and receipt["empty_gold"].passed and "all confirmed" in receipt["empty_gold"].observed


def test_an_excluded_questions_empty_gold_does_not_refuse_the_run(tmp_path):
    """An empty gold whose question is excluded on record is never asked, so it needs no
    confirmation: excluding it is the way out the checklist's refusal offers for a bad
    question (found importing a benchmark: questions about entities the KG lacks)."""
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.holdout import exclude_questions
    from kgeval.stores import EmbeddedStore
    from tests.conftest import MINI_QUESTIONS, write_holdout

    questions = [{k: v for k, v in q.items() if k != "expect_empty"} for q in MINI_QUESTIONS]
    root = write_holdout(tmp_path / "holdout", questions)
    exclude_questions(root, ["mini-07"], "asks about an entity the KG lacks")
    holdout = load_holdout(root)
    # its query executed (a rebuild leaves excluded queries out unless asked): its gold is empty
    assert rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold", include_excluded=True).ok
    with ResultsDB(tmp_path / "r.duckdb") as db:
        receipt = {i.item: i for i in _receipt(root, tmp_path / "gold", OracleSystem(), db).items}
    assert receipt["empty_gold"].passed, receipt["empty_gold"]
    assert "(1 excluded on record)" in receipt["empty_gold"].observed


def test_an_empty_answer_confirmed_on_record_lets_the_run_start_while_its_query_stays(tmp_path):
    """`kgeval holdout confirm-empty QID --why TEXT` confirms an empty gold as an exclusion is
    made: on record in the sealed holdout (who, when, why), shown in the report. It was only
    possible by editing questions.yaml and resealing, or by a reviewer's approval. The
    confirmation holds for the reference query it was given for: a changed query (still empty,
    perhaps now by mistake) is refused again, and says why."""
    from typer.testing import CliRunner

    from kgeval.cli import app
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.holdout import CONFIRMED_EMPTY_FILE, verify_holdout
    from kgeval.reports import build_report, render_markdown
    from kgeval.stores import EmbeddedStore
    from tests.conftest import MINI_QUESTIONS, write_holdout

    def cli(*args: str):
        result = CliRunner().invoke(app, [*args, "--holdout", str(root)])
        return result.exit_code, result.output

    def run(db_path):
        holdout = load_holdout(root)
        assert rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold").ok
        with ResultsDB(db_path) as db:
            try:
                meta = execute_run(holdout, tmp_path / "gold", OracleSystem(), KgevalConfig(run=RunConfig(seeds=1)), db, checklist=pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml"))
            except ChecklistFailed as refused:
                return None, {i.item: i for i in refused.receipt.items}
            return meta, {i.item: i for i in db.receipt(meta.run_id).items}

    questions = [{k: v for k, v in q.items() if k != "expect_empty"} for q in MINI_QUESTIONS]
    root = write_holdout(tmp_path / "holdout", questions)
    assert run(tmp_path / "refused.duckdb")[0] is None
    why = "nobody in the KG is over 100: checked with HR"
    code, shown = cli("holdout", "confirm-empty", "mini-07", "--why", why)
    assert code == 0 and "confirmed empty mini-07" in shown and "resealed" in shown, shown
    verify_holdout(root)
    record = yaml.safe_load((root / CONFIRMED_EMPTY_FILE).read_text())["confirmed_empty"]
    reference = next(q for q in load_holdout(root).questions() if q.id == "mini-07")
    assert [(r["question_id"], r["why"], r["sparql_sha256"]) for r in record] == [("mini-07", why, reference.sparql_sha256)] and record[0]["at"]

    meta, receipt = run(tmp_path / "r.duckdb")
    assert meta is not None and receipt["empty_gold"].passed and "confirmed on record" in receipt["empty_gold"].observed
    assert meta.confirmed_empty == {"mini-07": why}
    with ResultsDB(tmp_path / "r.duckdb", read_only=True) as db:
        assert f"- empty answer confirmed on record (1): mini-07: {why}" in render_markdown(build_report(db, meta.run_id))

    # the reference query changes (still empty): the confirmation was for the other one
    changed = [dict(q, sparql=q["sparql"].replace("100", "120")) if q["id"] == "mini-07" else q for q in questions]
    (root / "mini" / "questions.yaml").write_text(yaml.safe_dump({"kg": "mini", "title": "mini test KG", "questions": changed}, sort_keys=False))
    assert cli("holdout", "seal")[0] == 0
    meta, receipt = run(tmp_path / "stale.duckdb")
    assert meta is None and not receipt["empty_gold"].passed
    assert "confirmed on record for another reference query (changed since): mini-07" in receipt["empty_gold"].detail

    assert cli("holdout", "confirm-empty", "mini-99", "--why", why)[0] == 2
    code, shown = cli("holdout", "confirm-empty", "mini-07", "--why", "  ")
    assert code == 2 and "--why is required" in shown
    code, shown = cli("holdout", "unconfirm-empty", "mini-07")
    assert code == 0 and "no longer confirmed empty: mini-07" in shown
    assert load_holdout(root).confirmed_empty == {} and cli("holdout", "unconfirm-empty", "mini-07")[0] == 2
    verify_holdout(root)


def test_a_false_ask_or_zero_count_from_vocabulary_the_kg_lacks_needs_confirming(tmp_path):
    """A gold that says nothing (ASK false, COUNT 0) only because its reference query needs a
    predicate the KG lacks is as suspect as an empty one: a misspelt predicate, or an extract
    without the data (ASK { wd:Q7186 wdt:P166 wd:Q38104 } is false on an extract without P166,
    though true in Wikidata). The run is refused, naming the question and the IRI, until it is
    confirmed; a false ASK over vocabulary the KG has needs nothing."""
    from typer.testing import CliRunner

    from kgeval.cli import app
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.stores import EmbeddedStore
    from tests.conftest import MINI_QUESTIONS, PREFIX, write_holdout

    questions = [
        *MINI_QUESTIONS,
        {"id": "mini-20", "question": "Did Alice win an award?", "sparql": PREFIX + "ASK { e:alice ex:awardWon ?a }", "domain": "hr", "tags": ["ask"]},
        {"id": "mini-21", "question": "How many awards did Bob win?", "sparql": PREFIX + "SELECT (COUNT(?a) AS ?n) WHERE { e:bob ex:awardWon ?a }", "domain": "hr", "tags": ["count"]},
    ]
    root = write_holdout(tmp_path / "holdout", questions)

    def run(db_path):
        holdout = load_holdout(root)
        assert rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold").ok
        with ResultsDB(db_path) as db:
            try:
                execute_run(holdout, tmp_path / "gold", OracleSystem(), KgevalConfig(run=RunConfig(seeds=1)), db, checklist=pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml"))
            except ChecklistFailed as refused:
                return {i.item: i for i in refused.receipt.items}
            return None

    refused = run(tmp_path / "refused.duckdb")
    assert refused is not None and not refused["empty_gold"].passed
    detail = refused["empty_gold"].detail
    assert "mini/mini-20 (false only because <http://example.org/mini/vocab/awardWon> occurs nowhere in the KG)" in detail, detail
    assert "mini/mini-21 (one row of zeros or unbound values: nothing found)" in detail, detail  # a count of 0 needs it anyway
    assert "mini-05" not in detail  # "Is Carol in sales?" is false over vocabulary the KG has
    done = CliRunner().invoke(app, ["holdout", "confirm-empty", "mini-20", "mini-21", "--why", "no awards in this extract: checked", "--holdout", str(root)])
    assert done.exit_code == 0, done.output
    assert run(tmp_path / "r.duckdb") is None


@pytest.mark.parametrize("items", [[], ["gold", "caught"], ["holdout_manifest", "pipeline_parity"]])
def test_a_checklist_leaving_out_the_holdout_or_gold_check_is_refused(mini_holdout, mini_gold, tmp_path, items):
    """`items: []` once ran a holdout edited after sealing, and its report gave the sealed
    manifest's hash; every report states the holdout and gold manifests, which only these two
    items check."""
    data = yaml.safe_load(SHIPPED.read_text())
    data["items"] = items
    custom = tmp_path / "pre_eval.yaml"
    custom.write_text(yaml.safe_dump(data))
    shutil.copy(REPO / "checklists" / "caught.yaml", tmp_path / "caught.yaml")
    with pytest.raises(InputError, match=r"pre_eval.yaml: items: .*leaves out"):
        load_checklist(custom)
    questions = mini_holdout / "mini" / "questions.yaml"
    questions.write_text(questions.read_text().replace("Is Carol in sales?", "Is Carol in sales (edited)?"))
    done = kgeval("run", "--system", "oracle", "--seeds", "1", "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(tmp_path / "r.duckdb"), "--checklist", str(custom))
    assert done.returncode == 2 and "leaves out" in done.stderr, done.stderr


def test_a_gold_of_one_unbound_or_zero_row_needs_the_confirmation_an_empty_gold_needs(tmp_path):
    """Issue 32, item 8: "nothing found" has more spellings than no rows. A MIN over no solutions
    gives one row with its value unbound; a COUNT over none, one row of 0. Such golds accept any
    answer that finds nothing, as an empty gold does (13 passed unconfirmed in a real benchmark),
    whether or not the KG has the vocabulary: the run is refused naming them until `kgeval
    holdout confirm-empty` confirms them."""
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.stores import EmbeddedStore
    from tests.conftest import MINI_QUESTIONS, PREFIX, write_holdout

    questions = [*MINI_QUESTIONS,
                 {"id": "mini-90", "question": "How old is the youngest in legal?", "sparql": PREFIX + "SELECT (MIN(?a) AS ?m) WHERE { ?p ex:worksIn e:legal ; ex:age ?a }", "domain": "hr"},
                 {"id": "mini-91", "question": "How many people work in legal?", "sparql": PREFIX + "SELECT (COUNT(?p) AS ?n) WHERE { ?p ex:worksIn e:legal }", "domain": "hr"}]
    root = write_holdout(tmp_path / "holdout", questions)
    assert rebuild_gold(load_holdout(root), lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold").ok
    with ResultsDB(tmp_path / "r.duckdb") as db:
        item = {i.item: i for i in _receipt(root, tmp_path / "gold", OracleSystem(), db).items}["empty_gold"]
    assert not item.passed and item.observed == (
        "2 of 3 empty-like golds needing confirmation unconfirmed (4 empty-like golds: 1 empty, 2 one-row zero/unbound, 1 false ASK)"
    ), item  # mini-05, a false ASK over vocabulary the KG has, needs none
    assert "mini/mini-90 (one row of zeros or unbound values: nothing found)" in item.detail
    assert "mini/mini-91 (one row of zeros or unbound values: nothing found)" in item.detail
    confirmed = kgeval("holdout", "confirm-empty", "mini-90", "mini-91", "--why", "no legal department in this extract", "--holdout", str(root))
    assert confirmed.returncode == 0, confirmed.stderr
    assert rebuild_gold(load_holdout(root), lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold").ok
    with ResultsDB(tmp_path / "r.duckdb") as db:
        item = {i.item: i for i in _receipt(root, tmp_path / "gold", OracleSystem(), db).items}["empty_gold"]
    assert item.passed, item


def test_the_vacuous_gold_check_asks_each_kg_without_waiting_for_the_others(tmp_path):
    """Each KG's false-ASK golds are asked of its store in their own thread: a store whose
    sandbox workers are still loading its KG holds up its own questions only (asked one after
    another, a run's checklist waited for twenty KGs to load one at a time). Here the first
    KG's store answers only once the second KG has been asked: asked in turn, it would wait."""
    import threading

    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.stores import EmbeddedStore
    from tests.conftest import MINI_QUESTIONS, PREFIX, write_holdout

    root = tmp_path / "holdout"
    for kg in ("alpha", "beta"):
        ask = {"id": f"{kg}-20", "question": "Did Alice win an award?", "sparql": PREFIX + "ASK { e:alice ex:awardWon ?a }", "domain": "hr", "tags": ["ask"]}
        write_holdout(root, [{**q, "id": f"{kg}-{q['id']}"} for q in MINI_QUESTIONS] + [ask], kg=kg)
    holdout = load_holdout(root)
    with _vocabulary_not_recorded():  # a gold built before the vocabulary was recorded: its KGs are asked
        assert rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold").ok
    plan = plan_run(holdout, tmp_path / "gold", OracleSystem(), KgevalConfig(run=RunConfig(seeds=1)))
    beta_asked, alpha_waited = threading.Event(), []
    alpha, beta = plan.stores["alpha"], plan.stores["beta"]
    alpha_cells, beta_cells = alpha.execute_cells, beta.execute_cells

    def held(*args, **kwargs):
        alpha_waited.append(beta_asked.wait(60))
        return alpha_cells(*args, **kwargs)

    def asked(*args, **kwargs):
        beta_asked.set()
        return beta_cells(*args, **kwargs)

    alpha.execute_cells, beta.execute_cells = held, asked
    try:
        with ResultsDB(tmp_path / "r.duckdb") as db:
            receipt = evaluate_checklist(load_checklist(SHIPPED), plan, db)
    finally:
        for store in plan.stores.values():
            store.close()
        plan.gold_hold.close()
    assert alpha_waited and all(alpha_waited), "the first KG's golds were asked before the second KG's, and waited for them"
    detail = next(i for i in receipt.items if i.item == "empty_gold").detail
    for kg in ("alpha", "beta"):
        assert f"{kg}/{kg}-20 (false only because <http://example.org/mini/vocab/awardWon> occurs nowhere in the KG)" in detail, detail


def test_the_vacuous_gold_check_asks_the_kgs_while_the_gold_is_verified(tmp_path, monkeypatch):
    """The empty-gold item's questions to the KGs (which wait for the sandbox workers to load
    them) are asked first, in a thread, while the items before it run: here the gold item's
    verification finishes only once a KG was asked (asked after it, it would wait for nothing).
    The receipt says what it says when each item runs in turn."""
    import threading

    import kgeval.checklists._items as items_module
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.stores import EmbeddedStore
    from tests.conftest import MINI_QUESTIONS, PREFIX, write_holdout

    ask = {"id": "mini-20", "question": "Did Alice win an award?", "sparql": PREFIX + "ASK { e:alice ex:awardWon ?a }", "domain": "hr", "tags": ["ask"]}
    holdout = load_holdout(write_holdout(tmp_path / "holdout", [*MINI_QUESTIONS, ask]))
    with _vocabulary_not_recorded():  # a gold built before the vocabulary was recorded: its KG is asked
        assert rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold").ok
    plan = plan_run(holdout, tmp_path / "gold", OracleSystem(), KgevalConfig(run=RunConfig(seeds=1)))
    kg_asked, verified_after_asking = threading.Event(), []
    cells, gold_problems = plan.stores["mini"].execute_cells, items_module.gold_problems

    def asked(*args, **kwargs):
        kg_asked.set()
        return cells(*args, **kwargs)

    def verifying(*args, **kwargs):
        verified_after_asking.append(kg_asked.wait(60))
        return gold_problems(*args, **kwargs)

    plan.stores["mini"].execute_cells = asked
    monkeypatch.setattr(items_module, "gold_problems", verifying)
    try:
        with ResultsDB(tmp_path / "r.duckdb") as db:
            receipt = evaluate_checklist(load_checklist(SHIPPED), plan, db)
            checklist = load_checklist(SHIPPED)
            in_turn = [line for name in checklist.items if name in ("gold", "empty_gold") for line in items_module.__dict__[name](checklist, plan, db, ())]
    finally:
        for store in plan.stores.values():
            store.close()
        plan.gold_hold.close()
    assert verified_after_asking[0] is True, "the KGs were asked only after the gold was verified"
    assert [i for i in receipt.items if i.item in ("gold", "empty_gold")] == in_turn
    detail = next(i for i in receipt.items if i.item == "empty_gold").detail
    assert "mini/mini-20 (false only because <http://example.org/mini/vocab/awardWon> occurs nowhere in the KG)" in detail, detail


@contextmanager
def _vocabulary_not_recorded():
    """Gold entries written as before `GoldEntry.missing_vocabulary` was recorded: without the field."""
    from pydantic import BaseModel

    from kgeval.gold import GoldEntry

    def dumped(self, **kwargs):
        return BaseModel.model_dump_json(self, exclude={"missing_vocabulary"}, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(GoldEntry, "model_dump_json", dumped)
        yield


AWARD = "http://example.org/mini/vocab/awardWon"


def _ask_holdout(tmp_path):
    """The mini holdout with mini-20, a false ASK only because the KG lacks ex:awardWon."""
    from tests.conftest import MINI_QUESTIONS, PREFIX, write_holdout

    ask = {"id": "mini-20", "question": "Did Alice win an award?", "sparql": PREFIX + "ASK { e:alice ex:awardWon ?a }", "domain": "hr", "tags": ["ask"]}
    return load_holdout(write_holdout(tmp_path / "holdout", [*MINI_QUESTIONS, ask]))


def _built(holdout, gold_dir):
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.stores import EmbeddedStore

    assert rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), gold_dir).ok
    return gold_dir


def _checked(holdout, gold_dir, db_path):
    """The receipt of the shipped checklist and the queries its items sent to the KG's store."""
    plan = plan_run(holdout, gold_dir, OracleSystem(), KgevalConfig(run=RunConfig(seeds=1)))
    store, sent = plan.stores["mini"], []
    cells = store.execute_cells

    def asked(query, *args, **kwargs):
        sent.append(query)
        return cells(query, *args, **kwargs)

    store.execute_cells = asked
    try:
        with ResultsDB(db_path) as db:
            receipt = evaluate_checklist(load_checklist(SHIPPED), plan, db)
    finally:
        for each in plan.stores.values():
            each.close()
        plan.gold_hold.close()
    return {i.item: i for i in receipt.items}, sent


def test_the_gold_records_the_vocabulary_its_false_asks_lack(tmp_path):
    """A false ASK's gold entry records the IRIs its reference query needs that the KG lacks
    (none for a false ASK over vocabulary the KG has); any other entry records nothing."""
    from kgeval.gold import index_gold

    gold = index_gold(_built(_ask_holdout(tmp_path), tmp_path / "gold"))
    recorded = {qid: gold.entry(qid).missing_vocabulary for qid in gold.entries}
    assert recorded["mini-20"] == [AWARD]
    assert recorded["mini-05"] == []  # "Is Carol in sales?": false over vocabulary the KG has
    assert {qid for qid, v in recorded.items() if v is not None} == {"mini-05", "mini-20"}, recorded


def test_a_gold_recording_the_vocabulary_has_the_checklist_ask_no_kg(tmp_path):
    """With the vocabulary recorded in the gold, the empty-gold item asks the run's KG nothing
    (a run's checklist no longer waits for its sandbox workers to load the KGs) and says what it
    says when it asks, as it still does for a gold built without the record."""
    holdout = _ask_holdout(tmp_path)
    recorded, sent = _checked(holdout, _built(holdout, tmp_path / "gold"), tmp_path / "r.duckdb")
    with _vocabulary_not_recorded():
        old_gold = _built(holdout, tmp_path / "old-gold")
    asked, old_sent = _checked(holdout, old_gold, tmp_path / "o.duckdb")
    assert old_sent, "a gold without the record: the KG is asked"
    assert sent == [], sent
    assert not recorded["empty_gold"].passed and f"mini/mini-20 (false only because <{AWARD}> occurs nowhere in the KG)" in recorded["empty_gold"].detail
    assert (recorded["empty_gold"].observed, recorded["empty_gold"].detail) == (asked["empty_gold"].observed, asked["empty_gold"].detail)


def test_an_edited_recorded_vocabulary_fails_the_checklist(tmp_path):
    """The recorded vocabulary is part of the entry the gold's hashes cover: edited to say the
    KG has every IRI (the false ASK would pass as a genuine "no"), the gold is refused."""
    holdout = _ask_holdout(tmp_path)
    gold_dir = _built(holdout, tmp_path / "gold")
    (kg_file,) = [p for p in (gold_dir / "current").resolve().glob("*.json") if f'"missing_vocabulary":["{AWARD}"]' in p.read_text()]
    kg_file.write_text(kg_file.read_text().replace(f'"missing_vocabulary":["{AWARD}"]', '"missing_vocabulary":[]'))
    items, _ = _checked(holdout, gold_dir, tmp_path / "r.duckdb")
    assert not items["gold"].passed and not items["empty_gold"].passed, items


def test_the_questions_a_gold_settles_are_neither_parsed_nor_asked_ahead(tmp_path, monkeypatch):
    """The thread asking ahead takes only the ASKs the gold leaves open: with every false ASK's
    vocabulary recorded it parses no reference query and asks no KG; with none recorded it
    parses and asks the false ASKs only (a SELECT's or a true ASK's gold is never asked about)."""
    import kgeval.checklists._items as items_module

    holdout = _ask_holdout(tmp_path)
    with _vocabulary_not_recorded():
        old_gold = _built(holdout, tmp_path / "old-gold")
    parsed, is_ask = [], items_module._is_ask
    monkeypatch.setattr(items_module, "_is_ask", lambda sparql: parsed.append(sparql) or is_ask(sparql))
    found = {}
    for name, gold_dir in (("recorded", _built(holdout, tmp_path / "gold")), ("old", old_gold)):
        parsed.clear()
        plan = plan_run(holdout, gold_dir, OracleSystem(), KgevalConfig(run=RunConfig(seeds=1)))
        try:
            found[name] = (items_module.vocabulary_asked_ahead(plan), len(parsed))
        finally:
            for store in plan.stores.values():
                store.close()
            plan.gold_hold.close()
    assert found["recorded"] == ({}, 0), found
    assert found["old"] == ({"mini": {"mini-05": [], "mini-20": [AWARD]}}, 2), found
