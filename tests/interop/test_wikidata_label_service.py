"""A QALD-10-style benchmark over a Wikidata extract, end to end through the CLI: reference
queries and predictions written for WDQS (no PREFIX lines, `SERVICE wikibase:label`).

Before the label service was emulated, `holdout import qald` refused every reference query using
it, and a run scored every prediction using it `refused` (wrong) although right on Wikidata."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kgeval.cli import app
from kgeval.runs import ResultsDB

runner = CliRunner()
TTL = """
@prefix wd: <http://www.wikidata.org/entity/> . @prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
wd:Q25188 rdfs:label "Inception"@en ; wdt:P57 wd:Q25191 ; wdt:P161 wd:Q38111, wd:Q99 .
wd:Q25191 rdfs:label "Christopher Nolan"@en ; wdt:P31 wd:Q5 .
wd:Q38111 rdfs:label "Leonardo DiCaprio"@en ; wdt:P31 wd:Q5 .
wd:Q99 wdt:P31 wd:Q5 .
wd:Q1 rdfs:label "Dunkirk"@en ; wdt:P57 wd:Q25191 .
"""
LABELS = 'SERVICE wikibase:label { bd:serviceParam wikibase:language "[AUTO_LANGUAGE],en". }'
QUESTIONS = [  # (id, question, reference query as QALD-10 writes it)
    ("1", "Who directed Inception?", f"SELECT DISTINCT ?d WHERE {{ wd:Q25188 wdt:P57 ?d . {LABELS} }}"),
    ("2", "Who starred in Inception?", "SELECT DISTINCT ?a WHERE { wd:Q25188 wdt:P161 ?a . }"),
    ("3", "How many films did Christopher Nolan direct?", "SELECT (COUNT(?f) AS ?n) WHERE { ?f wdt:P57 wd:Q25191 }"),
]
PREDICTIONS = [  # (question id, prediction, correct on Wikidata)
    ("1", f"SELECT ?d ?dLabel WHERE {{ wd:Q25188 wdt:P57 ?d . {LABELS} }}", True),
    ("2", f"SELECT ?actor ?actorLabel WHERE {{\n  wd:Q25188 wdt:P161 ?actor .\n  {LABELS}\n}} ORDER BY ?actorLabel", True),
    ("3", f"select (count(distinct ?film) as ?n) where {{ ?film wdt:P57 wd:Q25191 . {LABELS} }}", True),
]


def test_a_wikidata_benchmark_imports_and_scores_the_label_service(tmp_path: Path):
    kg_dir = tmp_path / "kgs"
    kg_dir.mkdir()
    (kg_dir / "films.ttl").write_text(TTL, encoding="utf-8")
    qald = tmp_path / "qald10.json"
    qald.write_text(json.dumps({"dataset": {"id": "qald-10-mini"}, "questions": [
        {"id": qid, "kg": "films", "question": [{"language": "en", "string": text}], "query": {"sparql": sparql}}
        for qid, text, sparql in QUESTIONS]}), encoding="utf-8")  # fmt: skip
    holdout, gold, db = tmp_path / "h", tmp_path / "g", tmp_path / "r.duckdb"
    done = runner.invoke(app, ["holdout", "import", "qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(holdout), "--prefixes", "wikidata"])
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["gold", "rebuild", "--holdout", str(holdout), "--gold", str(gold)])
    assert done.exit_code == 0, done.output

    config = tmp_path / "kgeval.yaml"
    config.write_text("store:\n  predeclared_prefixes: wikidata\n", encoding="utf-8")
    replay = tmp_path / "predictions.jsonl"
    replay.write_text("".join(json.dumps({"kg": "films", "question_id": f"films-{qid}", "sparql": s}) + "\n" for qid, s, _ in PREDICTIONS), encoding="utf-8")
    ran = runner.invoke(app, ["run", "--system", "replay", "--replay", str(replay), "--seeds", "1", "--config", str(config),
                              "--holdout", str(holdout), "--gold", str(gold), "--db", str(db)])  # fmt: skip
    assert ran.exit_code == 0, ran.output
    run_id = ran.output.strip().splitlines()[-1]
    with ResultsDB(db, read_only=True) as results:
        primary = results.metadata(run_id).primary_judge
        verdicts = {qid: v for qid, _, v in results.verdicts(run_id) if v.judge == primary}
    assert {qid: v.correct for qid, v in verdicts.items()} == {f"films-{qid}": ok for qid, _, ok in PREDICTIONS}, {q: v.reason for q, v in verdicts.items()}
