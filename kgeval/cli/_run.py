"""`kgeval run`, `kgeval report`, `kgeval export`, `kgeval quickstart`."""

from __future__ import annotations

import shutil
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kgeval._activity import Activity
from kgeval._gc import RARE_COLLECTIONS
from kgeval.cli._common import ConfigOpt, DbOpt, GoldOpt, HoldoutOpt, announce_db, err, heartbeat, out, progress_bar, refuse_overwriting, user_errors

if TYPE_CHECKING:
    from collections.abc import Callable

    from kgeval.config import KgevalConfig
    from kgeval.reports import RunReport
    from kgeval.runs import RunMetadata
    from kgeval.systems import System


class Format(StrEnum):
    md = "md"
    json = "json"
    html = "html"


def _run(
    holdout: Path, gold: Path, system: str, replay: Path | None, cfg: KgevalConfig, db: Path, compare_with: list[str] | None = None
) -> RunMetadata:
    from kgeval.holdout import load_holdout
    from kgeval.stores import open_kg_stores

    loaded = load_holdout(holdout)
    # opened first: their sandbox workers load the KGs while the run's machinery (judges, rdflib,
    # DuckDB: a third of a second of CPU) is imported and the system and checklist are read
    stores = open_kg_stores(loaded.kgs, cfg.store, start_ahead=cfg.run.concurrency)
    taken = False
    try:
        from kgeval.checklists import pre_eval_checklist
        from kgeval.runs import ResultsDB, execute_run
        from kgeval.systems import system_from_name

        checklist = pre_eval_checklist(cfg.run.checklist)
        sut = system_from_name(system, replay=replay, config=cfg, holdout=loaded)
        if note := getattr(sut, "note", None):  # a replay matched to the holdout ignoring case
            err.print(f"warning: {note}", markup=False)
        total, done, activity = len(loaded.evaluated_questions()) * cfg.run.seeds, [0], Activity()
        with ResultsDB(db) as results, progress_bar(f"run {system}", total) as advance:
            counted = _counting(done, advance)
            with heartbeat(activity, lambda: f"run {system}: {done[0]} of {total} attempts done", cfg.progress):  # a held call is named while it runs
                taken = True  # the run closes the stores from here on, whatever happens
                return execute_run(
                    loaded, gold, sut, cfg, results, counted, checklist=checklist, replay=replay, compare_with=compare_with, activity=activity, stores=stores
                )
    finally:
        if not taken:
            for store in stores.values():
                getattr(store, "close", lambda: None)()


def _counting(done: list[int], advance: Callable[[str], None]) -> Callable[[str], None]:
    """`advance`, also counting the attempts done in `done[0]` for the heartbeat's line."""

    def counted(item: str) -> None:
        done[0] += 1
        advance(item)

    return counted


def _resume(run_id: str, db: Path, checklist_path: Path | None) -> RunMetadata:
    from kgeval.checklists import pre_eval_checklist, rejudge_checklist
    from kgeval.config import KgevalConfig
    from kgeval.holdout import load_holdout
    from kgeval.runs import ResultsDB, resume_run
    from kgeval.systems import system_from_name

    def system_for(meta: RunMetadata, cfg: KgevalConfig) -> System:
        if meta.derived_from is not None:  # a re-judged run answers from its source's stored attempts, never the system
            from kgeval.cli._rejudge import stored_answers

            return stored_answers(results, meta)
        holdout = load_holdout(Path(meta.holdout))
        return system_from_name(meta.system, replay=Path(meta.replay) if meta.replay else None, config=cfg, holdout=holdout)

    with ResultsDB(db) as results:
        meta = results.metadata(run_id)
        cfg = KgevalConfig.model_validate(meta.config)
        checklist = (rejudge_checklist if meta.derived_from is not None else pre_eval_checklist)(checklist_path or cfg.run.checklist)
        total, activity = len(results.questions(run_id)) * len(meta.seeds), Activity()
        done = [len(results.done_keys(run_id))]
        with progress_bar(f"resume {run_id}", total) as advance:
            for _ in range(done[0]):
                advance("")
            counted = _counting(done, advance)
            # a held call is named while it runs, as in a run that is not resumed
            with heartbeat(activity, lambda: f"resume {run_id}: {done[0]} of {total} attempts done", cfg.progress):
                return resume_run(run_id, results, system_for, counted, checklist=checklist, activity=activity)


@user_errors
def run(
    system: Annotated[str | None, typer.Option("--system", help="oracle, weak, replay, http, gemini or openai.")] = None,
    holdout: HoldoutOpt = Path("holdout"),
    gold: GoldOpt = Path("gold"),
    replay: Annotated[Path | None, typer.Option("--replay", help="JSONL of recorded answers (system replay).")] = None,
    seeds: Annotated[int | None, typer.Option("--seeds", min=1, help="Attempts per question (default from config: 3).")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1, help="Attempts in flight (default from config: 8).")] = None,
    checklist: Annotated[Path | None, typer.Option("--checklist", help="Pre-eval checklist (default: run.checklist, else the one shipped in the package).")] = None,
    compare_with: Annotated[list[str] | None, typer.Option("--compare-with", help="A run this one must be comparable with (repeatable).")] = None,
    resume: Annotated[str | None, typer.Option("--resume", help="Continue this stopped run: only attempts not yet persisted are sent.")] = None,
    db: DbOpt = Path("kgeval.duckdb"),
    config: ConfigOpt = None,
) -> None:
    """Pass the pre-eval checklist (else exit 1, nothing sent), then run a system on every
    question x seed; print a summary and, last, the run id."""
    with RARE_COLLECTIONS:  # from the imports to the headline: see kgeval/_gc.py
        _run_and_print(system, holdout, gold, replay, seeds, concurrency, checklist, compare_with, resume, db, config)


def _run_and_print(
    system: str | None, holdout: Path, gold: Path, replay: Path | None, seeds: int | None, concurrency: int | None, checklist: Path | None,
    compare_with: list[str] | None, resume: str | None, db: Path, config: Path | None,
) -> None:  # fmt: skip
    """`run`'s work: the run (or its resume), then its summary and, last, the run id."""
    from kgeval.config import load_config

    announce_db(db)
    if resume is not None:
        given = {"--system": system, "--replay": replay, "--seeds": seeds, "--concurrency": concurrency, "--compare-with": compare_with, "--config": config}
        ignored = [name for name, value in given.items() if value]
        if ignored:  # the run continues as it was planned: its recorded configuration, system and seeds
            err.print(f"--resume continues {resume} with the configuration, system and seeds it recorded: {', '.join(ignored)} ignored", markup=False)
        metadata = _resume(resume, db, checklist)
    else:
        if system is None:
            raise typer.BadParameter("give --system (or --resume RUN)")
        cfg = load_config(config)
        run_update = {k: v for k, v in {"seeds": seeds, "concurrency": concurrency, "checklist": checklist}.items() if v is not None}
        if run_update:
            cfg = cfg.model_copy(update={"run": cfg.run.model_copy(update=run_update)})
        metadata = _run(holdout, gold, system, replay, cfg, db, compare_with)
    from kgeval.reports import format_accuracy, run_headline
    from kgeval.runs import ResultsDB

    with ResultsDB(db, read_only=True) as results:
        h, overall = run_headline(results, metadata.run_id)
    excluded = f"; excluded on record: {len(metadata.excluded)}" if metadata.excluded else ""
    out.print(f"accuracy: {format_accuracy(overall)}; incomplete: {h.incomplete}; errors: {h.errors}; tries: {h.tries}{excluded}")
    if h.withheld:
        out.print(f"harness report: {h.withheld}")
    out.print(metadata.run_id)


@user_errors
def report(
    run_id: Annotated[str, typer.Argument(help="Run id printed by `kgeval run`.")],
    db: DbOpt = Path("kgeval.duckdb"),
    format: Annotated[Format, typer.Option("--format", help="md, json or html (one self-contained page).")] = Format.md,
    gold: GoldOpt = Path("gold"),
    holdout: Annotated[Path | None, typer.Option("--holdout", help="Holdout for gold review coverage (default: the run's).")] = None,
    config: ConfigOpt = None,
    judge: Annotated[str | None, typer.Option("--judge", help="Publish this enabled judge's figures (default: the pre-registered primary, which stays marked as such).")] = None,
) -> None:
    """Accuracy with Wilson 95% intervals and a Clopper-Pearson bound, the bound if excluded
    attempts were wrong, and accuracy without the empty-like golds; wrong answers by cause and
    macro precision/recall/F1 per KG; seed spread and consistency; honeypots; excluded attempts;
    judges and their rules; audits of accepts; gold review coverage."""
    from kgeval.cli._show import opened_source, report_samples
    from kgeval.config import load_config
    from kgeval.reports import HOLDOUT_REFUSED, build_report, render_html, render_json, render_markdown
    from kgeval.runs import ResultsDB

    announce_db(db)
    with ResultsDB(db, read_only=True) as results:
        built = build_report(results, run_id, gold_dir=gold, holdout_dir=holdout, config=load_config(config), judge=judge)
    if format is Format.html:  # the page also shows each wrong answer and judge disagreement whole
        with opened_source(db, run_id, gold if gold.is_dir() else None, holdout, config) as (source, _):
            text = render_html(built, report_samples(source, built))
    else:
        text = {Format.md: render_markdown, Format.json: render_json}[format](built)
    out.print(text, markup=False, end="")
    if built.gold_refused:  # the figures come from stored verdicts; the evidence behind them is not intact
        err.print(f"{gold}: {built.gold_refused}", markup=False)
    for refused in (built.audit_refused, built.review_refused):  # one chain for every run: printed, and a failed check
        if refused:
            named = str(db) in refused or refused.startswith(HOLDOUT_REFUSED)  # a broken log's message names the file
            err.print(refused if named else f"{db}: {refused}", markup=False)
    if built.gold_refused or built.audit_refused or built.review_refused:
        raise typer.Exit(1)


@user_errors
def runs(
    db: DbOpt = Path("kgeval.duckdb"),
    system: Annotated[str | None, typer.Option("--system", help="Only this system's runs.")] = None,
) -> None:
    """Every run in the database, oldest first, tab-separated: id, system, status, accuracy
    (with its interval, or "withheld" when the harness failed too often), start time, and the
    run a re-judged run was derived from (`kgeval rejudge`; "-" for a run of a system)."""
    from kgeval.reports import build_report, format_accuracy
    from kgeval.runs import ResultsDB, RunChanged

    changed: list[str] = []

    def listed(results: ResultsDB, m: RunMetadata) -> list[str]:
        try:
            status = results.status(m.run_id)
        except RunChanged as exc:  # listed, its figures not shown; the others are still listed
            changed.append(str(exc))
            return ["changed", "not shown: changed after it was sealed", _started(m), "not shown"]
        if status == "refused":  # nothing was dispatched: there is no accuracy to withhold
            return [status, "none (the pre-eval checklist refused it: `kgeval report` shows why)", _started(m), _derived(m)]
        return [status, format_accuracy(build_report(results, m.run_id).overall), _started(m), _derived(m)]

    with ResultsDB(db, read_only=True) as results:
        lines = [[m.run_id, m.system, *listed(results, m)] for m in results.runs(system=system, status=None)]
    if not lines:
        err.print(f"{db}: no runs" + (f" of system {system}" if system else ""), markup=False)
        return
    for line in [["run", "system", "status", "accuracy", "started", "derived from"], *lines]:
        print("\t".join(line))
    for message in changed:
        err.print(message, markup=False)
    if changed:
        raise typer.Exit(RunChanged.exit_code)


def _started(m: RunMetadata) -> str:
    return m.started_at[:19].replace("T", " ")


def _derived(m: RunMetadata) -> str:
    """What `kgeval runs` says of a re-judged run's source, as its run page marks it."""
    origin = m.derived_from
    if origin is None:
        return "-"
    if origin.source == "export":
        return f"rejudged export {origin.source_file} (run {origin.source_run_id})"
    return f"rejudged run {origin.source_run_id}"


class ExportFormat(StrEnum):
    jsonl = "jsonl"
    qald = "qald"
    parquet = "parquet"


@user_errors
def export(
    run_id: Annotated[str, typer.Argument(help="Run id printed by `kgeval run`.")],
    db: DbOpt = Path("kgeval.duckdb"),
    format: Annotated[ExportFormat, typer.Option("--format", help="jsonl (every attempt, verdicts), qald (one seed, QALD JSON) or parquet (-o FILE.parquet: one file, a row per attempt with its verdicts; else attempts.parquet and verdicts.parquet in --output DIR).")] = ExportFormat.jsonl,
    seed: Annotated[int, typer.Option("--seed", help="qald: the seed to export.")] = 0,
    holdout: Annotated[Path | None, typer.Option("--holdout", help="qald: execute each SPARQL on this holdout's KG for typed answers, and use source ids.")] = None,
    config: ConfigOpt = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="jsonl, qald: file to write (default: stdout); parquet: a FILE.parquet, else a directory (default: ./RUN).")] = None,
) -> None:
    """Write one JSON line per attempt with its verdicts, one seed as QALD JSON (to stdout or the
    file -o names), or the run's attempts and verdicts as two Parquet files (for pandas, Spark,
    DuckDB ...)."""
    from kgeval._files import write_atomic_pieces, writing_to
    from kgeval.cli._interop import export_run_qald
    from kgeval.reports import export_lines
    from kgeval.runs import ResultsDB

    if format is ExportFormat.parquet and output is not None and output.suffix == ".parquet":  # one file, as pandas reads it
        refuse_overwriting(output, db=db)
        with ResultsDB(db, read_only=True) as results:
            rows = results.export_parquet_file(run_id, output)
        err.print(f"wrote {rows} attempts, each with its verdicts, to {output}", markup=False)
        return
    if format is ExportFormat.parquet:
        for name in ("attempts.parquet", "verdicts.parquet"):
            refuse_overwriting((output or Path(run_id)) / name, db=db)
        with ResultsDB(db, read_only=True) as results:
            written = results.export_parquet(run_id, output or Path(run_id))
        for name, rows in written.items():  # on stderr, as jsonl and qald say what they wrote
            err.print(f"{(output or Path(run_id)) / name}: {rows} rows", markup=False)
        return
    refuse_overwriting(output, db=db)
    if format is ExportFormat.qald:
        export_run_qald(run_id, db, seed, holdout, config, output)
        return
    with ResultsDB(db, read_only=True) as results:
        if output is None:
            for line in export_lines(results, run_id):
                print(line)
            return
        written = 0
        with writing_to(output, "the export"), write_atomic_pieces(output) as file:  # piece by piece: a large run's lines are not held twice
            for written, line in enumerate(export_lines(results, run_id), 1):
                file.write(line + "\n")
    err.print(f"wrote {written} attempts to {output}", markup=False)


@user_errors
def quickstart(
    holdout: HoldoutOpt = Path("holdout"),
    gold: GoldOpt = Path("gold"),
    db: DbOpt = Path("kgeval.duckdb"),
) -> None:
    """The pre-release run on the sample holdout: oracle and weak controls, both reports."""
    from kgeval.config import load_config
    from kgeval.reports import build_report, render_markdown
    from kgeval.runs import ResultsDB

    announce_db(db)
    cfg = load_config(None)
    oracle = _run(holdout, gold, "oracle", None, cfg, db)
    weak = _run(holdout, gold, "weak", None, cfg, db, compare_with=[oracle.run_id])
    with ResultsDB(db, read_only=True) as results:  # the gold just verified: audits and its review are shown
        reports = [build_report(results, metadata.run_id, gold_dir=gold, holdout_dir=holdout) for metadata in (oracle, weak)]
    for built in reports:
        out.print(render_markdown(built), markup=False)
    out.print(_quickstart_summary(holdout, db, *reports), markup=False)


def command_name() -> str:
    """How the user calls kgeval again, for the commands a message suggests: `kgeval` when that
    name on PATH is the program running, else the path it was run by (`.venv/bin/kgeval` right
    after `pip install` in a venv not activated), or `python -m kgeval`."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "__main__.py":
        return "python -m kgeval"
    on_path = shutil.which("kgeval")
    if on_path is not None and Path(on_path).resolve() == argv0.resolve():
        return "kgeval"
    return str(sys.argv[0])


def _quickstart_summary(holdout: Path, db: Path, oracle: RunReport, weak: RunReport) -> str:
    """Five lines on what the quickstart showed, then the commands to try next."""
    from kgeval.reports import format_accuracy

    o, w, m, kgeval = oracle.overall, weak.overall, oracle.metadata, command_name()
    wrong = next((f"{a.kg}/{a.question_id}" for a in weak.wrong), "KG/QID")
    sound = o is not None and o.accuracy is not None and o.accuracy >= 0.99
    strict = w is not None and w.accuracy is not None and w.accuracy <= 0.60
    lines = [
        "## Summary",
        f"- the holdout at {holdout}: {len(m.seeds)} seeds per question, manifest {m.holdout_manifest_sha256[:12]} and gold {m.gold_manifest_sha256[:12]} verified",
        f"- oracle {m.run_id}: {format_accuracy(o)}: " + ("the harness is sound (>= 99%)" if sound else "BELOW 99%: the harness (gold, store or judge) is broken"),
        f"- weak {weak.metadata.run_id}: {format_accuracy(w)}: " + ("the judge refuses poor answers (<= 60%)" if strict else "ABOVE 60%: the judge accepts too much"),
        f"- results: {Path(db).absolute()} (`{kgeval} runs` lists them)",
        f"- a real system next: `{kgeval} init --system openai` (or gemini, http) writes a configuration that passes the checklist",
        "",
        "Next:",
        f"  {kgeval} report {weak.metadata.run_id} --format html > weak.html  # one page, each wrong answer shown whole",
        f"  {kgeval} compare {m.run_id} {weak.metadata.run_id}  # flips, McNemar, the paired difference",
        f"  {kgeval} show {weak.metadata.run_id} {wrong}  # one wrong attempt whole, beside the gold",
        f"  {kgeval} init --system openai && {kgeval} run --system openai  # your model (docs/systems.md)",
    ]
    return "\n".join(lines)

