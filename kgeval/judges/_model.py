"""What a judge reads (a candidate answer) and what it writes (a verdict)."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, Field

from kgeval.holdout import Question
from kgeval.stores import QueryResult


class Candidate(BaseModel):
    """A system's answer as the judges see it."""

    items: list[Any] | None = None
    """The answer list the system gave (strings, numbers, booleans), when it gave one."""
    result: QueryResult | None = None
    """The full typed result of executing the system's SPARQL, when it gave SPARQL."""
    sparql_error: str | None = None
    """Why the system's SPARQL failed to parse or execute, when it did; `result` is then None.
    The execution judge answers `invalid_sparql`, never "empty"."""


class Verdict(BaseModel):
    """One judge's decision on one attempt, with the reasons it decided so."""

    judge: str
    """Judge name, e.g. "seed"."""
    version: str
    """Judge version: its logic version and its configuration hash; any change changes it."""
    config_sha256: str
    """sha256 of the judge's configuration."""
    correct: bool
    path: str
    """Which rule decided: "exact", "membership", "ask", "no_answer", ..."""
    matched: int = 0
    """Answer items found in the gold."""
    unmatched: int = 0
    """Answer items not found in the gold."""
    missing: int | None = None
    """Gold items the answer did not give (exact path), None where not computed."""
    gold_total: int = 0
    """True size of the gold (rows, or 1 for ASK)."""
    reason: str = ""
    """One sentence a reader can check: the thresholds and counts that decided."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Extra figures a judge reports: precision, recall, f1, strict_subset ("12 of 400"), ..."""


class Judge(Protocol):
    """A judge is a small object with one method; build it with `judge_from_config`."""

    name: str
    version: str
    config_sha256: str

    def judge(self, question: Question, gold: QueryResult, candidate: Candidate) -> Verdict: ...
