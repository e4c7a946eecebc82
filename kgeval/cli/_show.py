"""`kgeval show RUN QID [--seed S]`: one attempt shown whole in the terminal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kgeval.cli._common import DbOpt, TextFormat, err, out, user_errors
from kgeval.config import load_config
from kgeval.errors import InputError, KgevalError
from kgeval.gold import load_gold
from kgeval.holdout import load_holdout

if TYPE_CHECKING:  # the run database, samples and reports are imported by the commands that use them
    from kgeval.reports import RunReport
    from kgeval.samples import Sample, SampleSource


def _existing(given: Path | None, recorded: str, what: str, notes: list[str]) -> Path | None:
    """The directory given, else the one the run recorded; None (with a note) when neither exists."""
    if given is not None:
        if not given.is_dir():
            raise InputError(f"{given}: {what} directory not found")
        return given
    if recorded and Path(recorded).is_dir():
        return Path(recorded)
    notes.append(f"the run's {what} directory {recorded or '(not recorded)'} is not here: give --{what}")
    return None


@contextmanager
def opened_source(db: Path, run_id: str, gold: Path | None, holdout: Path | None, config: Path | None = None) -> Iterator[tuple[SampleSource, list[str]]]:
    """A read-only SampleSource over `db` for one run, and notes on what could not be found.
    Gold and holdout default to the directories the run recorded; the store to the run's."""
    from kgeval.audit import AuditLog
    from kgeval.review import ReviewLog
    from kgeval.runs import ResultsDB
    from kgeval.samples import SampleSource, run_config, store_opener

    notes: list[str] = []
    with ExitStack() as stack:
        results = stack.enter_context(ResultsDB(db, read_only=True))
        metadata = results.metadata(run_id)
        cfg = load_config(config) if config else run_config(metadata)
        gold_dir = _existing(gold, metadata.gold, "gold", notes)
        holdout_dir = _existing(holdout, metadata.holdout, "holdout", notes)
        loaded = load_holdout(holdout_dir) if holdout_dir else None
        audits, reviews = AuditLog(db, read_only=True), ReviewLog(db, read_only=True)
        stack.callback(audits.close)
        stack.callback(reviews.close)
        yield SampleSource(
            db=results, gold=load_gold(gold_dir) if gold_dir else {}, holdout=loaded,
            store_for=store_opener(cfg, loaded) if loaded else None, audits=audits, reviews=reviews,
            display_items=cfg.gold.display_items, suites=_suites(gold_dir, notes),
        ), notes


def _suites(gold_dir: Path | None, notes: list[str]):  # noqa: ANN202 - Suites | None
    """The suites beside the gold, verified; None (with a note when they exist) otherwise."""
    from kgeval.gold import has_suites, read_suites

    if gold_dir is None or not has_suites(gold_dir):
        return None
    try:
        return read_suites(gold_dir)
    except KgevalError as exc:
        notes.append(f"the test suites beside the gold do not verify, so no neighbour is shown: {exc}")
        return None


def report_samples(source: SampleSource, report: RunReport) -> list[Sample]:
    """The samples an HTML report shows whole: each wrong answer at its first wrong seed, then
    each question the judges disagree on (first seed), once each."""
    from kgeval.samples import build_sample

    keys = [(w.question_id, w.seeds_wrong[0] if w.seeds_wrong else None) for w in report.wrong]
    keys += [(item.question_id, None) for d in report.disagreements for item in d.questions]
    seen: set[str] = set()
    shown = []
    for question_id, seed in keys:
        if question_id not in seen:
            seen.add(question_id)
            shown.append(build_sample(source, report.metadata.run_id, question_id, seed))
    return shown


@user_errors
def show(
    run_id: Annotated[str, typer.Argument(help="Run id printed by `kgeval run`.")],
    question_id: Annotated[str, typer.Argument(help="Question id, e.g. ck25-07.")],
    seed: Annotated[int | None, typer.Option("--seed", help="Which attempt (default: the question's first seed).")] = None,
    db: DbOpt = Path("kgeval.duckdb"),
    gold: Annotated[Path | None, typer.Option("--gold", help="Gold directory (default: the run's).")] = None,
    holdout: Annotated[Path | None, typer.Option("--holdout", help="Holdout directory (default: the run's); its KG is queried to show the answer's rows.")] = None,
    page: Annotated[int, typer.Option("--page", min=1, help="Page of the row tables.")] = 1,
    page_size: Annotated[int, typer.Option("--page-size", min=1, help="Rows per page.")] = 20,
    format: Annotated[TextFormat, typer.Option("--format", help="text (rich) or json (the sample model).")] = TextFormat.text,
) -> None:
    """One attempt whole: question, gold and its flags, the candidate's SPARQL, its rows (executed
    again read-only on the run's store) beside the gold's, marked matched / missing / extra,
    every judge's verdict, terminal state, tries, latency and tokens."""
    from kgeval.reports import seed_outcomes
    from kgeval.samples import build_sample, sample_renderable

    with opened_source(db, run_id, gold, holdout) as (source, notes):
        outcomes = seed_outcomes(source.db, run_id)
        by_seed = outcomes.get(question_id) or outcomes.get(question_id.partition("/")[2], {})
        sample = build_sample(source, run_id, question_id, _first_wrong(by_seed) if seed is None else seed)
    sample = sample.model_copy(update={"notes": [*notes, *sample.notes]})
    if format is TextFormat.json:
        print(sample.model_dump_json(indent=2))
        return
    # wrapped, never cropped: `out` soft-wraps plain lines, which crops a panel at the terminal's
    # width (a one-line query lost the FILTER that made it wrong)
    out.print(sample_renderable(sample, page, page_size), soft_wrap=False)
    if len(sample.seeds) > 1:
        listed = ", ".join(f"{s} {_outcome(by_seed.get(s))}" + (" (shown)" if s == sample.seed else "") for s in sample.seeds)
        err.print(f"seeds: {listed}; --seed S shows another", markup=False)


def _outcome(outcome: str | None) -> str:
    if outcome is None:
        return "not judged"
    return "correct" if outcome == "correct" else f"wrong ({outcome.replace('_', ' ')})"


def _first_wrong(by_seed: dict[int, str]) -> int | None:
    """Where the seeds disagree, the first wrong one (the attempt worth a look); else None (the
    first seed)."""
    wrong = [s for s, outcome in sorted(by_seed.items()) if outcome != "correct"]
    return wrong[0] if wrong and len(wrong) < len(by_seed) else None
