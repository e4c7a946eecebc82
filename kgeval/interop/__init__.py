"""Exchange with other benchmark formats: TEXT2SPARQL and QALD JSON into our holdout format,
and our gold or a run's answers out as QALD JSON (for GERBIL-style tools)."""

from kgeval.interop._infer import inferred_tags
from kgeval.interop._qald import QaldRunExport, Unanswered, excluded_without_gold, gold_to_qald, import_qald, import_qald_benchmark, run_to_qald
from kgeval.interop._rdf import DataFileNote
from kgeval.interop._text2sparql import import_text2sparql, import_text2sparql_datasets
from kgeval.interop._write import ImportReport, QuestionRules, declare_prefixes, prefix_table

__all__ = [
    "DataFileNote",
    "ImportReport",
    "QaldRunExport",
    "QuestionRules",
    "Unanswered",
    "declare_prefixes",
    "excluded_without_gold",
    "gold_to_qald",
    "import_qald",
    "import_qald_benchmark",
    "import_text2sparql",
    "import_text2sparql_datasets",
    "inferred_tags",
    "prefix_table",
    "run_to_qald",
]
