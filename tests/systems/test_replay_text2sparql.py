"""The TEXT2SPARQL client's answer file (`text2sparql ask ... -o answers.json`) as a replay, over
a holdout KG imported from the same TEXT2SPARQL dataset, through `kgeval run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kgeval.cli import app
from kgeval.errors import InputError
from kgeval.holdout import load_holdout
from kgeval.interop import import_text2sparql
from kgeval.systems import ReplaySystem
from tests.interop.test_text2sparql import CK25, TOY, _dataset, needs_ck25

DATASET = "https://example.org/2025/toys/"


def _answer(source_id: object, lang: str, query: str, question: str = "", dataset: str = DATASET, prefix: str = "toy") -> dict:
    """One answer as the client writes it (models/response + qname and uri)."""
    return {"dataset": dataset, "question": question, "query": query, "endpoint": "http://127.0.0.1:8000",
            "qname": f"{prefix}:{source_id}-{lang}", "uri": f"{dataset}{source_id}-{lang}"}  # fmt: skip


def _run(tmp_path: Path, holdout: Path, answers: list[dict]) -> tuple[str, dict]:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers, indent=2), encoding="utf-8")
    db, gold = tmp_path / "r.duckdb", tmp_path / "gold"
    runner = CliRunner()
    rebuilt = runner.invoke(app, ["gold", "rebuild", "--holdout", str(holdout), "--gold", str(gold)])
    assert rebuilt.exit_code == 0, rebuilt.output
    ran = runner.invoke(app, ["run", "--system", "replay", "--replay", str(path), "--seeds", "1", "--holdout", str(holdout), "--gold", str(gold), "--db", str(db)])
    assert ran.exit_code == 0, ran.output
    run_id = ran.output.strip().splitlines()[-1]
    report = runner.invoke(app, ["report", run_id, "--db", str(db), "--format", "json", "--gold", str(gold)])
    return run_id, json.loads(report.stdout)


def test_toy_answers_in_two_languages_one_wrong_one_by_question_text(tmp_path):
    holdout = tmp_path / "holdout"
    import_text2sparql(_dataset(tmp_path / "src", TOY), "toys", holdout, lang="de")
    q1, q2, q3 = (q["query"]["sparql"] for q in TOY)
    answers = [
        _answer(1, "en", "ASK { FILTER(false) }"),  # English answers are left aside: the KG was imported in German
        _answer(1, "de", q1),
        _answer(2, "en", q2),
        _answer(2, "de", "SELECT ?o WHERE { <http://x/b> <http://x/p> ?o FILTER(?o != <http://x/c>) }"),  # wrong
        {"dataset": DATASET, "question": "Wie viele Links?", "query": q3},  # no qname/uri: by its text
    ]
    _, report = _run(tmp_path, holdout, answers)
    assert (report["overall"]["correct"], report["overall"]["n"]) == (2, 3)
    assert report["harness"]["errors"] == 0


def test_answers_that_match_no_question_are_clear_errors(tmp_path):
    holdout = tmp_path / "holdout"
    import_text2sparql(_dataset(tmp_path / "src", TOY), "toys", holdout, lang="en")
    loaded = load_holdout(holdout)
    cases = [
        ([_answer(1, "en", "ASK {}", dataset="https://other.org/")], r"answer 1: dataset 'https://other.org/' is not a KG of the holdout; imported datasets: https://example.org/2025/toys/"),
        ([_answer(1, "en", "ASK {}"), _answer(99, "en", "ASK {}")], r"answer 2: question '99' of https://example.org/2025/toys/ is not in holdout KG toys"),
        ([_answer(1, "en", "ASK {}"), _answer(1, "en", "ASK {}")], r"a.json: answer 2: a second record for toys/toy-1 seed 0"),
        ([{"dataset": DATASET, "question": "Something else?", "query": "ASK {}"}], r"no 'qname' or 'uri'"),
        (["not an object"], r"answer 1: expected an object"),
    ]
    for answers, message in cases:
        path = tmp_path / "a.json"
        path.write_text(json.dumps(answers), encoding="utf-8")
        with pytest.raises(InputError, match=message):
            ReplaySystem(path, loaded)
    with pytest.raises(InputError, match="needs the holdout"):
        ReplaySystem(path)


@needs_ck25
def test_ck25_answer_file_of_the_reference_queries_scores_every_question(tmp_path):
    holdout = tmp_path / "holdout"
    import_text2sparql(CK25, "ck25", holdout, lang="en")
    doc = yaml.safe_load((CK25 / "questions.yml").read_text(encoding="utf-8"))
    dataset = doc["dataset"]["id"]
    answers = [
        _answer(q["id"], lang, q["query"]["sparql"], text, dataset=dataset, prefix="ck25")
        for q in doc["questions"] for lang, text in q["question"].items()
    ]  # fmt: skip
    _, report = _run(tmp_path, holdout, answers)
    assert report["overall"]["n"] == len(doc["questions"])
    assert report["overall"]["correct"] == len(doc["questions"]), report["overall"]


def test_a_dataset_imported_in_two_languages_gets_each_answer_in_its_own_kg(tmp_path):
    """One dataset imported twice, in English and in German (two KGs): each answer goes to the KG
    of its language. Before, every answer was matched to the KG imported last, and the English
    ones were left aside as another language: the English KG's questions all went missing."""
    holdout = tmp_path / "holdout"
    source = _dataset(tmp_path / "src", TOY)
    import_text2sparql(source, "toys_en", holdout, lang="en")
    import_text2sparql(source, "toys_de", holdout, lang="de", id_prefix="toyde")
    q1, q2, q3 = (q["query"]["sparql"] for q in TOY)
    answers = [_answer(i, lang, q) for lang in ("en", "de") for i, q in ((1, q1), (2, q2), (3, q3))]
    answers[4] = _answer(2, "de", "ASK { <http://x/b> <http://x/p> <http://x/a> }")  # German question 2: wrong
    _, report = _run(tmp_path, holdout, answers)
    assert report["harness"]["errors"] == 0
    assert {g["group"]: (g["correct"], g["n"]) for g in report["by_kg"]} == {"toys_de": (2, 3), "toys_en": (3, 3)}


def test_an_empty_query_is_an_empty_answer_not_a_stopped_run(tmp_path):
    """The client writes `"query": ""` when the system gave nothing: that attempt is the
    system's empty answer (a harness error of kind `empty`); the other answers are judged."""
    holdout = tmp_path / "holdout"
    import_text2sparql(_dataset(tmp_path / "src", TOY), "toys", holdout, lang="en")
    q1, q2, _ = (q["query"]["sparql"] for q in TOY)
    answers = [_answer(1, "en", q1), _answer(2, "en", q2), _answer(3, "en", "")]
    path = tmp_path / "a.json"
    path.write_text(json.dumps(answers), encoding="utf-8")
    loaded = load_holdout(holdout)
    output = ReplaySystem(path, loaded).respond(loaded.kg("toys").questions[2], 0)
    assert output.sparql == "" and output.answer is None
