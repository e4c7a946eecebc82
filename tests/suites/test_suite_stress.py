"""Done means (issue 40, part 4), through the CLI: over the stress set (tests/suites/stress/),
test-suite accuracy rejects >= 90% of the wrong answers that give the gold's rows on the shipped
KG, and accepts every equivalent rewrite and every reference query (the replayed references:
the oracle control scores 100% with suites on), on the sample holdout and on CK25; the median
kill rate per question is >= 95% on both.

A wrong case whose coincidence `needs` a leniency rule the configuration turns on (the stress
set's `needs:`; `duplicates` is on by default) is counted apart, not in the 90%: the configured
judge accepts it on every KG by that rule, so a suite (which judges with the same judge) is not
meant to catch it; such cases are named in the failure message and in docs/scoring.md."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from kgeval.config import ExecutionJudgeConfig
from kgeval.gold import read_suites
from kgeval.holdout import load_holdout
from kgeval.runs import ResultsDB
from tests.suites.conftest import REPO
from tests.suites.stress import oracle
from tests.suites.stress.cases import load_cases, write_replay


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    ran = subprocess.run([sys.executable, "-m", "kgeval", *args], capture_output=True, text=True, cwd=cwd, timeout=1800)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return ran


def _holdout(name: str, root: Path) -> Path:
    if name == "sample":
        shutil.copytree(REPO / "holdout", root / "holdout")
    else:
        from kgeval.interop import import_text2sparql

        import_text2sparql(oracle.ck25_root(), "ck25", root / "holdout")
    return root / "holdout"


def _outcomes(name: str, tmp_path: Path) -> tuple[dict[str, bool], list[float]]:
    """Build the gold and suites of a holdout, replay every case of the set over it (the
    references on the seeds no case takes), and give each case's (and "reference"'s) outcome
    under test-suite accuracy: accepted on the KG and passed its suite; with the kill rates."""
    holdout, gold, db = _holdout(name, tmp_path), tmp_path / "gold", tmp_path / "r.duckdb"
    _cli("gold", "rebuild", "--holdout", str(holdout), "--gold", str(gold), cwd=tmp_path)
    _cli("suite", "build", "--holdout", str(holdout), "--gold", str(gold), cwd=tmp_path)
    suites = read_suites(gold)
    rates = [s.kill_rate for r in suites.kgs.values() for s in r.questions if s.kill_rate is not None]
    fill = [(q.kg, q.id, q.sparql) for q in load_holdout(holdout).questions()]
    mapping = write_replay(load_cases(holdout=name), tmp_path / "stress.jsonl", fill)
    seeds = max(seed for _, seed in mapping) + 1
    ran = _cli("run", "--system", "replay", "--replay", str(tmp_path / "stress.jsonl"), "--seeds", str(seeds),
               "--holdout", str(holdout), "--gold", str(gold), "--db", str(db), cwd=tmp_path)  # fmt: skip
    run_id = ran.stdout.strip().splitlines()[-1]
    with ResultsDB(db, read_only=True) as results:
        primary = results.metadata(run_id).primary_judge
        verdicts = {(qid, seed): v for qid, seed, v in results.verdicts(run_id) if v.judge == primary}
    outcome: dict[str, bool] = {"reference": True}
    for key, verdict in verdicts.items():
        suite = verdict.details.get("suite", {})
        passed = bool(verdict.correct and suite.get("checked") and suite.get("passed"))
        case = mapping.get(key, "reference")
        outcome[case] = outcome.get(case, True) and passed
    return outcome, rates


def test_test_suite_accuracy_over_the_stress_set(tmp_path: Path) -> None:
    names = ["sample"] + (["ck25"] if oracle.ck25_root() is not None else [])
    outcome: dict[str, bool] = {}
    for name in names:
        found, rates = _outcomes(name, tmp_path / name)
        assert statistics.median(rates) >= 0.95, (name, sorted(rates))
        assert found.pop("reference"), f"{name}: a reference query failed its own suite (the oracle control is not 100%)"
        outcome |= found
    cases = [c for c in load_cases() if c.holdout in names]
    kinds = {c.id: c.kind for c in cases}
    lenient = {rule for rule in ("extra_columns", "duplicates") if getattr(ExecutionJudgeConfig(), rule)}
    apart = sorted(c.id for c in cases if c.kind == "wrong" and lenient & set(c.needs))  # accepted by the configured rule, everywhere
    wrong = [c.id for c in cases if c.kind == "wrong" and c.id not in apart]
    let_through = sorted(case for case in wrong if outcome[case])
    assert len(wrong) - len(let_through) >= 0.9 * len(wrong), f"suites let through {len(let_through)} of {len(wrong)}: {let_through} (counted apart, accepted by {sorted(lenient)}: {apart})"
    assert [case for case, kind in kinds.items() if kind == "rewrite" and not outcome[case]] == []
