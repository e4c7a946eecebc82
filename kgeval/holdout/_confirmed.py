"""Empty answers confirmed on record: `holdout/CONFIRMED_EMPTY.yaml`, sealed with the rest.

An empty gold may be the right answer or the sign of a broken reference query (a misspelt IRI
finds nothing, and then any answer that finds nothing is "correct"). The pre-eval checklist
refuses a run until each empty gold is confirmed. Confirming one from the command line is a
decision someone takes and signs, as an exclusion is: who, when and why are kept in the sealed
holdout, bound to the reference query they looked at (a changed query needs a new
confirmation), every run records the confirmations it ran under, and every report shows them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from kgeval.holdout._exclusions import RecordFile, login_name

CONFIRMED_EMPTY_FILE = "CONFIRMED_EMPTY.yaml"


class EmptyConfirmation(BaseModel):
    """One question whose empty answer was confirmed as the expected one, on record."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question_id: str = Field(min_length=1)
    """The question whose reference query's empty result is its answer."""
    why: str = Field(min_length=1)
    """The reason given (e.g. "no employee is over 100: checked with HR, ticket 123")."""
    sparql_sha256: str = Field(min_length=64, max_length=64)
    """The reference query confirmed (`Question.sparql_sha256`): another query is not confirmed."""
    by: str = ""
    """Who confirmed it (the login name of the person who ran `kgeval holdout confirm-empty`)."""
    at: str = ""
    """When (ISO 8601, UTC)."""


CONFIRMED_EMPTY = RecordFile(
    CONFIRMED_EMPTY_FILE, "confirmed_empty", EmptyConfirmation, "confirmed-empty file", "confirmed twice",
    "# Empty answers confirmed as expected, with who, when, why and the reference query's hash. Written by `kgeval holdout confirm-empty`.\n",
)  # fmt: skip


def load_empty_confirmations(root: Path) -> dict[str, EmptyConfirmation]:
    """The confirmed empty answers of the holdout at `root`, by question id (empty without the file)."""
    return CONFIRMED_EMPTY.load(root)


def new_confirmation(question_id: str, why: str, sparql_sha256: str) -> EmptyConfirmation:
    return EmptyConfirmation(
        question_id=question_id, why=why, sparql_sha256=sparql_sha256, by=login_name(), at=datetime.now(UTC).isoformat(timespec="seconds")
    )
