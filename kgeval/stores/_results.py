"""The typed result model every store produces: RDF terms stay typed until a judge normalizes.

A cell is a `Term` (IRI, literal with datatype or language, blank node) or None when unbound.
The canonical form of a term is its N-Triples spelling, with two rules that make results from
different engines comparable: a simple literal's datatype (xsd:string) is left implicit, and a
blank node's label is dropped (labels are engine-local).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field

from kgeval._files import sha256_text
from kgeval.stores._cells import RDF_LANGSTRING, XSD_STRING, Cell, CellRow, canonical_spelling, cells_keys, keep_rows


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
        return canonical_spelling(self.type, self.value, self.datatype, self.lang)


Row = list[Term | None]

term_cell = attrgetter("type", "value", "datatype", "lang")
"""A bound Term's plain cell `(type, value, datatype, lang)` (`_cells`), read in C: the key by
which results share Terms and judges memoize a cell's normalized key."""


def row_key(row: Sequence[Term | None]) -> str:
    """Canonical, tab-separated spelling of a row; an unbound cell is the empty string."""
    return "\t".join("" if cell is None else cell.canonical() for cell in row)


class QueryResources(BaseModel):
    """What executing one candidate query cost, as the store counted it (recorded with the
    attempt, so an over-budget or slow candidate can be seen and compared)."""

    wall_ms: float
    """From handing the query to the engine (a sandbox worker, the endpoint) to its answer or
    failure; waiting for a free worker is not counted."""
    result_bytes: int | None = None
    """UTF-8 bytes of every value of the rows kept; None when the query failed."""
    peak_memory_bytes: int | None = None
    """Peak resident memory of the sandbox worker during the query (its loaded KG included);
    None where not measured (in process, remote stores, or the worker was killed)."""
    sandboxed: bool = False
    """Executed in a sandbox worker process (memory limit, killed at the deadline)."""
    network_isolated: bool | None = None
    """The sandbox worker had no network (an empty network namespace); None when not sandboxed."""


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
        return answer_sha256(self.form, self.boolean, self.vars, [row_key(r) for r in self.rows], self.total, self.ordered)


def answer_sha256(form: str, boolean: bool | None, variables: Sequence[str], lines: list[str], total: int, ordered: bool) -> str:
    """The hash of `QueryResult.sha256`, from the rows' canonical spellings (`lines`: `row_key`
    of each row; sorted in place unless `ordered`): for callers that spell rows themselves, as
    the gold scan spells cells as stored."""
    if form == "ask":
        return sha256_text(f"ask\n{str(boolean).lower()}")
    if not ordered:
        lines.sort()
    header = "\t".join(variables)
    return sha256_text(f"select\n{header}\n{total}\n" + "\n".join(lines))


class CellResult(NamedTuple):
    """A query's result as plain cells (`_cells`): what the hot path of a store hands over,
    so callers that only hash a result or look through many rows (the gold rebuild's repeated
    executions and tie probes) build no Term. `typed()` is the `QueryResult` of the same answer."""

    form: Literal["select", "ask"]
    variables: tuple[str, ...]
    rows: list[CellRow]
    """The rows kept, by the rule of `keep_rows` (the same rows `QueryResult.rows` holds)."""
    total: int
    boolean: bool | None
    ordered: bool

    @classmethod
    def of(cls, result: QueryResult) -> CellResult:
        """The cells of a typed result (stores whose engine hands over Terms)."""
        rows = [tuple(None if t is None else term_cell(t) for t in row) for row in result.rows]
        return cls(result.form, tuple(result.vars), rows, result.total, result.boolean, result.ordered)

    def sha256(self) -> str:
        """`QueryResult.sha256()` of `typed()`, computed on the cells (`cells_key` spells a row
        as `row_key` spells its Terms)."""
        return answer_sha256(self.form, self.boolean, self.variables, cells_keys(self.rows), self.total, self.ordered)

    def typed(self) -> QueryResult:
        """The typed result: one Term per distinct cell (`rows_from_cells`)."""
        if self.form == "ask":
            return QueryResult(form="ask", boolean=self.boolean, total=1)
        rows = rows_from_cells(self.rows)
        return QueryResult(
            form="select", vars=list(self.variables), rows=rows, total=self.total, truncated=self.total > len(rows), ordered=self.ordered
        )


class ValueResult(NamedTuple):
    """A SELECT query's kept rows as bare values, one list per variable (`Store.execute_values`):
    for callers that read only the values of many rows, as the judges' label index reads every
    label of a KG."""

    variables: tuple[str, ...]
    columns: list[list[str | None]]
    """Per variable, the value of each row kept (None: unbound), the rows in no particular order."""
    total: int

    @classmethod
    def of(cls, result: CellResult) -> ValueResult:
        """The values of a cell result (stores that hand over cells)."""
        columns = [[None if cell is None else cell[1] for cell in column] for column in zip(*result.rows)]
        return cls(result.variables, columns or [[] for _ in result.variables], result.total)


def collect_rows(
    rows: Iterable[Row], *, row_cap: int, ordered: bool
) -> tuple[list[Row], int]:
    """Keep at most `row_cap` rows of Terms and count them all, by the one rule of `keep_rows`:
    ordered results keep the first rows, unordered ones the canonically smallest, in canonical
    order, so the kept rows do not depend on the engine's iteration order."""
    return keep_rows(rows, row_cap=row_cap, ordered=ordered, key=row_key)


_TERMS: dict[Cell, Term] = {}
"""Terms already built, by cell, shared across results (Terms are frozen): a run meets the same
IRIs and literals in result after result (seeds, reformatted and wrong variants of a query)."""
_TERMS_LIMIT = 1 << 16
"""Cells `_TERMS` keeps (a few MB) before it starts over."""


def rows_from_cells(rows: Iterable[Sequence[Cell]]) -> list[Row]:
    """Typed rows from plain cells (already normalized): one Term per distinct cell, shared
    between rows and results, so a column of repeated IRIs costs one model."""
    terms = _TERMS
    typed: list[Row] = []
    for row in rows:
        out: Row = []
        for cell in row:
            if cell is None:
                out.append(None)
                continue
            term = terms.get(cell)
            if term is None:
                if len(terms) >= _TERMS_LIMIT:
                    terms.clear()
                term = terms[cell] = _term_from_cell(cell)
            out.append(term)
        typed.append(out)
    return typed


def share_terms(rows: Iterable[Sequence[Term | None]]) -> None:
    """Let `rows_from_cells` hand out these Terms (a gold's result, read from its file) for
    their cells from now on: candidate results repeat their gold's terms (6,413 of the 6,914
    Terms bench/run.py's replay built for candidates were cells of its gold), and one lookup
    per cell here is cheaper than a Term built per cell there."""
    terms = [term for row in rows for term in row if term is not None]
    if len(_TERMS) + len(terms) > _TERMS_LIMIT:
        _TERMS.clear()
    _TERMS.update(zip(map(term_cell, terms), terms))


def _term_from_cell(cell: tuple[str, str, str | None, str | None]) -> Term:
    kind, value, datatype, lang = cell
    if kind == "uri":
        return Term(type="uri", value=value)
    if kind == "bnode":
        return Term(type="bnode", value=value)
    if lang:
        return Term(type="literal", value=value, lang=lang)
    return Term(type="literal", value=value, datatype=datatype)
