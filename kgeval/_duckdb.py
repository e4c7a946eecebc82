"""Opening the results database (DuckDB): the one place every reader and writer connects.

DuckDB lets one process write a file at a time, and a writing process locks readers of other
processes out. kgeval's processes share one file (`kgeval serve` beside `kgeval report`,
`audit record`, a running `kgeval run`, ...), so each holds a connection only as long as it
needs one (a run too: `kgeval/runs/_journal.py`), and a process that finds the file locked
tries again with a jittered, doubling backoff up to a bounded wait (`KGEVAL_DB_WAIT_S`, default
10 s) before giving up with a `DatabaseBusy` error that names the file and the process holding it.

Readers share the file with each other, so a stream of overlapping readers (the service's
pages, a loop of `report`s) could keep a writer out for good. A writer that waits says so in a
marker beside the file (`<db>.writer-waiting`, touched at each try, removed when it gets in or
gives up); a reader that sees a fresh marker lets the writer in first, for at most half its own
wait, then opens the file anyway.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
import weakref
from collections import Counter
from pathlib import Path

import duckdb

from kgeval._files import check_input_file
from kgeval.errors import DatabaseBusy, InputError, KgevalError

DEFAULT_WAIT_S = 10.0
"""How long a command waits for another process to release the file (`KGEVAL_DB_WAIT_S`)."""
_FIRST_PAUSE_S = 0.01
_LONGEST_PAUSE_S = 0.5
_LOCKED = "Could not set lock on file"


def lock_wait_s() -> float:
    """The configured wait for a locked file: `KGEVAL_DB_WAIT_S`, else DEFAULT_WAIT_S."""
    raw = os.environ.get("KGEVAL_DB_WAIT_S")
    if not raw:
        return DEFAULT_WAIT_S
    try:
        return max(0.0, float(raw))
    except ValueError:
        raise InputError(f"KGEVAL_DB_WAIT_S={raw!r}: expected a number of seconds") from None


def connect_duckdb(path: Path, *, read_only: bool = False, wait_s: float | None = None) -> duckdb.DuckDBPyConnection:
    """A connection to the DuckDB file at `path`; waits (up to `wait_s`, default `lock_wait_s()`)
    while another process holds the file's lock. DatabaseBusy when it is still held."""
    check_input_file(path, "results database")  # DuckDB would wait forever on a FIFO
    waited = lock_wait_s() if wait_s is None else wait_s
    start = time.monotonic()
    deadline, pause = start + waited, _FIRST_PAUSE_S
    marker = Path(path).with_name(Path(path).name + WRITER_WAITING)
    announced = False
    try:
        while True:
            if read_only and time.monotonic() < start + waited / 2 and not _open_here(path) and _fresh(marker):
                left = deadline - time.monotonic()  # a writer waits for the readers in: it goes first
            else:
                try:
                    return _tracked(duckdb.connect(str(path), read_only=read_only), path)
                except duckdb.IOException as exc:
                    if _LOCKED not in str(exc):
                        raise store_failure(path, exc) from None
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise DatabaseBusy(_busy_message(path, str(exc), wait_s)) from None
                    announced = (not read_only and _announce(marker)) or announced
                except duckdb.Error as exc:
                    raise store_failure(path, exc) from None
            # jitter: processes that met the lock together do not retry in step
            time.sleep(min(left, pause * random.uniform(0.5, 1.0)))
            pause = min(pause * 2, _LONGEST_PAUSE_S)
    finally:
        if announced:
            marker.unlink(missing_ok=True)


_OPEN: Counter[tuple[str, int]] = Counter()
"""Connections alive per (file, thread): a thread that holds the file already (the service opens
its tables within one request's connection, `report` its audit log within its results) does not
wait for a writer it keeps out itself. Another thread of the process does: it lets the writer in
as another process would."""
_OPEN_LOCK = threading.Lock()


def _tracked(con: duckdb.DuckDBPyConnection, path: Path) -> duckdb.DuckDBPyConnection:
    key = (os.path.realpath(path), threading.get_ident())
    with _OPEN_LOCK:
        _OPEN[key] += 1
    weakref.finalize(con, _untrack, key)  # a connection dropped (after its close) is counted out
    return con


def _untrack(key: tuple[str, int]) -> None:
    with _OPEN_LOCK:
        _OPEN[key] -= 1
        if _OPEN[key] <= 0:
            del _OPEN[key]


def _open_here(path: Path) -> bool:
    with _OPEN_LOCK:
        return _OPEN.get((os.path.realpath(path), threading.get_ident()), 0) > 0


WRITER_WAITING = ".writer-waiting"
"""Suffix of the marker a waiting writer keeps beside the database file."""
_FRESH_S = 2.0
"""A marker untouched for this long is a writer that died: readers no longer let it in first."""


def _announce(marker: Path) -> bool:
    """Touch the marker; False where it cannot be written (a read-only directory)."""
    try:
        marker.touch()
        return True
    except OSError:
        return False


def _fresh(marker: Path) -> bool:
    try:
        return time.time() - marker.stat().st_mtime < _FRESH_S
    except OSError:
        return False


def _busy_message(path: Path, error: str, wait_s: float | None) -> str:
    holder = re.search(r"held in (.+?) \(PID (\d+)\)", error)
    who = f"process {holder.group(2)} ({holder.group(1)})" if holder else "another process"
    waited = lock_wait_s() if wait_s is None else wait_s
    return (
        f"{path}: results database is locked by {who}; waited {waited:g} s. DuckDB lets one process "
        "write a file at a time, and each kgeval command holds it only while it reads or writes "
        "(a running `kgeval run` for a moment each `run.db_flush_s`): try again, or raise KGEVAL_DB_WAIT_S"
    )


class DamagedDatabase(InputError):
    """The results database file cannot be read or written as a database: truncated, overwritten,
    not a DuckDB file, or a DuckDB file of another schema. Never read as an empty one (DESIGN
    invariant 9)."""


class DiskFull(KgevalError):
    """A write found no room (no space left on the device, a quota, a file-size limit): what
    was committed before is intact (each transaction is all or nothing). Not a damaged
    database: restoring a backup would throw good data away."""

    def __init__(self, path: Path, room: str, cause: str, run_id: str | None = None) -> None:
        self.path, self.room, self.cause = path, room, cause
        todo = f"free space and `kgeval run --resume {run_id}`" if run_id else "free space and run the command again"
        super().__init__(f"{path}: {room}: nothing lost; {todo} ({cause})")

    def for_run(self, run_id: str) -> DiskFull:
        """The same failure, saying how to continue the run it stopped."""
        return DiskFull(self.path, self.room, self.cause, run_id)


_NO_ROOM = {
    "No space left on device": "no space left on device",
    "Disk quota exceeded": "disk quota exceeded",
    "File too large": "file size limit reached",
}
"""The OS's words (as DuckDB quotes them) for a write that found no room, and how kgeval says it."""
_NOT_DAMAGE = ("Permission denied", "No such file or directory", "Is a directory", "Read-only file system")


def first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def store_failure(path: Path, exc: BaseException) -> KgevalError:
    """The error for a failure of DuckDB on the results file at `path`, naming the file and
    what is wrong: no room to write (DiskFull: nothing lost), a file kgeval may not open
    (InputError), else a damaged file (DamagedDatabase)."""
    text = str(exc)
    room = next((said for words, said in _NO_ROOM.items() if words in text), None)
    if room is not None:
        return DiskFull(path, room, first_line(exc))
    if any(words in text for words in _NOT_DAMAGE):
        return InputError(f"{path}: cannot open results database: {first_line(exc)}")
    return DamagedDatabase(
        f"{path}: results database is damaged or not a DuckDB database ({first_line(exc)}); "
        "nothing was changed: restore it from a backup, or give --db a new file"
    )
