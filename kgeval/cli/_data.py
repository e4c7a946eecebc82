"""`kgeval holdout ...` and `kgeval gold ...`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kgeval.cli._common import ConfigOpt, GoldOpt, HoldoutOpt, err, out, progress_bar, user_errors
from kgeval.config import load_config
from kgeval.errors import CheckFailed
from kgeval.gold import rebuild_gold, verify_gold
from kgeval.holdout import load_holdout, seal_holdout, verify_holdout
from kgeval.stores import open_store

holdout_app = typer.Typer(help="Inspect, seal and verify the holdout.", no_args_is_help=True)
gold_app = typer.Typer(help="Rebuild and verify the gold answers.", no_args_is_help=True)


@holdout_app.command("verify")
@user_errors
def holdout_verify(holdout: HoldoutOpt = Path("holdout")) -> None:
    """Check every holdout file against MANIFEST.json (exit 1 on any difference)."""
    digest = verify_holdout(holdout)
    loaded = load_holdout(holdout)
    out.print(f"holdout {holdout}: {len(loaded.kgs)} KGs, {len(loaded.questions())} questions, manifest {digest[:12]} verified")


@holdout_app.command("seal")
@user_errors
def holdout_seal(holdout: HoldoutOpt = Path("holdout")) -> None:
    """Write MANIFEST.json with the sha256 of every holdout file (after validating it loads)."""
    load_holdout(holdout)
    digest = seal_holdout(holdout)
    out.print(f"sealed {holdout}: manifest {digest}")


@gold_app.command("rebuild")
@user_errors
def gold_rebuild(
    holdout: HoldoutOpt = Path("holdout"), gold: GoldOpt = Path("gold"), config: ConfigOpt = None
) -> None:
    """Execute every reference query and write the gold (nothing is written if any query fails)."""
    cfg = load_config(config)
    verify_holdout(holdout)
    loaded = load_holdout(holdout)
    with progress_bar("gold rebuild", len(loaded.questions())) as advance:
        report = rebuild_gold(loaded, lambda kg: open_store(cfg.store, kg.files, kg.id), cfg.gold, gold, advance)
    for failure in report.failures:
        err.print(f"{holdout}/{failure.kg}: question {failure.question_id}: {failure.error}", markup=False)
    if not report.ok:
        err.print(f"gold rebuild failed: {len(report.failures)} reference queries did not run; {gold} left unchanged")
        raise typer.Exit(CheckFailed.exit_code)
    out.print(
        f"gold rebuilt in {gold}: {len(report.entries)} questions, {cfg.gold.executions} executions each, "
        f"{report.total_seconds:.2f} s ({report.store_seconds:.2f} s in store queries)"
    )
    print_flagged(report.flagged)


def print_flagged(flagged: dict[str, list[str]]) -> None:
    """One line per flag naming every question that carries it."""
    for flag, questions in flagged.items():
        out.print(f"  {flag} ({len(questions)}): {', '.join(questions) or '-'}", markup=False)


@gold_app.command("verify")
@user_errors
def gold_verify(
    holdout: HoldoutOpt = Path("holdout"),
    gold: GoldOpt = Path("gold"),
    config: ConfigOpt = None,
    store_check: Annotated[bool, typer.Option("--store-check/--no-store-check", help="Also compare engine, version and data hash with the configured store (opens it).")] = True,
) -> None:
    """Check gold hashes (corrupt: exit 1), and that the gold was built from this holdout, its
    queries, and the engine and data the configured store serves now (STALE: exit 1)."""
    cfg = load_config(config)
    verify_holdout(holdout)
    store_for = (lambda kg: open_store(cfg.store, kg.files)) if store_check else None
    digest = verify_gold(gold, load_holdout(holdout), store_for)
    checked = "and the configured store " if store_check else ""
    out.print(f"gold {gold}: verified against holdout {holdout} {checked}(gold manifest {digest[:12]})")
