"""The audit log in the results database: samples and append-only decisions.

Nothing here updates or deletes: a changed mind is a new record, and the latest record at
the item's current hash is the one that counts (DESIGN invariant 9).
"""

from __future__ import annotations

from pathlib import Path

from kgeval._duckdb import connect_duckdb
from kgeval._files import transaction
from kgeval.audit._model import AuditItem, AuditRecord, AuditSample

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit_samples (
    sample_id VARCHAR, run_id VARCHAR, accepts INTEGER, seed INTEGER, created_at VARCHAR,
    position INTEGER, item JSON, item_sha256 VARCHAR, PRIMARY KEY (sample_id, position));
CREATE TABLE IF NOT EXISTS audit_records (
    run_id VARCHAR NOT NULL, question_id VARCHAR NOT NULL, seed INTEGER NOT NULL,
    item_sha256 VARCHAR NOT NULL, auditor VARCHAR NOT NULL, decision VARCHAR NOT NULL,
    note VARCHAR NOT NULL, recorded_at VARCHAR NOT NULL);
"""


class AuditLog:
    """Audit tables beside the runs in a results database (its own connection to the file)."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._con = connect_duckdb(self.path, read_only=read_only)
        if not read_only:
            self._con.execute(_SCHEMA)
        self._ready = not read_only or self._has_tables()

    def _has_tables(self) -> bool:
        rows = self._con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('audit_samples', 'audit_records')"
        ).fetchone()
        return rows[0] == 2

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def save_sample(self, sample: AuditSample) -> None:
        """Store a drawn sample; drawing the same sample again stores nothing new."""
        if self.sample(sample.sample_id) is not None:
            return
        rows = [
            [sample.sample_id, sample.run_id, sample.accepts, sample.seed, sample.created_at, i, item.model_dump_json(), item.sha256()]
            for i, item in enumerate(sample.items)
        ]
        with transaction(self._con) as con:
            con.executemany("INSERT INTO audit_samples VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def sample(self, sample_id: str) -> AuditSample | None:
        if not self._ready:
            return None
        rows = self._con.execute(
            "SELECT run_id, accepts, seed, created_at, item FROM audit_samples WHERE sample_id = ? ORDER BY position",
            [sample_id],
        ).fetchall()
        if not rows:
            return None
        run_id, accepts, seed, created_at, _ = rows[0]
        items = [AuditItem.model_validate_json(r[4]) for r in rows]
        return AuditSample(sample_id=sample_id, run_id=run_id, accepts=accepts, seed=seed, items=items, created_at=created_at)

    def sample_ids(self, run_id: str) -> list[str]:
        if not self._ready:
            return []
        rows = self._con.execute(
            "SELECT DISTINCT sample_id, created_at FROM audit_samples WHERE run_id = ? ORDER BY created_at, sample_id", [run_id]
        ).fetchall()
        return [r[0] for r in rows]

    def append(self, record: AuditRecord) -> None:
        r = record.model_dump()
        self._con.execute(
            "INSERT INTO audit_records VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [r["run_id"], r["question_id"], r["seed"], r["item_sha256"], r["auditor"], r["decision"], r["note"], r["recorded_at"]],
        )

    def records(self, run_id: str) -> list[AuditRecord]:
        """Every decision on the run, oldest first (ties kept in insertion order)."""
        if not self._ready:
            return []
        cur = self._con.execute(
            "SELECT run_id, question_id, seed, item_sha256, auditor, decision, note, recorded_at "
            "FROM audit_records WHERE run_id = ? ORDER BY recorded_at, rowid",
            [run_id],
        )
        names = [d[0] for d in cur.description]
        return [AuditRecord(**dict(zip(names, row))) for row in cur.fetchall()]
