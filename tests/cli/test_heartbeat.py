"""A long-running step says what it is doing while it runs (issue 44, item 3): a gold rebuild
whose reference query runs to its timeout printed nothing for 381 s with output not on a
terminal, and on a terminal named the last *finished* question. Driven through `python -m
kgeval gold rebuild` against a SPARQL endpoint on loopback that holds one query's reply until
the test has read the line naming it: no timing margin, only the interval configured short.

And excluded questions are counted one way in every rebuild: "excluded on record without gold",
never "failed" in one rebuild and "not executed" in the next."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import yaml

from tests.conftest import MINI_QUESTIONS, REPO, write_holdout
from tests.servers import LoopbackServer, Reply

EMPTY = {"head": {"vars": ["x"]}, "results": {"bindings": []}}
RESULTS = {"Content-Type": "application/sparql-results+json"}


def _reply(path: str, payload: dict, n: int) -> Reply:
    from urllib.parse import unquote_plus

    text = unquote_plus(str(payload) + path)
    if "SELECT" not in text.upper():  # the store's probes
        return Reply(body={"head": {}, "boolean": True}, headers=RESULTS)
    return Reply(body=EMPTY, headers=RESULTS, hold="ex:slow" in text)


def test_a_held_reference_query_is_named_while_it_runs(tmp_path):
    questions = [dict(MINI_QUESTIONS[0]), dict(MINI_QUESTIONS[1], sparql=MINI_QUESTIONS[1]["sparql"].replace("ex:worksIn", "ex:slow"))]
    holdout = write_holdout(tmp_path / "h", questions)
    with LoopbackServer(_reply) as server:
        config = tmp_path / "kgeval.yaml"
        config.write_text(yaml.safe_dump({
            "store": {"kind": "sparql", "endpoint": server.url + "/query", "data_version": "v1"},
            "gold": {"concurrency": 1, "timeout_s": 600},
            "progress": {"log_every_s": 0.2},
        }), encoding="utf-8")  # fmt: skip
        rebuild = subprocess.Popen(
            [sys.executable, "-m", "kgeval", "gold", "rebuild", "--holdout", str(holdout), "--gold", str(tmp_path / "g"), "--config", str(config)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        seen: list[str] = []
        named = threading.Event()

        def read() -> None:
            for line in rebuild.stderr:
                seen.append(line)
                if "running mini/mini-02 (reference query, timeout 600 s) for" in line:
                    named.set()
            named.set()  # the rebuild ended without naming it: the assertion below says so

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        named.wait(60)
        assert any("running mini/mini-02" in line for line in seen), "".join(seen)
    # the server closed: the held reply goes out and the rebuild ends
    rebuild.wait(60)
    reader.join(60)
    line = next(line for line in seen if "running mini/mini-02" in line)
    assert line.startswith("gold rebuild: 1 of 2 questions done, "), line


def test_excluded_questions_are_counted_one_way_in_every_rebuild(tmp_path):
    questions = [dict(q) for q in MINI_QUESTIONS]
    questions[4]["sparql"] = "SELECT ?x WHERE { ?x ?y }"  # does not parse: fails
    holdout, gold = write_holdout(tmp_path / "h", questions), tmp_path / "g"

    def kgeval(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kgeval", *args], capture_output=True, text=True, cwd=REPO, timeout=600)

    at = ["--holdout", str(holdout), "--gold", str(gold)]
    assert kgeval("gold", "rebuild", *at).returncode == 1
    assert kgeval("holdout", "exclude", "mini-05", "--why", "ambiguous", "--holdout", str(holdout)).returncode == 0
    # its failure kept; then not executed (--force); then kept again
    for args in ([], ["--force"], []):
        rebuilt = kgeval("gold", "rebuild", *args, *at)
        assert rebuilt.returncode == 0, rebuilt.stderr
        assert ", 0 failed, 1 excluded on record without gold;" in rebuilt.stdout, rebuilt.stdout
        lines = [line for line in rebuilt.stderr.splitlines() if "excluded on record" in line]
        assert len(lines) == 1 and "question mini-05: excluded on record, no gold: " in lines[0], rebuilt.stderr


def _http_config(tmp_path: Path, server: LoopbackServer) -> Path:
    """`kgeval init --system http` for `server`, with a long call timeout and a heartbeat every 0.2 s."""
    init = subprocess.run([sys.executable, "-m", "kgeval", "init", "--system", "http", "--url", server.url + "/answer", str(tmp_path / "cfg")],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    assert init.returncode == 0, init.stderr
    config = tmp_path / "cfg" / "kgeval.yaml"
    doc = yaml.safe_load(config.read_text())
    doc["systems"]["http"]["timeout_s"] = 600
    doc["systems"]["http"]["guards_url"] = server.url + "/guards"
    doc["progress"] = {"log_every_s": 0.2}
    config.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return config


def test_a_held_system_call_is_named_while_it_runs(tmp_path, mini_holdout, mini_gold):
    """The same for `kgeval run`: an attempt waiting on its system is named while it waits (an
    endpoint on loopback holds one question's reply until the test has read the line)."""
    from tests.conftest import MINI_QUESTIONS as QUESTIONS

    slow = QUESTIONS[2]["question"]

    guards = [{"name": f"example-bank.{g}", "active": True, "details": {}} for g in ("ingest", "retrieval-filter", "similarity-cap")]

    def reply(path: str, payload: dict, n: int) -> Reply:
        if path.endswith("/guards"):
            return Reply(body=guards)
        return Reply(body={"sparql": "ASK {}", "stop_reason": "stop"}, hold=payload.get("question") == slow)

    db = tmp_path / "r.duckdb"
    at = ["--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db)]
    oracle = subprocess.run([sys.executable, "-m", "kgeval", "run", "--system", "oracle", "--seeds", "1", *at], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert oracle.returncode == 0, oracle.stderr
    with LoopbackServer(reply) as server:
        config = _http_config(tmp_path, server)
        run = subprocess.Popen([sys.executable, "-m", "kgeval", "run", "--system", "http", "--seeds", "1", "--config", str(config), *at],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen: list[str] = []
        named = threading.Event()

        def read() -> None:
            for line in run.stderr:
                seen.append(line)
                if f"running mini/{QUESTIONS[2]['id']} seed 0 (http) for" in line:
                    named.set()
            named.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        named.wait(60)
        assert any(f"running mini/{QUESTIONS[2]['id']} seed 0 (http)" in line for line in seen), "".join(seen)
    run.wait(60)
    reader.join(60)
    line = next(line for line in seen if f"running mini/{QUESTIONS[2]['id']}" in line)
    assert line.startswith("run http: ") and " attempts done, " in line, line


def _named(process: subprocess.Popen, wanted: str) -> tuple[threading.Event, list[str]]:
    """An event set once a stderr line of `process` holds `wanted` (or its stderr ended)."""
    seen: list[str] = []
    named = threading.Event()

    def read() -> None:
        for line in process.stderr:
            seen.append(line)
            if wanted in line:
                named.set()
        named.set()  # it ended without naming it: the assertion says so

    threading.Thread(target=read, daemon=True).start()
    return named, seen


def test_a_resumed_run_names_a_held_system_call_while_it_runs(tmp_path, mini_holdout, mini_gold):
    """`run --resume` had no heartbeat: a resumed attempt waiting on its system printed nothing
    until it ended. A run is killed while its endpoint on loopback holds one question's reply;
    the resume, whose call the endpoint holds again, names it while it waits, as a run does."""
    import os
    import signal

    import duckdb

    from tests.conftest import MINI_QUESTIONS as QUESTIONS

    slow = QUESTIONS[2]
    wanted = f"running mini/{slow['id']} seed 0 (http) for"
    guards = [{"name": f"example-bank.{g}", "active": True, "details": {}} for g in ("ingest", "retrieval-filter", "similarity-cap")]

    def reply(path: str, payload: dict, n: int) -> Reply:
        if path.endswith("/guards"):
            return Reply(body=guards)
        return Reply(body={"sparql": "ASK {}", "stop_reason": "stop"}, hold=payload.get("question") == slow["question"])

    db = tmp_path / "r.duckdb"
    at = ["--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db)]
    oracle = subprocess.run([sys.executable, "-m", "kgeval", "run", "--system", "oracle", "--seeds", "1", *at], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert oracle.returncode == 0, oracle.stderr
    with LoopbackServer(reply) as server:
        config = _http_config(tmp_path, server)  # its heartbeat interval is recorded with the run: the resume's too
        run = subprocess.Popen([sys.executable, "-m", "kgeval", "run", "--system", "http", "--seeds", "1", "--config", str(config), *at],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        named, seen = _named(run, wanted)
        named.wait(60)
        assert any(wanted in line for line in seen), "".join(seen)
        os.kill(run.pid, signal.SIGKILL)  # killed while the call is held: the run stays "running"
        run.wait(60)
        con = duckdb.connect(str(db), read_only=True)
        (run_id,) = con.execute("SELECT run_id FROM runs WHERE status = 'running'").fetchone()
        con.close()
        resumed = subprocess.Popen([sys.executable, "-m", "kgeval", "run", "--resume", run_id, "--db", str(db)],
                                   cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        named, seen = _named(resumed, wanted)
        named.wait(60)
        assert any(wanted in line for line in seen), "".join(seen)
    # the server closed: the held reply goes out and the resumed run ends
    assert resumed.wait(60) == 0, "".join(seen)
    line = next(line for line in seen if wanted in line)
    assert line.startswith(f"resume {run_id}: ") and " attempts done, " in line, line
