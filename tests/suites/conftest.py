"""Fixtures of the test-suite tests: the sample holdout's hr KG as a holdout of its own, and
its suites built once for the module that asks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kgeval.config import KgevalConfig
from kgeval.cli._data import reference_store
from kgeval.cli._suite import build_holdout_suites
from kgeval.gold import rebuild_gold
from kgeval.holdout import load_holdout, seal_holdout

REPO = Path(__file__).resolve().parents[2]


def copy_kgs(root: Path, *kgs: str) -> Path:
    """A sealed holdout of some of the sample holdout's KGs."""
    for kg in kgs:
        shutil.copytree(REPO / "holdout" / kg, root / kg)
    seal_holdout(root)
    return root


def store_for(cfg: KgevalConfig):
    """The store the CLI runs a KG's reference queries on (sandboxed: `reference_store`)."""
    return lambda kg: reference_store(cfg, kg)


def build(holdout: Path, gold: Path, cfg: KgevalConfig | None = None, **kw):
    """The gold (when missing) and the suites of `holdout` into `gold`, as the CLI builds them."""
    cfg = cfg or KgevalConfig()
    loaded = load_holdout(holdout)
    if not (gold / "current").exists():
        assert rebuild_gold(loaded, store_for(cfg), cfg.gold, gold).ok
    return build_holdout_suites(loaded, cfg, gold, **kw)


@pytest.fixture(scope="module")
def hr_suites(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    """(holdout, gold, build report) of the sample hr KG with its suites."""
    root = tmp_path_factory.mktemp("hr")
    holdout = copy_kgs(root / "holdout", "hr")
    gold = root / "gold"
    return holdout, gold, build(holdout, gold)
