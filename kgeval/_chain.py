"""Hash-chained, append-only logs in a DuckDB file (the audit and review logs).

Every row of a chained table carries `seq` (1, 2, ... in append order), `prev_sha256` (the
previous row's `row_sha256`, "" for the first), `row_sha256` (sha256 over the log's name, seq,
prev_sha256 and the row's values) and, when an integrity key is configured (`kgeval.integrity`),
`tag`, the HMAC of `row_sha256`. A head row per log in `log_heads` keeps the chain's length and
last hash (tagged likewise), so deleting the newest records is caught as well as editing,
deleting, reordering or inserting any other. What no check inside the file can catch: the
newest records deleted together with the head put back to an earlier one (copied from the
file as it was then), or the whole log removed with its head; that is the log as it was, or as
if never written. A head kept elsewhere (its length and hash) is the witness for that.

Every read verifies the whole chain first; a broken chain raises `BrokenLog` ("audit log
broken at record N: ...") and nothing of it is returned (DESIGN invariant 9). Without a
key a determined editor can recompute every hash; with one, no edit passes without the key.

Stores written before chains existed are chained in place the first time they are opened for
writing with the operator's word (`KGEVAL_CHAIN_UNCHAINED_LOGS=1`), their rows in the order
they were read until then; the head records how many rows were chained so, and when. Without
that word, an unchained log that holds records is a broken log, key or no key, for readers and
writers alike: inside the file, a log written before chains existed looks exactly like one
whose chain columns and head were deleted to insert a forged record, so neither is trusted
(nor chained, which would sign the forgery) until the operator has looked. An unchained
log with no records holds nothing to trust and is chained silently.

A table of another schema (the log's own columns missing) is not a broken log but another
program's table: DamagedDatabase (exit 2), nothing of it read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb

from kgeval._duckdb import DamagedDatabase
from kgeval._files import sha256_json
from kgeval.errors import CheckFailed
from kgeval.integrity import check_tag, integrity_key, sign

MIGRATE_ENV = "KGEVAL_CHAIN_UNCHAINED_LOGS"
CHAIN_COLUMNS = ("seq", "prev_sha256", "row_sha256", "tag")
_HEADS = """
CREATE TABLE IF NOT EXISTS log_heads (
    log VARCHAR PRIMARY KEY, length BIGINT NOT NULL, head_sha256 VARCHAR NOT NULL, tag VARCHAR,
    migrated_rows BIGINT NOT NULL DEFAULT 0, migrated_at VARCHAR);
"""


class BrokenLog(CheckFailed):
    """A chained log was edited, cut or forged: nothing of it is read. A found mismatch (the
    service answers 409), refused by a command as a tampered results database is (exit 2, as
    `RunChanged`); a report that withholds only its audit or review figures for it says so and
    exits 1, its other figures shown."""

    exit_code = 2


@contextmanager
def _naming_the_file(con: object) -> Iterator[None]:
    """A BrokenLog raised inside names the file (the connection's `path`, when it has one)."""
    try:
        yield
    except BrokenLog as exc:
        path = getattr(con, "path", None)
        if path is None or str(exc).startswith(f"{path}: "):
            raise
        raise BrokenLog(f"{path}: {exc}") from None


@dataclass(frozen=True)
class ChainedTable:
    """One append-only table: the log's name (in messages and hashes), its table, its own
    columns in order, and the order its rows had before chains existed (for migration)."""

    log: str
    table: str
    columns: tuple[str, ...]
    legacy_order: str
    describe: Callable[[dict], str] = lambda values: ""
    """A record in words for messages ("ann's disagree on question q1 seed 0"), from its values."""

    def _said(self, values: tuple) -> str:
        return self.describe(dict(zip(self.columns, values))) or "a record"

    def _row_sha256(self, seq: int, prev: str, values: tuple) -> str:
        return sha256_json({"log": self.log, "seq": seq, "prev": prev, "row": dict(zip(self.columns, values))})

    def _head_payload(self, length: int, head: str) -> str:
        return f"{self.log}\t{length}\t{head}"

    def _has_chain(self, con: duckdb.DuckDBPyConnection) -> bool:
        """Whether the table has its chain columns; DamagedDatabase when it lacks its own."""
        names = [r[0] for r in con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index", [self.table]).fetchall()]
        if names and not set(self.columns) <= set(names):
            raise DamagedDatabase(
                f"{getattr(con, 'path', 'the database')}: table {self.table} has columns {names}, expected {list(self.columns)}: "
                f"not a kgeval {self.log} log (a database of another schema?); nothing of it is read"
            )
        return set(CHAIN_COLUMNS) <= set(names)

    def _head(self, con: duckdb.DuckDBPyConnection) -> tuple[int, str, str | None] | None:
        if not con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'log_heads'").fetchone()[0]:
            return None
        return con.execute("SELECT length, head_sha256, tag FROM log_heads WHERE log = ?", [self.log]).fetchone()

    def ensure(self, con: duckdb.DuckDBPyConnection) -> None:
        """On a store opened for writing: the chain columns and head table exist; rows written
        before chains existed are chained now (see the module docstring)."""
        with _naming_the_file(con):
            self._ensure(con)

    def _ensure(self, con: duckdb.DuckDBPyConnection) -> None:
        con.execute(_HEADS)
        if self._has_chain(con):
            return
        if self._head(con) is not None:
            raise self._broken(1, "its chain columns were removed")
        rows = con.execute(f"SELECT {', '.join(self.columns)} FROM {self.table} ORDER BY {self.legacy_order}").fetchall()
        if rows and os.environ.get(MIGRATE_ENV) != "1":
            raise self._unchained(len(rows))
        for column, kind in zip(CHAIN_COLUMNS, ("BIGINT", "VARCHAR", "VARCHAR", "VARCHAR")):
            con.execute(f"ALTER TABLE {self.table} ADD COLUMN {column} {kind}")
        con.execute(f"DELETE FROM {self.table}")
        self._insert(con, rows, 0, "", migrated=len(rows))

    def append(self, con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
        """Append rows (values in `columns` order) to a verified chain; call inside a transaction."""
        with _naming_the_file(con):
            length, head = self._verified_head(con)
        self._insert(con, rows, length, head)

    def _insert(self, con: duckdb.DuckDBPyConnection, rows: list[tuple], length: int, head: str, *, migrated: int = 0) -> None:
        key, chained = integrity_key(), []
        for values in rows:
            length += 1
            row_sha = self._row_sha256(length, head, tuple(values))
            chained.append((*values, length, head, row_sha, sign(row_sha, key) if key else None))
            head = row_sha
        if chained:
            names = ", ".join((*self.columns, *CHAIN_COLUMNS))
            con.executemany(f"INSERT INTO {self.table} ({names}) VALUES ({', '.join('?' * len(chained[0]))})", chained)
        tag = sign(self._head_payload(length, head), key) if key else None
        con.execute(
            "INSERT INTO log_heads (log, length, head_sha256, tag, migrated_rows, migrated_at) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (log) DO UPDATE SET length = excluded.length, head_sha256 = excluded.head_sha256, tag = excluded.tag",
            [self.log, length, head, tag, migrated, datetime.now(UTC).isoformat(timespec="seconds") if migrated else None],
        )

    def read(self, con: duckdb.DuckDBPyConnection, where: str = "", params: list | None = None) -> list[tuple]:
        """The rows (values in `columns` order, in append order) matching `where`, after the
        whole chain verified; BrokenLog otherwise."""
        with _naming_the_file(con):
            if not self._has_chain(con):
                return self._read_unchained(con, where, params)
            self._verified_head(con)
        clause = f"WHERE {where}" if where else ""
        return con.execute(f"SELECT {', '.join(self.columns)} FROM {self.table} {clause} ORDER BY seq", params or []).fetchall()

    def _read_unchained(self, con: duckdb.DuckDBPyConnection, where: str, params: list | None) -> list[tuple]:
        """An unchained log is read only when it holds nothing (see the module docstring)."""
        if self._head(con) is not None:
            raise self._broken(1, "its chain columns were removed")
        records = con.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0]
        if records:
            raise self._unchained(records)
        return []

    def _unchained(self, records: int) -> BrokenLog:
        sign = " and sign" if integrity_key() is not None else ""
        return self._broken(
            1,
            f"it holds {records} records without a hash chain: written before chains existed, or its chain columns and head were "
            f"removed (to insert a forged record?); check them, then chain{sign} them as they are now: run a command that writes "
            f"to the file (`kgeval serve`, `kgeval audit sample`, `kgeval review approve`) once with {MIGRATE_ENV}=1",
        )

    def _verified_head(self, con: duckdb.DuckDBPyConnection) -> tuple[int, str]:
        """(length, last hash) of the chain after checking every row and the head."""
        key = integrity_key()
        names = ", ".join((*CHAIN_COLUMNS, *self.columns))
        prev, n, last = "", 0, None
        for n, row in enumerate(con.execute(f"SELECT {names} FROM {self.table} ORDER BY seq NULLS LAST").fetchall(), 1):
            self._check_row(n, prev, row, key, last)
            prev, last = row[2], row
        head = self._head(con)
        if head is None:
            if n:
                raise self._broken(n, "the log has records but no head (log_heads) row")
            return 0, ""
        self._check_head(n, prev, head, key, last)
        return n, prev

    def _check_row(self, n: int, prev: str, row: tuple, key: bytes | None, before: tuple | None) -> None:
        seq, row_prev, row_sha, tag = row[:4]
        said = self._said(row[4:])
        after = f"; the record before it: {self._said(before[4:])}" if before else ""
        if seq is None or row_sha is None:
            raise self._broken(n, f"a record without chain fields (inserted outside kgeval?): {said}")
        if seq != n:
            what = "missing (deleted?)" if seq > n else "stored twice"
            raise self._broken(n, f"record {n} is {what}; the next stored record is number {seq}: {said}{after}")
        if row_prev != prev:
            raise self._broken(n, f"it does not follow the record before it (a record was deleted, reordered or replaced): {said}{after}")
        if self._row_sha256(seq, row_prev, tuple(row[4:])) != row_sha:
            raise self._broken(n, f"its content no longer matches its hash (edited after it was written); it now reads: {said}")
        if key is not None:
            try:
                check_tag(row_sha, tag, key, f"record {n}")
            except CheckFailed as exc:
                raise self._broken(n, str(exc)) from None

    def _check_head(self, n: int, last: str, head: tuple, key: bytes | None, last_row: tuple | None) -> None:
        length, head_sha, tag = head
        if length != n or head_sha != last:
            left = f"; the last record left: {self._said(last_row[4:])}" if last_row else ""
            raise self._broken(
                n + 1 if length > n else length + 1,
                f"the log holds {n} records but was last written with {length} (records deleted from its end, or added outside kgeval){left}",
            )
        if key is not None:
            try:
                check_tag(self._head_payload(length, head_sha), tag, key, "the log's head")
            except CheckFailed as exc:
                raise self._broken(n, str(exc)) from None

    def _broken(self, n: int, why: str) -> BrokenLog:
        return BrokenLog(f"{self.log} log broken at record {n}: {why}; nothing of it is read (restore the file from a backup, or move it aside)")
