"""`kgeval rejudge RUN`: a stored run judged again as a new run, without calling its system;
what flipped and why."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kgeval.cli._common import DbOpt, TextFormat, announce_db, out, progress_bar, user_errors

if TYPE_CHECKING:
    from kgeval.config import KgevalConfig
    from kgeval.reports import RejudgeReport
    from kgeval.runs import Attempt, ResultsDB, RunMetadata, StoredAnswers

ChecklistOpt = Annotated[Path | None, typer.Option("--checklist", help="Pre-eval checklist whose holdout and gold items the re-judged run passes (default: the configuration's run.checklist, else the shipped one).")]


@user_errors
def rejudge(
    run_id: Annotated[str | None, typer.Argument(help="The finished run to judge again (it is only read).")] = None,
    source_export: Annotated[Path | None, typer.Option("--from", help="Judge an export (`kgeval export RUN`) again instead, with the holdout and gold whose manifests it names: reproduces its verdicts (exit 1 when it does not).")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="Judge with this configuration (default: the configuration the run recorded). Its seeds are the run's.")] = None,
    like: Annotated[str | None, typer.Option("--like", help="Judge with the configuration, gold and holdout another run recorded: what makes the two comparable.")] = None,
    holdout: Annotated[Path | None, typer.Option("--holdout", help="Holdout directory (default: the run's, or --like's).")] = None,
    gold: Annotated[Path | None, typer.Option("--gold", help="Gold directory, judged against as it is now (default: the run's, or --like's).")] = None,
    checklist: ChecklistOpt = None,
    db: DbOpt = Path("kgeval.duckdb"),
    format: Annotated[TextFormat, typer.Option("--format", help="text, or json (every changed verdict, the counts by cause).")] = TextFormat.text,
    shown: Annotated[int, typer.Option("--show", min=0, help="text: changed verdicts listed (json lists all).")] = 50,
) -> None:
    """Derive a new run from RUN's stored attempts (or an export's): each candidate's SPARQL
    executed again on the current store, each answer judged by the configuration's judges
    against the current gold. No system is called; a harness error stays that harness error.
    Prints what flipped and why, then, last, the new run's id."""
    from kgeval.reports import rejudge_report
    from kgeval.runs import ResultsDB

    if (run_id is None) == (source_export is None):
        raise typer.BadParameter("give a RUN, or --from EXPORT.jsonl (not both)")
    announce_db(db)
    if source_export is not None:
        report, new_id = _from_export(source_export, config, holdout, gold, checklist, db)
    else:
        with ResultsDB(db) as results:
            source = results.metadata(run_id)  # type: ignore[arg-type]
            template = results.metadata(like) if like is not None else source
            metadata = rejudged(results, results, source, _config(config, template), holdout or Path(template.holdout), gold or Path(template.gold), checklist)
            # the source's verdicts read once its run is done: the run holds its attempts only
            report, new_id = rejudge_report(results, metadata.run_id, source, results.verdicts(source.run_id), results.attempts(source.run_id)), metadata.run_id
    print_report(report, format, shown)
    if format is TextFormat.text:
        out.print(new_id)
    if source_export is not None and config is None and not report.reproduced:
        raise typer.Exit(1)  # the same configuration and gold did not give the export's verdicts: a failed check


def _from_export(path: Path, config: Path | None, holdout: Path | None, gold: Path | None, checklist: Path | None, db: Path) -> tuple[RejudgeReport, str]:
    """`--from EXPORT`: its run judged again into `db`, with the holdout and gold it names."""
    from kgeval.reports import read_export, rejudge_report
    from kgeval.runs import ResultsDB, judge_configs

    exported = read_export(path)
    source = exported.metadata
    holdout, gold = holdout or Path(source.holdout), gold or Path(source.gold)
    _same_manifests(path, source, holdout, gold)
    with ResultsDB(db) as results:
        metadata = judged_again(
            source, exported.attempts, judge_configs(exported.verdicts), results, _config(config, source), holdout, gold, checklist,
            kind="export", source_file=str(path), verdicts_sha256=exported.verdicts_sha256,
        )  # fmt: skip
        return rejudge_report(results, metadata.run_id, source, exported.verdicts, exported.attempts), metadata.run_id


def _same_manifests(path: Path, source: RunMetadata, holdout: Path, gold: Path) -> None:
    """InputError unless `holdout` and `gold` are those whose manifests the export names."""
    from kgeval.errors import InputError
    from kgeval.gold import gold_manifest_sha256
    from kgeval.holdout import read_manifest

    for what, flag, found, named in (
        ("holdout", "--holdout", lambda: read_manifest(holdout)["sha256"], source.holdout_manifest_sha256),
        ("gold", "--gold", lambda: gold_manifest_sha256(gold), source.gold_manifest_sha256),
    ):
        where = holdout if what == "holdout" else gold
        have = found()
        if have != named:
            raise InputError(
                f"{path}: its run was judged against the {what} of manifest {named[:12]}; {where} has manifest {have[:12]}: "
                f"give the {what} the run used ({flag}); a re-judging against another {what} is `kgeval rejudge RUN --{what}` on the run itself"
            )


def _config(path: Path | None, template: RunMetadata) -> KgevalConfig:
    from kgeval.config import load_config
    from kgeval.runs import run_config

    return load_config(path) if path is not None else run_config(template)


def rejudged(
    results: ResultsDB, target: ResultsDB, source: RunMetadata, cfg: KgevalConfig, holdout: Path, gold: Path, checklist: Path | None
) -> RunMetadata:
    """Re-judge the finished run `source` of `results` as a new run in `target` (the same
    database, or a scratch one)."""
    from kgeval.runs import refuse_unfinished

    refuse_unfinished(source, results.status(source.run_id))
    verdicts_sha256 = results.sealed_verdicts_sha256(source.run_id)
    attempts, configs = results.attempts(source.run_id), results.judge_configs(source.run_id)
    return judged_again(source, attempts, configs, target, cfg, holdout, gold, checklist or cfg.run.checklist, verdicts_sha256=verdicts_sha256)


def judged_again(
    source: RunMetadata,
    attempts: list[Attempt],
    judge_config_sha256: dict[str, str],
    target: ResultsDB,
    cfg: KgevalConfig,
    holdout: Path,
    gold: Path,
    checklist: Path | None,
    **origin: str | None,
) -> RunMetadata:
    """`rejudge_run` with the re-judging checklist and a progress bar on stderr; `origin`: the
    source's kind, file and verdict hash (`Derivation`)."""
    from kgeval.checklists import rejudge_checklist
    from kgeval.holdout import load_holdout
    from kgeval.runs import rejudge_config, rejudge_run, run_config

    cfg = rejudge_config(source, cfg, run_config)
    loaded = load_holdout(holdout)
    with progress_bar(f"rejudge {source.run_id}", len(loaded.evaluated_questions()) * cfg.run.seeds) as advance:
        return rejudge_run(
            source, attempts, judge_config_sha256, target, cfg, checklist=rejudge_checklist(checklist), holdout=loaded, gold_dir=gold, progress=advance, **origin,  # type: ignore[arg-type]
        )  # fmt: skip


def print_report(report: RejudgeReport, format: TextFormat, shown: int) -> None:
    from kgeval.reports import render_rejudge_json, render_rejudge_text

    if format is TextFormat.json:
        out.print(render_rejudge_json(report), markup=False, end="")
    else:
        out.print(render_rejudge_text(report, shown), markup=False, end="")


def stored_answers(results: ResultsDB, metadata: RunMetadata) -> StoredAnswers:
    """The system of a re-judged run, to resume it: its source's stored attempts (a run's in
    `results`, or an export's, read and checked again)."""
    from kgeval.reports import read_export
    from kgeval.runs import StoredAnswers

    origin = metadata.derived_from
    assert origin is not None
    if origin.source == "export":
        exported = read_export(Path(origin.source_file or ""))
        return StoredAnswers(exported.metadata, exported.attempts)
    return StoredAnswers(results.metadata(origin.source_run_id), results.attempts(origin.source_run_id))
