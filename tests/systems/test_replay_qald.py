"""A QALD JSON file (a QALD challenge submission, or `kgeval export RUN --format qald`) as a
replay, over a benchmark imported with `kgeval holdout import qald --kg-dir` (three KGs, ids of
the source file). Checked by a second route: a run's own QALD export, replayed, gives the
same verdict on every question, with its SPARQL and (one-variable results) from its answers
alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgeval.cli import app
from kgeval.errors import InputError
from kgeval.gold import load_gold
from kgeval.holdout import load_holdout
from kgeval.judges import says_nothing
from kgeval.runs import ResultsDB
from kgeval.systems import ReplaySystem
from tests.interop.test_benchmark_import import benchmark  # noqa: F401 - the fixture

runner = CliRunner()


def _import(qald: Path, kg_dir: Path, tmp_path: Path, empty: str) -> tuple[Path, Path]:
    """(holdout, gold) of the benchmark, its question with an empty gold (`empty`) excluded."""
    holdout, gold = tmp_path / "h", tmp_path / "g"
    done = runner.invoke(app, ["holdout", "import", "qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(holdout)])
    assert done.exit_code == 0, done.output
    rebuilt = runner.invoke(app, ["gold", "rebuild", "--holdout", str(holdout), "--gold", str(gold)])
    assert rebuilt.exit_code == 0, rebuilt.output
    excluded = runner.invoke(app, ["holdout", "exclude", empty, "--why", "empty gold", "--holdout", str(holdout)])
    assert excluded.exit_code == 0, excluded.output
    zero = [qid for qid, entry in load_gold(gold).items() if says_nothing(entry.result) and qid != empty]  # a COUNT of 0: nothing counted
    if zero:
        confirmed = runner.invoke(app, ["holdout", "confirm-empty", *zero, "--why", "no one that old in the generated data", "--holdout", str(holdout)])
        assert confirmed.exit_code == 0, confirmed.output
    rebuilt = runner.invoke(app, ["gold", "rebuild", "--holdout", str(holdout), "--gold", str(gold)])  # executes nothing
    assert rebuilt.exit_code == 0, rebuilt.output
    return holdout, gold


@pytest.fixture
def imported(benchmark, tmp_path):  # noqa: F811 - the fixture imported above
    qald, kg_dir = benchmark
    return json.loads(qald.read_text()), *_import(qald, kg_dir, tmp_path, "pharma-41")


@pytest.fixture
def shared_ids(benchmark, tmp_path):  # noqa: F811 - the fixture imported above
    """The benchmark as QALD-9-plus ships its DBpedia and Wikidata versions: each KG numbers its
    questions from 1, so every source id 1..16 is a question of all three KGs."""
    qald, kg_dir = benchmark
    doc = json.loads(qald.read_text())
    numbered: dict[str, int] = {}
    for q in doc["questions"]:
        numbered[q["kg"]] = numbered.get(q["kg"], 0) + 1
        q["id"] = str(numbered[q["kg"]])
    qald.write_text(json.dumps(doc), encoding="utf-8")
    return _import(qald, kg_dir, tmp_path, "pharma-9")


def _run(tmp_path: Path, holdout: Path, gold: Path, replay: Path, db: Path) -> str:
    ran = runner.invoke(app, ["run", "--system", "replay", "--replay", str(replay), "--seeds", "1",
                              "--holdout", str(holdout), "--gold", str(gold), "--db", str(db)])  # fmt: skip
    assert ran.exit_code == 0, ran.output
    return ran.output.strip().splitlines()[-1]


def _verdicts(db: Path, run_id: str) -> dict[str, bool]:
    """Question id -> the primary judge's decision, from the results database."""
    with ResultsDB(db, read_only=True) as results:
        primary = results.metadata(run_id).primary_judge
        return {qid: v.correct for qid, _, v in results.verdicts(run_id) if v.judge == primary}


def _run_and_replay_its_export(tmp_path: Path, holdout: Path, gold: Path, lines: list[str]) -> tuple[Path, dict[str, bool], Path]:
    """Replay `lines` (47 judged questions, some right, some wrong), export the run as QALD and
    check its replay gives the same verdicts: (results db, verdicts, the QALD export)."""
    jsonl = tmp_path / "attempts.jsonl"
    jsonl.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = tmp_path / "r.duckdb"
    first = _run(tmp_path, holdout, gold, jsonl, db)
    expected = _verdicts(db, first)
    assert 0 < sum(expected.values()) < len(expected) == 47
    exported = tmp_path / "submission.json"
    done = runner.invoke(app, ["export", first, "--db", str(db), "--format", "qald", "--holdout", str(holdout), "-o", str(exported)])
    assert done.exit_code == 0, done.output
    assert _verdicts(db, _run(tmp_path, holdout, gold, exported, db)) == expected
    return db, expected, exported


def test_a_runs_qald_export_replays_to_the_same_verdicts(imported, tmp_path):
    source, holdout, gold = imported
    loaded = load_holdout(holdout)
    ours = {theirs: (kg.id, qid) for kg in loaded.kgs for qid, theirs in kg.source["ids"].items()}
    lines = []
    for i, q in enumerate(source["questions"]):
        kg, qid = ours[q["id"]]
        if qid == "pharma-41":
            continue
        sparql = q["query"]["sparql"] if i % 3 else "SELECT ?x WHERE { ?x ?p ?o } LIMIT 2"  # every third wrong
        lines.append(json.dumps({"kg": kg, "question_id": qid, "sparql": sparql.upper() if i % 5 == 1 else sparql}))
    db, expected, exported = _run_and_replay_its_export(tmp_path, holdout, gold, lines)

    # answers alone (a submission without queries): one-variable results and booleans
    doc = json.loads(exported.read_text())
    # (a question whose SPARQL fails has no answers in the export, not an empty one: left out here)
    single = [q for q in doc["questions"] if "answers" in q and len(q["answers"][0].get("head", {}).get("vars", [])) <= 1]
    for q in single:
        del q["query"]
    answers_only = tmp_path / "answers.json"
    answers_only.write_text(json.dumps({"dataset": doc["dataset"], "questions": single}, indent=2), encoding="utf-8")
    ids = {ours[q["id"]][1] for q in single}
    assert len(ids) >= 30
    ran = runner.invoke(app, ["run", "--system", "replay", "--replay", str(answers_only), "--seeds", "1",
                              "--holdout", str(holdout), "--gold", str(gold), "--db", str(db)])  # fmt: skip
    # the questions it leaves out are missing answers: too many to publish an accuracy, but judged
    run_id = ran.output.strip().splitlines()[-1]
    assert {qid: ok for qid, ok in _verdicts(db, run_id).items() if qid in ids} == {qid: expected[qid] for qid in ids}


def test_questions_it_cannot_match_are_named(imported, tmp_path):
    source, holdout, _ = imported
    loaded = load_holdout(holdout)

    def replay(questions: list[dict]) -> ReplaySystem:
        path = tmp_path / "s.json"
        path.write_text(json.dumps({"questions": questions}), encoding="utf-8")
        return ReplaySystem(path, loaded)

    with pytest.raises(InputError, match="question 999: no question of the holdout was imported from source id '999'"):
        replay([{"id": 999, "query": {"sparql": "ASK {}"}}])
    with pytest.raises(InputError, match="question 3: no question of the holdout"):
        replay([{"id": 3, "kg": "pharma", "query": {"sparql": "ASK {}"}}])  # question 3 is hr's
    pair = {"head": {"vars": ["a", "b"]}, "results": {"bindings": []}}
    with pytest.raises(InputError, match="question 2: answers: a result of 2 variables cannot be judged as an answer list"):
        replay([{"id": 2, "answers": [pair]}])
    with pytest.raises(InputError, match="question a second record|a second record for hr/hr-1"):
        replay([{"id": 1, "query": {"sparql": "ASK {}"}}, {"id": "1", "answers": [{"boolean": True}]}])
    system = replay([{"id": 4, "kg": "hr", "answers": [{"head": {}, "boolean": False}]}])
    assert system.respond(loaded.kg("hr").questions[3], 0).answer == [False]
    headless = {"results": {"bindings": [{"d": {"type": "uri", "value": "http://bench.example/hr/d1"}}]}}
    system = replay([{"id": 1, "answers": [headless]}])
    assert system.respond(loaded.kg("hr").questions[0], 0).answer == ["http://bench.example/hr/d1"]


def test_exports_of_ids_several_kgs_share_replay_by_the_kg_field(shared_ids, tmp_path):
    """A run's QALD export and the gold's name each question's KG in the field the benchmark
    was imported with: replayed, a run gives the same verdicts and the gold is right on every
    question. Without it every question was refused ("source id '1' is a question of KGs hr,
    pharma, retail: give its 'kg' field")."""
    holdout, gold = shared_ids
    questions = load_holdout(holdout).evaluated_questions()
    lines = [json.dumps({"kg": q.kg, "question_id": q.id, "sparql": q.sparql if i % 3 else "SELECT ?x WHERE { ?x ?p ?o } LIMIT 2"})
             for i, q in enumerate(questions)]  # fmt: skip
    db, expected, exported = _run_and_replay_its_export(tmp_path, holdout, gold, lines)
    keys = [(q["kg"], q["id"]) for q in json.loads(exported.read_text())["questions"]]
    assert len(set(keys)) == 47 and {kg for kg, _ in keys} == {"hr", "retail", "pharma.ttl"} and len({i for _, i in keys}) == 16

    gold_qald = tmp_path / "gold.json"
    done = runner.invoke(app, ["gold", "export", "--holdout", str(holdout), "--gold", str(gold), "-o", str(gold_qald)])
    assert done.exit_code == 0, done.output
    assert all(q["kg"] in ("hr", "retail", "pharma.ttl") for q in json.loads(gold_qald.read_text())["questions"])
    replayed = _verdicts(db, _run(tmp_path, holdout, gold, gold_qald, db))
    assert replayed == dict.fromkeys(expected, True)


def test_kgs_imported_one_by_one_with_shared_ids_are_told_apart_by_a_kg_field(tmp_path):
    """QALD-9-plus's DBpedia and Wikidata files imported one at a time (`--kg FILE --name`) number
    their questions alike: a submission's record names its KG by our KG id in a `kg` field (the
    error says so, and with which values), where the reader had ignored that field for them."""
    holdout = tmp_path / "h"
    for name, ns in (("dbpedia", "http://dbpedia.org/resource/"), ("wikidata", "http://www.wikidata.org/entity/")):
        kg = tmp_path / f"{name}.ttl"
        kg.write_text(f'<{ns}Berlin> <{ns}country> <{ns}Germany> .\n<{ns}Paris> <{ns}country> <{ns}France> .\n', encoding="utf-8")
        questions = [
            {"id": "1", "question": [{"language": "en", "string": "Which cities are in Germany?"}],
             "query": {"sparql": f"SELECT ?c WHERE {{ ?c <{ns}country> <{ns}Germany> }}"}},
            {"id": "2", "question": [{"language": "en", "string": "Is Paris in France?"}],
             "query": {"sparql": f"ASK {{ <{ns}Paris> <{ns}country> <{ns}France> }}"}},
        ]  # fmt: skip
        source = tmp_path / f"qald-{name}.json"
        source.write_text(json.dumps({"questions": questions}), encoding="utf-8")
        done = runner.invoke(app, ["holdout", "import", "qald", str(source), "--kg", str(kg), "--name", name, "--out", str(holdout)])
        assert done.exit_code == 0, done.output
    loaded = load_holdout(holdout)
    submission = tmp_path / "s.json"
    submission.write_text(json.dumps({"questions": [{"id": "1", "query": {"sparql": "ASK {}"}}]}), encoding="utf-8")
    with pytest.raises(InputError, match=r"source id '1' is a question of KGs dbpedia, wikidata: give its 'kg' field \(dbpedia or wikidata\)"):
        ReplaySystem(submission, loaded)
    answers = [
        {"id": "1", "kg": "wikidata", "answers": [{"head": {"vars": ["c"]}, "results": {"bindings": [{"c": {"type": "uri", "value": "x"}}]}}]},
        {"id": "1", "kg": "dbpedia", "query": {"sparql": "SELECT ?c WHERE { ?c ?p ?o }"}},
        {"id": "2", "kg": "wikidata", "answers": [{"boolean": True}]},
    ]
    submission.write_text(json.dumps({"questions": answers}), encoding="utf-8")
    system = ReplaySystem(submission, loaded)
    by_kg = {kg.id: kg.questions for kg in loaded.kgs}
    assert system.respond(by_kg["wikidata"][0], 0).answer == ["x"]
    assert system.respond(by_kg["dbpedia"][0], 0).sparql == "SELECT ?c WHERE { ?c ?p ?o }"
    assert system.respond(by_kg["wikidata"][1], 0).answer == [True]
