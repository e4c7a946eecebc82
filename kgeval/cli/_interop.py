"""`kgeval holdout import text2sparql|qald`, `kgeval gold export`, and the QALD run export."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from kgeval.cli._common import ConfigOpt, GoldOpt, HoldoutOpt, err, out, user_errors
from kgeval.config import load_config
from kgeval.gold import load_gold, verify_gold
from kgeval.holdout import load_holdout, verify_holdout
from kgeval.interop import ImportReport, gold_to_qald, import_qald, import_text2sparql, run_to_qald
from kgeval.runs import ResultsDB
from kgeval.stores import open_store

import_app = typer.Typer(help="Import a benchmark into the holdout format (then seal the holdout).", no_args_is_help=True)

NameOpt = Annotated[str, typer.Option("--name", help="KG id: the directory created under --out.")]
OutOpt = Annotated[Path, typer.Option("--out", help="Holdout directory to add the KG to (sealed afterwards).")]
LangOpt = Annotated[str, typer.Option("--lang", help="Language of the question text to keep.")]
DomainOpt = Annotated[str | None, typer.Option("--domain", help="Domain of every question (default: from the dataset id, else --name).")]
PrefixOpt = Annotated[str | None, typer.Option("--id-prefix", help="Question ids become PREFIX-<source id> (default: the dataset prefix, else --name).")]


def _print_import(report: ImportReport) -> None:
    out.print(f"imported {report.questions} questions into {report.kg_dir}; holdout sealed: manifest {report.manifest_sha256}")
    for name, iri in report.files.items():
        out.print(f"  data {name}" + (f" (graph <{iri}>)" if iri else ""), markup=False)
    for name, why in report.excluded.items():
        out.print(f"  left out {name}: {why}", markup=False)


@import_app.command("text2sparql")
@user_errors
def import_text2sparql_cmd(
    path: Annotated[Path, typer.Argument(help="TEXT2SPARQL dataset directory (questions.yml, graphs/).")],
    name: NameOpt,
    out_dir: OutOpt = Path("holdout"),
    lang: LangOpt = "en",
    domain: DomainOpt = None,
    id_prefix: PrefixOpt = None,
) -> None:
    """Import a TEXT2SPARQL dataset: questions.yml + graphs/*.ttl (with *.ttl.graph IRIs)."""
    _print_import(import_text2sparql(path, name, out_dir, lang=lang, domain=domain, id_prefix=id_prefix))


@import_app.command("qald")
@user_errors
def import_qald_cmd(
    path: Annotated[Path, typer.Argument(help="QALD JSON file.")],
    name: NameOpt,
    kg: Annotated[list[Path], typer.Option("--kg", help="RDF file of the KG the questions are asked over (repeatable).")],
    out_dir: OutOpt = Path("holdout"),
    lang: LangOpt = "en",
    domain: DomainOpt = None,
    id_prefix: PrefixOpt = None,
) -> None:
    """Import a QALD JSON file (QALD-9-plus style) asked over the given KG files."""
    _print_import(import_qald(path, name, out_dir, kg, lang=lang, domain=domain, id_prefix=id_prefix))


class ExportFormat(StrEnum):
    qald = "qald"


def _write_json(doc: dict, path: Path | None) -> None:
    text = json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
    if path is None:
        print(text, end="")
    else:
        path.write_text(text, encoding="utf-8")
        err.print(f"wrote {len(doc['questions'])} questions to {path}")


@user_errors
def gold_export(
    holdout: HoldoutOpt = Path("holdout"),
    gold: GoldOpt = Path("gold"),
    format: Annotated[ExportFormat, typer.Option("--format", help="qald.")] = ExportFormat.qald,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
) -> None:
    """Write the verified gold as QALD JSON (warns about truncated, tied and nondeterministic golds)."""
    verify_holdout(holdout)
    loaded = load_holdout(holdout)
    verify_gold(gold, loaded)
    entries = load_gold(gold)
    for entry in entries.values():
        risky = [f for f in entry.flags if f in ("truncated", "tied", "nondeterministic", "unchecked")]
        if risky:
            err.print(f"warning: {entry.kg}/{entry.question_id} is {', '.join(risky)}: QALD holds one answer set only", markup=False)
    _write_json(gold_to_qald(loaded, entries), output)


def export_run_qald(run_id: str, db: Path, seed: int, holdout: Path | None, config: Path | None, output: Path | None) -> None:
    """`kgeval export RUN --format qald`: one seed of the run as QALD JSON."""
    cfg = load_config(config)
    loaded = load_holdout(holdout) if holdout else None
    with ResultsDB(db, read_only=True) as results:
        doc = run_to_qald(
            results, run_id, seed, holdout=loaded, store_for=lambda kg: open_store(cfg.store, kg.files),
            timeout_s=cfg.run.query_timeout_s, row_cap=cfg.run.row_cap,
        )
    _write_json(doc, output)


__all__ = ["ConfigOpt", "export_run_qald", "gold_export", "import_app"]
