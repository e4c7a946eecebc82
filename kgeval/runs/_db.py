"""The results store (DuckDB): runs, their questions, checklist receipts, attempts (each with
every try) and verdicts.

Each attempt, its tries and its verdicts are written in one transaction, so a killed run
loses at most the attempts in flight; `kgeval run --resume` sends exactly those again. A run
persists each group of attempts in its journal first (`_journal`) and moves them here every
`run.db_flush_s`, so that it holds the file only for that transaction.

One connection, used by one thread; opened through `connect_duckdb` (which waits while another
process holds the file). A `ResultsDB` holds its connection from its opening until `release`
(or `close`); released, each method opens the file for its own work and closes it again, and
`session` holds it across several calls: a running run holds the file only while it writes,
so every other command and a second run can open it meanwhile.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import duckdb
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python

from kgeval._duckdb import DamagedDatabase, connect_duckdb, store_failure
from kgeval._files import transaction, writing_to
from kgeval.errors import InputError, KgevalError, first_validation_error
from kgeval.integrity import integrity_key
from kgeval.judges import Verdict
from kgeval.runs._model import Attempt, ChecklistItem, Receipt, RunMetadata, RunQuestion, RunStatus
from kgeval.runs._seal import (
    SEALS_SCHEMA, check_progress, check_seal, check_start, next_progress_seq, progress_row, record_start, seal_run, sealed_verdicts_sha256,
)  # fmt: skip

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, status VARCHAR NOT NULL, metadata JSON NOT NULL);
CREATE TABLE IF NOT EXISTS run_questions (
    run_id VARCHAR, kg VARCHAR, question_id VARCHAR, question VARCHAR, domain VARCHAR,
    qtype VARCHAR, honeypot BOOLEAN, PRIMARY KEY (run_id, question_id));
CREATE TABLE IF NOT EXISTS attempts (
    run_id VARCHAR, kg VARCHAR, question_id VARCHAR, seed INTEGER, state VARCHAR,
    error_kind VARCHAR, error VARCHAR, sparql VARCHAR, answer JSON, stop_reason VARCHAR,
    latency_ms DOUBLE, result_total BIGINT, extra JSON, finish_reason VARCHAR,
    served_version VARCHAR, usage JSON, tries JSON, PRIMARY KEY (run_id, question_id, seed));
CREATE TABLE IF NOT EXISTS verdicts (
    run_id VARCHAR, question_id VARCHAR, seed INTEGER, judge VARCHAR, version VARCHAR,
    config_sha256 VARCHAR, correct BOOLEAN, path VARCHAR, matched INTEGER, unmatched INTEGER,
    missing INTEGER, gold_total BIGINT, reason VARCHAR, details JSON,
    PRIMARY KEY (run_id, question_id, seed, judge));
CREATE TABLE IF NOT EXISTS checklist_items (
    run_id VARCHAR, phase VARCHAR, position INTEGER, item VARCHAR, observed VARCHAR,
    passed BOOLEAN, detail VARCHAR, checklist_sha256 VARCHAR, PRIMARY KEY (run_id, phase, position));
""" + SEALS_SCHEMA

# Columns added after the first release: a database written by it gains them on open.
_MIGRATIONS = """
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS finish_reason VARCHAR;
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS served_version VARCHAR;
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS usage JSON;
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS tries JSON;
"""
_JSON_ATTEMPT_COLUMNS = ("answer", "extra", "usage", "tries")

_ATTEMPT_COLUMNS = list(Attempt.model_fields)
_VERDICT_COLUMNS = list(Verdict.model_fields)

# Columns of the rows a batch appends, in the tables' order (JSON columns travel as their text).
_ATTEMPTS_TABLE = ("run_id", *_ATTEMPT_COLUMNS)
_VERDICTS_TABLE = ("run_id", "question_id", "seed", *_VERDICT_COLUMNS)
_QUESTIONS_TABLE = ("run_id", "kg", "question_id", "question", "domain", "qtype", "honeypot")
_RUNS_TABLE = ("run_id", "status", "metadata")


def _append_rows(con: GuardedConnection, table: str, rows: list[tuple]) -> None:
    """Append rows (tuples in the table's column order: checked on open) with one statement of
    a DuckDB appender, each value converted once and cast to the column's type. A values
    relation did the same with Python work per value (~25% more CPU for a run's writes);
    through Arrow it cost more per statement, and pyarrow imports pandas (a second per process)
    on its first array; a multi-row INSERT with bound parameters costs milliseconds to bind."""
    if rows:
        con.append_values(table, rows)


def _check_column_order(con: GuardedConnection, path: Path) -> None:
    """Batches are appended by position: the tables must have their columns in this order
    (true of every database this code or its predecessor created)."""
    tables = (("runs", _RUNS_TABLE), ("attempts", _ATTEMPTS_TABLE), ("verdicts", _VERDICTS_TABLE), ("run_questions", _QUESTIONS_TABLE))
    for table, expected in tables:
        columns = [r[0] for r in con.execute(f"SELECT column_name FROM duckdb_columns() WHERE table_name = '{table}' ORDER BY column_index").fetchall()]
        if columns != list(expected):
            raise DamagedDatabase(f"{path}: table {table} has columns {columns}, expected {list(expected)}: not a kgeval results database?")


def json_text(value: object) -> str:
    """The JSON text a JSON column stores for `value` (plain data, or pydantic models as their
    JSON dump). pydantic-core's encoder: a quarter of `json.dumps`'s time on a run's rows (on
    the writer thread, holding the interpreter lock); compact, UTF-8 and shortest floats, the
    same values read back, NaN and infinities as `json.dumps` writes them. A text it cannot
    encode (a lone surrogate in a system's answer) is written by `json.dumps`, escaped."""
    try:
        return to_json(value, inf_nan_mode="constants").decode()
    except PydanticSerializationError:
        return json.dumps(to_jsonable_python(value, inf_nan_mode="constants"))


def _json_or_none(value: object) -> str | None:
    return None if value is None else json_text(value)


def attempt_row(run_id: str, attempt: Attempt) -> tuple:
    """The attempt as a plain row in `_ATTEMPTS_TABLE` order (JSON columns as text)."""
    a = attempt
    tries = json_text(a.tries) if a.tries else None
    usage = a.usage.model_dump_json() if a.usage is not None else None
    return (
        run_id, a.kg, a.question_id, a.seed, a.state, a.error_kind, a.error, a.sparql, _json_or_none(a.answer),
        a.stop_reason, a.latency_ms, a.result_total, json_text(a.extra), a.finish_reason, a.served_version, usage, tries,
    )  # fmt: skip


def verdict_row(run_id: str, question_id: str, seed: int, v: Verdict) -> tuple:
    """The verdict as a plain row in `_VERDICTS_TABLE` order."""
    return (
        run_id, question_id, seed, v.judge, v.version, v.config_sha256, v.correct, v.path, v.matched, v.unmatched,
        v.missing, v.gold_total, v.reason, json_text(v.details),
    )  # fmt: skip


def attempt_rows_of(run_id: str, results: list[tuple[Attempt, list[Verdict]]]) -> tuple[list[tuple], list[tuple]]:
    """(attempt rows, verdict rows) of completed attempts, as they are appended."""
    attempt_rows = [attempt_row(run_id, attempt) for attempt, _ in results]
    verdict_rows = [verdict_row(run_id, a.question_id, a.seed, v) for a, verdicts in results for v in verdicts]
    return attempt_rows, verdict_rows


def _remove_partial(files: list[tuple[Path, Path]], created_dir: Path | None) -> None:
    """Remove the temporary files of a failed export, and the directory it created if empty."""
    for tmp, _ in files:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
    if created_dir is not None:
        try:
            created_dir.rmdir()
        except OSError:
            pass


class GuardedConnection:
    """A DuckDB connection to a results file whose failures name the file and what is wrong
    (DamagedDatabase, exit 2) instead of a raw DuckDB traceback. A missing table
    (CatalogException) and a key conflict (ConstraintException) pass through: callers decide
    what those mean."""

    _PASS = (duckdb.CatalogException, duckdb.ConstraintException)

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path) -> None:
        self._con, self.path = con, path
        self._appenders: dict[str, object] = {}
        """One appender per table, kept across transactions: making one cost about as much
        interpreter-lock time as appending a batch of rows (a run appends to two tables every
        `persist_within_s`). Each flush appends in the transaction open at the time."""

    def _call(self, method: str, *args: object):  # noqa: ANN202
        try:
            return getattr(self._con, method)(*args)
        except self._PASS:
            raise
        except duckdb.Error as exc:
            raise store_failure(self.path, exc) from None

    def execute(self, query: str, parameters: object = None) -> GuardedConnection:
        self._call("execute", query, parameters or [])
        return self

    def executemany(self, query: str, parameters: list) -> GuardedConnection:
        self._call("executemany", query, parameters)
        return self

    def copy_to(self, query: str, parameters: list, target: Path, what: str) -> None:
        """A `COPY ... TO` writing `target`: an I/O error is the target's (InputError naming it),
        not a damaged database."""
        try:
            self._con.execute(query, parameters)
        except duckdb.IOException as exc:
            raise InputError(f"{target}: cannot write {what}: {str(exc).splitlines()[0]}") from None
        except self._PASS:
            raise
        except duckdb.Error as exc:
            raise store_failure(self.path, exc) from None

    def fetchone(self):  # noqa: ANN201
        return self._call("fetchone")

    def fetchall(self) -> list:
        return self._call("fetchall")

    def fetchmany(self, size: int) -> list:
        return self._call("fetchmany", size)

    @property
    def description(self):  # noqa: ANN201
        return self._con.description

    def append_values(self, table: str, rows: list[tuple]) -> None:
        try:
            if hasattr(self._con, "appender"):
                appender = self._appenders.get(table)
                if appender is None:
                    appender = self._appenders[table] = self._con.appender(table)
                try:
                    appender.append_rows(rows)  # type: ignore[attr-defined]
                    appender.flush()  # type: ignore[attr-defined] - one statement, inside the caller's transaction
                except BaseException:
                    self._drop_appenders()  # rows half-appended must never reach a later flush
                    raise
            else:  # a DuckDB without the appender API
                self._con.values(*rows).insert_into(table)
        except self._PASS:
            raise
        except duckdb.Error as exc:
            raise store_failure(self.path, exc) from None

    def _drop_appenders(self) -> None:
        appenders, self._appenders = list(self._appenders.values()), {}
        for appender in appenders:
            try:
                appender.clear()  # type: ignore[attr-defined] - rows not flushed are discarded
            except duckdb.Error:
                pass

    def close(self) -> None:
        self._drop_appenders()
        try:
            self._con.close()  # may checkpoint: a write that can find the disk full
        except duckdb.Error as exc:
            raise store_failure(self.path, exc) from None


KGEVAL_TABLES = ("runs", "gold_reviews", "audit_samples", "audit_records", "log_heads")
"""Tables only kgeval writes: a file holding none of them (and other tables) is another program's."""


def kgeval_tables(con: GuardedConnection) -> set[str]:
    """The kgeval tables the file holds; DamagedDatabase when it holds tables and none of them
    (a DuckDB database of another schema is never read as an empty results database)."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    ours = tables & set(KGEVAL_TABLES)
    if tables and not ours:
        shown = ", ".join(sorted(tables)[:5]) + (" ..." if len(tables) > 5 else "")
        raise DamagedDatabase(
            f"{con.path}: not a kgeval results database: it holds tables {shown} and none of kgeval's; nothing was "
            "changed: give --db a kgeval results file, or a new file"
        )
    return ours


def connect_results(path: Path, *, read_only: bool, wait_s: float | None = None) -> GuardedConnection:
    """The one place a results database file is opened (CLI, service, runs, audits, reviews):
    waits a bounded time for another process's lock (`connect_duckdb`), and errors name the
    file and say what is wrong."""
    return GuardedConnection(connect_duckdb(path, read_only=read_only, wait_s=wait_s), Path(path))


_SEALS_CHECKED: dict[tuple, None] = {}
"""(file, run, the file's state, the integrity key's hash) of ended runs found matching their seal in this process: the
service opens the file per request, and its run list would otherwise hash every run's rows
every time. Any write to the file (or its write-ahead log) changes its state: checked again."""
_SEALS_CHECKED_MAX = 4096


def _file_state(path: Path) -> tuple:
    """Size and modification time of the database file and of its write-ahead log."""
    states = []
    for file in (path, path.with_name(path.name + ".wal")):
        try:
            st = file.stat()
        except FileNotFoundError:
            states.append(None)
            continue
        states.append((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))  # ctime: no utime() sets it back
    return tuple(states)


def _remember_checked(state: tuple) -> None:
    """An ended run's rows match its seal in the file at `state` (`ResultsDB._seal_state`)."""
    _SEALS_CHECKED[state] = None
    while len(_SEALS_CHECKED) > _SEALS_CHECKED_MAX:
        del _SEALS_CHECKED[next(iter(_SEALS_CHECKED))]


_P = ParamSpec("_P")
_T = TypeVar("_T")


def _opened(method: Callable[Concatenate[ResultsDB, _P], _T]) -> Callable[Concatenate[ResultsDB, _P], _T]:
    """The method runs with the file open: a released ResultsDB opens it for the call only."""

    @functools.wraps(method)
    def call(self: ResultsDB, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        with self.session():
            return method(self, *args, **kwargs)

    return call


class ResultsDB:
    """A DuckDB file holding any number of runs."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        """Other tables in the same file (audits, reviews) must be opened in the same mode."""
        if read_only and not self.path.exists():
            raise InputError(f"{self.path}: results database does not exist")
        self._held: GuardedConnection | None = connect_results(self.path, read_only=read_only)
        """The open connection; None once released (`session` opens one for a while)."""
        self._sealed_ok: set[str] = set()
        """Ended runs whose rows this connection found matching their seal (`_checked`)."""
        self._running_ok: set[str] = set()
        """Running runs whose start and attempts this connection found as the run wrote them."""
        try:
            if "runs" not in kgeval_tables(self._con) and read_only:
                raise DamagedDatabase(f"{self.path}: not a kgeval results database (it has no runs table)")
            if not read_only:  # all or nothing: a file of another schema is left as it was
                with transaction(self._con) as con:
                    con.execute(_SCHEMA)
                    con.execute(_MIGRATIONS)
                    _check_column_order(con, self.path)
        except BaseException:
            self.close()
            raise

    @property
    def _con(self) -> GuardedConnection:
        """The connection; one reopened after `release` is held again (methods use `session`)."""
        if self._held is None:
            self._open(None)
        return self._held  # type: ignore[return-value]

    def _open(self, wait_s: float | None) -> None:
        self._held = connect_results(self.path, read_only=self.read_only, wait_s=wait_s)
        # what one connection checked stands for that connection only: another process may
        # have written the file since
        self._sealed_ok.clear()
        self._running_ok.clear()

    def release(self) -> None:
        """Close the connection, letting other processes open the file; the next method call
        opens it again for its own work only (`session`)."""
        held, self._held = self._held, None
        if held is not None:
            held.close()

    close = release

    @contextmanager
    def session(self, *, wait_s: float | None = None) -> Iterator[ResultsDB]:
        """The file open for the calls inside (already open: left so). Released afterwards;
        `wait_s` bounds the wait for another process's lock (DatabaseBusy after it)."""
        if self._held is not None:
            yield self
            return
        self._open(wait_s)
        try:
            yield self
        finally:
            self.release()

    def __enter__(self) -> ResultsDB:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
            return
        try:  # the error in flight says what happened: closing's own failure must not replace it
            self.close()
        except KgevalError:
            pass

    @_opened
    def create_run(
        self, metadata: RunMetadata, questions: list[RunQuestion], receipt: Receipt | None = None, *, status: RunStatus = "running"
    ) -> None:
        """The run, its questions and its checklist receipt, in one transaction. `execute_run`
        always passes the receipt; records imported from elsewhere have none."""
        with transaction(self._con) as con:
            con.execute("INSERT INTO runs VALUES (?, ?, ?)", [metadata.run_id, status, metadata.model_dump_json()])
            # appended, not bound: binding 352 rows' parameters cost 90 ms on the run's start
            _append_rows(con, "run_questions", [(metadata.run_id, q.kg, q.question_id, q.question, q.domain, q.qtype, q.honeypot) for q in questions])
            if receipt is not None:
                self._insert_receipt(con, metadata.run_id, "start", receipt)
            record_start(con, metadata)
            if status != "running":  # ended as it began (refused): sealed now
                seal_run(con, metadata.run_id)

    @_opened
    def record_receipt(self, run_id: str, phase: str, receipt: Receipt) -> None:
        """A later checklist receipt for the run (e.g. phase "resume-1")."""
        with transaction(self._con) as con:
            self._insert_receipt(con, run_id, phase, receipt)

    @staticmethod
    def _insert_receipt(con: GuardedConnection, run_id: str, phase: str, receipt: Receipt) -> None:
        if not receipt.items:
            return
        con.executemany(
            "INSERT INTO checklist_items VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [[run_id, phase, i, it.item, it.observed, it.passed, it.detail, receipt.checklist_sha256] for i, it in enumerate(receipt.items)],
        )

    @_opened
    def receipt(self, run_id: str, phase: str = "start") -> Receipt | None:
        self._checked(run_id)
        rows = self._con.execute(
            "SELECT item, observed, passed, detail, checklist_sha256 FROM checklist_items WHERE run_id = ? AND phase = ? ORDER BY position",
            [run_id, phase],
        ).fetchall()
        if not rows:
            return None
        items = [ChecklistItem(item=r[0], observed=r[1], passed=r[2], detail=r[3]) for r in rows]
        return Receipt(checklist_sha256=rows[0][4], items=items)

    @_opened
    def receipt_phases(self, run_id: str) -> list[str]:
        self._checked(run_id)
        rows = self._con.execute("SELECT DISTINCT phase FROM checklist_items WHERE run_id = ? ORDER BY phase", [run_id]).fetchall()
        return [r[0] for r in rows]

    @_opened
    def update_metadata(self, metadata: RunMetadata, status: RunStatus | None = None) -> None:
        """Replace the run's metadata (and status) in one statement: atomic."""
        if status is None:
            self._con.execute("UPDATE runs SET metadata = ? WHERE run_id = ?", [metadata.model_dump_json(), metadata.run_id])
        else:
            self._con.execute(
                "UPDATE runs SET status = ?, metadata = ? WHERE run_id = ?", [status, metadata.model_dump_json(), metadata.run_id]
            )

    @_opened
    def finish_run(self, metadata: RunMetadata) -> None:
        """Mark the run finished and seal its rows (`_seal`), in one transaction."""
        with transaction(self._con) as con:
            con.execute("UPDATE runs SET status = ?, metadata = ? WHERE run_id = ?", ["finished", metadata.model_dump_json(), metadata.run_id])
            seal_run(con, metadata.run_id)
        # sealed from this connection's rows, which no other process can change while it holds
        # the file: its state once checkpointed (closing then leaves it as it is) stands for a
        # check, so `kgeval run`'s headline, read right after, does not hash the run again
        self._con.execute("CHECKPOINT")
        self._sealed_ok.add(metadata.run_id)
        _remember_checked(self._seal_state(metadata.run_id))

    def record_attempt(self, run_id: str, attempt: Attempt, verdicts: list[Verdict]) -> None:
        """Persist one attempt, its tries and its verdicts atomically."""
        self.record_attempts(run_id, [(attempt, verdicts)])

    @_opened
    def record_attempts(self, run_id: str, results: list[tuple[Attempt, list[Verdict]]]) -> None:
        """Persist attempts (each with its tries and verdicts) in one transaction: all or none."""
        self.append_attempt_rows(run_id, attempt_rows_of(run_id, results))

    @_opened
    def append_attempt_rows(self, run_id: str, rows: tuple[list[tuple], list[tuple]], *, skip_stored: bool = False) -> int:
        """Append attempt and verdict rows (`attempt_rows_of`) with their `run_progress` record,
        in one transaction: all or none. `skip_stored`: leave out the attempts (and their
        verdicts) the run already holds, as a journal moved in after a kill may repeat them.
        Returns the attempts appended."""
        attempt_rows, verdict_rows = rows
        if skip_stored and attempt_rows:
            stored = set(self.done_keys(run_id))
            attempt_rows = [r for r in attempt_rows if (r[2], r[3]) not in stored]
            verdict_rows = [r for r in verdict_rows if (r[1], r[2]) not in stored]
        if not attempt_rows:
            return 0
        with transaction(self._con) as con:
            seq = next_progress_seq(con, run_id)
            _append_rows(con, "attempts", attempt_rows)
            _append_rows(con, "verdicts", verdict_rows)
            con.execute("INSERT INTO run_progress VALUES (?, ?, ?, ?, ?)", list(progress_row(run_id, seq, attempt_rows, verdict_rows)))
        return len(attempt_rows)

    @_opened
    def runs(self, *, system: str | None = None, status: RunStatus | None = "finished") -> list[RunMetadata]:
        """Runs in start order, optionally only one system's, only those with this status."""
        rows = self._con.execute("SELECT run_id, status, metadata FROM runs").fetchall()
        found = [self._parsed(r, m) for r, st, m in rows if status is None or st == status]
        found = [m for m in found if system is None or m.system == system]
        return sorted(found, key=lambda m: (m.started_at, m.run_id))

    @_opened
    def attempt_accuracy(self, run_id: str, judge: str, version: str) -> tuple[int, int]:
        """(attempts the judge found correct, all attempts of the run): errors count as not correct."""
        self._checked(run_id)
        correct = self._con.execute(
            "SELECT count(*) FROM verdicts WHERE run_id = ? AND judge = ? AND version = ? AND correct", [run_id, judge, version]
        ).fetchone()[0]
        total = self._con.execute("SELECT count(*) FROM attempts WHERE run_id = ?", [run_id]).fetchone()[0]
        return correct, total

    @_opened
    def metadata(self, run_id: str) -> RunMetadata:
        """The run's metadata, once its rows are checked against its seal (RunChanged if not)."""
        row = self._checked(run_id)
        return self._parsed(run_id, row[1])

    def _parsed(self, run_id: str, text: str) -> RunMetadata:
        try:
            return RunMetadata.model_validate_json(text)
        except ValidationError as exc:
            raise InputError(f"{self.path}: run {run_id}: invalid stored metadata: {first_validation_error(exc)}") from None

    @_opened
    def check_start(self, run_id: str) -> None:
        """RunChanged unless the run's start is on record as it is now, and its attempts as it
        wrote them (`_seal.check_start`, `_seal.check_progress`), checked now."""
        self._running_ok.discard(run_id)
        status, text = self._checked(run_id)  # a running run is checked there
        if status != "running":
            metadata = self._parsed(run_id, text)
            check_start(self._con, str(self.path), metadata)
            check_progress(self._con, str(self.path), metadata)

    @_opened
    def status(self, run_id: str) -> str:
        return self._checked(run_id)[0]

    def _checked(self, run_id: str) -> tuple[str, str]:
        """(status, metadata JSON) of the run; an ended run's rows are checked against its seal
        first, once per connection (every reader of a run's rows comes through here)."""
        row = self._con.execute("SELECT status, metadata FROM runs WHERE run_id = ?", [run_id]).fetchone()
        if row is None:
            known = [r[0] for r in self._con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
            raise InputError(f"{self.path}: no run {run_id!r}; runs here: {', '.join(known) or 'none'}")
        if run_id not in self._sealed_ok:
            state = self._seal_state(run_id)
            if state not in _SEALS_CHECKED:
                check_seal(self._con, str(self.path), run_id, row[0], self._parsed(run_id, row[1]).sealed_when_ended)
            if row[0] != "running":
                self._sealed_ok.add(run_id)
                _remember_checked(state)
        if row[0] == "running" and run_id not in self._running_ok:
            # no seal yet: its start and each write batch's record stand for it (a killed run's
            # verdicts flipped in the file were reported as they were, with a key configured too)
            metadata = self._parsed(run_id, row[1])
            check_start(self._con, str(self.path), metadata)
            check_progress(self._con, str(self.path), metadata)
            self._running_ok.add(run_id)
        return row

    def _seal_state(self, run_id: str) -> tuple:
        """What `_SEALS_CHECKED` knows an ended run's check by: the file, the run, the file's
        state now, the integrity key's hash (a check without the key does not stand for one with it)."""
        key = integrity_key()
        return str(self.path.resolve()), run_id, _file_state(self.path), key and hashlib.sha256(key).hexdigest()

    @_opened
    def questions(self, run_id: str) -> list[RunQuestion]:
        self._checked(run_id)
        cur = self._con.execute(
            "SELECT kg, question_id, question, domain, qtype, honeypot FROM run_questions WHERE run_id = ? ORDER BY kg, question_id",
            [run_id],
        )
        names = [d[0] for d in cur.description]
        return [RunQuestion(**dict(zip(names, row))) for row in cur.fetchall()]

    @_opened
    def attempts(self, run_id: str) -> list[Attempt]:
        self._checked(run_id)
        cur = self._con.execute(
            f"SELECT {', '.join(_ATTEMPT_COLUMNS)} FROM attempts WHERE run_id = ? ORDER BY kg, question_id, seed",
            [run_id],
        )
        out = []
        for row in cur.fetchall():
            data = dict(zip(_ATTEMPT_COLUMNS, row))
            for column in _JSON_ATTEMPT_COLUMNS:
                data[column] = json.loads(data[column]) if data[column] is not None else None
            data["extra"] = data["extra"] or {}
            data["tries"] = data["tries"] or []
            try:
                out.append(Attempt(**data))
            except ValidationError as exc:
                raise InputError(f"{self.path}: run {run_id}: attempt {data['question_id']} seed {data['seed']}: invalid stored value: {first_validation_error(exc)}") from None
        return out

    @_opened
    def verdicts(self, run_id: str) -> list[tuple[str, int, Verdict]]:
        """(question id, seed, verdict) for every stored verdict of the run."""
        self._checked(run_id)
        cur = self._con.execute(
            f"SELECT question_id, seed, {', '.join(_VERDICT_COLUMNS)} FROM verdicts WHERE run_id = ? ORDER BY question_id, seed, judge",
            [run_id],
        )
        out = []
        for row in cur.fetchall():
            data = dict(zip(_VERDICT_COLUMNS, row[2:]))
            try:
                data["details"] = json.loads(data["details"]) if data["details"] else {}
                out.append((row[0], row[1], Verdict(**data)))
            except (ValidationError, ValueError) as exc:
                why = first_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
                raise InputError(f"{self.path}: run {run_id}: verdict on {row[0]} seed {row[1]} ({data.get('judge')}): invalid stored value: {why}") from None
        return out

    @_opened
    def judge_configs(self, run_id: str) -> dict[str, str]:
        """Each judge of the run's verdicts -> the configuration hash they record (the first
        by hash, should a run hold several)."""
        self._checked(run_id)
        rows = self._con.execute("SELECT judge, min(config_sha256) FROM verdicts WHERE run_id = ? GROUP BY judge ORDER BY judge", [run_id]).fetchall()
        return {judge: sha for judge, sha in rows}

    @_opened
    def sealed_verdicts_sha256(self, run_id: str) -> str | None:
        """The hash over the run's verdicts its seal records (`_seal.verdicts_sha256`), once its
        rows are checked against the seal; None for a run not ended, or sealed before seals
        recorded it."""
        self._checked(run_id)
        return sealed_verdicts_sha256(self._con, run_id)

    @_opened
    def run_ids(self) -> list[str]:
        """Every run in the database, oldest first."""
        rows = self._con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()
        return [r[0] for r in rows]

    @_opened
    def served_versions(self, run_id: str) -> set[str]:
        """Every version the system reported serving in the run's attempts."""
        self._checked(run_id)
        rows = self._con.execute(
            "SELECT DISTINCT served_version FROM attempts WHERE run_id = ? AND served_version IS NOT NULL", [run_id]
        ).fetchall()
        return {r[0] for r in rows}

    @_opened
    def done_keys(self, run_id: str) -> set[tuple[str, int]]:
        """(question id, seed) of every attempt already persisted."""
        self._checked(run_id)
        rows = self._con.execute("SELECT question_id, seed FROM attempts WHERE run_id = ?", [run_id]).fetchall()
        return {(q, s) for q, s in rows}

    @_opened
    def export_parquet_file(self, run_id: str, path: Path) -> int:
        """The run as one Parquet file: a row per attempt (the attempts table's columns) with a
        `verdicts` column, the list of its verdicts (the verdicts table's columns, a struct each):
        what `pandas.read_parquet(path)` reads as the run. Written to a temporary name and
        renamed; returns the rows written."""
        self.metadata(run_id)
        what = "the Parquet export"
        tmp = path.with_name(f".{path.name}.tmp")
        target = str(tmp).replace("'", "''")
        query = (
            "COPY (SELECT a.*, (SELECT list(v ORDER BY v.judge) FROM verdicts v WHERE v.run_id = a.run_id AND v.question_id = a.question_id "
            f"AND v.seed = a.seed) AS verdicts FROM attempts a WHERE a.run_id = ? ORDER BY a.kg, a.question_id, a.seed) TO '{target}' (FORMAT parquet)"
        )
        with writing_to(path, what):
            try:
                self._con.copy_to(query, [run_id], path, what)
                os.replace(tmp, path)
            except BaseException:
                _remove_partial([(tmp, path)], None)
                raise
        return self._con.execute("SELECT count(*) FROM attempts WHERE run_id = ?", [run_id]).fetchone()[0]

    @_opened
    def export_parquet(self, run_id: str, out_dir: Path) -> dict[str, int]:
        """The run's attempts and verdicts as `attempts.parquet` and `verdicts.parquet` in
        `out_dir` (DuckDB COPY; JSON columns stay JSON text), both written to temporary names and
        renamed once both are written: a failure leaves neither (nor a directory it created).
        Returns rows written per file name; InputError naming `out_dir` when it cannot be written."""
        self.metadata(run_id)  # an unknown run is a clear error, not two empty files
        what = "the Parquet export (attempts.parquet, verdicts.parquet)"
        if out_dir.exists() and not out_dir.is_dir():
            raise InputError(f"{out_dir}: cannot write {what}: it is a file; --format parquet writes into a directory")
        created = not out_dir.exists()
        written, done = {}, []
        with writing_to(out_dir, what):
            out_dir.mkdir(parents=True, exist_ok=True)
            try:
                for table, order in (("attempts", "kg, question_id, seed"), ("verdicts", "question_id, seed, judge")):
                    tmp = out_dir / f".{table}.parquet.tmp"
                    done.append((tmp, out_dir / f"{table}.parquet"))
                    target = str(tmp).replace("'", "''")
                    self._con.copy_to(f"COPY (SELECT * FROM {table} WHERE run_id = ? ORDER BY {order}) TO '{target}' (FORMAT parquet)", [run_id], out_dir, what)
                    written[f"{table}.parquet"] = self._con.execute(f"SELECT count(*) FROM {table} WHERE run_id = ?", [run_id]).fetchone()[0]
                for tmp, final in done:
                    os.replace(tmp, final)
            except BaseException:
                _remove_partial(done, out_dir if created else None)
                raise
        return written
