"""Reference queries of an imported benchmark are untrusted input too (issue 35): `gold rebuild`
runs them in sandbox workers, as candidates run. A string-doubling query (which aborts the
engine's process) and a cross-join bomb (which keeps a core busy after its timeout) are recorded
as failed questions with a clear error; the rest of the gold is written; the rebuilding process
lives on, and nothing of it keeps using CPU afterwards."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.conftest import MINI_QUESTIONS, PREFIX, REPO, write_holdout

DOUBLING = "SELECT (STRLEN(?a40) AS ?n) WHERE { BIND(\"0123456789abcdef\" AS ?a0) " + " ".join(
    f"BIND(CONCAT(?a{i}, ?a{i}) AS ?a{i + 1})" for i in range(40)
) + " }"
CROSS_JOIN = PREFIX + "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?n2 ?o . ?p ?q ?r }"

# Runs the CLI's `gold rebuild` in this process (a timeout of 30 s: the cross join runs all of it,
# the honest questions need milliseconds of it on any machine), then reports (as JSON on its last line) which
# of this process's threads and descendant processes are runnable in every one of 5 looks at
# /proc: a query left running after its timeout burns CPU in one of them.
SCRIPT = textwrap.dedent(
    """
    import json, os, sys, threading, time
    from pathlib import Path
    from kgeval.cli import app

    try:
        code = app(["gold", "rebuild", "--holdout", sys.argv[1], "--gold", sys.argv[2], "--timeout", "30"], standalone_mode=False) or 0
    except SystemExit as exc:
        code = exc.code

    def state(path):
        try:
            return Path(path).read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return None

    def descendants(pid):
        kids = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    ppid = int(Path(entry, "stat").read_text().rsplit(")", 1)[1].split()[1])
                except OSError:
                    continue
                kids.setdefault(ppid, []).append(int(entry.name))
        found, pending = [], [pid]
        while pending:
            found += kids.get(pending.pop(), [])
            pending += kids.get(found[-1], []) if found else []
        return found

    me, here = os.getpid(), threading.get_native_id()
    runnable = None
    for _ in range(5):
        now = {f"thread {t.name} {(t / 'comm').read_text().strip()}" for t in Path(f"/proc/{me}/task").iterdir() if int(t.name) != here and state(t / "stat") == "R"}
        now |= {f"process {pid}" for pid in descendants(me) if state(f"/proc/{pid}/stat") == "R"}
        runnable = now if runnable is None else runnable & now
        time.sleep(0.2)
    print(json.dumps({"exit": code, "runnable": sorted(runnable)}))
    """
)


def test_hostile_reference_queries_fail_alone_and_leave_nothing_running(tmp_path):
    questions = [
        *MINI_QUESTIONS[:3],
        {"id": "mini-doubling", "question": "How long is it?", "sparql": DOUBLING, "domain": "hr", "tags": ["count"]},
        {"id": "mini-cross", "question": "How many?", "sparql": CROSS_JOIN, "domain": "hr", "tags": ["count"]},
    ]
    holdout, gold = write_holdout(tmp_path / "holdout", questions), tmp_path / "gold"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(holdout), str(gold)], cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"the rebuilding process died ({done.returncode}): {done.stderr[-2000:]}"
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["exit"] == 1, done.stdout  # failures not excluded on record: a failed check
    assert outcome["runnable"] == [], f"still burning CPU after the rebuild: {outcome['runnable']}"
    entries = json.loads((gold / "mini.json").read_text(encoding="utf-8"))
    failed = {f["question_id"]: f["error"] for f in entries.get("failures", [])}
    assert set(failed) == {"mini-doubling", "mini-cross"}, failed
    for error in failed.values():  # over its memory budget (the doubling, given time) or past its timeout
        assert "worker's memory budget" in error or "longer than 30 s" in error, error
    built = {e["question_id"] for e in entries["entries"]}
    assert built == {"mini-01", "mini-02", "mini-03"}
