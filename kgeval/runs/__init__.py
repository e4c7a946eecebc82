"""Runs: plan, pass the pre-eval checklist, dispatch every question x seed to a system (N in
flight), persist and judge each attempt as it completes; resume; compare runs."""

from kgeval.runs._attempt import Execution, call_with_retries, execute_candidate, judge_candidate, judge_output, run_attempt
from kgeval.runs._compare import BLOCKING_FIELDS, REPORTED_FIELDS, Difference, blocking, comparability
from kgeval._duckdb import DamagedDatabase, DiskFull
from kgeval.runs._db import ResultsDB, connect_results, kgeval_tables
from kgeval.runs._dispatch import RateLimiter, dispatch
from kgeval.runs._journal import DamagedJournal, RunInProgress
from kgeval.runs._model import (
    Attempt,
    AttemptState,
    ChecklistItem,
    Derivation,
    Receipt,
    RunMetadata,
    RunQuestion,
    RunStatus,
    Try,
)
from kgeval.runs._run import (
    Checklist,
    ChecklistFailed,
    RunPlan,
    execute_run,
    git_commit,
    new_run_id,
    plan_run,
    question_set_sha256,
    resume_run,
    run_config,
    store_lookup,
)
from kgeval.runs._rejudge import StoredAnswers, gold_changes, judge_configs, refuse_unfinished, rejudge_config, rejudge_run, stored_output
from kgeval.runs._seal import RunChanged, verdict_digest, verdicts_sha256
from kgeval.runs._suite_check import SUITE_KEY, SuiteChecker, neighbour_store, suite_differs
from kgeval.systems import ErrorKind

__all__ = [
    "BLOCKING_FIELDS",
    "REPORTED_FIELDS",
    "Attempt",
    "AttemptState",
    "Checklist",
    "ChecklistFailed",
    "ChecklistItem",
    "DamagedDatabase",
    "DamagedJournal",
    "Derivation",
    "Difference",
    "DiskFull",
    "ErrorKind",
    "Execution",
    "RateLimiter",
    "Receipt",
    "ResultsDB",
    "RunMetadata",
    "RunChanged",
    "RunInProgress",
    "RunPlan",
    "RunQuestion",
    "RunStatus",
    "SUITE_KEY",
    "SuiteChecker",
    "StoredAnswers",
    "Try",
    "blocking",
    "call_with_retries",
    "comparability",
    "neighbour_store",
    "suite_differs",
    "connect_results",
    "dispatch",
    "execute_candidate",
    "execute_run",
    "git_commit",
    "gold_changes",
    "judge_configs",
    "judge_candidate",
    "judge_output",
    "kgeval_tables",
    "new_run_id",
    "plan_run",
    "question_set_sha256",
    "refuse_unfinished",
    "rejudge_config",
    "rejudge_run",
    "resume_run",
    "run_attempt",
    "run_config",
    "store_lookup",
    "stored_output",
    "verdict_digest",
    "verdicts_sha256",
]
