"""Ties at the cut of ORDER BY … LIMIT k (and LIMIT without ORDER BY): the acceptable answers.

The limited query returns one arbitrary choice among rows whose ORDER BY key equals the key
at a cut. The order probe (`kgeval.stores.order_probe`) re-runs the query on the same store
without LIMIT/OFFSET and with its ORDER BY keys projected; the rows around the window
[offset, offset + rows kept) then give the rows certainly in the answer and, for each key
group that straddles a cut, its members and how many of them the answer holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from operator import itemgetter

from pydantic import BaseModel, Field

from kgeval.errors import QueryError
from kgeval.stores import (
    CellRow,
    OrderProbe,
    ProbeCut,
    QueryResult,
    QueryShape,
    Row,
    Store,
    Term,
    cells_key,
    order_key,
    order_probe,
    row_key,
    rows_from_cells,
)


class TieGroup(BaseModel):
    """Rows sharing one ORDER BY key across a cut: any `choose` of `candidates` is right."""

    key: list[Term | None]
    """The ORDER BY key the rows share (empty when the query has LIMIT but no ORDER BY)."""
    candidates: list[Row]
    """Every row with that key, in the engine's order."""
    choose: int
    """How many of the candidates an answer of the query's size holds."""
    complete: bool = True
    """False when the probe hit its row cap inside this group: more candidates may exist."""


class TieInfo(BaseModel):
    """The set of acceptable answers of a query whose cut falls among equal keys."""

    certain: list[Row] = Field(default_factory=list)
    """Rows in every acceptable answer."""
    groups: list[TieGroup] = Field(default_factory=list)
    """Key groups cut by LIMIT/OFFSET (or the row cap); each contributes `choose` rows."""

    @property
    def tied(self) -> bool:
        """True when more than one answer is acceptable."""
        return any(len(g.candidates) > g.choose for g in self.groups)

    def accepts(self, rows: list[Row]) -> bool:
        """True when `rows` (as a multiset) is one of the acceptable answers."""
        remaining = Counter(row_key(r) for r in rows)
        need = Counter(row_key(r) for r in self.certain)
        if any(remaining[k] < n for k, n in need.items()):
            return False
        remaining -= need
        for group in self.groups:
            pool = Counter(row_key(r) for r in group.candidates)
            taken = 0
            for key in list(remaining):
                take = min(remaining[key], pool[key], group.choose - taken)
                remaining[key] -= take
                taken += take
            if taken != group.choose:
                return False
        return sum(remaining.values()) == 0

    def resolve(self, gold: QueryResult, rows: list[Row]) -> QueryResult:
        """The acceptable answer closest to a candidate's `rows`: the gold with, in each tie
        group, the tied rows the candidate chose in place of those the engine chose.

        Only rows of the same key are exchanged, at the engine's positions, so the result is
        still one acceptable answer in a valid order. Judges compare against it, so a system
        that breaks a tie differently from the engine is not marked wrong (DESIGN invariant 2).
        """
        given = dict.fromkeys(row_key(r) for r in rows)  # a set that keeps the candidate's order
        kept, kept_keys = list(gold.rows), [row_key(r) for r in gold.rows]
        changed = False
        for group in self.groups:
            members = {row_key(r): r for r in group.candidates}
            engine = {k: i for i, k in enumerate(kept_keys) if k in members}
            swap_in = [k for k in given if k in members and k not in engine]
            swap_out = [i for k, i in engine.items() if k not in given]
            for position, key in zip(swap_out, swap_in):
                kept[position], kept_keys[position] = members[key], key
                changed = True
        return gold.model_copy(update={"rows": kept}) if changed else gold


def needs_tie_check(shape: QueryShape, result: QueryResult) -> bool:
    """A cut exists: LIMIT/OFFSET, or an ordered result cut by the row cap."""
    if shape.form != "select":
        return False
    return shape.limit is not None or shape.offset > 0 or (shape.ordered and result.truncated)


def find_ties(
    store: Store, query: str, shape: QueryShape, result: QueryResult, *, timeout_s: float, probe_rows: int
) -> TieInfo:
    """Probe the store and return the acceptable answers; raise QueryError when undecidable.

    The probe's rows (up to `probe_rows`) are read as plain cells, and only as far as the
    check needs (`Store.execute_probe`: to the first row past the window whose key neither of
    its edges has, when no later row can share one); Terms are built only for the rows the
    answer keeps (the window and the tie groups)."""
    probe = order_probe(query)
    start, end = shape.offset, shape.offset + len(result.rows)
    cut = ProbeCut(start, end, probe.key_vars, tuple(result.vars), probe.distinct)
    probed = store.execute_probe(probe.text, cut, timeout_s=timeout_s, row_cap=probe_rows)
    seq = _sequence(probed.variables, probed.rows, result.vars, probe)
    if end > len(seq):
        raise QueryError(f"the order probe kept {len(seq)} rows, fewer than the {end} the answer reaches (raise gold.tie_probe_rows)")
    window = seq[start:end]
    keys = [window[0][1], window[-1][1]] if window else []
    groups: list[TieGroup] = []
    cut_keys = set()
    wanted = dict.fromkeys(keys)
    positions: dict[tuple, list[int]] = {key: [] for key in wanted}
    for i, (_, k, _) in enumerate(seq):  # one pass for both cut keys (probes run to 10,000 rows)
        if k in positions:
            positions[k].append(i)
    truncated = probed.truncated
    for key in wanted:
        members = positions[key]
        inside = sum(start <= i < end for i in members)
        open_end = truncated and members[-1] == len(seq) - 1
        if len(members) > inside or open_end:
            cut_keys.add(key)
            candidates = rows_from_cells([seq[i][0] for i in members])
            groups.append(TieGroup(key=rows_from_cells([seq[members[0]][2]])[0], candidates=candidates, choose=inside, complete=not open_end))
    ties = TieInfo(certain=rows_from_cells([row for row, k, _ in window if k not in cut_keys]), groups=groups)
    if not ties.accepts(result.rows):
        raise QueryError("the order probe disagrees with the limited result: its rows are not one of the acceptable answers")
    return ties


def _columns(indexes: list[int]) -> Callable[[CellRow], CellRow]:
    """A function picking these columns of a row, as a tuple (whatever their number)."""
    if len(indexes) == 1:
        only = indexes[0]
        return lambda row: (row[only],)
    return itemgetter(*indexes) if indexes else lambda row: ()


def _sequence(probe_variables: tuple[str, ...], rows: list[CellRow], variables: list[str], probe: OrderProbe) -> list[tuple[CellRow, tuple, CellRow]]:
    """(row in the answer's columns, comparable key, key cells) in order; DISTINCT keeps first
    occurrences, as SPARQL's Distinct does on an ordered sequence. Key values are computed
    once per distinct key (probes repeat the same keys over many rows: one dict look-up a row)."""
    column = {v: i for i, v in enumerate(probe_variables)}
    missing = [v for v in (*variables, *probe.key_vars) if v not in column]
    if missing:
        raise QueryError(f"the order probe did not return the variables {', '.join(missing)}")
    project, key_cells = _columns([column[v] for v in variables]), _columns([column[v] for v in probe.key_vars])
    keys: dict[CellRow, tuple] = {}
    seq, seen = [], set()
    for row in rows:
        projected = project(row)
        if probe.distinct:
            spelled = cells_key(projected)
            if spelled in seen:
                continue
            seen.add(spelled)
        cells = key_cells(row)
        key = keys.get(cells)
        if key is None:
            key = keys[cells] = tuple([order_key(c) for c in cells])
        seq.append((projected, key, cells))
    return seq
