"""`kgeval rejudge`: a stored run's answers judged again, without calling its system.

A re-judged run is a run (DESIGN invariant 15): `execute_run` plans it, passes it through a
checklist, executes each candidate's SPARQL again on the current store (the sandbox, the
budgets of the configuration), judges it with every judge of the configuration against the
current gold, persists each attempt as it completes and seals the run. Only its system differs:
`StoredAnswers` answers each (question, seed) with the output the source recorded (its SPARQL,
its answer list, its stop reason, its tries and their time), so the one path that names terminal
states and judges a live system's output judges these too. A harness error stays that harness
error (nothing was judged; nothing is): its stored error is given back as the system's.

The new run records where it came from (`Derivation`): the source, its judge versions and
configuration hashes, its gold and holdout manifests beside the new run's own, the questions
whose gold entry changed since, and the source's verdict hash. The source is only read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

from kgeval.config import KgevalConfig, PipelineConfig
from kgeval.errors import CheckFailed, InputError, KgevalError
from kgeval.gold import gold_manifest_sha256, index_gold, version_name
from kgeval.holdout import Holdout, Question
from kgeval.judges import Verdict
from kgeval.runs._db import ResultsDB
from kgeval.runs._model import Attempt, Derivation, RunMetadata, Try
from kgeval.runs._run import Checklist, Progress, execute_run
from kgeval.systems import OutputCut, SystemOutput


class StoredAnswers:
    """A "system" that answers from a source run's stored attempts: it is the source's system as
    far as the run records go (name, kind, version, reasoning, pipeline), and calls nothing."""

    def __init__(self, source: RunMetadata, attempts: Iterable[Attempt]) -> None:
        self.source = source.run_id
        self.name, self.kind, self.version = source.system, source.system_kind, source.system_version
        self.reasoning = dict(source.reasoning)
        self.pipeline = PipelineConfig.model_validate(source.pipeline) if source.pipeline is not None else None
        self._attempts = {(a.question_id, a.seed): a for a in attempts}

    def respond(self, question: Question, seed: int) -> SystemOutput:
        return self.recorded(question, seed)[0]

    def recorded(self, question: Question, seed: int) -> tuple[SystemOutput, list[Try], float]:
        """The source's output for (question, seed), its tries and its latency."""
        attempt = self._attempts.get((question.id, seed))
        if attempt is None or attempt.kg != question.kg:
            missing = f"run {self.source} has no attempt of {question.kg}/{question.id} seed {seed} (the question was not asked then)"
            return SystemOutput(stop_reason="missing", error=missing, error_kind="missing"), [], 0.0
        return stored_output(attempt), list(attempt.tries), attempt.latency_ms


def stored_output(attempt: Attempt) -> SystemOutput:
    """The system output an attempt recorded, as the run read it: a harness error as its error
    (kind and message), an output over the byte budget as its stored head with the cut."""
    fields = {
        "sparql": attempt.sparql, "answer": attempt.answer, "stop_reason": attempt.stop_reason, "finish_reason": attempt.finish_reason,
        "served_version": attempt.served_version, "usage": attempt.usage,
    }  # fmt: skip
    if attempt.state == "error":
        return SystemOutput(**fields, error=attempt.error or f"harness error {attempt.error_kind}", error_kind=attempt.error_kind or "other")
    if "output_cut" in attempt.extra:
        return SystemOutput(**fields, cut=OutputCut.model_validate(attempt.extra["output_cut"]))
    if attempt.extra.get("failure") == "invalid_sparql" and attempt.sparql is None and attempt.answer is None:
        # a response with text and no query: judged as the model's failure, with its message
        return SystemOutput(**fields, error=attempt.extra.get("sparql_error") or "no query in the response", error_kind="invalid_sparql")
    return SystemOutput(**fields)


def rejudge_config(source: RunMetadata, config: KgevalConfig | None, read: Callable[[RunMetadata], KgevalConfig]) -> KgevalConfig:
    """The configuration a re-judged run runs with: `config` (else the source's recorded one,
    `read`), asking the source's number of seeds (a seed's answer is never sampled again)."""
    base = config if config is not None else read(source)
    if source.seeds != list(range(len(source.seeds))):
        raise InputError(f"run {source.run_id}: seeds {source.seeds} are not 0..{len(source.seeds) - 1}: it cannot be re-judged as a run")
    return base.model_copy(update={"run": base.run.model_copy(update={"seeds": len(source.seeds)})})


def judge_configs(verdicts: Iterable[tuple[str, int, Verdict]]) -> dict[str, str]:
    """Each judge of `verdicts` -> the configuration hash its first verdict records."""
    found: dict[str, str] = {}
    for _, _, verdict in verdicts:
        found.setdefault(verdict.judge, verdict.config_sha256)
    return found


def derivation(
    source: RunMetadata,
    attempts: list[Attempt],
    judge_config_sha256: dict[str, str],
    holdout: Holdout,
    gold_dir: Path,
    *,
    kind: Literal["run", "export"] = "run",
    source_file: str | None = None,
    verdicts_sha256: str | None = None,
) -> Derivation:
    """What the re-judged run records of its source (`Derivation`)."""
    asked = {q.id for q in holdout.evaluated_questions()}
    gone = {a.question_id: f"not evaluated in {holdout.root} now (removed or excluded since)" for a in attempts if a.question_id not in asked}
    changed, note = gold_changes(source.gold_manifest_sha256, gold_dir)
    return Derivation(
        source=kind, source_run_id=source.run_id, source_file=source_file, source_judge_versions=dict(source.judge_versions),
        source_judge_config_sha256=dict(judge_config_sha256), source_config_sha256=source.config_sha256,
        source_gold_manifest_sha256=source.gold_manifest_sha256, source_holdout_manifest_sha256=source.holdout_manifest_sha256,
        source_question_set_sha256=source.question_set_sha256, source_verdicts_sha256=verdicts_sha256,
        gold_changed=changed, gold_note=note, not_rejudged=dict(sorted(gone.items())),
    )  # fmt: skip


def rejudge_run(
    source: RunMetadata,
    attempts: list[Attempt],
    judge_config_sha256: dict[str, str],
    db: ResultsDB,
    config: KgevalConfig,
    *,
    checklist: Checklist,
    holdout: Holdout,
    gold_dir: Path,
    progress: Progress | None = None,
    kind: Literal["run", "export"] = "run",
    source_file: str | None = None,
    verdicts_sha256: str | None = None,
) -> RunMetadata:
    """Judge `source`'s stored attempts again as a new run in `db` (`execute_run` with
    `StoredAnswers` for its system); return the finished run's metadata. `config`: see
    `rejudge_config`; `judge_config_sha256`: the source's judges' configuration hashes, as its
    verdicts record them. The source is only read."""
    origin = derivation(source, attempts, judge_config_sha256, holdout, gold_dir, kind=kind, source_file=source_file, verdicts_sha256=verdicts_sha256)
    system = StoredAnswers(source, attempts)
    return execute_run(holdout, gold_dir, system, config, db, progress, checklist=checklist, derived_from=origin)


def gold_changes(source_manifest: str, gold_dir: Path) -> tuple[dict[str, str], str]:
    """(question id -> what changed, a note when it cannot be said) between the gold version the
    source was judged against (kept beside the current one as `v-<hash>`) and the gold in force."""
    try:
        if gold_manifest_sha256(gold_dir) == source_manifest:
            return {}, ""
        now = index_gold(gold_dir)
    except (KgevalError, OSError):
        return {}, ""  # the run's checklist names what is wrong with the gold
    then_dir = Path(gold_dir) / version_name(source_manifest)
    try:
        then = index_gold(then_dir)
    except (KgevalError, OSError) as exc:
        return {}, f"the gold the source was judged against ({version_name(source_manifest)}) cannot be read in {gold_dir}: {exc}"
    changed = {}
    for qid in sorted(then.entries.keys() | now.entries.keys()):
        before, after = then.entries.get(qid), now.entries.get(qid)
        if before is None or after is None:
            changed[qid] = "gold entry added" if before is None else "gold entry removed"
        elif before.query_sha256 != after.query_sha256:
            changed[qid] = "reference query changed"
        elif before.result_digest != after.result_digest:
            changed[qid] = f"gold result changed ({before.total} rows then, {after.total} now)"
    return changed, ""


def refuse_unfinished(source: RunMetadata, status: str) -> None:
    """Only a finished run is re-judged: a running one is resumed first, a refused one has no answers."""
    if status == "refused":
        raise InputError(f"run {source.run_id} was refused by its pre-eval checklist: it has no answers to judge again")
    if status != "finished":
        raise CheckFailed(f"run {source.run_id} has not finished (status {status}): finish it with `kgeval run --resume {source.run_id}`, then re-judge it")
