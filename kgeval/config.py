"""Configuration: every threshold and default in one place, each documented.

A YAML file given with `--config` overrides any of these; fields it does not name keep their
defaults. Unknown keys are an error, so a misspelt threshold cannot silently fall back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

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
    concurrency: int = Field(8, ge=1)
    """Attempts in flight at once (threads); database writes stay on one thread."""
    rate_limit_per_s: float | None = Field(None, gt=0)
    """Calls to the system per second at most, across all threads (None: no limit)."""
    persist_within_s: float = Field(0.05, ge=0)
    """Longest a completed attempt waits to be written; attempts completing together share one
    transaction (each still atomic with its verdicts). Bounds what a kill can lose."""
    max_tries: int = Field(3, ge=1)
    """Tries per attempt when the call fails transiently (timeout, transport, 429); every try
    is recorded with the attempt."""
    retry_backoff_s: float = Field(1.0, ge=0)
    """Wait before the second try; doubled before each further one."""
    max_error_share: float = Field(0.10, ge=0, le=1)
    """When error attempts plus cut-off (incomplete) ones exceed this share of all attempts,
    the report publishes no accuracy, only a harness report naming the causes."""
    checklist: Path = Path("checklists/pre_eval.yaml")
    """The pre-eval checklist every run must pass before anything is sent to a system."""


class PipelineConfig(_Strict):
    """Pipeline features a system declares (or the production profile): defaults, and per-KG
    overrides. The pre-eval checklist compares a system's features with production's, KG by KG."""

    default: dict[str, Any] = Field(default_factory=dict)
    """Feature -> value for every KG (e.g. few_shot_retrieval: true, few_shot_k: 5)."""
    per_kg: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """KG id -> features overriding the defaults for that KG."""

    def for_kg(self, kg: str) -> dict[str, Any]:
        return {**self.default, **self.per_kg.get(kg, {})}


class HttpSystemConfig(_Strict):
    """The production endpoint: POST {"question", "kg", "seed"} -> {"sparql", "answer", "stop_reason"}."""

    url: str | None = None
    """Endpoint URL; required for `--system http`."""
    declared_version: str = "unknown"
    """The version of the system this configuration deploys, recorded with the run."""
    version_header: str = "X-System-Version"
    """Response header carrying the version actually served, recorded per attempt."""
    timeout_s: float = Field(60.0, gt=0)
    """Timeout for one call (connect + response)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra request headers (no secrets in files: use `token_env`)."""
    token_env: str | None = None
    """Environment variable holding a bearer token, when the endpoint needs one."""
    pipeline: PipelineConfig = PipelineConfig()
    """Pipeline features the deployed system declares; compared with the production profile."""


class GeminiSystemConfig(_Strict):
    """Gemini through google-genai: SPARQL from the question, the KG schema and retrieved examples."""

    model: str = "gemini-2.5-flash"
    api_key_env: str = "GEMINI_API_KEY"
    """Environment variable holding the API key."""
    base_url: str | None = None
    """Override the API base URL (a proxy, or a loopback server in tests)."""
    temperature: float = Field(0.0, ge=0)
    max_output_tokens: int = Field(4096, ge=1)
    """Output token limit; thinking tokens count against it on thinking models."""
    thinking_budget: int | None = 1024
    """Thinking tokens allowed (None: the model's default; 0: thinking off where allowed)."""
    include_thoughts: bool = False
    """Ask for thought summaries (they are recorded apart, never read as the answer)."""
    few_shot_k: int = Field(5, ge=0)
    """Examples retrieved from the example bank per question (0: no retrieval)."""
    examples: Path | None = None
    """JSONL example bank ({"kg", "question", "sparql"} per line) for the in-memory bank."""
    schema_classes: int = Field(40, ge=1)
    """Classes listed in the prompt's schema summary (most instances first)."""
    schema_predicates: int = Field(60, ge=1)
    """Predicates listed in the prompt's schema summary (most used first)."""
    timeout_s: float = Field(120.0, gt=0)


class SystemsConfig(_Strict):
    http: HttpSystemConfig = HttpSystemConfig()
    gemini: GeminiSystemConfig = GeminiSystemConfig()


class KgevalConfig(_Strict):
    store: StoreConfig = StoreConfig()
    gold: GoldConfig = GoldConfig()
    judges: JudgesConfig = JudgesConfig()
    run: RunConfig = RunConfig()
    systems: SystemsConfig = SystemsConfig()


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
