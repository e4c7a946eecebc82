"""Comparability of two runs' metadata (DESIGN invariant 7), for `kgeval compare`.

`comparability_of` adapts `kgeval.runs.comparability` (blocking: gold, holdout, question set,
judges and their versions, seeds, store engine; reported: system, versions served, reasoning
settings, pipeline, configuration). `basic_comparability` is the earlier stand-in, kept for
its tests.
"""

from __future__ import annotations

from kgeval.config import ExecutionJudgeConfig, SeedJudgeConfig
from kgeval.errors import InputError
from kgeval.judges import judges_from_config, rules_on
from kgeval.reports._compare import Comparability
from kgeval.runs import RunMetadata, comparability, run_config

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
    remedy = rejudge_remedy(a, b, {d.field for d in differences if d.blocking}) if blocking and not any(withheld.values() if withheld else ()) else None
    return Comparability(comparable=not blocking, blocking=blocking, differences=reported, remedy=remedy)


REJUDGED_FIELDS = frozenset({"judge_versions", "primary_judge", "gold_manifest_sha256", "store_engine"})
"""Blocking differences a re-judged run removes: it is judged with the other run's judges (their
rules), executed on its store and judged against its gold. Seeds, questions and the holdout are
what the answers were given to: no re-judging changes them."""


def rejudge_remedy(a: RunMetadata, b: RunMetadata, fields: set[str]) -> str | None:
    """The one command that makes `a` and `b` comparable (`fields`: their blocking differences;
    a rule set differs with the judge versions), or None when re-judging cannot. The run whose
    judges are not those this kgeval gives its configuration is the one re-judged; when neither
    run's are, both are, on the fly."""
    if not fields <= REJUDGED_FIELDS:
        return None
    if _current(b):
        return f"kgeval rejudge {a.run_id} --like {b.run_id}"
    if _current(a):
        return f"kgeval rejudge {b.run_id} --like {a.run_id}"
    return f"kgeval compare {a.run_id} {b.run_id} --rejudge"


def _current(metadata: RunMetadata) -> bool:
    """Whether this kgeval's judges, built from the run's configuration, are the run's."""
    try:
        judges = judges_from_config(run_config(metadata).judges)
    except (InputError, ValueError):
        return False
    return {name: judge.version for name, judge in judges.items()} == metadata.judge_versions


def rule_set_differences(a: RunMetadata, b: RunMetadata) -> list[str]:
    """The leniency rules the two runs' judges switched differently (DESIGN invariant 13), one
    line per judge: "rule set of judge execution: label_for_entity on in run A, off in run B"."""
    lines = []
    sets_a, sets_b = judge_rule_sets(a), judge_rule_sets(b)
    for judge in (j for j in sets_a if j in sets_b):
        on_a, on_b = sets_a[judge], sets_b[judge]
        differing = [f"{rule} {_word(on_a[rule])} in run {a.run_id}, {_word(on_b.get(rule))} in run {b.run_id}" for rule in on_a if on_a[rule] != on_b.get(rule)]
        if differing:
            lines.append(f"rule set of judge {judge}: " + "; ".join(differing))
    return lines


def judge_rule_sets(metadata: RunMetadata) -> dict[str, dict[str, bool]]:
    """Judge name -> each of its rules' switch, for the run's enabled judges that have rules."""
    models = (("execution", ExecutionJudgeConfig), ("seed", SeedJudgeConfig))
    return {judge: _rules_of(metadata, judge, model) for judge, model in models if judge in metadata.judge_versions}


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
