"""What re-judging changed (`kgeval rejudge`): every verdict of the source that the re-judged run
gives otherwise, field by field, and why its correctness flipped.

A verdict is a function of the stored answer, the gold and the judge configuration (DESIGN
invariant 15), so a difference has a cause among these: the judge's logic version, a rule of
its configuration switched (named by the verdicts' own record of the rules that alone decide
them, `details["leniency"]["alone"]`, the figure `rule_accepts` counts), another setting of
its configuration, or the question's gold entry. A difference with none of these is a verdict
that did not reproduce, and is listed as such.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, Field

from kgeval.holdout import natural_key
from kgeval.judges import Verdict
from kgeval.reports._comparability import judge_rule_sets
from kgeval.runs import Attempt, ResultsDB, RunMetadata

UNEXPLAINED = "not reproduced: same judge version, configuration and gold"


class VerdictChange(BaseModel):
    """One (attempt, judge) whose verdict in the re-judged run differs from the source's."""

    kg: str
    question_id: str
    seed: int
    judge: str
    was_correct: bool | None
    """The source's verdict; None when the source has none (a harness error, or no such judge)."""
    now_correct: bool | None
    """The re-judged verdict; None when there is none."""
    was_path: str | None = None
    now_path: str | None = None
    was_version: str | None = None
    now_version: str | None = None
    fields: list[str]
    """The verdict's fields that differ (correct, path, reason, details, ...)."""
    why: list[str]
    """Its causes: "judge version ...", "rule ... switched ...", "configuration of judge ...",
    "gold: ...", or `UNEXPLAINED`."""

    @property
    def flipped(self) -> bool:
        return self.was_correct != self.now_correct


class RejudgeReport(BaseModel):
    """A re-judged run beside its source."""

    source_run_id: str
    run_id: str
    source: str
    """"run" or "export"."""
    verdicts: int
    """Verdicts of the re-judged run."""
    identical: int
    """Of the source's verdicts, those given again field for field."""
    flipped: int
    """Verdicts whose correctness changed (a verdict gained or lost counts)."""
    changes: list[VerdictChange]
    """Every verdict that differs in any field, in question order."""
    by_path: dict[str, int] = Field(default_factory=dict)
    """Flips by judge path, "set -> label_for_entity"."""
    by_rule: dict[str, int] = Field(default_factory=dict)
    """Flips by rule switched: "label_for_entity on"."""
    by_version: dict[str, int] = Field(default_factory=dict)
    """Flips by judge version: "execution-11 -> execution-12"."""
    by_gold: dict[str, int] = Field(default_factory=dict)
    """Flips by gold change: "gold result changed"."""
    gold_changed: dict[str, str] = Field(default_factory=dict)
    gold_note: str = ""
    not_rejudged: dict[str, str] = Field(default_factory=dict)
    source_verdicts_sha256: str | None = None
    verdicts_sha256: str | None = None
    """The re-judged run's seal's verdict hash."""

    @property
    def reproduced(self) -> bool:
        """Every verdict given again, field for field, and the seals' verdict hashes equal."""
        return not self.changes and self.source_verdicts_sha256 is not None and self.source_verdicts_sha256 == self.verdicts_sha256


def rejudge_report(db: ResultsDB, run_id: str, source: RunMetadata, verdicts: Iterable[tuple[str, int, Verdict]], attempts: list[Attempt]) -> RejudgeReport:
    """Compare the re-judged run `run_id` in `db` with its source's `verdicts` (and `attempts`,
    for the KGs); `source`: the source's metadata."""
    metadata = db.metadata(run_id)
    origin = metadata.derived_from
    assert origin is not None, f"run {run_id} is not a re-judged run"
    kg_of = {a.question_id: a.kg for a in attempts}
    was = {(q, s, v.judge): v for q, s, v in verdicts}
    now = {(q, s, v.judge): v for q, s, v in db.verdicts(run_id)}
    keep = {q for q in kg_of if q not in origin.not_rejudged}
    changes = []
    rules = _switched_rules(source, metadata)
    for key in sorted(was.keys() | now.keys(), key=lambda k: (natural_key(k[0]), k[1], k[2])):
        old, new = was.get(key), now.get(key)
        if key[0] not in keep or old == new:
            continue
        changes.append(_change(key, kg_of.get(key[0], ""), old, new, rules, origin.gold_changed.get(key[0])))
    flips = [c for c in changes if c.flipped]
    return RejudgeReport(
        source_run_id=source.run_id, run_id=run_id, source=origin.source, verdicts=len(now), identical=sum(1 for k, v in was.items() if now.get(k) == v),
        flipped=len(flips), changes=changes, by_path=_count(f"{c.was_path or 'none'} -> {c.now_path or 'none'}" for c in flips if c.was_path != c.now_path),
        by_rule=_count(w.removeprefix("rule ") for c in flips for w in c.why if w.startswith("rule ")),
        by_version=_count(w.removeprefix("judge version ") for c in flips for w in c.why if w.startswith("judge version ")),
        by_gold=_count(w.removeprefix("gold: ") for c in flips for w in c.why if w.startswith("gold: ")),
        gold_changed=origin.gold_changed, gold_note=origin.gold_note, not_rejudged=origin.not_rejudged,
        source_verdicts_sha256=origin.source_verdicts_sha256, verdicts_sha256=db.sealed_verdicts_sha256(run_id),
    )  # fmt: skip


def _count(items: Iterable[str]) -> dict[str, int]:
    return dict(Counter(items).most_common())


def _switched_rules(a: RunMetadata, b: RunMetadata) -> dict[str, dict[str, bool]]:
    """judge -> rule -> on in `b`, for the rules `a` and `b` switch differently."""
    before, after = judge_rule_sets(a), judge_rule_sets(b)
    return {
        judge: {rule: on for rule, on in after[judge].items() if before[judge].get(rule) != on}
        for judge in before.keys() & after.keys()
    }


def _change(
    key: tuple[str, int, str], kg: str, old: Verdict | None, new: Verdict | None, rules: dict[str, dict[str, bool]], gold: str | None
) -> VerdictChange:
    question_id, seed, judge = key
    fields = [name for name in Verdict.model_fields if old is None or new is None or getattr(old, name) != getattr(new, name)]
    return VerdictChange(
        kg=kg, question_id=question_id, seed=seed, judge=judge, was_correct=old.correct if old else None, now_correct=new.correct if new else None,
        was_path=old.path if old else None, now_path=new.path if new else None, was_version=old.version if old else None,
        now_version=new.version if new else None, fields=fields, why=_causes(judge, old, new, rules.get(judge, {}), gold),
    )  # fmt: skip


def _causes(judge: str, old: Verdict | None, new: Verdict | None, switched: dict[str, bool], gold: str | None) -> list[str]:
    """Why a verdict differs (see the module docstring)."""
    if old is None or new is None:
        return ["judged now, not then" if old is None else "judged then, not now (a harness error now, or the judge is off)"]
    why = []
    logic_then, logic_now = _logic(old.version), _logic(new.version)
    if logic_then != logic_now:
        why.append(f"judge version {judge}-{logic_then} -> {judge}-{logic_now}")
    alone = set(_alone(old)) | set(_alone(new))
    why += [f"rule {rule} {'on' if on else 'off'}" for rule, on in switched.items() if rule in alone]
    if old.config_sha256 != new.config_sha256 and not why:
        why.append(f"configuration of judge {judge}: {old.config_sha256[:12]} -> {new.config_sha256[:12]}")
    if gold:
        why.append(f"gold: {gold}")
    return why or [UNEXPLAINED]


def _logic(version: str) -> str:
    """The logic version in a judge version ("execution-12+ab12cd34" -> "12")."""
    return version.partition("+")[0].rpartition("-")[2]


def _alone(verdict: Verdict) -> list[str]:
    leniency = verdict.details.get("leniency")
    return list(leniency.get("alone", [])) if isinstance(leniency, dict) else []


def render_rejudge_text(report: RejudgeReport, limit: int | None = None) -> str:
    """The report for a terminal: the counts, the flips by cause, then each changed verdict."""
    lines = [
        f"re-judged {report.source} {report.source_run_id} as run {report.run_id}: {report.verdicts} verdicts; "
        f"{report.identical} identical to the source's, {len(report.changes)} changed, {report.flipped} flipped"
    ]
    for title, counts in (("judge path", report.by_path), ("rule", report.by_rule), ("judge version", report.by_version), ("gold change", report.by_gold)):
        if counts:
            lines.append(f"flipped by {title}: " + "; ".join(f"{what}: {n}" for what, n in counts.items()))
    if report.gold_changed:
        lines.append(f"gold entries changed since the source: {len(report.gold_changed)}: " + "; ".join(f"{q}: {why}" for q, why in report.gold_changed.items()))
    if report.gold_note:
        lines.append(f"gold: {report.gold_note}")
    if report.not_rejudged:
        lines.append("not re-judged: " + "; ".join(f"{q}: {why}" for q, why in report.not_rejudged.items()))
    shown = report.changes if limit is None else report.changes[:limit]
    for c in shown:
        lines.append(
            f"  {c.kg}/{c.question_id} seed {c.seed} {c.judge}: {_word(c.was_correct)} ({c.was_path}) -> {_word(c.now_correct)} ({c.now_path})"
            f" [{', '.join(c.fields)}]: {'; '.join(c.why)}"
        )
    if len(shown) < len(report.changes):
        lines.append(f"  ... {len(report.changes) - len(shown)} more (--format json lists every one)")
    hashes = f"verdict hash {report.verdicts_sha256}"
    if report.source_verdicts_sha256 is not None:
        same = "the same as" if report.source_verdicts_sha256 == report.verdicts_sha256 else "differs from"
        hashes += f", {same} the source's {report.source_verdicts_sha256}"
    lines.append(hashes)
    return "\n".join(lines) + "\n"


def _word(correct: bool | None) -> str:
    return "none" if correct is None else "right" if correct else "wrong"


def render_rejudge_json(report: RejudgeReport) -> str:
    data = report.model_dump(mode="json")
    data["reproduced"] = report.reproduced
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
