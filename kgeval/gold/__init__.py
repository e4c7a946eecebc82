"""Gold: the executed answer to every reference query, with integrity hashes.

Every reader goes through `read_gold` / `load_gold`, which verify the gold (HMAC tag when an
integrity key is configured, file hashes, result hashes) before returning anything, or through
`index_gold`, which verifies the same in one streamed pass and reads each entry when it is asked
for (a run: `GoldLoans` holds the entries of the questions in flight, not the holdout).
"""

from kgeval.gold._build import Outcome, RebuildReport, build_entry, rebuild_gold
from kgeval.gold._reexecute import reexecution_differences
from kgeval.gold._seal import seal_gold
from kgeval.gold._index import EntrySummary
from kgeval.gold._layout import VersionHold, hold_version, version_dir, version_name
from kgeval.gold._model import GoldEntry, GoldFailure, GoldFlag, display_text
from kgeval.gold._store import (
    Gold,
    GoldIndex,
    GoldLoans,
    GoldManifest,
    GoldReader,
    GoldStatus,
    StoreIdentity,
    gold_manifest_sha256,
    gold_problems,
    gold_status,
    index_gold,
    load_gold,
    read_gold,
    store_identity,
    verify_gold,
)
from kgeval.gold._suite import (
    KgSuites,
    MutantRecord,
    QuestionSuite,
    SuiteReport,
    Suites,
    build_suites,
    has_suites,
    read_suites,
    suites_path,
)
from kgeval.gold._ties import TieGroup, TieInfo

__all__ = [
    "EntrySummary",
    "Gold",
    "GoldEntry",
    "GoldFailure",
    "GoldFlag",
    "GoldIndex",
    "GoldLoans",
    "GoldManifest",
    "GoldReader",
    "GoldStatus",
    "KgSuites",
    "MutantRecord",
    "QuestionSuite",
    "SuiteReport",
    "Suites",
    "Outcome",
    "RebuildReport",
    "StoreIdentity",
    "TieGroup",
    "TieInfo",
    "VersionHold",
    "build_entry",
    "build_suites",
    "has_suites",
    "read_suites",
    "suites_path",
    "display_text",
    "gold_manifest_sha256",
    "gold_problems",
    "gold_status",
    "hold_version",
    "index_gold",
    "load_gold",
    "read_gold",
    "reexecution_differences",
    "rebuild_gold",
    "seal_gold",
    "store_identity",
    "verify_gold",
    "version_dir",
    "version_name",
]
