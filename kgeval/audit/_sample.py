"""Drawing an audit sample: the coincidental accepts first (accepted on the KG, rejected by the
question's test suite: `details["suite"]` of the primary verdict), then every accept the judges
disagreed on; then the accepts flagged
`answer_in_query` or made by a leniency rule, round-robin over their strata (judge path x rule);
then a seeded round-robin over the other strata (judge path x rule x KG), so each stratum is
seen before any is seen twice. Accepts are audited as hard as rejects, and each rule's
accepts are measured (DESIGN invariants 4 and 13).
"""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import UTC, datetime

from kgeval.audit._model import AuditItem, AuditSample, Key, sample_id_of
from kgeval.gold import GoldEntry, display_text
from kgeval.judges import RULES, Verdict
from kgeval.runs import SUITE_KEY, ResultsDB

GOLD_UNAVAILABLE = "(gold unavailable)"


def accepted_items(db: ResultsDB, run_id: str, gold: dict[str, GoldEntry] | None, display_items: int = 10) -> dict[Key, AuditItem]:
    """Every accepted attempt of the run (primary judge said correct), as an auditor sees it now."""
    metadata = db.metadata(run_id)
    questions = {q.question_id: q for q in db.questions(run_id)}
    by_attempt: dict[Key, list[Verdict]] = defaultdict(list)
    for qid, seed, verdict in db.verdicts(run_id):
        by_attempt[(qid, seed)].append(verdict)
    items: dict[Key, AuditItem] = {}
    for attempt in db.attempts(run_id):
        verdicts = by_attempt.get((attempt.question_id, attempt.seed), [])
        primary = next((v for v in verdicts if v.judge == metadata.primary_judge), None)
        if primary is None or not primary.correct:
            continue
        dissent = sorted(v.judge for v in verdicts if v.judge != primary.judge and not v.correct)
        entry = (gold or {}).get(attempt.question_id)
        q = questions[attempt.question_id]
        rule = accepting_rule(primary)
        named = list(attempt.extra.get("answer_in_query") or [])
        suite = primary.details.get(SUITE_KEY) or {}
        if suite.get("checked") and not suite.get("passed"):
            stratum = f"coincidental / diverges on {suite.get('diverges')}"
        elif dissent:
            stratum = "disagreement"
        elif named or rule:
            stratum = f"flagged / path {primary.path} / rule {rule or 'none'}" + (" / answer in query" if named else "")
        else:
            stratum = f"path {primary.path} / rule none / kg {q.kg}"
        items[(attempt.question_id, attempt.seed)] = AuditItem(
            run_id=run_id,
            kg=q.kg,
            question_id=q.question_id,
            seed=attempt.seed,
            question=q.question,
            gold_display=display_text(entry.result, display_items) if entry else GOLD_UNAVAILABLE,
            gold_sha256=entry.result_sha256 if entry else None,
            answer=attempt.answer,
            sparql=attempt.sparql,
            verdict=_shown_verdict(primary),
            dissenting_judges=dissent,
            stratum=stratum,
            rule=rule,
            answer_in_query=named,
        )
    return items


def accepting_rule(verdict: Verdict) -> str | None:
    """The leniency rule that made an accept: the first rule it needs (`details["leniency"]
    ["alone"]`), else the rule it names; None for a plain accept (the field's comparison accepts
    it too)."""
    figures = verdict.details.get("leniency") or {}
    if figures.get("standard"):
        return None
    needed = [r for r in figures.get("alone", ()) if r in RULES]
    if needed:
        return needed[0]
    named = verdict.details.get("rule")
    if named in RULES:
        return named
    readings = [r for r in verdict.details.get("readings", ()) if r in RULES]
    return readings[0] if readings else None


def _shown_verdict(v: Verdict) -> dict:
    return v.model_dump(include={"judge", "version", "correct", "path", "reason", "matched", "unmatched", "missing", "gold_total"})


def draw_sample(run_id: str, items: dict[Key, AuditItem], accepts: int, seed: int) -> AuditSample:
    """Up to `accepts` items: coincidental accepts first, then disagreements (each shuffled), then a round-robin over the flagged
    strata, then one over the others."""
    if accepts < 1:
        raise ValueError("an audit sample needs at least one accept")
    rng = random.Random(f"{run_id}:{seed}")
    strata: dict[str, list[AuditItem]] = defaultdict(list)
    for key in sorted(items):
        strata[items[key].stratum].append(items[key])
    for members in strata.values():
        rng.shuffle(members)
    chosen = [item for name in sorted(strata) if name.startswith("coincidental") for item in strata.pop(name)][:accepts]
    chosen += strata.pop("disagreement", [])[: accepts - len(chosen)]
    flagged = [strata.pop(name) for name in sorted(strata) if name.startswith("flagged")]
    for queues in (flagged, [strata[name] for name in sorted(strata)]):
        while len(chosen) < accepts and any(queues):
            for queue in queues:
                if queue and len(chosen) < accepts:
                    chosen.append(queue.pop())
    sample_id = sample_id_of(run_id, accepts, seed, [i.sha256() for i in chosen])
    return AuditSample(
        sample_id=sample_id,
        run_id=run_id,
        accepts=accepts,
        seed=seed,
        items=chosen,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
