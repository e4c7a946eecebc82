"""Audit records: what an auditor saw of one accepted answer, and what they decided."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from kgeval._files import sha256_json

Decision = Literal["agree", "disagree"]
"""The auditor agrees the answer is right (the accept stands) or disagrees (a false accept)."""

AuditState = Literal["agree", "disagree", "conflict", "stale", "unaudited"]
"""An item's audit state: the decision its auditors' latest decisions at its current hash
share, conflict when they differ, stale when every decision was made at another hash,
unaudited when there is none."""

Key = tuple[str, int]
"""(question id, seed): one attempt of a run."""


class AuditItem(BaseModel):
    """One accepted attempt as the auditor sees it. `sha256()` binds their decision to it."""

    run_id: str
    kg: str
    question_id: str
    seed: int
    question: str
    """The question text the system received."""
    gold_display: str
    """The gold as shown to people ("first 10 ... (N total)"); "(gold unavailable)" without gold."""
    gold_sha256: str | None
    """The gold entry's result hash, None when no gold was available."""
    answer: list[Any] | None
    """The answer items the system gave."""
    sparql: str | None
    """The SPARQL the system gave."""
    verdict: dict[str, Any]
    """The primary judge's verdict: judge, version, correct, path, reason and counts."""
    dissenting_judges: list[str] = Field(default_factory=list)
    """Other enabled judges that rejected this accept (a judge disagreement)."""
    stratum: str
    """Where the sample drew it from: "coincidental / diverges on <neighbour>" (rejected by its
    test suite: drawn first); "disagreement"; "flagged / path <judge path> / rule <rule>"
    (an accept flagged `answer_in_query` or made by a rule: drawn next); else "path <judge path>
    / rule <rule> / kg <kg>" (rule "none": plain comparison)."""
    rule: str | None = None
    """The leniency rule that made the accept (`kgeval.judges.RULES`); None: plain comparison."""
    answer_in_query: list[str] = Field(default_factory=list)
    """IRIs of the gold's answer the candidate query names and the reference query does not."""

    @property
    def flagged(self) -> bool:
        """Drawn before the plain accepts: the answer is in the query, or a rule made the accept."""
        return bool(self.answer_in_query) or self.rule is not None

    @property
    def key(self) -> Key:
        return (self.question_id, self.seed)

    def changed_fields(self, now: AuditItem) -> list[str]:
        """The fields the item's hash covers that differ in `now` (the same attempt as it reads now)."""
        covered = ("run_id", "question_id", "seed", "question", "gold_sha256", "gold_display", "answer", "sparql", "verdict")
        return [name for name in covered if getattr(self, name) != getattr(now, name)]

    def sha256(self) -> str:
        """sha256 of what the auditor saw: question, gold, answer and verdict."""
        return sha256_json(
            {
                "run_id": self.run_id,
                "question_id": self.question_id,
                "seed": self.seed,
                "question": self.question,
                "gold": [self.gold_sha256, self.gold_display],
                "answer": [self.answer, self.sparql],
                "verdict": self.verdict,
            }
        )


class AuditSample(BaseModel):
    """A stratified, seeded draw of accepted answers from one run."""

    sample_id: str
    run_id: str
    accepts: int
    """How many accepts were asked for (the sample holds fewer when the run has fewer)."""
    seed: int
    items: list[AuditItem]
    created_at: str


def sample_id_of(run_id: str, accepts: int, seed: int, item_sha256s: list[str]) -> str:
    """A sample's id: a hash over what was asked for and each drawn item's hash, in order, so a
    stored sample is checked whole (an item deleted, added, edited or moved changes it)."""
    return sha256_json({"run": run_id, "accepts": accepts, "seed": seed, "items": item_sha256s})[:16]


class AuditRecord(BaseModel):
    """One auditor decision, appended and never changed; bound to the item hash seen."""

    run_id: str
    question_id: str
    seed: int
    item_sha256: str
    """sha256 of the AuditItem the auditor saw."""
    auditor: str
    decision: Decision
    note: str = ""
    recorded_at: str


class AuditCounts(BaseModel):
    """Audit state of the accepted answers of a run, at the current item hashes."""

    accepted: int
    """Accepted attempts in the run (primary judge said correct)."""
    audited: int
    """Accepts with a current decision (agree, disagree or conflict)."""
    disagree: int
    """Accepts audits found wrong: the false accepts found. Every auditor disagrees, or the
    auditors conflict (`conflicted`): a conflict counts as a false accept until resolved."""
    conflicted: int = 0
    """Of `disagree`, the accepts whose auditors' latest decisions differ (some agree, some
    disagree)."""
    stale: int
    """Accepts audited only at another hash: not counted."""
    accepted_disagreements: int = 0
    """Accepts on which the judges disagreed: the stratum a sample draws first."""
    audited_disagreements: int = 0
    """Audited accepts on which the judges disagreed (over-represented by the sample)."""
    disagree_in_disagreements: int = 0
    """Of those, the false accepts found (disagree or conflict) among judge disagreements."""
    accepted_flagged: int = 0
    """Accepts the judges agreed on that are flagged (`answer_in_query`, or made by a rule): the
    stratum a sample draws next."""
    audited_flagged: int = 0
    """Audited accepts of that stratum."""
    disagree_in_flagged: int = 0
    """Of those, the false accepts found (disagree or conflict)."""
