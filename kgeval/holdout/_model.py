"""The holdout format: KG directories, each with its RDF files and a questions.yaml."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kgeval._files import sha256_text
from kgeval.holdout._confirmed import EmptyConfirmation
from kgeval.holdout._exclusions import Exclusion
from kgeval.holdout._ids import resolve_question_ids


class Tag(StrEnum):
    """The closed vocabulary of question tags (see holdout/README.md)."""

    LOOKUP = "lookup"
    LIST = "list"
    LARGE_LIST = "large-list"
    COUNT = "count"
    ASK = "ask"
    ORDER_LIMIT = "order-limit"
    EMPTY = "empty"
    LANG_LITERAL = "lang-literal"
    TYPED_LITERAL = "typed-literal"
    AGGREGATE = "aggregate"
    MULTI_HOP = "multi-hop"
    HONEYPOT = "honeypot"


_TYPE_ORDER = (Tag.ASK, Tag.COUNT, Tag.ORDER_LIMIT, Tag.AGGREGATE, Tag.LARGE_LIST, Tag.LIST, Tag.EMPTY, Tag.LOOKUP)


class Question(BaseModel):
    """One holdout question with its reference SPARQL."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    """Unique across the holdout, e.g. "hr-07"."""
    question: str = Field(min_length=1)
    """The natural-language question a system receives."""
    sparql: str = ""
    """The reference query; the gold is what it returns on the KG. SPARQL is the default
    language: a question has `sparql` unless its KG is a property graph queried in Gremlin."""
    gremlin: str = ""
    """The reference query in Gremlin, for a property-graph KG on a Gremlin store, instead of
    `sparql` (exactly one of the two is given)."""
    domain: str = Field(min_length=1)
    """Business domain, for per-domain accuracy (e.g. "hr", "finance")."""
    tags: tuple[Tag, ...] = ()
    """What the question exercises, from `Tag`."""
    honeypot: bool = False
    """The text states a fact contrary to common knowledge; the reference follows the text."""
    order_sensitive: bool = False
    """The order of the answer matters (ORDER BY questions); otherwise answers are sets."""
    answer_form: Literal["default", "unordered_pairs"] = "default"
    """"unordered_pairs": the answer is a set of unordered pairs (A with B is B with A), so a
    pair may come in either orientation, or in both (the execution judge's symmetric-pairs rule)."""
    expect_empty: bool = False
    """The reference answer is empty on purpose. An empty gold must be confirmed, by this or by a
    domain reviewer's approval, before a run (pre-eval checklist item `empty_gold`)."""
    kg: str = ""
    """The KG id (its directory name); filled in by the loader."""

    @model_validator(mode="after")
    def _one_reference_query(self) -> Question:
        if bool(self.sparql.strip()) == bool(self.gremlin.strip()):
            raise ValueError("give exactly one reference query: sparql (the default) or gremlin")
        return self

    @property
    def reference_query(self) -> str:
        """The reference query text, in whichever language the question gives it."""
        return self.sparql or self.gremlin

    @property
    def query_language(self) -> str:
        return "sparql" if self.sparql else "gremlin"

    @property
    def sparql_sha256(self) -> str:
        """Hash of the reference query (SPARQL or Gremlin); the name is kept for the gold format."""
        return sha256_text(self.reference_query.strip())

    @property
    def qtype(self) -> str:
        """The question type used for per-type accuracy: the first of its tags in a fixed order."""
        for tag in _TYPE_ORDER:
            if tag in self.tags:
                return tag.value
        return "other"


class KnowledgeGraph(BaseModel):
    """One KG of the holdout: its data files and its questions."""

    id: str
    title: str
    files: tuple[Path, ...]
    """RDF files loaded into the store's default graph."""
    questions: tuple[Question, ...]
    graphs: dict[str, str] = {}
    """Data file name -> the named graph IRI it came from (imported KGs). The embedded store
    loads such a file into its default graph and into that graph (`kgeval.stores.load_kg`), as an
    endpoint with a union default graph serves it: `FROM <g>` and `GRAPH <g>` read graph g."""
    source: dict = {}
    """Provenance of an imported KG (format, dataset, language, source ids, graphs left out)."""


class Holdout(BaseModel):
    """A loaded holdout: its root directory and KGs, in directory-name order."""

    root: Path
    kgs: tuple[KnowledgeGraph, ...]
    exclusions: dict[str, Exclusion] = {}
    """Questions excluded from evaluation on record (EXCLUDED.yaml), by question id."""
    confirmed_empty: dict[str, EmptyConfirmation] = {}
    """Questions whose empty answer is confirmed on record (CONFIRMED_EMPTY.yaml), by question id."""

    def empty_confirmed(self, question: Question) -> bool:
        """Whether the question's empty answer is expected: it says `expect_empty: true`, or it is
        confirmed on record for its current reference query."""
        confirmation = self.confirmed_empty.get(question.id)
        return question.expect_empty or (confirmation is not None and confirmation.sparql_sha256 == question.sparql_sha256)

    def questions(self) -> list[Question]:
        """Every question, excluded ones included (the gold covers them all)."""
        return [q for kg in self.kgs for q in kg.questions]

    def evaluated_questions(self) -> list[Question]:
        """The questions a run asks: every question not excluded on record."""
        return [q for kg in self.kgs for q in kg.questions if q.id not in self.exclusions]

    def question_ids(self, refs: list[str]) -> list[str]:
        """The ids of the questions `refs` name, each as `id` or `kg/id` (InputError naming the
        holdout for an unknown or ambiguous one)."""
        return resolve_question_ids(refs, ((q.kg, q.id) for q in self.questions()), str(self.root))

    def kg(self, kg_id: str) -> KnowledgeGraph:
        for kg in self.kgs:
            if kg.id == kg_id:
                return kg
        raise KeyError(kg_id)

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[list[str | int], str]:
    """Sort key reading runs of digits as numbers: kg2 before kg10, q-9 before q-10 (the order a
    reader scans a benchmark's KGs and question ids in); the text itself breaks ties (q-01, q-1)."""
    return [int(part) if i % 2 else part for i, part in enumerate(_DIGITS.split(text))], text
