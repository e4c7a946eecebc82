"""The results store (DuckDB): runs, their questions, attempts and verdicts.

Each attempt and its verdicts are written in one transaction as the attempt completes, so a
killed run loses at most the attempt in flight.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from kgeval.errors import InputError
from kgeval.judges import Verdict
from kgeval.runs._model import Attempt, RunMetadata, RunQuestion

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, status VARCHAR NOT NULL, metadata JSON NOT NULL);
CREATE TABLE IF NOT EXISTS run_questions (
    run_id VARCHAR, kg VARCHAR, question_id VARCHAR, question VARCHAR, domain VARCHAR,
    qtype VARCHAR, honeypot BOOLEAN, PRIMARY KEY (run_id, question_id));
CREATE TABLE IF NOT EXISTS attempts (
    run_id VARCHAR, kg VARCHAR, question_id VARCHAR, seed INTEGER, state VARCHAR,
    error_kind VARCHAR, error VARCHAR, sparql VARCHAR, answer JSON, stop_reason VARCHAR,
    latency_ms DOUBLE, result_total BIGINT, extra JSON, PRIMARY KEY (run_id, question_id, seed));
CREATE TABLE IF NOT EXISTS verdicts (
    run_id VARCHAR, question_id VARCHAR, seed INTEGER, judge VARCHAR, version VARCHAR,
    config_sha256 VARCHAR, correct BOOLEAN, path VARCHAR, matched INTEGER, unmatched INTEGER,
    missing INTEGER, gold_total BIGINT, reason VARCHAR, details JSON,
    PRIMARY KEY (run_id, question_id, seed, judge));
"""

_ATTEMPT_COLUMNS = list(Attempt.model_fields)
_VERDICT_COLUMNS = list(Verdict.model_fields)


class ResultsDB:
    """A DuckDB file holding any number of runs."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        """Other tables in the same file (audits, reviews) must be opened in the same mode."""
        if read_only and not self.path.exists():
            raise InputError(f"{self.path}: results database does not exist")
        try:
            self._con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.Error as exc:
            raise InputError(f"{self.path}: cannot open results database: {exc}") from None
        if not read_only:
            self._con.execute(_SCHEMA)

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> ResultsDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        self._con.execute("BEGIN TRANSACTION")
        try:
            yield self._con
        except BaseException:
            self._con.execute("ROLLBACK")
            raise
        self._con.execute("COMMIT")

    def create_run(self, metadata: RunMetadata, questions: list[RunQuestion]) -> None:
        with self._transaction() as con:
            con.execute("INSERT INTO runs VALUES (?, 'running', ?)", [metadata.run_id, metadata.model_dump_json()])
            con.executemany(
                "INSERT INTO run_questions VALUES (?, ?, ?, ?, ?, ?, ?)",
                [[metadata.run_id, q.kg, q.question_id, q.question, q.domain, q.qtype, q.honeypot] for q in questions],
            )

    def finish_run(self, metadata: RunMetadata) -> None:
        self._con.execute(
            "UPDATE runs SET status = 'finished', metadata = ? WHERE run_id = ?",
            [metadata.model_dump_json(), metadata.run_id],
        )

    def record_attempt(self, run_id: str, attempt: Attempt, verdicts: list[Verdict]) -> None:
        """Persist one attempt and its verdicts atomically."""
        a = attempt.model_dump(mode="json")
        a["answer"] = json.dumps(a["answer"]) if a["answer"] is not None else None
        a["extra"] = json.dumps(a["extra"])
        with self._transaction() as con:
            con.execute(
                f"INSERT INTO attempts VALUES (?, {', '.join('?' * len(_ATTEMPT_COLUMNS))})",
                [run_id, *(a[c] for c in _ATTEMPT_COLUMNS)],
            )
            for verdict in verdicts:
                v = verdict.model_dump(mode="json")
                v["details"] = json.dumps(v["details"])
                con.execute(
                    "INSERT INTO verdicts VALUES (?, ?, ?, " + ", ".join("?" * len(_VERDICT_COLUMNS)) + ")",
                    [run_id, attempt.question_id, attempt.seed, *(v[c] for c in _VERDICT_COLUMNS)],
                )

    def metadata(self, run_id: str) -> RunMetadata:
        row = self._con.execute("SELECT metadata FROM runs WHERE run_id = ?", [run_id]).fetchone()
        if row is None:
            known = [r[0] for r in self._con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
            raise InputError(f"{self.path}: no run {run_id!r}; runs here: {', '.join(known) or 'none'}")
        return RunMetadata.model_validate_json(row[0])

    def status(self, run_id: str) -> str:
        self.metadata(run_id)
        return self._con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]

    def questions(self, run_id: str) -> list[RunQuestion]:
        cur = self._con.execute(
            "SELECT kg, question_id, question, domain, qtype, honeypot FROM run_questions WHERE run_id = ? ORDER BY kg, question_id",
            [run_id],
        )
        names = [d[0] for d in cur.description]
        return [RunQuestion(**dict(zip(names, row))) for row in cur.fetchall()]

    def attempts(self, run_id: str) -> list[Attempt]:
        cur = self._con.execute(
            f"SELECT {', '.join(_ATTEMPT_COLUMNS)} FROM attempts WHERE run_id = ? ORDER BY kg, question_id, seed",
            [run_id],
        )
        out = []
        for row in cur.fetchall():
            data = dict(zip(_ATTEMPT_COLUMNS, row))
            data["answer"] = json.loads(data["answer"]) if data["answer"] is not None else None
            data["extra"] = json.loads(data["extra"]) if data["extra"] else {}
            out.append(Attempt(**data))
        return out

    def verdicts(self, run_id: str) -> list[tuple[str, int, Verdict]]:
        """(question id, seed, verdict) for every stored verdict of the run."""
        cur = self._con.execute(
            f"SELECT question_id, seed, {', '.join(_VERDICT_COLUMNS)} FROM verdicts WHERE run_id = ? ORDER BY question_id, seed, judge",
            [run_id],
        )
        out = []
        for row in cur.fetchall():
            data = dict(zip(_VERDICT_COLUMNS, row[2:]))
            data["details"] = json.loads(data["details"]) if data["details"] else {}
            out.append((row[0], row[1], Verdict(**data)))
        return out

    def done_keys(self, run_id: str) -> set[tuple[str, int]]:
        """(question id, seed) of every attempt already persisted."""
        rows = self._con.execute("SELECT question_id, seed FROM attempts WHERE run_id = ?", [run_id]).fetchall()
        return {(q, s) for q, s in rows}

    def run_ids(self) -> list[str]:
        """Every run in the database, oldest first."""
        rows = self._con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()
        return [r[0] for r in rows]
