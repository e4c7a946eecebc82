"""The replay system: recorded answers from a JSONL file, one object per attempt.

    {"kg": "hr", "question_id": "hr-01", "seed": 0, "sparql": "...", "answer": [...],
     "stop_reason": "stop"}

`sparql` and/or `answer`; `seed` defaults to 0. An attempt with no record is reported as a
missing answer, not scored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kgeval._files import sha256_file
from kgeval.errors import InputError
from kgeval.holdout import Question
from kgeval.systems._model import StopReason, SystemOutput


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore")
    kg: str
    question_id: str
    seed: int = 0
    sparql: str | None = None
    answer: list[Any] | None = None
    stop_reason: StopReason = "stop"


class ReplaySystem:
    """Serves recorded attempts by (kg, question id, seed)."""

    name = "replay"
    kind = "replay"
    pipeline = None
    reasoning: dict = {}

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.version = sha256_file(self.path)[:12]
        self._records: dict[tuple[str, str, int], _Record] = {}
        for lineno, record in _read_records(self.path):
            key = (record.kg, record.question_id, record.seed)
            if key in self._records:
                raise InputError(f"{self.path}:{lineno}: a second record for {key[0]}/{key[1]} seed {key[2]}")
            if record.sparql is None and record.answer is None:
                raise InputError(f"{self.path}:{lineno}: record has neither 'sparql' nor 'answer'")
            self._records[key] = record

    def respond(self, question: Question, seed: int) -> SystemOutput:
        record = self._records.get((question.kg, question.id, seed))
        if record is None:
            return SystemOutput(stop_reason="missing", error=f"no recorded answer in {self.path.name}", error_kind="missing")
        return SystemOutput(sparql=record.sparql, answer=record.answer, stop_reason=record.stop_reason)


def _read_records(path: Path):  # noqa: ANN202 - generator of (line number, record)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read replay file: {exc}") from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield lineno, _Record.model_validate(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{lineno}: not valid JSON: {exc.msg}") from None
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InputError(f"{path}:{lineno}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
