"""`kgeval holdout ...` and `kgeval gold ...`."""

from __future__ import annotations

from pathlib import Path

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
    truncated = sum(1 for e in report.entries if e.result.truncated)
    out.print(
        f"gold rebuilt in {gold}: {len(report.entries)} questions, {truncated} truncated at the cap, "
        f"{report.total_seconds:.2f} s ({report.store_seconds:.2f} s in store queries)"
    )


@gold_app.command("verify")
@user_errors
def gold_verify(holdout: HoldoutOpt = Path("holdout"), gold: GoldOpt = Path("gold")) -> None:
    """Check gold hashes, and that the gold was built from this holdout and its queries."""
    verify_holdout(holdout)
    digest = verify_gold(gold, load_holdout(holdout))
    out.print(f"gold {gold}: verified against holdout {holdout} (gold manifest {digest[:12]})")
