"""Gold review: domain reviewers approve, or request changes on, a question's reference SPARQL
and gold; decisions are append-only and bound to the content hash (DESIGN invariant 9)."""

from kgeval.review._empty import EmptyGold, MissingVocabulary, describe_empty_golds, empty_golds
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
from kgeval.review._status import current_hashes, record_review, review_coverage, review_states
from kgeval.review._store import ReviewLog

__all__ = [
    "DomainCoverage",
    "EmptyGold",
    "NotPermitted",
    "ReviewCoverage",
    "ReviewDecision",
    "ReviewLog",
    "ReviewRecord",
    "ReviewState",
    "Reviewer",
    "MissingVocabulary",
    "current_hashes",
    "describe_empty_golds",
    "empty_golds",
    "question_content_sha256",
    "record_review",
    "review_coverage",
    "review_states",
]
