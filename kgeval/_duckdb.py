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

from kgeval.errors import DatabaseBusy, InputError

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
    deadline = time.monotonic() + (lock_wait_s() if wait_s is None else wait_s)
    pause = _FIRST_PAUSE_S
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            if _LOCKED not in str(exc):
                raise InputError(f"{path}: cannot open results database: {exc}") from None
            left = deadline - time.monotonic()
            if left <= 0:
                raise DatabaseBusy(_busy_message(path, str(exc), wait_s)) from None
        except duckdb.Error as exc:
            raise InputError(f"{path}: cannot open results database: {exc}") from None
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
