"""Review states at the current content hash, recording decisions, and coverage."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

from kgeval.errors import CheckFailed, InputError
from kgeval.gold import GoldEntry
from kgeval.holdout import Question
from kgeval.review._model import (
    DomainCoverage,
    NotPermitted,
    ReviewCoverage,
    ReviewDecision,
    Reviewer,
    ReviewRecord,
    ReviewState,
    question_content_sha256,
)
from kgeval.review._store import ReviewLog


def current_hashes(questions: list[Question], gold: dict[str, GoldEntry]) -> dict[str, str]:
    return {q.id: question_content_sha256(q, gold.get(q.id)) for q in questions}


def review_states(hashes: dict[str, str], records: list[ReviewRecord]) -> dict[str, ReviewState]:
    """Latest decision at each question's current hash; stale if decided only at other hashes."""
    states: dict[str, ReviewState] = {qid: "never_reviewed" for qid in hashes}
    for record in records:  # oldest first
        current = hashes.get(record.question_id)
        if current is None:
            continue
        if record.content_sha256 == current:
            states[record.question_id] = "approved" if record.decision == "approve" else "changes_requested"
        elif states[record.question_id] == "never_reviewed":
            states[record.question_id] = "stale"
    return states


def record_review(
    log: ReviewLog,
    question: Question,
    gold: GoldEntry | None,
    reviewer: Reviewer,
    decision: ReviewDecision,
    seen_sha256: str,
    note: str = "",
) -> ReviewRecord:
    """Append a decision by a reviewer with rights on the question's domain, at the hash they saw."""
    if not reviewer.may_review(question.domain):
        raise NotPermitted(
            f"{reviewer.name} may review domains {', '.join(reviewer.domains) or 'none'}, "
            f"not {question.domain!r} (question {question.id})"
        )
    if decision == "changes_requested" and not note.strip():
        raise InputError(f"question {question.id}: requesting changes needs a note saying which")
    current = question_content_sha256(question, gold)
    if seen_sha256 != current:
        raise CheckFailed(
            f"question {question.id}: its SPARQL or gold changed since it was shown "
            f"(seen {seen_sha256[:12]}, now {current[:12]}); reload it and review again"
        )
    record = ReviewRecord(
        kg=question.kg,
        question_id=question.id,
        domain=question.domain,
        content_sha256=current,
        reviewer=reviewer.name,
        decision=decision,
        note=note,
        recorded_at=datetime.now(UTC).isoformat(timespec="microseconds"),
    )
    log.append(record)
    return record


def review_coverage(questions: list[Question], gold: dict[str, GoldEntry], log: ReviewLog, target: float) -> ReviewCoverage:
    states = review_states(current_hashes(questions, gold), log.records())
    counts = defaultdict(int)
    for state in states.values():
        counts[state] += 1
    domains: dict[str, list[bool]] = defaultdict(list)
    for q in questions:
        domains[q.domain].append(states[q.id] == "approved")
    n = len(questions)
    coverage = counts["approved"] / n if n else 0.0
    return ReviewCoverage(
        questions=n,
        approved=counts["approved"],
        changes_requested=counts["changes_requested"],
        stale=counts["stale"],
        never_reviewed=counts["never_reviewed"],
        target=target,
        coverage=coverage,
        meets_target=n > 0 and coverage >= target,
        by_domain=[DomainCoverage(domain=d, questions=len(v), approved=sum(v)) for d, v in sorted(domains.items())],
        store_problem=log.problem,
    )


