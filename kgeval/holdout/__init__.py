"""The holdout: KGs and questions with reference SPARQL, sealed by a hash manifest."""

from kgeval.holdout._exclude import exclude_questions, include_questions
from kgeval.holdout._exclusions import EXCLUSIONS_FILE, Exclusion, load_exclusions
from kgeval.holdout._load import QUESTIONS_FILE, load_holdout
from kgeval.holdout._manifest import MANIFEST, holdout_problems, read_manifest, seal_holdout, verify_holdout
from kgeval.holdout._model import Holdout, KnowledgeGraph, Question, Tag, natural_key

__all__ = [
    "EXCLUSIONS_FILE",
    "Exclusion",
    "MANIFEST",
    "QUESTIONS_FILE",
    "Holdout",
    "KnowledgeGraph",
    "exclude_questions",
    "include_questions",
    "load_exclusions",
    "Question",
    "Tag",
    "holdout_problems",
    "load_holdout",
    "natural_key",
    "read_manifest",
    "seal_holdout",
    "verify_holdout",
]
