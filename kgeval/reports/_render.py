"""Rendering a RunReport: Markdown for people, JSON for machines. No bare percentages."""

from __future__ import annotations

import html

from kgeval.config import ExecutionJudgeConfig
from kgeval.reports._oversight import Rate
from kgeval.reports._summary import CAUSE_WORDS, Accuracy, HarnessReport, RunReport
from kgeval.runs import RunMetadata
from kgeval.samples import Sample, sample_html


def format_accuracy(acc: Accuracy | None) -> str:
    """`91.7% [83.0%, 96.1%] (55/60)`: the number always travels with its interval."""
    if acc is None:
        return "withheld (harness report)"
    if acc.accuracy is None:
        return "n/a (0 judged)"
    return f"{acc.accuracy:.1%} [{acc.ci_low:.1%}, {acc.ci_high:.1%}] ({acc.correct}/{acc.n})"


def format_at_least(acc: Accuracy) -> str:
    """"at least 78.2% correct" (Clopper-Pearson, one-sided 97.5%)."""
    if acc.at_least is None:
        return "n/a"
    return f"at least {acc.at_least:.1%} correct (Clopper-Pearson lower bound, one-sided 97.5%)"


def format_rate(rate: Rate | None) -> str:
    if rate is None:
        return "n/a (none audited)"
    return f"{rate.rate:.1%} [{rate.ci_low:.1%}, {rate.ci_high:.1%}] ({rate.events}/{rate.n})"


def _table(title: str, rows: list[Accuracy]) -> list[str]:
    lines = [f"### {title}", "", "| group | accuracy (Wilson 95% CI) | correct / n |", "|---|---|---|"]
    lines += [f"| {a.group} | {format_accuracy(a)} | {a.correct}/{a.n} |" for a in rows]
    return lines + [""]


def derived_line(m: RunMetadata) -> str:
    """What a re-judged run says of its source (`kgeval rejudge`)."""
    d = m.derived_from
    assert d is not None
    source = f"export {d.source_file} of run {d.source_run_id}" if d.source == "export" else f"run {d.source_run_id}"
    versions = ", ".join(f"{j} {v}" for j, v in sorted(d.source_judge_versions.items()))
    return (
        f"derived: the stored answers of {source} judged again, no system called (its judges {versions}; "
        f"its gold manifest {d.source_gold_manifest_sha256[:12]}, holdout manifest {d.source_holdout_manifest_sha256[:12]})"
    )


def render_markdown(report: RunReport) -> str:
    m = report.metadata
    lines = [
        f"# kgeval report — run `{m.run_id}`",
        "",
        f"- system: **{m.system}** (version {m.system_version}"
        + (f"; served {', '.join(m.served_versions)}" if m.served_versions else "")
        + f"); status: {report.status}",
        f"- primary judge (pre-registered): `{m.primary_judge}` ({m.judge_versions[m.primary_judge]}); seeds: {len(m.seeds)}",
        *_judge_shown(report),
        f"- holdout manifest {m.holdout_manifest_sha256[:12]}, gold manifest {m.gold_manifest_sha256[:12]}, "
        f"kgeval {m.kgeval_version} ({(m.git_commit or 'no git')[:10]})",
        f"- attempts: {report.attempts}, judged: {report.judged_attempts} (of which {report.incomplete} incomplete: cut off, scored and flagged), errors: "
        + (", ".join(f"{k} {v}" for k, v in sorted(report.errors.items())) or "none"),
    ]
    if m.derived_from is not None:
        lines.append(f"- {derived_line(m)}")
    if m.excluded:
        lines.append(f"- excluded on record ({len(m.excluded)}, not asked): " + "; ".join(f"{q}: {why}" for q, why in m.excluded.items()))
    if m.confirmed_empty:
        lines.append(f"- empty answer confirmed on record ({len(m.confirmed_empty)}): " + "; ".join(f"{q}: {why}" for q, why in m.confirmed_empty.items()))
    lines.append("")
    if report.overall is None:
        lines += _harness_lines(report.harness) + _error_lines(report) + oversight_markdown(report)
        return "\n".join(lines) + "\n"
    lines += [
        f"## Accuracy: {format_accuracy(report.overall)}",
        "",
        f"{format_at_least(report.overall)}.",
        "Unit: a question, judged by the majority of its seeds (Wilson 95% interval).",
        "",
        *_leniency_lines(report),
        *_suite_lines(report),
        *_bound_lines(report),
    ]
    lines += _honeypot_callout(report)
    lines += _cause_lines(report)
    lines += _prf_lines(report)
    lines += _table("By KG", report.by_kg)
    lines += _table("By domain", report.by_domain)
    lines += _table("By question type", report.by_qtype)
    lines += _seed_lines(report)
    lines += _judge_lines(report)
    lines += _consistency_lines(report)
    lines += _error_lines(report)
    lines += _excluded_lines(report)
    lines += oversight_markdown(report)
    lines += [f"## Wrong answers ({len(report.wrong)})", ""]
    for w in report.wrong:
        cause = f" [{CAUSE_WORDS.get(w.cause, w.cause)}]" if w.cause != "wrong_result" else ""
        lines.append(f"- **{w.kg}/{w.question_id}**{cause} ({len(w.seeds_wrong)}/{w.seeds_judged} seeds wrong): {w.question}")
        lines.append(f"  - {w.reason}")
    lines += ["", *_harness_lines(report.harness)]
    return "\n".join(lines) + "\n"


def _leniency_lines(report: RunReport) -> list[str]:
    """The three figures side by side, the rule table, and the answers named in queries."""
    if report.standard_execution_accuracy is None:
        return []
    lines = _three_figures(report)
    aiq = report.answer_in_query
    if aiq.attempts:
        lines.append(
            f"- **answer in the query**: {aiq.attempts} attempt(s) on {aiq.questions} question(s) name IRIs of the gold's answer that the "
            f"reference query does not ({aiq.accepted} accepted; audited first): {', '.join(aiq.which[:10])}"
        )
    lines += ["", "### Leniency rules (each alone, the others as configured)", "", "| rule | on | questions it alone accepts | accuracy if switched | which |", "|---|---|---|---|---|"]
    for rule, r in report.rule_accepts.items():
        switched = "n/a" if r.switched is None else f"{r.switched:.1%}"
        which = ", ".join(r.which[:5]) + (" ..." if len(r.which) > 5 else "")
        lines.append(f"| {rule} | {'on' if r.on else 'off'} | {r.questions} | {switched} | {which or '—'} |")
    return lines + [""]


def _three_figures(report: RunReport) -> list[str]:
    """Standard, headline and lenient on one axis (each looser than the one before, the vacuous
    check aside), and the questions that separate them."""
    on = [rule for rule, r in report.rule_accepts.items() if r.on]
    vacuous = "the vacuous check" if ExecutionJudgeConfig.model_validate(report.metadata.config.get("judges", {}).get("execution", {})).vacuous else "no vacuous check"
    primary = report.judge or report.metadata.primary_judge
    headline = "the judge as configured" + ("" if primary == "execution" else f" (judge `{primary}`; the gaps below are the execution judge's)")
    lines = [
        "| figure | accuracy | what it counts |",
        "|---|---|---|",
        f"| **standard execution accuracy** | {format_accuracy(report.standard_execution_accuracy)} | the field's comparator, as Spider's execution "
        "accuracy: the same number of columns in any order, rows as multisets, in order where the question asks; no rule, no answer-list "
        "reading, no vacuous check |",
        f"| headline | {format_accuracy(report.overall)} | {headline}: rules on: {', '.join(on) or 'none'}; {vacuous} |",
        f"| lenient | {format_accuracy(report.lenient_accuracy)} | every rule and reading on; {vacuous} |",
        "",
    ]
    gaps = report.figure_gaps
    if gaps is None:
        return lines
    by_rule = ", ".join(f"{rule} {r.questions}" for rule, r in report.rule_accepts.items() if r.questions and r.on)
    off_rules = ", ".join(f"{rule} {r.questions}" for rule, r in report.rule_accepts.items() if r.questions and not r.on)
    lines += [
        f"- headline above standard on {len(gaps.above_standard)} question(s): accepted by a rule that is on"
        + (f" (alone: {by_rule})" if by_rule else "") + f"; below it on {len(gaps.below_standard)}: rejected by the vacuous check, which standard lacks",
        f"- lenient above headline on {len(gaps.below_lenient)} question(s): only a rule switched off accepts them" + (f" (alone: {off_rules})" if off_rules else ""),
    ]
    if gaps.standard_only:
        lines.append(
            f"- **lenient below standard**: {len(gaps.standard_only)} question(s) standard accepts and lenient rejects, "
            f"{gaps.standard_only_vacuous} of them vacuous answers (an empty or zero result from vocabulary the KG lacks, equal to an "
            f"empty gold): {', '.join(gaps.standard_only[:10])}"
        )
    return lines


def _suite_lines(report: RunReport) -> list[str]:
    """Test-suite accuracy beside the other figures, and the accepts that held only on the KG."""
    if report.suites is None or report.test_suite_accuracy is None:
        return ["- test-suite accuracy: not measured (the run was judged without suites: `kgeval suite build`)", ""]
    s = report.suites
    lines = [
        f"- **test-suite accuracy** (accepted, and right on every neighbour KG of the question's suite): {format_accuracy(report.test_suite_accuracy)}",
        f"- accepts the suite could not check (counted as not passed): {s.unchecked}"
        + (" (" + "; ".join(f"{why}: {n}" for why, n in s.unchecked_why.items()) + ")" if s.unchecked else ""),
        f"- coincidental accepts (accepted on the KG, rejected by its suite; audited first): {len(s.coincidental)}",
    ]
    for c in s.coincidental[:20]:
        lines.append(f"  - {c.kg}/{c.question_id} seed {c.seed}: diverges on {c.neighbour}: {c.reason}")
    return lines + [""]


def _judge_shown(report: RunReport) -> list[str]:
    m = report.metadata
    if not report.judge or report.judge == m.primary_judge:
        return []
    return [f"- **figures below are judge `{report.judge}`'s ({m.judge_versions[report.judge]}), NOT the pre-registered primary `{m.primary_judge}`**"]


def _bound_lines(report: RunReport) -> list[str]:
    lines = []
    excluded = len(report.excluded)
    if report.if_excluded_wrong is not None:
        lines.append(
            f"- accuracy if every excluded attempt were wrong: {format_accuracy(report.if_excluded_wrong)} "
            f"({excluded} attempt{'s' if excluded != 1 else ''} excluded as harness errors)"
        )
    if report.without_empty_gold is not None:
        lines.append(
            f"- without the empty-like golds ({report.empty_golds_counted}, as `gold show --empty` lists them; "
            f"{report.empty_gold_questions} of them judged in this run): {format_accuracy(report.without_empty_gold)}"
        )
    lines += [f"- rule: {rule}" for rule in report.rules_in_force]
    return lines + ([""] if lines else [])


def _cause_lines(report: RunReport) -> list[str]:
    if not report.wrong_causes:
        return []
    lines = ["### Wrong answers by cause", "", "| group | cause | questions | share of judged questions |", "|---|---|---|---|"]
    for c in report.wrong_causes:
        lines.append(f"| {c.group} | {CAUSE_WORDS.get(c.cause, c.cause)} | {c.questions} | {c.share:.1%} |")
    return lines + [""]


def _prf_lines(report: RunReport) -> list[str]:
    if not report.macro_prf:
        return []
    lines = ["### Macro precision / recall / F1 (TEXT2SPARQL style)", "", "| group | questions | precision | recall | F1 |", "|---|---|---|---|---|"]
    for m in report.macro_prf:
        figures = " | ".join("n/a" if x is None else f"{x:.3f}" for x in (m.precision, m.recall, m.f1))
        lines.append(f"| {m.group} | {m.n} | {figures} |")
    return lines + [""]


def _excluded_lines(report: RunReport) -> list[str]:
    lines = [f"### Excluded attempts ({len(report.excluded)}: harness errors, not the model's)", ""]
    if not report.excluded:
        return lines + ["- none", ""]
    lines += [f"- {e.kg}/{e.question_id} seed {e.seed}: {e.kind}: {e.error}" for e in report.excluded[:50]]
    if len(report.excluded) > 50:
        lines.append(f"- ... and {len(report.excluded) - 50} more (JSON report: `excluded`)")
    return lines + [""]


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


def _honeypot_callout(report: RunReport) -> list[str]:
    if not report.honeypots:
        return []
    right = sum(h.correct for h in report.honeypots)
    lines = [f"### Honeypots: {right} of {len(report.honeypots)} answered as the question states", ""]
    lines += [f"- {h.group}: {'correct' if h.correct else '**WRONG** (answered from prior knowledge, not the KG?)'}" for h in report.honeypots]
    return lines + [""]


def _consistency_lines(report: RunReport) -> list[str]:
    c = report.consistency
    lines = ["### Per-question consistency across seeds", ""]
    if c.refused:
        return lines + [f"- refused ({c.refused})", ""]
    lines.append(f"- questions whose seeds all agree: {format_accuracy(c.consistent)}")
    lines += [f"- {q.kg}/{q.question_id}: {q.correct_seeds} of {q.judged_seeds} seeds correct" for q in c.inconsistent]
    return lines + [""]


def _error_lines(report: RunReport) -> list[str]:
    lines = ["### Error kinds (excluded from accuracy)", ""]
    if not report.errors:
        return lines + ["- none", ""]
    lines += ["| error kind | attempts | share of attempts |", "|---|---|---|"]
    for kind, count in sorted(report.errors.items()):
        lines.append(f"| {kind} | {count} | {count / report.attempts:.1%} |")
    return lines + [""]


def oversight_markdown(report: RunReport) -> list[str]:
    """Checklist receipt, audits of accepts, gold review coverage, and what is missing."""
    lines = ["### Pre-eval checklist receipt", ""]
    if report.receipt is None:
        lines.append("- none stored with this run")
    else:
        lines += [f"- {k}: {v}" for k, v in sorted(report.receipt.items())]
    lines += ["", "### Audit of accepts", ""]
    a = report.audit
    if a is None:
        lines.append("- not shown (see notes)")
    else:
        c = a.counts
        e = a.false_accept_estimate
        estimate = "n/a (a stratum with accepts has no audit)" if e is None else f"{e.rate:.1%} [{e.ci_low:.1%}, {e.ci_high:.1%}] ({'; '.join(e.strata)})"
        lines.append(f"- judge's false-accept rate over the run's {c.accepted} accepts (stratified, 95%): {estimate}")
        lines.append(f"- in the audited sample (judge disagreements drawn first, over-represented; Wilson 95%): {format_rate(a.false_accept_rate)}")
        lines.append(f"- on accepts all judges agreed on: {format_rate(a.false_accept_rate_agreed)}")
        lines.append(f"- accepts: {c.accepted}, audited at the current hash: {c.audited}, stale audits (not counted): {c.stale}")
        if c.conflicted:
            lines.append(
                f"- **conflicting audits: {c.conflicted}** (auditors' latest decisions differ): each counted as a false accept in the rates "
                "above until resolved; `kgeval audit show` names who decided what, and each auditor's new decision replaces their own"
            )
        for r in a.by_rule:
            warning = f" — **{r.warning}**" if r.warning else ""
            lines.append(f"- rule {r.rule}: {r.accepts} accepts, {r.audited} audited, false-accept rate {format_rate(r.false_accept_rate)}{warning}")
        if a.refused:
            lines.append(f"- {a.refused}")
    lines += ["", "### Gold review coverage", ""]
    r = report.review
    if r is None:
        lines.append("- not shown (see notes)")
    else:
        mark = "meets" if r.meets_target else "BELOW"
        lines.append(f"- approved at the current hash: {r.approved}/{r.questions} ({r.coverage:.1%}), {mark} the target {r.target:.0%}")
        lines.append(f"- changes requested: {r.changes_requested}, stale: {r.stale}, never reviewed: {r.never_reviewed}")
        lines += [f"- {d.domain}: {d.approved}/{d.questions} approved" for d in r.by_domain]
        if r.store_problem:
            lines.append(f"- review store read as empty: {r.store_problem}")
    lines.append("")
    if report.notes:
        lines += ["### Notes", ""] + [f"- {n}" for n in report.notes] + [""]
    return lines


def render_json(report: RunReport) -> str:
    return report.model_dump_json(indent=2) + "\n"


def _judge_lines(report: RunReport) -> list[str]:
    """Every enabled judge's accuracy, and where two judges disagree (with recall)."""
    rules = ["### Verdicts decided by each rule in this run", ""]
    rules += [f"- {c.judge}: {c.rule.replace('_', '-')}: {c.accepts} accepts, {c.rejects} rejects" for c in report.rule_changes]
    if len(report.by_judge) < 2:
        return rules + [""] if report.rule_changes else []
    lines = ["## Judges", "", f"Primary (pre-registered): `{report.metadata.primary_judge}`. Others, for comparison only:", ""]
    lines += [f"- {a.group}: {format_accuracy(a)}" for a in report.by_judge]
    if report.rule_changes:
        lines += ["", *rules]
    lines += ["", "### Judge disagreement", "", "| accepts | rejects | questions | question (recall) |", "|---|---|---|---|"]
    for d in report.disagreements:
        shown = ", ".join(_disagreement_cell(q) for q in d.questions) or "—"
        lines.append(f"| {d.accepts} | {d.rejects} | {len(d.questions)} | {shown} |")
    return lines + [""]


def _disagreement_cell(item) -> str:  # noqa: ANN001 - a DisagreementItem
    recall = "n/a" if item.recall is None else f"{item.recall:.3f}"
    subset = f", strict_subset: {item.strict_subset}" if item.strict_subset else ""
    return f"{item.question_id} ({recall}{subset})"


def render_html(report: RunReport, samples: list[Sample] | None = None) -> str:
    """The report as one self-contained HTML page, with accuracy and intervals per KG plotted,
    and, when given, each sample shown whole (question, SPARQL, rows beside the gold, verdicts)."""
    from kgeval.reports._html import figure, html_page, interval_chart_svg, markdown_to_html

    charts = []
    if report.overall is not None:  # a harness report has no accuracy to plot
        charts.append(figure(interval_chart_svg([report.overall, *report.by_kg], "Accuracy by KG"), "Accuracy by KG: dot = accuracy, whiskers = Wilson 95% interval."))
    if report.by_domain:
        charts.append(figure(interval_chart_svg(report.by_domain, "Accuracy by domain"), "Accuracy by domain (Wilson 95%)."))
    md = render_markdown(report)
    head, _, rest = md.partition("\n## ")
    title = f"kgeval report {report.metadata.run_id}"
    if not rest:
        return html_page(title, markdown_to_html(md) + _samples_html(samples))
    body = markdown_to_html(head) + "\n" + "\n".join(charts) + "\n" + markdown_to_html("## " + rest)
    for s in samples or []:  # each wrong answer links to its sample below
        name = f"<li><strong>{html.escape(s.kg)}/{html.escape(s.question_id)}</strong>"
        body = body.replace(name, f'<li><a href="#sample-{html.escape(s.question_id)}-{s.seed}"><strong>{html.escape(s.kg)}/{html.escape(s.question_id)}</strong></a>', 1)
    return html_page(title, body + _samples_html(samples))


def _samples_html(samples: list[Sample] | None) -> str:
    if not samples:
        return ""
    links = "".join(f'<li><a href="#sample-{html.escape(s.question_id)}-{s.seed}">{html.escape(s.kg)}/{html.escape(s.question_id)} seed {s.seed}</a>: {html.escape(s.question)}</li>' for s in samples)
    intro = "<p>Each wrong answer (its first wrong seed) and each question the judges disagree on, shown whole. The answer's rows were executed again read-only on the run's store.</p>"
    return f"\n<h2>Samples ({len(samples)})</h2>\n{intro}<ul>{links}</ul>\n" + "\n".join(sample_html(s) for s in samples)
