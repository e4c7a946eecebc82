"""Questions excluded from evaluation on record: `holdout/EXCLUDED.yaml`, sealed with the rest.

A question whose reference query cannot be executed (it times out, the engine rejects it) has
no gold; a run refuses to start while such a question is in play. Excluding it is a decision
someone takes and signs: who, when and why are kept in the sealed holdout (the file is in its
manifest, so an edit made without resealing fails `holdout verify`), every run records the
exclusions it ran under, and every report shows them.
"""

from __future__ import annotations

import getpass
from datetime import UTC, datetime
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kgeval._files import read_yaml, write_atomic
from kgeval.errors import InputError, first_validation_error

EXCLUSIONS_FILE = "EXCLUDED.yaml"


class Exclusion(BaseModel):
    """One question excluded from evaluation, with the reason on record."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question_id: str = Field(min_length=1)
    """The excluded question."""
    why: str = Field(min_length=1)
    """The reason given (e.g. "reference query times out on the 1M-triple KG; ticket 123")."""
    by: str = ""
    """Who excluded it (the login name of the person who ran `kgeval holdout exclude`)."""
    at: str = ""
    """When (ISO 8601, UTC)."""


class _ExclusionsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    excluded: list[Exclusion] = Field(default_factory=list)


def load_exclusions(root: Path) -> dict[str, Exclusion]:
    """The exclusions of the holdout at `root`, by question id (empty without the file)."""
    path = Path(root) / EXCLUSIONS_FILE
    if not path.is_file():
        return {}
    raw = read_yaml(path, "exclusions file") or {}
    try:
        parsed = _ExclusionsFile.model_validate(raw)
    except ValidationError as exc:
        raise InputError(f"{path}: {first_validation_error(exc)}") from None
    seen: set[str] = set()
    for exclusion in parsed.excluded:
        if exclusion.question_id in seen:
            raise InputError(f"{path}: question {exclusion.question_id} is excluded twice: keep one entry (one reason on record)")
        seen.add(exclusion.question_id)
    return {e.question_id: e for e in parsed.excluded}


def write_exclusions(root: Path, exclusions: dict[str, Exclusion]) -> None:
    """Write EXCLUDED.yaml (sorted by question id); the caller reseals the holdout."""
    doc = {"excluded": [e.model_dump() for _, e in sorted(exclusions.items())]}
    header = "# Questions excluded from evaluation, with who, when and why. Written by `kgeval holdout exclude`.\n"
    write_atomic(Path(root) / EXCLUSIONS_FILE, header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))


def new_exclusion(question_id: str, why: str) -> Exclusion:
    return Exclusion(question_id=question_id, why=why, by=login_name(), at=datetime.now(UTC).isoformat(timespec="seconds"))


def login_name() -> str:
    """Who is deciding, for the record: the login name, or "" where there is none."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        return ""
