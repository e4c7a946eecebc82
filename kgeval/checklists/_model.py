"""The pre-eval checklist file (checklists/pre_eval.yaml) and the caught-failures table
(checklists/caught.yaml), as typed configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kgeval._files import read_yaml, sha256_text
from kgeval.config import PipelineConfig
from kgeval.errors import InputError, first_validation_error

ItemName = Literal["holdout_manifest", "gold", "gold_failures", "empty_gold", "pipeline_parity", "guards", "apples_to_apples", "suites", "caught"]
CheckKind = Literal["oracle_accuracy", "weak_accuracy", "gold_engine_matches_store", "gold_row_cap_covers_run"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GuardsItem(_Strict):
    required: tuple[str, ...] = ("example-bank.ingest", "example-bank.retrieval-filter", "example-bank.similarity-cap")
    """Guards that must report active (by name)."""
    when_feature: str = "few_shot_retrieval"
    """Required for systems whose pipeline turns this feature on for any KG."""


class CompareItem(_Strict):
    systems: tuple[str, ...] = ()
    """The systems compared in the release decision: the latest finished run of each other one
    must be comparable with the run being started."""
    fields: tuple[str, ...] = ("gold_manifest_sha256", "judge_versions", "holdout_manifest_sha256", "seeds", "question_set_sha256")
    """RunMetadata fields that must be equal."""


class CaughtCheck(_Strict):
    kind: CheckKind
    min: float | None = None
    max: float | None = None
    required_for: tuple[str, ...] = ()
    """System kinds (control, replay, endpoint, model) for which the evidence must exist; for
    the others the check passes when there is no evidence yet."""


class CaughtEntry(_Strict):
    id: str
    caught: str
    """What went wrong, when it was caught, and how."""
    lesson: str
    check: CaughtCheck


REQUIRED_ITEMS: tuple[ItemName, ...] = ("holdout_manifest", "gold")
"""Items no checklist may leave out: every report states the run's holdout and gold manifest
hashes, which only these check. A checklist of `items: []` once ran (and reported under the sealed
manifest's hash) a holdout edited after it was sealed."""


class PreEvalChecklist(_Strict):
    items: tuple[ItemName, ...]
    """Items evaluated, in this order; REQUIRED_ITEMS among them."""
    production_profile: PipelineConfig
    """The pipeline features production ships, for every KG (pipeline parity)."""
    parity_exempt: tuple[str, ...] = ()
    """Systems with no pipeline to compare (controls, recorded answers), by name."""
    guards: GuardsItem = GuardsItem()
    compare: CompareItem = CompareItem()
    caught_file: str = Field("caught.yaml", alias="caught")
    """The caught-failures table, relative to this file."""
    caught_entries: tuple[CaughtEntry, ...] = ()
    sha256: str = ""
    """sha256 of this file and the caught table, as read."""

    @field_validator("items")
    @classmethod
    def _required_items(cls, items: tuple[ItemName, ...]) -> tuple[ItemName, ...]:
        missing = [name for name in REQUIRED_ITEMS if name not in items]
        if missing:
            raise ValueError(f"leaves out {', '.join(missing)}: every run checks its sealed holdout and its gold ({', '.join(REQUIRED_ITEMS)} are required)")
        return items


def _read_yaml(path: Path) -> Any:
    return read_yaml(path, "checklist file", "set run.checklist in the configuration")


def load_checklist(path: Path) -> PreEvalChecklist:
    """pre_eval.yaml and the caught table it names, validated; errors name the file and field."""
    path = Path(path)
    raw = _read_yaml(path)
    if not isinstance(raw, dict):
        raise InputError(f"{path}: a checklist is a mapping with 'items' and 'production_profile'")
    caught_path = path.parent / str(raw.get("caught", "caught.yaml"))
    caught_raw = _read_yaml(caught_path)
    if not isinstance(caught_raw, dict) or not isinstance(caught_raw.get("entries"), list):
        raise InputError(f"{caught_path}: the caught table is a mapping with a list of 'entries'")
    entries = []
    for i, entry in enumerate(caught_raw["entries"], 1):
        try:
            entries.append(CaughtEntry.model_validate(entry))
        except ValidationError as exc:
            raise InputError(f"{caught_path}: entry {i}: {first_validation_error(exc)}") from None
    digest = sha256_text(path.read_text(encoding="utf-8") + "\0" + caught_path.read_text(encoding="utf-8"))
    try:
        return PreEvalChecklist.model_validate({**raw, "caught_entries": entries, "sha256": digest})
    except ValidationError as exc:
        raise InputError(f"{path}: {first_validation_error(exc)}") from None
