"""The typed result model every store produces: RDF terms stay typed until a judge normalizes.

A cell is a `Term` (IRI, literal with datatype or language, blank node) or None when unbound.
The canonical form of a term is its N-Triples spelling, with two rules that make results from
different engines comparable: a simple literal's datatype (xsd:string) is left implicit, and a
blank node's label is dropped (labels are engine-local).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from kgeval._files import sha256_text

XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_STRING = XSD + "string"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"


class Term(BaseModel, frozen=True):
    """One RDF term as a SPARQL result cell."""

    type: Literal["uri", "literal", "bnode"]
    """The kind of term, named as in the SPARQL 1.1 JSON results format."""
    value: str
    """The IRI, the literal's lexical form, or the blank node label."""
    datatype: str | None = None
    """The literal's datatype IRI; None for simple (xsd:string) and language-tagged literals."""
    lang: str | None = None
    """The literal's language tag, lower-cased; None when it has none."""

    @classmethod
    def iri(cls, value: str) -> Term:
        return cls(type="uri", value=value)

    @classmethod
    def literal(cls, value: str, datatype: str | None = None, lang: str | None = None) -> Term:
        if lang:
            return cls(type="literal", value=value, lang=lang.lower())
        if datatype in (XSD_STRING, RDF_LANGSTRING):
            datatype = None
        return cls(type="literal", value=value, datatype=datatype)

    @classmethod
    def bnode(cls, label: str) -> Term:
        return cls(type="bnode", value=label)

    def canonical(self) -> str:
        """N-Triples spelling, with blank node labels dropped (see the module docstring)."""
        if self.type == "uri":
            return f"<{self.value}>"
        if self.type == "bnode":
            return "_:"
        escaped = (
            self.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
        )
        if self.lang:
            return f'"{escaped}"@{self.lang}'
        if self.datatype:
            return f'"{escaped}"^^<{self.datatype}>'
        return f'"{escaped}"'


Row = list[Term | None]


def row_key(row: Sequence[Term | None]) -> str:
    """Canonical, tab-separated spelling of a row; an unbound cell is the empty string."""
    return "\t".join("" if cell is None else cell.canonical() for cell in row)


class QueryResult(BaseModel):
    """The result of a SELECT or ASK query, kept to a row cap with the true total beside it."""

    form: Literal["select", "ask"]
    """The query form."""
    vars: list[str] = Field(default_factory=list)
    """Projected variable names in the query's order (SELECT only)."""
    rows: list[Row] = Field(default_factory=list)
    """Up to the cap rows of typed cells, positional by `vars`. For an unordered result that
    was cut, the rows kept are the canonically smallest ones, so any engine keeps the same."""
    boolean: bool | None = None
    """The answer of an ASK query."""
    total: int = 0
    """The true number of rows (1 for ASK), however many were kept."""
    truncated: bool = False
    """True when `total` exceeds the rows kept."""
    ordered: bool = False
    """True when the query has ORDER BY, so row order is part of the answer."""

    def sha256(self) -> str:
        """A stable hash of the answer: order-insensitive unless the query orders."""
        if self.form == "ask":
            return sha256_text(f"ask\n{str(self.boolean).lower()}")
        lines = [row_key(r) for r in self.rows]
        if not self.ordered:
            lines.sort()
        header = "\t".join(self.vars)
        return sha256_text(f"select\n{header}\n{self.total}\n" + "\n".join(lines))


def collect_rows(
    rows: Iterable[Row], *, row_cap: int, ordered: bool
) -> tuple[list[Row], int]:
    """Keep at most `row_cap` rows and count them all.

    Ordered results keep the first rows; unordered ones keep the canonically smallest, in
    canonical order, so the kept rows do not depend on the engine's iteration order.
    Memory stays O(row_cap) either way.
    """
    total = 0
    if ordered:
        kept: list[Row] = []
        for row in rows:
            total += 1
            if len(kept) < row_cap:
                kept.append(row)
        return kept, total
    heap: list[tuple[_Desc, int, Row]] = []  # the largest kept key sits on top
    for row in rows:
        total += 1
        key = row_key(row)
        item = (_Desc(key), total, row)
        if len(heap) < row_cap:
            heapq.heappush(heap, item)
        elif row_cap and key < heap[0][0].key:
            heapq.heapreplace(heap, item)
    kept_sorted = sorted(heap, key=lambda it: it[0].key)
    return [row for _, _, row in kept_sorted], total


class _Desc:
    """Reverses string order so that heapq's min-heap keeps the largest key on top."""

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key

    def __lt__(self, other: _Desc) -> bool:
        return self.key > other.key
