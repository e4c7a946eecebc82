"""The audit log in the results database: samples and append-only decisions.

Nothing here updates or deletes: a changed mind is a new record, and the latest record at
the item's current hash is the one that counts (DESIGN invariant 9). Both tables are hash
chains (`kgeval._chain`): every read verifies its table's whole chain and raises BrokenLog
("audit log broken at record N: ...") on any edit, deletion or forged row; a stored value that
no longer validates is named, not a traceback. A sample is also checked whole against its item
hashes and its id (a hash over them), which catches a deleted item even under a chain
recomputed without the integrity key; the decisions on a run are read only beside whole samples.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
from pydantic import ValidationError

from kgeval._chain import BrokenLog, ChainedTable
from kgeval._files import transaction
from kgeval.audit._model import AuditItem, AuditRecord, AuditSample, sample_id_of
from kgeval.errors import InputError, first_validation_error
from kgeval.runs import connect_results, kgeval_tables

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit_samples (
    sample_id VARCHAR, run_id VARCHAR, accepts INTEGER, seed INTEGER, created_at VARCHAR,
    position INTEGER, item JSON, item_sha256 VARCHAR, PRIMARY KEY (sample_id, position));
CREATE TABLE IF NOT EXISTS audit_records (
    run_id VARCHAR NOT NULL, question_id VARCHAR NOT NULL, seed INTEGER NOT NULL,
    item_sha256 VARCHAR NOT NULL, auditor VARCHAR NOT NULL, decision VARCHAR NOT NULL,
    note VARCHAR NOT NULL, recorded_at VARCHAR NOT NULL);
"""


def _sample_row(v: dict) -> str:
    try:
        item = json.loads(v["item"])
        which = f"question {item.get('question_id')} seed {item.get('seed')}"
    except (TypeError, ValueError, AttributeError):
        which = "an unreadable item"
    return f"sample {v['sample_id']} of run {v['run_id']}, item {v['position']} ({which})"


_SAMPLES = ChainedTable(
    "audit sample", "audit_samples",
    ("sample_id", "run_id", "accepts", "seed", "created_at", "position", "item", "item_sha256"),
    legacy_order="created_at, sample_id, position", describe=_sample_row,
)  # fmt: skip
_RECORDS = ChainedTable(
    "audit", "audit_records", tuple(AuditRecord.model_fields), legacy_order="recorded_at, rowid",
    describe=lambda v: f"{v['auditor']}'s {v['decision']} on run {v['run_id']} question {v['question_id']} seed {v['seed']}, recorded {v['recorded_at']}",
)  # fmt: skip


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
        """Whether the file holds the audit tables (DamagedDatabase when it is another program's)."""
        return {"audit_samples", "audit_records"} <= kgeval_tables(self._con)

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
        """The stored sample, checked whole (`_whole`); None when there is none of that id."""
        if not self._ready:
            return None
        rows = self._read(_SAMPLES, "sample_id = ?", [sample_id])
        return self._whole(sample_id, rows) if rows else None

    def samples(self, run_id: str) -> list[AuditSample]:
        """Every stored sample of the run, oldest first, each checked whole."""
        if not self._ready:
            return []
        by_id: dict[str, list[tuple]] = {}
        for row in sorted(self._read(_SAMPLES, "run_id = ?", [run_id]), key=lambda r: (r[4], r[0])):
            by_id.setdefault(row[0], []).append(row)
        return [self._whole(sample_id, rows) for sample_id, rows in by_id.items()]

    def sample_ids(self, run_id: str) -> list[str]:
        return [s.sample_id for s in self.samples(run_id)]

    def _whole(self, sample_id: str, rows: list[tuple]) -> AuditSample:
        """The sample its rows hold, after checking that none was deleted, added, moved or edited
        (against the stored item hashes and the sample's id, a hash over them): with no
        integrity key, a chain recomputed after such an edit passes the chain's own check."""
        _, run_id, accepts, seed, created_at, *_ = rows[0]
        items = [self._validated(AuditItem, _SAMPLES, r[6], f"sample {sample_id} item {r[5]}", json=True) for r in rows]
        problems = [f"{what} differs from its first item's" for what, i in (("run", 1), ("accepts", 2), ("seed", 3), ("created_at", 4)) if len({r[i] for r in rows}) > 1]
        positions = [r[5] for r in rows]
        missing = sorted(set(range(max(positions) + 1)) - set(positions))
        if missing or len(set(positions)) != len(positions):
            problems.append(f"item {', '.join(map(str, missing)) or 'positions'} missing (deleted?): it holds items {', '.join(map(str, positions))}")
        for r, item in zip(rows, items):
            if item.sha256() != r[7]:
                problems.append(f"item {r[5]} (question {item.question_id} seed {item.seed}) no longer matches its hash {str(r[7])[:12]} (edited after it was drawn)")
        if not problems and sample_id_of(run_id, accepts, seed, [i.sha256() for i in items]) != sample_id:
            problems.append(f"its {len(items)} items no longer make up the sample drawn under this id (an item deleted, added, replaced or moved)")
        if problems:
            raise BrokenLog(f"{self.path}: audit sample {sample_id} of run {run_id} is not whole: {'; '.join(problems)}; its decisions are not counted (restore the file from a backup)")
        return AuditSample(sample_id=sample_id, run_id=run_id, accepts=accepts, seed=seed, items=items, created_at=created_at)

    def append(self, record: AuditRecord) -> None:
        r = record.model_dump()
        with transaction(self._con) as con:
            _RECORDS.append(con, [tuple(r[c] for c in _RECORDS.columns)])

    def records(self, run_id: str) -> list[AuditRecord]:
        """Every decision on the run, oldest first (ties kept in append order), once the run's
        stored samples are found whole: a decision counts only beside intact samples (BrokenLog
        otherwise), as `audit show` shows them."""
        if not self._ready:
            return []
        self.samples(run_id)
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
