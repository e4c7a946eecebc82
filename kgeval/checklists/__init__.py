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
from concurrent.futures import ThreadPoolExecutor
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
    vocabulary_asked_ahead,
)
from kgeval.checklists._model import CaughtEntry, PreEvalChecklist, load_checklist
from kgeval.checklists._suites import suites_item
from kgeval.errors import InputError
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
    """Every item, in the checklist's order; nothing is sent to any system. The empty-gold item's
    questions to the KGs, which wait for the sandbox workers to load them, are asked first, in a
    thread, while the items before it run (`vocabulary_asked_ahead`)."""
    lines: list[ChecklistItem] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgeval-checklist-ahead") as pool:
        ahead = pool.submit(vocabulary_asked_ahead, plan) if "empty_gold" in checklist.items else None
        for name in checklist.items:
            if name == "caught":
                lines += caught_items(checklist.caught_entries, plan, db)
            elif name == "empty_gold" and ahead is not None:
                lines += empty_gold(checklist, plan, db, guards, ahead.result())
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


REJUDGE_ITEMS = ("holdout_manifest", "gold", "gold_failures", "empty_gold")
"""The items a re-judged run passes again: those about the holdout and the gold it is judged
against now. The others are about how the answers were produced (pipeline parity, guards, the
system's controls): the source's receipt holds them, and `source_checklist` says it passed."""


def rejudge_checklist(path: Path | None) -> Checklist:
    """The checklist of a re-judged run (`kgeval rejudge`): `REJUDGE_ITEMS` of the checklist at
    `path` (None: the shipped one), then `source_checklist`."""
    full = load_checklist(path or DEFAULT_CHECKLIST)
    checklist = full.model_copy(update={"items": tuple(i for i in full.items if i in REJUDGE_ITEMS)})

    def evaluate(plan: RunPlan, db: ResultsDB) -> Receipt:
        receipt = evaluate_checklist(checklist, plan, db)
        return receipt.model_copy(update={"items": [*receipt.items, source_checklist(plan, db)]})

    return evaluate


def source_checklist(plan: RunPlan, db: ResultsDB) -> ChecklistItem:
    """Whether the source of a re-judged run passed its own start checklist (a run in `db`); an
    export carries no receipt, which is said."""
    origin = plan.metadata.derived_from
    if origin is None or origin.source != "run":
        return ChecklistItem(item="source_checklist", observed="an export: its receipt is not part of it", passed=True, detail="the export's run passed its checklist where it ran")
    try:
        receipt = db.receipt(origin.source_run_id)
    except InputError:  # re-judged into another database (`kgeval compare --rejudge`'s scratch one)
        return ChecklistItem(item="source_checklist", observed=f"run {origin.source_run_id} is in another database", passed=True, detail="its receipt stays with it")
    if receipt is None:
        return ChecklistItem(item="source_checklist", observed=f"run {origin.source_run_id} has no start receipt", passed=True, detail="recorded before receipts, or imported")
    failed = [i.item for i in receipt.failures()]
    observed = f"run {origin.source_run_id}: {len(receipt.items) - len(failed)} of {len(receipt.items)} items passed"
    return ChecklistItem(item="source_checklist", observed=observed, passed=not failed, detail=f"failed: {', '.join(failed)}" if failed else "")


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
    "rejudge_checklist",
]
