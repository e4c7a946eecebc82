"""Issue 32, done means: on the sample holdout, a replay answering every entity question with the
entities' names (through `VALUES` of the gold IRIs and `rdfs:label`) is judged wrong by the
primary judge for each of them; the JSON report carries `standard_execution_accuracy`,
`lenient_accuracy` and `rule_accepts` (label_for_entity counting them); each of those attempts
carries `answer_in_query`. Run as a user runs it: `kgeval run --system replay`, then `kgeval
report --format json` and `kgeval export`; the replay is generated from the holdout's gold."""

from __future__ import annotations

import json

import pytest
import yaml

from kgeval.gold import load_gold
from kgeval.holdout import load_holdout
from kgeval.stores import Term
from tests.cli.test_cli import kgeval
from tests.conftest import REPO

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"


def _term(cell: Term | None) -> str:
    if cell is None:
        return "UNDEF"
    if cell.type == "uri":
        return f"<{cell.value}>"
    text = json.dumps(cell.value)
    return text + (f"@{cell.lang}" if cell.lang else f"^^<{cell.datatype}>" if cell.datatype else "")


def names_query(vars_: list[str], rows: list, iri_columns: list[int]) -> str:
    """The gold's rows through VALUES, each IRI column given as the entity's label instead."""
    values = " ".join("(" + " ".join(_term(cell) for cell in row) + ")" for row in rows)
    shown = [f"?{v}_name" if j in iri_columns else f"?{v}" for j, v in enumerate(vars_)]
    labels = " ".join(f"?{vars_[j]} <{RDFS_LABEL}> ?{vars_[j]}_name ." for j in iri_columns)
    return f"SELECT {' '.join(shown)} WHERE {{\n  VALUES ({' '.join('?' + v for v in vars_)}) {{ {values} }}\n  {labels}\n}}"


@pytest.fixture(scope="module")
def names_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("names")
    gold = load_gold(REPO / "gold")
    lines, entity_questions = [], {}
    for kg in load_holdout(REPO / "holdout").kgs:
        for q in kg.questions:
            result = gold[q.id].result
            iri_columns = [j for j in range(len(result.vars)) if any(r[j] is not None and r[j].type == "uri" for r in result.rows)]
            if iri_columns and not result.truncated:
                sparql = names_query(result.vars, result.rows, iri_columns)
                entity_questions[q.id] = {cell.value for row in result.rows for j, cell in enumerate(row) if j in iri_columns}
            else:
                sparql = q.sparql  # every other question answered right: the run stays under the error limit
            lines.append(json.dumps({"kg": kg.id, "question_id": q.id, "seed": 0, "sparql": sparql}))
    replay = tmp / "replay.jsonl"
    replay.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = tmp / "kgeval.yaml"
    config.write_text(yaml.safe_dump({"run": {"seeds": 1}}), encoding="utf-8")
    db = tmp / "r.duckdb"
    ran = kgeval("run", "--system", "replay", "--replay", str(replay), "--holdout", str(REPO / "holdout"), "--gold", str(REPO / "gold"),
                 "--db", str(db), "--config", str(config))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    run_id = ran.stdout.strip().splitlines()[-1]
    report = kgeval("report", run_id, "--db", str(db), "--gold", str(REPO / "gold"), "--format", "json", "--config", str(config))
    assert report.returncode == 0, report.stderr
    exported = kgeval("export", run_id, "--db", str(db))
    assert exported.returncode == 0, exported.stderr
    attempts = {a["question_id"]: a for a in map(json.loads, exported.stdout.splitlines())}
    return json.loads(report.stdout), attempts, entity_questions, (db, run_id, config)


def test_every_name_for_an_entity_is_wrong_and_flagged(names_run):
    report, attempts, entities, _ = names_run
    assert len(entities) >= 15  # the sample holdout's entity questions (a truncated gold is left out)
    for qid, iris in entities.items():
        attempt = attempts[qid]
        primary = next(v for v in attempt["verdicts"] if v["judge"] == report["metadata"]["primary_judge"])
        assert not primary["correct"], (qid, primary["reason"])
        assert attempt["extra"]["answer_in_query"] == sorted(iris), qid
    for qid, attempt in attempts.items():  # the reference queries name no answer of theirs
        assert (qid in entities) == ("answer_in_query" in attempt["extra"]), qid
    assert report["answer_in_query"]["attempts"] == len(entities)
    assert report["answer_in_query"]["accepted"] == 0


def test_the_report_counts_what_label_for_entity_alone_would_accept(names_run):
    report, attempts, entities, _ = names_run
    rule = report["rule_accepts"]["label_for_entity"]
    assert rule["on"] is False
    alone = {qid for qid, a in attempts.items() if "label_for_entity" in _execution(a)["details"]["leniency"]["alone"]}
    assert rule["which"] and set(rule["which"]) == alone and rule["questions"] == len(alone)
    assert alone <= entities.keys()
    # the default score did not count them; the all-rules figure does, the field's does not
    n = report["overall"]["n"]
    assert report["overall"]["correct"] == n - len(entities)
    assert report["lenient_accuracy"]["correct"] == report["overall"]["correct"] + len(alone)
    assert report["standard_execution_accuracy"]["correct"] <= report["overall"]["correct"]
    for name in ("standard_execution_accuracy", "lenient_accuracy"):
        figure = report[name]
        assert figure["n"] == n and figure["ci_low"] <= figure["accuracy"] <= figure["ci_high"]


def test_markdown_report_shows_the_three_figures_and_the_rule_table(names_run):
    _, _, _, (db, run_id, config) = names_run
    md = kgeval("report", run_id, "--db", str(db), "--gold", str(REPO / "gold"), "--config", str(config))
    assert md.returncode == 0, md.stderr
    assert "| **standard execution accuracy** | " in md.stdout and "the field's comparator, as Spider's execution accuracy" in md.stdout
    assert "| lenient | " in md.stdout and "every rule and reading on" in md.stdout
    assert "| label_for_entity | off |" in md.stdout
    assert "**answer in the query**" in md.stdout
    page = kgeval("report", run_id, "--db", str(db), "--gold", str(REPO / "gold"), "--config", str(config), "--format", "html")
    assert page.returncode == 0, page.stderr
    assert "<strong>standard execution accuracy</strong>" in page.stdout and "as Spider" in page.stdout
    assert "<td>label_for_entity</td>" in page.stdout


def _execution(attempt: dict) -> dict:
    return next(v for v in attempt["verdicts"] if v["judge"] == "execution")
