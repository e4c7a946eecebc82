"""`kgeval holdout exclude` / `include` and `confirm-empty` / `unconfirm-empty`: change the
decisions on record, then reseal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kgeval.errors import CheckFailed, InputError
from kgeval.holdout._confirmed import CONFIRMED_EMPTY, EmptyConfirmation, new_confirmation
from kgeval.holdout._exclusions import EXCLUSIONS, Exclusion, R, RecordFile, new_exclusion
from kgeval.holdout._load import load_holdout
from kgeval.holdout._manifest import MANIFEST, RESTORE_OR_RESEAL, holdout_problems, seal_holdout
from kgeval.holdout._model import Question


def _sealed_questions(root: Path, refs: list[str]) -> dict[str, Question]:
    """The questions `refs` name (`id` or `kg/id`), by id; refuses a holdout that does not match
    its manifest (a reseal would bless whatever was changed) and an id it does not hold."""
    problems = holdout_problems(root)
    if problems:
        raise CheckFailed(f"{root}: does not match its {MANIFEST}, refusing to reseal it:\n  " + "\n  ".join(problems) + f"\n{RESTORE_OR_RESEAL}")
    holdout = load_holdout(root)
    by_id = {q.id: q for q in holdout.questions()}
    return {qid: by_id[qid] for qid in holdout.question_ids(refs)}


def exclude_questions(root: Path, question_ids: list[str], why: str) -> tuple[list[Exclusion], str]:
    """Exclude the questions on record with `why` and reseal; return the new exclusions and
    the new holdout manifest hash. Re-excluding a question replaces its reason."""
    return _put_on_record(root, question_ids, why, EXCLUSIONS, "say why the questions are excluded", lambda q, why: new_exclusion(q.id, why))


def include_questions(root: Path, question_ids: list[str]) -> tuple[list[str], str]:
    """Take questions off the exclusion record and reseal; return those removed and the new
    holdout manifest hash."""
    return _take_off_record(root, question_ids, EXCLUSIONS, "not excluded")


def confirm_empty(root: Path, question_ids: list[str], why: str) -> tuple[list[EmptyConfirmation], str]:
    """Confirm on record that each question's empty answer is the expected one, for its current
    reference query, with `why`, and reseal; return the new confirmations and the new holdout
    manifest hash. Confirming a question again replaces its record."""
    return _put_on_record(
        root, question_ids, why, CONFIRMED_EMPTY, "say why the empty answer is the right one", lambda q, why: new_confirmation(q.id, why, q.sparql_sha256)
    )


def unconfirm_empty(root: Path, question_ids: list[str]) -> tuple[list[str], str]:
    """Take confirmed empty answers off the record and reseal; return those removed and the new
    holdout manifest hash."""
    return _take_off_record(root, question_ids, CONFIRMED_EMPTY, "not confirmed empty")


def _put_on_record(root: Path, question_ids: list[str], why: str, file: RecordFile[R], say_why: str, make: Callable[[Question, str], R]) -> tuple[list[R], str]:
    root = Path(root)
    if not why.strip():
        raise InputError(f"--why is required: {say_why}")
    named = _sealed_questions(root, question_ids)
    records = file.load(root)
    added = [make(q, why.strip()) for q in named.values()]
    records.update((r.question_id, r) for r in added)
    file.write(root, records)
    return added, seal_holdout(root)


def _take_off_record(root: Path, question_ids: list[str], file: RecordFile, not_on: str) -> tuple[list[str], str]:
    root = Path(root)
    ids = list(_sealed_questions(root, question_ids))
    records = file.load(root)
    missing = [q for q in ids if q not in records]
    if missing:
        raise InputError(f"{root}: {', '.join(missing)} {not_on}")
    for q in ids:
        records.pop(q)
    file.write(root, records)
    return ids, seal_holdout(root)
