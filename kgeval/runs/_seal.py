"""A run's seal: what it recorded, hashed when it ended, checked by every reader.

A run writes its questions, checklist receipts, attempts and verdicts into the results
database; reports, comparisons, audits, exports and the service read them back. A verdict
flipped with any DuckDB client would move the published accuracy unnoticed. So when a run ends
(finished, or refused by the checklist) its rows are hashed, table by table, and the seal is
stored beside them (`run_seals`), with an HMAC tag when an integrity key is configured
(`kgeval.integrity`). Every read of an ended run's rows checks the seal first and refuses them,
naming the run and each table that changed, when it does not match (DESIGN invariant 9).

A run still running is not sealed (it is being written); `--resume` seals it when it ends.
While it runs, each transaction that writes attempts records what it wrote (`run_progress`:
the attempts' keys and a hash of their rows and verdicts, tagged with the key), so that
`--resume` continues only rows the run itself wrote: a killed run's verdicts edited in the
file and then resumed would otherwise be sealed as the run's own.
Runs ended by a kgeval that did not seal are read as they are when no key is configured, and
refused when one is (unsigned evidence is not trusted), as for the audit log. Without a key a
determined editor can recompute the seal; with one, no edit passes without the key.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from kgeval.errors import CheckFailed
from kgeval.integrity import check_tag, integrity_key, sign

SEALS_SCHEMA = """
CREATE TABLE IF NOT EXISTS run_seals (
    run_id VARCHAR PRIMARY KEY, sealed_at VARCHAR NOT NULL, tables JSON NOT NULL, seal_sha256 VARCHAR NOT NULL, tag VARCHAR);
CREATE TABLE IF NOT EXISTS run_starts (
    run_id VARCHAR PRIMARY KEY, start_sha256 VARCHAR NOT NULL, tag VARCHAR);
CREATE TABLE IF NOT EXISTS run_progress (
    run_id VARCHAR, seq INTEGER, keys JSON NOT NULL, rows_sha256 VARCHAR NOT NULL, tag VARCHAR, PRIMARY KEY (run_id, seq));
"""
# What a run is at its start and never changes: `--resume` continues only a run whose start
# matches (with the key: whose start was signed), so a run cannot be made up in the file and
# then sealed by a resume.
_START_FIELDS = (
    "run_id", "system", "system_version", "holdout_manifest_sha256", "gold_manifest_sha256", "question_set_sha256",
    "config_sha256", "seeds", "judge_versions", "started_at",
)  # fmt: skip

# Each table's rows of one run, in its key's order: the seal covers every column but run_id.
_SEALED = {
    "runs": "SELECT status, metadata FROM runs WHERE run_id = ?",
    "run_questions": "SELECT * EXCLUDE (run_id) FROM run_questions WHERE run_id = ? ORDER BY question_id",
    "checklist_items": "SELECT * EXCLUDE (run_id) FROM checklist_items WHERE run_id = ? ORDER BY phase, position",
    "attempts": "SELECT * EXCLUDE (run_id) FROM attempts WHERE run_id = ? ORDER BY question_id, seed",
    "verdicts": "SELECT * EXCLUDE (run_id) FROM verdicts WHERE run_id = ? ORDER BY question_id, seed, judge",
}
_BATCH_ROWS = 5000


VERDICTS_HASH = "verdicts_sha256"
"""The seal's entry holding `verdicts_sha256` over the run's verdicts (covered by the seal's
hash and tag like the tables' digests): what an export states, and a re-judged run reproduces."""
_VERDICT_FIELDS = ("judge", "version", "config_sha256", "correct", "path", "matched", "unmatched", "missing", "gold_total", "reason", "details")


def verdict_digest(question_id: str, seed: int, verdict: dict) -> str:
    """sha256 of one verdict (a dict of `Verdict`'s fields, details as data), in a canonical
    JSON form: the same from the results database, an export line, or a verdict just made."""
    record = [question_id, seed, {name: verdict.get(name) for name in _VERDICT_FIELDS}]
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def verdicts_sha256(digests: list[tuple[str, int, str, str]]) -> str:
    """The hash over a run's verdicts: (question id, seed, judge, `verdict_digest`), in that
    order whatever order they came in. A function of the verdicts alone: a run re-judged with
    the same configuration and gold gives the same (DESIGN invariant 15)."""
    digest = hashlib.sha256()
    for question_id, seed, judge, one in sorted(digests):
        digest.update(f"{question_id}\t{seed}\t{judge}\t{one}\n".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def stored_verdicts_sha256(con: Any, run_id: str) -> str:
    """`verdicts_sha256` over the run's verdicts as the results database holds them, streamed."""
    cursor = con.execute(f"SELECT question_id, seed, {', '.join(_VERDICT_FIELDS)} FROM verdicts WHERE run_id = ?", [run_id])
    digests = []
    while batch := cursor.fetchmany(_BATCH_ROWS):
        for row in batch:
            verdict = dict(zip(_VERDICT_FIELDS, row[2:]))
            verdict["details"] = json.loads(verdict["details"]) if verdict["details"] else {}
            digests.append((row[0], row[1], verdict["judge"], verdict_digest(row[0], row[1], verdict)))
    return verdicts_sha256(digests)


def sealed_verdicts_sha256(con: Any, run_id: str) -> str | None:
    """The verdict hash the run's seal records; None when it has no seal, or one made before
    seals recorded it."""
    row = _stored(con, "run_seals", "tables", run_id)
    return None if row is None else json.loads(row[0]).get(VERDICTS_HASH)


class RunChanged(CheckFailed):
    """A run's stored rows no longer match its seal (or, running, its start and write records):
    nothing of them is read. A found mismatch, so the service answers 409 as for any failed
    check; but to a command the results database is bad input, refused as a damaged or locked
    one is (exit 2), by every reader alike: `report`, `show`, `export`, `compare`, `audit`,
    `rejudge`, `runs`, `run --resume`."""

    exit_code = 2


def _table_digest(con: Any, query: str, run_id: str) -> tuple[int, str]:
    """(rows, sha256 over their values in key order), streamed in batches."""
    digest, rows = hashlib.sha256(), 0
    cursor = con.execute(query, [run_id])
    while batch := cursor.fetchmany(_BATCH_ROWS):
        rows += len(batch)
        digest.update(json.dumps(batch, default=str, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return rows, digest.hexdigest()


def run_digests(con: Any, run_id: str) -> dict[str, list]:
    """Every sealed table's [rows, sha256] for `run_id`, as stored in a seal."""
    return {table: list(_table_digest(con, query, run_id)) for table, query in _SEALED.items()}


def _seal_sha256(run_id: str, tables: dict[str, list]) -> str:
    return hashlib.sha256(json.dumps([run_id, tables], sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _start_sha256(metadata: Any) -> str:
    """The start of a run recorded before 2026-12-02 (`_START_FIELDS` only)."""
    values = [getattr(metadata, name) for name in _START_FIELDS]
    return hashlib.sha256(json.dumps(values, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


_CHANGING_FIELDS = frozenset({"served_versions", "finished_at", "resumed_at"})
"""Metadata a run writes after its start (at a resume, at its end): the rest is its start."""
_START_V2 = "v2:"


def _start_v2(con: Any, metadata: Any) -> str:
    """What a run is at its start: every metadata field but `_CHANGING_FIELDS` (its primary
    judge, reasoning settings, exclusions ...), its questions and its start checklist, hashed.
    (A first version covered `_START_FIELDS` only: a killed run's primary judge or question
    texts edited before `--resume` were then sealed as the run's own.)"""
    # a run that is not re-judged records its start as before the field existed
    unset = {"derived_from"} if getattr(metadata, "derived_from", None) is None else set()
    fixed = metadata.model_dump(mode="json", exclude=set(_CHANGING_FIELDS) | unset)
    questions = con.execute(_SEALED["run_questions"], [metadata.run_id]).fetchall()
    start = con.execute("SELECT * EXCLUDE (run_id) FROM checklist_items WHERE run_id = ? AND phase = 'start' ORDER BY position", [metadata.run_id]).fetchall()
    payload = json.dumps([fixed, questions, start], sort_keys=True, default=str, ensure_ascii=False, separators=(",", ":"))
    return _START_V2 + hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def record_start(con: Any, metadata: Any) -> None:
    """Record (and, with the key, sign) what the run is at its start (`_start_v2`): in
    `create_run`'s transaction, after its questions and checklist receipt."""
    start = _start_v2(con, metadata)
    key = integrity_key()
    con.execute("INSERT INTO run_starts VALUES (?, ?, ?)", [metadata.run_id, start, sign(start, key) if key else None])


_WITHHELD = "neither shown nor resumed"
"""What becomes of a running run that fails `check_start` or `check_progress`: `--resume` and
every reader of its rows (`ResultsDB`) call them."""


def check_start(con: Any, where: str, metadata: Any) -> None:
    """RunChanged unless the run's start is on record as it is now (and signed, with the key):
    `--resume` calls it before it writes anything, and every reader of a running run. A run
    from before starts were recorded passes without a key."""
    row = _stored(con, "run_starts", "start_sha256, tag", metadata.run_id)
    key = integrity_key()
    if row is None:
        if key is not None or metadata.sealed_when_ended:
            raise RunChanged(f"{where}: run {metadata.run_id} has no record of its start: it was not started by `kgeval run` (made up in the file?); {_WITHHELD}")
        return
    if row[0] != (_start_v2(con, metadata) if str(row[0]).startswith(_START_V2) else _start_sha256(metadata)):
        raise RunChanged(
            f"{where}: run {metadata.run_id} differs from what it was at its start (its system, holdout, gold, judges, seeds, "
            f"configuration, questions or start checklist was edited); {_WITHHELD}"
        )
    if key is not None:
        _check_tag(row[0], row[1], key, f"{where}: run {metadata.run_id}'s start")


def _has_table(con: Any, table: str) -> bool:
    """False for a seals table a file written before it existed lacks (opened read-only)."""
    return bool(con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [table]).fetchone()[0])


def _stored(con: Any, table: str, columns: str, run_id: str) -> tuple | None:
    """The run's row of a seals table; None when it has none, or the file has no such table."""
    if not _has_table(con, table):
        return None
    return con.execute(f"SELECT {columns} FROM {table} WHERE run_id = ?", [run_id]).fetchone()


def _check_tag(payload: str, tag: str | None, key: bytes, where: str) -> None:
    """`check_tag`, failing as RunChanged."""
    try:
        check_tag(payload, tag, key, where)
    except CheckFailed as exc:
        raise RunChanged(str(exc)) from None


def _rows_sha256(attempt_rows: list[tuple], verdict_rows: list[tuple]) -> str:
    """sha256 of attempt and verdict rows without their run id, each table in its key order
    (question, seed[, judge]): the same values whether taken from the rows as they are appended
    or as DuckDB reads them back (JSON columns are stored as their text, numbers and strings as
    given), so writing costs no read."""
    digest = hashlib.sha256()
    for rows in (sorted(attempt_rows, key=_attempt_key), sorted(verdict_rows, key=_verdict_key)):
        digest.update(json.dumps([row[1:] for row in rows], default=str, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.hexdigest()


def _attempt_key(row: tuple) -> tuple:  # attempts: run_id, kg, question_id, seed, ...
    return row[2], row[3]


def _verdict_key(row: tuple) -> tuple:  # verdicts: run_id, question_id, seed, judge, ...
    return row[1], row[2], row[3]


def _progress_payload(run_id: str, seq: int, keys: list[list], rows_sha256: str) -> str:
    return hashlib.sha256(json.dumps([run_id, seq, keys, rows_sha256], separators=(",", ":")).encode()).hexdigest()


def progress_row(run_id: str, seq: int, attempt_rows: list[tuple], verdict_rows: list[tuple]) -> tuple:
    """The `run_progress` row recording one write transaction's attempts and verdicts (rows as
    appended, run id first): append it in the same transaction."""
    keys = sorted(list(_attempt_key(row)) for row in attempt_rows)
    rows = _rows_sha256(attempt_rows, verdict_rows)
    key = integrity_key()
    tag = sign(_progress_payload(run_id, seq, keys, rows), key) if key else None
    return run_id, seq, json.dumps(keys), rows, tag


def next_progress_seq(con: Any, run_id: str) -> int:
    # fetched whole: a result left open on the connection refuses the appender that follows
    return con.execute("SELECT coalesce(max(seq), -1) + 1 FROM run_progress WHERE run_id = ?", [run_id]).fetchall()[0][0]


def check_progress(con: Any, where: str, metadata: Any) -> None:
    """RunChanged unless every attempt of the running run is as the run wrote it (each batch's
    rows as recorded, tagged with the key; no attempt the run did not write): `--resume` calls
    it before it continues, and every reader of a running run (a killed run's verdicts flipped
    in the file were reported as they were). A run from before progress was recorded passes
    without a key."""
    run_id = metadata.run_id
    records = []
    if _has_table(con, "run_progress"):
        records = con.execute("SELECT seq, keys, rows_sha256, tag FROM run_progress WHERE run_id = ? ORDER BY seq", [run_id]).fetchall()
    key = integrity_key()
    if not records and not metadata.sealed_when_ended and key is None:
        return  # written by a kgeval that recorded no progress
    attempts: dict[tuple, list[tuple]] = {}
    for row in con.execute("SELECT * FROM attempts WHERE run_id = ?", [run_id]).fetchall():
        attempts.setdefault(_attempt_key(row), []).append(row)
    verdicts: dict[tuple, list[tuple]] = {}
    for row in con.execute("SELECT * FROM verdicts WHERE run_id = ?", [run_id]).fetchall():
        verdicts.setdefault(_verdict_key(row)[:2], []).append(row)
    seqs = [record[0] for record in records]
    if seqs != list(range(len(seqs))):
        missing = sorted(set(range(max(seqs) + 1)) - set(seqs))
        raise RunChanged(
            f"{where}: run {run_id}: the records of write batch(es) {', '.join(map(str, missing[:5]))} are gone (deleted with their attempts, "
            f"to run them again?): {_WITHHELD}; restore the database from a copy, or run again"
        )
    covered: set[tuple] = set()
    for seq, keys_text, rows_sha256, tag in records:
        keys = [tuple(k) for k in json.loads(keys_text)]
        if key is not None:
            _check_tag(_progress_payload(run_id, seq, [list(k) for k in keys], rows_sha256), tag, key, f"{where}: run {run_id}'s record of batch {seq}")
        mine = [row for k in keys for row in attempts.get(k, [])], [row for k in keys for row in verdicts.get(k, [])]
        if _rows_sha256(*mine) != rows_sha256:
            shown = ", ".join(f"{q}/seed {s}" for q, s in keys[:3]) + (" ..." if len(keys) > 3 else "")
            raise RunChanged(
                f"{where}: run {run_id}: attempts it wrote were changed after it wrote them (batch {seq}: {shown}): "
                f"{_WITHHELD}; restore the database from a copy, or run again"
            )
        covered.update(keys)
    foreign = sorted((attempts.keys() | verdicts.keys()) - covered)
    if foreign:
        shown = ", ".join(f"{q}/seed {s}" for q, s in foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        raise RunChanged(f"{where}: run {run_id} holds {len(foreign)} attempt(s) it did not write ({shown}): {_WITHHELD}; restore the database from a copy, or run again")


def seal_run(con: Any, run_id: str) -> None:
    """Hash the run's rows and store the seal: call it in the transaction that ends the run,
    after its last write. A run is sealed once: RunChanged if it was sealed before (a sealed
    run set back to "running" and resumed would otherwise be sealed again over edited rows)."""
    if con.execute("SELECT count(*) FROM run_seals WHERE run_id = ?", [run_id]).fetchone()[0]:
        raise RunChanged(f"run {run_id} was sealed when it ended; it cannot end again (its status was edited back?)")
    tables = {**run_digests(con, run_id), VERDICTS_HASH: stored_verdicts_sha256(con, run_id)}
    seal = _seal_sha256(run_id, tables)
    key = integrity_key()
    con.execute(
        "INSERT INTO run_seals VALUES (?, ?, ?, ?, ?)",
        [run_id, datetime.now(UTC).isoformat(timespec="seconds"), json.dumps(tables), seal, sign(seal, key) if key else None],
    )


def check_seal(con: Any, where: str, run_id: str, status: str, sealed_when_ended: bool = False) -> None:
    """RunChanged naming the run and what changed, unless the ended run's rows match its seal
    (and its tag, with a key configured). A running run has no seal to check; one that has a
    seal was set back to running after it ended, and is refused."""
    row = _stored(con, "run_seals", "tables, seal_sha256, tag", run_id)
    if status == "running":
        if row is not None:
            raise RunChanged(f"{where}: run {run_id} was sealed when it ended but now reads as running: its status was edited; its figures are not shown")
        return
    key = integrity_key()
    if row is None:
        if sealed_when_ended or _stored(con, "run_starts", "start_sha256", run_id) is not None:
            # the flag, or a record of its start (only a sealing kgeval writes one), says it was sealed
            raise RunChanged(f"{where}: run {run_id} is {status} but its seal was removed (the kgeval that wrote it seals every run it ends): its figures are not shown")
        if key is not None:
            raise RunChanged(
                f"{where}: run {run_id} is {status} but has no seal, and an integrity key is configured: "
                "its rows cannot be trusted (written by a kgeval that did not seal runs, or the seal was removed)"
            )
        return
    stored_tables, stored_seal, tag = json.loads(row[0]), row[1], row[2]
    if key is not None:
        _check_tag(stored_seal, tag, key, f"{where}: run {run_id}'s seal")
    if _seal_sha256(run_id, stored_tables) != stored_seal:
        raise RunChanged(f"{where}: run {run_id}'s seal was edited: its table hashes do not give its seal hash")
    now = run_digests(con, run_id)
    changed = [_change(table, stored_tables.get(table), now[table]) for table in _SEALED if stored_tables.get(table) != now[table]]
    if changed:
        raise RunChanged(
            f"{where}: run {run_id} changed after it was sealed ({'; '.join(changed)}): its figures are not shown; "
            "restore the database from a copy, or run again"
        )


def _change(table: str, then: list | None, now: list) -> str:
    if then is None:
        return f"{table}: not in the seal"
    if then[0] != now[0]:
        return f"{table}: {then[0]} rows sealed, {now[0]} now"
    return f"{table}: {now[0]} rows, edited"
