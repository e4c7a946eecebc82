"""Comparability of two runs' metadata (DESIGN invariant 7), for `kgeval compare`.

`comparability_of` adapts `kgeval.runs.comparability` (blocking: gold, holdout, question set,
judges and their versions, seeds, store engine; reported: system, versions served, reasoning
settings, pipeline, configuration). `basic_comparability` is the earlier stand-in, kept for
its tests.
"""

from __future__ import annotations

from kgeval.config import ExecutionJudgeConfig, SeedJudgeConfig
from kgeval.errors import InputError
from kgeval.judges import rules_on
from kgeval.reports._compare import Comparability
from kgeval.runs import RunMetadata, comparability

_BLOCKING = {
    "holdout_manifest_sha256": "holdout manifest",
    "gold_manifest_sha256": "gold manifest",
    "suite_manifest_sha256": "test suites (judged with and without them, or on other suites)",
    "seeds": "seeds",
    "primary_judge": "primary judge",
}
_INFORMATIONAL = {
    "system": "system",
    "system_version": "system version",
    "config_sha256": "kgeval configuration",
    "kgeval_version": "kgeval version",
    "git_commit": "kgeval commit",
}


def basic_comparability(a: RunMetadata, b: RunMetadata) -> Comparability:
    """Blocking: a different holdout, gold, seeds, primary judge or its version."""
    blocking = [_diff(label, getattr(a, f), getattr(b, f)) for f, label in _BLOCKING.items() if getattr(a, f) != getattr(b, f)]
    va, vb = a.judge_versions.get(a.primary_judge), b.judge_versions.get(b.primary_judge)
    if va != vb:
        blocking.append(_diff("primary judge version", va, vb))
    differences = [_diff(label, getattr(a, f), getattr(b, f)) for f, label in _INFORMATIONAL.items() if getattr(a, f) != getattr(b, f)]
    return Comparability(comparable=not blocking, blocking=blocking, differences=differences)


def _diff(label: str, a: object, b: object) -> str:
    return f"{label}: {_short(a)} vs {_short(b)}"


def _short(value: object) -> str:
    """A sha256 by its first 12 digits; anything else whole."""
    text = str(value)
    return text[:12] if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else text


def _differing(label: str, a: object, b: object) -> str:
    """`_diff`, and for two mappings (judge versions) only the keys whose values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        return "; ".join(_diff(f"{label} {k}", a.get(k, "none"), b.get(k, "none")) for k in keys)
    return _diff(label, a, b)


_LABELS = {
    "gold_manifest_sha256": "gold manifest",
    "suite_manifest_sha256": "test suites (judged with and without them, or on other suites)",
    "holdout_manifest_sha256": "holdout manifest",
    "question_set_sha256": "question set",
    "primary_judge": "primary judge",
    "judge_versions": "judge versions",
    "store_engine": "store engine",
    "system_version": "system version",
    "served_versions": "served versions",
    "reasoning": "reasoning settings",
    "config_sha256": "kgeval configuration",
    "kgeval_version": "kgeval version",
    "git_commit": "kgeval commit",
}


def comparability_of(a: RunMetadata, b: RunMetadata, withheld: dict[str, str | None] | None = None) -> Comparability:
    """The check `kgeval compare` uses: `kgeval.runs.comparability`, as a Comparability.
    `withheld`: run id -> why its report withholds its accuracy (`withheld_accuracy`); such a
    run has no accuracy to compare either (blocking)."""
    differences = comparability(a, b)
    blocking = rule_set_differences(a, b)
    blocking += [_differing(_LABELS.get(d.field, d.field), d.a, d.b) for d in differences if d.blocking]
    blocking += [f"run {run}: its report withholds its accuracy ({why})" for run, why in (withheld or {}).items() if why]
    reported = [_differing(_LABELS.get(d.field, d.field), d.a, d.b) for d in differences if not d.blocking]
    reported += [f"run {m.run_id} has not finished" for m in (a, b) if m.finished_at is None]
    return Comparability(comparable=not blocking, blocking=blocking, differences=reported)


def rule_set_differences(a: RunMetadata, b: RunMetadata) -> list[str]:
    """The leniency rules the two runs' judges switched differently (DESIGN invariant 13), one
    line per judge: "rule set of judge execution: label_for_entity on in run A, off in run B"."""
    lines = []
    for judge, model in (("execution", ExecutionJudgeConfig), ("seed", SeedJudgeConfig)):
        if judge not in a.judge_versions or judge not in b.judge_versions:
            continue
        on_a, on_b = (_rules_of(m, judge, model) for m in (a, b))
        differing = [f"{rule} {_word(on_a[rule])} in run {a.run_id}, {_word(on_b[rule])} in run {b.run_id}" for rule in on_a if on_a[rule] != on_b.get(rule)]
        if differing:
            lines.append(f"rule set of judge {judge}: " + "; ".join(differing))
    return lines


def _rules_of(metadata: RunMetadata, judge: str, model: type) -> dict[str, bool]:
    try:
        config = model.model_validate(metadata.config.get("judges", {}).get(judge, {}))
    except ValueError as exc:
        raise InputError(f"run {metadata.run_id}: its judges.{judge} configuration does not read: {exc}") from exc
    if isinstance(config, ExecutionJudgeConfig):
        return rules_on(config)
    return {f"readings.{name}": on for name, on in config.readings}


def _word(on: bool | None) -> str:
    return "unset" if on is None else "on" if on else "off"
