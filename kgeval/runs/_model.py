"""Records of a run: its metadata, its questions, its attempts (with every try), its receipt."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from kgeval.systems import ErrorKind, StopReason, Usage

AttemptState = Literal["answered", "incomplete", "error"]
"""Terminal state of an attempt: answered (judged); incomplete (cut off at the output limit but
with a judgeable answer: judged, and flagged); error (an `ErrorKind`: counted, never judged)."""

RunStatus = Literal["running", "finished", "refused"]
"""running (or killed: resume it), finished, refused (the pre-eval checklist failed; nothing sent)."""


class Derivation(BaseModel):
    """Where a re-judged run's answers came from (`kgeval rejudge`): the source's conditions of
    measurement, kept beside the new run's own (its gold, holdout and judges are the current ones)."""

    source: Literal["run", "export"]
    """A run of the results database, or an export file (`kgeval export`)."""
    source_run_id: str
    """The run whose attempts were judged again (an export names it)."""
    source_file: str | None = None
    """The export file, for `source: export`."""
    source_judge_versions: dict[str, str]
    """The source's judge versions, by judge name."""
    source_judge_config_sha256: dict[str, str] = Field(default_factory=dict)
    """The configuration hash of each of the source's judges, as its verdicts record it."""
    source_config_sha256: str
    """sha256 of the source's whole configuration."""
    source_gold_manifest_sha256: str
    source_holdout_manifest_sha256: str
    source_question_set_sha256: str = ""
    source_verdicts_sha256: str | None = None
    """The hash over the source's verdicts its seal records (`_seal.verdicts_sha256`); None for
    a source sealed before seals recorded it."""
    gold_changed: dict[str, str] = Field(default_factory=dict)
    """Questions whose gold entry differs from the one the source was judged against: question
    id -> what changed."""
    gold_note: str = ""
    """Why `gold_changed` could not be worked out, when it could not (the source's gold version
    is no longer on disk)."""
    not_rejudged: dict[str, str] = Field(default_factory=dict)
    """The source's questions this run does not judge (gone from the holdout): id -> why."""


class RunMetadata(BaseModel):
    """Everything needed to know what a run measured and whether two runs compare."""

    run_id: str
    system: str
    """System name ("oracle", "weak", "replay", "http", "gemini")."""
    system_kind: str = "control"
    """control, replay, endpoint or model."""
    system_version: str
    """The system's declared version (for replay: the hash of the replay file)."""
    served_versions: list[str] = Field(default_factory=list)
    """Versions the system reported serving (version header, model version), sorted."""
    reasoning: dict[str, Any] = Field(default_factory=dict)
    """Reasoning settings (thinking budget, max output tokens, ...) as configured."""
    pipeline: dict[str, Any] | None = None
    """Pipeline features the system declared (defaults and per-KG overrides)."""
    holdout: str
    """Path of the holdout directory."""
    gold: str = ""
    """Path of the gold directory."""
    replay: str | None = None
    """Path of the replay file (system replay)."""
    holdout_manifest_sha256: str
    gold_manifest_sha256: str
    suite_manifest_sha256: str | None = None
    """sha256 of the manifest of the test suites its accepts were checked on (`<gold>/suites`);
    None when the run was judged without suites (none built, or `suite.check_accepts` off)."""
    question_set_sha256: str = ""
    """sha256 over every (KG, question id, question text, reference-query hash) of the run."""
    excluded: dict[str, str] = Field(default_factory=dict)
    """Questions excluded from the run on record (holdout EXCLUDED.yaml): question id -> why."""
    confirmed_empty: dict[str, str] = Field(default_factory=dict)
    """Questions whose empty answer is confirmed on record for their reference query (holdout
    CONFIRMED_EMPTY.yaml): question id -> why."""
    store_engine: str = ""
    """Engine and version that executed candidate SPARQL, e.g. "oxigraph-embedded 0.5.2"."""
    seeds: list[int]
    primary_judge: str
    judge_versions: dict[str, str]
    """Version of every enabled judge, by name."""
    config_sha256: str
    """sha256 of the whole kgeval configuration used."""
    config: dict[str, Any] = Field(default_factory=dict)
    """The configuration itself (to resume a run exactly as it started)."""
    kgeval_version: str
    git_commit: str | None = None
    started_at: str
    finished_at: str | None = None
    resumed_at: list[str] = Field(default_factory=list)
    """When the run was resumed after being stopped, if ever."""
    sealed_when_ended: bool = False
    """Written by a kgeval that seals a run when it ends (`_seal`): such a run, ended, without
    its seal had it removed. False for runs written before seals existed."""
    derived_from: Derivation | None = None
    """Set on a re-judged run (`kgeval rejudge`): the run or export whose stored answers it
    judged again, without calling the system. None for a run that called its system."""


class RunQuestion(BaseModel):
    """A question as the run saw it, so reports need neither the holdout nor the gold."""

    kg: str
    question_id: str
    question: str
    domain: str
    qtype: str
    honeypot: bool


class Try(BaseModel):
    """One call to the system within an attempt; transient failures are tried again."""

    n: int
    """1 for the first try."""
    started_at: str
    latency_ms: float
    outcome: Literal["ok"] | ErrorKind
    """"ok" when the call returned an output the runner could classify; else the error kind."""
    error: str | None = None
    http_status: int | None = None


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
    stop_reason: StopReason = "stop"
    latency_ms: float = 0.0
    """Time the system took to respond (all tries, waits included)."""
    result_total: int | None = None
    """Rows returned by executing the system's SPARQL, when it gave SPARQL."""
    extra: dict[str, Any] = Field(default_factory=dict)
    finish_reason: str | None = None
    """The provider's own stop reason, verbatim."""
    served_version: str | None = None
    """The version the system reported serving for this attempt."""
    usage: Usage | None = None
    """Token usage of the last try (prompt, candidates, thoughts)."""
    tries: list[Try] = Field(default_factory=list)
    """Every call made for this attempt, in order."""


class ChecklistItem(BaseModel):
    """One line of a pre-eval checklist receipt."""

    item: str
    """The item's name, e.g. "gold_verifies", "caught:oracle_below_99"."""
    observed: str
    """What was observed, in words a reader can check."""
    passed: bool
    detail: str = ""
    """Why it failed, or what it checked."""


class Receipt(BaseModel):
    """The pre-eval checklist's result; stored with the run (DESIGN invariant 6)."""

    checklist_sha256: str
    """sha256 of the checklist files evaluated (pre_eval.yaml and caught.yaml)."""
    items: list[ChecklistItem]

    @property
    def passed(self) -> bool:
        return all(i.passed for i in self.items)

    def failures(self) -> list[ChecklistItem]:
        return [i for i in self.items if not i.passed]
