"""The mini holdout with its gold and an embedded store on its KG, built once per test module."""

from __future__ import annotations

import pytest

from kgeval.config import GoldConfig
from kgeval.gold import load_gold, rebuild_gold
from kgeval.holdout import load_holdout
from kgeval.stores import EmbeddedStore
from tests.conftest import write_holdout


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    """(holdout, gold entries, store of its first KG)."""
    root = tmp_path_factory.mktemp("systems")
    holdout = load_holdout(write_holdout(root / "holdout"))
    rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), root / "gold")
    return holdout, load_gold(root / "gold"), EmbeddedStore(holdout.kgs[0].files)
