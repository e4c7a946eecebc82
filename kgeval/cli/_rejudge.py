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
    from kgeval.runs import ResultsDB, RunMetadata, StoredAnswers

ChecklistOpt = Annotated[Path | None, typer.Option("--checklist", help="Pre-eval checklist whose holdout and gold items the re-judged run passes (default: the configuration's run.checklist, else the shipped one).")]


@user_errors
def rejudge(
    run_id: Annotated[str, typer.Argument(help="The finished run to judge again (it is only read).")],
    config: Annotated[Path | None, typer.Option("--config", help="Judge with this configuration (default: the configuration the run recorded). Its seeds are the run's.")] = None,
    like: Annotated[str | None, typer.Option("--like", help="Judge with the configuration, gold and holdout another run recorded: what makes the two comparable.")] = None,
    holdout: Annotated[Path | None, typer.Option("--holdout", help="Holdout directory (default: the run's, or --like's).")] = None,
    gold: Annotated[Path | None, typer.Option("--gold", help="Gold directory, judged against as it is now (default: the run's, or --like's).")] = None,
    checklist: ChecklistOpt = None,
    db: DbOpt = Path("kgeval.duckdb"),
    format: Annotated[TextFormat, typer.Option("--format", help="text, or json (every changed verdict, the counts by cause).")] = TextFormat.text,
    shown: Annotated[int, typer.Option("--show", min=0, help="text: changed verdicts listed (json lists all).")] = 50,
) -> None:
    """Derive a new run from RUN's stored attempts: each candidate's SPARQL executed again on the
    current store, each answer judged by the configuration's judges against the current gold. No
    system is called; a harness error stays that harness error. Prints what flipped and why,
    then, last, the new run's id."""
    from kgeval.reports import rejudge_report
    from kgeval.runs import ResultsDB

    announce_db(db)
    with ResultsDB(db) as results:
        source = results.metadata(run_id)
        template = results.metadata(like) if like is not None else source
        metadata = rejudged(results, results, source, _config(config, template), holdout or Path(template.holdout), gold or Path(template.gold), checklist)
        report = rejudge_report(results, metadata.run_id, source, results.verdicts(run_id), results.attempts(run_id))
    print_report(report, format, shown)
    if format is TextFormat.text:
        out.print(metadata.run_id)


def _config(path: Path | None, template: RunMetadata) -> KgevalConfig:
    from kgeval.config import load_config
    from kgeval.runs import run_config

    return load_config(path) if path is not None else run_config(template)


def rejudged(
    results: ResultsDB, target: ResultsDB, source: RunMetadata, cfg: KgevalConfig, holdout: Path, gold: Path, checklist: Path | None
) -> RunMetadata:
    """Re-judge the finished run `source` of `results` as a new run in `target` (the same
    database, or a scratch one); a progress bar on stderr."""
    from kgeval.checklists import rejudge_checklist
    from kgeval.holdout import load_holdout
    from kgeval.runs import refuse_unfinished, rejudge_config, rejudge_run, run_config

    refuse_unfinished(source, results.status(source.run_id))
    cfg = rejudge_config(source, cfg, run_config)
    attempts, verdicts = results.attempts(source.run_id), results.verdicts(source.run_id)
    loaded = load_holdout(holdout)
    with progress_bar(f"rejudge {source.run_id}", len(loaded.evaluated_questions()) * cfg.run.seeds) as advance:
        return rejudge_run(
            source, attempts, verdicts, target, cfg, checklist=rejudge_checklist(checklist or cfg.run.checklist), holdout=loaded, gold_dir=gold,
            progress=advance, verdicts_sha256=results.sealed_verdicts_sha256(source.run_id),
        )  # fmt: skip


def print_report(report: RejudgeReport, format: TextFormat, shown: int) -> None:
    from kgeval.reports import render_rejudge_json, render_rejudge_text

    if format is TextFormat.json:
        out.print(render_rejudge_json(report), markup=False, end="")
    else:
        out.print(render_rejudge_text(report, shown), markup=False, end="")


def stored_answers(results: ResultsDB, metadata: RunMetadata) -> StoredAnswers:
    """The system of a re-judged run, to resume it: its source's stored attempts."""
    from kgeval.runs import StoredAnswers

    origin = metadata.derived_from
    assert origin is not None
    return StoredAnswers(results.metadata(origin.source_run_id), results.attempts(origin.source_run_id))
