"""Configuration: every threshold and default in one place, each documented.

A YAML file given with `--config` overrides any of these; fields it does not name keep their
defaults. Unknown keys are an error, so a misspelt threshold cannot silently fall back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kgeval.errors import InputError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StoreConfig(_Strict):
    kind: Literal["embedded"] = "embedded"
    """Which graph store executes queries: "embedded" (pyoxigraph in process)."""


class GoldConfig(_Strict):
    row_cap: int = Field(2000, ge=1)
    """Rows of a reference result kept in the gold (the true total is always kept)."""
    timeout_s: float = Field(120.0, gt=0)
    """Timeout for one reference query during a gold rebuild."""
    display_items: int = Field(10, ge=1)
    """Items shown in a gold's display version ("first 10 ... (N total)")."""


class SeedJudgeConfig(_Strict):
    exact_below: int = Field(20, ge=1)
    """Gold sets with fewer items than this are judged by exact set match."""
    min_precision: float = Field(0.7, ge=0, le=1)
    """Membership path: share of the answer's items that must be in the full gold set."""
    min_items: int = Field(5, ge=1)
    """Membership path: the answer must list at least this many items."""


class JudgesConfig(_Strict):
    primary: str = "seed"
    """The pre-registered judge whose verdict counts for accuracy."""
    enabled: tuple[str, ...] = ("seed",)
    """Every judge run on each attempt; verdicts are stored side by side."""
    seed: SeedJudgeConfig = SeedJudgeConfig()


class RunConfig(_Strict):
    seeds: int = Field(3, ge=1)
    """Attempts per question (seeds 0..N-1)."""
    query_timeout_s: float = Field(30.0, gt=0)
    """Timeout for executing a candidate's SPARQL."""
    row_cap: int = Field(2000, ge=1)
    """Row cap for executing a candidate's SPARQL (the same as the gold's by default)."""


class AuditConfig(_Strict):
    default_accepts: int = Field(30, ge=1)
    """Accepted answers drawn by `kgeval audit sample` when `--accepts` is not given."""
    sample_seed: int = 0
    """Seed of the stratified audit sample (the same seed draws the same sample)."""


class ReviewConfig(_Strict):
    coverage_target: float = Field(0.2, ge=0, le=1)
    """Share of holdout questions whose reference SPARQL and gold a domain reviewer has
    approved at the current content hash; the report shows coverage against it."""


class KgevalConfig(_Strict):
    store: StoreConfig = StoreConfig()
    gold: GoldConfig = GoldConfig()
    judges: JudgesConfig = JudgesConfig()
    run: RunConfig = RunConfig()
    audit: AuditConfig = AuditConfig()
    review: ReviewConfig = ReviewConfig()


def load_config(path: Path | None) -> KgevalConfig:
    """The defaults, overridden by the YAML file at `path` when one is given."""
    if path is None:
        return KgevalConfig()
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        return KgevalConfig.model_validate(data)
    except OSError as exc:
        raise InputError(f"{path}: cannot read configuration: {exc}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from None
    except ValidationError as exc:
        raise InputError(f"{path}: invalid configuration: {exc}") from None
