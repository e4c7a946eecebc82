"""Leniency in a report (DESIGN invariant 13): the field's standard figure and the all-rules
figure beside the headline, the questions on which they differ, what each rule alone accepts,
and the attempts whose query names the answer.

Read from the execution judge's verdicts (`details["leniency"]`, `kgeval.judges._leniency`),
per question by the majority of its seeds, as the headline is. A rule's count is the questions
it alone decides with the others as configured: switched on, the questions it accepts that are
wrong without it; switched off, the questions that switching it on alone would make right.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from kgeval.config import ExecutionJudgeConfig
from kgeval.holdout import natural_key
from kgeval.judges import RULES, Verdict, rules_on
from kgeval.runs import Attempt, RunMetadata

LENIENCY_JUDGE = "execution"
"""The judge whose verdicts carry the leniency figures."""
STANDARD_COMPARATOR_LOGIC = 13
"""The execution judge's logic version from which its standard figure is the field's comparator
(columns counted, rows as multisets: issue 40); before it, rows compared as sets, extra columns ignored."""


class RuleAccepts(BaseModel):
    """What one rule is worth in this run, the others as configured."""

    questions: int
    """Questions this rule alone accepts: on, wrong without it; off, right with it switched on."""
    on: bool
    """Whether the rule was on in this run's judge configuration."""
    which: list[str]
    """Those questions' ids."""
    switched: float | None = None
    """The headline accuracy with this rule switched the other way (None: nothing judged)."""


class FigureGaps(BaseModel):
    """How the three figures differ, question by question (each by the majority of its seeds):
    `standard` (the field's comparator, no vacuous check), the execution judge as configured (the
    headline when it is the primary judge) and `lenient` (every rule on)."""

    above_standard: list[str] = []
    """Questions the judge as configured accepts and the standard comparison rejects: accepted by
    a rule that is on (`rule_accepts` names which)."""
    below_standard: list[str] = []
    """Questions the standard comparison accepts and the judge as configured rejects: the vacuous
    check (an empty or zero answer from vocabulary the KG lacks), which the standard figure lacks."""
    below_lenient: list[str] = []
    """Questions only a rule switched off would accept (`rule_accepts` names which)."""
    standard_only: list[str] = []
    """Questions the standard comparison accepts and the lenient one rejects: why `lenient` can be
    below `standard`."""
    standard_only_vacuous: int = 0
    """Of `standard_only`, the questions whose answer the vacuous check rejected (majority of seeds)."""


class AnswerInQuery(BaseModel):
    """Attempts whose candidate query names, as constants, IRIs of the gold's answer that the
    reference query does not name (`answer_in_query`): not wrong by this alone, audited first."""

    attempts: int = 0
    questions: int = 0
    accepted: int = 0
    """Of those attempts, how many the primary judge accepted."""
    which: list[str] = []
    """Their question ids."""


Outcome = Callable[[Verdict], bool]


def _majority(by_seed: dict[int, Verdict], ok: Outcome) -> bool:
    return sum(1 for v in by_seed.values() if ok(v)) * 2 > len(by_seed)


def _figures(v: Verdict) -> dict:
    return v.details.get("leniency") or {}


def leniency_outcomes(verdicts: dict[str, dict[int, Verdict]]) -> tuple[dict[str, bool], dict[str, bool]] | None:
    """Per question: (standard, lenient) by the majority of its seeds; None when a verdict has no
    leniency figures (a run judged before they were recorded)."""
    if any("leniency" not in v.details for by_seed in verdicts.values() for v in by_seed.values()):
        return None
    standard = {q: _majority(by_seed, lambda v: bool(_figures(v)["standard"])) for q, by_seed in verdicts.items()}
    lenient = {q: _majority(by_seed, lambda v: bool(_figures(v)["lenient"])) for q, by_seed in verdicts.items()}
    return standard, lenient


def older_standard_note(judge_versions: dict[str, str]) -> str | None:
    """What the standard figure of a run judged by an execution judge older than the field's
    comparator counts (`STANDARD_COMPARATOR_LOGIC`), said in a note; None for a newer judge."""
    logic = judge_versions.get(LENIENCY_JUDGE, "").removeprefix(f"{LENIENCY_JUDGE}-").split("+")[0]
    if not logic.isdigit() or int(logic) >= STANDARD_COMPARATOR_LOGIC:
        return None
    return (
        f"standard execution accuracy of this run is execution judge logic {logic}'s: rows compared as sets and extra columns "
        f"ignored, not the field's comparator (logic {STANDARD_COMPARATOR_LOGIC} and later: judge the run again to read it)"
    )


def figure_gaps(verdicts: dict[str, dict[int, Verdict]], standard: dict[str, bool], lenient: dict[str, bool]) -> FigureGaps:
    """The questions on which the three figures differ (see `FigureGaps`)."""
    configured = {q: _majority(by_seed, lambda v: v.correct) for q, by_seed in verdicts.items()}

    def which(test: Callable[[str], bool]) -> list[str]:
        return sorted((q for q in verdicts if test(q)), key=natural_key)

    standard_only = which(lambda q: standard[q] and not lenient[q])
    vacuous = sum(1 for q in standard_only if _majority(verdicts[q], lambda v: v.path == "vacuous"))
    return FigureGaps(
        above_standard=which(lambda q: configured[q] and not standard[q]),
        below_standard=which(lambda q: standard[q] and not configured[q]),
        below_lenient=which(lambda q: lenient[q] and not configured[q]),
        standard_only=standard_only,
        standard_only_vacuous=vacuous,
    )


def rule_accepts(verdicts: dict[str, dict[int, Verdict]], metadata: RunMetadata) -> dict[str, RuleAccepts]:
    """Each rule's `RuleAccepts` (see module docstring)."""
    on = rules_on(ExecutionJudgeConfig.model_validate(metadata.config.get("judges", {}).get("execution", {})))
    configured = {q: _majority(by_seed, lambda v: v.correct) for q, by_seed in verdicts.items()}
    out = {}
    for rule in RULES:
        if on[rule]:
            switched = {q: _majority(by_seed, lambda v, r=rule: v.correct and r not in _figures(v)["alone"]) for q, by_seed in verdicts.items()}
            which = [q for q in configured if configured[q] and not switched[q]]
        else:
            switched = {q: _majority(by_seed, lambda v, r=rule: v.correct or r in _figures(v)["alone"]) for q, by_seed in verdicts.items()}
            which = [q for q in configured if switched[q] and not configured[q]]
        share = sum(switched.values()) / len(switched) if switched else None
        out[rule] = RuleAccepts(questions=len(which), on=on[rule], which=sorted(which, key=natural_key), switched=share)
    return out


def answer_in_query_counts(attempts: list[Attempt], primary: dict[str, dict[int, Verdict]]) -> AnswerInQuery:
    """The run's attempts flagged `answer_in_query`, and how many of them the primary judge accepted."""
    flagged = [a for a in attempts if a.extra.get("answer_in_query")]
    accepted = sum(1 for a in flagged if (v := primary.get(a.question_id, {}).get(a.seed)) is not None and v.correct)
    questions = sorted({a.question_id for a in flagged}, key=natural_key)
    return AnswerInQuery(attempts=len(flagged), questions=len(questions), accepted=accepted, which=questions)
