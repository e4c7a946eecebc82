"""The holdout: KGs and questions with reference SPARQL, sealed by a hash manifest."""

from kgeval.holdout._confirmed import CONFIRMED_EMPTY_FILE, EmptyConfirmation, load_empty_confirmations
from kgeval.holdout._exclude import confirm_empty, exclude_questions, include_questions, unconfirm_empty
from kgeval.holdout._exclusions import EXCLUSIONS_FILE, Exclusion, load_exclusions
from kgeval.holdout._ids import did_you_mean, likely_meant, resolve_question_id, resolve_question_ids
from kgeval.holdout._load import QUESTIONS_FILE, load_holdout
from kgeval.holdout._manifest import MANIFEST, RESTORE_OR_RESEAL, check_kg_files, holdout_problems, read_manifest, seal_holdout, verify_holdout
from kgeval.holdout._model import Holdout, KnowledgeGraph, Question, Tag, natural_key

__all__ = [
    "CONFIRMED_EMPTY_FILE",
    "EmptyConfirmation",
    "confirm_empty",
    "load_empty_confirmations",
    "unconfirm_empty",
    "EXCLUSIONS_FILE",
    "Exclusion",
    "MANIFEST",
    "QUESTIONS_FILE",
    "RESTORE_OR_RESEAL",
    "Holdout",
    "KnowledgeGraph",
    "exclude_questions",
    "include_questions",
    "load_exclusions",
    "Question",
    "Tag",
    "check_kg_files",
    "holdout_problems",
    "load_holdout",
    "natural_key",
    "read_manifest",
    "did_you_mean",
    "likely_meant",
    "resolve_question_id",
    "resolve_question_ids",
    "seal_holdout",
    "verify_holdout",
]
