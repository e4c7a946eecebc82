"""`kgeval rejudge RUN` (issue 42), driven through `python -m kgeval` as a user runs it: a stored
run judged again as a new run without calling its system. Same configuration and gold: every
verdict given again field for field, the seals' verdict hashes equal; a rule switched in the
configuration flips exactly the attempts its `rule_accepts` figure named; the source is never
written; a tampered or unfinished source is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import duckdb
import pytest
import yaml

from kgeval.gold import load_gold
from kgeval.holdout import load_holdout
from kgeval.runs import ResultsDB
from tests.cli.test_cli import kgeval
from tests.conftest import REPO
from tests.reports.test_names_for_entities import names_query


def _ran(result) -> str:  # noqa: ANN001
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


def _rows(db, table: str, run_id: str) -> list:  # noqa: ANN001
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(f"SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = ? ORDER BY ALL", [run_id]).fetchall()
    finally:
        con.close()


def _verdicts(db, run_id: str) -> dict:  # noqa: ANN001
    with ResultsDB(db, read_only=True) as results:
        return {(q, s, v.judge): v.model_dump() for q, s, v in results.verdicts(run_id)}


def test_same_configuration_same_gold_gives_every_verdict_again(mini_holdout, mini_gold, tmp_path):
    db = tmp_path / "r.duckdb"
    common = ("--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db))
    source = _ran(kgeval("run", "--system", "weak", "--seeds", "2", *common))
    before = {table: _rows(db, table, source) for table in ("attempts", "verdicts", "runs")}

    done = kgeval("rejudge", source, "--db", str(db))
    derived = _ran(done)
    assert derived != source and "16 verdicts" not in done.stdout  # the weak control's two judges: 32 verdicts
    assert "32 verdicts; 32 identical to the source's, 0 changed, 0 flipped" in done.stdout, done.stdout
    assert _verdicts(db, derived) == _verdicts(db, source)  # field for field, details included
    assert {table: _rows(db, table, source) for table in before} == before  # the source is only read
    with ResultsDB(db, read_only=True) as results:
        meta = results.metadata(derived)
        assert results.sealed_verdicts_sha256(derived) == results.sealed_verdicts_sha256(source) is not None
        source_attempts = {(a.question_id, a.seed): a for a in results.attempts(source)}
        for attempt in results.attempts(derived):  # the source's answers, tries and times, not new calls
            was = source_attempts[(attempt.question_id, attempt.seed)]
            assert (attempt.sparql, attempt.answer, attempt.tries, attempt.latency_ms, attempt.state) == (was.sparql, was.answer, was.tries, was.latency_ms, was.state)
    origin = meta.derived_from
    assert origin is not None and origin.source == "run" and origin.source_run_id == source
    assert origin.source_judge_versions == meta.judge_versions and origin.source_gold_manifest_sha256 == meta.gold_manifest_sha256
    assert set(origin.source_judge_config_sha256) == set(meta.judge_versions) and not origin.gold_changed
    assert (meta.system, meta.seeds) == ("weak", [0, 1])

    report = kgeval("report", derived, "--db", str(db), "--gold", str(mini_gold))
    assert report.returncode == 0 and f"derived: the stored answers of run {source} judged again" in report.stdout, report.stderr
    compared = kgeval("compare", source, derived, "--db", str(db), "--format", "json")
    assert compared.returncode == 0 and json.loads(compared.stdout)["flips"] == [], compared.stderr
    as_json = kgeval("rejudge", source, "--db", str(db), "--format", "json")
    data = json.loads(as_json.stdout)
    assert as_json.returncode == 0 and data["reproduced"] is True and data["changes"] == [] and data["identical"] == 32, as_json.stderr


@pytest.fixture(scope="module")
def names_run(tmp_path_factory):
    """The sample holdout, every entity question answered with the entities' names (wrong with
    label_for_entity off, as by default), two seeds, through `kgeval run --system replay`."""
    tmp = tmp_path_factory.mktemp("rejudge-names")
    gold = load_gold(REPO / "gold")
    lines = []
    for kg in load_holdout(REPO / "holdout").kgs:
        for q in kg.questions:
            result = gold[q.id].result
            iri_columns = [j for j in range(len(result.vars)) if any(r[j] is not None and r[j].type == "uri" for r in result.rows)]
            names = bool(iri_columns) and not result.truncated
            for seed in range(2):  # seed 1 of every other question answers right: seeds disagree there
                sparql = names_query(result.vars, result.rows, iri_columns) if names and (seed == 0 or len(lines) % 2) else q.sparql
                lines.append(json.dumps({"kg": kg.id, "question_id": q.id, "seed": seed, "sparql": sparql}))
    (tmp / "replay.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp / "kgeval.yaml").write_text(yaml.safe_dump({"run": {"seeds": 2}}), encoding="utf-8")
    db = tmp / "r.duckdb"
    ran = kgeval("run", "--system", "replay", "--replay", str(tmp / "replay.jsonl"), "--holdout", str(REPO / "holdout"), "--gold", str(REPO / "gold"),
                 "--db", str(db), "--config", str(tmp / "kgeval.yaml"))  # fmt: skip
    return tmp, db, _ran(ran)


def test_a_rule_switched_flips_exactly_the_attempts_it_alone_decides(names_run):
    tmp, db, source = names_run
    with ResultsDB(db, read_only=True) as results:
        alone = {(q, s) for q, s, v in results.verdicts(source) if v.judge == "execution" and "label_for_entity" in v.details["leniency"]["alone"]}
    report = json.loads(kgeval("report", source, "--db", str(db), "--gold", str(REPO / "gold"), "--format", "json").stdout)
    said = report["rule_accepts"]["label_for_entity"]
    assert said["on"] is False and said["questions"] >= 10 and len(alone) > said["questions"]  # seeds that disagree: questions < attempts

    (tmp / "labels.yaml").write_text(yaml.safe_dump({"run": {"seeds": 2}, "judges": {"execution": {"labels": {"label_for_entity": True}}}}), encoding="utf-8")
    done = kgeval("rejudge", source, "--db", str(db), "--config", str(tmp / "labels.yaml"), "--format", "json")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    flipped = {(c["question_id"], c["seed"]) for c in data["changes"] if c["judge"] == "execution" and c["was_correct"] != c["now_correct"]}
    assert flipped == alone  # exactly those, no others
    assert all(c["was_correct"] is False and c["now_correct"] is True for c in data["changes"] if c["judge"] == "execution" and c["was_correct"] != c["now_correct"])
    assert data["by_rule"] == {"label_for_entity on": len(alone)} and data["flipped"] == len(alone)
    assert all("rule label_for_entity on" in c["why"] for c in data["changes"] if (c["question_id"], c["seed"]) in alone and c["judge"] == "execution")
    derived = data["run_id"]
    new = json.loads(kgeval("report", derived, "--db", str(db), "--gold", str(REPO / "gold"), "--format", "json").stdout)
    right_now = {q for q, o in _majorities(db, derived).items() if o}
    right_then = {q for q, o in _majorities(db, source).items() if o}
    assert sorted(right_now - right_then) == sorted(said["which"])  # the questions rule_accepts named
    assert new["rule_accepts"]["label_for_entity"]["on"] is True
    text = kgeval("rejudge", source, "--db", str(db), "--config", str(tmp / "labels.yaml"))
    assert f"flipped by rule: label_for_entity on: {len(alone)}" in text.stdout, text.stdout


def _majorities(db, run_id: str) -> dict[str, bool]:  # noqa: ANN001
    by_question: dict[str, list[bool]] = {}
    for (q, _, judge), v in _verdicts(db, run_id).items():
        if judge == "execution":
            by_question.setdefault(q, []).append(v["correct"])
    return {q: sum(c) * 2 > len(c) for q, c in by_question.items()}


TAMPERINGS = {
    "verdict flipped": ("UPDATE verdicts SET correct = NOT correct WHERE run_id = ? AND question_id = 'mini-02'", "changed after it was sealed (verdicts: 16 rows, edited)"),
    "seal removed": ("DELETE FROM run_seals WHERE run_id = ?", "is finished but its seal was removed"),
    "set back to running": ("UPDATE runs SET status = 'running' WHERE run_id = ?", "was sealed when it ended but now reads as running"),
}


@pytest.mark.parametrize("tampering", list(TAMPERINGS))
def test_a_tampered_source_is_refused_as_a_damaged_database_and_nothing_is_written(mini_holdout, mini_gold, tmp_path, tampering):
    """Refused as every reader refuses a damaged or locked database: exit 2, naming the
    database, the run and what changed (it was exit 1, as a failed check)."""
    db = tmp_path / "r.duckdb"
    source = _ran(kgeval("run", "--system", "weak", "--seeds", "1", "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db)))
    sql, said = TAMPERINGS[tampering]
    con = duckdb.connect(str(db))
    con.execute(sql, [source])
    con.close()
    before = {table: _rows(db, table, source) for table in ("runs", "attempts", "verdicts", "run_seals")}
    done = kgeval("rejudge", source, "--db", str(db))
    message = " ".join(done.stderr.split())
    assert done.returncode == 2 and f"{db}: run {source} {said}" in message and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == ""
    assert {table: _rows(db, table, source) for table in before} == before
    con = duckdb.connect(str(db), read_only=True)
    assert [r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()] == [source]  # no derived run begun
    con.close()


def test_runs_marks_a_derived_run_with_its_source(mini_holdout, mini_gold, tmp_path):
    """`kgeval runs` listed a re-judged run as any other: only its run page said it was derived."""
    db = tmp_path / "r.duckdb"
    source = _ran(kgeval("run", "--system", "weak", "--seeds", "1", "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db)))
    derived = _ran(kgeval("rejudge", source, "--db", str(db)))
    listed = kgeval("runs", "--db", str(db))
    assert listed.returncode == 0, listed.stderr
    header, *lines = [line.split("\t") for line in listed.stdout.splitlines()]
    assert header == ["run", "system", "status", "accuracy", "started", "derived from"]
    rows = {line[0]: dict(zip(header, line)) for line in lines}
    assert rows[source]["derived from"] == "-"
    assert rows[derived]["derived from"] == f"rejudged run {source}"
    assert rows[derived]["accuracy"] == rows[source]["accuracy"]


def test_an_unfinished_source_is_refused(mini_holdout, mini_gold, tmp_path):
    db = tmp_path / "r.duckdb"
    source = _ran(kgeval("run", "--system", "weak", "--seeds", "1", "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db)))
    with ResultsDB(db) as results:  # as a killed run leaves it: status running (its seal goes with the kill)
        results._con.execute("DELETE FROM run_seals WHERE run_id = ?", [source])
        results._con.execute("UPDATE runs SET status = 'running' WHERE run_id = ?", [source])
    done = kgeval("rejudge", source, "--db", str(db))
    assert done.returncode == 1 and "has not finished" in done.stderr and f"kgeval run --resume {source}" in done.stderr, done.stderr


def test_a_locked_source_is_named_after_the_wait(mini_holdout, mini_gold, tmp_path):
    from tests.service.test_shared_db import _hold_write_lock

    db = tmp_path / "r.duckdb"
    source = _ran(kgeval("run", "--system", "weak", "--seeds", "1", "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db)))
    holder = _hold_write_lock(db, 600)  # killed below
    try:
        done = subprocess.run([sys.executable, "-m", "kgeval", "rejudge", source, "--db", str(db)], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "KGEVAL_DB_WAIT_S": "0.5"}, cwd=REPO)  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 2 and str(db) in done.stderr and f"locked by process {holder.pid}" in done.stderr, done.stderr


def test_a_gold_that_changed_since_the_run_is_named_with_what_it_flipped(tmp_path):
    """The KG gains a salesperson after the run: the gold is rebuilt (its earlier version kept
    beside it); a recorded answer list of the two salespeople of then is wrong now, and the
    re-judged run names the questions whose gold changed and the flip they caused."""
    from tests.conftest import EX, MINI_QUESTIONS, MINI_TTL, write_holdout

    holdout, gold, db = tmp_path / "holdout", tmp_path / "gold", tmp_path / "r.duckdb"
    write_holdout(holdout)
    assert kgeval("gold", "rebuild", "--holdout", str(holdout), "--gold", str(gold)).returncode == 0
    records = [{"kg": "mini", "question_id": q["id"], "seed": s, "sparql": q["sparql"]} for q in MINI_QUESTIONS for s in range(2) if q["id"] != "mini-02"]
    records += [{"kg": "mini", "question_id": "mini-02", "seed": s, "answer": [f"{EX}entities/alice", f"{EX}entities/bob"]} for s in range(2)]
    (tmp_path / "replay.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    common = ("--holdout", str(holdout), "--gold", str(gold), "--db", str(db))
    source = _ran(kgeval("run", "--system", "replay", "--replay", str(tmp_path / "replay.jsonl"), "--seeds", "2", *common))

    write_holdout(holdout, ttl=MINI_TTL + "e:dan a ex:Person ; ex:worksIn e:sales .\n")  # sealed again
    assert kgeval("gold", "rebuild", "--holdout", str(holdout), "--gold", str(gold)).returncode == 0
    done = kgeval("rejudge", source, "--db", str(db), "--format", "json")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["gold_changed"] == {"mini-02": "gold result changed (2 rows then, 3 now)", "mini-03": "gold result changed (1 rows then, 1 now)"}
    flips = {(c["question_id"], c["seed"], c["judge"]) for c in data["changes"] if c["was_correct"] != c["now_correct"]}
    assert {q for q, _, _ in flips} == {"mini-02"} and data["by_gold"] == {"gold result changed (2 rows then, 3 now)": len(flips)}
    assert all(c["why"] == [f"gold: {data['gold_changed'][c['question_id']]}"] for c in data["changes"]), data["changes"]
    with ResultsDB(db, read_only=True) as results:
        origin = results.metadata(data["run_id"]).derived_from
        assert origin.source_gold_manifest_sha256 != results.metadata(data["run_id"]).gold_manifest_sha256
        assert origin.source_holdout_manifest_sha256 == results.metadata(source).holdout_manifest_sha256
