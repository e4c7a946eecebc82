"""Question ids in the forms kgeval prints: `id` and `kg/id` (gold and checklist messages name
a question by its KG and id). Every command that takes a question id reads both."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from kgeval.config import SUGGEST_MIN_RATIO
from kgeval.errors import InputError

_NUMBER = re.compile(r"\d+")


def likely_meant(given: str, names: Iterable[str]) -> str | None:
    """The one of `names` that `given` is likely a misspelling of, else None: the same ignoring
    case, else the closest whose numbers are the same (ids that differ in a number are other
    questions: `world_1-764` is not `world_1-796`, however alike they look) and whose likeness
    (difflib's ratio, case ignored) is at least `SUGGEST_MIN_RATIO`. Two names as close: none."""
    names = list(names)
    same_case = [n for n in names if n.casefold() == given.casefold()]
    if same_case:
        return same_case[0] if len(same_case) == 1 else None
    numbers = [int(n) for n in _NUMBER.findall(given)]
    scored = sorted(
        ((difflib.SequenceMatcher(None, given.casefold(), n.casefold()).ratio(), n) for n in names
         if [int(d) for d in _NUMBER.findall(n)] == numbers),
        reverse=True,
    )  # fmt: skip
    if not scored or scored[0][0] < SUGGEST_MIN_RATIO or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    return scored[0][1]


def did_you_mean(given: str, names: Iterable[str]) -> str:
    """" (did you mean 'x'?)" when `given` is likely a misspelling of x (`likely_meant`), else ""."""
    meant = likely_meant(given, names)
    return f" (did you mean {meant!r}?)" if meant is not None else ""


def resolve_question_id(ref: str, questions: Iterable[tuple[str, str]], where: str) -> str:
    """The question id `ref` names among `questions` ((kg, id) pairs): `ref` itself when it is an
    id, or the id of `kg/id`. InputError naming `where` when it names none, or names two (an id
    with a slash that is also a KG and an id): the candidates are listed."""
    pairs = list(questions)
    candidates = {f"{kg}/{qid}": qid for kg, qid in pairs if qid == ref}
    if "/" in ref:
        kg, _, qid = ref.partition("/")
        candidates.update({f"{k}/{q}": q for k, q in pairs if (k, q) == (kg, qid)})
    if len(candidates) == 1:
        return next(iter(candidates.values()))
    if candidates:
        raise InputError(f"{where}: {ref!r} names {len(candidates)} questions: {', '.join(sorted(candidates))}; give one as KG/ID")
    elsewhere = [f"{k}/{q}" for k, q in pairs if q == ref.partition("/")[2]] if "/" in ref else []
    meant = likely_meant(ref, [f"{k}/{q}" for k, q in pairs] if "/" in ref else [q for _, q in pairs])
    if elsewhere:
        hint = f" (it is {', '.join(elsewhere)})"
    elif meant is not None:
        hint = f" (did you mean {meant!r}?)"
    else:
        hint = " (give ID or KG/ID as `kgeval review status` lists them)"
    raise InputError(f"{where}: no question {ref!r}{hint}")


def resolve_question_ids(refs: Iterable[str], questions: Iterable[tuple[str, str]], where: str) -> list[str]:
    """`resolve_question_id` of each of `refs`, in order, duplicates dropped; every unknown one
    named in one error."""
    pairs = list(questions)
    resolved, problems = [], []
    for ref in refs:
        try:
            resolved.append(resolve_question_id(ref, pairs, where))
        except InputError as exc:
            problems.append(str(exc).removeprefix(f"{where}: "))
    if problems:
        raise InputError(f"{where}: " + "; ".join(problems))
    return list(dict.fromkeys(resolved))
