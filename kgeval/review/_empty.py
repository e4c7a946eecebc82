"""The golds that say nothing ("empty-like"), one definition for every command that counts
them: `kgeval gold show --empty` lists them, the checklist's `empty_gold` item refuses a run
until those that need it are confirmed, and the report's "without the empty-like golds" figure
leaves them all out. Each is one of three kinds, counted and named the same everywhere
(`describe_empty_golds`): an empty result, one row of zeros or unbound cells (a count of 0, a
MIN over no solutions), or a false ASK (`judges.is_uninformative`).

An empty gold from a broken reference query would accept any answer that finds nothing, and
so would one row of nothing: each needs a confirmation (`expect_empty: true`, `kgeval holdout
confirm-empty`, or a reviewer's approval at its hash). A false ASK is an answer ("no") unless
its query needs vocabulary the KG lacks (a misspelt predicate, an extract without the data):
then it needs the same confirmation; when the KG could not be asked, it needs it too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from kgeval.gold import index_gold
from kgeval.holdout import Holdout, Question
from kgeval.judges import is_uninformative
from kgeval.review._status import current_hashes

EmptyKind = Literal["empty", "zero_or_unbound", "false_ask"]
KIND_NAMES: dict[str, str] = {"empty": "empty", "zero_or_unbound": "one-row zero/unbound", "false_ask": "false ASK"}
"""Each kind as every count of empty-like golds names it."""
Confirmation = Literal["expect_empty", "confirmed_on_record", "excluded", "not_needed", "unconfirmed"]
MissingVocabulary = Callable[[Question], list[str] | None]
"""The IRIs a question's reference query needs that its KG lacks (the judges' `missing_vocabulary`
on the KG's lookup; None when the KG cannot be asked): what tells a false ASK that says nothing
from one that answers "no"."""


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
    kind: EmptyKind
    """empty: no rows; zero_or_unbound: one row of zeros or unbound cells; false_ask: a false ASK."""
    missing_vocabulary: list[str] | None = None
    """For a false ASK: the IRIs its reference query needs that the KG lacks ([] when it has them
    all); None when the KG was not asked."""
    needs_confirmation: bool
    """Whether a run needs this gold confirmed: every empty or one-row gold; a false ASK when its
    query needs vocabulary the KG lacks, or the KG was not asked."""
    confirmation: Confirmation
    """How the empty answer is confirmed (expect_empty in questions.yaml, `kgeval holdout
    confirm-empty`), that the question is excluded on record, that it needs none (a false ASK
    over vocabulary the KG has), or unconfirmed."""
    content_sha256: str
    """The hash `kgeval review approve QID --sha256 H` binds an approval to."""


def empty_golds(gold_dir: Path, holdout: Holdout, missing: MissingVocabulary | None = None) -> list[EmptyGold]:
    """Every gold of `holdout` that says nothing, in holdout order, excluded questions included
    (marked). `missing` asks the KG about each false ASK's vocabulary; without it every false ASK
    needs confirmation. Only golds that can say nothing (empty, ASK, one row) are read."""
    gold = index_gold(gold_dir)
    found = []
    for q in holdout.questions():
        summary = gold.entries.get(q.id)
        if summary is None or not (summary.total == 0 or summary.form == "ask" or summary.total == 1):
            continue
        entry = gold.entry(q.id)
        if not is_uninformative(entry.result):
            continue
        kind: EmptyKind = "false_ask" if summary.form == "ask" else "empty" if summary.total == 0 else "zero_or_unbound"
        lacks = missing(q) if kind == "false_ask" and missing is not None and q.id not in holdout.exclusions else None
        needs = kind != "false_ask" or lacks is None or bool(lacks)
        found.append(EmptyGold(
            kg=q.kg, question_id=q.id, question=q.question, sparql=q.sparql, form=summary.form, rows=summary.total, kind=kind,
            missing_vocabulary=lacks, needs_confirmation=needs, confirmation=_confirmation(holdout, q, needs),
            content_sha256=current_hashes([q], {q.id: entry})[q.id],
        ))  # fmt: skip
    return found


def describe_empty_golds(golds: list[EmptyGold]) -> str:
    """The count every command gives: "9 empty-like golds: 4 empty, 0 one-row zero/unbound,
    5 false ASK", with how many are excluded on record when any are."""
    counts = ", ".join(f"{sum(g.kind == kind for g in golds)} {name}" for kind, name in KIND_NAMES.items())
    excluded = sum(g.confirmation == "excluded" for g in golds)
    return f"{len(golds)} empty-like golds: {counts}" + (f" ({excluded} excluded on record)" if excluded else "")


def _confirmation(holdout: Holdout, question: Question, needs: bool) -> Confirmation:
    if question.id in holdout.exclusions:
        return "excluded"
    if question.expect_empty:
        return "expect_empty"
    if holdout.empty_confirmed(question):
        return "confirmed_on_record"
    return "unconfirmed" if needs else "not_needed"
