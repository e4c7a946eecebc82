"""Question ids in the forms kgeval prints: `id` and `kg/id` (gold and checklist messages name
a question by its KG and id). Every command that takes a question id reads both."""

from __future__ import annotations

from collections.abc import Iterable

from kgeval.errors import InputError


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
    hint = f" (it is {', '.join(elsewhere)})" if elsewhere else " (give ID or KG/ID as `kgeval review status` lists them)"
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
