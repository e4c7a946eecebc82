"""Drawing an audit sample: every accept the judges disagreed on first, then a seeded
round-robin over strata (judge path x KG), so each stratum is seen before any is seen twice.
"""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import UTC, datetime

from kgeval.audit._model import AuditItem, AuditSample, Key, sample_id_of
from kgeval.gold import GoldEntry, display_text
from kgeval.judges import Verdict
from kgeval.runs import ResultsDB

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
            stratum="disagreement" if dissent else f"path {primary.path} / kg {q.kg}",
        )
    return items


def _shown_verdict(v: Verdict) -> dict:
    return v.model_dump(include={"judge", "version", "correct", "path", "reason", "matched", "unmatched", "missing", "gold_total"})


def draw_sample(run_id: str, items: dict[Key, AuditItem], accepts: int, seed: int) -> AuditSample:
    """Up to `accepts` items: disagreements first (shuffled), then a round-robin over strata."""
    if accepts < 1:
        raise ValueError("an audit sample needs at least one accept")
    rng = random.Random(f"{run_id}:{seed}")
    strata: dict[str, list[AuditItem]] = defaultdict(list)
    for key in sorted(items):
        strata[items[key].stratum].append(items[key])
    for members in strata.values():
        rng.shuffle(members)
    chosen = strata.pop("disagreement", [])[:accepts]
    queues = [strata[name] for name in sorted(strata)]
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
