"""The example bank the model systems retrieve few-shot examples from.

`ExampleBank` is the narrow interface a system needs: `retrieve` and `guards`. The guarded
bank of `kgeval.guards` plugs in here; `InMemoryExampleBank` is a small stand-in with one
real guard: the holdout blocklist (no example from a holdout KG, none whose question text is a
holdout question's), reported active only when a blocklist is loaded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from kgeval.errors import InputError


class Example(BaseModel):
    """One few-shot example: a question on some KG and its SPARQL."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    kg: str
    question: str
    sparql: str


class GuardState(BaseModel):
    """What a guard's `status()` reports."""

    name: str
    active: bool
    detail: str = ""


class ExampleBank(Protocol):
    def retrieve(self, question: str, kg: str, k: int) -> list[Example]:
        """The `k` examples most like `question`, never from a blocked (holdout) KG."""
        ...

    def guards(self) -> Sequence[object]:
        """The bank's guards: objects with `name` and `status()` (see kgeval.checklists.Guard)."""
        ...


_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


class _BlocklistGuard:
    name = "holdout_blocklist"

    def __init__(self, bank: InMemoryExampleBank) -> None:
        self._bank = bank

    def status(self) -> GuardState:
        kgs, texts = len(self._bank.blocked_kgs), len(self._bank.blocked_questions)
        active = kgs > 0
        detail = f"{kgs} holdout KGs and {texts} holdout questions blocked" if active else "no holdout blocklist loaded"
        return GuardState(name=self.name, active=active, detail=detail)


class _FilterGuard:
    """The bank filters by the blocklist on every retrieval (and refused them at load)."""

    name = "example_bank"

    def __init__(self, bank: InMemoryExampleBank) -> None:
        self._bank = bank

    def status(self) -> GuardState:
        dropped = self._bank.dropped
        active = bool(self._bank.blocked_kgs)
        detail = f"retrieval filters holdout KGs; {dropped} examples dropped at load" if active else "retrieval unfiltered: no blocklist"
        return GuardState(name=self.name, active=active, detail=detail)


class InMemoryExampleBank:
    """Examples in memory, retrieved by word overlap with the question (ties: bank order)."""

    def __init__(self, examples: Iterable[Example], *, blocked_kgs: Iterable[str] = (), blocked_questions: Iterable[str] = ()) -> None:
        self.blocked_kgs = frozenset(blocked_kgs)
        self.blocked_questions = frozenset(q.strip().lower() for q in blocked_questions)
        examples = list(examples)
        self.examples = [e for e in examples if not self._blocked(e)]
        self.dropped = len(examples) - len(self.examples)

    def _blocked(self, example: Example) -> bool:
        return example.kg in self.blocked_kgs or example.question.strip().lower() in self.blocked_questions

    def block(self, kgs: Iterable[str], questions: Iterable[str]) -> InMemoryExampleBank:
        """A copy that also blocks these KGs and question texts (the holdout's)."""
        return InMemoryExampleBank(
            self.examples, blocked_kgs=self.blocked_kgs | set(kgs), blocked_questions=self.blocked_questions | set(questions)
        )

    def retrieve(self, question: str, kg: str, k: int) -> list[Example]:
        wanted = _words(question)
        scored = [(-len(wanted & _words(e.question)), i) for i, e in enumerate(self.examples) if not self._blocked(e)]
        return [self.examples[i] for _, i in sorted(scored)[:k]]

    def guards(self) -> list[object]:
        return [_FilterGuard(self), _BlocklistGuard(self)]


def load_examples(path: Path) -> list[Example]:
    """Examples from a JSONL file, one {"kg", "question", "sparql"} per line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read example bank: {exc}") from None
    examples = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            examples.append(Example.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise InputError(f"{path}:{lineno}: not an example ({{kg, question, sparql}}): {exc}") from None
    return examples
