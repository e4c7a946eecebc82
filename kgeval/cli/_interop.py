"""`kgeval holdout import text2sparql|qald`, `kgeval gold export`, and the QALD run export."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kgeval._files import write_atomic, writing_to
from kgeval.cli._common import ConfigOpt, GoldOpt, HoldoutOpt, err, out, user_errors
from kgeval.config import load_config
from kgeval.gold import load_gold, verify_gold
from kgeval.holdout import load_holdout, verify_holdout
from kgeval.errors import InputError
from kgeval.stores import open_store

if TYPE_CHECKING:  # the importers (rdflib) and the results database are imported by the commands that use them
    from kgeval.interop import ImportReport, QuestionRules

import_app = typer.Typer(help="Import a benchmark into the holdout format (then seal the holdout).", no_args_is_help=True)

OutOpt = Annotated[Path, typer.Option("--out", help="Holdout directory to add the KGs to (sealed afterwards).")]
LangOpt = Annotated[str, typer.Option("--lang", help="Language of the question text to keep.")]
ReplaceOpt = Annotated[
    str | None, typer.Option("--replace", help="Re-import this KG only, over the one in the holdout, and reseal.")
]
OrderOpt = Annotated[
    bool,
    typer.Option(
        "--order-by-sensitive/--no-order-by-sensitive",
        help="Mark questions whose reference query has ORDER BY order-sensitive (their answer order is judged).",
    ),
]
PrefixOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--prefix",
        help="NAME=IRI: declare this prefix in each reference query that uses it undeclared, as written for an endpoint"
        " with predefined prefixes (QALD on DBpedia: --prefix dbo=http://dbpedia.org/ontology/). Repeatable.",
    ),
]
PrefixFileOpt = Annotated[
    list[Path] | None,
    typer.Option("--prefixes", help="A file of 'PREFIX name: <iri>' or '@prefix name: <iri> .' lines, or a known endpoint's list (wikidata, dbpedia, virtuoso, graphdb, blazegraph), used as --prefix. Repeatable."),
]


def _rules(order_by_sensitive: bool, prefix: list[str] | None, prefixes: list[Path] | None) -> QuestionRules:
    from kgeval.interop import QuestionRules, prefix_table

    return QuestionRules(order_by_sensitive=order_by_sensitive, prefixes=prefix_table(prefix or [], prefixes or []))


def _print_import(report: ImportReport) -> None:
    verb = "replaced" if report.replaced else "imported"
    out.print(f"{verb} {report.questions} questions into {report.kg_dir}", markup=False)
    for note in report.data:
        iri = report.files.get(note.written, "")
        out.print("  " + note.summary() + (f" (graph <{iri}>)" if iri else ""), markup=False)
    for name, why in report.excluded.items():
        out.print(f"  left out {name}: {why}", markup=False)
    if report.refused:
        out.print(
            f"  {len(report.refused)} reference quer{'y' if len(report.refused) == 1 else 'ies'} the read-only guard refuses, imported as written: "
            "`gold rebuild` records them failed; exclude them on record (`kgeval holdout exclude QID... --why TEXT`) or rewrite them",
            markup=False,
        )
        for qid, why in report.refused.items():
            out.print(f"    {qid}: {why}", markup=False)


def _print_imports(reports: list[ImportReport]) -> None:
    for report in reports:
        _print_import(report)
    questions = sum(r.questions for r in reports)
    line = f"{len(reports)} KG(s), {questions} questions"
    holdout = load_holdout(reports[0].kg_dir.parent)
    others = len(holdout.kgs) - len(reports)
    if others > 0:  # an --out that already held a holdout: said, not merged silently
        line += f" into a holdout that already held {others} other KG(s): it now holds {len(holdout.kgs)} KGs, {len(holdout.questions())} questions"
    out.print(f"{line}; holdout sealed: manifest {reports[0].manifest_sha256}", markup=False)
    renamed = [(str(kg.source["kg_value"]), kg.id) for kg in holdout.kgs if any(r.kg_dir.name == kg.id for r in reports)
               and kg.source.get("kg_value") and str(kg.source["kg_value"]) != kg.id]
    if renamed:  # a replay written with the benchmark's names is matched to these, with a warning
        shown = ", ".join(f"{theirs} as {ours}" for theirs, ours in renamed[:5]) + (" ..." if len(renamed) > 5 else "")
        out.print(f"KG names stored otherwise than the benchmark writes them: {shown}; a replay may name them either way", markup=False)


@import_app.command("text2sparql")
@user_errors
def import_text2sparql_cmd(
    paths: Annotated[list[Path], typer.Argument(help="TEXT2SPARQL dataset directories (questions.yml, graphs/): one KG each.")],
    name: Annotated[str | None, typer.Option("--name", help="KG id for a single dataset (default: its directory name).")] = None,
    out_dir: OutOpt = Path("holdout"),
    lang: LangOpt = "en",
    domain: Annotated[str | None, typer.Option("--domain", help="Single dataset: domain of every question (default: the last segment of the dataset id, else the KG id).")] = None,
    id_prefix: Annotated[str | None, typer.Option("--id-prefix", help="Single dataset: ids become PREFIX-<source id> (default: the dataset's prefix, else the KG id).")] = None,
    replace: ReplaceOpt = None,
    order_by_sensitive: OrderOpt = True,
    prefix: PrefixOpt = None,
    prefixes: PrefixFileOpt = None,
) -> None:
    """Import TEXT2SPARQL datasets (questions.yml + graphs/*.ttl with *.ttl.graph IRIs), one KG each."""
    from kgeval.interop import import_text2sparql, import_text2sparql_datasets
    from kgeval.interop._write import kg_name

    if len(paths) > 1 and (name or domain or id_prefix):
        raise InputError("--name, --domain and --id-prefix apply to one dataset; several are named after their directories")
    rules = _rules(order_by_sensitive, prefix, prefixes)
    if len(paths) == 1:
        kg = name or kg_name(paths[0].resolve().name)
        if replace is not None and replace != kg:
            raise InputError(f"--replace {replace}: this dataset imports as KG {kg!r}")
        report = import_text2sparql(paths[0], kg, out_dir, lang=lang, domain=domain, id_prefix=id_prefix, replace=replace is not None, rules=rules)
        _print_imports([report])
        return
    _print_imports(import_text2sparql_datasets(paths, out_dir, lang=lang, replace=replace, rules=rules))


@import_app.command("qald")
@user_errors
def import_qald_cmd(
    path: Annotated[Path, typer.Argument(help="QALD JSON file.")],
    name: Annotated[str | None, typer.Option("--name", help="KG id, with --kg: the directory created under --out.")] = None,
    kg: Annotated[list[Path] | None, typer.Option("--kg", help="RDF file of the one KG every question is asked over (repeatable).")] = None,
    kg_dir: Annotated[Path | None, typer.Option("--kg-dir", help="Directory of KGs, one per file (NAME.ttl, ...) or per directory (NAME/); each question names its KG in --kg-field.")] = None,
    kg_field: Annotated[str, typer.Option("--kg-field", help="With --kg-dir: the question field naming its KG.")] = "kg",
    out_dir: OutOpt = Path("holdout"),
    lang: LangOpt = "en",
    domain: Annotated[str | None, typer.Option("--domain", help="Domain of every question (default: its KG id).")] = None,
    id_prefix: Annotated[str | None, typer.Option("--id-prefix", help="Question ids become PREFIX-<source id> (default: its KG id).")] = None,
    replace: ReplaceOpt = None,
    order_by_sensitive: OrderOpt = True,
    prefix: PrefixOpt = None,
    prefixes: PrefixFileOpt = None,
) -> None:
    """Import a QALD JSON file (QALD-9-plus style): over one KG (--name, --kg), or over several
    KGs at once (--kg-dir, each question naming its KG in --kg-field)."""
    from kgeval.interop import import_qald, import_qald_benchmark

    if (kg_dir is None) == (not kg):
        raise InputError("give either --kg FILE... (one KG, with --name) or --kg-dir DIR (one KG per file or directory)")
    rules = _rules(order_by_sensitive, prefix, prefixes)
    if kg_dir is not None:
        reports = import_qald_benchmark(path, out_dir, kg_dir, kg_field, lang=lang, domain=domain, id_prefix=id_prefix, replace=replace, rules=rules)
        _print_imports(reports)
        return
    if not name:
        raise InputError("--kg needs --name: the KG id to create under --out")
    if replace is not None and replace != name:
        raise InputError(f"--replace {replace}: this import writes KG {name!r}")
    _print_imports([import_qald(path, name, out_dir, kg, lang=lang, domain=domain, id_prefix=id_prefix, replace=replace is not None, rules=rules)])


class ExportFormat(StrEnum):
    qald = "qald"


def _write_json(doc: dict, path: Path | None) -> None:
    text = json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
    if path is None:
        print(text, end="")
    else:
        with writing_to(path, "the QALD JSON"):
            write_atomic(path, text)
        err.print(f"wrote {len(doc['questions'])} questions to {path}", markup=False)


@user_errors
def gold_export(
    holdout: HoldoutOpt = Path("holdout"),
    gold: GoldOpt = Path("gold"),
    format: Annotated[ExportFormat, typer.Option("--format", help="qald.")] = ExportFormat.qald,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
) -> None:
    """Write the verified gold as QALD JSON (warns about truncated, tied and nondeterministic golds)."""
    from kgeval.interop import excluded_without_gold, gold_to_qald

    verify_holdout(holdout)
    loaded = load_holdout(holdout)
    verify_gold(gold, loaded)
    entries = load_gold(gold)
    for entry in entries.values():
        risky = [f for f in entry.flags if f in ("truncated", "tied", "nondeterministic", "unchecked")]
        if risky:
            err.print(f"warning: {entry.kg}/{entry.question_id} is {', '.join(risky)}: QALD holds one answer set only", markup=False)
    left_out = excluded_without_gold(loaded, entries)
    if left_out:
        err.print(f"warning: {len(left_out)} questions have no gold and are left out: {'; '.join(left_out)}", markup=False)
    _write_json(gold_to_qald(loaded, entries), output)


def export_run_qald(run_id: str, db: Path, seed: int, holdout: Path | None, config: Path | None, output: Path | None) -> None:
    """`kgeval export RUN --format qald`: one seed of the run as QALD JSON. The SPARQL is executed
    again as the run executed it (its recorded candidate timeout, row cap and predeclared
    prefixes, guarded and sandboxed), on the store of `--config` when given, else the run's.
    Questions left without answers are counted and named on stderr."""
    from kgeval.interop import run_to_qald
    from kgeval.runs import ResultsDB, run_config

    loaded = load_holdout(holdout) if holdout else None
    with ResultsDB(db, read_only=True) as results:
        cfg = load_config(config) if config else run_config(results.metadata(run_id))
        exported = run_to_qald(
            results, run_id, seed, holdout=loaded, store_for=lambda kg: open_store(cfg.store, kg.files, kg.id, graphs=kg.graphs),
        )
    _write_json(exported.doc, output)
    _warn_unanswered(exported.unanswered, len(exported.doc["questions"]))


def _warn_unanswered(unanswered: list, total: int) -> None:
    """On stderr: how many questions have no answers, by kind, and which (the first 10)."""
    if not unanswered:
        return
    kinds = {"query_failed": "SPARQL failed when executed again", "harness_error": "harness error", "not_executed": "SPARQL not executed (no --holdout)"}
    counts = "; ".join(f"{sum(u.kind == k for u in unanswered)} {text}" for k, text in kinds.items() if any(u.kind == k for u in unanswered))
    err.print(
        f"warning: {len(unanswered)} of {total} questions are not exported from their SPARQL's result: no `answers` written, never an empty one "
        f"(the attempt's answer list where it gave one): {counts}", markup=False,
    )
    for u in unanswered[:10]:
        err.print(f"  {u.question_id}: {u.why}", markup=False)
    if len(unanswered) > 10:
        err.print(f"  ... and {len(unanswered) - 10} more", markup=False)


__all__ = ["ConfigOpt", "export_run_qald", "gold_export", "import_app"]
