"""`kgeval holdout admit`, `kgeval schema-gate ...` and `kgeval contamination check`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from kgeval.cli._common import ConfigOpt, GateDirOpt, HoldoutOpt, err, out, user_errors
from kgeval.config import ContaminationConfig, load_config, load_gate_config
from kgeval.errors import InputError, LeakDetected
from kgeval.holdout import QUESTIONS_FILE, load_holdout
from kgeval.stores import open_store, rdf_format

# kgeval.guards (pyarrow, rdflib's SPARQL algebra) is imported inside the commands: it would
# add half a second to every other command's start.
if TYPE_CHECKING:
    from kgeval.guards import Report

schema_gate_app = typer.Typer(help="Store training KGs' schema fingerprints for the adjacency gate.", no_args_is_help=True)
contamination_app = typer.Typer(help="Find holdout material in fine-tuning data.", no_args_is_help=True)

SHOWN_HITS = 50


def _rdf_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError(f"{path}: no such file or directory")
    files = sorted(p for p in path.iterdir() if p.is_file() and _is_rdf(p))
    if not files:
        raise InputError(f"{path}: no RDF files (.ttl, .nt, .nq, .trig, .rdf, .owl)")
    return files


def _is_rdf(path: Path) -> bool:
    try:
        rdf_format(path)
    except InputError:
        return False
    return True


def _candidates(paths: list[Path]) -> list[tuple[str, list[Path]]]:
    """KG directories or files; a holdout root stands for each of its KG directories."""
    found = []
    for path in paths:
        kg_dirs = sorted(d for d in path.iterdir() if (d / QUESTIONS_FILE).is_file()) if path.is_dir() else []
        for kg in kg_dirs or [path]:
            found.append((kg.stem if kg.is_file() else kg.name, _rdf_files(kg)))
    return found


@user_errors
def holdout_admit(
    kgs: Annotated[list[Path], typer.Argument(help="Candidate KG directories or files (a holdout root: each KG in it).")],
    gate_dir: GateDirOpt = Path("schema_gate"),
    config: ConfigOpt = None,
) -> None:
    """Check candidate holdout KGs against the training fingerprints (exit 3 when one is refused)."""
    from kgeval.guards import admit_kg, fingerprint_store, load_fingerprints

    cfg = load_config(config)
    gate = load_gate_config(gate_dir / "config.yaml")
    training = load_fingerprints(gate_dir)
    refused = []
    for name, files in _candidates(kgs):
        fingerprint = fingerprint_store(open_store(cfg.store, files, kg=name), name, gate)
        verdict = admit_kg(fingerprint, training, gate, cfg.guards.common_namespaces)
        out.print(verdict.summary(), markup=False)
        if not verdict.admitted:
            refused.append(name)
    rules = (
        f"refuse when types >= {gate.type_overlap_pct:g}% and relations >= {gate.relation_overlap_pct:g}%, "
        f"or jaccard > {gate.jaccard_cap:g}; {len(training)} training fingerprints"
    )
    out.print(rules)
    if refused:
        err.print(f"refused: {', '.join(refused)}", markup=False)
        raise typer.Exit(LeakDetected.exit_code)


@schema_gate_app.command("add")
@user_errors
def schema_gate_add(
    name: Annotated[str, typer.Argument(help="Name of the training KG (the fingerprint's file name).")],
    kg_files: Annotated[list[Path], typer.Argument(help="RDF files (or directories of them) of the training KG.")],
    gate_dir: GateDirOpt = Path("schema_gate"),
    config: ConfigOpt = None,
) -> None:
    """Fingerprint a training KG's schema and store it (schema IRIs only, never the data)."""
    from kgeval.guards import fingerprint_store, save_fingerprint

    if not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise InputError(f"fingerprint name {name!r}: use letters, digits, '-', '_' and '.'")
    cfg = load_config(config)
    files = [f for path in kg_files for f in _rdf_files(path)]
    fingerprint = fingerprint_store(open_store(cfg.store, files), name, load_gate_config(gate_dir / "config.yaml"))
    path = save_fingerprint(fingerprint, gate_dir)
    out.print(
        f"{path}: {len(fingerprint.classes)} classes, {len(fingerprint.predicates)} predicates, "
        f"{len(fingerprint.pairs)} domain/range pairs",
        markup=False,
    )


@schema_gate_app.command("list")
@user_errors
def schema_gate_list(gate_dir: GateDirOpt = Path("schema_gate")) -> None:
    """List the stored training fingerprints."""
    from kgeval.guards import load_fingerprints

    for fp in load_fingerprints(gate_dir):
        out.print(f"{fp.name}: {len(fp.classes)} classes, {len(fp.predicates)} predicates, {len(fp.pairs)} pairs ({fp.created})", markup=False)


def with_options(cc: ContaminationConfig, fields: list[str] | None, workers: int | None, allow_empty: bool = False) -> ContaminationConfig:
    """The configured contamination settings with the command line's on top: `--workers 0`
    (one per core) is an answer, not an absent option."""
    update: dict = {}
    if fields:
        update["fields"] = tuple(fields)
    if workers is not None:
        update["workers"] = workers
    if allow_empty:
        update["allow_empty"] = True
    return cc.model_copy(update=update)


@contextmanager
def _scan_progress() -> Iterator[Callable]:
    """Bytes and records scanned, on stderr (transient when stderr is not a terminal)."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

    columns = [TextColumn("[bold]scanning"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
               TextColumn("{task.fields[records]:,} records, {task.fields[hits]} hits")]
    with Progress(*columns, console=err, transient=not sys.stderr.isatty()) as bar:
        task = bar.add_task("scan", total=None, records=0, hits=0)
        yield lambda s: bar.update(task, completed=s.bytes_done, total=s.bytes_total, records=s.records, hits=s.hits)


Engine = Literal["local", "spark"]


@contamination_app.command("check")
@user_errors
def contamination_check(
    files: Annotated[list[str], typer.Argument(help="Training files: JSONL (.jsonl/.ndjson/.json) or Parquet; paths or URLs (s3://, gs://, hf:// via fsspec).")],
    holdout: HoldoutOpt = Path("holdout"),
    gate_dir: GateDirOpt = Path("schema_gate"),
    field: Annotated[list[str] | None, typer.Option("--field", help="Text field to check (repeatable; default from config).")] = None,
    workers: Annotated[int | None, typer.Option("--workers", min=0, help="Worker processes (0: one per core).")] = None,
    report_json: Annotated[Path | None, typer.Option("--report-json", help="Also write the report as JSON: every count, and the first 1,000 hits (hit_count counts them all).")] = None,
    engine: Annotated[Engine, typer.Option("--engine", help="local: this machine's process pool; spark: a Spark job (the spark extra).")] = "local",
    spark_master: Annotated[str | None, typer.Option("--spark-master", help="Spark master URL (default: the session's, else local[*]).")] = None,
    allow_empty: Annotated[bool, typer.Option("--allow-empty", help="Accept a file with no records (0 bytes, blank lines only, 0 rows) as clean; without it such a file is an error (exit 2): usually a failed export.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Scan training data for holdout material: exit 3 on any hit, 0 when clean, 2 on a bad
    file (an empty one included, unless --allow-empty)."""
    from kgeval.guards import build_index, check_contamination, check_files_spark, load_fingerprints, spark_session

    if spark_master and engine != "spark":
        raise InputError("--spark-master needs --engine spark")
    guards = load_config(config).guards
    guards = guards.model_copy(update={"contamination": with_options(guards.contamination, field, workers, allow_empty)})
    index = build_index(load_holdout(holdout), guards, load_fingerprints(gate_dir))
    if engine == "spark":
        report = check_files_spark(files, index, guards, spark_session(spark_master))
    else:
        with _scan_progress() as progress:
            report = check_contamination(files, index, guards, progress=progress)
    for hit in report.hits[:SHOWN_HITS]:
        score = f" score={hit.score:.2f}" if hit.score is not None and hit.kind == "question-near" else ""
        out.print(f"{hit.file}: record {hit.number}: {hit.field}: {hit.kind}{score}: {hit.matched!r} -> {hit.holdout_item}", markup=False)
    if report.hit_count > SHOWN_HITS:
        out.print(f"... {report.hit_count - SHOWN_HITS} more hits", markup=False)
    out.print(report.summary(), markup=False)
    unwritten = _write_report_json(report, report_json) if report_json else None
    if not report.clean:  # a leak is the answer, whether or not its JSON could be written
        raise typer.Exit(LeakDetected.exit_code)
    if unwritten is not None:
        raise typer.Exit(unwritten.exit_code)


def _write_report_json(report: Report, path: Path) -> InputError | None:
    """Write the report's JSON (temporary name, renamed); the error, printed, when it cannot be
    written. After the summary: a scan's outcome is never lost to a bad --report-json path."""
    from kgeval._files import write_atomic, writing_to

    try:
        with writing_to(path, "the report"):
            write_atomic(path, json.dumps(report.model_dump(mode="json"), indent=1) + "\n")
    except InputError as exc:
        err.print(f"[bold red]error:[/] {exc}", markup=True, highlight=False)
        return exc
    return None
