"""Result cells as plain tuples, and the one rule that picks which rows a capped result keeps.

The hot path of a query (every row the engine produces) works on plain tuples: a cell is
`(type, value, datatype, lang)`, normalized exactly as `Term` normalizes (a simple literal's
xsd:string datatype left implicit, a language tag lower-cased), or None when unbound. Typed
`Term` models are built only for the rows kept (`_results.rows_from_cells`). Rows crossing the
sandbox's process boundary are these tuples.

This module imports only the standard library: the sandbox's worker processes import it
without the rest of kgeval.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal, InvalidOperation
from typing import TypeVar

Cell = tuple[str, str, "str | None", "str | None"] | None
"""(type "uri" | "literal" | "bnode", value, datatype, lang), normalized like `Term`; None: unbound."""
CellRow = tuple[Cell, ...]

XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_STRING = XSD + "string"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"

R = TypeVar("R")

_NUMERIC = frozenset((
    "integer", "decimal", "float", "double", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger",
    "nonPositiveInteger", "negativeInteger", "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte",
))
"""XSD's numeric datatypes, by local name: ORDER BY compares their literals by value."""


def literal_cell(value: str, datatype: str | None, lang: str | None) -> Cell:
    """A literal cell normalized as `Term.literal` normalizes."""
    if lang:
        return ("literal", value, None, lang.lower())
    if datatype in (XSD_STRING, RDF_LANGSTRING):
        datatype = None
    return ("literal", value, datatype, None)


def canonical_spelling(kind: str, value: str, datatype: str | None, lang: str | None) -> str:
    """N-Triples spelling of a term, blank node labels dropped (see `_results`' docstring)."""
    if kind == "uri":
        return f"<{value}>"
    if kind == "bnode":
        return "_:"
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    if lang:
        return f'"{escaped}"@{lang}'
    if datatype:
        return f'"{escaped}"^^<{datatype}>'
    return f'"{escaped}"'


def cell_spelling(cell: Cell) -> str:
    """A cell's canonical spelling; the empty string when unbound."""
    return "" if cell is None else canonical_spelling(*cell)


def cells_key(row: Sequence[Cell]) -> str:
    """The row's canonical, tab-separated spelling: the same string as `row_key` of its Terms."""
    return "\t".join(cell_spelling(cell) for cell in row)


def cells_keys(rows: Sequence[Sequence[Cell]]) -> list[str]:
    """`cells_key` of each row, spelled a column at a time (`map`: no generator per row)."""
    columns = list(zip(*rows))
    if not columns:  # no variable: every row is empty
        return [""] * len(rows)
    spelled = [list(map(cell_spelling, column)) for column in columns]
    return spelled[0] if len(spelled) == 1 else list(map("\t".join, zip(*spelled)))


def keep_rows(rows: Iterable[R], *, row_cap: int, ordered: bool, key: Callable[[R], str]) -> tuple[list[R], int]:
    """Keep at most `row_cap` rows and count them all.

    Ordered results keep the first rows (and `key` is never called); unordered ones keep the
    rows with the smallest keys, in key order, so the rows kept do not depend on the engine's
    iteration order (rows whose keys are equal, i.e. that differ only in blank node labels,
    keep their arrival order). Memory stays O(row_cap): candidates are gathered in a batch
    that is sorted and cut back to `row_cap` whenever it fills, and once cut, a row whose key
    is not below the largest kept key is dropped at once.
    """
    total = 0
    if ordered:
        kept: list[R] = []
        for row in rows:
            total += 1
            if len(kept) < row_cap:
                kept.append(row)
        return kept, total
    batch: list[tuple[str, int, R]] = []
    limit: str | None = None  # the largest kept key, once the batch has been cut
    flush_at = max(2 * row_cap, 1024)
    for row in rows:
        total += 1
        row_key = key(row)
        if limit is not None and row_key >= limit:
            continue
        batch.append((row_key, total, row))
        if len(batch) >= flush_at:
            limit = _cut(batch, row_cap)
    _cut(batch, row_cap)
    return [row for _, _, row in batch], total


def _cut(batch: list[tuple[str, int, R]], row_cap: int) -> str | None:
    """Sort `batch` by (key, arrival) in place, keep its first `row_cap`; the largest key kept."""
    batch.sort()  # arrival numbers are unique: rows themselves are never compared
    del batch[row_cap:]
    return batch[-1][0] if len(batch) == row_cap and batch else None


def order_key(cell: Cell) -> object:
    """ORDER BY equality of a cell: numbers by value (1 = 1.0), everything else by its canonical
    spelling. Two cells with equal keys are tied; the tie check and the order probe's reader
    (`_engine.evaluate_probe`) both compare keys with it."""
    if cell is None:
        return None
    kind, value, datatype, _ = cell
    if kind == "literal" and datatype and datatype.removeprefix(XSD) in _NUMERIC:
        number = decimal_value(value)
        if number is not None:
            return ("number", number)
    return ("term", cell_spelling(cell))


def decimal_value(text: str) -> Decimal | None:
    """The finite number a numeric literal's lexical form spells, normalized; None if none."""
    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        return None
    return number.normalize() if number.is_finite() else None
