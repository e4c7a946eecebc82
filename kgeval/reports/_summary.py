"""A run's report as data: accuracy with intervals, spread across seeds, wrong answers.

Accuracy unit: a question. Each question's verdict is the majority of its judged attempts
across seeds under the primary judge (strictly more than half correct; a tie is not correct).
Attempts that ended in an error state are never judged: they are counted and shown apart.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kgeval.reports._stats import wilson_interval
from kgeval.judges import Verdict
from kgeval.config import KgevalConfig
from kgeval.reports._oversight import AuditSummary, audit_summary, checklist_receipt, review_summary
from kgeval.reports._stats import clopper_pearson_lower, wilson_interval
from kgeval.review import ReviewCoverage
from kgeval.runs import ResultsDB, RunMetadata, RunQuestion


class Accuracy(BaseModel):
    """Share of questions answered correctly, with its Wilson 95% interval."""

    group: str = "overall"
    correct: int
    n: int
    accuracy: float | None
    ci_low: float | None
    ci_high: float | None
    at_least: float | None = None
    """"At least X% correct": the Clopper-Pearson lower bound (two-sided 95% interval's lower
    end, i.e. one-sided 97.5%; 15/15 -> 0.782). See `clopper_pearson_lower`."""

    @classmethod
    def of(cls, correct: int, n: int, group: str = "overall") -> Accuracy:
        if n == 0:
            return cls(group=group, correct=0, n=0, accuracy=None, ci_low=None, ci_high=None)
        low, high = wilson_interval(correct, n)
        return cls(
            group=group, correct=correct, n=n, accuracy=correct / n, ci_low=low, ci_high=high,
            at_least=clopper_pearson_lower(correct, n),
        )


class SeedSpread(BaseModel):
    """Accuracy of each seed's attempts alone; refused with a single seed."""

    per_seed: list[Accuracy]
    min: float | None = None
    max: float | None = None
    stdev: float | None = None
    refused: str | None = None


class QuestionSeeds(BaseModel):
    kg: str
    question_id: str
    correct_seeds: int
    judged_seeds: int


class Consistency(BaseModel):
    """Per question: did every seed get the same verdict? Refused with a single seed."""

    questions: int = 0
    """Questions with at least two judged seeds."""
    consistent: Accuracy | None = None
    """Share of those questions whose seeds all agree (Wilson 95% interval)."""
    inconsistent: list[QuestionSeeds] = []
    refused: str | None = None


class WrongAnswer(BaseModel):
    kg: str
    question_id: str
    question: str
    seeds_wrong: list[int]
    seeds_judged: int
    reason: str
    """The primary judge's reason on the first wrong seed."""


class DisagreementItem(BaseModel):
    question_id: str
    recall: float | None
    """Recall reported on the question's first seed (the execution judge's when it is one of
    the pair), None when neither judge reported it."""
    strict_subset: str | None = None
    """"12 of 400" when that verdict found the answer a strict subset of the gold."""


class Disagreement(BaseModel):
    """Questions one judge accepts and another rejects (majority across seeds for each)."""

    accepts: str
    rejects: str
    questions: list[DisagreementItem]


class RunReport(BaseModel):
    metadata: RunMetadata
    status: str
    attempts: int
    judged_attempts: int
    errors: dict[str, int]
    """Attempts in each error state (never judged, never in accuracy)."""
    overall: Accuracy
    by_kg: list[Accuracy]
    by_domain: list[Accuracy]
    by_qtype: list[Accuracy]
    seed_spread: SeedSpread
    honeypots: list[Accuracy]
    wrong: list[WrongAnswer]
    by_judge: list[Accuracy] = []
    """Overall accuracy under every enabled judge (group: judge name and version); only the
    primary judge's counts as the run's accuracy."""
    disagreements: list[Disagreement] = []
    """For each ordered pair of enabled judges: questions the first accepts and the second rejects."""
    consistency: Consistency = Consistency(refused="not computed")
    receipt: dict[str, Any] | None = None
    """The pre-eval checklist receipt stored with the run, when there is one."""
    audit: AuditSummary | None = None
    """The judge's false-accept rate from audits of accepts, at current item hashes."""
    review: ReviewCoverage | None = None
    """Gold review coverage of the run's holdout against the configured target."""
    notes: list[str] = []
    """What the report could not include, and why."""


def build_report(
    db: ResultsDB,
    run_id: str,
    *,
    gold_dir: Path | None = None,
    holdout_dir: Path | None = None,
    config: KgevalConfig | None = None,
) -> RunReport:
    """The run's report. With `gold_dir`, it includes audits (current item hashes) and gold
    review coverage of the holdout (`holdout_dir`, by default the run's own)."""
    report = _core_report(db, run_id)
    cfg = config or KgevalConfig()
    notes: list[str] = []
    audit = audit_summary(db, run_id, gold_dir, cfg, notes)
    review = review_summary(db, report.metadata, gold_dir, holdout_dir, cfg, notes)
    return report.model_copy(update={"receipt": checklist_receipt(db, run_id), "audit": audit, "review": review, "notes": notes})


def _core_report(db: ResultsDB, run_id: str) -> RunReport:
    metadata = db.metadata(run_id)
    questions = {q.question_id: q for q in db.questions(run_id)}
    attempts = db.attempts(run_id)
    primary = metadata.primary_judge
    by_judge = _verdicts_by_judge(db, run_id, metadata)
    outcomes = {qid: {s: (v.correct, v.reason) for s, v in by_seed.items()} for qid, by_seed in by_judge[primary].items()}
    majority = {qid: _majority(by_seed) for qid, by_seed in outcomes.items()}
    return RunReport(
        metadata=metadata,
        status=db.status(run_id),
        attempts=len(attempts),
        judged_attempts=sum(len(v) for v in outcomes.values()),
        errors=dict(Counter(a.error_kind or "other" for a in attempts if a.state == "error")),
        overall=Accuracy.of(sum(majority.values()), len(majority)),
        by_kg=_grouped(majority, questions, lambda q: q.kg),
        by_domain=_grouped(majority, questions, lambda q: q.domain),
        by_qtype=_grouped(majority, questions, lambda q: q.qtype),
        seed_spread=_seed_spread(outcomes, metadata.seeds),
        consistency=_consistency(outcomes, questions, metadata.seeds),
        honeypots=[Accuracy.of(int(majority[q]), 1, q) for q in sorted(majority) if questions[q].honeypot],
        wrong=_wrong_answers(outcomes, majority, questions),
        by_judge=[_judge_accuracy(name, metadata.judge_versions[name], v) for name, v in by_judge.items()],
        disagreements=_disagreements(by_judge),
    )


VerdictsBySeed = dict[str, dict[int, Verdict]]


def _verdicts_by_judge(db: ResultsDB, run_id: str, metadata: RunMetadata) -> dict[str, VerdictsBySeed]:
    """Each enabled judge's verdicts by question and seed, at the version the run recorded:
    a verdict of another version of a judge never enters a figure."""
    by_judge: dict[str, VerdictsBySeed] = {name: defaultdict(dict) for name in metadata.judge_versions}
    for qid, seed, verdict in db.verdicts(run_id):
        if metadata.judge_versions.get(verdict.judge) == verdict.version:
            by_judge[verdict.judge][qid][seed] = verdict
    return by_judge


def _judge_accuracy(name: str, version: str, verdicts: VerdictsBySeed) -> Accuracy:
    majority = [_majority({s: (v.correct, "") for s, v in by_seed.items()}) for by_seed in verdicts.values()]
    return Accuracy.of(sum(majority), len(majority), f"{name} ({version})")


def _disagreements(by_judge: dict[str, VerdictsBySeed]) -> list[Disagreement]:
    majority = {
        name: {qid: _majority({s: (v.correct, "") for s, v in by_seed.items()}) for qid, by_seed in verdicts.items()}
        for name, verdicts in by_judge.items()
    }
    out = []
    for accepts in by_judge:
        for rejects in by_judge:
            if accepts == rejects:
                continue
            qids = sorted(q for q, ok in majority[accepts].items() if ok and majority[rejects].get(q) is False)
            items = [_disagreement_item(q, by_judge[accepts][q], by_judge[rejects][q], accepts, rejects) for q in qids]
            out.append(Disagreement(accepts=accepts, rejects=rejects, questions=items))
    return out


def _disagreement_item(qid: str, a: dict[int, Verdict], b: dict[int, Verdict], a_name: str, b_name: str) -> DisagreementItem:
    order = [b, a] if b_name == "execution" or a_name != "execution" else [a, b]
    for verdicts in order:
        for seed in sorted(verdicts):
            details = verdicts[seed].details
            if "recall" in details:
                return DisagreementItem(question_id=qid, recall=details["recall"], strict_subset=details.get("strict_subset"))
    return DisagreementItem(question_id=qid, recall=None)


def _majority(by_seed: dict[int, tuple[bool, str]]) -> bool:
    correct = sum(1 for ok, _ in by_seed.values() if ok)
    return correct * 2 > len(by_seed)


def _grouped(majority: dict[str, bool], questions: dict[str, RunQuestion], key) -> list[Accuracy]:  # noqa: ANN001
    groups: dict[str, list[bool]] = defaultdict(list)
    for qid, ok in majority.items():
        groups[key(questions[qid])].append(ok)
    return [Accuracy.of(sum(v), len(v), g) for g, v in sorted(groups.items())]


def _seed_spread(outcomes: dict[str, dict[int, tuple[bool, str]]], seeds: list[int]) -> SeedSpread:
    per_seed = []
    for seed in seeds:
        judged = [by_seed[seed][0] for by_seed in outcomes.values() if seed in by_seed]
        per_seed.append(Accuracy.of(sum(judged), len(judged), f"seed {seed}"))
    if len(seeds) < 2:
        return SeedSpread(per_seed=per_seed, refused="one seed: spread across seeds needs at least two")
    values = [a.accuracy for a in per_seed if a.accuracy is not None]
    if len(values) < 2:
        return SeedSpread(per_seed=per_seed, refused="fewer than two seeds have judged attempts")
    return SeedSpread(per_seed=per_seed, min=min(values), max=max(values), stdev=statistics.stdev(values))


def _consistency(outcomes, questions, seeds: list[int]) -> Consistency:  # noqa: ANN001
    if len(seeds) < 2:
        return Consistency(refused="one seed: consistency across seeds needs at least two")
    multi = {qid: by_seed for qid, by_seed in outcomes.items() if len(by_seed) >= 2}
    if not multi:
        return Consistency(refused="no question has two or more judged seeds")
    inconsistent = []
    for qid in sorted(multi):
        correct = sum(1 for ok, _ in multi[qid].values() if ok)
        if 0 < correct < len(multi[qid]):
            inconsistent.append(QuestionSeeds(kg=questions[qid].kg, question_id=qid, correct_seeds=correct, judged_seeds=len(multi[qid])))
    agreed = len(multi) - len(inconsistent)
    return Consistency(questions=len(multi), consistent=Accuracy.of(agreed, len(multi), "consistent questions"), inconsistent=inconsistent)


def _wrong_answers(outcomes, majority, questions) -> list[WrongAnswer]:  # noqa: ANN001
    wrong = []
    for qid in sorted(q for q, ok in majority.items() if not ok):
        by_seed = outcomes[qid]
        seeds_wrong = sorted(s for s, (ok, _) in by_seed.items() if not ok)
        q = questions[qid]
        wrong.append(
            WrongAnswer(
                kg=q.kg,
                question_id=qid,
                question=q.question,
                seeds_wrong=seeds_wrong,
                seeds_judged=len(by_seed),
                reason=by_seed[seeds_wrong[0]][1] if seeds_wrong else "tie across seeds",
            )
        )
    return wrong
