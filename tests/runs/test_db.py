"""The results store's rows: JSON columns hold the values `json.dumps` held, written by
pydantic-core's encoder (a quarter of the time on the writer thread), with `json.dumps` where
that encoder refuses a text."""

from __future__ import annotations

import json
import math

from kgeval.config import KgevalConfig, RunConfig
from kgeval.holdout import load_holdout
from kgeval.runs import ResultsDB, execute_run
from kgeval.runs._db import json_text
from kgeval.runs._model import Try
from kgeval.systems import ReplaySystem
from tests.runs.test_run import CHECKLIST


def test_json_text_reads_back_as_json_dumps_did():
    tries = [Try(n=1, started_at="2026-01-01T00:00:00.000+00:00", latency_ms=0.1 + 0.2, outcome="ok"), Try(n=2, started_at="x", latency_ms=1e-05, outcome="transport", error="Straße \u2603", http_status=503)]
    values = [
        {"precision": 1 / 3, "recall": 1e-05, "f1": 12345678901234567890.5, "ids": [1, 2**70], "name": "Ünïcode \u2603", "none": None, "flag": True},
        ["e:p1", 3, 2.5, False, None],
        {},
    ]
    for value in values:
        assert json.loads(json_text(value)) == json.loads(json.dumps(value))
    assert json.loads(json_text(tries)) == json.loads(json.dumps([t.model_dump(mode="json") for t in tries]))
    assert math.isnan(json.loads(json_text({"x": float("nan")}))["x"]) and json.loads(json_text([float("inf")])) == [float("inf")]


def test_a_lone_surrogate_in_a_systems_answer_is_stored_escaped(mini_holdout, mini_gold, tmp_path):
    """pydantic-core cannot encode a lone surrogate (a replay's JSON may hold one): the row is
    written by json.dumps, escaped, and the run completes (DuckDB's JSON column then reads the
    escape back as U+FFFD, as it did when every row went through json.dumps)."""
    assert json.loads(json_text(["\ud800x"])) == ["\ud800x"]
    replay = tmp_path / "replay.jsonl"
    replay.write_text(json.dumps({"kg": "mini", "question_id": "mini-01", "seed": 0, "answer": ["\ud800x"]}) + "\n")
    with ResultsDB(tmp_path / "r.duckdb") as db:
        meta = execute_run(load_holdout(mini_holdout), mini_gold, ReplaySystem(replay), KgevalConfig(run=RunConfig(seeds=1)), db, checklist=CHECKLIST)
        answers = {a.question_id: a.answer for a in db.attempts(meta.run_id)}
    assert answers["mini-01"] == ["\ufffdx"]


def test_an_answer_nested_500_deep_is_judged_wrong_not_excused(mini_holdout, mini_gold, tmp_path):
    """1 KB of valid JSON, an answer item nested 500 deep: making it storable once recursed
    (RecursionError: the attempt became a harness error, excluded from accuracy), and the
    database's JSON encoder refuses more than 255 levels (the run ended). The model's answer is
    scored, wrong (DESIGN invariant 5)."""
    deep = "[" * 500 + '"mini"' + "]" * 500
    replay = tmp_path / "replay.jsonl"
    replay.write_text('{"kg": "mini", "question_id": "mini-01", "seed": 0, "answer": [' + deep + ', {"a": ' + deep + "}]}\n")
    with ResultsDB(tmp_path / "r.duckdb") as db:
        meta = execute_run(load_holdout(mini_holdout), mini_gold, ReplaySystem(replay), KgevalConfig(run=RunConfig(seeds=1)), db, checklist=CHECKLIST)
        attempt = next(a for a in db.attempts(meta.run_id) if a.question_id == "mini-01")
        verdicts = [v for qid, _, v in db.verdicts(meta.run_id) if qid == "mini-01"]
    assert attempt.state == "answered", (attempt.state, attempt.error)
    assert verdicts and not any(v.correct for v in verdicts)
