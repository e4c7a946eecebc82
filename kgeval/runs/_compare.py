"""Whether two runs can be compared, and what differs between them (DESIGN invariant 7).

Blocking differences are the conditions of measurement: gold, holdout, question set, judges,
seeds, the store that executed the SPARQL. Two runs that differ there measured different
things; a comparison of their accuracies would be meaningless. The system side (model id,
declared and served versions, reasoning settings, pipeline) is what a comparison is about: it
is reported, never blocking.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from kgeval.runs._model import RunMetadata

BLOCKING_FIELDS = (
    "gold_manifest_sha256",
    "suite_manifest_sha256",
    "holdout_manifest_sha256",
    "question_set_sha256",
    "primary_judge",
    "judge_versions",
    "seeds",
    "store_engine",
)
"""Fields that must be equal for two runs to be comparable."""

REPORTED_FIELDS = ("system", "system_version", "served_versions", "reasoning", "pipeline", "config_sha256", "kgeval_version", "git_commit")
"""Fields that may differ (they are what is compared); every difference is listed."""


class Difference(BaseModel):
    """One field that differs between two runs."""

    field: str
    a: Any
    b: Any
    blocking: bool
    """True when this difference makes the runs not comparable."""

    def describe(self) -> str:
        return f"{self.field}: {_short(self.a)} vs {_short(self.b)}" + (" (not comparable)" if self.blocking else "")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def comparability(meta_a: RunMetadata, meta_b: RunMetadata) -> list[Difference]:
    """Every difference between two runs' metadata, blocking ones first."""
    diffs = [
        Difference(field=name, a=getattr(meta_a, name), b=getattr(meta_b, name), blocking=name in BLOCKING_FIELDS)
        for name in (*BLOCKING_FIELDS, *REPORTED_FIELDS)
        if getattr(meta_a, name) != getattr(meta_b, name)
    ]
    return sorted(diffs, key=lambda d: not d.blocking)


def blocking(differences: list[Difference]) -> list[Difference]:
    return [d for d in differences if d.blocking]
