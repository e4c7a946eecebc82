"""The contamination endpoint's matcher: the guards' holdout index, the same one that
`kgeval contamination check` uses, so the service and the CLI find the same leaks."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from kgeval.config import KgevalConfig
from kgeval.holdout import Holdout

DEFAULT_GATE_DIR = Path("schema_gate")


class TextMatcher(Protocol):
    def match_text(self, text: str) -> list: ...


def matcher_for(holdout: Holdout, config: KgevalConfig, gate_dir: Path = DEFAULT_GATE_DIR) -> TextMatcher:
    """The guards' index over `holdout`, leaving out what the training fingerprints share."""
    from kgeval.guards import build_index, load_fingerprints

    return build_index(holdout, config.guards, load_fingerprints(gate_dir))
