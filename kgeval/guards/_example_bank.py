"""Example-bank guards for the system under test's few-shot retrieval.

Three guards, each reporting whether it is active (`status()`, for the pre-eval checklist):

- `example-bank.ingest`: refuses an example drawn from a holdout KG: its KG id is a holdout
  KG, its SPARQL names a distinctive holdout IRI or namespace, or its question is a holdout
  question (exact or near-duplicate);
- `example-bank.retrieval-filter`: at ask time drops any retrieved example that the ingest
  guard would refuse (a bank filled around the guard, or before the holdout grew);
- `example-bank.similarity-cap`: drops a retrieved example whose question is more similar
  than `max_similarity` (content-word Jaccard) to the question asked.

`BankGuards` wraps any bank (call `check_ingest` before adding, `filter_retrieved` on what the
retriever returns); `ExampleBank` is a small in-memory bank with the guards built in.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from kgeval.config import ExampleBankConfig
from kgeval.errors import LeakDetected
from kgeval.guards._index import HoldoutIndex
from kgeval.guards._text import features, iris_in_query, jaccard, question_similarity, tokens

INGEST, RETRIEVAL, SIMILARITY = "example-bank.ingest", "example-bank.retrieval-filter", "example-bank.similarity-cap"


class Example(BaseModel, frozen=True):
    """One few-shot example: a question and its SPARQL, from a named KG."""

    question: str
    sparql: str
    kg: str
    """Id of the KG the example was written for."""
    id: str | None = None


class GuardStatus(BaseModel):
    """Whether one guard is on, for the pre-eval checklist."""

    name: str
    active: bool
    details: dict[str, str | int | float | bool]


class ExampleRefused(LeakDetected):
    """An example drawn from the holdout was offered to the bank."""

    def __init__(self, example: Example, reasons: list[str]) -> None:
        super().__init__(f"example {example.id or example.question!r} refused: {'; '.join(reasons)}")
        self.example = example
        self.reasons = reasons


class BankGuards:
    """The three guards over one holdout index; wraps any example bank."""

    def __init__(self, index: HoldoutIndex, config: ExampleBankConfig | None = None) -> None:
        self.index = index
        self._holdout_kgs = {_kg_name(kg) for kg in index.kgs}
        self.config = config or ExampleBankConfig()
        self.refused = 0
        self.filtered = 0
        self.capped = 0

    def holdout_reasons(self, example: Example) -> list[str]:
        """Why `example` is holdout material; empty when it is not."""
        reasons = []
        if _kg_name(example.kg) in self._holdout_kgs:  # "HR", " hr " are the holdout's hr
            reasons.append(f"drawn from holdout KG {example.kg!r}")
        expanded = " ".join(f"<{iri}>" for iri in iris_in_query(example.sparql))
        for m in self.index.match_text(f"{example.sparql}\n{expanded}"):
            if m.kind in ("iri", "namespace", "sparql"):
                reasons.append(f"SPARQL has holdout {m.kind} {m.matched} ({m.holdout_item})")
        reasons += [f"question is holdout {m.holdout_item} ({m.kind})" for m in self.index.question_matches(example.question)]
        return list(dict.fromkeys(reasons))

    def check_ingest(self, example: Example) -> None:
        """Raise ExampleRefused when `example` is holdout material."""
        reasons = self.holdout_reasons(example)
        if reasons:
            self.refused += 1
            raise ExampleRefused(example, reasons)

    def filter_retrieved(self, question: str, examples: Iterable[Example]) -> list[Example]:
        """Drop holdout material and near-duplicates of `question` from retrieved examples."""
        kept = []
        for ex in examples:
            if self.holdout_reasons(ex):
                self.filtered += 1
            elif question_similarity(question, ex.question) > self.config.max_similarity:
                self.capped += 1
            else:
                kept.append(ex)
        return kept

    def status(self) -> list[GuardStatus]:
        armed = bool(self.index.kgs and self.index.questions)
        common = {"holdout_kgs": len(self.index.kgs), "holdout_questions": len(self.index.questions)}
        return [
            GuardStatus(name=INGEST, active=armed, details={**common, "distinctive_iris": len(self.index.iris), "refused": self.refused}),
            GuardStatus(name=RETRIEVAL, active=armed, details={**common, "filtered": self.filtered}),
            GuardStatus(name=SIMILARITY, active=True, details={"max_similarity": self.config.max_similarity, "capped": self.capped}),
        ]


class ExampleBank:
    """An in-memory few-shot bank: guarded ingest, lexical retrieval, guarded results.

    Built without guards it still works, and `status()` says every guard is off, so the
    pre-eval checklist refuses to dispatch.
    """

    def __init__(self, guards: BankGuards | None) -> None:
        self.guards = guards
        self._examples: list[tuple[Example, frozenset[str]]] = []

    def __len__(self) -> int:
        return len(self._examples)

    def add(self, example: Example) -> None:
        """Add one example; raise ExampleRefused when it is holdout material."""
        if self.guards:
            self.guards.check_ingest(example)
        self._examples.append((example, features(tokens(example.question))))

    def add_many(self, examples: Iterable[Example]) -> list[ExampleRefused]:
        """Add every example that is not holdout material; return the refusals."""
        refusals = []
        for ex in examples:
            try:
                self.add(ex)
            except ExampleRefused as exc:
                refusals.append(exc)
        return refusals

    def retrieve(self, question: str, k: int = 3) -> list[Example]:
        """The `k` most similar examples to `question` that pass the ask-time guards."""
        asked = features(tokens(question))
        ranked = sorted(self._examples, key=lambda item: -jaccard(asked, item[1]))
        kept: list[Example] = []
        for ex, _ in ranked:
            if len(kept) == k:
                break
            kept += self.guards.filter_retrieved(question, [ex]) if self.guards else [ex]
        return kept

    def status(self) -> list[GuardStatus]:
        if self.guards:
            return self.guards.status()
        return [GuardStatus(name=n, active=False, details={"reason": "bank built without guards"}) for n in (INGEST, RETRIEVAL, SIMILARITY)]


def _kg_name(kg: str) -> str:
    """A KG id as the bank compares it: case, surrounding space, `_` for `-` aside."""
    return kg.strip().casefold().replace("_", "-")
