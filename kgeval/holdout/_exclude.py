"""`kgeval holdout exclude` / `include` and `confirm-empty` / `unconfirm-empty`: change the
decisions on record, then reseal."""

from __future__ import annotations

from pathlib import Path

from kgeval.errors import CheckFailed, InputError
from kgeval.holdout._confirmed import EmptyConfirmation, load_empty_confirmations, new_confirmation, write_empty_confirmations
from kgeval.holdout._exclusions import Exclusion, load_exclusions, new_exclusion, write_exclusions
from kgeval.holdout._load import load_holdout
from kgeval.holdout._manifest import MANIFEST, holdout_problems, seal_holdout
from kgeval.holdout._model import Question


def _sealed_question_ids(root: Path) -> set[str]:
    """The holdout's question ids; refuses a holdout that does not match its manifest (a
    reseal would bless whatever was changed)."""
    return set(_sealed_questions(root))


def _sealed_questions(root: Path) -> dict[str, Question]:
    problems = holdout_problems(root)
    if problems:
        raise CheckFailed(f"{root}: does not match its {MANIFEST}, refusing to reseal it:\n  " + "\n  ".join(problems))
    return {q.id: q for q in load_holdout(root).questions()}


def exclude_questions(root: Path, question_ids: list[str], why: str) -> tuple[list[Exclusion], str]:
    """Exclude the questions on record with `why` and reseal; return the new exclusions and
    the new holdout manifest hash. Re-excluding a question replaces its reason."""
    root = Path(root)
    if not why.strip():
        raise InputError("--why is required: say why the questions are excluded")
    known = _sealed_question_ids(root)
    unknown = [q for q in question_ids if q not in known]
    if unknown:
        raise InputError(f"{root}: no question {', '.join(unknown)} in this holdout")
    exclusions = load_exclusions(root)
    added = [new_exclusion(q, why.strip()) for q in dict.fromkeys(question_ids)]
    exclusions.update((e.question_id, e) for e in added)
    write_exclusions(root, exclusions)
    return added, seal_holdout(root)


def include_questions(root: Path, question_ids: list[str]) -> tuple[list[str], str]:
    """Take questions off the exclusion record and reseal; return those removed and the new
    holdout manifest hash."""
    root = Path(root)
    _sealed_question_ids(root)
    exclusions = load_exclusions(root)
    missing = [q for q in question_ids if q not in exclusions]
    if missing:
        raise InputError(f"{root}: {', '.join(missing)} not excluded")
    for q in question_ids:
        exclusions.pop(q)
    write_exclusions(root, exclusions)
    return list(question_ids), seal_holdout(root)


def confirm_empty(root: Path, question_ids: list[str], why: str) -> tuple[list[EmptyConfirmation], str]:
    """Confirm on record that each question's empty answer is the expected one, for its current
    reference query, with `why`, and reseal; return the new confirmations and the new holdout
    manifest hash. Confirming a question again replaces its record."""
    root = Path(root)
    if not why.strip():
        raise InputError("--why is required: say why the empty answer is the right one")
    known = _sealed_questions(root)
    unknown = [q for q in question_ids if q not in known]
    if unknown:
        raise InputError(f"{root}: no question {', '.join(unknown)} in this holdout")
    confirmations = load_empty_confirmations(root)
    added = [new_confirmation(q, why.strip(), known[q].sparql_sha256) for q in dict.fromkeys(question_ids)]
    confirmations.update((c.question_id, c) for c in added)
    write_empty_confirmations(root, confirmations)
    return added, seal_holdout(root)


def unconfirm_empty(root: Path, question_ids: list[str]) -> tuple[list[str], str]:
    """Take confirmed empty answers off the record and reseal; return those removed and the new
    holdout manifest hash."""
    root = Path(root)
    _sealed_questions(root)
    confirmations = load_empty_confirmations(root)
    missing = [q for q in question_ids if q not in confirmations]
    if missing:
        raise InputError(f"{root}: {', '.join(missing)} not confirmed empty")
    for q in question_ids:
        confirmations.pop(q)
    write_empty_confirmations(root, confirmations)
    return list(question_ids), seal_holdout(root)
