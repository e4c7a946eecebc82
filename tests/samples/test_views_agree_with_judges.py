"""On real holdouts (the shipped sample holdout: several KGs; CK25 when KGEVAL_CK25 points at
it), every sample of an oracle run and a weak-control run builds, and its row marks agree with
the execution judge's verdict: an accept has no missing and no extra row; a rejection on the set
or value path has at least one. The questions and their SPARQL were written by others."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kgeval.checklists import pre_eval_checklist
from kgeval.config import GoldConfig, KgevalConfig, RunConfig
from kgeval.gold import load_gold, rebuild_gold
from kgeval.holdout import load_holdout
from kgeval.interop import import_text2sparql
from kgeval.runs import ResultsDB, execute_run
from kgeval.samples import SampleSource, build_sample, sample_index, store_opener
from kgeval.stores import EmbeddedStore
from kgeval.systems import OracleSystem, WeakSystem
from tests.conftest import CK25_MISSING, REPO

CK25 = Path(os.environ.get("KGEVAL_CK25", "/nonexistent"))


def _check_runs(holdout_dir: Path, gold_dir: Path, db_path: Path) -> dict[str, int]:
    holdout, cfg = load_holdout(holdout_dir), KgevalConfig(run=RunConfig(seeds=1))
    checked = {"accepted": 0, "rejected": 0}
    with ResultsDB(db_path) as db:
        run_ids = [execute_run(holdout, gold_dir, system, cfg, db, checklist=pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")).run_id
                   for system in (OracleSystem(), WeakSystem())]
        source = SampleSource(db, load_gold(gold_dir), holdout, store_opener(cfg, holdout))
        for run_id in run_ids:
            for line in sample_index(source, run_id):
                sample = build_sample(source, run_id, line.question_id, line.seed)
                _agrees(sample, checked)
    return checked


def _agrees(sample, checked: dict[str, int]) -> None:  # noqa: ANN001 - a Sample
    verdict = next((v for v in sample.verdicts if v.judge == "execution"), None)
    if verdict is None or sample.answer_table is None or verdict.path in ("truncated", "invalid_sparql"):
        return
    off = sample.gold_table.counts.get("missing", 0) + sample.answer_table.counts.get("extra", 0)
    where = f"{sample.run_id} {sample.question_id}: {verdict.path} {verdict.reason}"
    if verdict.correct:
        assert off == 0, where
        checked["accepted"] += 1
    elif verdict.path in ("set", "value", "ask"):
        assert off > 0, where
        checked["rejected"] += 1


@pytest.mark.skipif(not (REPO / "gold" / "MANIFEST.json").is_file(), reason="the sample holdout's gold is not in this checkout")
def test_sample_holdout_views_agree_with_the_execution_judge(tmp_path):
    checked = _check_runs(REPO / "holdout", REPO / "gold", tmp_path / "r.duckdb")
    questions = len(load_holdout(REPO / "holdout").questions())
    assert checked["accepted"] >= questions and checked["rejected"] > 0, checked


@pytest.mark.skipif(not (CK25 / "questions.yml").is_file(), reason=CK25_MISSING)
def test_ck25_views_agree_with_the_execution_judge(tmp_path):
    import_text2sparql(CK25, "ck25", tmp_path / "holdout")
    holdout = load_holdout(tmp_path / "holdout")
    assert rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold").ok
    checked = _check_runs(tmp_path / "holdout", tmp_path / "gold", tmp_path / "r.duckdb")
    assert checked["accepted"] >= 50 and checked["rejected"] >= 20, checked
