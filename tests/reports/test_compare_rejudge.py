"""`kgeval compare` on runs whose judges differ (issue 42): the refusal says which judge, version or
rule differs and the one command that makes them comparable; that command, run as printed,
does; `compare --rejudge` compares them on the fly and stores nothing. The older run is made
by this kgeval with the execution judge's logic version set back (to 9), as a run judged before
the version moved to this kgeval's recorded it."""

from __future__ import annotations

import json
import re
import shlex

import pytest

import kgeval.judges._execution as execution
from kgeval.checklists import pre_eval_checklist
from kgeval.config import KgevalConfig, RunConfig
from kgeval.holdout import load_holdout
from kgeval.runs import ResultsDB, execute_run
from kgeval.systems import WeakSystem
from tests.cli.test_cli import kgeval
from tests.conftest import REPO

CHECKLIST = pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")
CURRENT = execution.LOGIC_VERSION
"""This kgeval's execution logic version: the newer runs are judged with it."""
OLDER, OLDEST = ("9", "8") if CURRENT not in ("9", "8") else ("7", "6")


def _weak_run(db, holdout, gold, config: KgevalConfig) -> str:  # noqa: ANN001
    with ResultsDB(db) as results:
        return execute_run(load_holdout(holdout), gold, WeakSystem(), config, results, checklist=CHECKLIST).run_id


@pytest.fixture
def older_and_newer(mini_holdout, mini_gold, tmp_path, monkeypatch):
    db = tmp_path / "r.duckdb"
    config = KgevalConfig(run=RunConfig(seeds=2))
    monkeypatch.setattr(execution, "LOGIC_VERSION", OLDER)
    older = _weak_run(db, mini_holdout, mini_gold, config)
    monkeypatch.undo()
    newer = _weak_run(db, mini_holdout, mini_gold, config)
    return db, older, newer


def _remedy(stderr: str) -> list[str]:
    found = re.search(r"to make them comparable: `kgeval ([^`]*)`", " ".join(stderr.split()))
    assert found, stderr
    return shlex.split(found.group(1))


def test_the_refusal_names_the_version_and_the_command_that_makes_them_comparable(older_and_newer):
    db, older, newer = older_and_newer
    refused = kgeval("compare", older, newer, "--db", str(db))
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 1 and f"judge versions execution: execution-{OLDER}+" in said and f"vs execution-{CURRENT}+" in said, said
    command = _remedy(refused.stderr)
    assert command == ["rejudge", older, "--like", newer, "--db", str(db)]  # the older run, with the newer one's judges

    done = kgeval(*command, "--format", "json")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["flipped"] == 0 and data["changes"]  # the version changed, not one decision
    assert all(f"judge version execution-{OLDER} -> execution-{CURRENT}" in c["why"] for c in data["changes"] if c["judge"] == "execution")
    assert {c["judge"] for c in data["changes"]} == {"execution"} and all("version" in c["fields"] for c in data["changes"])
    compared = kgeval("compare", data["run_id"], newer, "--db", str(db), "--format", "json")
    assert compared.returncode == 0 and json.loads(compared.stdout)["comparability"]["comparable"] is True, compared.stderr


def test_compare_rejudge_compares_on_the_fly_and_stores_nothing(older_and_newer):
    db, older, newer = older_and_newer
    with ResultsDB(db, read_only=True) as results:
        before = [m.run_id for m in results.runs(status=None)]
    done = kgeval("compare", older, newer, "--db", str(db), "--rejudge", "--format", "json")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["rejudged"] is True and data["comparability"]["comparable"] is True and data["forced"] is False
    assert data["run_a"]["derived_from"]["source_run_id"] == older and data["run_b"]["derived_from"]["source_run_id"] == newer
    assert data["flips"] == [] and data["paired"] == 8
    with ResultsDB(db, read_only=True) as results:
        assert [m.run_id for m in results.runs(status=None)] == before
    shown = kgeval("compare", older, newer, "--db", str(db), "--rejudge")
    assert f"re-judged on the fly with B's configuration and gold, nothing stored (A is run {older}; B is run {newer}" in shown.stdout


def test_a_rule_set_differing_names_the_rule_and_neither_current_asks_for_both(mini_holdout, mini_gold, tmp_path, monkeypatch):
    db = tmp_path / "r.duckdb"
    labels = KgevalConfig.model_validate({"run": {"seeds": 2}, "judges": {"execution": {"labels": {"label_for_entity": True}}}})
    monkeypatch.setattr(execution, "LOGIC_VERSION", OLDEST)
    plain = _weak_run(db, mini_holdout, mini_gold, KgevalConfig(run=RunConfig(seeds=2)))
    lenient = _weak_run(db, mini_holdout, mini_gold, labels)
    monkeypatch.undo()
    refused = kgeval("compare", plain, lenient, "--db", str(db))
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 1 and f"rule set of judge execution: label_for_entity off in run {plain}, on in run {lenient}" in said, said
    assert _remedy(refused.stderr) == ["compare", plain, lenient, "--rejudge", "--db", str(db)]  # neither run's judges are this kgeval's
    current = _weak_run(db, mini_holdout, mini_gold, labels)
    assert _remedy(kgeval("compare", plain, current, "--db", str(db)).stderr) == ["rejudge", plain, "--like", current, "--db", str(db)]
    assert _remedy(kgeval("compare", current, plain, "--db", str(db)).stderr) == ["rejudge", plain, "--like", current, "--db", str(db)]
