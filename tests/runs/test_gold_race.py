"""A `gold rebuild` that switches `gold/current` (here to another holdout's gold) at any point
of a `kgeval run` changes nothing the run is judged against: the run judges every attempt
against the gold version the checklist verified and recorded, and a rebuild's garbage
collection leaves that version in place while the run holds it.

Each point is reached by a hook on the run's own steps (no sleeps): after the plan resolved
the gold, inside the checklist's gold item, when the run is created (after the checklist), and
from the first attempt (while the run dispatches)."""

from __future__ import annotations

import json
import os
import threading
import traceback
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

import kgeval.checklists._items as checklist_items
import kgeval.runs._run as run_module
from kgeval.cli import app
from kgeval.config import GoldConfig
from kgeval.gold import rebuild_gold
from kgeval.gold._layout import version_dir, version_name
from kgeval.holdout import load_holdout
from kgeval.runs import ResultsDB
from kgeval.stores import EmbeddedStore
from tests.conftest import MINI_QUESTIONS, write_holdout


def _other_holdouts(root: Path) -> list[Path]:
    """Two holdouts with the same KG and question ids, other reference queries: golds whose
    answers differ from the run's (and from each other's)."""
    swaps = [("e:alice", "e:carol"), ("e:sales", "e:it")]
    return [
        write_holdout(root / f"other-{i}", [dict(q, sparql=q["sparql"].replace(*swaps[i]).replace(*swaps[0])) for q in MINI_QUESTIONS])
        for i in range(2)
    ]


class Switch:
    """Rebuilds the other holdouts' golds into the run's gold directory, once, when called:
    two new versions, so the run's is past `gold.keep_versions` (2) and would be collected."""

    def __init__(self, others: list[Path], gold_dir: Path) -> None:
        self.others, self.gold_dir, self.switched_to = [load_holdout(o) for o in others], gold_dir, None
        self._lock = threading.Lock()  # attempts start on several threads: one rebuild, the others wait for it

    def __call__(self) -> None:
        with self._lock:
            if self.switched_to is not None:
                return
            for other in self.others:
                report = rebuild_gold(other, lambda kg: EmbeddedStore(kg.files), GoldConfig(), self.gold_dir)
                assert report.ok, report.failures
            self.switched_to = version_dir(self.gold_dir)


def _after(target, name: str, switch: Switch, monkeypatch) -> None:  # noqa: ANN001
    original = getattr(target, name)

    def hooked(*args, **kwargs):  # noqa: ANN002, ANN003
        result = original(*args, **kwargs)
        switch()
        return result

    monkeypatch.setattr(target, name, hooked)


def _before(target, name: str, switch: Switch, monkeypatch) -> None:  # noqa: ANN001
    original = getattr(target, name)

    def hooked(*args, **kwargs):  # noqa: ANN002, ANN003
        switch()
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, hooked)


POINTS = {
    "planned": lambda s, mp: _after(run_module, "plan_run", s, mp),
    "checklist-gold-item": lambda s, mp: _after(checklist_items, "gold_problems", s, mp),
    "run-created": lambda s, mp: _after(ResultsDB, "create_run", s, mp),
    "dispatching": lambda s, mp: _before(run_module, "run_attempt", s, mp),
}


@pytest.mark.parametrize("point", list(POINTS))
def test_a_gold_switched_during_a_run_is_not_the_one_it_is_judged_against(mini_holdout, mini_gold, tmp_path, monkeypatch, point):
    held = version_dir(mini_gold)
    switch = Switch(_other_holdouts(tmp_path), mini_gold)
    POINTS[point](switch, monkeypatch)
    db = tmp_path / "r.duckdb"
    result = CliRunner().invoke(app, ["run", "--system", "oracle", "--seeds", "2", "--concurrency", "2",
                                      "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db)])
    shown = result.output + ("".join(traceback.format_exception(result.exception)) if result.exception and not isinstance(result.exception, SystemExit) else "")
    assert switch.switched_to is not None and switch.switched_to != held, f"the hook never switched the gold: {shown}"
    assert result.exit_code == 0, shown
    con = duckdb.connect(str(db), read_only=True)
    recorded = json.loads(con.execute("SELECT metadata FROM runs").fetchone()[0])
    verdicts = con.execute("SELECT correct FROM verdicts WHERE judge = 'execution'").fetchall()
    con.close()
    assert held.name == version_name(recorded["gold_manifest_sha256"]), "the run recorded another gold than the one it held"
    assert len(verdicts) == len(MINI_QUESTIONS) * 2
    assert all(correct for (correct,) in verdicts), "the oracle was judged against the switched gold"
    assert held.is_dir(), "the rebuild's garbage collection removed the version the run was judged against"


def test_a_held_version_is_collected_once_released(mini_holdout, mini_gold, tmp_path):
    """The hold ends with the run: a later rebuild collects the version as before."""
    from kgeval.gold import hold_version

    held = version_dir(mini_gold)
    switch = Switch(_other_holdouts(tmp_path), mini_gold)
    with hold_version(held):
        switch()
    assert held.is_dir()
    switch.switched_to = None
    switch()
    assert not held.exists() and os.path.isdir(switch.switched_to)
