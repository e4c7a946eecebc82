"""Checklist item `suites`: the test suites accepts will be checked on are whole and current.

Whatever `suite.required` says, suites that exist and do not verify refuse the run (a run must
not start checking accepts on damaged neighbours, nor silently drop the check), and so do
suites the run would check accepts on that were built from another holdout manifest or for
other data of a KG (`Suites.built_for_other_data`, naming the KG and both hashes): a suite
built for other data must not judge; rebuild them, or judge without them on record
(`suite.check_accepts: false`). The run checks the same again as it starts dispatching, so a
checklist without this item does not let them judge either. With `suite.required`, the run is
also refused unless the suites exist, cover every evaluated SPARQL question with a suite
distilled for its current reference query, and `suite.check_accepts` is on. A question whose
suite kept no neighbour (the reference is not deterministic or fails on each) has nothing to
check its accepts on: named either way, and a problem with `suite.required` (its accepts would
count as unchecked).
"""

from __future__ import annotations

from collections.abc import Sequence

from kgeval.errors import KgevalError
from kgeval.gold import Suites, has_suites, read_suites, suites_path
from kgeval.holdout import Question, read_manifest
from kgeval.checklists._items import Guard
from kgeval.checklists._model import PreEvalChecklist
from kgeval.runs import ChecklistItem, ResultsDB, RunPlan

FIX = "Fix: `kgeval suite build` (it distils only what changed)"
FIX_OTHER_DATA = f"{FIX}, or judge without suites (`suite.check_accepts: false`)"


def suites_item(checklist: PreEvalChecklist, plan: RunPlan, db: ResultsDB, guards: Sequence[Guard]) -> list[ChecklistItem]:
    required, where = plan.config.suite.required, suites_path(plan.gold_root)
    if not has_suites(plan.gold_root):
        if required:
            return [_failed(f"no suites at {where}", f"suite.required is on. {FIX}")]
        return [ChecklistItem(item="suites", observed="no suites: accepts are checked on the holdout KG only (suite.required off)", passed=True)]
    try:
        suites = read_suites(plan.gold_root, plan.suite_dir)  # the version the run holds, when it checks on one
    except KgevalError as exc:
        return [_failed("suites do not verify", f"{exc}. {FIX}")]
    other = _other_data(plan, suites) if plan.metadata.suite_manifest_sha256 or required else []
    if not required:
        if other:
            return [_failed("suites built for other data", "; ".join(other[:5]) + f". {FIX_OTHER_DATA}")]
        checked = "checked on them" if plan.metadata.suite_manifest_sha256 else "NOT checked on them (suite.check_accepts off)"
        built = ", built for this holdout" if plan.metadata.suite_manifest_sha256 else ""
        observed = f"suites {suites.manifest_sha256[:12]} verified{built}; accepts {checked}" + _empty_note(_empty_suites(plan, suites))
        return [ChecklistItem(item="suites", observed=observed, passed=True)]
    problems = other + _coverage(plan, suites)
    if not plan.config.suite.check_accepts:
        problems.insert(0, "suite.check_accepts is off: accepts would not be checked")
    if problems:
        return [_failed(f"{len(problems)} problem" + "s" * (len(problems) != 1), "; ".join(problems[:5]) + f". {FIX}")]
    return [ChecklistItem(item="suites", observed=f"suites {suites.manifest_sha256[:12]} verified and current for every question", passed=True)]


def _other_data(plan: RunPlan, suites: Suites) -> list[str]:
    """Why the suites were built for other data than this holdout's (empty when they were not)."""
    try:
        return suites.built_for_other_data(plan.holdout, read_manifest(plan.holdout.root))
    except KgevalError as exc:  # the holdout_manifest item says it too
        return [f"the holdout's manifest cannot be read: {exc}"]


def _coverage(plan: RunPlan, suites: Suites) -> list[str]:
    problems = []
    for question in plan.holdout.evaluated_questions():
        if question.query_language != "sparql":
            continue
        suite = suites.suite(question.id)
        if suite is None:
            problems.append(f"{question.kg}/{question.id}: no suite")
        elif suite.query_sha256 != question.sparql_sha256:
            problems.append(f"{question.kg}/{question.id}: reference query changed since its suite was built")
    problems += [
        f"{q.kg}/{q.id}: its suite has no neighbour (`kgeval suite show {q.id}` says why), its accepts cannot be checked: "
        "make its reference query deterministic, or exclude it on record (`kgeval holdout exclude`)"
        for q in _empty_suites(plan, suites)
    ]  # fmt: skip
    return problems


def _empty_suites(plan: RunPlan, suites: Suites) -> list[Question]:
    """The evaluated questions whose suite, distilled for their current reference query, kept no
    neighbour: their accepts count as unchecked by the suite, never as passed."""
    empty = []
    for question in plan.holdout.evaluated_questions():
        suite = suites.suite(question.id) if question.query_language == "sparql" else None
        if suite is not None and suite.query_sha256 == question.sparql_sha256 and not suite.neighbours:
            empty.append(question)
    return empty


def _empty_note(empty: list[Question]) -> str:
    if not empty:
        return ""
    listed = ", ".join(f"{q.kg}/{q.id}" for q in empty[:5]) + (", ..." if len(empty) > 5 else "")
    return f"; {len(empty)} question{'s' * (len(empty) != 1)} with an empty suite, accepts unchecked by the suite: {listed}"


def _failed(observed: str, detail: str) -> ChecklistItem:
    return ChecklistItem(item="suites", observed=observed, passed=False, detail=detail)
