"""Gold: the executed answer to every reference query, with integrity hashes.

Every reader goes through `read_gold` / `load_gold`, which verify the gold (HMAC tag when an
integrity key is configured, file hashes, result hashes) before returning anything.
"""

from kgeval.gold._build import Outcome, RebuildReport, build_entry, rebuild_gold
from kgeval.gold._reexecute import reexecution_differences
from kgeval.gold._model import GoldEntry, GoldFailure, GoldFlag, display_text
from kgeval.gold._store import (
    Gold,
    GoldManifest,
    GoldReader,
    GoldStatus,
    StoreIdentity,
    gold_manifest_sha256,
    gold_problems,
    gold_status,
    load_gold,
    read_gold,
    store_identity,
    verify_gold,
)
from kgeval.gold._ties import TieGroup, TieInfo

__all__ = [
    "Gold",
    "GoldEntry",
    "GoldFailure",
    "GoldFlag",
    "GoldManifest",
    "GoldReader",
    "GoldStatus",
    "Outcome",
    "RebuildReport",
    "StoreIdentity",
    "TieGroup",
    "TieInfo",
    "build_entry",
    "display_text",
    "gold_manifest_sha256",
    "gold_problems",
    "gold_status",
    "load_gold",
    "read_gold",
    "reexecution_differences",
    "rebuild_gold",
    "store_identity",
    "verify_gold",
]
