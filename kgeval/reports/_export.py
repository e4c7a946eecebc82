"""`kgeval export`: one JSON line per attempt with its verdicts; and reading such a file back,
checked, for `kgeval rejudge --from` (DESIGN invariant 15: an export with the holdout and gold
reproduces its verdicts).

Every line carries `line_sha256`, the hash of its own content. The first line also carries the
run's record (`run`): its metadata (configuration, judge versions, gold and holdout manifests),
the verdict hash its seal records (`verdicts_sha256`) and the hash over every line's hash
(`lines_sha256`). A line edited after the export no longer matches its own hash and is named;
lines removed, added, or edited with their hash made again no longer give `lines_sha256`; the
verdicts no longer give the seal's hash. Without an integrity key a determined editor can make
every hash again, as in the results database: the seal's verdict hash, published with the
number, is what an export is checked against.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from kgeval._files import sha256_json
from kgeval.errors import InputError, first_validation_error
from kgeval.judges import Verdict
from kgeval.runs import Attempt, ResultsDB, RunMetadata, verdict_digest, verdicts_sha256

_NOT_CONTENT = ("line_sha256", "run")
"""Keys of a line that its `line_sha256` does not cover."""


def line_sha256(record: dict) -> str:
    """The hash of an export line's content (its attempt, run id and verdicts)."""
    return sha256_json({k: v for k, v in record.items() if k not in _NOT_CONTENT})


def lines_sha256(hashes: list[tuple[str, int, str]]) -> str:
    """The hash over every line's (question id, seed, `line_sha256`), in that order."""
    return sha256_json(sorted(hashes))


def export_lines(db: ResultsDB, run_id: str) -> Iterator[str]:
    metadata = db.metadata(run_id)  # an unknown run is a clear error, not an empty export
    verdicts = defaultdict(list)
    for qid, seed, verdict in db.verdicts(run_id):
        verdicts[(qid, seed)].append(verdict.model_dump(mode="json"))
    records = []
    for attempt in db.attempts(run_id):
        record = attempt.model_dump(mode="json")
        record["run_id"] = run_id
        record["verdicts"] = verdicts.pop((attempt.question_id, attempt.seed), [])
        record["line_sha256"] = line_sha256(record)
        records.append(record)
    if records:
        hashes = [(r["question_id"], r["seed"], r["line_sha256"]) for r in records]
        seal = {"verdicts_sha256": db.sealed_verdicts_sha256(run_id), "lines_sha256": lines_sha256(hashes)}
        records[0]["run"] = {"metadata": metadata.model_dump(mode="json"), "seal": seal}
    for record in records:
        yield json.dumps(record, ensure_ascii=False, sort_keys=True)


@dataclass
class ExportedRun:
    """An export read back and checked (`read_export`)."""

    metadata: RunMetadata
    attempts: list[Attempt]
    verdicts: list[tuple[str, int, Verdict]]
    verdicts_sha256: str | None
    """The verdict hash the run's seal recorded, as the export states it."""


def read_export(path: Path) -> ExportedRun:
    """The run an export file holds; InputError naming the file and each line edited after the
    export, or what else is wrong (not an export, no run record, lines missing or added, the
    verdicts not those sealed)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the export: {exc}") from None
    records = [(n, _parsed(path, n, line)) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not records or "run" not in records[0][1]:
        raise InputError(f"{path}: not a kgeval export with its run record on the first line (written by `kgeval export RUN` of this version?): export the run again")
    edited = [f"{path}:{n}: attempt {r.get('question_id')} seed {r.get('seed')}" for n, r in records if r.get("line_sha256") != line_sha256(r)]
    if edited:
        raise InputError(
            f"{path}: {len(edited)} line(s) edited after the export (their content no longer gives their line_sha256), not re-judged as genuine: "
            + "; ".join(edited[:10]) + ("; ..." if len(edited) > 10 else "")
        )
    run = records[0][1]["run"]
    seal = run.get("seal") or {}
    if lines_sha256([(r["question_id"], r["seed"], r["line_sha256"]) for _, r in records]) != seal.get("lines_sha256"):
        raise InputError(f"{path}: its lines do not give the lines_sha256 its run record states: lines were removed, added, or edited with their hash made again")
    exported = _exported(path, run, records)
    stated = exported.verdicts_sha256
    given = verdicts_sha256([(q, s, v.judge, verdict_digest(q, s, v.model_dump(mode="json"))) for q, s, v in exported.verdicts])
    if stated is not None and given != stated:
        raise InputError(f"{path}: its verdicts do not give the verdict hash its run's seal recorded ({stated[:12]}): they were edited after the run ended")
    return exported


def _parsed(path: Path, n: int, line: str) -> dict:
    try:
        record = json.loads(line)
    except ValueError as exc:
        raise InputError(f"{path}:{n}: not JSON: {exc}") from None
    if not isinstance(record, dict):
        raise InputError(f"{path}:{n}: not an export line (a JSON object per attempt)")
    return record


def _exported(path: Path, run: dict, records: list[tuple[int, dict]]) -> ExportedRun:
    """The run record, attempts and verdicts of checked lines, as models."""
    try:
        metadata = RunMetadata.model_validate(run.get("metadata"))
    except ValidationError as exc:
        raise InputError(f"{path}:1: the run record does not read: {first_validation_error(exc)}") from None
    attempts, verdicts = [], []
    for n, record in records:
        try:
            attempts.append(Attempt.model_validate({k: v for k, v in record.items() if k in Attempt.model_fields}))
            verdicts += [(record["question_id"], record["seed"], Verdict.model_validate(v)) for v in record.get("verdicts", [])]
        except ValidationError as exc:
            raise InputError(f"{path}:{n}: attempt {record.get('question_id')} seed {record.get('seed')}: {first_validation_error(exc)}") from None
    return ExportedRun(metadata, attempts, verdicts, (run.get("seal") or {}).get("verdicts_sha256"))
