"""Gold records: the full typed result of each reference query, with integrity hashes."""

from __future__ import annotations

from pydantic import BaseModel

from kgeval.stores import QueryResult


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


class GoldFailure(BaseModel):
    """A reference query that could not be executed: no gold is written for it."""

    kg: str
    question_id: str
    error: str


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
