"""Rendering a RunReport: Markdown for people, JSON for machines. No bare percentages."""

from __future__ import annotations

from kgeval.reports._summary import Accuracy, HarnessReport, RunReport


def format_accuracy(acc: Accuracy | None) -> str:
    """`91.7% [83.0%, 96.1%] (55/60)`: the number always travels with its interval."""
    if acc is None:
        return "withheld (harness report)"
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
        f"- system: **{m.system}** (version {m.system_version}"
        + (f"; served {', '.join(m.served_versions)}" if m.served_versions else "")
        + f"); status: {report.status}",
        f"- primary judge: `{m.primary_judge}` ({m.judge_versions[m.primary_judge]}); seeds: {len(m.seeds)}",
        f"- holdout manifest {m.holdout_manifest_sha256[:12]}, gold manifest {m.gold_manifest_sha256[:12]}, "
        f"kgeval {m.kgeval_version} ({(m.git_commit or 'no git')[:10]})",
        f"- attempts: {report.attempts}, judged: {report.judged_attempts} (incomplete, flagged: {report.incomplete}), errors: "
        + (", ".join(f"{k} {v}" for k, v in sorted(report.errors.items())) or "none"),
        "",
    ]
    if report.overall is None:
        return "\n".join(lines + _harness_lines(report.harness)) + "\n"
    lines += [
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
    lines += [f"## Wrong answers ({len(report.wrong)})", ""]
    for w in report.wrong:
        lines.append(f"- **{w.kg}/{w.question_id}** ({len(w.seeds_wrong)}/{w.seeds_judged} seeds wrong): {w.question}")
        lines.append(f"  - {w.reason}")
    lines += ["", *_harness_lines(report.harness)]
    return "\n".join(lines) + "\n"


def _harness_lines(h: HarnessReport) -> list[str]:
    title = "## Harness report: NO ACCURACY PUBLISHED" if h.withheld else "## Harness"
    lines = [title, ""]
    if h.withheld:
        lines += [f"**{h.withheld}.** A broken harness produces a plausible number; fix the causes below and run again.", ""]
    lines.append(
        f"- attempts {h.attempts} of {h.expected_attempts}; answered {h.answered}, incomplete {h.incomplete}, errors {h.errors} "
        f"({h.problem_share:.1%} problems; limit {h.max_problem_share:.0%})"
    )
    lines.append(f"- tries {h.tries}; attempts retried {h.retried_attempts}")
    for issue in h.issues:
        lines.append(f"- **{issue.cause}**: {issue.attempts}")
        lines += [f"  - {example}" for example in issue.examples]
    return lines + [""]


def _seed_lines(report: RunReport) -> list[str]:
    spread = report.seed_spread
    if spread is None:
        return []
    lines = ["### Seed-to-seed spread", ""]
    lines += [f"- {a.group}: {format_accuracy(a)} of attempts" for a in spread.per_seed]
    if spread.refused:
        lines.append(f"- spread: refused ({spread.refused})")
    else:
        lines.append(f"- spread: min {spread.min:.1%}, max {spread.max:.1%}, stdev {spread.stdev:.1%}")
    return lines + [""]


def render_json(report: RunReport) -> str:
    return report.model_dump_json(indent=2) + "\n"
