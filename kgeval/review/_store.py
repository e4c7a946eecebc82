"""The review log in a DuckDB file: append-only decisions.

A missing or corrupt store reads as empty and approves nothing (DESIGN invariant 9): any
error opening or reading it, or any row that does not validate, and `records()` is empty
with `problem` saying why. Writing to a corrupt store is refused, never repaired over.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
from pydantic import ValidationError

from kgeval._duckdb import connect_duckdb
from kgeval.errors import InputError
from kgeval.review._model import ReviewRecord

_SCHEMA = """
CREATE TABLE IF NOT EXISTS gold_reviews (
    kg VARCHAR NOT NULL, question_id VARCHAR NOT NULL, domain VARCHAR NOT NULL,
    content_sha256 VARCHAR NOT NULL, reviewer VARCHAR NOT NULL, decision VARCHAR NOT NULL,
    note VARCHAR NOT NULL, recorded_at VARCHAR NOT NULL);
"""
_COLUMNS = list(ReviewRecord.model_fields)


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
            self._con = connect_duckdb(self.path, read_only=read_only)
            if not read_only:
                self._con.execute(_SCHEMA)
        except InputError as exc:
            self.problem = f"review store unreadable: {exc}"
            self._con = None
        except duckdb.Error as exc:
            self.problem = f"{self.path}: review store unreadable: {exc}"
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
            rows = self._con.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM gold_reviews ORDER BY recorded_at, rowid"
            ).fetchall()
            return [ReviewRecord(**dict(zip(_COLUMNS, row))) for row in rows]
        except duckdb.CatalogException:
            return []  # a results database nobody has reviewed in yet
        except (duckdb.Error, ValidationError) as exc:
            self.problem = f"{self.path}: review store unreadable: {exc}"
            return []

    def append(self, record: ReviewRecord) -> None:
        if self._con is None:
            raise InputError(f"{self.problem}; not writing to it (move it aside to start a new store)")
        r = record.model_dump()
        self._con.execute(
            f"INSERT INTO gold_reviews ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
            [r[c] for c in _COLUMNS],
        )
