"""Automated checks for the harness failures in checklists/caught.yaml; each entry's check
runs as part of the pre-eval checklist, so a failure caught once is caught before every run."""

from __future__ import annotations

from collections.abc import Callable

from kgeval.checklists._items import GOLD_UNREADABLE
from kgeval.checklists._model import CaughtEntry
from kgeval.errors import KgevalError
from kgeval.gold import GoldReader
from kgeval.runs import ChecklistItem, ResultsDB, RunChanged, RunMetadata, RunPlan

Check = Callable[[CaughtEntry, RunPlan, ResultsDB], tuple[bool, str]]


def _same_conditions(a: RunMetadata, b: RunMetadata) -> bool:
    return (a.gold_manifest_sha256, a.holdout_manifest_sha256, a.judge_versions) == (
        b.gold_manifest_sha256,
        b.holdout_manifest_sha256,
        b.judge_versions,
    )


def _control_accuracy(control: str) -> Check:
    def check(entry: CaughtEntry, plan: RunPlan, db: ResultsDB) -> tuple[bool, str]:
        if plan.system.name == control:
            return True, f"this run is the {control} control: it produces the evidence this check reads"
        runs = [m for m in db.runs(system=control) if _same_conditions(m, plan.metadata)]
        if not runs:
            required = plan.system.kind in entry.check.required_for
            why = f"no finished {control} run on this gold, holdout and judges"
            return (not required), why + (f": run `kgeval run --system {control}` first" if required else " yet")
        last = runs[-1]
        try:
            correct, total = db.attempt_accuracy(last.run_id, last.primary_judge, last.judge_versions[last.primary_judge])
        except RunChanged as exc:  # evidence that changed after it was sealed is no evidence
            return False, f"{control} run {last.run_id} cannot be read: {exc}"
        share = correct / total if total else 0.0
        low, high = entry.check.min, entry.check.max
        ok = (low is None or share >= low) and (high is None or share <= high)
        bound = f">= {low:.0%}" if low is not None else f"<= {high:.0%}"
        return ok, f"{control} run {last.run_id}: {share:.1%} of attempts correct ({correct}/{total}); must be {bound}"

    return check


def _gold_manifest(plan: RunPlan) -> dict:
    try:
        return GoldReader(plan.gold_dir).manifest.model_dump(mode="json")
    except KgevalError as exc:
        return {"error": str(exc)}


def _gold_engine(entry: CaughtEntry, plan: RunPlan, db: ResultsDB) -> tuple[bool, str]:
    manifest = _gold_manifest(plan)
    if "error" in manifest:
        return False, GOLD_UNREADABLE
    engines = sorted(f"{e.get('name')} {e.get('version')}" for e in manifest.get("engines", []))
    if not engines:
        return False, f"gold manifest names no engine ({manifest.get('error', 'no engines field')})"
    ok = engines == [plan.metadata.store_engine]
    return ok, f"gold built on {', '.join(engines)}; this run executes on {plan.metadata.store_engine}"


def _gold_row_cap(entry: CaughtEntry, plan: RunPlan, db: ResultsDB) -> tuple[bool, str]:
    manifest = _gold_manifest(plan)
    if "error" in manifest:
        return False, GOLD_UNREADABLE
    cap = manifest.get("row_cap")
    run_cap = plan.config.run.row_cap
    return cap == run_cap, f"gold keeps {cap} rows per question; candidates are executed with a cap of {run_cap}"


CHECKS: dict[str, Check] = {
    "oracle_accuracy": _control_accuracy("oracle"),
    "weak_accuracy": _control_accuracy("weak"),
    "gold_engine_matches_store": _gold_engine,
    "gold_row_cap_covers_run": _gold_row_cap,
}


def caught_items(entries: tuple[CaughtEntry, ...], plan: RunPlan, db: ResultsDB) -> list[ChecklistItem]:
    items = []
    for entry in entries:
        ok, observed = CHECKS[entry.check.kind](entry, plan, db)
        items.append(ChecklistItem(item=f"caught:{entry.id}", observed=observed, passed=ok, detail="" if ok or observed == GOLD_UNREADABLE else entry.lesson))
    return items
