"""Issue 4 acceptance: a replay of the reference queries themselves is judged correct on every
question by every judge: on CK25 (when KGEVAL_CK25 points at it) and on the shipped sample
holdout."""

import json
import os
from pathlib import Path

import pytest

from kgeval.checklists import pre_eval_checklist
from kgeval.config import GoldConfig, KgevalConfig, RunConfig
from kgeval.gold import rebuild_gold
from kgeval.holdout import load_holdout
from kgeval.interop import import_text2sparql
from kgeval.runs import ResultsDB, execute_run
from kgeval.stores import EmbeddedStore
from kgeval.systems import ReplaySystem
from tests.conftest import CK25_MISSING, REPO

CK25 = Path(os.environ.get("KGEVAL_CK25", "/nonexistent"))


def _replay_of_references(holdout_dir: Path, gold_dir: Path, tmp_path: Path) -> dict[str, dict[str, bool]]:
    holdout = load_holdout(holdout_dir)
    path = tmp_path / "references.jsonl"
    path.write_text("".join(json.dumps({"kg": q.kg, "question_id": q.id, "sparql": q.sparql}) + "\n" for q in holdout.questions()))
    with ResultsDB(tmp_path / "r.duckdb") as db:
        meta = execute_run(holdout, gold_dir, ReplaySystem(path), KgevalConfig(run=RunConfig(seeds=1)), db, checklist=pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml"))
        assert {a.state for a in db.attempts(meta.run_id)} == {"answered"}
        verdicts: dict[str, dict[str, bool]] = {}
        for qid, _, v in db.verdicts(meta.run_id):
            verdicts.setdefault(v.judge, {})[qid] = v.correct
    assert set(verdicts) == {"seed", "execution"}
    return verdicts


@pytest.mark.skipif(not (CK25 / "questions.yml").is_file(), reason=CK25_MISSING)
def test_ck25_replay_of_reference_queries_is_correct_under_every_judge(tmp_path):
    import_text2sparql(CK25, "ck25", tmp_path / "holdout")
    holdout = load_holdout(tmp_path / "holdout")
    assert rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold").ok
    verdicts = _replay_of_references(tmp_path / "holdout", tmp_path / "gold", tmp_path)
    for judge, by_question in verdicts.items():
        assert len(by_question) == 50 and all(by_question.values()), (judge, [q for q, ok in by_question.items() if not ok])


@pytest.mark.skipif(not (REPO / "gold" / "MANIFEST.json").is_file(), reason="the sample holdout's gold is not in this checkout")
def test_sample_holdout_replay_of_reference_queries_is_correct_under_every_judge(tmp_path):
    verdicts = _replay_of_references(REPO / "holdout", REPO / "gold", tmp_path)
    for judge, by_question in verdicts.items():
        assert len(by_question) == len(load_holdout(REPO / "holdout").questions()) and all(by_question.values()), (
            judge, [q for q, ok in by_question.items() if not ok])
