"""Rendering a RunReport: Markdown for people, JSON for machines. No bare percentages."""

from __future__ import annotations

from kgeval.reports._summary import Accuracy, RunReport


def format_accuracy(acc: Accuracy) -> str:
    """`91.7% [83.0%, 96.1%] (55/60)`: the number always travels with its interval."""
    if acc.accuracy is None:
        return f"n/a (0 judged)"
    return f"{acc.accuracy:.1%} [{acc.ci_low:.1%}, {acc.ci_high:.1%}] ({acc.correct}/{acc.n})"


def _table(title: str, rows: list[Accuracy]) -> list[str]:
    lines = [f"### {title}", "", "| group | accuracy (Wilson 95% CI) | correct / n |", "|---|---|---|"]
    lines += [f"| {a.group} | {format_accuracy(a)} | {a.correct}/{a.n} |" for a in rows]
    return lines + [""]


def render_markdown(report: RunReport) -> str:
    m = report.metadata
    lines = [
        f"# kgeval report — run `{m.run_id}`",
        "",
        f"- system: **{m.system}** (version {m.system_version}); status: {report.status}",
        f"- primary judge: `{m.primary_judge}` ({m.judge_versions[m.primary_judge]}); seeds: {len(m.seeds)}",
        f"- holdout manifest {m.holdout_manifest_sha256[:12]}, gold manifest {m.gold_manifest_sha256[:12]}, "
        f"kgeval {m.kgeval_version} ({(m.git_commit or 'no git')[:10]})",
        f"- attempts: {report.attempts}, judged: {report.judged_attempts}, errors: "
        + (", ".join(f"{k} {v}" for k, v in sorted(report.errors.items())) or "none"),
        "",
        f"## Accuracy: {format_accuracy(report.overall)}",
        "",
        "Unit: a question, judged by the majority of its seeds (Wilson 95% interval).",
        "",
    ]
    lines += _table("By KG", report.by_kg)
    lines += _table("By domain", report.by_domain)
    lines += _table("By question type", report.by_qtype)
    lines += _seed_lines(report)
    if report.honeypots:
        lines += ["### Honeypots", ""]
        lines += [f"- {h.group}: {'correct' if h.correct else 'WRONG'}" for h in report.honeypots]
        lines.append("")
    lines += _judge_lines(report)
    lines += [f"## Wrong answers ({len(report.wrong)})", ""]
    for w in report.wrong:
        lines.append(f"- **{w.kg}/{w.question_id}** ({len(w.seeds_wrong)}/{w.seeds_judged} seeds wrong): {w.question}")
        lines.append(f"  - {w.reason}")
    return "\n".join(lines) + "\n"


def _seed_lines(report: RunReport) -> list[str]:
    spread = report.seed_spread
    lines = ["### Seed-to-seed spread", ""]
    lines += [f"- {a.group}: {format_accuracy(a)} of attempts" for a in spread.per_seed]
    if spread.refused:
        lines.append(f"- spread: refused ({spread.refused})")
    else:
        lines.append(f"- spread: min {spread.min:.1%}, max {spread.max:.1%}, stdev {spread.stdev:.1%}")
    return lines + [""]


def render_json(report: RunReport) -> str:
    return report.model_dump_json(indent=2) + "\n"


def _judge_lines(report: RunReport) -> list[str]:
    """Every enabled judge's accuracy, and where two judges disagree (with recall)."""
    if len(report.by_judge) < 2:
        return []
    lines = ["## Judges", "", f"Primary (pre-registered): `{report.metadata.primary_judge}`. Others, for comparison only:", ""]
    lines += [f"- {a.group}: {format_accuracy(a)}" for a in report.by_judge]
    lines += ["", "### Judge disagreement", "", "| accepts | rejects | questions | question (recall) |", "|---|---|---|---|"]
    for d in report.disagreements:
        shown = ", ".join(_disagreement_cell(q) for q in d.questions) or "—"
        lines.append(f"| {d.accepts} | {d.rejects} | {len(d.questions)} | {shown} |")
    return lines + [""]


def _disagreement_cell(item) -> str:  # noqa: ANN001 - a DisagreementItem
    recall = "n/a" if item.recall is None else f"{item.recall:.3f}"
    subset = f", strict_subset: {item.strict_subset}" if item.strict_subset else ""
    return f"{item.question_id} ({recall}{subset})"
