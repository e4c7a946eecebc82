"""The review log in a DuckDB file: append-only decisions, as a hash chain (`kgeval._chain`).

A missing store approves nothing (DESIGN invariant 9): `records()` is empty and `problem` says
so. A damaged one is named, never read as empty: a file that is not a DuckDB database (cut,
overwritten, zero bytes) or is another program's database raises DamagedDatabase (exit 2); a
broken chain (an edited, deleted or forged record, or a log that lost its chain: "review log
broken at record N: ...") raises BrokenLog (exit 1); a record that does not validate raises
InputError naming it. Nothing of such a store is read, and nothing is written to it.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from kgeval._chain import ChainedTable
from kgeval._files import transaction
from kgeval.errors import InputError, first_validation_error
from kgeval.review._model import ReviewRecord
from kgeval.runs import DamagedDatabase, connect_results, kgeval_tables

_SCHEMA = """
CREATE TABLE IF NOT EXISTS gold_reviews (
    kg VARCHAR NOT NULL, question_id VARCHAR NOT NULL, domain VARCHAR NOT NULL,
    content_sha256 VARCHAR NOT NULL, reviewer VARCHAR NOT NULL, decision VARCHAR NOT NULL,
    note VARCHAR NOT NULL, recorded_at VARCHAR NOT NULL);
"""
_REVIEWS = ChainedTable(
    "review", "gold_reviews", tuple(ReviewRecord.model_fields), legacy_order="recorded_at, rowid",
    describe=lambda v: f"{v['reviewer']}'s {v['decision']} on question {v['question_id']} at {str(v['content_sha256'])[:12]}, recorded {v['recorded_at']}",
)  # fmt: skip


class ReviewLog:
    """Gold review decisions in a DuckDB file (by default the results database)."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.problem: str | None = None
        """Why the store approves nothing though readable: it does not exist."""
        self._con = None
        self._tables: set[str] = set()
        if read_only and not self.path.exists():
            self.problem = f"{self.path}: review store does not exist"
            return
        self._con = connect_results(self.path, read_only=read_only)
        try:
            self._tables = kgeval_tables(self._con)
            if read_only and not self._tables & {"runs", "gold_reviews"}:
                raise DamagedDatabase(f"{self.path}: not a kgeval results database (it has neither runs nor gold reviews)")
            if not read_only:
                with transaction(self._con) as con:
                    con.execute(_SCHEMA)
                    _REVIEWS.ensure(con)
                self._tables.add("gold_reviews")
        except BaseException:
            self._con.close()
            raise

    def close(self) -> None:
        if self._con is not None:
            self._con.close()

    def __enter__(self) -> ReviewLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def records(self) -> list[ReviewRecord]:
        """Every decision, oldest first; empty when the store does not exist or nobody has
        reviewed in this results database yet. BrokenLog, DamagedDatabase or InputError when
        the store cannot be trusted (see the module docstring)."""
        if self._con is None or "gold_reviews" not in self._tables:
            return []
        rows = _REVIEWS.read(self._con)
        try:
            records = [ReviewRecord(**dict(zip(_REVIEWS.columns, row))) for row in rows]
        except ValidationError as exc:
            raise InputError(f"{self.path}: review log holds an invalid record: {first_validation_error(exc)}") from None
        return sorted(records, key=lambda r: r.recorded_at)  # stable: ties stay in append order

    def append(self, record: ReviewRecord) -> None:
        if self._con is None:
            raise InputError(f"{self.problem}; not writing to it")
        r = record.model_dump()
        with transaction(self._con) as con:
            _REVIEWS.append(con, [tuple(r[c] for c in _REVIEWS.columns)])
