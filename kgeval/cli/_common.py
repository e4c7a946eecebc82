"""Shared CLI pieces: options, the console, progress bars, and error handling."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kgeval.errors import KgevalError

err = Console(stderr=True, soft_wrap=True, highlight=False)
out = Console(highlight=False, soft_wrap=True)

HoldoutOpt = Annotated[Path, typer.Option("--holdout", help="Holdout directory (KG subdirectories + MANIFEST.json).")]
GoldOpt = Annotated[Path, typer.Option("--gold", help="Gold directory written by `kgeval gold rebuild`.")]
DbOpt = Annotated[Path, typer.Option("--db", help="DuckDB results database.")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="YAML configuration overriding the defaults.")]

F = TypeVar("F", bound=Callable)


def user_errors(fn: F) -> F:
    """Turn a KgevalError into its message on stderr and its documented exit code."""

    @wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        try:
            return fn(*args, **kwargs)
        except KgevalError as exc:
            err.print(f"[bold red]error:[/] {exc}", markup=True, highlight=False)
            raise typer.Exit(exc.exit_code) from None

    return wrapper  # type: ignore[return-value]


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[[str], None]]:
    """A rich progress bar on stderr; yields a callback that advances it by one item."""
    columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[item]}")]
    with Progress(*columns, console=err, transient=not sys.stderr.isatty(), disable=False) as progress:
        task = progress.add_task(description, total=total, item="")
        yield lambda item: progress.update(task, advance=1, item=item)
