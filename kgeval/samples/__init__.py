"""Samples: one attempt of a run shown whole (question, gold and its flags, the candidate's
SPARQL, its executed rows beside the gold rows with columns aligned and rows marked, every
judge's verdict, the attempt's terminal state, tries, latency and tokens), and the run page's
list of samples. The terminal, the HTML report and the service page all render this model."""

from kgeval.samples._build import SampleSource, build_sample, gold_for_review, run_config, sample_index, store_opener
from kgeval.samples._model import (
    AuditView,
    ExecutionSource,
    ExecutionView,
    GoldView,
    RowMark,
    Sample,
    SampleRow,
    SampleSummary,
    SampleTable,
)
from kgeval.samples._tables import cell_text, gold_table, marked_tables
from kgeval.samples._html import SAMPLE_CSS, highlight_sparql, sample_html, table_html
from kgeval.samples._terminal import sample_renderable

__all__ = [
    "SAMPLE_CSS",
    "AuditView",
    "ExecutionSource",
    "ExecutionView",
    "GoldView",
    "RowMark",
    "Sample",
    "SampleRow",
    "SampleSource",
    "SampleSummary",
    "SampleTable",
    "build_sample",
    "cell_text",
    "gold_for_review",
    "gold_table",
    "highlight_sparql",
    "marked_tables",
    "run_config",
    "sample_html",
    "sample_index",
    "sample_renderable",
    "store_opener",
    "table_html",
]
