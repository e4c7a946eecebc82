"""Gold: the executed answer to every reference query, with integrity hashes."""

from kgeval.gold._build import RebuildReport, build_entry, rebuild_gold
from kgeval.gold._model import GoldEntry, GoldFailure, GoldFlag, display_text
from kgeval.gold._store import GoldStatus, StoreIdentity, gold_problems, gold_status, load_gold, store_identity, verify_gold, write_gold
from kgeval.gold._ties import TieGroup, TieInfo

__all__ = [
    "GoldEntry",
    "GoldFailure",
    "GoldFlag",
    "GoldStatus",
    "RebuildReport",
    "StoreIdentity",
    "TieGroup",
    "TieInfo",
    "build_entry",
    "display_text",
    "gold_problems",
    "gold_status",
    "load_gold",
    "rebuild_gold",
    "store_identity",
    "verify_gold",
    "write_gold",
]
