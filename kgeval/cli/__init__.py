"""The `kgeval` command line. Exit codes: 0 ok, 1 failed check, 2 bad usage or input,
3 a leak or a gate refusal.

A command imports its machinery (runs, reports, importers, guards, rdflib, DuckDB, the model
clients) when it runs, not when the CLI starts: importing all of it took over a second, which
every command paid, `--help` and an unchanged `gold rebuild` included. The command modules
import only the light packages at the top (config, holdout, gold, stores);
tests/cli/test_cli.py checks what an unchanged rebuild loads."""

from __future__ import annotations

import gc
import sys
from typing import Annotated

import typer

from kgeval import __version__
from kgeval.cli import _guards, _init, _rejudge, _run, _service, _show, _suite
from kgeval.cli._data import gold_app, holdout_app
from kgeval.cli._interop import gold_export, import_app

app = typer.Typer(
    name="kgeval",
    help="Evaluate text-to-SPARQL systems on a sealed holdout of knowledge graphs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        print(f"kgeval {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Evaluate text-to-SPARQL systems on a sealed holdout of knowledge graphs.

    Data paths not given as flags are found in the current directory, else under $KGEVAL_HOME
    (holdout/, gold/, schema_gate/, kgeval.yaml, kgeval.duckdb)."""


holdout_app.add_typer(import_app, name="import")
gold_app.command("export")(gold_export)
app.add_typer(holdout_app, name="holdout")
app.add_typer(gold_app, name="gold")
app.add_typer(_suite.suite_app, name="suite")
app.add_typer(_guards.schema_gate_app, name="schema-gate")
app.add_typer(_guards.contamination_app, name="contamination")
holdout_app.command("admit")(_guards.holdout_admit)
app.command("init")(_init.init)
app.command("run")(_run.run)
app.command("report")(_run.report)
app.command("runs")(_run.runs)
app.command("export")(_run.export)
app.command("quickstart")(_run.quickstart)
app.command("rejudge")(_rejudge.rejudge)
app.command("compare")(_service.compare)
app.add_typer(_service.audit_app, name="audit")
app.add_typer(_service.review_app, name="review")
app.command("serve")(_service.serve)
app.command("show")(_show.show)


def main() -> None:
    """The `kgeval` program: one command, then the process ends."""
    try:
        app()
    finally:
        sandbox = sys.modules.get("kgeval.stores._sandbox")
        if sandbox is not None:  # the sandbox's zygote ends and is reaped here, with the templates it reaped
            sandbox.stop_zygote()
        # what the process holds is out of the collector's sight now: the collection the
        # interpreter runs at exit walked all of it (0.18-0.21 s after a run) to free memory
        # the system takes back anyway
        gc.freeze()


__all__ = ["app", "main"]
