"""The contamination endpoint's matcher: a seam for the guards' holdout index.

`matcher_for` is the one construction path. Until the guards work (`kgeval.guards`:
`build_index(holdout, config.guards, fingerprints).match_text`) is on main, it returns
`QuestionTextMatcher`, which finds holdout question texts (normalized containment), question
ids and KG identifiers in a text. Swap the body of `matcher_for` when the guards land.
"""

from __future__ import annotations

import re
from typing import Protocol

from pydantic import BaseModel

from kgeval.holdout import Holdout


class TextMatch(BaseModel):
    """Holdout material found in one text (field names as the guards' `Match`)."""

    kind: str
    matched: str
    holdout_item: str
    score: float | None = None


class TextMatcher(Protocol):
    def match_text(self, text: str) -> list: ...


def _normalize(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.casefold()))


class QuestionTextMatcher:
    """Stand-in matcher: exact (normalized) holdout questions, question ids, `holdout/<kg>`."""

    def __init__(self, holdout: Holdout) -> None:
        self._questions = [(_normalize(q.question), f"{q.kg}/{q.id}") for q in holdout.questions()]
        ids = sorted({q.id for q in holdout.questions()}, key=len, reverse=True)
        self._ids = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, ids)) + r")(?![\w-])") if ids else None
        self._kg_paths = {f"holdout/{kg.id}": kg.id for kg in holdout.kgs}
        self._id_kg = {q.id: q.kg for q in holdout.questions()}

    def match_text(self, text: str) -> list[TextMatch]:
        hits: list[TextMatch] = []
        norm = f" {_normalize(text)} "
        for question, item in self._questions:
            if question and f" {question} " in norm:
                hits.append(TextMatch(kind="question-exact", matched=question[:200], holdout_item=item))
        if self._ids is not None:
            for m in self._ids.finditer(text):
                hits.append(TextMatch(kind="kg-identifier", matched=m.group(1), holdout_item=f"{self._id_kg[m.group(1)]}/{m.group(1)}"))
        for path, kg in self._kg_paths.items():
            if path in text:
                hits.append(TextMatch(kind="kg-identifier", matched=path, holdout_item=f"kg {kg}"))
        return hits


def matcher_for(holdout: Holdout) -> TextMatcher:
    """The matcher the service uses (see the module docstring for the swap)."""
    return QuestionTextMatcher(holdout)
