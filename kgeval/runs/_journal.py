"""A running run's journal: its completed attempts, durable before they reach the results
database, so that the run need not hold the database file (DESIGN invariant 11).

DuckDB lets one process open a file read-write and no other process open it at all meanwhile.
A run that held its connection for hours locked every `report`, `show`, `runs`, `export`, the
service and a second run out. So a run writes each group of completed attempts (their rows
and verdicts, as they will be appended) as one line of its journal, `<db>.journal/<run>.jsonl`,
written and fsync'd before the next group is taken: the attempts are persisted then. Every
`run.db_flush_s` the run opens the database for one transaction, appends what the journal
holds beyond what it appended before (with its `run_progress` record, `_seal`), closes the file
and empties the journal; when the file is busy it tries again at the next flush (the journal
keeps the attempts meanwhile), and at the run's end it waits as any command does.

A line is `sha256 tag json`: the hash of the JSON text (a line cut by a kill, or a damaged one,
does not match), and its HMAC under the integrity key when one is configured (`kgeval.integrity`:
a killed run's journal edited before `--resume` is refused, as its rows in the database are).
A line cut short is the tail of a write the kill interrupted: it is dropped (its attempts were
never acknowledged; `--resume` sends them again) and the file truncated to its last whole line.
A line that fails its check with whole lines after it is damage: refused, naming the file and
the line.

The run holds an exclusive lock (`flock`) on its journal while it writes it; `--resume` takes
the same lock, so a run is never continued by two processes at once (the database's lock said
so before), and moves the journal into the database (attempts already there are skipped: a
kill between the transaction and the emptying duplicates nothing) before it asks for anything.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from kgeval._duckdb import DiskFull, first_line
from kgeval.errors import CheckFailed, DatabaseBusy, InputError, KgevalError
from kgeval.integrity import check_tag, integrity_key, sign
from kgeval.runs._db import ResultsDB
from kgeval.runs._seal import RunChanged

T = TypeVar("T")

Rows = tuple[list[tuple], list[tuple]]
"""(attempt rows, verdict rows) as `_db.attempt_row` and `_db.verdict_row` make them."""

_NO_ROOM = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded", errno.EFBIG: "file size limit reached"}


class DamagedJournal(InputError):
    """A run's journal holds a line that fails its hash with whole lines after it: not a write
    cut by a kill. Nothing is folded in; the message names the file and the line."""


class RunInProgress(InputError):
    """Another process holds the run's journal: it is running (or resuming) that run now."""


def journal_dir(db_path: Path) -> Path:
    """The directory beside the results database holding its running runs' journals."""
    return db_path.with_name(db_path.name + ".journal")


def journal_path(db_path: Path, run_id: str) -> Path:
    """The journal of `run_id` (a run id that is not a plain file name is hashed)."""
    name = run_id if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,150}", run_id) else hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()
    return journal_dir(db_path) / f"{name}.jsonl"


class RunJournal:
    """One run's journal, held (locked) by this process until `close`."""

    def __init__(self, path: Path, run_id: str) -> None:
        self.path, self.run_id = path, run_id
        self._fd = _open_locked(path, run_id)

    def append(self, rows: Rows) -> None:
        """One line holding `rows`, on disk (fsync'd) when this returns."""
        text = json.dumps([[list(r) for r in rows[0]], [list(r) for r in rows[1]]], ensure_ascii=True, separators=(",", ":"))
        digest = hashlib.sha256(text.encode()).hexdigest()
        key = integrity_key()
        line = f"{digest} {sign(digest, key) if key else '-'} {text}\n".encode()
        self._io(lambda: _write_all(self._fd, line))

    def batches(self) -> list[Rows]:
        """Every whole line's rows, in order; a cut last line is dropped and cut off the file.
        DamagedJournal for a damaged line before whole ones, RunChanged for a line whose tag does
        not match with a key configured."""
        data = self._io(lambda: _read_all(self._fd))
        out, good_end = [], 0
        lines = data.split(b"\n")
        for number, raw in enumerate(lines, 1):
            if not raw:
                continue
            rows = self._parsed(raw, number)
            if rows is None:
                if number < len(lines) - 1 and any(lines[number:]):
                    raise DamagedJournal(f"{self.path}: line {number}: damaged (its hash does not match) with whole lines after it: nothing of the journal was read; restore it, or remove it and run again")
                break  # the write a kill cut short: never acknowledged, sent again by the resume
            out.append(rows)
            good_end += len(raw) + 1
        if good_end < len(data):
            self._io(lambda: (os.ftruncate(self._fd, good_end), os.fsync(self._fd)))
        return out

    def _parsed(self, raw: bytes, number: int) -> Rows | None:
        parts = raw.split(b" ", 2)
        if len(parts) != 3 or hashlib.sha256(parts[2]).hexdigest().encode() != parts[0]:
            return None
        key = integrity_key()
        if key is not None:
            try:
                check_tag(parts[0].decode(), None if parts[1] == b"-" else parts[1].decode(), key, f"{self.path}: line {number}")
            except CheckFailed as exc:
                raise RunChanged(f"{exc}: the journal of run {self.run_id} was edited or written without the key; it is not folded in") from None
        attempts, verdicts = json.loads(parts[2])
        return [tuple(r) for r in attempts], [tuple(r) for r in verdicts]

    def clear(self) -> None:
        """Empty the journal: everything in it is in the database."""
        self._io(lambda: (os.ftruncate(self._fd, 0), os.fsync(self._fd)))

    def remove(self) -> None:
        """Remove the journal of a run that ended (sealed), then let go of it."""
        try:
            self.path.unlink(missing_ok=True)
            self.path.parent.rmdir()  # the last running run's journal: no empty directory left
        except OSError:
            pass  # another run's journal is there (or it went already)
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # releases the lock
            self._fd = -1

    def _io(self, work):  # noqa: ANN001, ANN202
        try:
            return work()
        except OSError as exc:
            raise _os_failure(self.path, exc) from None


def _open_locked(path: Path, run_id: str) -> int:
    try:
        path.parent.mkdir(exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise _os_failure(path, exc) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RunInProgress(f"{path}: run {run_id} is being written by another kgeval process; wait for it to end (or stop it) before resuming it") from None
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _os_failure(path: Path, exc: OSError) -> Exception:
    if exc.errno in _NO_ROOM:
        return DiskFull(path, _NO_ROOM[exc.errno], first_line(exc))
    return InputError(f"{path}: cannot write the run's journal: {first_line(exc)}")


def journaled_keys(db_path: Path, run_id: str) -> set[tuple[str, int]]:
    """(question id, seed) of every attempt in the run's journal (whole lines): persisted, not yet
    in the database. Read without the lock, for a process that does not write the run."""
    try:
        data = journal_path(db_path, run_id).read_bytes()
    except FileNotFoundError:
        return set()
    keys = set()
    for raw in data.split(b"\n"):
        parts = raw.split(b" ", 2)
        if len(parts) == 3 and hashlib.sha256(parts[2]).hexdigest().encode() == parts[0]:
            keys |= {(r[2], r[3]) for r in json.loads(parts[2])[0]}
    return keys


class RunWriter:
    """Persists a running run's completed attempts: each group in the journal at once, then in
    the database every `flush_s` (see the module docstring). Holds the journal's lock until
    `finish` or `close`."""

    def __init__(self, db: ResultsDB, run_id: str, flush_s: float) -> None:
        self.db, self.run_id, self.flush_s = db, run_id, flush_s
        self.journal = RunJournal(journal_path(db.path, run_id), run_id)
        self._pending: list[Rows] = []
        """Groups in the journal, not yet in the database."""
        self._flushed_at = time.monotonic()

    def recover(self) -> int:
        """Move what the journal of a killed run holds into the database (attempts already there
        left out), then empty it; the attempts moved in."""
        batches = self.journal.batches()
        moved = 0
        if batches:
            with self.db.session():
                if self.db.status(self.run_id) == "running":  # an ended run took every line in before its seal
                    moved = self.db.append_attempt_rows(self.run_id, _joined(batches), skip_stored=True)
            self.journal.clear()
        return moved

    def record(self, rows: Rows) -> None:
        """Persist one group of completed attempts (in the journal, fsync'd), and move the
        journal into the database when `flush_s` has passed and the file is free."""
        self.journal.append(rows)
        self._pending.append(rows)
        self.tick()

    def tick(self) -> None:
        """Move the journal into the database if `flush_s` has passed and the file is free:
        called with each group, and while no attempt completes (a slow system's attempts are
        read within `flush_s` too)."""
        if self._pending and time.monotonic() - self._flushed_at >= self.flush_s:
            self.flush(wait_s=0.0)

    def flush(self, *, wait_s: float | None) -> bool:
        """Append every pending group in one transaction and empty the journal. With `wait_s`
        0, a busy file is left for the next flush (False); otherwise it is waited for as any
        command waits (DatabaseBusy after)."""
        self._flushed_at = time.monotonic()
        if not self._pending:
            return True
        try:
            with self.db.session(wait_s=wait_s):
                self.db.append_attempt_rows(self.run_id, _joined(self._pending))
        except DatabaseBusy:
            if wait_s == 0:
                return False
            raise
        self._pending.clear()
        self.journal.clear()
        return True

    def finish(self, end: Callable[[ResultsDB], T]) -> T:
        """Flush what is pending and call `end` (which seals the run) in one opening of the file;
        then remove the journal."""
        try:
            with self.db.session():
                self.flush(wait_s=None)
                ended = end(self.db)
        except DatabaseBusy as exc:
            raise DatabaseBusy(f"{exc}. Run {self.run_id} is not ended: every attempt is persisted in {self.journal.path}; `kgeval run --resume {self.run_id}` ends it") from None
        self.journal.remove()
        return ended

    def close(self) -> None:
        """After a failure: what is pending goes to the database if the file can be had, else it
        stays in the journal for `--resume`; the lock is let go."""
        try:
            self.flush(wait_s=None)
        except KgevalError:
            pass  # the journal holds it; the error in flight says what happened
        finally:
            self.journal.close()


def _joined(batches: list[Rows]) -> Rows:
    return [r for b in batches for r in b[0]], [r for b in batches for r in b[1]]
