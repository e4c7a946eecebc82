"""Questions excluded from evaluation on record: `holdout/EXCLUDED.yaml`, sealed with the rest.

A question whose reference query cannot be executed (it times out, the engine rejects it) has
no gold; a run refuses to start while such a question is in play. Excluding it is a decision
someone takes and signs: who, when and why are kept in the sealed holdout (the file is in its
manifest, so an edit made without resealing fails `holdout verify`), every run records the
exclusions it ran under, and every report shows them.
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Generic, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from kgeval._files import parse_yaml_bytes, present, sha256_bytes, write_atomic
from kgeval.errors import CheckFailed, InputError, first_validation_error
from kgeval.holdout._manifest import MANIFEST, sealed_manifest

EXCLUSIONS_FILE = "EXCLUDED.yaml"
R = TypeVar("R", bound=BaseModel)


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


@dataclass(frozen=True)
class RecordFile(Generic[R]):
    """A sealed YAML file of decisions on record, one per question (EXCLUDED.yaml,
    CONFIRMED_EMPTY.yaml): a top-level list under `key` of `model` records."""

    name: str
    key: str
    model: type[R]
    what: str
    """What the file is, in messages ("exclusions file")."""
    twice: str
    """What a question listed twice is, in messages ("excluded twice")."""
    header: str
    """The comment line the file starts with."""

    def load(self, root: Path) -> dict[str, R]:
        """The records of the holdout at `root`, by question id (empty without the file)."""
        path = Path(root) / self.name
        data = self._sealed_bytes(path)
        if data is None:
            return {}
        raw = parse_yaml_bytes(data, path, self.what) or {}
        shape = create_model(f"_{self.key}", __config__=ConfigDict(extra="forbid"), **{self.key: (list[self.model], Field(default_factory=list))})
        try:
            records = getattr(shape.model_validate(raw), self.key)
        except ValidationError as exc:
            raise InputError(f"{path}: {first_validation_error(exc)}") from None
        found: dict[str, R] = {}
        for record in records:
            if record.question_id in found:
                raise InputError(f"{path}: question {record.question_id} is {self.twice}: keep one entry (one reason on record)")
            found[record.question_id] = record
        return found

    def _sealed_bytes(self, path: Path) -> bytes | None:
        """The file's bytes, checked against the holdout's manifest when it is sealed; None when
        the file is legitimately absent (never written, and no manifest lists it). A file the
        manifest lists that is gone, is not a file, cannot be read, or whose bytes differ (cut,
        zeroed, a byte changed, edited by hand) is named: never read as no decisions."""
        manifest = sealed_manifest(path.parent)
        sealed = manifest["files"].get(self.name) if manifest is not None else None
        if not present(path):
            if sealed is not None:
                raise CheckFailed(f"{path}: missing, but {MANIFEST} lists it (deleted?); {self.restore(path)}")
            return None
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CheckFailed(f"{path}: {self.what} is damaged or unreadable ({exc.strerror or exc}); {self.restore(path)}") from None
        if manifest is not None and sha256_bytes(data) != sealed:
            said = "not in" if sealed is None else "sha256 differs from"
            raise CheckFailed(
                f"{path}: {said} {MANIFEST}: damaged, or edited by hand since the holdout was sealed (decisions on record change "
                f"only through their commands, which reseal); {self.restore(path)}"
            )
        return data

    def restore(self, path: Path) -> str:
        return f"restore it from a backup (e.g. `git checkout -- {path}`), then run `kgeval holdout verify`"

    def write(self, root: Path, records: dict[str, R]) -> None:
        """Write the file (sorted by question id); the caller reseals the holdout."""
        doc = {self.key: [r.model_dump() for _, r in sorted(records.items())]}
        write_atomic(Path(root) / self.name, self.header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))


EXCLUSIONS = RecordFile(
    EXCLUSIONS_FILE, "excluded", Exclusion, "exclusions file", "excluded twice",
    "# Questions excluded from evaluation, with who, when and why. Written by `kgeval holdout exclude`.\n",
)  # fmt: skip


def load_exclusions(root: Path) -> dict[str, Exclusion]:
    """The exclusions of the holdout at `root`, by question id (empty without the file)."""
    return EXCLUSIONS.load(root)


def new_exclusion(question_id: str, why: str) -> Exclusion:
    return Exclusion(question_id=question_id, why=why, by=login_name(), at=datetime.now(UTC).isoformat(timespec="seconds"))


def login_name() -> str:
    """Who is deciding, for the record: the login name, or "" where there is none."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        return ""
