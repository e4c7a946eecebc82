"""What a judge reads (a candidate answer) and what it writes (a verdict)."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from kgeval.holdout import Question
from kgeval.stores import QueryResult


FailureKind = Literal["invalid_sparql", "refused", "candidate_timeout", "over_budget"]
"""A model failure: the system answered, and its SPARQL is bad. Judged wrong by every judge
(the verdict's path is the kind), kept in accuracy's denominator, never a harness error
(DESIGN invariant 5). invalid_sparql: does not parse, an undeclared prefix, a function the engine
lacks, or the engine rejected it; refused: the read-only guard refused it (update, LOAD,
SERVICE, CONSTRUCT, size); candidate_timeout: it ran past `run.candidate_timeout_s` (when
`run.candidate_timeout_counts_as` is "wrong", the default); over_budget: it exceeded another
resource budget of candidate queries (memory, rows produced), or the output itself was over
`run.max_output_bytes` (never executed)."""

FAILURE_WORDS: dict[str, str] = {
    "invalid_sparql": "invalid SPARQL",
    "refused": "refused by the read-only guard",
    "candidate_timeout": "timed out",
    "over_budget": "over the resource budget",
    "vacuous": "vacuous (vocabulary the KG lacks)",
}
"""How a report names each failure path (and `vacuous`) among wrong answers."""


class Candidate(BaseModel):
    """A system's answer as the judges see it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    items: list[Any] | None = None
    """The answer list the system gave (strings, numbers, booleans), when it gave one."""
    result: QueryResult | None = None
    """The full typed result of executing the system's SPARQL, when it gave SPARQL."""
    sparql_error: str | None = None
    """Why the system's SPARQL failed to parse or execute, when it did; `result` is then None.
    The execution judge answers `invalid_sparql`, never "empty"."""
    failure: FailureKind | None = None
    """Which model failure `sparql_error` is (set with it): every judge's verdict path."""
    sparql: str | None = None
    """The SPARQL as executed (with predeclared prefixes added, when they were): the judges
    read its vocabulary for the vacuous-answer check."""
    predeclared_prefixes: list[str] = Field(default_factory=list)
    """Prefixes the store predeclares (`store.predeclared_prefixes`) that the query needed to
    run: it ran as it would on the production endpoint, and the verdict records it."""
    store_prefixes: dict[str, str] = Field(default_factory=dict)
    """Every prefix the store predeclares (`store.predeclared_prefixes`, name -> namespace): an
    answer list's `wd:Q42` names an IRI by them, as the same name in a query would."""
    lookup: Any = None
    """A `kgeval.judges.KgLookup`: read-only facts about the KG holding the gold (labels,
    vocabulary), cached per run; None when no store is at hand (the label and vacuous rules then
    do not apply)."""


class Verdict(BaseModel):
    """One judge's decision on one attempt, with the reasons it decided so."""

    judge: str
    """Judge name, e.g. "seed"."""
    version: str
    """Judge version: its logic version and its configuration hash; any change changes it."""
    config_sha256: str
    """sha256 of the judge's configuration."""
    correct: bool
    path: str
    """Which rule decided: "exact", "membership", "ask", "set", "value", "no_answer", a model
    failure ("invalid_sparql", "refused", "candidate_timeout", "over_budget"), "vacuous", ..."""
    matched: int = 0
    """Answer items found in the gold."""
    unmatched: int = 0
    """Answer items not found in the gold."""
    missing: int | None = None
    """Gold items the answer did not give (exact path), None where not computed."""
    gold_total: int = 0
    """True size of the gold (rows, or 1 for ASK)."""
    reason: str = ""
    """One sentence a reader can check: the thresholds and counts that decided."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Extra figures a judge reports: precision, recall, f1, strict_subset ("12 of 400"), ..."""


class Judge(Protocol):
    """A judge is a small object with one method; build it with `judge_from_config`."""

    name: str
    version: str
    config_sha256: str

    def judge(self, question: Question, gold: QueryResult, candidate: Candidate) -> Verdict: ...


_VERDICT_FIELDS = frozenset(Verdict.model_fields)
_new_object = Verdict.__new__
_set_attribute = object.__setattr__


def new_verdict(fields: dict) -> Verdict:
    """What `Verdict.model_construct(**fields)` builds when `fields` holds every field, in
    declaration order: the same `__dict__`, fields set, no extra, no private attributes;
    without its per-field alias and default work (judges build one or two per attempt)."""
    verdict = _new_object(Verdict)
    _set_attribute(verdict, "__dict__", fields)
    _set_attribute(verdict, "__pydantic_fields_set__", set(_VERDICT_FIELDS))
    _set_attribute(verdict, "__pydantic_extra__", None)
    _set_attribute(verdict, "__pydantic_private__", None)
    return verdict
