"""Shared CLI pieces: options, the console, progress bars, and error handling."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from functools import wraps
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kgeval._activity import Activity
from kgeval.config import ProgressConfig
from kgeval.errors import InputError, KgevalError

err = Console(stderr=True, soft_wrap=True, highlight=False)
out = Console(highlight=False, soft_wrap=True)

HOME_ENV = "KGEVAL_HOME"
"""A kgeval directory (holdout/, gold/, schema_gate/, kgeval.yaml, kgeval.duckdb) used from anywhere."""


def found_path(name: str, *, create_in_home: bool = True) -> Path:
    """Where a data path not given as a flag is found: `./NAME` when it exists; else
    `$KGEVAL_HOME/NAME` when KGEVAL_HOME is set (and, unless `create_in_home`, NAME exists
    there); else `./NAME`."""
    here = Path(name)
    home = os.environ.get(HOME_ENV)
    if here.exists() or not home:
        return here
    there = Path(home).expanduser() / name
    return there if create_in_home or there.exists() else here


def found_db(name: str = "kgeval.duckdb") -> Path:
    """Where the results database is when `--db` is not given: `./kgeval.duckdb` when it exists;
    else `$KGEVAL_HOME/kgeval.duckdb` when that exists and KGEVAL_HOME is not a repository clone;
    else `./kgeval.duckdb` (created). A clone's database is the one `kgeval quickstart` made
    there: with KGEVAL_HOME pointing at the clone for its holdout and gold, runs made from other
    directories went into it. Results stay where you work."""
    here = Path(name)
    home = os.environ.get(HOME_ENV)
    if here.exists() or not home or is_repository(Path(home).expanduser()):
        return here
    return found_path(name, create_in_home=False)


def is_repository(directory: Path) -> bool:
    """Whether `directory` is a version-control checkout (a clone or a git worktree)."""
    return any((directory / marker).exists() for marker in (".git", ".hg"))


def announce_db(db: Path) -> None:
    """The results database a command uses, on stderr, one line, absolute."""
    err.print(f"results database: {Path(db).absolute()}", markup=False)


def _search(name: str, *, create_in_home: bool = True) -> Callable[[typer.Context, typer.CallbackParam, Path | None], Path | None]:
    def resolve(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> Path | None:
        # by name: typer ships its own copy of click, whose ParameterSource is not click's
        if getattr(ctx.get_parameter_source(param.name or ""), "name", None) != "DEFAULT":
            return value  # given on the command line (or its environment variable): as is
        return found_db(name) if name == DB_FILE else found_path(name, create_in_home=create_in_home)

    return resolve


def _search_config(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> Path | None:
    if value is not None:
        return value
    found = found_path(CONFIG_FILE, create_in_home=False)
    return found if found.exists() else None


CONFIG_FILE = "kgeval.yaml"
DB_FILE = "kgeval.duckdb"
_RULE = "(default: ./{0} if it exists, else $KGEVAL_HOME/{0}, else ./{0})"
HoldoutOpt = Annotated[Path, typer.Option("--holdout", callback=_search("holdout"), help=f"Holdout directory (KG subdirectories + MANIFEST.json) {_RULE.format('holdout')}.")]
GoldOpt = Annotated[Path, typer.Option("--gold", callback=_search("gold"), help=f"Gold directory written by `kgeval gold rebuild` {_RULE.format('gold')}.")]
DbOpt = Annotated[Path, typer.Option("--db", callback=_search(DB_FILE, create_in_home=False), help="DuckDB results database (default: ./kgeval.duckdb if it exists, else $KGEVAL_HOME/kgeval.duckdb if that exists and KGEVAL_HOME is not a repository clone, else ./kgeval.duckdb is created).")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", callback=_search_config, help="YAML configuration overriding the defaults (default: ./kgeval.yaml, else $KGEVAL_HOME/kgeval.yaml, when one exists).")]
GateDirOpt = Annotated[Path, typer.Option("--gate-dir", callback=_search("schema_gate"), help=f"Schema-gate directory with config.yaml and fingerprints/ {_RULE.format('schema_gate')}.")]

class TextFormat(StrEnum):
    """Output for a person (text) or a program (json)."""

    text = "text"
    json = "json"


F = TypeVar("F", bound=Callable)


def user_errors(fn: F) -> F:
    """Turn a KgevalError into its message on stderr and its documented exit code."""

    @wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        try:
            return fn(*args, **kwargs)
        except KgevalError as exc:
            err.print(f"[bold red]error:[/] {escape(str(exc))}", markup=True, highlight=False)  # the message's own [brackets] kept
            raise typer.Exit(exc.exit_code) from None

    return wrapper  # type: ignore[return-value]


def refuse_overwriting(output: Path | None, **inputs: Path | None) -> None:
    """InputError when `output` names one of the command's inputs (`kgeval export RUN -o
    kgeval.duckdb`, the same file under another name): the export would have replaced the
    results database, every run, audit and approval in it, with its own lines."""
    if output is None:
        return
    for flag, path in inputs.items():
        if path is not None and _same_file(Path(output), Path(path)):
            raise InputError(f"{output}: is the --{flag.replace('_', '-')} file ({path}); writing there would replace it: choose another output")


def _same_file(a: Path, b: Path) -> bool:
    """Whether `a` and `b` are one file: by a link, or as one directory entry (`./x`, `x`)."""
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:
        pass
    return a.parent.resolve() / a.name == b.parent.resolve() / b.name


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[[str], None]]:
    """A rich progress bar on stderr; yields a callback that advances it by one item."""
    columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[item]}")]
    with Progress(*columns, console=err, transient=not sys.stderr.isatty(), disable=False) as progress:
        task = progress.add_task(description, total=total, item="")
        yield lambda item: progress.update(task, advance=1, item=item)


@contextmanager
def heartbeat(activity: Activity, status: Callable[[], str], every: ProgressConfig, say: Callable[[str], None] | None = None) -> Iterator[None]:
    """While the block runs, one line on stderr (through `say`) at most every
    `every.terminal_every_s` seconds on a terminal, `every.log_every_s` elsewhere: `status()`,
    how long the command has run, and what runs now and for how long (`activity`). A query
    running to its timeout is named while it runs, with or without a progress bar."""
    interval = every.terminal_every_s if err.is_terminal else every.log_every_s
    say = say or (lambda line: err.print(line, markup=False))
    stop, started = threading.Event(), time.monotonic()

    def beat() -> None:
        while not stop.wait(interval):
            running = activity.describe() or "between steps"
            say(f"{status()}, {time.monotonic() - started:.0f} s: {running}")

    thread = threading.Thread(target=beat, daemon=True, name="kgeval-heartbeat")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
