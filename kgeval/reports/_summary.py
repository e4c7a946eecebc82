"""A run's report as data: accuracy with intervals, spread across seeds, wrong answers.

Accuracy unit: a question. Each question's verdict is the majority of its judged attempts
across seeds under the primary judge (strictly more than half correct; a tie is not correct).
The model's own failures (invalid SPARQL, a refused query, a candidate timeout) are judged
wrong: they stay in the denominator, and the wrong answers are broken down by cause. Attempts
that ended in a harness error state are never judged: they are excluded, listed, and counted,
and the report gives the bound "accuracy if every excluded attempt were wrong". Incomplete
attempts (cut off, but judgeable) are judged and flagged. When harness errors plus cut-off
attempts exceed `run.max_error_share` of all attempts, no accuracy is published: the report is
a harness report naming the causes (DESIGN invariant 5).

`build_report(..., judge=NAME)` gives the figures of any enabled judge; the pre-registered
primary judge stays named as such.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kgeval.config import KgevalConfig, RunConfig
from kgeval.errors import InputError, KgevalError
from kgeval.holdout import load_holdout, natural_key
from kgeval.judges import FAILURE_WORDS, RULES, Verdict
from kgeval.reports._leniency import LENIENCY_JUDGE, AnswerInQuery, FigureGaps, RuleAccepts, answer_in_query_counts, figure_gaps, leniency_outcomes, older_standard_note, rule_accepts
from kgeval.reports._oversight import AUDIT_REFUSED, GOLD_REFUSED, REVIEW_REFUSED, AuditSummary, audit_summary, checklist_receipt, review_summary
from kgeval.reports._stats import clopper_pearson_lower, wilson_interval
from kgeval.reports._suites import SuiteFigures, suite_figures
from kgeval.review import EmptyGold, ReviewCoverage, describe_empty_golds
from kgeval.runs import Attempt, ResultsDB, RunMetadata, RunQuestion


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


WrongCause = str
"""Why a question is wrong: "wrong_result" (its query ran and its result is wrong), or a failure
path: "invalid_sparql", "refused", "candidate_timeout", "over_budget", "vacuous"."""


class WrongAnswer(BaseModel):
    kg: str
    question_id: str
    question: str
    seeds_wrong: list[int]
    seeds_judged: int
    reason: str
    """The judge's reason on the first wrong seed."""
    cause: WrongCause = "wrong_result"
    """The most common cause among the wrong seeds (ties: the first in `CAUSE_ORDER`)."""


class CauseCount(BaseModel):
    """Wrong questions of one cause within a group (overall or one KG)."""

    group: str
    cause: WrongCause
    questions: int
    share: float
    """Of the group's judged questions."""


class MacroPRF(BaseModel):
    """Macro-averaged precision, recall and F1 (TEXT2SPARQL style): each question's figures
    (mean over its judged seeds), then the mean over questions."""

    group: str
    n: int
    precision: float | None
    recall: float | None
    f1: float | None


class Excluded(BaseModel):
    """One attempt excluded from accuracy (a harness error), and why."""

    kg: str
    question_id: str
    seed: int
    kind: str
    error: str


class RuleChange(BaseModel):
    """How many verdicts one rule decided in this run, by judge ("label_for_entity: 12 accepts")."""

    judge: str
    rule: str
    accepts: int = 0
    rejects: int = 0


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


class HarnessIssue(BaseModel):
    """Attempts that ended in one error kind, or cut off: a cause the harness report names."""

    cause: str
    """An error kind, or "incomplete" (cut off at the output limit, judged and flagged)."""
    attempts: int
    examples: list[str]
    """Up to three "kg/question seed N: message" lines."""


class HarnessReport(BaseModel):
    """How the run itself went: terminal states, retries, and whether accuracy may be published."""

    attempts: int
    expected_attempts: int
    """Questions x seeds: fewer attempts mean the run is not finished."""
    answered: int
    incomplete: int
    errors: int
    problem_share: float
    """(errors + incomplete) / attempts."""
    max_problem_share: float
    retried_attempts: int
    """Attempts that needed more than one try."""
    tries: int
    issues: list[HarnessIssue]
    withheld: str | None
    """Why no accuracy is published; None when it is."""


class RunReport(BaseModel):
    metadata: RunMetadata
    status: str
    attempts: int
    judged_attempts: int
    errors: dict[str, int]
    """Attempts in each error state (never judged, never in accuracy)."""
    incomplete: int = 0
    """Attempts cut off at the output limit but judged (flagged)."""
    harness: HarnessReport
    overall: Accuracy | None
    """None when the harness report withholds accuracy."""
    by_kg: list[Accuracy]
    by_domain: list[Accuracy]
    by_qtype: list[Accuracy]
    seed_spread: SeedSpread | None
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
    gold_refused: str | None = None
    """Set when the gold directory given exists but failed verification: why (also a note)."""
    audit_refused: str | None = None
    """Why no audit figure is shown although audits may exist (the audit log is broken, or a
    stored sample is not whole)."""
    review_refused: str | None = None
    """Why no gold review coverage is shown although reviews may exist (the review log is broken)."""
    judge: str = ""
    """The judge whose figures these are; the pre-registered primary is `metadata.primary_judge`."""
    wrong_causes: list[CauseCount] = []
    """Wrong questions by cause, overall and per KG, with counts and shares."""
    excluded: list[Excluded] = []
    """Every attempt excluded from accuracy (harness errors), with its kind and message."""
    if_excluded_wrong: Accuracy | None = None
    """The bound: accuracy if every excluded attempt were judged wrong (questions with only
    excluded attempts enter the denominator as wrong)."""
    without_empty_gold: Accuracy | None = None
    """Accuracy over the questions whose gold is not empty-like; None when the report was not
    given the gold the run was judged on (its verdicts cannot tell every kind)."""
    empty_gold_questions: int = 0
    """Judged questions whose gold is empty-like (`kgeval.review.empty_golds`: what `gold show
    --empty` lists and the checklist counts), read from the run's gold."""
    empty_golds_counted: str | None = None
    """The holdout's empty-like golds counted by kind, as `gold show --empty` and the checklist
    count them (`kgeval.review.describe_empty_golds`)."""
    macro_prf: list[MacroPRF] = []
    """Macro precision/recall/F1, overall and per KG."""
    rule_changes: list[RuleChange] = []
    """Per judge and rule, the verdicts the rule decided in this run."""
    rules_in_force: list[str] = []
    """The counting rules of this run, stated (candidate timeout, error share)."""
    standard_execution_accuracy: Accuracy | None = None
    """The field's figure (Spider's execution accuracy): the candidate's result against the gold's
    by the field's comparator (the same number of columns in any order, rows as multisets, in order
    where the question asks) after IRI/literal normalization, no rule and no answer-list reading,
    an empty result equal to an empty gold (no vacuous check). From the execution judge's
    verdicts; None when the run has none with leniency figures (see notes)."""
    lenient_accuracy: Accuracy | None = None
    """The figure with every rule and reading on (DESIGN invariant 13)."""
    figure_gaps: FigureGaps | None = None
    """The questions on which standard, the execution judge as configured and lenient differ."""
    rule_accepts: dict[str, RuleAccepts] = {}
    """Per rule, on or off: the questions it alone accepts, the others as configured."""
    answer_in_query: AnswerInQuery = AnswerInQuery()
    """Attempts whose query names IRIs of the gold's answer the reference query does not."""
    test_suite_accuracy: Accuracy | None = None
    """Questions accepted AND passed on every neighbour KG of their test suite (Zhong, Yu &
    Klein 2020; `_suites`); None when the run was judged without suites."""
    suites: SuiteFigures | None = None
    """Accepts the suites could not check, and the coincidental accepts (accepted on the KG,
    rejected by the suite) with the neighbour where each diverges."""


def build_report(
    db: ResultsDB,
    run_id: str,
    *,
    gold_dir: Path | None = None,
    holdout_dir: Path | None = None,
    config: KgevalConfig | None = None,
    judge: str | None = None,
) -> RunReport:
    """The run's report, with the figures of `judge` (default: the pre-registered primary). With
    `gold_dir`, it includes audits (current item hashes) and gold review coverage of the holdout
    (`holdout_dir`, by default the run's own)."""
    report = _core_report(db, run_id, judge, _empty_golds(db.metadata(run_id), gold_dir, holdout_dir))
    cfg = config or KgevalConfig()
    notes: list[str] = []
    audit = audit_summary(db, run_id, gold_dir, cfg, notes)
    review = review_summary(db, report.metadata, gold_dir, holdout_dir, cfg, notes)
    refused = next((n for n in notes if n.startswith(GOLD_REFUSED)), None)
    audit_refused = next((n for n in notes if n.startswith(AUDIT_REFUSED)), None)
    review_refused = next((n for n in notes if n.startswith(REVIEW_REFUSED)), None)
    if report.overall is not None and report.standard_execution_accuracy is None:
        notes.append(
            "standard and lenient figures not shown: no execution-judge verdict of this run records them "
            "(judged by a kgeval older than execution judge logic 12, or the execution judge was not enabled)"
        )
    older = older_standard_note(report.metadata.judge_versions)
    if report.standard_execution_accuracy is not None and older:
        notes.append(older)
    update = {"receipt": checklist_receipt(db, run_id), "audit": audit, "review": review, "notes": notes, "gold_refused": refused, "audit_refused": audit_refused,
              "review_refused": review_refused}
    return report.model_copy(update=update)


def _empty_golds(metadata: RunMetadata, gold_dir: Path | None, holdout_dir: Path | None) -> list[EmptyGold] | None:
    """The empty-like golds, as `gold show --empty` lists them and the checklist counts them
    (`kgeval.review.empty_golds`: empty, one row of zeros or unbound cells, a false ASK), read
    from `gold_dir` when it is the gold the run was judged on; else None (no figure: a verdict
    cannot tell every kind, and the figure has one meaning)."""
    from kgeval.gold import gold_manifest_sha256
    from kgeval.review import empty_golds

    if gold_dir is None:
        return None
    try:
        if gold_manifest_sha256(gold_dir) != metadata.gold_manifest_sha256:
            return None
        return empty_golds(gold_dir, load_holdout(Path(holdout_dir or metadata.holdout)))
    except (KgevalError, OSError):
        return None


def _core_report(db: ResultsDB, run_id: str, judge: str | None = None, empty: list[EmptyGold] | None = None) -> RunReport:
    metadata = db.metadata(run_id)
    questions = {q.question_id: q for q in db.questions(run_id)}
    attempts = db.attempts(run_id)
    harness = build_harness_report(metadata, attempts, len(questions))
    primary = judge or metadata.primary_judge
    if primary not in metadata.judge_versions:
        raise InputError(f"judge {primary!r} was not enabled in run {run_id}; enabled: {', '.join(sorted(metadata.judge_versions))}")
    by_judge = _verdicts_by_judge(db, run_id, metadata)
    outcomes = {qid: {s: (v.correct, v.reason) for s, v in by_seed.items()} for qid, by_seed in by_judge[primary].items()}
    majority = {qid: _majority(by_seed) for qid, by_seed in outcomes.items()}
    common = {
        "metadata": metadata,
        "status": db.status(run_id),
        "attempts": len(attempts),
        "judged_attempts": sum(len(v) for v in outcomes.values()),
        "errors": dict(Counter(a.error_kind or "other" for a in attempts if a.state == "error")),
        "incomplete": harness.incomplete,
        "harness": harness,
        "judge": primary,
        "excluded": [Excluded(kg=a.kg, question_id=a.question_id, seed=a.seed, kind=a.error_kind or "other", error=a.error or "") for a in attempts if a.state == "error"],
        "rules_in_force": rules_in_force(metadata),
    }
    if harness.withheld:
        empty: dict = {"by_kg": [], "by_domain": [], "by_qtype": [], "seed_spread": None, "honeypots": [], "wrong": []}
        return RunReport(**common, overall=None, **empty, consistency=Consistency(refused="no accuracy published: harness report"))
    verdicts = by_judge[primary]
    wrong = _wrong_answers(outcomes, majority, questions, verdicts)
    empty_gold = {g.question_id for g in empty or []} & verdicts.keys()
    kept = {qid: ok for qid, ok in majority.items() if qid not in empty_gold}
    return RunReport(
        **common,
        **_leniency_fields(by_judge, metadata, attempts),
        wrong_causes=_cause_counts(wrong, majority, questions),
        if_excluded_wrong=_bound(majority, outcomes, attempts),
        without_empty_gold=None if empty is None else Accuracy.of(sum(kept.values()), len(kept), "without empty-like golds"),
        empty_gold_questions=len(empty_gold),
        empty_golds_counted=None if empty is None else describe_empty_golds(empty),
        macro_prf=_macro_prf(verdicts, questions),
        rule_changes=_rule_changes(by_judge),
        **_suite_fields(verdicts, questions, metadata),
        overall=Accuracy.of(sum(majority.values()), len(majority)),
        by_kg=_grouped(majority, questions, lambda q: q.kg),
        by_domain=_grouped(majority, questions, lambda q: q.domain),
        by_qtype=_grouped(majority, questions, lambda q: q.qtype),
        seed_spread=_seed_spread(outcomes, metadata.seeds),
        consistency=_consistency(outcomes, questions, metadata.seeds),
        honeypots=[Accuracy.of(int(majority[q]), 1, q) for q in sorted(majority, key=natural_key) if questions[q].honeypot],
        wrong=wrong,
        by_judge=[_judge_accuracy(name, metadata.judge_versions[name], v) for name, v in by_judge.items()],
        disagreements=_disagreements(by_judge),
    )


def _leniency_fields(by_judge: dict[str, VerdictsBySeed], metadata: RunMetadata, attempts: list[Attempt]) -> dict:
    """The report's leniency figures (`_leniency`), from the execution judge's verdicts."""
    fields: dict = {"answer_in_query": answer_in_query_counts(attempts, by_judge[metadata.primary_judge])}
    verdicts = by_judge.get(LENIENCY_JUDGE)
    outcomes = leniency_outcomes(verdicts) if verdicts else None
    if outcomes is None:
        return fields
    standard, lenient = outcomes
    fields["standard_execution_accuracy"] = Accuracy.of(sum(standard.values()), len(standard), "standard execution accuracy")
    fields["lenient_accuracy"] = Accuracy.of(sum(lenient.values()), len(lenient), "every rule and reading on")
    fields["rule_accepts"] = rule_accepts(verdicts, metadata)
    fields["figure_gaps"] = figure_gaps(verdicts, standard, lenient)
    return fields


def _suite_fields(verdicts: VerdictsBySeed, questions: dict[str, RunQuestion], metadata: RunMetadata) -> dict:
    figures = suite_figures(verdicts, {qid: q.kg for qid, q in questions.items()}, metadata)
    if figures is None:
        return {}
    return {"suites": figures, "test_suite_accuracy": Accuracy.of(figures.correct, figures.n, "test-suite accuracy")}


def withheld_accuracy(db: ResultsDB, run_id: str) -> str | None:
    """Why the run's report withholds its accuracy (its harness report), or None."""
    return build_harness_report(db.metadata(run_id), db.attempts(run_id), len(db.questions(run_id))).withheld


def run_headline(db: ResultsDB, run_id: str) -> tuple[HarnessReport, Accuracy | None]:
    """What `kgeval run` prints as it ends: the harness counts and the primary judge's accuracy
    with its Wilson interval (None when withheld), from the verdicts and majority `build_report`
    reads, without what only the report shows: the Clopper-Pearson bound (its scipy import and
    the leniency figures took 0.4-0.6 s of CPU of a run's end), audits, breakdowns."""
    metadata = db.metadata(run_id)
    harness = build_harness_report(metadata, db.attempts(run_id), len(db.questions(run_id)))
    if harness.withheld:
        return harness, None
    verdicts = _verdicts_by_judge(db, run_id, metadata)[metadata.primary_judge]
    majority = [_majority({s: (v.correct, v.reason) for s, v in by_seed.items()}) for by_seed in verdicts.values()]
    if not majority:
        return harness, Accuracy.of(0, 0)
    low, high = wilson_interval(sum(majority), len(majority))
    return harness, Accuracy(group="overall", correct=sum(majority), n=len(majority), accuracy=sum(majority) / len(majority), ci_low=low, ci_high=high)


def build_harness_report(metadata: RunMetadata, attempts: list[Attempt], n_questions: int) -> HarnessReport:
    """Terminal states and their causes; withholds accuracy above the configured problem share."""
    limit = RunConfig.model_validate(metadata.config.get("run", {})).max_error_share
    by_cause: dict[str, list[Attempt]] = defaultdict(list)
    for a in attempts:
        if a.state != "answered":
            by_cause[a.error_kind if a.state == "error" else "incomplete"].append(a)
    problems = sum(len(v) for v in by_cause.values())
    share = problems / len(attempts) if attempts else 0.0
    issues = [
        HarnessIssue(cause=cause, attempts=len(items), examples=[f"{a.kg}/{a.question_id} seed {a.seed}: {a.error or a.finish_reason}" for a in items[:3]])
        for cause, items in sorted(by_cause.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]
    withheld = None
    if not attempts:
        withheld = "no attempts recorded"
    elif share > limit:
        causes = ", ".join(f"{i.cause} {i.attempts}" for i in issues)
        withheld = f"{problems} of {len(attempts)} attempts ({share:.1%}) ended in an error or cut off, above the {limit:.0%} limit: {causes}"
    return HarnessReport(
        attempts=len(attempts),
        expected_attempts=n_questions * len(metadata.seeds),
        answered=sum(1 for a in attempts if a.state == "answered"),
        incomplete=len(by_cause.get("incomplete", [])),
        errors=sum(1 for a in attempts if a.state == "error"),
        problem_share=share,
        max_problem_share=limit,
        retried_attempts=sum(1 for a in attempts if len(a.tries) > 1),
        tries=sum(max(len(a.tries), 1) for a in attempts),
        issues=issues,
        withheld=withheld,
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
            qids = sorted((q for q, ok in majority[accepts].items() if ok and majority[rejects].get(q) is False), key=natural_key)
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
    return [Accuracy.of(sum(groups[g]), len(groups[g]), g) for g in sorted(groups, key=natural_key)]


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
    for qid in sorted(multi, key=natural_key):
        correct = sum(1 for ok, _ in multi[qid].values() if ok)
        if 0 < correct < len(multi[qid]):
            inconsistent.append(QuestionSeeds(kg=questions[qid].kg, question_id=qid, correct_seeds=correct, judged_seeds=len(multi[qid])))
    agreed = len(multi) - len(inconsistent)
    return Consistency(questions=len(multi), consistent=Accuracy.of(agreed, len(multi), "consistent questions"), inconsistent=inconsistent)


def _wrong_answers(outcomes, majority, questions, verdicts: VerdictsBySeed) -> list[WrongAnswer]:  # noqa: ANN001
    wrong = []
    for qid in sorted((q for q, ok in majority.items() if not ok), key=natural_key):
        by_seed = outcomes[qid]
        seeds_wrong = sorted(s for s, (ok, _) in by_seed.items() if not ok)
        q = questions[qid]
        causes = Counter(cause_of(verdicts[qid][s]) for s in seeds_wrong)
        cause = min(causes, key=lambda c: (-causes[c], CAUSE_ORDER.index(c))) if causes else "wrong_result"
        wrong.append(
            WrongAnswer(
                kg=q.kg,
                question_id=qid,
                question=q.question,
                seeds_wrong=seeds_wrong,
                seeds_judged=len(by_seed),
                reason=by_seed[seeds_wrong[0]][1] if seeds_wrong else "tie across seeds",
                cause=cause,
            )
        )
    return wrong


CAUSE_ORDER: tuple[WrongCause, ...] = ("wrong_result", *FAILURE_WORDS)
"""Causes of wrong answers, in the order reports list them."""
CAUSE_WORDS = {"wrong_result": "wrong result", **FAILURE_WORDS}


def cause_of(verdict: Verdict) -> WrongCause:
    """A wrong verdict's cause: its failure path, or a wrong result."""
    return verdict.path if verdict.path in FAILURE_WORDS else "wrong_result"


def _cause_counts(wrong: list[WrongAnswer], majority: dict[str, bool], questions: dict[str, RunQuestion]) -> list[CauseCount]:
    """Wrong questions by cause, overall then per KG; shares of each group's judged questions."""
    sizes = Counter(questions[q].kg for q in majority)
    groups = {"overall": len(majority), **{kg: sizes[kg] for kg in sorted(sizes, key=natural_key)}}
    counts: Counter[tuple[str, str]] = Counter()
    for w in wrong:
        counts[("overall", w.cause)] += 1
        counts[(w.kg, w.cause)] += 1
    return [
        CauseCount(group=group, cause=cause, questions=counts[(group, cause)], share=counts[(group, cause)] / n)
        for group, n in groups.items()
        for cause in CAUSE_ORDER
        if counts[(group, cause)] or (group == "overall" and cause == "wrong_result")
    ]


def _bound(majority: dict[str, bool], outcomes: dict, attempts: list[Attempt]) -> Accuracy:
    """Accuracy if every excluded attempt were a wrong seed of its question."""
    excluded = Counter(a.question_id for a in attempts if a.state == "error")
    correct, n = 0, 0
    for qid in majority.keys() | excluded.keys():
        judged = outcomes.get(qid, {})
        right = sum(1 for ok, _ in judged.values() if ok)
        correct += right * 2 > len(judged) + excluded[qid]
        n += 1
    return Accuracy.of(correct, n, "if every excluded attempt were wrong")


def _macro_prf(verdicts: VerdictsBySeed, questions: dict[str, RunQuestion]) -> list[MacroPRF]:
    per_question: dict[str, tuple[float, float, float]] = {}
    for qid, by_seed in verdicts.items():
        figures = [(v.details["precision"], v.details["recall"], v.details["f1"]) for v in by_seed.values() if "f1" in v.details]
        if figures:
            per_question[qid] = tuple(statistics.fmean(f[i] for f in figures) for i in range(3))  # type: ignore[assignment]
    groups: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for qid, prf in per_question.items():
        groups["overall"].append(prf)
        groups[questions[qid].kg].append(prf)
    out = []
    for group in ["overall", *sorted((g for g in groups if g != "overall"), key=natural_key)]:
        rows = groups.get(group, [])
        means = [statistics.fmean(r[i] for r in rows) if rows else None for i in range(3)]
        out.append(MacroPRF(group=group, n=len(rows), precision=means[0], recall=means[1], f1=means[2]))
    return out


def _rule_changes(by_judge: dict[str, VerdictsBySeed]) -> list[RuleChange]:
    """Per judge, the verdicts each named rule decided (accepts, the comparator's rules among
    them), the rejects for an extra column or repeated rows, and the vacuous rejects."""
    changes = []
    for judge, verdicts in by_judge.items():
        counts: Counter[tuple[str, bool]] = Counter()
        for by_seed in verdicts.values():
            for v in by_seed.values():
                if v.details.get("rule") in RULES:
                    counts[(v.details["rule"], v.correct)] += 1
                for rule in v.details.get("comparator_rules", ()):  # the comparison's own rules (issue 40)
                    counts[(rule, v.correct)] += 1
                if v.path in ("extra_columns", "duplicates"):  # rejected for what that rule, off, would accept
                    counts[(v.path, False)] += 1
                if v.path == "vacuous":
                    counts[("vacuous", False)] += 1
                if v.details.get("predeclared_prefixes"):
                    counts[("predeclared_prefixes", v.correct)] += 1
        for rule in (*RULES, "vacuous", "predeclared_prefixes"):
            if counts[(rule, True)] or counts[(rule, False)]:
                changes.append(RuleChange(judge=judge, rule=rule, accepts=counts[(rule, True)], rejects=counts[(rule, False)]))
    return changes


def rules_in_force(metadata: RunMetadata) -> list[str]:
    """The counting rules the run used, stated in words."""
    run = RunConfig.model_validate(metadata.config.get("run", {}))
    timeout = (
        f"a candidate query running past {run.candidate_timeout_s:g} s counts as "
        + ("WRONG (a model failure, judged)" if run.candidate_timeout_counts_as == "wrong" else "a harness ERROR (excluded, counted)")
        + f" (run.candidate_timeout_counts_as: {run.candidate_timeout_counts_as})"
    )
    return [
        "model failures (invalid SPARQL, refused by the read-only guard, over the candidate budget) are judged wrong and stay in the denominator",
        timeout,
        f"harness failures (transport, rate limits, 5xx, the endpoint's timeout, empty or filtered output, missing replay records, "
        f"store failures) are excluded and counted; above {run.max_error_share:.0%} of attempts no accuracy is published",
    ]
