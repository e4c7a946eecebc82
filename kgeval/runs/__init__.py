"""Runs: dispatch every question x seed to a system, persist and judge each attempt."""

from kgeval.runs._db import ResultsDB
from kgeval.runs._model import Attempt, AttemptState, ErrorKind, RunMetadata, RunQuestion
from kgeval.runs._run import execute_run, git_commit, new_run_id, run_attempt

__all__ = [
    "Attempt",
    "AttemptState",
    "ErrorKind",
    "ResultsDB",
    "RunMetadata",
    "RunQuestion",
    "execute_run",
    "git_commit",
    "new_run_id",
    "run_attempt",
]
