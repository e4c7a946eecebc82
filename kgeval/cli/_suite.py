"""`kgeval suite build` and `kgeval suite show`: the test suites beside the gold."""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from kgeval.cli._common import ConfigOpt, GoldOpt, HoldoutOpt, out, progress_bar, user_errors
from kgeval.cli._data import reference_store
from kgeval.config import KgevalConfig, load_config
from kgeval.gold import QuestionSuite, SuiteReport, build_suites, read_suites, suites_path
from kgeval.holdout import Holdout, load_holdout, verify_holdout

suite_app = typer.Typer(help="Build and inspect the test suites (neighbour KGs with their golds).", no_args_is_help=True)


def build_holdout_suites(loaded: Holdout, cfg: KgevalConfig, gold: Path, *, force: bool = False) -> SuiteReport:
    """Build the suites of `loaded` into `<gold>/suites` as `kgeval suite build` does."""
    from kgeval.runs import neighbour_store, suite_differs

    from kgeval.judges import judges_from_config

    judges = judges_from_config(cfg.judges)
    differs = suite_differs(judges[cfg.judges.primary])
    with progress_bar("suite build", len(loaded.questions())) as advance:
        return build_suites(
            loaded, lambda kg: reference_store(cfg, kg), neighbour_store(cfg), differs, cfg.suite, cfg.gold, suites_path(gold),
            force=force, progress=advance,
        )  # fmt: skip


@suite_app.command("build")
@user_errors
def suite_build(
    holdout: HoldoutOpt = Path("holdout"),
    gold: GoldOpt = Path("gold"),
    config: ConfigOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Distil every question again, even those whose suite is unchanged.")] = False,
) -> None:
    """Fuzz `suite.neighbours` neighbour KGs per holdout KG, distil each question's suite from
    its reference query's near-miss mutants, build the neighbours' golds (sandboxed), and switch
    the new suites in atomically at <gold>/suites. Unchanged questions keep their suite."""
    cfg = load_config(config)
    verify_holdout(holdout)
    loaded = load_holdout(holdout)
    report = build_holdout_suites(loaded, cfg, gold, force=force)
    print_suite_report(report, suites_path(gold))


def print_suite_report(report: SuiteReport, where: Path, *, summary: bool = False) -> None:
    """What a build did (or, with `summary`, what the suites in force hold): the kill rates and
    the mutant kinds no neighbour separates."""
    rates = [s.kill_rate for s in report.suites if s.kill_rate is not None]
    median = f"{statistics.median(rates):.0%}" if rates else "-"
    done = "" if summary else f"{len(report.built)} distilled, {len(report.reused)} unchanged, {len(report.skipped)} without a suite; "
    out.print(
        f"suites {'in' if summary else 'built in'} {where} ({report.version.name if report.version else '-'}): {done}"
        f"median kill rate {median} over {len(rates)} questions" + ("" if summary else f"; {report.seconds:.2f} s"), markup=False,
    )
    bins = Counter("100%" if r == 1 else f"{int(r * 10) * 10}-{int(r * 10) * 10 + 9}%" for r in rates)
    if bins:
        out.print("  kill rates: " + ", ".join(f"{k} {bins[k]}" for k in sorted(bins, key=lambda k: -int(k.split("-")[0].rstrip("%")))), markup=False)
    survivors = Counter(m.kind for s in report.suites for m in s.survivors)
    if survivors:
        out.print("  mutants no neighbour separates: " + ", ".join(f"{k} ({n})" for k, n in survivors.most_common()), markup=False)
    if report.reuse_note:
        out.print(f"  note: {report.reuse_note}", markup=False)


@suite_app.command("show")
@user_errors
def suite_show(
    question: Annotated[str | None, typer.Argument(help="Question id (default: the summary of every suite).")] = None,
    gold: GoldOpt = Path("gold"),
) -> None:
    """One question's suite: its neighbours, its mutants and what told each apart; without a
    question, the kill-rate distribution and the mutant kinds no neighbour separates."""
    suites = read_suites(gold)
    if question is None:
        report = SuiteReport(suites=[s for record in suites.kgs.values() for s in record.questions], version=suites.version)
        print_suite_report(report, suites_path(gold), summary=True)
        return
    suite = suites.suite(question)
    if suite is None:
        raise typer.BadParameter(f"{question}: no suite in {suites.version} (not SPARQL, its reference fails, or not in this holdout)")
    _show(suite)


def _show(suite: QuestionSuite) -> None:
    rate = "-" if suite.kill_rate is None else f"{suite.kill_rate:.0%}"
    out.print(f"{suite.kg}/{suite.question_id}: neighbours {', '.join(suite.neighbours) or '-'}; kill rate {rate}", markup=False)
    for n, why in suite.left_out.items():
        out.print(f"  left out {n}: {why}", markup=False)
    for m in suite.mutants:
        by = f" by {m.by}" if m.by else ""
        out.print(f"  {m.status}{by}: {m.kind} at `{m.where}`" + (f" ({m.error})" if m.error else ""), markup=False)
