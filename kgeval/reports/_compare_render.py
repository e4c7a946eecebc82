"""Rendering a run comparison: Markdown, JSON and HTML. A forced comparison of incomparable
runs says so at the top (and, in HTML, at the bottom) of every page."""

from __future__ import annotations

import json

from kgeval.reports._compare import RunComparison
from kgeval.reports._summary import CAUSE_WORDS, Accuracy


def forced_warning(c: RunComparison) -> str | None:
    if c.comparability.comparable:
        return None
    return "INCOMPARABLE RUNS, compared only because --force was given: " + "; ".join(c.comparability.blocking)


def render_comparison_markdown(c: RunComparison) -> str:
    a, b = c.run_a, c.run_b
    warning = forced_warning(c)
    lines = [f"# kgeval comparison — A `{a.run_id}` vs B `{b.run_id}`", ""]
    if warning:
        lines += [f"**{warning}**", ""]
    lines += [
        f"- A: {a.system} ({a.system_version}); B: {b.system} ({b.system_version})",
        "- differences: " + ("; ".join(c.comparability.differences) or "none"),
    ]
    if c.rejudged:
        sources = [f"{side} is run {m.derived_from.source_run_id}" for side, m in (("A", a), ("B", b)) if m.derived_from is not None]
        lines.append(f"- re-judged on the fly with B's configuration and gold, nothing stored ({'; '.join(sources)}; no system called)")
    lines.append("")
    if not c.paired:
        return "\n".join(lines + ["No question was judged in both runs: nothing to compare.", ""])
    lines += [
        f"## Accuracy B − A: {c.difference:+.1%} [{c.diff_ci_low:+.1%}, {c.diff_ci_high:+.1%}] ({c.interval_method})",
        "",
        f"- A: {c.accuracy_a:.1%}, B: {c.accuracy_b:.1%} on {c.paired} paired questions ({c.unpaired} unpaired, not compared)",
        f"- exact McNemar test on {c.a_only + c.b_only} discordant questions: p = {c.mcnemar_pvalue:.4g}",
        "",
        "### Paired table (questions)",
        "",
        "| | B correct | B wrong |",
        "|---|---|---|",
        f"| A correct | {c.both_correct} | {c.a_only} |",
        f"| A wrong | {c.b_only} | {c.both_wrong} |",
        "",
        f"### Flips ({len(c.flips)})",
        "",
        (
            "Seeds: on each side, the seed showing that side's outcome (where seeds disagree, the one that flipped): "
            f"`kgeval show {a.run_id} KG/QID --seed S` opens it."
        ),
        "",
        "| question | A | B | flip | seeds A / B |",
        "|---|---|---|---|---|",
    ]
    for f in c.flips:
        seeds = f"{_seed(f.a_seed)} / {_seed(f.b_seed)}"
        lines.append(f"| {f.kg}/{f.question_id} | {_mark(f.a_outcome)} | {_mark(f.b_outcome)} | {_direction(f)} | {seeds} |")
    if warning:
        lines += ["", f"**{warning}**"]
    return "\n".join(lines) + "\n"


def _direction(f) -> str:  # noqa: ANN001 - a Flip
    if f.a_correct != f.b_correct:
        return "A right → B wrong" if f.a_correct else "A wrong → B right"
    return f"A {_mark(f.a_outcome)} → B {_mark(f.b_outcome)}"


def _seed(seed: int | None) -> str:
    return "-" if seed is None else str(seed)


def _mark(outcome: str) -> str:
    """"correct", "wrong", or "wrong (invalid SPARQL)" for a wrong answer of another cause."""
    if outcome == "correct":
        return "correct"
    return "wrong" if outcome == "wrong_result" else f"wrong ({CAUSE_WORDS.get(outcome, outcome)})"


def render_comparison_json(c: RunComparison) -> str:
    data = json.loads(c.model_dump_json())
    data["warning"] = forced_warning(c)
    return json.dumps(data, indent=2) + "\n"


def render_comparison_html(c: RunComparison) -> str:
    from kgeval.reports._html import figure, html_page, interval_chart_svg, markdown_to_html

    body = markdown_to_html(render_comparison_markdown(c))
    if c.paired:
        rows = [
            Accuracy.of(c.both_correct + c.a_only, c.paired, f"A {c.run_a.system}"),
            Accuracy.of(c.both_correct + c.b_only, c.paired, f"B {c.run_b.system}"),
        ]
        body = figure(interval_chart_svg(rows, "Accuracy of A and B"), "Accuracy on the paired questions (Wilson 95%).") + body
    return html_page(f"kgeval comparison {c.run_a.run_id} vs {c.run_b.run_id}", body, forced_warning(c))
