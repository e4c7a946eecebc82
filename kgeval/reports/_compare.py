"""Comparing two runs question by question: the paired table, an exact McNemar test, and the
difference in accuracy with a paired interval.

Unit: a question, judged in each run by the majority of its seeds (as in the run report).
Only questions judged in both runs are paired; the others are counted apart.

Interval: Newcombe's (1998) method 10 for the difference of paired proportions — the Wilson
score intervals of the two accuracies, combined with a correction for their correlation
(phi, continuity-corrected as in Newcombe's paper and Altman et al., "Statistics with
Confidence", 2000, section 6). It stays within [-1, 1] and does not collapse to zero width
when there are few discordant questions, unlike the Wald interval.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from collections import Counter

from kgeval.reports._stats import wilson_interval
from kgeval.reports._summary import CAUSE_ORDER, cause_of
from kgeval.runs import ResultsDB, RunMetadata


class Flip(BaseModel):
    """A question whose outcome changed between the runs: right <-> wrong, or a wrong answer
    whose cause changed to or from a model failure (wrong result -> invalid SPARQL)."""

    kg: str
    question_id: str
    question: str
    a_correct: bool
    b_correct: bool
    a_outcome: str = ""
    """"correct", or the wrong answer's cause ("wrong_result", "invalid_sparql", "refused", ...)."""
    b_outcome: str = ""
    a_seed: int | None = None
    """The seed of A that shows A's outcome (where seeds disagree, not just the first seed)."""
    b_seed: int | None = None
    """The seed of B that shows B's outcome: for a flip, the seed that flipped."""


class Comparability(BaseModel):
    """Whether two runs measured the same thing; what differs either way."""

    comparable: bool
    blocking: list[str]
    """Differences that make the numbers incomparable (holdout, gold, judge, seeds)."""
    differences: list[str]
    """Differences that are the point of comparing (system, its version) or harmless."""
    remedy: str | None = None
    """The one command that makes two incomparable runs comparable, when re-judging can (their
    judges, rules or gold differ, not their seeds or questions): `kgeval rejudge` or
    `kgeval compare --rejudge`."""


class RunComparison(BaseModel):
    run_a: RunMetadata
    run_b: RunMetadata
    comparability: Comparability
    forced: bool
    """True when incomparable runs were compared on request (`--force`): every page says so."""
    rejudged: bool = False
    """True when both runs were re-judged on the fly with B's configuration and gold
    (`kgeval compare --rejudge`): the runs compared are not stored."""
    paired: int
    """Questions judged in both runs."""
    both_correct: int
    a_only: int
    """Correct in A, wrong in B."""
    b_only: int
    """Wrong in A, correct in B."""
    both_wrong: int
    unpaired: int
    """Questions judged in only one of the runs (not in the comparison)."""
    accuracy_a: float | None
    accuracy_b: float | None
    difference: float | None
    """Accuracy of B minus accuracy of A on the paired questions."""
    diff_ci_low: float | None
    diff_ci_high: float | None
    interval_method: str = "Newcombe (1998) method 10, paired, 95%"
    mcnemar_pvalue: float | None
    """Exact (binomial) McNemar test on the discordant questions; 1.0 when there are none."""
    flips: list[Flip]
    """Questions whose outcome changed: A right & B wrong, A wrong & B right, and wrong in both
    for different causes (a wrong result in A, invalid SPARQL in B)."""


def majority_by_question(db: ResultsDB, run_id: str) -> dict[str, bool]:
    """Each judged question's majority verdict under the run's primary judge."""
    return {qid: outcome == "correct" for qid, outcome in outcome_by_question(db, run_id).items()}


def outcome_by_question(db: ResultsDB, run_id: str) -> dict[str, str]:
    """Each judged question's outcome under the primary judge: "correct" by majority of its
    seeds, else the most common cause among its wrong seeds (see `cause_of`)."""
    return majority_outcomes(seed_outcomes(db, run_id))


def majority_outcomes(seeds: dict[str, dict[int, str]]) -> dict[str, str]:
    """`outcome_by_question` from the seeds' outcomes (`seed_outcomes`)."""
    outcomes = {}
    for qid, by_seed in seeds.items():
        if sum(o == "correct" for o in by_seed.values()) * 2 > len(by_seed):
            outcomes[qid] = "correct"
            continue
        causes = Counter(o for o in by_seed.values() if o != "correct") or Counter(["wrong_result"])
        outcomes[qid] = min(causes, key=lambda c: (-causes[c], CAUSE_ORDER.index(c)))
    return outcomes


def seed_outcomes(db: ResultsDB, run_id: str) -> dict[str, dict[int, str]]:
    """Question id -> seed -> "correct" or the wrong answer's cause, under the primary judge
    (judged seeds only)."""
    metadata = db.metadata(run_id)
    version = metadata.judge_versions[metadata.primary_judge]
    seeds: dict[str, dict[int, str]] = {}
    for qid, seed, verdict in db.verdicts(run_id):
        if verdict.judge == metadata.primary_judge and verdict.version == version:
            seeds.setdefault(qid, {})[seed] = "correct" if verdict.correct else cause_of(verdict)
    return seeds


def seed_showing(by_seed: dict[int, str], outcome: str) -> int | None:
    """The first seed whose outcome is `outcome` (else the first with its correctness, else the
    first seed): the attempt to open for a question whose seeds disagree."""
    ordered = sorted(by_seed.items())
    exact = [s for s, o in ordered if o == outcome]
    alike = [s for s, o in ordered if (o == "correct") == (outcome == "correct")]
    return (exact or alike or [s for s, _ in ordered] or [None])[0]


def paired_difference_interval(both: int, a_only: int, b_only: int, neither: int, alpha: float = 0.05) -> tuple[float, float]:
    """Newcombe method 10 interval for accuracy(B) - accuracy(A) on paired questions."""
    n = both + a_only + b_only + neither
    if n == 0:
        raise ValueError("a paired interval needs at least one paired question")
    pa, pb = (both + a_only) / n, (both + b_only) / n
    la, ua = wilson_interval(both + a_only, n, alpha)
    lb, ub = wilson_interval(both + b_only, n, alpha)
    phi = _phi(both, a_only, b_only, neither)
    d = pb - pa
    low = d - math.sqrt(max((pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2, 0.0))
    high = d + math.sqrt(max((ub - pb) ** 2 - 2 * phi * (ub - pb) * (pa - la) + (pa - la) ** 2, 0.0))
    return max(low, -1.0), min(high, 1.0)


def _phi(both: int, a_only: int, b_only: int, neither: int) -> float:
    """Correlation of the two runs' outcomes, continuity-corrected as Newcombe prescribes."""
    n = both + a_only + b_only + neither
    margins = (both + a_only) * (b_only + neither) * (both + b_only) * (a_only + neither)
    if margins == 0:
        return 0.0
    cross = both * neither - a_only * b_only
    corrected = max(cross - n / 2, 0.0) if cross > 0 else cross
    return corrected / math.sqrt(margins)


def mcnemar_exact_pvalue(a_only: int, b_only: int) -> float:
    """Exact McNemar test (binomial on the discordant pairs), via statsmodels."""
    from statsmodels.stats.contingency_tables import mcnemar

    if a_only + b_only == 0:
        return 1.0
    return float(mcnemar([[0, a_only], [b_only, 0]], exact=True).pvalue)


def compare_runs(db: ResultsDB, run_a: str, run_b: str, comparability: Comparability, *, forced: bool = False, rejudged: bool = False) -> RunComparison:
    """The paired comparison of two runs in one results database."""
    meta_a, meta_b = db.metadata(run_a), db.metadata(run_b)
    seeds_a, seeds_b = seed_outcomes(db, run_a), seed_outcomes(db, run_b)
    outcome_a, outcome_b = majority_outcomes(seeds_a), majority_outcomes(seeds_b)
    a = {q: o == "correct" for q, o in outcome_a.items()}
    b = {q: o == "correct" for q, o in outcome_b.items()}
    paired = sorted(a.keys() & b.keys())
    cells = {(x, y): 0 for x in (True, False) for y in (True, False)}
    for qid in paired:
        cells[(a[qid], b[qid])] += 1
    both, a_only, b_only, neither = cells[(True, True)], cells[(True, False)], cells[(False, True)], cells[(False, False)]
    questions = {q.question_id: q for q in db.questions(run_a)}
    flips = [
        Flip(
            kg=questions[q].kg, question_id=q, question=questions[q].question, a_correct=a[q], b_correct=b[q], a_outcome=outcome_a[q],
            b_outcome=outcome_b[q], a_seed=seed_showing(seeds_a[q], outcome_a[q]), b_seed=seed_showing(seeds_b[q], outcome_b[q]),
        )
        for q in paired
        if outcome_a[q] != outcome_b[q]  # right <-> wrong, or wrong for another cause (wrong result -> invalid SPARQL)
    ]
    n = len(paired)
    low, high = paired_difference_interval(both, a_only, b_only, neither) if n else (None, None)
    return RunComparison(
        run_a=meta_a,
        run_b=meta_b,
        comparability=comparability,
        forced=forced,
        rejudged=rejudged,
        paired=n,
        both_correct=both,
        a_only=a_only,
        b_only=b_only,
        both_wrong=neither,
        unpaired=len(a.keys() ^ b.keys()),
        accuracy_a=(both + a_only) / n if n else None,
        accuracy_b=(both + b_only) / n if n else None,
        difference=(b_only - a_only) / n if n else None,
        diff_ci_low=low,
        diff_ci_high=high,
        mcnemar_pvalue=mcnemar_exact_pvalue(a_only, b_only),
        flips=flips,
    )
