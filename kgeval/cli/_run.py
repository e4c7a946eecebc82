"""`kgeval run`, `kgeval report`, `kgeval export`, `kgeval quickstart`."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from kgeval.cli._interop import export_run_qald
from kgeval.cli._common import ConfigOpt, DbOpt, GoldOpt, HoldoutOpt, out, progress_bar, user_errors
from kgeval.config import KgevalConfig, load_config
from kgeval.holdout import load_holdout
from kgeval.reports import build_report, export_lines, format_accuracy, render_html, render_json, render_markdown
from kgeval.runs import ResultsDB, RunMetadata, execute_run
from kgeval.systems import system_from_name


class Format(StrEnum):
    md = "md"
    json = "json"
    html = "html"


def _run(holdout: Path, gold: Path, system: str, replay: Path | None, cfg: KgevalConfig, db: Path) -> RunMetadata:
    loaded = load_holdout(holdout)
    sut = system_from_name(system, replay=replay)
    with ResultsDB(db) as results, progress_bar(f"run {system}", len(loaded.questions()) * cfg.run.seeds) as advance:
        return execute_run(loaded, gold, sut, cfg, results, advance)


@user_errors
def run(
    system: Annotated[str, typer.Option("--system", help="oracle, weak or replay.")],
    holdout: HoldoutOpt = Path("holdout"),
    gold: GoldOpt = Path("gold"),
    replay: Annotated[Path | None, typer.Option("--replay", help="JSONL of recorded answers (system replay).")] = None,
    seeds: Annotated[int | None, typer.Option("--seeds", min=1, help="Attempts per question (default from config: 3).")] = None,
    db: DbOpt = Path("kgeval.duckdb"),
    config: ConfigOpt = None,
) -> None:
    """Run a system on every question x seed; print a summary and, last, the run id."""
    cfg = load_config(config)
    if seeds is not None:
        cfg = cfg.model_copy(update={"run": cfg.run.model_copy(update={"seeds": seeds})})
    metadata = _run(holdout, gold, system, replay, cfg, db)
    with ResultsDB(db, read_only=True) as results:
        report = build_report(results, metadata.run_id)
    out.print(f"accuracy: {format_accuracy(report.overall)}; errors: {sum(report.errors.values())}")
    out.print(metadata.run_id)


@user_errors
def report(
    run_id: Annotated[str, typer.Argument(help="Run id printed by `kgeval run`.")],
    db: DbOpt = Path("kgeval.duckdb"),
    format: Annotated[Format, typer.Option("--format", help="md, json or html (one self-contained page).")] = Format.md,
    gold: GoldOpt = Path("gold"),
    holdout: Annotated[Path | None, typer.Option("--holdout", help="Holdout for gold review coverage (default: the run's).")] = None,
    config: ConfigOpt = None,
) -> None:
    """Accuracy with Wilson 95% intervals and a Clopper-Pearson bound; seed spread and consistency;
    honeypots; error kinds; audits of accepts; gold review coverage; wrong answers."""
    with ResultsDB(db, read_only=True) as results:
        built = build_report(results, run_id, gold_dir=gold, holdout_dir=holdout, config=load_config(config))
    renderers = {Format.md: render_markdown, Format.json: render_json, Format.html: render_html}
    text = renderers[format](built)
    out.print(text, markup=False, end="")


class ExportFormat(StrEnum):
    jsonl = "jsonl"
    qald = "qald"


@user_errors
def export(
    run_id: Annotated[str, typer.Argument(help="Run id printed by `kgeval run`.")],
    db: DbOpt = Path("kgeval.duckdb"),
    format: Annotated[ExportFormat, typer.Option("--format", help="jsonl (every attempt, verdicts) or qald (one seed, QALD JSON).")] = ExportFormat.jsonl,
    seed: Annotated[int, typer.Option("--seed", help="qald: the seed to export.")] = 0,
    holdout: Annotated[Path | None, typer.Option("--holdout", help="qald: execute each SPARQL on this holdout's KG for typed answers, and use source ids.")] = None,
    config: ConfigOpt = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="qald: file to write (default: stdout).")] = None,
) -> None:
    """Write one JSON line per attempt with its verdicts to stdout, or one seed as QALD JSON."""
    if format is ExportFormat.qald:
        export_run_qald(run_id, db, seed, holdout, config, output)
        return
    with ResultsDB(db, read_only=True) as results:
        for line in export_lines(results, run_id):
            print(line)


@user_errors
def quickstart(
    holdout: HoldoutOpt = Path("holdout"),
    gold: GoldOpt = Path("gold"),
    db: DbOpt = Path("kgeval.duckdb"),
) -> None:
    """The pre-release run on the sample holdout: oracle and weak controls, both reports."""
    cfg = load_config(None)
    for system in ("oracle", "weak"):
        metadata = _run(holdout, gold, system, None, cfg, db)
        with ResultsDB(db, read_only=True) as results:
            out.print(render_markdown(build_report(results, metadata.run_id)), markup=False)

