"""The shipped sample holdout and the README's main job."""

from __future__ import annotations

import re

from kgeval.config import GoldConfig
from kgeval.gold import load_gold, rebuild_gold, verify_gold
from kgeval.holdout import Tag, load_holdout, verify_holdout
from kgeval.stores import EmbeddedStore
from tests.cli.test_cli import kgeval
from tests.conftest import REPO

HOLDOUT, GOLD = REPO / "holdout", REPO / "gold"


def test_shipped_holdout_and_gold_verify():
    verify_holdout(HOLDOUT)
    verify_gold(GOLD, load_holdout(HOLDOUT))


def test_shipped_gold_is_what_the_queries_return(tmp_path):
    """Gold is executed, not written: a fresh rebuild gives the committed result hashes."""
    report = rebuild_gold(load_holdout(HOLDOUT), lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path)
    shipped = load_gold(GOLD)
    assert report.ok
    assert {e.question_id: e.result_sha256 for e in report.entries} == {q: e.result_sha256 for q, e in shipped.items()}


def test_sample_holdout_covers_what_the_harness_must_handle():
    holdout = load_holdout(HOLDOUT)
    gold = load_gold(GOLD)
    questions = holdout.questions()
    results = [gold[q.id].result for q in questions]
    assert len(holdout.kgs) >= 4 and len(questions) >= 60
    assert len({q.domain for q in questions}) >= 4
    assert sum(q.honeypot for q in questions) == 3
    assert sum(1 for r in results if r.total > 2000 and r.truncated) == 1
    assert sum(1 for r in results if r.form == "select" and 20 <= r.total <= 400) >= 6
    assert {r.boolean for r in results if r.form == "ask"} == {True, False}
    assert any(r.form == "select" and r.total == 0 for r in results)
    tagged = {tag for q in questions for tag in q.tags}
    assert {Tag.COUNT, Tag.ORDER_LIMIT, Tag.LANG_LITERAL, Tag.TYPED_LITERAL} <= tagged
    cells = [c for r in results for row in r.rows for c in row if c is not None]
    assert any(c.lang for c in cells) and any(c.datatype for c in cells)


def _accuracy(report_md: str) -> float:
    return float(re.search(r"## Accuracy: ([\d.]+)%", report_md).group(1))


def test_quickstart_prints_oracle_and_weak_reports(tmp_path):
    result = kgeval("quickstart", "--db", str(tmp_path / "q.duckdb"))
    assert result.returncode == 0, result.stderr
    reports = result.stdout.split("# kgeval report")[1:]
    assert len(reports) == 2
    oracle, weak = reports
    assert "**oracle**" in oracle and "**weak**" in weak
    assert _accuracy(oracle) >= 99.0 and "Wilson" in oracle
    assert _accuracy(weak) < 60.0
    # it ends with a five-line summary and the next commands to try
    summary = result.stdout.split("## Summary\n")[1].split("\n\nNext:\n")
    facts, commands = summary[0].splitlines(), summary[1].splitlines()
    assert len(facts) == 5 and all(line.startswith("- ") for line in facts), facts
    assert "the harness is sound" in facts[1] and "the judge refuses poor answers" in facts[2] and str(tmp_path / "q.duckdb") in facts[3]
    oracle_id, weak_id = re.search(r"- oracle (\S+):", facts[1]).group(1), re.search(r"- weak (\S+):", facts[2]).group(1)
    assert [c.split()[3] for c in commands] == ["report", "compare", "show", "init"]  # python -m kgeval CMD
    assert weak_id in commands[0] and f"{oracle_id} {weak_id}" in commands[1] and re.search(rf"show {weak_id} \S+/\S+", commands[2])


def test_quickstart_names_kgeval_as_it_was_called(tmp_path):
    """Issue 44 item 7: right after `pip install` in a venv not activated, `kgeval` is not on
    PATH, and the "Next:" lines said `kgeval ...` ("command not found"). They now say the program
    as it was run; the gold just verified is read (no "no gold directory given" note), and the
    incomplete count says what it is."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = Path(sys.executable).parent / "kgeval"
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    result = subprocess.run([str(script), "quickstart", "--db", str(tmp_path / "q.duckdb")], capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    commands = result.stdout.split("\n\nNext:\n")[1].splitlines()
    assert all(line.startswith(f"  {script} ") for line in commands), commands
    assert f"&& {script} run --system openai" in commands[-1]
    assert "no gold directory given" not in result.stdout
    assert "(of which 0 incomplete: cut off, scored and flagged)" in result.stdout
    assert "(incomplete, flagged" not in result.stdout
