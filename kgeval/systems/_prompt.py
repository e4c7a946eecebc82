"""The prompt every model system sends: instruction, the KG's schema summary, few-shot examples
from the guarded example bank, the question; and reading the SPARQL back out of the answer.

One prompt for every model (Gemini, any OpenAI-compatible endpoint), so two models compared
on a run saw the same input.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kgeval.config import PipelineConfig, PromptConfig
from kgeval.errors import InputError
from kgeval.holdout import Question
from kgeval.stores import Store
from kgeval.systems._examples import FewShotBank
from kgeval.systems._model import StopReason, SystemOutput
from kgeval.systems._schema import schema_summary

if TYPE_CHECKING:  # kgeval.guards imports the contamination check (pyarrow, numpy): not for a replay
    from kgeval.guards import Example

INSTRUCTION = (
    "You translate questions about a knowledge graph into one SPARQL 1.1 query (SELECT or ASK). "
    "Use only the classes and predicates listed in the schema, with full IRIs or PREFIX "
    "declarations. Answer with the query alone in a ```sparql code block."
)
_FENCE = re.compile(
    r"```[ \t]*(?:(?!(?:prefix|base|select|ask|construct|describe)\b)[a-z][\w+#.-]*[ \t]*\r?\n|sparql\b)?\s*(.*?)(?:```|$)",
    re.DOTALL | re.IGNORECASE,
)
"""A code block: its info string (```sparql, ```sql, ```rq, ``` sparql: a word alone on the
fence's line, never a query's first keyword) is not part of the query."""
_BARE = re.compile(r"^\s*(PREFIX|BASE|SELECT|ASK)\b", re.IGNORECASE)


class PromptedModel:
    """What every model system shares: the prompt (`prompt`, `prepare` per KG), its features as
    the declared pipeline, the bank's guards. Subclasses set `name` and call the model."""

    name: str
    kind = "model"

    def __init__(self, config: PromptConfig, bank: FewShotBank | None, reasoning: dict[str, Any]) -> None:
        self.config = config
        self.version = str(config.model)
        self.bank = bank
        self._prompt = SchemaPrompt(bank, config.few_shot_k, config.schema_classes, config.schema_predicates, self.name)
        self.pipeline = PipelineConfig(default=self._prompt.features)
        self.reasoning = reasoning
        """Settings that change answers (model, token limits, temperature, thinking), recorded with the run."""

    def prepare(self, kg: str, store: Store) -> None:
        """Summarize the KG's schema from its store (once per KG, before its questions)."""
        self._prompt.prepare(kg, store)

    def guards(self) -> list[object]:
        """The bank itself: its `status()` reports each of its guards."""
        return self._prompt.guards()

    def prompt(self, question: Question) -> str:
        return self._prompt.text(question)


class SchemaPrompt:
    """The schema-summary + guarded few-shot prompt; thread-safe once the KGs are prepared."""

    def __init__(self, bank: FewShotBank | None, few_shot_k: int, schema_classes: int, schema_predicates: int, system: str) -> None:
        self.bank = bank
        self.few_shot_k = few_shot_k if bank is not None else 0
        self._sizes = (schema_classes, schema_predicates)
        self._system = system
        self._schemas: dict[str, str] = {}

    @property
    def features(self) -> dict[str, object]:
        """The pipeline features this prompt gives a system (compared with production's)."""
        return {"few_shot_retrieval": self.few_shot_k > 0, "few_shot_k": self.few_shot_k, "schema_in_prompt": True}

    def prepare(self, kg: str, store: Store) -> None:
        """Summarize the KG's schema from its store (once per KG, before its questions)."""
        if kg not in self._schemas:
            self._schemas[kg] = schema_summary(store, classes=self._sizes[0], predicates=self._sizes[1])

    def guards(self) -> list[object]:
        """The bank itself: its `status()` reports each of its guards."""
        return [self.bank] if self.bank is not None else []

    def text(self, question: Question) -> str:
        if question.kg not in self._schemas:
            raise InputError(f"{self._system}: no schema prepared for KG {question.kg!r}")
        examples: list[Example] = []
        if self.bank is not None and self.few_shot_k > 0:
            examples = self.bank.retrieve(question.question, self.few_shot_k)
        parts = [f"Schema of the knowledge graph:\n{self._schemas[question.kg]}"]
        parts += [f"Example question: {e.question}\n```sparql\n{e.sparql}\n```" for e in examples]
        parts.append(f"Question: {question.question}")
        return "\n\n".join(parts)


def extract_sparql(text: str) -> str | None:
    """The query in the first ```sparql (or plain ```) block, or the whole text when it is a bare query."""
    match = _FENCE.search(text)
    if match and match.group(1).strip():
        return match.group(1).strip()
    if _BARE.match(text):
        return text.strip()
    return None


def output_from_text(text: str, stop: StopReason, **recorded: object) -> SystemOutput:
    """A model's visible text as a SystemOutput, the SPARQL read out of it; text with no query
    at a natural stop is `invalid_sparql`. `recorded`: finish reason, served version, usage."""
    sparql = extract_sparql(text)
    output = SystemOutput(sparql=sparql, stop_reason=stop, raw_text=text or None, **recorded)
    if stop == "stop" and text.strip() and sparql is None:
        return output.model_copy(update={"error": "the response has text but no SPARQL query", "error_kind": "invalid_sparql"})
    return output
