"""The holdout: KGs and questions with reference SPARQL, sealed by a hash manifest."""

from kgeval.holdout._load import QUESTIONS_FILE, load_holdout
from kgeval.holdout._manifest import MANIFEST, holdout_problems, read_manifest, seal_holdout, verify_holdout
from kgeval.holdout._model import Holdout, KnowledgeGraph, Question, Tag

__all__ = [
    "MANIFEST",
    "QUESTIONS_FILE",
    "Holdout",
    "KnowledgeGraph",
    "Question",
    "Tag",
    "holdout_problems",
    "load_holdout",
    "read_manifest",
    "seal_holdout",
    "verify_holdout",
]
