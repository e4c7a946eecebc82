"""Reports: accuracy with Wilson 95% intervals, seed spread and consistency, audits and gold
review, run comparisons; Markdown, JSON and self-contained HTML."""

from kgeval.reports._comparability import basic_comparability, comparability_of
from kgeval.reports._compare import Comparability, Flip, RunComparison, compare_runs, mcnemar_exact_pvalue, paired_difference_interval, seed_outcomes
from kgeval.reports._compare_render import render_comparison_html, render_comparison_json, render_comparison_markdown
from kgeval.reports._export import ExportedRun, export_lines, line_sha256, read_export
from kgeval.reports._leniency import AnswerInQuery, FigureGaps, RuleAccepts
from kgeval.reports._oversight import HOLDOUT_REFUSED, AuditSummary, Rate, RuleAudit
from kgeval.reports._rejudge import RejudgeReport, VerdictChange, rejudge_report, render_rejudge_json, render_rejudge_text
from kgeval.reports._render import format_accuracy, format_at_least, render_html, render_json, render_markdown
from kgeval.reports._stats import clopper_pearson_lower, wilson_interval
from kgeval.reports._summary import (
    Accuracy,
    Consistency,
    Disagreement,
    DisagreementItem,
    HarnessIssue,
    HarnessReport,
    RunReport,
    SeedSpread,
    WrongAnswer,
    build_harness_report,
    build_report,
    run_headline,
    withheld_accuracy,
)

__all__ = [
    "HOLDOUT_REFUSED",
    "withheld_accuracy",
    "Accuracy",
    "AnswerInQuery",
    "AuditSummary",
    "Comparability",
    "Consistency",
    "Disagreement",
    "DisagreementItem",
    "Flip",
    "seed_outcomes",
    "HarnessIssue",
    "HarnessReport",
    "Rate",
    "FigureGaps",
    "RejudgeReport",
    "RuleAccepts",
    "RuleAudit",
    "RunComparison",
    "RunReport",
    "SeedSpread",
    "VerdictChange",
    "WrongAnswer",
    "basic_comparability",
    "build_harness_report",
    "build_report",
    "run_headline",
    "clopper_pearson_lower",
    "comparability_of",
    "compare_runs",
    "export_lines",
    "ExportedRun",
    "line_sha256",
    "read_export",
    "format_accuracy",
    "format_at_least",
    "mcnemar_exact_pvalue",
    "paired_difference_interval",
    "render_comparison_html",
    "render_comparison_json",
    "render_comparison_markdown",
    "rejudge_report",
    "render_rejudge_json",
    "render_rejudge_text",
    "render_html",
    "render_json",
    "render_markdown",
    "wilson_interval",
]
