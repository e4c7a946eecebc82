"""A minimal comparability check of two runs' metadata (DESIGN invariant 7).

Stand-in until the dispatch work's `kgeval.runs.comparability(meta_a, meta_b)` lands on main;
`compare` calls it through `comparability_of` only, so swapping it is one line.
"""

from __future__ import annotations

from kgeval.reports._compare import Comparability
from kgeval.runs import RunMetadata

_BLOCKING = {
    "holdout_manifest_sha256": "holdout manifest",
    "gold_manifest_sha256": "gold manifest",
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
    text = str(value)
    return text[:12] if len(text) == 64 else text


comparability_of = basic_comparability
"""The check `kgeval compare` uses (swap for the dispatch branch's when it lands)."""
