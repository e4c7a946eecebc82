"""Judges: deterministic decisions on whether an answer is right, with their reasons."""

from kgeval.judges._execution import ExecutionJudge, align_columns, project, table_of_items, table_of_result
from kgeval.judges._factory import judge_from_config, judges_from_config
from kgeval.judges._leniency import READINGS, RESULT_RULES, RULES, RuleName, lenient_config, rules_on, standard_config, with_rules
from kgeval.judges._lookup import KgLookup, fold, kg_lookup
from kgeval.judges._model import FAILURE_WORDS, Candidate, FailureKind, Judge, Verdict
from kgeval.judges._normalize import Normalizer, iri_tail, item_term, normalize_item, normalize_term, normalize_value
from kgeval.judges._rules import answer_in_query, is_uninformative, missing_vocabulary, says_nothing
from kgeval.judges._seed import SeedJudge

__all__ = [
    "FAILURE_WORDS",
    "READINGS",
    "RESULT_RULES",
    "RULES",
    "RuleName",
    "Candidate",
    "FailureKind",
    "KgLookup",
    "kg_lookup",
    "ExecutionJudge",
    "Judge",
    "Normalizer",
    "SeedJudge",
    "Verdict",
    "align_columns",
    "answer_in_query",
    "fold",
    "iri_tail",
    "is_uninformative",
    "item_term",
    "judge_from_config",
    "judges_from_config",
    "lenient_config",
    "missing_vocabulary",
    "normalize_item",
    "normalize_term",
    "normalize_value",
    "project",
    "rules_on",
    "says_nothing",
    "standard_config",
    "table_of_items",
    "table_of_result",
    "with_rules",
]
