"""A run's seal: what it recorded, hashed when it ended, checked by every reader.

A run writes its questions, checklist receipts, attempts and verdicts into the results
database; reports, comparisons, audits, exports and the service read them back. A verdict
flipped with any DuckDB client would move the published accuracy unnoticed. So when a run ends
(finished, or refused by the checklist) its rows are hashed, table by table, and the seal is
stored beside them (`run_seals`), with an HMAC tag when an integrity key is configured
(`kgeval.integrity`). Every read of an ended run's rows checks the seal first and refuses them,
naming the run and each table that changed, when it does not match (DESIGN invariant 9).

A run still running is not sealed (it is being written); `--resume` seals it when it ends.
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
"""

# Each table's rows of one run, in its key's order: the seal covers every column but run_id.
_SEALED = {
    "runs": "SELECT status, metadata FROM runs WHERE run_id = ?",
    "run_questions": "SELECT * EXCLUDE (run_id) FROM run_questions WHERE run_id = ? ORDER BY question_id",
    "checklist_items": "SELECT * EXCLUDE (run_id) FROM checklist_items WHERE run_id = ? ORDER BY phase, position",
    "attempts": "SELECT * EXCLUDE (run_id) FROM attempts WHERE run_id = ? ORDER BY question_id, seed",
    "verdicts": "SELECT * EXCLUDE (run_id) FROM verdicts WHERE run_id = ? ORDER BY question_id, seed, judge",
}
_BATCH_ROWS = 5000


class RunChanged(CheckFailed):
    """An ended run's stored rows no longer match its seal: nothing of them is read."""


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


def seal_run(con: Any, run_id: str) -> None:
    """Hash the run's rows and store the seal (replacing an earlier one): call it in the
    transaction that ends the run, after its last write."""
    tables = run_digests(con, run_id)
    seal = _seal_sha256(run_id, tables)
    key = integrity_key()
    con.execute("DELETE FROM run_seals WHERE run_id = ?", [run_id])
    con.execute(
        "INSERT INTO run_seals VALUES (?, ?, ?, ?, ?)",
        [run_id, datetime.now(UTC).isoformat(timespec="seconds"), json.dumps(tables), seal, sign(seal, key) if key else None],
    )


def check_seal(con: Any, where: str, run_id: str, status: str) -> None:
    """RunChanged naming the run and what changed, unless the ended run's rows match its seal
    (and its tag, with a key configured). A running run is not checked."""
    if status == "running":
        return
    has_table = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'run_seals'").fetchone()[0]
    row = con.execute("SELECT tables, seal_sha256, tag FROM run_seals WHERE run_id = ?", [run_id]).fetchone() if has_table else None
    key = integrity_key()
    if row is None:
        if key is not None:
            raise RunChanged(
                f"{where}: run {run_id} is {status} but has no seal, and an integrity key is configured: "
                "its rows cannot be trusted (written by a kgeval that did not seal runs, or the seal was removed)"
            )
        return
    stored_tables, stored_seal, tag = json.loads(row[0]), row[1], row[2]
    if key is not None:
        try:
            check_tag(stored_seal, tag, key, f"{where}: run {run_id}'s seal")
        except CheckFailed as exc:
            raise RunChanged(str(exc)) from None
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
