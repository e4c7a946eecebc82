"""`kgeval audit`, `kgeval review`, `kgeval compare`, `kgeval serve` driven as a user would."""

import json

import pytest

from tests.cli.test_cli import kgeval
from tests.oversight import TOKENS, run_system, write_access


@pytest.mark.parametrize("command", [["compare"], ["audit"], ["audit", "sample"], ["audit", "record"], ["review"], ["review", "approve"], ["serve"]])
def test_new_commands_have_help(command):
    result = kgeval(*command, "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout


def test_audit_sample_show_record_and_report(mini_holdout, mini_gold, tmp_path):
    db = tmp_path / "r.duckdb"
    run_id = run_system(mini_holdout, mini_gold, db, "oracle", seeds=2)
    sampled = kgeval("audit", "sample", run_id, "--accepts", "3", "--db", str(db), "--gold", str(mini_gold))
    assert sampled.returncode == 0, sampled.stderr
    *rows, last = sampled.stdout.strip().splitlines()
    assert len(rows) == 3 and last.startswith("sample ")
    qid, seed, _stratum, sha = rows[0].split("\t")
    recorded = kgeval("audit", "record", run_id, qid, "--seed", seed.split()[1], "--decision", "disagree", "--sha256", sha,
                      "--auditor", "ann", "--note", "strict subset", "--db", str(db), "--gold", str(mini_gold))
    assert recorded.returncode == 0, recorded.stderr
    shown = [json.loads(line) for line in kgeval("audit", "show", run_id, last.split()[1].rstrip(":"), "--db", str(db), "--gold", str(mini_gold)).stdout.splitlines()]
    assert [s["state"] for s in shown] == ["disagree", "unaudited", "unaudited"]
    report = json.loads(kgeval("report", run_id, "--db", str(db), "--gold", str(mini_gold), "--format", "json").stdout)
    assert report["audit"]["false_accept_rate"]["events"] == 1 and report["audit"]["false_accept_rate"]["n"] == 1


def test_review_rights_per_domain_on_the_command_line(mini_holdout, mini_gold, tmp_path):
    db, access = tmp_path / "r.duckdb", write_access(tmp_path / "access.yaml")
    common = ["--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db)]
    status = {line.split("\t")[0]: line.split("\t") for line in kgeval("review", "status", *common).stdout.splitlines()}
    assert status["mini-06"][1:3] == ["retail", "never_reviewed"]
    denied = kgeval("review", "approve", "mini-06", "--sha256", status["mini-06"][3], "--access", str(access), "--token", TOKENS["hana"]["token"], *common)
    assert denied.returncode == 2 and "not 'retail'" in denied.stderr
    ok = kgeval("review", "approve", "mini-06", "--sha256", status["mini-06"][3], "--access", str(access), "--token", TOKENS["rita"]["token"], *common)
    assert ok.returncode == 0, ok.stderr
    after = {line.split("\t")[0]: line.split("\t")[2] for line in kgeval("review", "status", *common).stdout.splitlines()}
    assert after["mini-06"] == "approved" and after["mini-01"] == "never_reviewed"


def test_serve_refuses_to_start_without_tokens(tmp_path):
    result = kgeval("serve", "--db", str(tmp_path / "r.duckdb"), "--port", "1")
    assert result.returncode == 2 and "no tokens" in result.stderr
