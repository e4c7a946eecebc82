"""The pre-eval checklist items, each a function (checklist, plan, db, guards) -> receipt lines.

Each item observes something a reader can check and says pass or fail; none raises on a
failure, so the receipt lists every failing item at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from kgeval._chain import BrokenLog
from kgeval.errors import KgevalError, QueryError
from kgeval.config import PROPERTY_GRAPH_KINDS
from kgeval.gold import GoldEntry, GoldIndex, gold_problems, index_gold
from kgeval.holdout import RESTORE_OR_RESEAL, Question, holdout_problems
from kgeval.review import EmptyGold, ReviewLog, describe_empty_golds, empty_golds, review_states
from kgeval.judges import is_uninformative, missing_vocabulary
from kgeval.runs import ChecklistItem, ResultsDB, RunMetadata, RunPlan, store_lookup
from kgeval.stores import guard_query
from kgeval.checklists._model import PreEvalChecklist


class Guard(Protocol):
    """What the checklist needs of an anti-cheat guard: a `status()` saying whether it is
    active. `status()` may return a bool (the guard's `name` names it), one status object or
    mapping, or a list of them (kgeval.guards.ExampleBank: one per guard), each with `name`,
    `active` and, optionally, `details` or `detail`."""

    def status(self) -> Any: ...


def guard_states(guards: Sequence[Guard]) -> dict[str, tuple[bool, str]]:
    """name -> (active, detail) for every guard status reported; a guard that fails to report
    is inactive."""
    states: dict[str, tuple[bool, str]] = {}
    for guard in guards:
        fallback = str(getattr(guard, "name", type(guard).__name__))
        try:
            status = guard.status()
        except Exception as exc:  # noqa: BLE001 - a guard that cannot report is not active
            states[fallback] = (False, f"status() raised {type(exc).__name__}: {exc}")
            continue
        for item in status if isinstance(status, list) else [status]:
            name, active, detail = _one_status(item, fallback)
            # one name reported twice (two providers): active only if both say so
            was_active, was_detail = states.get(name, (True, ""))
            states[name] = (was_active and active, "; ".join(d for d in (was_detail, detail) if d))
    return states


def _one_status(item: Any, fallback: str) -> tuple[str, bool, str]:
    if isinstance(item, bool):
        return fallback, item, ""
    get = item.get if isinstance(item, dict) else lambda key, default=None: getattr(item, key, default)
    details = get("details") or get("detail") or ""
    if isinstance(details, dict):
        details = ", ".join(f"{k}={v}" for k, v in details.items())
    return str(get("name") or fallback), bool(get("active", False)), str(details)


GOLD_UNREADABLE = "not checked: the gold cannot be read (item gold says why)"
"""What the items that read the gold say when it cannot be read: the `gold` item names the
problem and the fix once, not every item that needs the gold."""

Item = Callable[[PreEvalChecklist, RunPlan, ResultsDB, Sequence[Guard]], list[ChecklistItem]]


def holdout_manifest(checklist: PreEvalChecklist, plan: RunPlan, db: ResultsDB, guards: Sequence[Guard]) -> list[ChecklistItem]:
    try:
        problems = holdout_problems(plan.holdout.root)
    except KgevalError as exc:
        problems = [str(exc)]
    sha = plan.metadata.holdout_manifest_sha256
    if problems:
        detail = "; ".join(problems[:5]) + ". " + RESTORE_OR_RESEAL
        return [ChecklistItem(item="holdout_manifest", observed=f"{len(problems)} differences from MANIFEST.json", passed=False, detail=detail)]
    return [ChecklistItem(item="holdout_manifest", observed=f"manifest {sha[:12]} verified", passed=True)]


def gold(checklist: PreEvalChecklist, plan: RunPlan, db: ResultsDB, guards: Sequence[Guard]) -> list[ChecklistItem]:
    try:
        problems = gold_problems(plan.gold_dir, plan.holdout)
    except KgevalError as exc:
        problems = [str(exc)]
    if problems:
        detail = "; ".join(problems[:5])
        if "kgeval gold rebuild" not in detail:
            detail += ". Fix: `kgeval gold rebuild` (it executes only what changed), then `kgeval gold verify`"
        return [ChecklistItem(item="gold", observed=f"{len(problems)} problem" + ("s" * (len(problems) != 1)), passed=False, detail=detail)]
    observed = f"gold manifest {plan.metadata.gold_manifest_sha256[:12]} verified, built from holdout manifest {plan.metadata.holdout_manifest_sha256[:12]}"
    return [ChecklistItem(item="gold", observed=observed, passed=True)]


def gold_failures(checklist: PreEvalChecklist, plan: RunPlan, db: ResultsDB, guards: Sequence[Guard]) -> list[ChecklistItem]:
    """Refuses while a reference query failed at rebuild (no gold) and its question is not
    excluded on record; names every exclusion either way."""
    item = "gold_failures"
    try:
        failures = index_gold(plan.gold_dir).failures
    except KgevalError:
        return [ChecklistItem(item=item, observed=GOLD_UNREADABLE, passed=False)]
    excluded = plan.holdout.exclusions
    open_ = sorted(qid for qid in failures if qid not in excluded)
    if open_:
        detail = "; ".join(f"{failures[q].kg}/{q}: {failures[q].error}" for q in open_[:5])
        hint = " — fix the queries and `kgeval gold rebuild`, or `kgeval holdout exclude QID... --why TEXT`"
        return [ChecklistItem(item=item, observed=f"{len(open_)} reference queries failed and are not excluded: {', '.join(open_)}", passed=False, detail=(detail + hint)[:600])]
    on_record = ", ".join(f"{q} ({e.why})" for q, e in sorted(excluded.items()))
    observed = f"no failed reference queries outside the {len(excluded)} excluded on record" + (f": {on_record}" if on_record else "")
    return [ChecklistItem(item=item, observed=observed[:600], passed=True)]


def pipeline_parity(checklist: PreEvalChecklist, plan: RunPlan, db: ResultsDB, guards: Sequence[Guard]) -> list[ChecklistItem]:
    system = plan.system
    if system.name in checklist.parity_exempt:
        return [ChecklistItem(item="pipeline_parity", observed=f"{system.name} ({system.kind}) is exempt: no pipeline to compare", passed=True)]
    if system.pipeline is None:
        detail = f"declare systems.{system.name}.pipeline in the configuration, or list {system.name} in the checklist's parity_exempt"
        return [ChecklistItem(item="pipeline_parity", observed=f"{system.name} declares no pipeline", passed=False, detail=detail)]
    differences, fixes = [], {}
    for kg in plan.holdout.kgs:
        ours, production = system.pipeline.for_kg(kg.id), checklist.production_profile.for_kg(kg.id)
        for feature in sorted(production.keys() | ours.keys()):
            if ours.get(feature) != production.get(feature):
                differences.append(f"{kg.id}: {feature}={ours.get(feature)!r} (production {production.get(feature)!r})")
                fixes.setdefault(_parity_fix(system, feature, production), None)
    if differences:
        detail = "; ".join(differences[:8]) + ". Fix: " + "; ".join(fixes) + " (or, if production changed, its production_profile in the checklist)"
        return [ChecklistItem(item="pipeline_parity", observed=f"{len(differences)} features differ from production", passed=False, detail=detail)]
    features = ", ".join(f"{k}={v!r}" for k, v in sorted(checklist.production_profile.default.items()))
    return [ChecklistItem(item="pipeline_parity", observed=f"equal to production on {len(plan.holdout.kgs)} KGs ({features})", passed=True)]


def _parity_fix(system: Any, feature: str, production: dict[str, Any]) -> str:
    """The configuration key that makes `system` declare `feature` as production does."""
    name = system.name
    if system.kind != "model":
        return f"set systems.{name}.pipeline.default.{feature}: {production.get(feature)!r} (per_kg.KG.{feature} for one KG) to what the endpoint runs"
    if feature in ("few_shot_retrieval", "few_shot_k"):
        k = production.get("few_shot_k")
        return (
            f"set systems.{name}.examples to an example bank (JSONL, one {{\"kg\", \"question\", \"sparql\"}} per line) "
            f"and systems.{name}.few_shot_k: {k!r}; `kgeval init --system {name}` writes both"
        )
    return f"the {name} system has no setting for {feature!r}: it always sends {feature}={system.pipeline.default.get(feature)!r}"


def guards_active(checklist: PreEvalChecklist, plan: RunPlan, db: ResultsDB, guards: Sequence[Guard]) -> list[ChecklistItem]:
    system, feature = plan.system, checklist.guards.when_feature
    uses = system.pipeline is not None and any(system.pipeline.for_kg(kg.id).get(feature) for kg in plan.holdout.kgs)
    if not uses:
        return [ChecklistItem(item="guards", observed=f"{system.name} does not use {feature}: no example bank to guard", passed=True)]
    states = guard_states([*guards, *getattr(system, "guards", lambda: [])()])
    unreported = "; ".join(f"{name}: {detail}" for name, (active, detail) in states.items() if name not in checklist.guards.required and not active)
    lines = []
    for name in checklist.guards.required:
        if name not in states:
            detail = f"{feature} is on; guard {name!r} must report active" + (f" ({unreported})" if unreported else "") + _guard_fix(system)
            lines.append(ChecklistItem(item=f"guards:{name}", observed="not present", passed=False, detail=detail))
            continue
        active, detail = states[name]
        lines.append(ChecklistItem(item=f"guards:{name}", observed="active" if active else "inactive", passed=active, detail=detail + ("" if active else _guard_fix(system))))
    return lines


def _guard_fix(system: Any) -> str:
    if system.kind == "model":
        return f". Fix: give systems.{system.name}.examples (a JSONL bank: kgeval builds it with the guards armed by the holdout's index)"
    return f". Fix: set systems.{system.name}.guards_url to where the endpoint reports its example-bank guards (GET: a JSON list of {{name, active, details}})"


def apples_to_apples(checklist: PreEvalChecklist, plan: RunPlan, db: ResultsDB, guards: Sequence[Guard]) -> list[ChecklistItem]:
    others: list[RunMetadata] = []
    if plan.system.name in checklist.compare.systems:
        for name in checklist.compare.systems:
            runs = db.runs(system=name) if name != plan.system.name else []
            if runs:
                others.append(runs[-1])
    missing = []
    for run_id in plan.compare_with:
        try:
            others.append(db.metadata(run_id))
        except KgevalError:
            missing.append(run_id)
    if missing:
        detail = "give --db with the database holding them (`kgeval runs --db FILE` lists a database's runs), or leave them out of --compare-with"
        return [ChecklistItem(item="apples_to_apples", observed=f"named runs not in {db.path}: {', '.join(missing)}", passed=False, detail=detail)]
    if not others:
        return [ChecklistItem(item="apples_to_apples", observed=f"no runs to compare {plan.system.name} with", passed=True)]
    return [_compare_one(checklist, plan.metadata, other) for other in others]


def _compare_one(checklist: PreEvalChecklist, ours: RunMetadata, other: RunMetadata) -> ChecklistItem:
    fields = checklist.compare.fields
    differing = [f for f in fields if getattr(ours, f) != getattr(other, f)]
    name = f"apples_to_apples:{other.system}"
    if differing:
        detail = "; ".join(f"{f}: {getattr(ours, f)!r} here, {getattr(other, f)!r} there" for f in differing)[:500]
        detail += f". Fix: run both on the same gold, holdout, judges and --seeds (run {other.system} again, or this one with its settings)"
        return ChecklistItem(item=name, observed=f"differs from run {other.run_id} in {', '.join(differing)}", passed=False, detail=detail)
    return ChecklistItem(item=name, observed=f"same {', '.join(fields)} as run {other.run_id}", passed=True)


def _why_empty(g: EmptyGold) -> str:
    """What makes a gold that has rows or a false ASK need confirmation, in the checklist's detail."""
    if g.kind == "false_ask":
        return f" (false only because {_shown(g.missing_vocabulary)} occurs nowhere in the KG)" if g.missing_vocabulary else " (a false ASK: the KG was not asked)"
    if g.kind == "zero_or_unbound":
        return " (one row of zeros or unbound values: nothing found)"
    return ""


def _shown(iris: list[str]) -> str:
    return ", ".join(f"<{iri}>" for iri in iris[:3]) + (" ..." if len(iris) > 3 else "")


Vocabulary = dict[str, list[str] | None]
"""Question id -> the IRIs its reference query needs that its KG lacks (None: the KG cannot be asked)."""
AskedAhead = dict[str, Vocabulary | KgevalError]
"""KG id -> the vocabulary of its questions asked ahead (`vocabulary_asked_ahead`), or the error asking them raised."""


def vocabulary_asked_ahead(plan: RunPlan) -> AskedAhead:
    """The vocabulary of every question whose reference query is an ASK, asked of its KG before
    the gold says which ASKs are false: the checklist starts it first, in a thread, so its KGs'
    sandbox workers are waited for while the other items (the gold's scan) run, not after them
    (0.2-0.35 s of a 22-KG run's start). A question its gold settles (`_unsettled`) is not
    asked: a gold built with the vocabulary recorded has the checklist wait for no KG.
    The empty-gold item takes those it needs; a KG's error is raised only if one of its
    questions is needed."""
    try:
        gold = index_gold(plan.gold_dir)
    except KgevalError:  # the gold item says why; every ASK is asked as before
        gold = None
    asks: dict[str, list[Question]] = {}
    for q in plan.holdout.questions():
        if q.kg in plan.stores and (gold is None or _unsettled(plan, q, gold)) and _is_ask(q.sparql):
            asks.setdefault(q.kg, []).append(q)
    return _asked(plan, asks, errors_kept=True)


def _unsettled(plan: RunPlan, q: Question, gold: GoldIndex) -> bool:
    """Whether the empty-gold item may need to ask `q`'s KG: its gold entry, for the reference
    query `q` has now, is not a SELECT nor a true ASK (never asked; their queries are not parsed
    to find ASKs) nor a false ASK whose vocabulary it recorded; an entry that cannot be read, or
    for another query, is asked as before."""
    summary = gold.entries.get(q.id)
    if summary is None or summary.query_sha256 != q.sparql_sha256:
        return True
    if summary.form != "ask":
        return False
    try:
        entry = gold.entry(q.id)
    except KgevalError:
        return True
    return is_uninformative(entry.result) and _recorded(plan, q, gold, entry) is None


def _recorded(plan: RunPlan, q: Question, gold: GoldIndex, entry: GoldEntry) -> list[str] | None:
    """The vocabulary `q`'s gold entry recorded at build (`GoldEntry.missing_vocabulary`) for
    the reference query `q` has now; None when it recorded none, is for another query, or the
    run's store is one a judge cannot look up (a property graph: the KG is not asked). The gold
    item verifies the entry's hashes and that its KG data is this holdout's."""
    summary = gold.entries.get(q.id)
    if summary is None or summary.query_sha256 != q.sparql_sha256 or plan.config.store.kind in PROPERTY_GRAPH_KINDS:
        return None
    return entry.missing_vocabulary


def _is_ask(sparql: str) -> bool:
    try:
        return guard_query(sparql).form == "ask"
    except QueryError:
        return False


def _false_ask_vocabulary(plan: RunPlan, ahead: AskedAhead | None = None) -> Vocabulary:
    """Question id -> the IRIs its reference query needs that its KG lacks (None: the KG cannot
    be asked), for each false-ASK gold of a KG the run has a store for: what tells a false ASK
    that says nothing from a "no" (`kgeval.review.empty_golds` asks it). Each KG is asked in its
    own thread: a store whose sandbox workers are still loading its KG holds up its own questions
    only, and its load starts at once. Asked one after another, the checklist waited for the
    run's KGs to load one at a time, the run process idle (1.4 s of a 22-KG run's start).
    A vocabulary the gold recorded at build (`_recorded`) is read, not asked.
    `ahead`: what `vocabulary_asked_ahead` found; a question it did not ask is asked now."""
    gold = index_gold(plan.gold_dir)
    asked: dict[str, list[Question]] = {}
    found: Vocabulary = {}
    for q in plan.holdout.questions():
        summary = gold.entries.get(q.id)
        if summary is None or summary.form != "ask" or q.kg not in plan.stores or not is_uninformative((entry := gold.entry(q.id)).result):
            continue
        if (recorded := _recorded(plan, q, gold, entry)) is not None:
            found[q.id] = recorded
        else:
            asked.setdefault(q.kg, []).append(q)
    for kg, questions in (ahead or {}).items():
        if kg in asked and isinstance(questions, KgevalError):
            raise questions
        if kg in asked:
            found |= {q.id: questions[q.id] for q in asked[kg] if q.id in questions}  # type: ignore[index]
    rest = {kg: [q for q in questions if q.id not in found] for kg, questions in asked.items()}
    return found | _asked(plan, {kg: questions for kg, questions in rest.items() if questions})


def _asked(plan: RunPlan, asked: dict[str, list[Question]], *, errors_kept: bool = False) -> dict:
    """The vocabulary of each KG's questions, a few KGs at once (`_LOADING_KGS`): merged into one
    Vocabulary, or (`errors_kept`) per KG, a KG that raised a KgevalError holding it."""

    def missing_in(kg: str) -> Vocabulary | KgevalError:
        try:
            lookup = store_lookup(plan.stores[kg], kg, plan.config)
            return {q.id: None if lookup is None else missing_vocabulary(q.sparql, lookup) for q in asked[kg]}
        except KgevalError as exc:
            if not errors_kept:
                raise
            return exc

    if not asked:
        return {}
    with ThreadPoolExecutor(max_workers=min(len(asked), _LOADING_KGS), thread_name_prefix="kgeval-checklist") as pool:
        per_kg = dict(zip(asked, pool.map(missing_in, asked)))
    return per_kg if errors_kept else {qid: missing for vocabulary in per_kg.values() for qid, missing in vocabulary.items()}


_LOADING_KGS = max(2, os.cpu_count() or 1)
"""KGs the vacuous-gold check asks at once (each may be waiting for its KG to load)."""


def empty_gold(checklist: PreEvalChecklist, plan: RunPlan, db: ResultsDB, guards: Sequence[Guard], ahead: AskedAhead | None = None) -> list[ChecklistItem]:
    """Every empty-like gold that needs it (`kgeval.review.empty_golds`: empty, one row of zeros
    or unbound cells, a false ASK whose query needs vocabulary the KG lacks) is confirmed: the
    question says `expect_empty: true`, or its empty answer is confirmed on record for its
    current reference query (`kgeval holdout confirm-empty`), or a domain reviewer approved that
    gold at its current hash. Such a gold from a broken reference query would accept any answer
    that finds nothing. Counted as `gold show --empty` and the report count them."""
    try:
        vocabulary = _false_ask_vocabulary(plan, ahead)
        empty = empty_golds(plan.gold_dir, plan.holdout, lambda q: vocabulary.get(q.id))
    except KgevalError:
        return [ChecklistItem(item="empty_gold", observed=GOLD_UNREADABLE, passed=False)]
    counted = describe_empty_golds(empty)
    needing = [g for g in empty if g.needs_confirmation and g.confirmation != "excluded"]
    unconfirmed = [g for g in needing if g.confirmation == "unconfirmed"]
    if unconfirmed:
        try:
            with ReviewLog(db.path, read_only=db.read_only) as log:
                states = review_states({g.question_id: g.content_sha256 for g in unconfirmed}, log.records())
        except BrokenLog as exc:  # no approval is read from a broken log
            return [ChecklistItem(item="empty_gold", observed="review log broken", passed=False, detail=str(exc))]
        unconfirmed = [g for g in unconfirmed if states.get(g.question_id) != "approved"]
    if unconfirmed:
        ids = ", ".join(f"{g.kg}/{g.question_id}" + _why_empty(g) for g in unconfirmed[:10]) + (" ..." if len(unconfirmed) > 10 else "")
        stale = [g.question_id for g in unconfirmed if g.question_id in plan.holdout.confirmed_empty]
        detail = (
            f"{counted}; unconfirmed: {ids}. Fix the reference query, or confirm the empty answer: "
            "`kgeval holdout confirm-empty QID... --why TEXT`, `expect_empty: true` in the holdout's questions.yaml "
            "(then `kgeval holdout seal`), or a domain reviewer's approval"
            + (f"; confirmed on record for another reference query (changed since): {', '.join(stale)}" if stale else "")
        )
        observed = f"{len(unconfirmed)} of {len(needing)} empty-like golds needing confirmation unconfirmed ({counted})"
        return [ChecklistItem(item="empty_gold", observed=observed, passed=False, detail=detail)]
    return [ChecklistItem(item="empty_gold", observed=f"{counted}; the {len(needing)} needing it all confirmed (expect_empty, confirmed on record or reviewer approval)", passed=True)]
