"""The pre-eval checklist: `kgeval run` sends nothing unless every item passes.

Items (the shipped default: `DEFAULT_CHECKLIST`, kgeval/checklists/defaults/pre_eval.yaml): the holdout manifest verifies; the gold verifies and was built
from this holdout; no reference query failed at rebuild unless its question is excluded on record; every empty gold is confirmed (`expect_empty: true` or a reviewer's approval); pipeline parity with the production profile; anti-cheat guards active;
apples-to-apples with the runs compared; and every automated check of the caught-failures table
(checklists/caught.yaml). The receipt is stored with the run.

Guards plug in through the `Guard` protocol (`status()`, as kgeval.guards reports it): pass
them to `pre_eval_checklist(path, guards=...)`; a system's own (its example bank, whose
`status()` lists the example-bank guards) are added.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kgeval.checklists._caught import CHECKS, caught_items
from kgeval.checklists._items import (
    Guard,
    apples_to_apples,
    empty_gold,
    gold,
    gold_failures,
    guard_states,
    guards_active,
    holdout_manifest,
    pipeline_parity,
)
from kgeval.checklists._model import CaughtEntry, PreEvalChecklist, load_checklist
from kgeval.checklists._suites import suites_item
from kgeval.runs import Checklist, ChecklistItem, Receipt, ResultsDB, RunPlan

DEFAULT_CHECKLIST = Path(__file__).parent / "defaults" / "pre_eval.yaml"
"""The pre-eval checklist shipped in the package (with its caught table beside it)."""

_ITEMS = {
    "holdout_manifest": holdout_manifest,
    "gold": gold,
    "gold_failures": gold_failures,
    "empty_gold": empty_gold,
    "pipeline_parity": pipeline_parity,
    "guards": guards_active,
    "apples_to_apples": apples_to_apples,
    "suites": suites_item,
}


def evaluate_checklist(checklist: PreEvalChecklist, plan: RunPlan, db: ResultsDB, guards: Sequence[Guard] = ()) -> Receipt:
    """Every item, in the checklist's order; nothing is sent to any system."""
    lines: list[ChecklistItem] = []
    for name in checklist.items:
        if name == "caught":
            lines += caught_items(checklist.caught_entries, plan, db)
        else:
            lines += _ITEMS[name](checklist, plan, db, guards)
    return Receipt(checklist_sha256=checklist.sha256, items=lines)


def pre_eval_checklist(path: Path | None, guards: Sequence[Guard] = ()) -> Checklist:
    """The checklist at `path` (None: the shipped DEFAULT_CHECKLIST) as the callable
    `execute_run` and `resume_run` take. The file is read now, so a missing or malformed
    checklist fails before anything else."""
    checklist = load_checklist(path or DEFAULT_CHECKLIST)

    def evaluate(plan: RunPlan, db: ResultsDB) -> Receipt:
        return evaluate_checklist(checklist, plan, db, guards)

    return evaluate


__all__ = [
    "CHECKS",
    "DEFAULT_CHECKLIST",
    "CaughtEntry",
    "Guard",
    "PreEvalChecklist",
    "evaluate_checklist",
    "guard_states",
    "load_checklist",
    "pre_eval_checklist",
]
