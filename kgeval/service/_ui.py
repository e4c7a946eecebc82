"""Routes behind the run page: the samples of a run, one sample whole, a question's gold for
review, and the comparison of two runs with each flip's samples. All read-only."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request

from kgeval.errors import CheckFailed, InputError, KgevalError
from kgeval.reports import Flip, comparability_of, compare_runs, withheld_accuracy
from kgeval.samples import Sample, SampleSource, build_sample, gold_for_review, highlight_sparql, sample_index
from kgeval.service._heavy import bounded, query_time_s
from kgeval.service._state import ServiceState

router = APIRouter(tags=["samples"])
"""Included by the app with the reader roles (admin, auditor, reviewer) as a dependency."""


def _state(request: Request) -> ServiceState:
    return request.app.state.kgeval


State = Annotated[ServiceState, Depends(_state)]


class _PerCall:
    """One table of the results database (`results`, `audits` or `reviews`) whose every method
    call opens the database for that call only (`ServiceState.database`), so that a sample's
    SPARQL runs on the store with no database open and no lock held: a slow candidate query
    holds up neither other requests nor other processes."""

    def __init__(self, state: ServiceState, table: str) -> None:
        self._state, self._table = state, table

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            with self._state.database() as db:
                return getattr(getattr(db, self._table), name)(*args, **kwargs)

        return call


def _source(state: ServiceState) -> SampleSource:
    return SampleSource(
        db=_PerCall(state, "results"), gold=state.gold, holdout=state.holdout, store_for=state.store,  # type: ignore[arg-type]
        audits=_PerCall(state, "audits"), reviews=_PerCall(state, "reviews"),  # type: ignore[arg-type]
        display_items=state.settings.config.gold.display_items, suites=state.suites,
    )


def _known(state: ServiceState, run_id: str) -> None:
    with state.database() as db:
        known = run_id in db.results.run_ids()
    if not known:
        raise HTTPException(404, f"no run {run_id!r} in {state.settings.db}")


@router.get("/runs/{run_id}/samples")
def samples(run_id: str, state: State) -> list[dict[str, Any]]:
    """Every attempt of the run as one line of the run page (filter, sort, open)."""
    _known(state, run_id)
    return [s.model_dump(mode="json") for s in sample_index(_source(state), run_id)]


@router.get("/runs/{run_id}/samples/{question_id:path}")
async def sample(run_id: str, question_id: str, request: Request, state: State, seed: int | None = None) -> dict[str, Any]:
    """One attempt whole: the sample model, and its SPARQL highlighted as HTML. The view runs
    the stored candidate again, so it is heavy work: it counts against the caller's share
    (`service.heavy_per_caller`, 429 beyond) and runs on the heavy pool, as /judge does."""

    def build(_: object) -> Sample:
        _known(state, run_id)
        try:
            return build_sample(_source(state), run_id, question_id, seed)
        except InputError as exc:
            raise HTTPException(404, str(exc)) from None
        except CheckFailed as exc:  # a broken audit log or a gold that does not verify, as every route says it
            raise HTTPException(409, str(exc)) from None
        except KgevalError as exc:
            raise HTTPException(400, str(exc)) from None

    built = await bounded(state, request.state.principal, build, at_least_s=query_time_s(state))
    return {
        "sample": built.model_dump(mode="json"),
        "sparql_html": highlight_sparql(built.attempt.sparql) if built.attempt.sparql else None,
        "reference_html": highlight_sparql(built.reference_sparql) if built.reference_sparql else None,
    }


@router.get("/review/questions/{question_id:path}/gold")
def review_gold(question_id: str, state: State) -> dict[str, Any]:
    """The question's gold as a reviewer needs it: flags, review state, rows, highlighted SPARQL."""
    question = state.question(question_id)
    view, table = gold_for_review(_source(state), question.id)
    return {
        "gold": view.model_dump(mode="json") if view else None,
        "table": table.model_dump(mode="json") if table else None,
        "reference_html": highlight_sparql(question.reference_query),
    }


@router.get("/compare")
def compare(a: str, b: str, state: State) -> dict[str, Any]:
    """The paired comparison of runs A and B; every paired question with both outcomes, so the
    page can mark the flips and open both samples. Incomparable runs are compared, and flagged."""
    _known(state, a)
    _known(state, b)
    with state.database() as db:
        check = comparability_of(db.results.metadata(a), db.results.metadata(b), {run: withheld_accuracy(db.results, run) for run in (a, b)})
        comparison = compare_runs(db.results, a, b, check, forced=not check.comparable)
    lines = {(s.question_id, s.seed): s for s in sample_index(_source(state), a)}
    other = {(s.question_id, s.seed): s for s in sample_index(_source(state), b)}
    flips = {f.question_id: f for f in comparison.flips}
    questions = sorted({q for q, _ in lines} | {q for q, _ in other})
    paired = [_pair(q, lines, other, flips.get(q)) for q in questions]
    return {"comparison": comparison.model_dump(mode="json"), "questions": paired}


def _pair(question_id: str, a: dict, b: dict, flip: Flip | None) -> dict[str, Any]:
    """One question of the comparison: each run's seeds and their outcomes, and the seed each
    side opens on (for a flip, the seed showing that side's outcome: the one that flipped)."""

    def outcomes(lines: dict, shown: int | None) -> dict[str, Any]:
        seeds = sorted(s for q, s in lines if q == question_id)
        return {"seeds": seeds, "outcomes": [lines[(question_id, s)].outcome for s in seeds], "open": shown if shown in seeds else (seeds or [None])[0]}

    first = next(v for lines in (a, b) for (q, _), v in sorted(lines.items()) if q == question_id)
    sides = {"a": outcomes(a, flip and flip.a_seed), "b": outcomes(b, flip and flip.b_seed)}
    return {"question_id": question_id, "kg": first.kg, "question": first.question, **sides, "flip": flip is not None}
