"""The review log in a DuckDB file: append-only decisions, as a hash chain (`kgeval._chain`).

A missing or corrupt store reads as empty and approves nothing (DESIGN invariant 9): any
error opening or reading it, a broken chain (an edited, deleted or forged record: "review log
broken at record N: ..."), or any row that does not validate, and `records()` is empty with
`problem` saying why. Writing to a corrupt store is refused, never repaired over.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
from pydantic import ValidationError

from kgeval._chain import BrokenLog, ChainedTable
from kgeval._files import transaction
from kgeval.errors import InputError, KgevalError, first_validation_error
from kgeval.review._model import ReviewRecord
from kgeval.runs import connect_results

_SCHEMA = """
CREATE TABLE IF NOT EXISTS gold_reviews (
    kg VARCHAR NOT NULL, question_id VARCHAR NOT NULL, domain VARCHAR NOT NULL,
    content_sha256 VARCHAR NOT NULL, reviewer VARCHAR NOT NULL, decision VARCHAR NOT NULL,
    note VARCHAR NOT NULL, recorded_at VARCHAR NOT NULL);
"""
_REVIEWS = ChainedTable("review", "gold_reviews", tuple(ReviewRecord.model_fields), legacy_order="recorded_at, rowid")


class ReviewLog:
    """Gold review decisions in a DuckDB file (by default the results database)."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.problem: str | None = None
        self._con: duckdb.DuckDBPyConnection | None = None
        if read_only and not self.path.exists():
            self.problem = f"{self.path}: review store does not exist"
            return
        try:
            self._con = connect_results(self.path, read_only=read_only)
            if not read_only:
                with transaction(self._con) as con:
                    con.execute(_SCHEMA)
                    _REVIEWS.ensure(con)
        except (duckdb.Error, KgevalError) as exc:
            self.problem = f"{self.path}: review store unreadable: {exc}"
            if self._con is not None:
                self._con.close()
            self._con = None

    def close(self) -> None:
        if self._con is not None:
            self._con.close()

    def __enter__(self) -> ReviewLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def records(self) -> list[ReviewRecord]:
        """Every decision, oldest first; empty (with `problem` set) when the store is unusable."""
        if self._con is None:
            return []
        try:
            rows = _REVIEWS.read(self._con)
            records = [ReviewRecord(**dict(zip(_REVIEWS.columns, row))) for row in rows]
        except duckdb.CatalogException:
            return []  # a results database nobody has reviewed in yet
        except BrokenLog as exc:
            self.problem = f"{self.path}: {exc}"
            return []
        except ValidationError as exc:
            self.problem = f"{self.path}: review store holds an invalid record: {first_validation_error(exc)}"
            return []
        except (duckdb.Error, KgevalError) as exc:  # KgevalError: a damaged file (DamagedDatabase)
            self.problem = f"{self.path}: review store unreadable: {exc}"
            return []
        return sorted(records, key=lambda r: r.recorded_at)  # stable: ties stay in append order

    def append(self, record: ReviewRecord) -> None:
        if self._con is None:
            raise InputError(f"{self.problem}; not writing to it (move it aside to start a new store)")
        r = record.model_dump()
        try:
            with transaction(self._con) as con:
                _REVIEWS.append(con, [tuple(r[c] for c in _REVIEWS.columns)])
        except BrokenLog as exc:
            raise InputError(f"{self.path}: {exc}; not writing to it") from None
