"""Replay files are read with bounded memory, and an output over `run.max_output_bytes` is the
model's failure (issue 35): judged wrong as over budget, stored cut with its size and sha256.
A 20 MB SPARQL line once added 20 MB to the results database; a 200 MB line peaked a run at 2 GB."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from kgeval.cli import app
from kgeval.runs import ResultsDB
from tests.conftest import MINI_QUESTIONS, REPO

runner = CliRunner()


def _replay(path: Path, big: str, qid: str = "mini-02") -> Path:
    """Every mini question answered by its reference query, `qid` by `big`."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"kg": "mini", "question_id": q["id"], "sparql": big if q["id"] == qid else q["sparql"]}) + "\n" for q in MINI_QUESTIONS)
    return path


def test_a_20_mb_sparql_line_is_judged_over_budget_and_stored_cut(mini_holdout, mini_gold, tmp_path):
    big = "SELECT * WHERE { ?s ?p ?o } # " + base64.b64encode(os.urandom(15 << 20)).decode()  # 20 MB, incompressible
    replay, db = _replay(tmp_path / "attempts.jsonl", big), tmp_path / "r.duckdb"
    ran = runner.invoke(app, ["run", "--system", "replay", "--replay", str(replay), "--seeds", "1",
                              "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db)])  # fmt: skip
    assert ran.exit_code == 0, ran.output
    run_id = ran.output.strip().splitlines()[-1]
    assert db.stat().st_size < 5 << 20, f"results database of {db.stat().st_size:,} bytes"
    with ResultsDB(db, read_only=True) as results:
        attempt = next(a for a in results.attempts(run_id) if a.question_id == "mini-02")
        verdicts = [v for qid, _, v in results.verdicts(run_id) if qid == "mini-02"]
    assert attempt.state == "answered" and attempt.extra["failure"] == "over_budget"
    cut = attempt.extra["output_cut"]
    whole = json.dumps(big)[1:-1].encode()  # as the file holds it
    assert cut["bytes"] == len(whole) and cut["sha256"] == hashlib.sha256(whole).hexdigest() and cut["limit"] == 1 << 20
    assert big.startswith(attempt.sparql) and 0 < len(attempt.sparql.encode()) <= 1 << 20
    assert verdicts and all(not v.correct and v.path == "over_budget" for v in verdicts), verdicts


MEASURE = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from kgeval.cli import app
    code = app(["run", "--system", "replay", "--replay", sys.argv[1], "--seeds", "1", "--holdout", sys.argv[2],
                "--gold", sys.argv[3], "--db", sys.argv[4]], standalone_mode=False) or 0
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so it would count the test's own peak
    peak_kb = next(int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM:"))
    print(code, peak_kb // 1024)
    """
)


def test_a_run_over_a_200_mb_line_stays_within_bounded_memory(mini_holdout, mini_gold, tmp_path):
    """Peak resident memory of a whole run (a subprocess) whose replay file has one 200 MB line."""
    big = "SELECT * WHERE { ?s ?p ?o } # " + "x" * (200 << 20)
    replay = _replay(tmp_path / "attempts.jsonl", big)
    del big
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(replay), str(mini_holdout), str(mini_gold), str(tmp_path / "r.duckdb")],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    code, peak_mb = map(int, done.stdout.split()[-2:])
    assert code == 0, done.stdout[-2000:]
    print(f"\n[replay bounds] peak RSS of a run over a 200 MB line: {peak_mb} MB")
    assert peak_mb < 400, f"peak RSS {peak_mb} MB"


def test_a_qald_file_whose_first_line_is_broken_names_the_line(tmp_path, mini_holdout):
    from kgeval.errors import InputError
    from kgeval.holdout import load_holdout
    from kgeval.systems import ReplaySystem

    holdout = load_holdout(mini_holdout)
    broken = {  # a first line that is not UTF-8 (a Latin-1 export), or that is not JSON
        "latin1.json": '{"questions": [{"id": "1", "question": [{"string": "Qui a écrit ?"}]},\n  {"id": "2"}\n]}\n'.encode("latin-1"),
        "syntax.json": b'{"questions": [{"id": "1", "query": {"sparql": "ASK {}"}},,\n  {"id": "2"}\n]}\n',
        "second.json": b'\n{"questions": [{"id": "1"}}\n]}\n',
    }
    for name, data in broken.items():
        qald = tmp_path / name
        qald.write_bytes(data)
        try:
            ReplaySystem(qald, holdout)
        except InputError as exc:
            message = str(exc)
        else:
            raise AssertionError(f"{name}: a broken QALD file was read")
        line = "line 2" if name == "second.json" else "line 1"
        assert str(qald) in message and line in message, message
