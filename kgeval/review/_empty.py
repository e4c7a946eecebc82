"""The golds that say nothing, listed for review (`kgeval gold show --empty`): empty results,
and results that found nothing (a false ASK, a count of 0). Each needs a reviewer's look, since
an empty gold from a broken reference query would accept any answer that finds nothing; the
checklist's `empty_gold` item refuses a run until each is confirmed."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from kgeval.gold import index_gold
from kgeval.holdout import Holdout, Question
from kgeval.judges import is_uninformative
from kgeval.review._status import current_hashes

Confirmation = Literal["expect_empty", "confirmed_on_record", "excluded", "unconfirmed"]


class EmptyGold(BaseModel):
    """One gold that says nothing, with what a reviewer needs to judge it."""

    kg: str
    question_id: str
    question: str
    sparql: str
    """The reference query, as written in the holdout."""
    form: Literal["select", "ask"]
    rows: int
    """The result's true number of rows (1 for a count of 0, 0 for an empty one)."""
    kind: Literal["empty", "nothing_found"]
    """empty: no rows; nothing_found: a false ASK or a count of 0."""
    confirmation: Confirmation
    """How the empty answer is confirmed (expect_empty in questions.yaml, `kgeval holdout
    confirm-empty`), or that the question is excluded on record, or unconfirmed."""
    content_sha256: str
    """The hash `kgeval review approve QID --sha256 H` binds an approval to."""


def empty_golds(gold_dir: Path, holdout: Holdout) -> list[EmptyGold]:
    """Every gold of `holdout` that is empty or found nothing, in holdout order. Only golds that
    can be uninformative (empty, ASK, one row) are read; the rest stay on disk."""
    gold = index_gold(gold_dir)
    found = []
    for q in holdout.questions():
        summary = gold.entries.get(q.id)
        if summary is None or not (summary.total == 0 or summary.form == "ask" or summary.total == 1):
            continue
        entry = gold.entry(q.id)
        if not is_uninformative(entry.result):
            continue
        kind = "empty" if summary.form == "select" and summary.total == 0 else "nothing_found"
        found.append(EmptyGold(
            kg=q.kg, question_id=q.id, question=q.question, sparql=q.sparql, form=summary.form, rows=summary.total, kind=kind,
            confirmation=_confirmation(holdout, q), content_sha256=current_hashes([q], {q.id: entry})[q.id],
        ))  # fmt: skip
    return found


def _confirmation(holdout: Holdout, question: Question) -> Confirmation:
    if question.id in holdout.exclusions:
        return "excluded"
    if question.expect_empty:
        return "expect_empty"
    return "confirmed_on_record" if holdout.empty_confirmed(question) else "unconfirmed"
