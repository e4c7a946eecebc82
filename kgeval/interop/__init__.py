"""Exchange with other benchmark formats: TEXT2SPARQL and QALD JSON into our holdout format,
and our gold or a run's answers out as QALD JSON (for GERBIL-style tools)."""

from kgeval.interop._qald import gold_to_qald, import_qald, run_to_qald
from kgeval.interop._text2sparql import import_text2sparql
from kgeval.interop._write import ImportReport

__all__ = ["ImportReport", "gold_to_qald", "import_qald", "import_text2sparql", "run_to_qald"]
