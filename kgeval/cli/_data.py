"""`kgeval holdout ...` and `kgeval gold ...`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kgeval._activity import Activity
from kgeval.cli._common import ConfigOpt, GoldOpt, HoldoutOpt, TextFormat, err, heartbeat, out, progress_bar, user_errors
from kgeval.config import KgevalConfig, ProgressConfig, load_config
from kgeval.errors import CheckFailed, InputError
from kgeval.gold import Outcome, load_gold, rebuild_gold, reexecution_differences, verify_gold
from kgeval.holdout import (
    Holdout, KnowledgeGraph, Question, confirm_empty, exclude_questions, include_questions, load_holdout, read_manifest, seal_holdout, unconfirm_empty, verify_holdout,
)  # fmt: skip
from kgeval.stores import Store, open_store

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
    """Write MANIFEST.json with the sha256 of every holdout file (after validating it loads).
    Refuses to bless decision files edited by hand since the last seal (EXCLUDED.yaml,
    CONFIRMED_EMPTY.yaml): those change only through their commands, which reseal."""
    from kgeval.holdout._manifest import decisions_edited

    edited = decisions_edited(holdout)
    if edited:
        raise CheckFailed(
            f"{holdout}: {', '.join(edited)} changed since the holdout was sealed, not by kgeval (damaged, or edited by hand): decisions on record change only "
            "through `kgeval holdout exclude` / `include` / `confirm-empty` / `unconfirm-empty` (who, when and why are kept); "
            "restore the file, then use those commands"
        )
    load_holdout(holdout)
    digest = seal_holdout(holdout)
    signed = " (signed with the integrity key)" if read_manifest(holdout).get("hmac") else ""
    out.print(f"sealed {holdout}: manifest {digest}{signed}")


@contextmanager
def rebuild_progress(total: int, activity: Activity, every: ProgressConfig) -> Iterator[Callable[[str, Outcome], None]]:
    """A rich progress bar on stderr counting questions built, reused (unchanged), failed and
    excluded on record; its last field names the queries running now, not the last finished.
    Every `every` seconds (kgeval.config.ProgressConfig) a line says what runs and for how long."""
    counts = {"built": 0, "reused": 0, "failed": 0, "excluded": 0}
    columns = [
        TextColumn("[bold]gold rebuild"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("built {task.fields[built]}  unchanged {task.fields[reused]}  [red]failed {task.fields[failed]}[/]  excluded {task.fields[excluded]}  {task.fields[item]}"),
    ]
    with Progress(*columns, console=err, transient=not sys.stderr.isatty()) as progress:
        task = progress.add_task("gold rebuild", total=total, item="", **counts)

        def advance(question_id: str, outcome: Outcome) -> None:
            counts[outcome] += 1
            progress.update(task, advance=1, item=activity.describe() or "", **counts)

        def status() -> str:
            return f"gold rebuild: {sum(counts.values())} of {total} questions done"

        with heartbeat(activity, status, every, lambda line: progress.console.print(line, markup=False)):
            yield advance


@gold_app.command("rebuild")
@user_errors
def gold_rebuild(
    holdout: HoldoutOpt = Path("holdout"),
    gold: GoldOpt = Path("gold"),
    config: ConfigOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Execute every reference query, even those whose gold is unchanged.")] = False,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.001, help="Seconds each reference query may run in this rebuild (default: gold.timeout_s).")] = None,
    include_excluded: Annotated[bool, typer.Option("--include-excluded", help="Also execute the reference queries of questions excluded on record (left out by default).")] = False,
) -> None:
    """Execute the reference queries whose gold is missing or out of date and switch the new gold
    in atomically. A question is reused when its query, the KG data, the engine and its version,
    the row cap and the build settings are unchanged. A failing query is recorded with its error
    and the rest is written; exit 1 names the failures not excluded on record. The queries of
    questions excluded on record are not executed unless --include-excluded. With
    `suite.with_gold`, the test suites are built too (`kgeval suite build`)."""
    cfg = load_config(config)
    gold_cfg = cfg.gold if timeout is None else cfg.gold.model_copy(update={"timeout_s": timeout})
    verify_holdout(holdout)
    loaded = load_holdout(holdout)
    activity = Activity()
    with rebuild_progress(len(loaded.questions()), activity, cfg.progress) as advance:
        report = rebuild_gold(
            loaded, lambda kg: reference_store(cfg, kg), gold_cfg, gold, advance, force=force, include_excluded=include_excluded, activity=activity,
        )  # fmt: skip
    if report.reuse_note:
        err.print(f"warning: {report.reuse_note}", markup=False)
    out.print(
        f"gold rebuilt in {gold} ({report.version.name if report.version else '-'}): {len(loaded.questions())} questions: {len(report.built)} executed, "
        f"{len(report.reused)} unchanged, {len(report.unexcluded_failures)} failed, {len(report.excluded_failures)} excluded on record without gold; "
        f"{report.total_seconds:.2f} s "
        f"({report.store_seconds:.2f} s building entries{f', summed over {gold_cfg.concurrency} at a time' if gold_cfg.concurrency > 1 else ''})", markup=False,
    )
    print_flagged(report.flagged)
    if cfg.suite.with_gold:  # the suites are gold too: rebuilt with it when configured
        from kgeval.cli._suite import build_holdout_suites, print_suite_report
        from kgeval.gold import suites_path

        print_suite_report(build_holdout_suites(loaded, cfg, gold, force=force), suites_path(gold))
    for failure in report.excluded_failures:  # the same line whether it was not executed or its failure kept
        why = "not executed (--include-excluded executes it)" if failure.question_id in report.not_executed else f"failed: {failure.error}"
        err.print(f"{holdout}/{failure.kg}: question {failure.question_id}: excluded on record, no gold: {why}", markup=False)
    for failure in report.unexcluded_failures:
        err.print(f"{holdout}/{failure.kg}: question {failure.question_id}: {failure.error}", markup=False)
    if not report.ok:
        ids = ", ".join(f.question_id for f in report.unexcluded_failures)
        err.print(
            f"gold rebuild: {len(report.unexcluded_failures)} reference queries failed: {ids}; every other question's gold "
            "was written. Fix them and rebuild (only they are executed again), or exclude them on record: "
            "`kgeval holdout exclude QID... --why TEXT`", markup=False,
        )
        raise typer.Exit(CheckFailed.exit_code)


def print_flagged(flagged: dict[str, list[str]]) -> None:
    """One line per flag naming every question that carries it."""
    for flag, questions in flagged.items():
        out.print(f"  {flag} ({len(questions)}): {', '.join(questions) or '-'}", markup=False)


@gold_app.command("show")
@user_errors
def gold_show(
    empty: Annotated[bool, typer.Option("--empty", help="Every empty-like gold: empty, one row of zeros or unbound cells, a false ASK.")] = False,
    holdout: HoldoutOpt = Path("holdout"),
    gold: GoldOpt = Path("gold"),
    config: ConfigOpt = None,
    format: Annotated[TextFormat, typer.Option("--format", help="text (one block per question) or json (one object per line).")] = TextFormat.text,
) -> None:
    """The golds that say nothing (--empty: empty results, one row of zeros or unbound cells,
    false ASKs: the set the checklist and the report count), each with its question, reference
    query, row count, whether a run needs it confirmed (a false ASK only when its query needs
    vocabulary the KG lacks: the configured store is asked), how it is confirmed, and the content
    hash a reviewer approves (`kgeval review approve QID --sha256 H`)."""
    from kgeval.review import describe_empty_golds, empty_golds

    if not empty:
        raise typer.BadParameter("give --empty (the golds that say nothing are what this lists)")
    loaded = load_holdout(holdout)
    with _vocabulary_check(load_config(config), loaded) as missing:
        found = empty_golds(gold, loaded, missing)
    for g in found:
        if format is TextFormat.json:
            print(g.model_dump_json())
            continue
        shape = "ASK: false" if g.form == "ask" else f"{g.rows} row" + ("s" * (g.rows != 1))
        print(f"{g.kg}/{g.question_id}\t{g.kind} ({shape})\t{g.confirmation}\tsha256 {g.content_sha256}")
        print(f"  question: {g.question}")
        if g.missing_vocabulary:
            print(f"  false only because the KG lacks: {', '.join(g.missing_vocabulary)}")
        print("  " + g.sparql.strip().replace("\n", "\n  ") + "\n")
    needing = sum(g.needs_confirmation and g.confirmation != "excluded" for g in found)
    unconfirmed = sum(g.confirmation == "unconfirmed" for g in found)
    err.print(f"{describe_empty_golds(found)}; {needing} need confirmation (a false ASK only when its query needs vocabulary the KG lacks), "
              f"{unconfirmed} unconfirmed: `kgeval holdout confirm-empty QID... --why TEXT` confirms those that are right; fix the reference "
              "query of the others", markup=False)


@contextmanager
def _vocabulary_check(cfg: KgevalConfig, holdout: Holdout) -> Iterator[Callable[[Question], list[str] | None]]:
    """The check the checklist makes of a false ASK's vocabulary (`missing_vocabulary` on the
    KG's lookup, as a run makes it), on the configured store, each KG opened when first asked."""
    from kgeval.judges import missing_vocabulary
    from kgeval.runs import store_lookup

    stores: dict[str, Store] = {}
    lookups: dict[str, object] = {}

    def missing(q: Question) -> list[str] | None:
        if q.kg not in lookups:
            stores[q.kg] = reference_store(cfg, holdout.kg(q.kg))
            lookups[q.kg] = store_lookup(stores[q.kg], q.kg, cfg)
        return None if lookups[q.kg] is None else missing_vocabulary(q.sparql, lookups[q.kg])

    try:
        yield missing
    finally:
        for store in stores.values():
            close = getattr(store, "close", None)
            if close is not None:
                close()


def reference_store(cfg: KgevalConfig, kg: KnowledgeGraph) -> Store:
    """The store that runs a KG's reference queries. They are untrusted input like a candidate's
    (an imported benchmark wrote them): an embedded store keeps no copy of the KG in this process
    and runs them in its sandbox workers, killed at `gold.timeout_s` and bounded in memory, so a
    query that aborts the engine or outruns its timeout ends its worker, not the rebuild, and
    leaves no thread running in this process."""
    return open_store(cfg.store, kg.files, kg.id, graphs=kg.graphs, local_copy=False)


@gold_app.command("seal")
@user_errors
def gold_seal(
    gold: GoldOpt = Path("gold"),
    key_file: Annotated[Path | None, typer.Option("--key-file", help="File holding the integrity key (default: the configured one, KGEVAL_INTEGRITY_KEY or KGEVAL_INTEGRITY_KEY_FILE).")] = None,
) -> None:
    """Sign the gold in force with the integrity key, as it is: its content is checked first (a
    damaged gold is refused, exit 2), then the manifest's HMAC is written beside it. Its content
    and manifest hash are unchanged, so runs already made on it still name it. Its test suites
    (`<gold>/suites`, a gold version of their own) are sealed the same way, first."""
    from kgeval.gold import has_suites, seal_gold, suites_path
    from kgeval.integrity import KEY_ENV, KEY_FILE_ENV, integrity_key, key_from_file

    key = key_from_file(key_file) if key_file is not None else integrity_key()
    if key is None:
        raise InputError(f"no integrity key: give --key-file FILE, or set {KEY_FILE_ENV} (or {KEY_ENV}); make one with `umask 077; openssl rand -hex 32 > FILE`")
    for where in [suites_path(gold)] * has_suites(gold) + [gold]:  # the suites first: a damaged one leaves the gold unsigned
        digest, written = seal_gold(where, key)
        said = "signed with the integrity key" if written else "already signed with this integrity key: nothing written"
        out.print(f"gold {where}: content verified, {said} (gold manifest {digest[:12]}, unchanged)", markup=False)


@gold_app.command("verify")
@user_errors
def gold_verify(
    holdout: HoldoutOpt = Path("holdout"),
    gold: GoldOpt = Path("gold"),
    config: ConfigOpt = None,
    store_check: Annotated[bool, typer.Option("--store-check/--no-store-check", help="Also compare engine, version and data hash with the configured store (opens it).")] = True,
    reexecute: Annotated[bool, typer.Option("--reexecute", help="Also run every reference query again on the configured store and compare with the stored gold.")] = False,
) -> None:
    """Check the gold (integrity tag when a key is configured, file and result hashes: corrupt,
    exit 1), that it was built from this holdout, its queries, and the engine and data the
    configured store serves now (STALE: exit 1), and that no reference query failed outside
    the exclusions on record (exit 1). With --reexecute, every query is run again (exit 1
    naming each question whose result differs)."""
    cfg = load_config(config)
    verify_holdout(holdout)
    loaded = load_holdout(holdout)
    store_for = (lambda kg: reference_store(cfg, kg)) if store_check or reexecute else None
    digest = verify_gold(gold, loaded, store_for)
    checked = "and the configured store " if store_for else ""
    out.print(f"gold {gold}: verified against holdout {holdout} {checked}(gold manifest {digest[:12]})")
    if loaded.exclusions:
        out.print(f"  excluded on record: {', '.join(f'{q} ({e.why})' for q, e in sorted(loaded.exclusions.items()))}", markup=False)
    if loaded.confirmed_empty:
        out.print(f"  empty answer confirmed on record: {', '.join(f'{q} ({c.why})' for q, c in sorted(loaded.confirmed_empty.items()))}", markup=False)
    if reexecute:
        entries = load_gold(gold)
        with progress_bar("re-executing", len(entries)) as advance:
            differences = reexecution_differences(entries, loaded, store_for, cfg.gold, advance)
        if differences:
            raise CheckFailed(f"{gold}: {len(differences)} questions answer differently when re-executed:\n  " + "\n  ".join(differences))
        out.print(f"  re-executed {len(entries)} reference queries: every result matches the stored gold", markup=False)


IdsFromOpt = Annotated[
    Path | None,
    typer.Option(
        "--from", help="Also read question ids from this file ('-': stdin): the first word of each line that does not start with a space or '#'"
        " (so `kgeval gold show --empty` output can be edited and given as is), or a JSON line's question_id.",
    ),
]


def _ids_given(question_ids: list[str] | None, source: Path | None) -> list[str]:
    """The ids on the command line, then those read from `--from` (a file, or '-' for stdin)."""
    ids = list(question_ids or [])
    if source is not None:
        try:
            text = sys.stdin.read() if str(source) == "-" else source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{source}: cannot read question ids (--from): {exc}") from None
        ids += [_line_id(source, n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip() and not line[0].isspace() and not line.startswith("#")]
    if not ids:
        raise InputError("no question id given: name them, or give --from FILE ('-' for stdin)")
    return ids


def _line_id(source: Path, n: int, line: str) -> str:
    if not line.startswith("{"):
        return line.split()[0]
    try:
        return str(json.loads(line)["question_id"])
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{source}:{n}: a JSON line without a question_id") from None


@holdout_app.command("exclude")
@user_errors
def holdout_exclude(
    question_ids: Annotated[list[str] | None, typer.Argument(help="Question ids to exclude from evaluation.")] = None,
    why: Annotated[str, typer.Option("--why", help="Why they are excluded (kept on record, shown in every report).")] = "",
    holdout: HoldoutOpt = Path("holdout"),
    source: IdsFromOpt = None,
) -> None:
    """Exclude questions from evaluation on record (EXCLUDED.yaml: who, when, why) and reseal
    the holdout. Runs then skip them and say so; the gold still covers them."""
    added, digest = exclude_questions(holdout, _ids_given(question_ids, source), why)
    for e in added:
        out.print(f"excluded {e.question_id}: {e.why}", markup=False)
    out.print(f"resealed {holdout}: manifest {digest}; now run `kgeval gold rebuild` (it executes nothing that is unchanged)")


@holdout_app.command("include")
@user_errors
def holdout_include(
    question_ids: Annotated[list[str] | None, typer.Argument(help="Excluded question ids to evaluate again.")] = None,
    holdout: HoldoutOpt = Path("holdout"),
    source: IdsFromOpt = None,
) -> None:
    """Take questions off the exclusion record and reseal the holdout."""
    removed, digest = include_questions(holdout, _ids_given(question_ids, source))
    out.print(f"included again: {', '.join(removed)}; resealed {holdout}: manifest {digest}", markup=False)


@holdout_app.command("confirm-empty")
@user_errors
def holdout_confirm_empty(
    question_ids: Annotated[list[str] | None, typer.Argument(help="Question ids whose empty answer is the expected one.")] = None,
    why: Annotated[str, typer.Option("--why", help="Why the empty answer is right (kept on record, shown in every report).")] = "",
    holdout: HoldoutOpt = Path("holdout"),
    source: IdsFromOpt = None,
) -> None:
    """Confirm on record that the questions' empty answers are expected (CONFIRMED_EMPTY.yaml:
    who, when, why, the reference query's hash) and reseal the holdout. The pre-eval checklist
    then accepts their empty golds while their reference queries stay unchanged."""
    added, digest = confirm_empty(holdout, _ids_given(question_ids, source), why)
    for c in added:
        out.print(f"confirmed empty {c.question_id} (reference query {c.sparql_sha256[:12]}): {c.why}", markup=False)
    out.print(f"resealed {holdout}: manifest {digest}; now run `kgeval gold rebuild` (it executes nothing that is unchanged)")


@holdout_app.command("unconfirm-empty")
@user_errors
def holdout_unconfirm_empty(
    question_ids: Annotated[list[str] | None, typer.Argument(help="Question ids to take off the confirmed-empty record.")] = None,
    holdout: HoldoutOpt = Path("holdout"),
    source: IdsFromOpt = None,
) -> None:
    """Take confirmed empty answers off the record and reseal the holdout."""
    removed, digest = unconfirm_empty(holdout, _ids_given(question_ids, source))
    out.print(f"no longer confirmed empty: {', '.join(removed)}; resealed {holdout}: manifest {digest}", markup=False)
