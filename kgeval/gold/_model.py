"""Gold records: the full typed result of each reference query, with integrity hashes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from kgeval.gold._ties import TieInfo
from kgeval.stores import QueryResult

GoldFlag = Literal["empty", "tied", "nondeterministic", "engine-dependent", "truncated", "unchecked"]
"""Why a gold entry needs a second look, as the rebuild report names it:
empty (a SELECT with no rows), tied (several answers are acceptable, see `GoldEntry.ties`),
nondeterministic (executions differed, or the query calls RAND()/NOW()/...), engine-dependent
(another engine may answer differently), truncated (more rows than the cap), unchecked (the
tie check could not run, so a cut among equal keys cannot be ruled out)."""


class GoldEntry(BaseModel):
    """The executed answer to one holdout question. Judges read `result`, never a display."""

    kg: str
    """KG id."""
    question_id: str
    """Question id, unique across the holdout."""
    query_sha256: str
    """sha256 of the reference SPARQL that produced this gold."""
    kg_sha256: str
    """sha256 of the KG data the query ran on."""
    engine: str
    """Store that executed the query (e.g. "oxigraph-embedded")."""
    engine_version: str
    """That store's version."""
    row_cap: int
    """Rows kept at most; `result.total` is the true count."""
    result: QueryResult
    """Up to `row_cap` full typed rows, the true total and the truncated flag."""
    result_sha256: str
    """`result.sha256()` when the gold was built; `gold verify` recomputes it."""
    execution_sha256s: list[str] = Field(default_factory=list)
    """`sha256()` of each execution of the reference query during the rebuild, in order
    (`gold.executions` of them); `result` is the first execution."""
    nondeterministic: list[str] = Field(default_factory=list)
    """Why the answer is not determined by the data, empty when it is: executions that
    differed, volatile functions. Such a gold must not be judged as if it were fixed: `result`
    is one sample of the possible answers."""
    engine_dependent: list[str] = Field(default_factory=list)
    """Why another engine may legitimately answer differently (SAMPLE, GROUP_CONCAT order,
    LIMIT without ORDER BY, functions outside SPARQL 1.1)."""
    ties: TieInfo | None = None
    """The set of acceptable answers when the query has LIMIT/OFFSET (or an ordered result
    was cut by the row cap): the rows certainly in the answer plus, for each key group the cut
    falls in, its candidates and how many of them an answer holds. `ties.accepts(rows)` tells
    whether a candidate's rows are one acceptable answer; `ties.tied` whether there is more
    than one. None when there is no cut."""
    tie_check_error: str | None = None
    """Why the tie check could not run (the entry is then flagged "unchecked")."""
    missing_vocabulary: list[str] | None = None
    """For a false ASK of a SPARQL reference query: the IRIs the query needs that the KG
    (`kg_sha256`) lacks (`kgeval.judges.missing_vocabulary`, asked of the build's store), sorted;
    empty when it has them all. What tells a false ASK that says nothing from a "no": the
    pre-eval checklist reads it here instead of asking the run's KG, whose data the gold's hashes
    tie to this entry. None: not recorded (not a false ASK, the store failed the question, or a
    gold built before it was recorded): the checklist asks the KG."""

    @property
    def flags(self) -> list[GoldFlag]:
        """Every reason this entry needs a second look, in a fixed order."""
        result = self.result
        checks: list[tuple[GoldFlag, bool]] = [
            ("empty", result.form == "select" and result.total == 0),
            ("tied", self.ties is not None and self.ties.tied),
            ("nondeterministic", bool(self.nondeterministic)),
            ("engine-dependent", bool(self.engine_dependent)),
            ("truncated", result.truncated),
            ("unchecked", self.tie_check_error is not None),
        ]
        return [flag for flag, on in checks if on]


class GoldFailure(BaseModel):
    """A reference query that could not be executed: recorded in the gold in place of an
    entry, so the rest of the gold is written and the pre-eval checklist can refuse a run
    until the question is fixed or excluded on record (`kgeval holdout exclude`)."""

    kg: str
    """KG id."""
    question_id: str
    """Question id."""
    error: str
    """Why the query did not run (timeout, syntax, store error), as the store reported it."""
    query_sha256: str = ""
    """sha256 of the reference query that failed (a changed query is tried again)."""


def display_text(result: QueryResult, items: int) -> str:
    """The human display of a gold ("first 10 ... (N total)"). No judge ever reads this."""
    if result.form == "ask":
        return str(result.boolean).lower()
    if result.total == 0:
        return "(empty)"
    shown = [" | ".join("" if c is None else c.value for c in row) for row in result.rows[:items]]
    text = ", ".join(shown)
    if result.total > len(shown):
        text += f" … ({result.total} total)"
    return text
