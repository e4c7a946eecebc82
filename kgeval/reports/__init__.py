"""Reports: accuracy with Wilson 95% intervals, seed spread, wrong answers, export."""

from kgeval.reports._export import export_lines
from kgeval.reports._render import format_accuracy, render_json, render_markdown
from kgeval.reports._stats import wilson_interval
from kgeval.reports._summary import Accuracy, Disagreement, DisagreementItem, RunReport, SeedSpread, WrongAnswer, build_report

__all__ = [
    "Accuracy",
    "Disagreement",
    "DisagreementItem",
    "RunReport",
    "SeedSpread",
    "WrongAnswer",
    "build_report",
    "export_lines",
    "format_accuracy",
    "render_json",
    "render_markdown",
    "wilson_interval",
]
