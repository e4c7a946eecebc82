"""Configuration: every threshold and default in one place, each documented.

A YAML file given with `--config` overrides any of these; fields it does not name keep their
defaults. Unknown keys are an error, so a misspelt threshold cannot silently fall back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypeVar

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


COMMON_NAMESPACES: tuple[str, ...] = (
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "http://www.w3.org/2000/01/rdf-schema#",
    "http://www.w3.org/2002/07/owl#",
    "http://www.w3.org/2001/XMLSchema#",
    "http://www.w3.org/2004/02/skos/core#",
    "http://www.w3.org/2008/05/skos-xl#",
    "http://www.w3.org/ns/shacl#",
    "http://www.w3.org/XML/1998/namespace",
    "http://purl.org/dc/elements/1.1/",
    "http://purl.org/dc/terms/",
    "http://purl.org/vocab/vann/",
    "http://rdfs.org/ns/void#",
)
SHARED_NAMESPACES: tuple[str, ...] = (
    "http://schema.org/",
    "https://schema.org/",
    "http://xmlns.com/foaf/0.1/",
    "http://www.w3.org/ns/prov#",
    "http://www.w3.org/ns/dcat#",
    "http://www.w3.org/2006/time#",
    "http://www.w3.org/2003/01/geo/wgs84_pos#",
    "http://www.wikidata.org/",
    "http://dbpedia.org/",
    "http://qudt.org/",
)


class ContaminationConfig(_Strict):
    fields: tuple[str, ...] = ("prompt", "completion", "messages[].content")
    """Fields of a training record holding text to check: a dotted path, `[]` after a list
    (e.g. "messages[].content"). Every leaf must be a string; other fields are parsed, not read."""
    near_duplicate: float = Field(0.6, gt=0, le=1)
    """A passage whose content-word Jaccard similarity with a holdout question is at least this
    is a near-duplicate (calibrated: light paraphrases >= 0.6, unrelated CK25 questions < 0.5)."""
    min_question_words: int = Field(3, ge=2)
    """Questions with fewer content words than this are near-duplicates only of a passage with
    exactly their content words (Jaccard 1); with fewer than 2, exact (normalized) matches only.
    Jaccard on two-word sets is too coarse: "employees per department" is not a leak."""
    workers: int = Field(0, ge=0)
    """Worker processes; 0 means one per CPU core."""
    sample_mb: int = Field(2, ge=0)
    """The first MB of the first JSONL file are read once to choose, for each question, the
    anchor words rarest in this data (the prefilter stays exact: any choice is sound); 0: off."""
    chunk_mb: int = Field(32, ge=1)
    """Size of the unit of work (a byte range of a JSONL file); bounds memory per worker."""


class ExampleBankConfig(_Strict):
    max_similarity: float = Field(0.8, gt=0, le=1)
    """A retrieved example whose question is more similar than this (content-word Jaccard) to
    the question asked is dropped."""


class SchemaGateConfig(_Strict):
    """Thresholds of the schema-adjacency gate, read from `schema_gate/config.yaml`."""

    type_overlap_pct: float = Field(50.0, ge=0, le=100)
    """Refuse when the candidate shares at least this % of its classes ..."""
    relation_overlap_pct: float = Field(50.0, ge=0, le=100)
    """... AND at least this % of its predicates with one training KG (both ">=")."""
    jaccard_cap: float = Field(0.3, ge=0, le=1)
    """Refuse when the Jaccard similarity of the schema signatures exceeds this (">")."""
    timeout_s: float = Field(300.0, gt=0)
    """Timeout for each fingerprint query."""
    row_cap: int = Field(200_000, ge=1)
    """Most classes, predicates or domain/range pairs a fingerprint may hold; more is an error."""


class GuardsConfig(_Strict):
    common_namespaces: tuple[str, ...] = COMMON_NAMESPACES
    """Vocabulary every KG shares (rdf, rdfs, owl, xsd, skos, ...): left out of schema
    fingerprints comparisons and never distinctive of a holdout KG."""
    shared_namespaces: tuple[str, ...] = SHARED_NAMESPACES
    """Public vocabularies and KGs: compared by the schema gate, but an IRI in them does not
    identify a holdout KG, so the contamination check does not flag it."""
    contamination: ContaminationConfig = ContaminationConfig()
    example_bank: ExampleBankConfig = ExampleBankConfig()


class KgevalConfig(_Strict):
    store: StoreConfig = StoreConfig()
    gold: GoldConfig = GoldConfig()
    judges: JudgesConfig = JudgesConfig()
    run: RunConfig = RunConfig()
    guards: GuardsConfig = GuardsConfig()


def load_config(path: Path | None) -> KgevalConfig:
    """The defaults, overridden by the YAML file at `path` when one is given."""
    if path is None:
        return KgevalConfig()
    return _load_yaml_model(Path(path), KgevalConfig, "configuration")


def load_gate_config(path: Path) -> SchemaGateConfig:
    """The gate thresholds in `path` (schema_gate/config.yaml); the defaults when it is absent."""
    path = Path(path)
    if not path.exists():
        return SchemaGateConfig()
    return _load_yaml_model(path, SchemaGateConfig, "gate configuration")


M = TypeVar("M", bound=BaseModel)


def _load_yaml_model(path: Path, model: type[M], what: str) -> M:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return model.model_validate(data)
    except OSError as exc:
        raise InputError(f"{path}: cannot read {what}: {exc}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from None
    except ValidationError as exc:
        raise InputError(f"{path}: invalid {what}: {exc}") from None
