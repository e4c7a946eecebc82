"""Gold: the executed answer to every reference query, with integrity hashes."""

from kgeval.gold._build import RebuildReport, rebuild_gold
from kgeval.gold._model import GoldEntry, GoldFailure, display_text
from kgeval.gold._store import gold_problems, load_gold, verify_gold, write_gold

__all__ = [
    "GoldEntry",
    "GoldFailure",
    "RebuildReport",
    "display_text",
    "gold_problems",
    "load_gold",
    "rebuild_gold",
    "verify_gold",
    "write_gold",
]
