"""Question ids in one form everywhere: every command that takes a question id reads both forms
kgeval prints (`id` and `kg/id`); `gold show --empty` lists the golds that say nothing for
review; `gold rebuild` leaves the queries of questions excluded on record unexecuted."""

from __future__ import annotations

import json

from kgeval.gold import index_gold
from tests.cli.test_cli import kgeval
from tests.oversight import TOKENS, run_system, write_access


def test_holdout_commands_take_kg_slash_id(mini_holdout):
    at = ["--holdout", str(mini_holdout)]
    excluded = kgeval("holdout", "exclude", "mini/mini-03", "--why", "ambiguous", *at)
    assert excluded.returncode == 0 and "excluded mini-03: ambiguous" in excluded.stdout, excluded.stderr
    included = kgeval("holdout", "include", "mini/mini-03", *at)
    assert included.returncode == 0 and "included again: mini-03" in included.stdout, included.stderr
    confirmed = kgeval("holdout", "confirm-empty", "mini/mini-05", "mini-07", "--why", "right as it is", *at)
    assert confirmed.returncode == 0 and "confirmed empty mini-05" in confirmed.stdout and "confirmed empty mini-07" in confirmed.stdout, confirmed.stderr
    unconfirmed = kgeval("holdout", "unconfirm-empty", "mini/mini-05", *at)
    assert unconfirmed.returncode == 0, unconfirmed.stderr
    wrong_kg = kgeval("holdout", "exclude", "hr/mini-03", "nope", "--why", "x", *at)
    assert wrong_kg.returncode == 2 and "no question 'hr/mini-03' (it is mini/mini-03)" in wrong_kg.stderr and "no question 'nope'" in wrong_kg.stderr


def test_show_review_and_audit_take_kg_slash_id(mini_holdout, mini_gold, tmp_path):
    db, access = tmp_path / "r.duckdb", write_access(tmp_path / "access.yaml")
    run_id = run_system(mini_holdout, mini_gold, db, "oracle", seeds=1)
    shown = kgeval("show", run_id, "mini/mini-02", "--db", str(db), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["question_id"] == "mini-02"
    common = ["--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db)]
    sha = next(line.split("\t")[3] for line in kgeval("review", "status", "--questions", *common).stdout.splitlines() if line.startswith("mini-06\t"))
    approved = kgeval("review", "approve", "mini/mini-06", "--sha256", sha, "--access", str(access), "--token", TOKENS["rita"]["token"], *common)
    assert approved.returncode == 0 and "approve on mini-06" in approved.stdout, approved.stderr
    sampled = kgeval("audit", "sample", run_id, "--accepts", "1", "--db", str(db), "--gold", str(mini_gold))
    qid, seed, _, item_sha = sampled.stdout.splitlines()[0].split("\t")
    recorded = kgeval("audit", "record", run_id, f"mini/{qid}", "--seed", seed.split()[1], "--decision", "agree", "--sha256", item_sha,
                      "--auditor", "ann", "--db", str(db), "--gold", str(mini_gold))  # fmt: skip
    assert recorded.returncode == 0 and f"recorded agree on {qid}" in recorded.stdout, recorded.stderr


def test_gold_show_empty_lists_what_to_review(mini_holdout, mini_gold):
    at = ["--holdout", str(mini_holdout), "--gold", str(mini_gold)]
    text = kgeval("gold", "show", "--empty", *at)
    assert text.returncode == 0, text.stderr
    assert "mini/mini-07\tempty (0 rows)\texpect_empty\tsha256 " in text.stdout
    assert "  question: Who is older than 100?" in text.stdout and "FILTER(?a > 100)" in text.stdout
    assert "mini/mini-05\tfalse_ask (ASK: false)\tnot_needed" in text.stdout  # a false ASK over vocabulary the KG has
    assert "2 empty-like golds: 1 empty, 0 one-row zero/unbound, 1 false ASK; 1 need confirmation" in text.stderr
    assert "0 unconfirmed" in text.stderr
    listed = [json.loads(line) for line in kgeval("gold", "show", "--empty", "--format", "json", *at).stdout.splitlines()]
    assert [(g["kg"], g["question_id"], g["kind"], g["rows"], g["confirmation"]) for g in listed] == [
        ("mini", "mini-05", "false_ask", 1, "not_needed"), ("mini", "mini-07", "empty", 0, "expect_empty"),
    ]  # fmt: skip
    assert listed[1]["question"] == "Who is older than 100?" and "SELECT ?p" in listed[1]["sparql"] and len(listed[1]["content_sha256"]) == 64


def test_rebuild_leaves_excluded_queries_unexecuted_unless_asked(mini_holdout, tmp_path):
    gold = tmp_path / "fresh-gold"
    at = ["--holdout", str(mini_holdout), "--gold", str(gold)]
    assert kgeval("holdout", "exclude", "mini-06", "--why", "runs to its timeout", "--holdout", str(mini_holdout)).returncode == 0
    for args in ([], ["--force"]):
        rebuilt = kgeval("gold", "rebuild", *args, *at)
        assert rebuilt.returncode == 0, rebuilt.stderr
        assert "question mini-06: excluded on record, no gold: not executed (--include-excluded executes it)" in rebuilt.stderr
        assert "7 executed" in rebuilt.stdout if args else True
        index = index_gold(gold)
        assert "mini-06" not in index.entries and "not executed" in index.failures["mini-06"].error
    assert kgeval("gold", "verify", "--no-store-check", *at).returncode == 0
    included = kgeval("gold", "rebuild", "--include-excluded", *at)
    assert included.returncode == 0 and "1 executed" in included.stdout, included.stdout + included.stderr
    assert "mini-06" in index_gold(gold).entries


def test_confirm_empty_reads_ids_from_a_file_or_stdin(mini_holdout, mini_gold, tmp_path):
    """Issue 44 item 5: confirming 66 empty golds meant pasting 66 ids. `gold show --empty`'s
    own output, edited or not, is read as the list (JSON lines too); stdin with '-'."""
    import subprocess
    import sys

    from tests.conftest import REPO

    at = ["--holdout", str(mini_holdout)]
    listed = kgeval("gold", "show", "--empty", *at, "--gold", str(mini_gold)).stdout
    (tmp_path / "ids.txt").write_text("# reviewed by ann\n" + listed, encoding="utf-8")
    confirmed = kgeval("holdout", "confirm-empty", "--from", str(tmp_path / "ids.txt"), "--why", "right as it is", *at)
    assert confirmed.returncode == 0, confirmed.stderr
    assert "confirmed empty mini-05" in confirmed.stdout and "confirmed empty mini-07" in confirmed.stdout, confirmed.stdout
    piped = subprocess.run(
        [sys.executable, "-m", "kgeval", "holdout", "unconfirm-empty", "--from", "-", *at],
        input='{"question_id": "mini-05"}\n', capture_output=True, text=True, cwd=REPO, timeout=600,
    )
    assert piped.returncode == 0 and "no longer confirmed empty: mini-05" in piped.stdout, piped.stderr
    bad = kgeval("holdout", "exclude", "--from", str(tmp_path / "missing.txt"), "--why", "x", *at)
    assert bad.returncode == 2 and "missing.txt: cannot read question ids (--from)" in bad.stderr
    none = kgeval("holdout", "exclude", "--why", "x", *at)
    assert none.returncode == 2 and "no question id given" in none.stderr
