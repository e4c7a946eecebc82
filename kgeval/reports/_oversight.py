"""What people added to a run after it finished: audits of its accepts, gold review of its
holdout; and what dispatch stored with it (the checklist receipt)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kgeval._chain import BrokenLog
from kgeval.audit import AuditCounts, AuditItem, AuditLog, AuditState, accepted_items, audit_counts, audit_states, found_false
from kgeval.config import KgevalConfig
from kgeval.errors import KgevalError
from kgeval.gold import GoldEntry, load_gold
from kgeval.holdout import load_holdout
from kgeval.reports._stats import wilson_interval
from kgeval.review import ReviewCoverage, ReviewLog, review_coverage
from kgeval.runs import ResultsDB, RunMetadata


class Rate(BaseModel):
    """A share of events, with its Wilson 95% interval."""

    events: int
    n: int
    rate: float
    ci_low: float
    ci_high: float

    @classmethod
    def of(cls, events: int, n: int) -> Rate | None:
        if n == 0:
            return None
        low, high = wilson_interval(events, n)
        return cls(events=events, n=n, rate=events / n, ci_low=low, ci_high=high)


class StratifiedRate(BaseModel):
    """A rate over all accepts from a sample drawn by strata (judge disagreements first, then
    the accepts all judges agreed on): each stratum's audited rate weighted by its share of the
    accepts. Interval: each stratum's Wilson interval at 95% / (strata estimated) (Bonferroni),
    or its exact rate where every accept of it is audited, weighted the same way: the range of
    the weighted rate over those intervals, at least 95% together."""

    rate: float
    ci_low: float
    ci_high: float
    strata: list[str]
    """Each stratum in words: its accepts, audited, false accepts found."""


def stratified_false_accepts(counts: AuditCounts) -> StratifiedRate | None:
    """The false-accept rate over all accepts (see StratifiedRate); None when a stratum that
    has accepts has no current audit (nothing to weigh it by)."""
    strata = [
        ("judge disagreements", counts.accepted_disagreements, counts.audited_disagreements, counts.disagree_in_disagreements),
        ("answer in the query or made by a rule", counts.accepted_flagged, counts.audited_flagged, counts.disagree_in_flagged),
        ("other accepts all judges agreed on", counts.accepted - counts.accepted_disagreements - counts.accepted_flagged,
         counts.audited - counts.audited_disagreements - counts.audited_flagged,
         counts.disagree - counts.disagree_in_disagreements - counts.disagree_in_flagged),
    ]  # fmt: skip
    present = [s for s in strata if s[1]]
    if not present or any(audited == 0 for _, _, audited, _ in present):
        return None
    sampled = sum(1 for _, size, audited, _ in present if audited < size)
    rate = low = high = 0.0
    for _, size, audited, events in present:
        share, p = size / counts.accepted, events / audited
        lo, hi = wilson_interval(events, audited, alpha=0.05 / sampled) if audited < size else (p, p)
        rate, low, high = rate + share * p, low + share * lo, high + share * hi
    words = [f"{name}: {size} accepts, {audited} audited, {events} false" for name, size, audited, events in present]
    return StratifiedRate(rate=rate, ci_low=low, ci_high=high, strata=words)


OVER_ACCEPTS = 0.05
"""A rule whose audited false-accept rate has its interval's lower bound above this over-accepts."""


class RuleAudit(BaseModel):
    """One leniency rule's accepts in this run and what audits found of them."""

    rule: str
    accepts: int
    """Accepts this rule made (`AuditItem.rule`)."""
    audited: int
    """Of those, audited at the current hash."""
    false_accept_rate: Rate | None
    """False accepts found (disagree or conflict) / audited (Wilson 95%); None when none is audited."""
    warning: str | None = None
    """Set when the interval's lower bound is above 5%: the rule over-accepts."""


def rule_audits(items: dict, states: dict[tuple[str, int], AuditState]) -> list[RuleAudit]:
    """Per rule that made an accept: its audited false-accept rate, flagged above `OVER_ACCEPTS`."""
    by_rule: dict[str, list[AuditItem]] = {}
    for item in items.values():
        if item.rule is not None:
            by_rule.setdefault(item.rule, []).append(item)
    out = []
    for rule, members in sorted(by_rule.items()):
        decided = [states[m.key] for m in members if states[m.key] in ("agree", "disagree", "conflict")]
        rate = Rate.of(sum(1 for s in decided if found_false(s)), len(decided))
        warning = None
        if rate is not None and rate.ci_low > OVER_ACCEPTS:
            warning = f"this rule over-accepts: switch it off or tighten it ({rate.events} of {rate.n} audited accepts wrong, at least {rate.ci_low:.1%})"
        out.append(RuleAudit(rule=rule, accepts=len(members), audited=len(decided), false_accept_rate=rate, warning=warning))
    return out


class AuditSummary(BaseModel):
    """The judge's false-accept rate, estimated from current audits of accepted answers."""

    counts: AuditCounts
    false_accept_estimate: StratifiedRate | None = None
    """Over all the run's accepts, each stratum of the sample weighted by its share (the
    estimate to quote)."""
    false_accept_rate: Rate | None
    """False accepts found / current audits (Wilson 95%): the audited sample's rate. Judge
    disagreements are drawn first, so this over-represents hard cases; not the run's rate.
    Every rate here counts a conflict (auditors' decisions differ) as a false accept until the
    auditors resolve it (`counts.conflicted` says how many), never as agree."""
    false_accept_rate_agreed: Rate | None
    """The same over accepts all judges agreed on: the estimate free of that over-representation."""
    by_rule: list[RuleAudit] = []
    """Each leniency rule's audited false-accept rate (issue 32: accepts audited as hard as rejects)."""
    refused: str | None = None


GOLD_REFUSED = "gold refused"
AUDIT_REFUSED = "audits not shown"
REVIEW_REFUSED = "gold review not shown"
HOLDOUT_REFUSED = f"{REVIEW_REFUSED}: holdout"
"""How a note begins when a gold directory exists but fails verification (edited, forged,
half-written): the report is printed, and `kgeval report` exits 1 (DESIGN: evidence that
cannot change silently)."""


def load_gold_or_note(gold_dir: Path | None, notes: list[str]) -> dict[str, GoldEntry] | None:
    if gold_dir is None:
        notes.append("no gold directory given: audits and gold review are not shown")
        return None
    try:
        return load_gold(gold_dir)
    except KgevalError as exc:
        cause = GOLD_REFUSED if Path(gold_dir).exists() else "gold unavailable"
        notes.append(f"{cause} ({exc}): audits and gold review are not shown")
        return None


def audit_summary(db: ResultsDB, run_id: str, gold_dir: Path | None, cfg: KgevalConfig, notes: list[str]) -> AuditSummary | None:
    gold = load_gold_or_note(gold_dir, notes)
    if gold is None:
        return None
    items = accepted_items(db, run_id, gold, cfg.gold.display_items)
    try:
        with AuditLog(db.path, read_only=db.read_only) as log:
            records = log.records(run_id)
        counts = audit_counts(items, records)
    except BrokenLog as exc:  # one log for every run: whether this run's audits are intact is unknown
        notes.append(f"{AUDIT_REFUSED}: {exc}")
        return None
    agreed_n = counts.audited - counts.audited_disagreements
    agreed_events = counts.disagree - counts.disagree_in_disagreements
    return AuditSummary(
        counts=counts,
        false_accept_estimate=stratified_false_accepts(counts),
        false_accept_rate=Rate.of(counts.disagree, counts.audited),
        false_accept_rate_agreed=Rate.of(agreed_events, agreed_n),
        by_rule=rule_audits(items, audit_states(items, records)),
        refused=None if counts.audited else "no current audits: `kgeval audit sample` draws accepts to audit",
    )


def review_summary(
    db: ResultsDB, metadata: RunMetadata, gold_dir: Path | None, holdout_dir: Path | None, cfg: KgevalConfig, notes: list[str]
) -> ReviewCoverage | None:
    gold = load_gold_or_note(gold_dir, []) if gold_dir is not None else None
    if gold is None:
        return None
    root = Path(holdout_dir or metadata.holdout)
    try:
        questions = load_holdout(root).evaluated_questions()  # an excluded question's gold is not scored
    except KgevalError as exc:  # there but unreadable (damaged, unsealed decisions): a failed check, as a broken log
        cause = f"{HOLDOUT_REFUSED} {root} refused" if root.exists() else f"holdout {root} unavailable"
        notes.append(f"{cause} ({exc}): gold review coverage is not shown")
        return None
    try:
        with ReviewLog(db.path, read_only=db.read_only) as log:
            return review_coverage(questions, gold, log, cfg.review.coverage_target)
    except BrokenLog as exc:  # never read as empty: no coverage figure, and a failed check
        notes.append(f"{REVIEW_REFUSED}: {exc}")
        return None


def checklist_receipt(db: ResultsDB, run_id: str) -> dict[str, Any] | None:
    """The pre-eval checklist receipt stored with the run: item -> "pass|FAIL: observed"."""
    receipt = db.receipt(run_id)
    if receipt is None:
        return None
    return {i.item: f"{'pass' if i.passed else 'FAIL'}: {i.observed}" for i in receipt.items}
