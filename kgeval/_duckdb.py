"""Opening the results database (DuckDB): the one place every reader and writer connects.

DuckDB lets one process write a file at a time, and a writing process locks readers of other
processes out. kgeval's processes share one file (`kgeval serve` beside `kgeval report`,
`audit record`, ...), so each holds a connection only as long as it needs one, and a process
that finds the file locked tries again with a jittered, doubling backoff up to a bounded wait
(`KGEVAL_DB_WAIT_S`, default 10 s) before giving up with a `DatabaseBusy` error that names the
file and the process holding it.
"""

from __future__ import annotations

import os
import random
import re
import time
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
    deadline = time.monotonic() + (lock_wait_s() if wait_s is None else wait_s)
    pause = _FIRST_PAUSE_S
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            if _LOCKED not in str(exc):
                raise store_failure(path, exc) from None
            left = deadline - time.monotonic()
            if left <= 0:
                raise DatabaseBusy(_busy_message(path, str(exc), wait_s)) from None
        except duckdb.Error as exc:
            raise store_failure(path, exc) from None
        # jitter: processes that met the lock together do not retry in step
        time.sleep(min(left, pause * random.uniform(0.5, 1.0)))
        pause = min(pause * 2, _LONGEST_PAUSE_S)


def _busy_message(path: Path, error: str, wait_s: float | None) -> str:
    holder = re.search(r"held in (.+?) \(PID (\d+)\)", error)
    who = f"process {holder.group(2)} ({holder.group(1)})" if holder else "another process"
    waited = lock_wait_s() if wait_s is None else wait_s
    return (
        f"{path}: results database is locked by {who}; waited {waited:g} s. DuckDB lets one process "
        "write a file at a time: a running `kgeval run` holds it until the run ends. Try again "
        "then, or raise KGEVAL_DB_WAIT_S"
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
