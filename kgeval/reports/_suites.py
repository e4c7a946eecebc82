"""Test-suite accuracy: the report's figure for accepts that hold beyond one KG (DESIGN
invariant 14).

A question counts as right under test-suite accuracy when the majority of its seeds is
accepted by the primary judge AND passed its suite (`details["suite"]` of the primary verdict:
the accepted query gave each neighbour's gold). An accept the suite could not check (an
answer list without SPARQL, a question without a suite, a store failure on a neighbour) is
counted as not passed, never as passed, and the report counts those separately. A
*coincidental accept* is one the judge accepted on the KG and the suite rejected: it is listed
with the neighbour where it diverges, and the audit sampler draws those first.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel

from kgeval.judges import Verdict
from kgeval.runs import SUITE_KEY, RunMetadata


class CoincidentalAccept(BaseModel):
    """An attempt accepted on the holdout KG and rejected on a neighbour of its suite."""

    kg: str
    question_id: str
    seed: int
    neighbour: str
    """The first neighbour of the suite where its answer diverges from that neighbour's gold."""
    reason: str
    """The judge's reason on that neighbour."""


class SuiteFigures(BaseModel):
    """What the report says about test suites."""

    correct: int
    """Questions whose majority of seeds is accepted and passed the suite."""
    n: int
    """Questions judged."""
    unchecked: int
    """Accepted attempts the suite could not check (counted as not passed)."""
    unchecked_why: dict[str, int]
    """Those, by reason."""
    coincidental: list[CoincidentalAccept]
    """Accepted attempts the suite rejected, with the neighbour where each diverges."""


def suite_outcome(verdict: Verdict) -> dict[str, Any] | None:
    """The suite outcome recorded on a primary verdict (None: not accepted, or no suite run)."""
    outcome = verdict.details.get(SUITE_KEY)
    return outcome if isinstance(outcome, dict) else None


def passed_suite(verdict: Verdict) -> bool:
    """Accepted on the KG and by every neighbour of its suite."""
    outcome = suite_outcome(verdict)
    return verdict.correct and outcome is not None and bool(outcome.get("checked")) and bool(outcome.get("passed"))


def suite_figures(verdicts: dict[str, dict[int, Verdict]], kgs: dict[str, str], metadata: RunMetadata) -> SuiteFigures | None:
    """The suite figures of a run's primary verdicts (question -> seed -> verdict); None when
    the run was judged without suites."""
    if metadata.suite_manifest_sha256 is None:
        return None
    correct, unchecked, coincidental = 0, Counter(), []
    for qid, by_seed in verdicts.items():
        passed = sum(passed_suite(v) for v in by_seed.values())
        correct += passed * 2 > len(by_seed)
        for seed, v in sorted(by_seed.items()):
            outcome = suite_outcome(v)
            if not v.correct or outcome is None:
                continue
            if not outcome.get("checked"):
                unchecked[str(outcome.get("why", "unchecked"))] += 1
            elif not outcome.get("passed"):
                where = outcome.get("diverges") or "?"
                reason = next((o.get("reason", "") for o in outcome.get("neighbours", []) if o.get("neighbour") == where), "")
                coincidental.append(CoincidentalAccept(kg=kgs.get(qid, ""), question_id=qid, seed=seed, neighbour=where, reason=reason))
    return SuiteFigures(correct=correct, n=len(verdicts), unchecked=sum(unchecked.values()), unchecked_why=dict(unchecked), coincidental=coincidental)
