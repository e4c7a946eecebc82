"""A replay run on the mini holdout with answers of every kind a viewer must show: right with an
extra label column, a missing row, an extra row, a strict subset the seed judge accepts (a judge
disagreement), a wrong ASK, a count under another name, an empty gold, SPARQL that does not
parse (the model's failure: judged wrong), and an attempt with no record (the harness's: an
error, not judged). The SPARQL is written as people write it: mixed-case keywords, comments,
sub-selects."""

from __future__ import annotations

import json
from pathlib import Path

from kgeval.checklists import pre_eval_checklist
from kgeval.config import KgevalConfig, RunConfig
from kgeval.holdout import load_holdout
from kgeval.runs import ResultsDB, execute_run
from kgeval.systems import ReplaySystem
from tests.conftest import EX, REPO

P = f"PREFIX ex: <{EX}vocab/>\nprefix e: <{EX}entities/>\nPREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"

ANSWERS = {
    # right, with a label column beside the IRI and the department under another name
    "mini-01": P + "select ?dept ?name WHERE {  # Alice's department\n  e:alice ex:worksIn ?dept .\n  ?dept rdfs:label ?name FILTER(LANG(?name) = 'en')\n}",
    # wrong: Bob is missing (an over-constrained filter)
    "mini-02": P + "SELECT ?person WHERE {\n  ?person ex:worksIn e:sales ;\n          ex:age ?age .\n  filter (?age < 40)  # only the young ones\n}",
    # right: a count under another name, through a sub-select
    "mini-03": P + "SELECT (COUNT(?p) AS ?total) WHERE { { SELECT DISTINCT ?p WHERE { ?p a ex:Person } } }",
    "mini-04": P + "ask { e:carol ex:worksIn e:it }",
    # wrong: Carol is not in sales
    "mini-05": P + "ASK { e:carol ex:worksIn ?anywhere }",
    # strict subset (29 of 30): the seed judge's membership path accepts, the execution judge rejects
    "mini-06": P + "SELECT ?i WHERE { ?i a ex:Item . FILTER(?i != e:item7) }",
    # right: the gold is empty
    "mini-07": P + "SELECT ?p WHERE { ?p ex:age ?a FILTER(?a > 150) }",
    # wrong: the English label as an extra row
    "mini-08": P + "SELECT ?l WHERE { e:sales rdfs:label ?l }",
}
BROKEN = {("mini-01", 1): "SELECT ?d WHERE { e:alice ex:worksIn ?d "}  # seed 1 forgets the closing brace
UNRECORDED = {("mini-04", 1)}  # the replay has no record: a harness error ("missing")


def write_replay(path: Path, seeds: int = 2) -> Path:
    lines = []
    for qid, sparql in ANSWERS.items():
        for seed in range(seeds):
            if (qid, seed) in UNRECORDED:
                continue
            lines.append({"kg": "mini", "question_id": qid, "seed": seed, "sparql": BROKEN.get((qid, seed), sparql)})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def replay_run(holdout: Path, gold: Path, db_path: Path, replay: Path, seeds: int = 2) -> str:
    cfg = KgevalConfig(run=RunConfig(seeds=seeds))
    with ResultsDB(db_path) as db:
        checklist = pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")
        return execute_run(load_holdout(holdout), gold, ReplaySystem(replay), cfg, db, checklist=checklist, replay=replay).run_id


def two_runs(holdout: Path, gold: Path, db_path: Path, tmp: Path) -> tuple[str, str]:
    """(oracle run, replay run) in one results file; the replay is the newer."""
    from tests.oversight import run_system

    oracle = run_system(holdout, gold, db_path, "oracle", seeds=2)
    return oracle, replay_run(holdout, gold, db_path, write_replay(tmp / "replay.jsonl"))


PREDECLARED = {"ex": f"{EX}vocab/", "e": f"{EX}entities/"}
NO_PREFIX_LINES = {  # Wikidata style: the engine declares the prefixes, the candidate does not
    "mini-02": "SELECT ?p WHERE { ?p ex:worksIn e:sales }",
    "mini-04": "ASK { e:carol ex:worksIn e:it }",
}


def config_run(holdout: Path, gold: Path, db: Path, records: dict[str, str], cfg: KgevalConfig) -> str:
    """A one-seed replay run of `records` (question id: SPARQL) with `cfg` as its configuration."""
    replay = db.with_suffix(".jsonl")
    replay.write_text("".join(json.dumps({"kg": "mini", "question_id": q, "seed": 0, "sparql": s}) + "\n" for q, s in records.items()))
    with ResultsDB(db) as results:
        checklist = pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")
        return execute_run(load_holdout(holdout), gold, ReplaySystem(replay), cfg, results, checklist=checklist, replay=replay).run_id
