"""A system that breaks a tie at an ORDER BY ... LIMIT cut differently from the engine is right."""

from __future__ import annotations

import json

from kgeval.config import GoldConfig, KgevalConfig, RunConfig
from kgeval.gold import load_gold, rebuild_gold
from kgeval.holdout import load_holdout
from kgeval.runs import ResultsDB, execute_run
from kgeval.stores import EmbeddedStore
from kgeval.systems import ReplaySystem
from tests.conftest import MINI_TTL, PREFIX, write_holdout
from tests.runs.test_run import CHECKLIST

# dave is 34 like alice: the second place of "the two youngest" is a tie
TTL = MINI_TTL + 'e:dave a ex:Person ; rdfs:label "Dave"@en ; ex:age "34"^^xsd:integer ; ex:worksIn e:it .\n'
YOUNGEST = PREFIX + "SELECT ?p WHERE { ?p ex:age ?a } ORDER BY ?a LIMIT 2"
QUESTIONS = [{"id": "tie-01", "question": "Who are the two youngest people?", "sparql": YOUNGEST, "domain": "hr", "tags": ["order-limit"]}]
BY_NAME = PREFIX + "SELECT ?p WHERE {{ ?p ex:age ?a }} ORDER BY ?a {} LIMIT 2"


def _replayed(tmp_path, holdout, outputs: dict[int, dict]) -> tuple[dict, dict]:  # noqa: ANN001
    """Replay one output per seed of tie-01: (seed, judge) -> correct, and seed -> attempt."""
    path = tmp_path / "replay.jsonl"
    path.write_text("\n".join(json.dumps({"kg": "mini", "question_id": "tie-01", "seed": s, **o}) for s, o in outputs.items()))
    with ResultsDB(tmp_path / "r.duckdb") as db:
        config = KgevalConfig(run=RunConfig(seeds=len(outputs)))
        meta = execute_run(load_holdout(holdout), tmp_path / "gold", ReplaySystem(path), config, db, checklist=CHECKLIST)
        return {(seed, v.judge): v.correct for _, seed, v in db.verdicts(meta.run_id)}, {a.seed: a for a in db.attempts(meta.run_id)}


def test_other_tie_break_is_judged_correct_and_wrong_rows_are_not(tmp_path):
    holdout = write_holdout(tmp_path / "h", QUESTIONS, ttl=TTL)
    report = rebuild_gold(load_holdout(holdout), lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold")
    entry = load_gold(tmp_path / "gold")["tie-01"]
    assert report.ok and entry.ties is not None and entry.ties.tied
    candidates = {
        0: BY_NAME.format("?p"),  # carol, alice
        1: BY_NAME.format("DESC(?p)"),  # carol, dave
        2: PREFIX + "SELECT ?p WHERE { ?p ex:age ?a } ORDER BY DESC(?a) LIMIT 2",  # bob, then a 34: wrong
    }
    verdicts, attempts = _replayed(tmp_path, holdout, {s: {"sparql": q} for s, q in candidates.items()})
    assert verdicts == {(0, "seed"): True, (0, "execution"): True, (1, "seed"): True, (1, "execution"): True, (2, "seed"): False, (2, "execution"): False}
    # exactly one of the two tie breaks differs from the engine's, and says it was resolved
    assert sum("tie_resolved" in attempts[s].extra for s in (0, 1)) == 1


def test_an_answer_list_naming_the_other_tied_row_is_judged_correct(tmp_path):
    """A system that answers with a list (no SPARQL) is judged against the acceptable answer
    its items name, as a query's rows are: the other tied person, by IRI, bracketed IRI or
    bare name, in either order, is right; a list naming someone outside the tie is not."""
    from tests.conftest import EX

    holdout = write_holdout(tmp_path / "h", QUESTIONS, ttl=TTL)
    rebuild_gold(load_holdout(holdout), lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold")
    engine_choice = {row[0].value.rsplit("/", 1)[1] for row in load_gold(tmp_path / "gold")["tie-01"].result.rows} - {"carol"}
    other = ({"alice", "dave"} - engine_choice).pop()  # the tied person the engine left out
    answers = {
        0: [f"{EX}entities/carol", f"{EX}entities/{other}"],
        1: [f"<{EX}entities/{other}>", f" <{EX}entities/carol> "],
        2: [other.title(), "carol"],
        3: ["carol", "bob"],  # bob is 41: not in any acceptable answer
        4: ["carol", "alice", "dave"],  # both tied people: one too many
    }
    verdicts, attempts = _replayed(tmp_path, holdout, {s: {"answer": a} for s, a in answers.items()})
    for seed in (0, 1, 2):
        assert verdicts[(seed, "seed")] and verdicts[(seed, "execution")], (seed, answers[seed])
        assert "tie_resolved" in attempts[seed].extra
    for seed in (3, 4):
        assert not verdicts[(seed, "execution")], (seed, answers[seed])
