"""Gold review records: a domain reviewer's decision on a question's reference SPARQL and gold."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from kgeval._files import sha256_json
from kgeval.errors import KgevalError
from kgeval.gold import GoldEntry
from kgeval.holdout import Question

ReviewDecision = Literal["approve", "changes_requested"]
"""What a reviewer decided. `changes_requested` never counts as approval."""

ReviewState = Literal["approved", "changes_requested", "stale", "never_reviewed"]
"""A question's state at its current content hash: the latest decision at that hash;
stale when decisions exist only at other hashes (the question or its gold changed since);
never reviewed when there is no decision at all."""


class NotPermitted(KgevalError):
    """The caller has no right to do this (e.g. review a question outside their domains)."""


class Reviewer(BaseModel):
    """Someone who may review gold, and the domains they may review ("*" for every domain)."""

    name: str
    domains: tuple[str, ...]

    def may_review(self, domain: str) -> bool:
        return "*" in self.domains or domain in self.domains


class ReviewRecord(BaseModel):
    """One decision, appended and never changed; bound to the content hash reviewed."""

    kg: str
    question_id: str
    domain: str
    content_sha256: str
    """`question_content_sha256` of the question and gold the reviewer saw."""
    reviewer: str
    decision: ReviewDecision
    note: str = ""
    recorded_at: str


class DomainCoverage(BaseModel):
    domain: str
    questions: int
    approved: int


class ReviewCoverage(BaseModel):
    """How much of the holdout a domain reviewer has approved at the current hashes."""

    questions: int
    approved: int
    changes_requested: int
    stale: int
    never_reviewed: int
    target: float
    """Share of questions that should be approved (config `review.coverage_target`)."""
    coverage: float
    """approved / questions."""
    meets_target: bool
    by_domain: list[DomainCoverage]
    store_problem: str | None = None
    """Why the review store read as empty, when it did: it does not exist (a damaged or broken
    one is never read as empty: it is named, and no coverage is computed)."""


def question_content_sha256(question: Question, gold: GoldEntry | None) -> str:
    """sha256 of what a reviewer approves: the question, its reference SPARQL and its gold."""
    return sha256_json(
        {
            "kg": question.kg,
            "question_id": question.id,
            "question": question.question,
            "sparql": question.sparql,
            "domain": question.domain,
            "honeypot": question.honeypot,
            "order_sensitive": question.order_sensitive,
            "gold_sha256": gold.result_sha256 if gold else None,
        }
    )
