"""Holdout guards: keep the holdout out of training data, the example bank and the schema space.

- schema-adjacency gate: `fingerprint_store`, `admit_kg` (a candidate holdout KG must not be
  near a training KG's schema);
- contamination check: `check_contamination`, `assert_clean` (holdout material in fine-tuning
  data), its shard API for any engine (`plan_shards`, `ShardScanner`, `PartialReport`,
  `merge_reports`) and its Spark adapter (`check_dataframe`, `check_files_spark`; the `spark`
  extra);
- example-bank guards: `ExampleBank`, `BankGuards` (few-shot retrieval never serves the holdout).
"""

from kgeval.guards._contamination import (
    ContaminationError,
    FileSummary,
    Hit,
    PartialReport,
    Report,
    ScanProgress,
    ShardScanner,
    assert_clean,
    check_contamination,
    merge_reports,
    scan_shards,
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
from kgeval.guards._records import Shard, plan_shards
from kgeval.guards._spark import check_dataframe, check_files_spark, spark_session, with_file_positions
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
    "Hit",
    "HoldoutIndex",
    "Match",
    "PartialReport",
    "Report",
    "ScanProgress",
    "SchemaFingerprint",
    "Shard",
    "ShardScanner",
    "Signature",
    "admit_kg",
    "assert_clean",
    "build_index",
    "canonical_sparql",
    "check_contamination",
    "check_dataframe",
    "check_files_spark",
    "fingerprint_store",
    "load_fingerprints",
    "merge_reports",
    "normalize_name",
    "normalize_question",
    "plan_shards",
    "question_similarity",
    "save_fingerprint",
    "spark_session",
    "with_file_positions",
    "scan_shards",
]
