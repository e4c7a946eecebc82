"""What a system under test returns for one attempt."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel

from kgeval.holdout import Question


class SystemOutput(BaseModel):
    """One attempt's raw output, as the system gave it."""

    sparql: str | None = None
    """The SPARQL the system generated, when it generated one."""
    answer: list[Any] | None = None
    """The answer items the system gave, when it gave a list."""
    stop_reason: str = "stop"
    """Why the system stopped ("stop", "length", "content_filter", ...)."""
    error: str | None = None
    """Set when the system failed to produce an answer; says what failed."""


class System(Protocol):
    """A system under test. `respond` must be deterministic for a given (question, seed)
    where the system allows it; seeds make sampling variance visible."""

    name: str
    version: str

    def respond(self, question: Question, seed: int) -> SystemOutput: ...
