"""The CLI entry points, driven as a user would (subprocess for exit codes and output)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MINI_QUESTIONS, REPO


def kgeval(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgeval", *args], capture_output=True, text=True, cwd=cwd or REPO, timeout=300)


@pytest.mark.parametrize("command", [[], ["holdout"], ["gold"], ["run"], ["report"], ["export"], ["quickstart"], ["compare"], ["rejudge"], ["holdout", "verify"], ["gold", "rebuild"]])
def test_every_command_has_help(command):
    result = kgeval(*command, "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout


def test_full_flow_on_a_mini_holdout(mini_holdout, tmp_path):
    gold, db = tmp_path / "gold", tmp_path / "r.duckdb"
    assert kgeval("holdout", "verify", "--holdout", str(mini_holdout)).returncode == 0
    rebuilt = kgeval("gold", "rebuild", "--holdout", str(mini_holdout), "--gold", str(gold))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert f"{len(MINI_QUESTIONS)} questions" in rebuilt.stdout
    assert kgeval("gold", "verify", "--holdout", str(mini_holdout), "--gold", str(gold)).returncode == 0
    ran = kgeval("run", "--holdout", str(mini_holdout), "--gold", str(gold), "--system", "oracle", "--seeds", "2", "--db", str(db))
    assert ran.returncode == 0, ran.stderr
    run_id = ran.stdout.strip().splitlines()[-1]
    assert "oracle" in run_id
    report = kgeval("report", run_id, "--db", str(db), "--format", "json")
    data = json.loads(report.stdout)
    assert data["overall"]["correct"] == data["overall"]["n"] == len(MINI_QUESTIONS)
    assert data["overall"]["ci_low"] < 1.0
    md = kgeval("report", run_id, "--db", str(db)).stdout
    assert "Wilson" in md and "100.0% [" in md
    lines = kgeval("export", run_id, "--db", str(db)).stdout.splitlines()
    assert len(lines) == 2 * len(MINI_QUESTIONS)


def test_export_writes_every_format_to_output(tmp_path):
    """`-o` names where every format goes; jsonl printed to stdout and created no file, exit 0.
    Two KGs asking the same eight questions (as QALD-9-plus's DBpedia and Wikidata versions)."""
    from tests.conftest import write_holdout

    holdout = tmp_path / "h"
    for kg in ("dbpedia", "wikidata"):
        write_holdout(holdout, [dict(q, id=q["id"].replace("mini", kg)) for q in MINI_QUESTIONS], kg=kg)
    gold, db, out = tmp_path / "gold", tmp_path / "r.duckdb", tmp_path / "out"
    assert kgeval("gold", "rebuild", "--holdout", str(holdout), "--gold", str(gold)).returncode == 0
    ran = kgeval("run", "--holdout", str(holdout), "--gold", str(gold), "--system", "weak", "--seeds", "2", "--db", str(db))
    assert ran.returncode == 0, ran.stderr
    run_id = ran.stdout.strip().splitlines()[-1]

    jsonl = kgeval("export", run_id, "--db", str(db), "--format", "jsonl", "-o", str(out / "attempts.jsonl"))
    assert jsonl.returncode == 0 and jsonl.stdout == "", jsonl.stderr
    records = [json.loads(line) for line in (out / "attempts.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 32 and {r["kg"] for r in records} == {"dbpedia", "wikidata"} and all(r["verdicts"] for r in records)
    assert f"wrote 32 attempts to {out / 'attempts.jsonl'}" in " ".join(jsonl.stderr.split())
    assert records == [json.loads(line) for line in kgeval("export", run_id, "--db", str(db)).stdout.splitlines()]  # stdout unchanged
    qald = kgeval("export", run_id, "--db", str(db), "--format", "qald", "--seed", "1", "-o", str(out / "seed1.json"))
    assert qald.returncode == 0 and qald.stdout == "", qald.stderr
    assert len(json.loads((out / "seed1.json").read_text(encoding="utf-8"))["questions"]) == 16
    parquet = kgeval("export", run_id, "--db", str(db), "--format", "parquet", "-o", str(out / "pq"))
    assert parquet.returncode == 0 and (out / "pq" / "attempts.parquet").is_file(), parquet.stderr
    assert parquet.stdout == "" and f"{out / 'pq' / 'attempts.parquet'}: 32 rows" in " ".join(parquet.stderr.split())  # stderr, as jsonl and qald
    assert not list(out.rglob(".*.tmp"))  # written to temporary names, then renamed
    unknown = kgeval("export", "nope", "--db", str(db), "-o", str(out / "nope.jsonl"))
    assert unknown.returncode == 2 and "no run 'nope'" in unknown.stderr and not (out / "nope.jsonl").exists()


def test_user_errors_are_messages_with_exit_codes(mini_holdout, tmp_path):
    missing = kgeval("holdout", "verify", "--holdout", str(tmp_path / "nope"))
    assert missing.returncode == 1 and "MANIFEST.json: missing" in missing.stderr and "Traceback" not in missing.stderr
    (mini_holdout / "mini" / "kg.ttl").write_text("# tampered\n")
    tampered = kgeval("holdout", "verify", "--holdout", str(mini_holdout))
    assert tampered.returncode == 1 and "mini/kg.ttl: sha256 differs" in tampered.stderr
    no_run = kgeval("report", "nope", "--db", str(tmp_path / "none.duckdb"))
    assert no_run.returncode == 2 and "does not exist" in no_run.stderr


def test_failed_reference_query_blocks_runs_until_excluded_on_record(tmp_path):
    """Issue 13's done-means: the failing query is recorded and everything else built; the run
    is refused until the question is excluded; after exclusion the report lists it."""
    from tests.conftest import write_holdout

    questions = [dict(q) for q in MINI_QUESTIONS]
    questions[4]["sparql"] = "SELECT ?x WHERE { ?x ?y }"
    holdout, gold, db = write_holdout(tmp_path / "h", questions), tmp_path / "gold", tmp_path / "r.duckdb"
    result = kgeval("gold", "rebuild", "--holdout", str(holdout), "--gold", str(gold))
    assert result.returncode == 1
    assert "mini: question mini-05:" in result.stderr and "does not parse" in result.stderr
    assert "1 reference queries failed: mini-05" in " ".join(result.stderr.split())
    assert "7 executed, 0 unchanged, 1 failed, 0 excluded on record without gold" in result.stdout
    refused = kgeval("run", "--holdout", str(holdout), "--gold", str(gold), "--system", "oracle", "--seeds", "1", "--db", str(db))
    assert refused.returncode == 1 and "gold_failures: 1 reference queries failed and are not excluded: mini-05" in refused.stderr
    excluded = kgeval("holdout", "exclude", "mini-05", "--why", "query invalid; ticket 42", "--holdout", str(holdout))
    assert excluded.returncode == 0, excluded.stderr
    assert kgeval("holdout", "verify", "--holdout", str(holdout)).returncode == 0
    again = kgeval("gold", "rebuild", "--holdout", str(holdout), "--gold", str(gold))
    assert again.returncode == 0, again.stderr  # the failure is kept, on record, not run again
    assert "0 executed, 7 unchanged, 0 failed, 1 excluded on record without gold" in again.stdout
    ran = kgeval("run", "--holdout", str(holdout), "--gold", str(gold), "--system", "oracle", "--seeds", "1", "--db", str(db))
    assert ran.returncode == 0, ran.stderr
    md = kgeval("report", ran.stdout.strip().splitlines()[-1], "--db", str(db)).stdout
    assert "excluded on record (1, not asked): mini-05: query invalid; ticket 42" in md
    assert "(7/7)" in md
    # the refused run has no accuracy (not one withheld for a failing harness); the other has its own
    runs = [line.split("\t") for line in kgeval("runs", "--db", str(db)).stdout.splitlines()[1:]]
    assert [(r[2], r[3].split(" (")[0]) for r in runs] == [("refused", "none"), ("finished", "100.0% [64.6%, 100.0%]")], runs
    # reviewers are shown the questions runs ask; the excluded one only with --all, marked
    status = kgeval("review", "status", "--questions", "--holdout", str(holdout), "--gold", str(gold), "--db", str(db))
    assert status.returncode == 0, status.stderr
    assert [line.split("\t")[0] for line in status.stdout.splitlines()] == [f"mini-0{i}" for i in (1, 2, 3, 4, 6, 7, 8)]
    assert "1 question(s) excluded from evaluation on record, not listed (mini-05): --all lists them" in status.stderr
    listed = kgeval("review", "status", "--questions", "--all", "--holdout", str(holdout), "--gold", str(gold), "--db", str(db)).stdout.splitlines()
    assert len(listed) == 8 and [line.split("\t")[4:] for line in listed if line.startswith("mini-05")] == [["excluded"]]


def test_quickstart_runs_both_controls_through_the_checklist(mini_holdout, tmp_path):
    gold, db = tmp_path / "gold", tmp_path / "r.duckdb"
    assert kgeval("gold", "rebuild", "--holdout", str(mini_holdout), "--gold", str(gold)).returncode == 0
    result = kgeval("quickstart", "--holdout", str(mini_holdout), "--gold", str(gold), "--db", str(db))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("# kgeval report") == 2
    assert "system: **oracle**" in result.stdout and "system: **weak**" in result.stdout
    from kgeval.runs import ResultsDB

    with ResultsDB(db, read_only=True) as results:
        oracle, weak = results.runs()
        items = {i.item: i for i in results.receipt(weak.run_id).items}
    assert items["apples_to_apples:oracle"].passed and oracle.run_id in items["apples_to_apples:oracle"].observed
    assert items["caught:oracle_below_99"].passed and "100.0%" in items["caught:oracle_below_99"].observed


def test_rebuild_timeout_records_the_slow_query_and_writes_the_rest(tmp_path):
    from tests.conftest import PREFIX, write_holdout

    questions = [dict(q) for q in MINI_QUESTIONS]
    questions[5]["sparql"] = PREFIX + "SELECT (COUNT(*) AS ?n) WHERE { ?a a ex:Item . ?b a ex:Item . ?c a ex:Item . ?d a ex:Item . ?e a ex:Item }"
    holdout = write_holdout(tmp_path / "h", questions)
    result = kgeval("gold", "rebuild", "--holdout", str(holdout), "--gold", str(tmp_path / "gold"), "--timeout", "0.05")
    assert result.returncode == 1, result.stdout
    assert "question mini-06: query ran longer than 0.05 s" in " ".join(result.stderr.split())
    assert "1 reference queries failed: mini-06" in " ".join(result.stderr.split())
    assert f"{len(MINI_QUESTIONS) - 1} executed" in result.stdout


HEAVY_MODULES = ("kgeval.runs", "kgeval.systems", "kgeval.reports", "kgeval.checklists", "kgeval.interop", "kgeval.guards",
                 "kgeval.audit", "kgeval.review", "kgeval.samples", "rdflib", "duckdb", "numpy", "pyarrow", "google.genai")
"""What the run, report, import and guard commands need and a gold rebuild does not (together
over a second of imports on the development VM: the CLI imported all of them for every command)."""


def test_an_unchanged_gold_rebuild_imports_only_what_it_uses(mini_holdout, tmp_path):
    """`kgeval gold rebuild` with nothing changed is quick from the shell too: the CLI imports
    a command's machinery when the command runs, so this one never loads the run machinery,
    the importers' or the judges' rdflib, DuckDB or the model clients."""
    gold = tmp_path / "gold"
    assert kgeval("gold", "rebuild", "--holdout", str(mini_holdout), "--gold", str(gold)).returncode == 0
    script = (
        "import sys\n"
        "from kgeval.cli import app\n"
        f"app(['gold', 'rebuild', '--holdout', {str(mini_holdout)!r}, '--gold', {str(gold)!r}], standalone_mode=False)\n"
        f"print('LOADED', [m for m in {HEAVY_MODULES!r} if m in sys.modules])\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr
    assert f"{len(MINI_QUESTIONS)} unchanged" in result.stdout
    assert "LOADED []" in result.stdout, result.stdout
