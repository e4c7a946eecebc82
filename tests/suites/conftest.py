"""Fixtures of the test-suite tests: the sample holdout's hr KG as a holdout of its own, and
its suites built once for the module that asks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kgeval.config import KgevalConfig
from kgeval.gold import build_suites, rebuild_gold, suites_path
from kgeval.holdout import load_holdout, seal_holdout
from kgeval.judges import judges_from_config
from kgeval.runs import neighbour_store, suite_differs
from kgeval.stores import open_store

REPO = Path(__file__).resolve().parents[2]


def copy_kgs(root: Path, *kgs: str) -> Path:
    """A sealed holdout of some of the sample holdout's KGs."""
    for kg in kgs:
        shutil.copytree(REPO / "holdout" / kg, root / kg)
    seal_holdout(root)
    return root


def store_for(cfg: KgevalConfig):
    return lambda kg: open_store(cfg.store, kg.files, kg.id, graphs=kg.graphs, local_copy=False)


def build(holdout: Path, gold: Path, cfg: KgevalConfig | None = None, **kw):
    """The gold (when missing) and the suites of `holdout` into `gold`, as the CLI builds them."""
    cfg = cfg or KgevalConfig()
    loaded = load_holdout(holdout)
    if not (gold / "current").exists():
        assert rebuild_gold(loaded, store_for(cfg), cfg.gold, gold).ok
    differs = suite_differs(judges_from_config(cfg.judges)[cfg.judges.primary])
    return build_suites(loaded, store_for(cfg), neighbour_store(cfg), differs, cfg.suite, cfg.gold, suites_path(gold), **kw)


@pytest.fixture(scope="module")
def hr_suites(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    """(holdout, gold, build report) of the sample hr KG with its suites."""
    root = tmp_path_factory.mktemp("hr")
    holdout = copy_kgs(root / "holdout", "hr")
    gold = root / "gold"
    return holdout, gold, build(holdout, gold)
