"""The audit log in the results database: samples and append-only decisions.

Nothing here updates or deletes: a changed mind is a new record, and the latest record at
the item's current hash is the one that counts (DESIGN invariant 9). Both tables are hash
chains (`kgeval._chain`): every read verifies its table's whole chain and raises BrokenLog
("audit log broken at record N: ...") on any edit, deletion or forged row; a stored value that
no longer validates is named, not a traceback.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
from pydantic import ValidationError

from kgeval._chain import ChainedTable
from kgeval._files import transaction
from kgeval.audit._model import AuditItem, AuditRecord, AuditSample
from kgeval.errors import InputError, first_validation_error
from kgeval.runs import connect_results

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit_samples (
    sample_id VARCHAR, run_id VARCHAR, accepts INTEGER, seed INTEGER, created_at VARCHAR,
    position INTEGER, item JSON, item_sha256 VARCHAR, PRIMARY KEY (sample_id, position));
CREATE TABLE IF NOT EXISTS audit_records (
    run_id VARCHAR NOT NULL, question_id VARCHAR NOT NULL, seed INTEGER NOT NULL,
    item_sha256 VARCHAR NOT NULL, auditor VARCHAR NOT NULL, decision VARCHAR NOT NULL,
    note VARCHAR NOT NULL, recorded_at VARCHAR NOT NULL);
"""
_SAMPLES = ChainedTable(
    "audit sample", "audit_samples",
    ("sample_id", "run_id", "accepts", "seed", "created_at", "position", "item", "item_sha256"),
    legacy_order="created_at, sample_id, position",
)  # fmt: skip
_RECORDS = ChainedTable("audit", "audit_records", tuple(AuditRecord.model_fields), legacy_order="recorded_at, rowid")


class AuditLog:
    """Audit tables beside the runs in a results database (its own connection to the file)."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._con = connect_results(self.path, read_only=read_only)
        try:
            if not read_only:
                with transaction(self._con) as con:
                    con.execute(_SCHEMA)
                    _SAMPLES.ensure(con)
                    _RECORDS.ensure(con)
            self._ready = not read_only or self._has_tables()
        except BaseException:
            self._con.close()
            raise

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
            (sample.sample_id, sample.run_id, sample.accepts, sample.seed, sample.created_at, i, item.model_dump_json(), item.sha256())
            for i, item in enumerate(sample.items)
        ]
        with transaction(self._con) as con:
            _SAMPLES.append(con, rows)

    def sample(self, sample_id: str) -> AuditSample | None:
        if not self._ready:
            return None
        rows = self._read(_SAMPLES, "sample_id = ?", [sample_id])
        if not rows:
            return None
        _, run_id, accepts, seed, created_at, *_ = rows[0]
        items = [self._validated(AuditItem, _SAMPLES, r[6], f"sample {sample_id} item {r[5]}", json=True) for r in rows]
        return AuditSample(sample_id=sample_id, run_id=run_id, accepts=accepts, seed=seed, items=items, created_at=created_at)

    def sample_ids(self, run_id: str) -> list[str]:
        if not self._ready:
            return []
        rows = self._read(_SAMPLES, "run_id = ?", [run_id])
        return list(dict.fromkeys(r[0] for r in sorted(rows, key=lambda r: (r[4], r[0]))))

    def append(self, record: AuditRecord) -> None:
        r = record.model_dump()
        with transaction(self._con) as con:
            _RECORDS.append(con, [tuple(r[c] for c in _RECORDS.columns)])

    def records(self, run_id: str) -> list[AuditRecord]:
        """Every decision on the run, oldest first (ties kept in append order)."""
        if not self._ready:
            return []
        rows = self._read(_RECORDS, "run_id = ?", [run_id])
        records = [self._validated(AuditRecord, _RECORDS, dict(zip(_RECORDS.columns, row)), f"decision on {row[1]} seed {row[2]}") for row in rows]
        return sorted(records, key=lambda r: r.recorded_at)  # stable: ties stay in append order

    def _read(self, table: ChainedTable, where: str, params: list) -> list[tuple]:
        try:
            return table.read(self._con, where, params)
        except duckdb.Error as exc:
            raise InputError(f"{self.path}: {table.log} log unreadable: {exc}") from None

    def _validated(self, model, table: ChainedTable, data, what: str, *, json: bool = False):  # noqa: ANN001, ANN202
        try:
            return model.model_validate_json(data) if json else model.model_validate(data)
        except ValidationError as exc:
            raise InputError(f"{self.path}: {table.log} log: {what}: invalid stored value: {first_validation_error(exc)}") from None
