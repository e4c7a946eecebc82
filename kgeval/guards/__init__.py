"""Holdout guards: keep the holdout out of training data, the example bank and the schema space.

- schema-adjacency gate: `fingerprint_store`, `admit_kg` (a candidate holdout KG must not be
  near a training KG's schema);
- contamination check: `check_contamination`, `assert_clean` (holdout material in fine-tuning
  data);
- example-bank guards: `ExampleBank`, `BankGuards` (few-shot retrieval never serves the holdout).
"""

from kgeval.guards._contamination import (
    ContaminationError,
    FileSummary,
    Hit,
    Report,
    assert_clean,
    check_contamination,
)
from kgeval.guards._example_bank import BankGuards, Example, ExampleBank, ExampleRefused, GuardStatus
from kgeval.guards._fingerprint import (
    DomainRange,
    SchemaFingerprint,
    Signature,
    fingerprint_store,
    load_fingerprints,
    save_fingerprint,
)
from kgeval.guards._gate import GateScore, GateVerdict, admit_kg
from kgeval.guards._index import HoldoutIndex, Match, build_index
from kgeval.guards._text import canonical_sparql, normalize_question, question_similarity
from kgeval.guards._vocab import normalize_name

__all__ = [
    "BankGuards",
    "ContaminationError",
    "DomainRange",
    "Example",
    "ExampleBank",
    "ExampleRefused",
    "FileSummary",
    "GateScore",
    "GateVerdict",
    "GuardStatus",
    "HoldoutIndex",
    "Hit",
    "Match",
    "Report",
    "SchemaFingerprint",
    "Signature",
    "admit_kg",
    "assert_clean",
    "build_index",
    "canonical_sparql",
    "check_contamination",
    "fingerprint_store",
    "load_fingerprints",
    "normalize_name",
    "normalize_question",
    "question_similarity",
    "save_fingerprint",
]
