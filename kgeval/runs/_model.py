"""Records of a run: its metadata, its questions, and its attempts."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

AttemptState = Literal["answered", "error"]
"""Terminal state of an attempt: answered (judged), or an error kind (counted, never judged)."""

ErrorKind = Literal["missing", "invalid_sparql", "system_error"]
"""Why an attempt ended as an error: no recorded answer, SPARQL that did not parse or run,
or a failure the system itself reported."""


class RunMetadata(BaseModel):
    """Everything needed to know what a run measured and whether two runs compare."""

    run_id: str
    system: str
    """System name ("oracle", "weak", "replay", ...)."""
    system_version: str
    """The system's declared version (for replay: the hash of the replay file)."""
    holdout: str
    """Path of the holdout directory."""
    holdout_manifest_sha256: str
    gold_manifest_sha256: str
    seeds: list[int]
    primary_judge: str
    judge_versions: dict[str, str]
    """Version of every enabled judge, by name."""
    config_sha256: str
    """sha256 of the whole kgeval configuration used."""
    kgeval_version: str
    git_commit: str | None = None
    started_at: str
    finished_at: str | None = None


class RunQuestion(BaseModel):
    """A question as the run saw it, so reports need neither the holdout nor the gold."""

    kg: str
    question_id: str
    question: str
    domain: str
    qtype: str
    honeypot: bool


class Attempt(BaseModel):
    """One (question, seed) attempt, persisted as soon as it completes."""

    kg: str
    question_id: str
    seed: int
    state: AttemptState
    error_kind: ErrorKind | None = None
    error: str | None = None
    """What went wrong, for an error state."""
    sparql: str | None = None
    answer: list[Any] | None = None
    stop_reason: str = "stop"
    latency_ms: float = 0.0
    """Time the system took to respond."""
    result_total: int | None = None
    """Rows returned by executing the system's SPARQL, when it gave SPARQL."""
    extra: dict[str, Any] = Field(default_factory=dict)
