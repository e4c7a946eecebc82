"""pyoxigraph evaluation into plain cells: the code the embedded store runs in process (trusted
queries) and in its sandbox workers (candidate queries), so both read results one way.

Rows are ranked and kept on plain tuples (`_cells`): every row's key is built from the
engine's own term strings, and cells (then Terms) only for the rows kept. Every failure of the engine
becomes a named error of `kgeval.errors`: a query the engine cannot parse or evaluate
(`SERVICE ?var` unbound, an unsupported function) is `QueryRejected`, an over-size value or
result `QueryOverBudget`.

Imports only the standard library, pyoxigraph and the light modules `_cells`, `_functions` and
`kgeval.errors`: sandbox workers import it without the rest of kgeval.
"""

from __future__ import annotations

import functools
import math
import os
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from itertools import chain, islice, repeat
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeVar

import pyoxigraph as ox

from kgeval.errors import InputError, KgevalError, QueryOverBudget, QueryRejected
from kgeval.stores._cells import RDF_LANGSTRING, XSD_STRING, Cell, CellRow, canonical_spelling, cell_spelling, cells_key, decimal_value, keep_rows, literal_cell, order_key
from kgeval.stores._functions import DERIVED_INTEGER_CASTS

if TYPE_CHECKING:  # a sandbox worker never imports pathlib (with urllib, a sixth of its start)
    from pathlib import Path

_FORMATS = {
    ".ttl": ox.RdfFormat.TURTLE,
    ".nt": ox.RdfFormat.N_TRIPLES,
    ".nq": ox.RdfFormat.N_QUADS,
    ".trig": ox.RdfFormat.TRIG,
    ".rdf": ox.RdfFormat.RDF_XML,
    ".owl": ox.RdfFormat.RDF_XML,
}

_QUAD_FORMATS = (ox.RdfFormat.N_QUADS, ox.RdfFormat.TRIG)


R = TypeVar("R")


class Cancel(Protocol):
    """A flag the caller sets when it stopped waiting (`threading.Event`)."""

    def is_set(self) -> bool: ...


class Caps(NamedTuple):
    """Size bounds on a candidate's result (None on the trusted path)."""

    max_value_bytes: int
    max_result_bytes: int


class Answer(NamedTuple):
    """A query's answer as plain data (it crosses the sandbox's process boundary)."""

    variables: tuple[str, ...]
    rows: list[CellRow]
    total: int
    boolean: bool | None
    result_bytes: int
    """UTF-8 bytes of every value of the rows kept; 0 for ASK and on the trusted path (no
    caps: nothing reads it there)."""


class Values(NamedTuple):
    """A SELECT query's kept rows as bare values, one list per variable (trusted queries whose
    caller reads only the values, as the judges' label index does: no cell tuple per term)."""

    variables: tuple[str, ...]
    columns: list[list[str | None]]
    """Per variable, each kept row's value (None: unbound). The rows kept are those `keep_rows`
    keeps; in the engine's order, unless the total passed the row cap (then in key order)."""
    total: int


class ProbeCut(NamedTuple):
    """What the tie check reads of an order probe (`kgeval.stores.order_probe`): the window of
    the limited answer, in the probe's rows (after DISTINCT), and the columns that say which
    rows are tied and which are the same row."""

    start: int
    """The window's first row: the query's OFFSET."""
    end: int
    """One past the window's last row: OFFSET + the rows the limited answer holds."""
    keys: tuple[str, ...]
    """The probe's ORDER BY key variables."""
    columns: tuple[str, ...]
    """The answer's variables (a DISTINCT probe keeps the first row of each projection)."""
    distinct: bool
    """The query had DISTINCT or REDUCED."""


class ProbeRows(NamedTuple):
    """The rows of an order probe the tie check needs: those up to the first row, past the
    window, whose key is neither the window's first nor its last; or, when a later row may
    share one of those keys (or the probe ends first), every row up to the cap."""

    variables: tuple[str, ...]
    rows: list[CellRow]
    """The probe's first rows, as cells (before DISTINCT)."""
    truncated: bool
    """The probe has more rows than the cap."""
    complete: bool
    """`rows` holds every row up to the cap (False: the read stopped early)."""


def rdf_format(path: Path | str) -> ox.RdfFormat:
    """The RDF syntax of a KG file, from its extension."""
    try:
        return _FORMATS[os.path.splitext(path)[1].lower()]
    except KeyError:
        raise InputError(f"{path}: unknown RDF file extension (use one of {', '.join(_FORMATS)})") from None


def load_kg(files: Sequence[Path | str], graphs: Mapping[str, str] | None = None, *, lenient: bool = False) -> ox.Store:
    """An in-memory store holding every file in its default graph, as an endpoint whose default
    graph is the union of its graphs serves it: a file that came from a named graph (`graphs`:
    file name -> graph IRI, as the holdout records it) is in that graph too, and a quad file's
    (TriG, N-Quads) named graphs are copied into the default graph. So a query without GRAPH
    or FROM reads all the data, `FROM <g>` and `GRAPH <g>` read graph g.

    `lenient`: the terms are not validated again (Oxigraph's lenient parsing, over a third less
    CPU): only for files kgeval wrote itself from strictly parsed terms and whose bytes the
    caller checks against a verified manifest (a suite's neighbours), where it reads the same
    quads as strict parsing."""
    store = ox.Store()
    load = functools.partial(store.load, lenient=True) if lenient else store.bulk_load
    for path in files:
        form, graph = rdf_format(path), (graphs or {}).get(os.path.basename(path))
        try:
            load(path=str(path), format=form)
            if graph:
                load(path=str(path), format=form, to_graph=ox.NamedNode(graph))
        except (SyntaxError, ValueError, OSError) as exc:
            raise InputError(f"{path}: cannot load KG: {exc}") from None
    if any(rdf_format(path) in _QUAD_FORMATS for path in files):
        store.extend([ox.Quad(q.subject, q.predicate, q.object) for q in store.quads_for_pattern(None, None, None) if q.graph_name != ox.DefaultGraph()])
    return store


def evaluate(
    store: ox.Store, query: str, *, ask: bool, ordered: bool, row_cap: int, caps: Caps | None, cancel: Cancel | None = None
) -> Answer:
    """Run `query` (already approved by the guard) and keep its rows by the one rule of
    `keep_rows`. With `cancel`, stop reading rows once it is set (the answer is then discarded)."""
    solutions = None
    try:
        solutions = store.query(query, custom_functions=DERIVED_INTEGER_CASTS)
        if ask:
            return Answer((), [], 1, bool(solutions), 0)
        variables = tuple(v.value for v in solutions.variables)
        rows, total = _kept_rows(solutions if cancel is None else _until(solutions, cancel), ordered, row_cap, caps)
    except (SyntaxError, RuntimeError, OSError, KgevalError) as exc:
        error = _named(exc, query)
    else:
        error = None
    if error is not None:
        # raised here, with no traceback into the frames that held the engine's result
        # iterator: pyoxigraph's iterators must be dropped on the thread that made them
        solutions = None  # noqa: F841
        raise error
    result_bytes = _result_bytes(rows) if caps is not None else 0
    if caps is not None and result_bytes > caps.max_result_bytes:
        raise QueryOverBudget(f"the result holds {result_bytes:,} bytes, over the {caps.max_result_bytes:,}-byte limit")
    return Answer(variables, rows, total, None, result_bytes)


def evaluate_repeated(store: ox.Store, query: str, *, ask: bool, ordered: bool, row_cap: int, executions: int) -> Iterator[Answer | None]:
    """`evaluate` of trusted `query` (no caps) `executions` times, one after another, each
    answer yielded as it is made (a sandbox worker sends each at once, so every execution has
    a deadline of its own): the first execution's answer, then, for each later one, None when
    the engine gave exactly the first's terms (the kept rows in the same order, compared with
    pyoxigraph's `==`, and the same total: every cell, and so the hash, is then the first's),
    else its answer. A later execution so costs its evaluation and a comparison, not a
    conversion to cells, a reply and a decoding. An unordered result of more rows than
    `_held_rows` is not held for comparing (its rows stream through `keep_rows`): each of its
    executions is converted, as `evaluate` converts it. ASK answers are sent every time (a boolean)."""
    first: list[object] = []
    for _ in range(executions):
        if ask:  # a boolean: nothing to spare
            yield evaluate(store, query, ask=True, ordered=ordered, row_cap=row_cap, caps=None)
        else:
            yield _read_select(store, query, None, lambda variables, source: _compared_rows(variables, source, ordered, row_cap, first))


def _held_rows(row_cap: int) -> int:
    """The rows of an unordered result `evaluate_repeated` holds to compare executions: as
    many as `keep_rows` gathers before it first cuts its batch (past them, none are held)."""
    return max(2 * row_cap, 1024)


def _compared_rows(variables: tuple[str, ...], source: Iterator[ox.QuerySolution], ordered: bool, row_cap: int, first: list[object]) -> Answer | None:
    """One execution of `evaluate_repeated`: None when its terms are `first`'s (the first
    execution's, which this records in `first` when it is empty), else its `Answer`."""
    held = row_cap if ordered else _held_rows(row_cap)
    head = list(map(tuple, islice(source, held if ordered else held + 1)))
    whole = ordered or len(head) <= held  # `head` holds every row the answer is made of, in the engine's order
    total = len(head) + sum(1 for _ in source) if ordered else len(head)
    terms = (variables, head, total) if whole else None
    if not first:
        first.append(terms)
    elif terms is not None and terms == first[0]:
        return None
    if ordered:
        return Answer(variables, _chunk_cells(head)[0], total, None, 0)
    if whole:  # every row at hand: keyed in one go, the `row_cap` smallest by (key, arrival) kept, as `keep_rows` keeps them
        cells, keys = _chunk_cells(head, keys=True)
        return Answer(variables, [cells[i] for i in sorted(range(len(head)), key=keys.__getitem__)[:row_cap]], total, None, 0)
    rows, total = _kept_cell_rows(chain(head, source), False, row_cap)
    return Answer(variables, rows, total, None, 0)


def evaluate_values(store: ox.Store, query: str, *, ordered: bool, row_cap: int, cancel: Cancel | None = None) -> Values:
    """Run trusted SELECT `query` and keep the rows `evaluate` keeps, as bare values. Unordered,
    the rows are keyed (the canonical spelling `keep_rows` ranks by) only once they pass
    `row_cap`: under the cap every row is kept, whatever its key."""

    def read(variables: tuple[str, ...], source: Iterator[ox.QuerySolution]) -> Values:
        if ordered:  # the first rows; those past the cap are counted, never read
            kept = list(map(tuple, islice(source, row_cap)))
            total = len(kept) + sum(1 for _ in source)
        else:
            kept = list(map(tuple, islice(source, row_cap + 1)))
            total = len(kept)
            if total > row_cap:
                kept, total = keep_rows(chain(kept, source), row_cap=row_cap, ordered=False, key=_Describer(None).key)
        columns = [_values(column) for column in zip(*kept)] or [[] for _ in variables]
        return Values(variables, columns, total)

    return _read_select(store, query, cancel, read)


def evaluate_probe(store: ox.Store, query: str, cut: ProbeCut, *, row_cap: int, cancel: Cancel | None = None) -> ProbeRows:
    """Run a trusted, ordered order probe and read what the tie check needs of it (`ProbeRows`):
    cells up to the first row past the window whose key is neither of the window's edge keys
    (`_ProbeCut`); of every later row up to `row_cap` only the key terms are read, a column
    and a chunk at a time, to check that none could give the row one of those keys. Where one
    could (the engine orders two equal keys apart, as it does an invalid xsd:decimal "2e0"
    after 2.5, or a value only looks alike), every row up to the cap is read as cells, as
    `evaluate` reads an ordered result: the tie check then sees the whole probe, as before.
    The rows past the cap are counted, as `evaluate` counts them. One difference: a term no
    SPARQL 1.1 result can hold (a triple term) outside the key columns of a row after the
    stop is not read, so it no longer fails the tie check of a cut it cannot change."""

    def read(variables: tuple[str, ...], source: Iterator[ox.QuerySolution]) -> ProbeRows:
        return ProbeRows(variables, *_probe_rows(source, _ProbeCut.of(cut, variables), row_cap))

    return _read_select(store, query, cancel, read)


def _read_select(store: ox.Store, query: str, cancel: Cancel | None, read: Callable[[tuple[str, ...], Iterator[ox.QuerySolution]], R]) -> R:
    """`read(variables, solutions)` of trusted SELECT `query`, every failure of the engine named
    (`_named`) and raised as `evaluate` raises it, with no traceback into the frames that held
    the engine's result iterator."""
    solutions = None
    try:
        solutions = store.query(query, custom_functions=DERIVED_INTEGER_CASTS)
        variables = tuple(v.value for v in solutions.variables)
        value = read(variables, iter(solutions if cancel is None else _until(solutions, cancel)))
    except (SyntaxError, RuntimeError, OSError, KgevalError) as exc:
        error = _named(exc, query)
    else:
        error = None
    if error is not None:
        solutions = None  # noqa: F841 - see `evaluate`
        raise error
    return value


def _probe_rows(source: Iterator[ox.QuerySolution], cut: _ProbeCut | None, row_cap: int) -> tuple[list[CellRow], bool, bool]:
    """(rows as cells, more rows past the cap, every row to the cap read): see `evaluate_probe`."""
    rows: list[CellRow] = []
    size = _FIRST_PROBE_CHUNK  # the stop is most often in the first rows: they are converted first, a few
    while len(rows) < row_cap:
        chunk = list(islice(source, min(size, row_cap - len(rows))))
        if not chunk:
            return rows, False, True
        size = min(2 * size, _CHUNK) if cut is not None else _CHUNK
        cells = _chunk_cells(chunk)[0]
        stop = cut.stop_at(cells) if cut is not None else None
        if stop is None:
            rows.extend(cells)
            continue
        rows.extend(cells[: stop + 1])
        rest = chain(chunk[stop + 1 :], source)
        checked = cut.unshared(rest, row_cap - len(rows))
        if checked is None:  # no later row can share a key of the window's edges
            return rows, _any_left(rest), False
        source, cut = chain(checked, rest), None  # read on as cells, from the row after the stop
    return rows, _any_left(source), True


def _any_left(rows: Iterator[object]) -> bool:
    """Whether any row is left, reading them all (as a whole read counts them: an engine error
    among them is raised as it was)."""
    return sum(1 for _ in rows) > 0


class _ProbeCut:
    """Follows a probe's rows (after DISTINCT, as the tie check counts them) to the window's
    edges and then to the first row whose ORDER BY key is neither edge's (`order_key`), and
    checks the rows after it."""

    @classmethod
    def of(cls, cut: ProbeCut, variables: tuple[str, ...]) -> _ProbeCut | None:
        """None when the probe lacks a variable the cut names (the tie check then says so)."""
        index = {v: i for i, v in enumerate(variables)}
        if any(v not in index for v in (*cut.keys, *cut.columns)):
            return None
        return cls(cut, tuple(index[v] for v in cut.keys), tuple(index[v] for v in cut.columns))

    def __init__(self, cut: ProbeCut, key_at: tuple[int, ...], column_at: tuple[int, ...]) -> None:
        self._cut, self._key_at, self._column_at = cut, key_at, column_at
        self._seen: set[str] = set()
        self._count = 0
        self._edges: list[CellRow] = []
        """The key cells of the window's first and last rows."""
        self._wanted: set[tuple] | None = None
        self._keys: dict[CellRow, tuple] = {}

    def stop_at(self, rows: list[CellRow]) -> int | None:
        """The index in `rows` of the first row past the window whose key no edge has."""
        start, end = self._cut.start, self._cut.end
        for i, row in enumerate(rows):
            if self._cut.distinct:
                spelled = cells_key([row[j] for j in self._column_at])
                if spelled in self._seen:
                    continue
                self._seen.add(spelled)
            self._count += 1
            key_cells = tuple([row[j] for j in self._key_at])
            if self._count > end:
                if self._wanted is None:
                    self._wanted = {self._key(edge) for edge in self._edges}
                if self._key(key_cells) not in self._wanted:
                    return i
            elif self._count == start + 1 or (self._count == end and start < end):
                self._edges.append(key_cells)
        return None

    def _key(self, key_cells: CellRow) -> tuple:
        key = self._keys.get(key_cells)
        if key is None:
            key = self._keys[key_cells] = tuple([order_key(c) for c in key_cells])
        return key

    def unshared(self, rest: Iterator[ox.QuerySolution], budget: int) -> list[ox.QuerySolution] | None:
        """Read up to `budget` more rows of `rest`; None when no row of them can have an edge's
        key, else the rows read (to be read again as cells)."""
        read: list[ox.QuerySolution] = []
        while budget > 0 and (chunk := list(islice(rest, min(_CHUNK, budget)))):
            read.extend(chunk)
            budget -= len(chunk)
            if self._may_share_key(chunk):
                return read
        return None

    def _may_share_key(self, chunk: list[ox.QuerySolution]) -> bool:
        """True when a row of `chunk` may have an edge's key, or a key term no cell can hold
        (reading it as cells then raises the error a whole read raises). Only the key columns
        are read, a column at a time: a false True only costs reading on as cells."""
        columns = {j: list(map(itemgetter(j), chunk)) for j in set(self._key_at)}
        kinds = {j: set(map(type, column)) for j, column in columns.items()}
        if not all(kind <= _CELL_KINDS for kind in kinds.values()):
            return True
        return any(
            all(_may_hold(columns[j], kinds[j], cell) for j, cell in zip(self._key_at, edge)) for edge in self._edges
        )


def _may_hold(column: list[object], kinds: set[type], cell: Cell) -> bool:
    """True when a term of `column` may have `cell`'s `order_key` (never False when one does)."""
    if cell is None:
        return type(None) in kinds
    if cell[0] == "bnode":  # every blank node has the same key
        return ox.BlankNode in kinds
    key = order_key(cell)
    if key[0] == "number":  # type: ignore[index]
        values = list(map(_VALUE, column)) if kinds == _LITERALS else [t.value for t in column if type(t) is _LITERAL]  # type: ignore[attr-defined]
        return _may_spell(values, key[1])  # type: ignore[index]
    values = map(_VALUE, column) if type(None) not in kinds else [t.value for t in column if t is not None]  # type: ignore[attr-defined]
    return cell[1] in values  # the same spelling: the same value


def _may_spell(values: list[str], number: Decimal) -> bool:
    """True when one of `values` spells `number` (`decimal_value`). Parsed as floats first (a
    tenth of the time): a value spelling the number is within a few units in the last place of
    its float, so only those close to it are parsed as decimals."""
    target = float(number)
    close = values
    if math.isfinite(target):
        try:
            floats = list(map(float, values))
        except ValueError:  # a value float() cannot read: every value is parsed as a decimal
            floats = None
        if floats is not None:
            if not _any_near(floats, target):
                return False
            close = [v for v, f in zip(values, floats) if abs(f - target) <= abs(target) * 1e-9]
    return any(decimal_value(v) == number for v in set(close))


def _any_near(floats: list[float], target: float) -> bool:
    """False only when no float of `floats` is within `abs(target) * 1e-9` of finite `target`
    (`_may_spell`'s closeness): one sort and a binary search, in C, over a window twice as
    wide (rounding at its edges never drops a close float), instead of a comparison per value
    in Python (on the generated bench's tie probes, two thirds of reading a probe). A NaN (never
    close) or both infinities in `floats` leave it to the exact check (True): sorting would
    not order them."""
    total = sum(floats)
    if total != total:  # NaN
        return True
    ordered = sorted(floats)
    margin = abs(target) * 2e-9 + 5e-324  # 5e-324: a target of 0 is close to 0 and -0.0 only
    at = bisect_left(ordered, target - margin)
    return at < len(ordered) and ordered[at] <= target + margin


def _values(terms: Sequence[object]) -> list[str | None]:
    """The value of each term (None: unbound); QueryRejected for a term SPARQL results cannot
    hold, as `cell_from_term` (one type check per column when every term is plain)."""
    if set(map(type, terms)) <= _PLAIN_TERMS:
        return list(map(_VALUE, terms))
    return [None if term is None else cell_from_term(term)[1] for term in terms]


def _named(exc: BaseException, query: str) -> KgevalError:
    if isinstance(exc, KgevalError):
        return exc.with_traceback(None)
    if isinstance(exc, SyntaxError):
        return _rejected(str(exc), query)
    if isinstance(exc, RuntimeError):  # raised while iterating too: SERVICE ?var unbound, unsupported function ...
        return QueryRejected(f"oxigraph cannot evaluate the query: {exc}")
    # an in-memory store reads nothing while querying: the query reached out (SERVICE)
    return QueryRejected(f"oxigraph failed reaching outside the store (a SERVICE call?): {exc}")


def _rejected(message: str, query: str) -> QueryRejected:
    """The engine's syntax error. Its "error at line:column" counts characters of the text it
    was sent, the guard's approved text (one line, rewritten), not the query as written: the
    message says so and quotes that text at the position, so the spot can be found."""
    import re  # on this error path only: a sandbox worker starts without it

    found = re.search(r"error at (\d+):(\d+)", message)
    lines = query.split("\n")
    if found is None or not 1 <= int(found[1]) <= len(lines):
        return QueryRejected(f"oxigraph rejected the query: {message}")
    line, at = lines[int(found[1]) - 1], int(found[2]) - 1
    quote = ("..." if at > 60 else "") + line[max(0, at - 60) : at] + "⟨here⟩" + line[at : at + 20] + ("..." if at + 20 < len(line) else "")
    where = f"{found[0]} of the text the guard approved (not the query as written): {quote!r}"
    return QueryRejected(f"oxigraph rejected the query: {message[: found.start()]}{where}{message[found.end() :]}")


_CHUNK = 512
_FIRST_PROBE_CHUNK = 32
"""Rows of a probe converted to cells before the first look for the stop (`_probe_rows`), then
twice as many each time up to `_CHUNK`: a window of a few rows ends its key group within the
first rows, and every row converted past the stop was converted for nothing."""


def _until(solutions: Iterable[ox.QuerySolution], cancel: Cancel) -> Iterable[ox.QuerySolution]:
    """The solutions until `cancel` is set, checked every `_CHUNK` rows: read in chunks, so the
    per-row cost is the engine's own iteration (a Python check on every row cost more)."""
    rows = iter(solutions)

    def chunk() -> list[ox.QuerySolution]:
        return [] if cancel.is_set() else list(islice(rows, _CHUNK))

    return chain.from_iterable(iter(chunk, []))


def _kept_rows(solutions: Iterable[ox.QuerySolution], ordered: bool, row_cap: int, caps: Caps | None) -> tuple[list[CellRow], int]:
    if caps is None:  # trusted (and reference queries, whose size the worker's memory bounds)
        return _kept_cell_rows(solutions, ordered, row_cap)
    describe = _Describer(caps)
    # ordered: the rows beyond the cap are counted, never converted (keep_rows calls no key)
    kept, total = keep_rows(solutions, row_cap=row_cap, ordered=ordered, key=describe.key)
    return [tuple([describe.cell(term) for term in solution]) for solution in kept], total


def _kept_cell_rows(solutions: Iterable[ox.QuerySolution], ordered: bool, row_cap: int) -> tuple[list[CellRow], int]:
    """`_kept_rows` without caps, converting the rows a chunk at a time, column by column
    (`_chunk_cells`): the same rows, cells and keys as `_Describer` gives, a third of the time
    on results of many rows. Ordered, only the first `row_cap` rows are converted; unordered,
    every row is keyed (in chunks, so memory stays O(row_cap + chunk) as in `keep_rows`)."""
    rows = iter(solutions)
    if ordered:  # the first rows; those past the cap are counted, never converted
        kept = _chunk_cells(list(islice(rows, row_cap)))[0]
        return kept, len(kept) + sum(1 for _ in rows)
    kept, total = keep_rows(_keyed_cell_rows(rows), row_cap=row_cap, ordered=False, key=_FIRST)
    return [row for _, row in kept], total


def _keyed_cell_rows(rows: Iterator[ox.QuerySolution]) -> Iterator[tuple[str, CellRow]]:
    """(key, cells) of every row, converted `_CHUNK` rows at a time."""
    while chunk := list(islice(rows, _CHUNK)):
        cells, keys = _chunk_cells(chunk, keys=True)
        yield from zip(keys, cells)


def _chunk_cells(chunk: list[ox.QuerySolution], *, keys: bool = False) -> tuple[list[CellRow], list[str]]:
    """The cells of each row of `chunk` and, with `keys`, each row's canonical key (the string
    `_Describer.key` builds): converted a column at a time, with the per-term work done by
    `map` and `zip` where a column holds only IRIs or only literals without a language tag.
    A chunk holding a term SPARQL results cannot hold is converted row by row, so the error is
    the one `_Describer` raises, for the same term."""
    columns = list(zip(*chunk))
    if not columns:  # no variable: every row is empty
        return [()] * len(chunk), [""] * len(chunk) if keys else []
    kinds = [set(map(type, column)) for column in columns]
    if not all(kind <= _CELL_KINDS for kind in kinds):
        describe = _Describer(None)
        spelled = [describe.key(solution) for solution in chunk] if keys else []
        return [tuple([describe.cell(term) for term in solution]) for solution in chunk], spelled
    cells = [_column_cells(column, kind) for column, kind in zip(columns, kinds)]
    if not keys:
        return list(zip(*cells)), []
    spellings = [_column_spellings(column, kind, column_cells) for column, kind, column_cells in zip(columns, kinds, cells)]
    return list(zip(*cells)), spellings[0] if len(spellings) == 1 else list(map("\t".join, zip(*spellings)))


def _column_cells(column: Sequence[object], kinds: set[type]) -> list[Cell]:
    """The cells of one column's terms (as `cell_from_term`, None where unbound)."""
    if kinds == _IRIS:
        return list(zip(repeat("uri"), map(_VALUE, column), repeat(None), repeat(None)))
    if kinds == _LITERALS and not any(map(_LANGUAGE, column)):  # `literal_cell` without a tag
        datatypes = [None if datatype in _IMPLICIT else datatype for datatype in map(_VALUE, map(_DATATYPE, column))]
        return list(zip(repeat("literal"), map(_VALUE, column), datatypes, repeat(None)))
    return [None if term is None else cell_from_term(term) for term in column]


def _column_spellings(column: Sequence[object], kinds: set[type], cells: list[Cell]) -> list[str]:
    """Each term's part of the row key, as `_Describer.key` spells it (the engine's N-Triples
    spelling of a literal unless it escapes a character: `canonical_spelling` then)."""
    if kinds == _IRIS:
        return list(map("<{}>".format, map(_VALUE, column)))
    if kinds == _LITERALS:
        spelled = list(map(str, column))
        return [s if "\\" not in s else canonical_spelling(*c) for s, c in zip(spelled, cells)]  # type: ignore[misc]
    return list(map(_spelling, column, cells))


def _spelling(term: object, cell: Cell) -> str:
    """One term's part of the row key, as `_Describer.key` spells it."""
    if cell is not None and cell[0] == "literal":
        spelled = str(term)
        if "\\" not in spelled:
            return spelled
    return cell_spelling(cell)


class _Describer:
    """Canonical spellings of engine terms (every row, for ranking) and cells (kept rows only).

    No memo: reading an IRI's value from the engine costs less than hashing the term to find
    it in one (measured), so each spelling is built as the row passes."""

    def __init__(self, caps: Caps | None) -> None:
        self._caps = caps
        self._quarter_cap = caps.max_value_bytes // 4 if caps is not None else None

    def key(self, solution: ox.QuerySolution) -> str:
        """The row's canonical key: the same string as `cells_key` of its cells."""
        parts = []
        quarter_cap = self._quarter_cap
        for term in solution:
            kind = type(term)
            if kind is _IRI:
                value = term.value
                if quarter_cap is not None and len(value) > quarter_cap:
                    self.cell(term)  # checks the value's size
                parts.append(f"<{value}>")
            elif term is None:
                parts.append("")
            elif kind is _LITERAL:
                # the engine's N-Triples spelling is the canonical one unless it escapes a
                # character (a backslash shows it): only then is it rebuilt from the parts
                spelling = str(term)
                if "\\" in spelling or (quarter_cap is not None and len(spelling) > quarter_cap):
                    spelling = canonical_spelling(*self.cell(term))
                parts.append(spelling)
            else:
                parts.append(canonical_spelling(*self.cell(term)))  # a blank node; anything else raises
        return "\t".join(parts)

    def cell(self, term: object) -> Cell:
        if term is None:
            return None
        cell = cell_from_term(term)
        if self._caps is not None:
            size = _utf8_len(cell[1])
            if size > self._caps.max_value_bytes:
                raise QueryOverBudget(
                    f"a value of the result is {size:,} bytes, over the {self._caps.max_value_bytes:,}-byte limit"
                )
        return cell


_IRI, _LITERAL = ox.NamedNode, ox.Literal
_PLAIN_TERMS = {ox.NamedNode, ox.Literal, ox.BlankNode}
_CELL_KINDS = {*_PLAIN_TERMS, type(None)}
"""What a column may hold to be converted column by column (anything else: `_Describer`)."""
_IRIS, _LITERALS = {ox.NamedNode}, {ox.Literal}
_IMPLICIT = {XSD_STRING, RDF_LANGSTRING}
"""Datatypes a literal cell leaves implicit (`literal_cell`)."""
_VALUE, _DATATYPE, _LANGUAGE, _FIRST = attrgetter("value"), attrgetter("datatype"), attrgetter("language"), itemgetter(0)


def cell_from_term(term: object) -> tuple[str, str, str | None, str | None]:
    """A bound engine term as a plain cell; QueryRejected for a term SPARQL results cannot hold (a quoted triple)."""
    kind = type(term)
    if kind is ox.NamedNode:
        return ("uri", term.value, None, None)  # type: ignore[attr-defined]
    if kind is ox.Literal:
        return literal_cell(term.value, term.datatype.value, term.language)  # type: ignore[attr-defined,return-value]
    if kind is ox.BlankNode:
        return ("bnode", term.value, None, None)  # type: ignore[attr-defined]
    raise QueryRejected(f"the result holds a term SPARQL 1.1 results cannot hold: {term!r}")


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _result_bytes(rows: list[CellRow]) -> int:
    return sum(
        _utf8_len(cell[1]) + len(cell[2] or "") + len(cell[3] or "") for row in rows for cell in row if cell is not None
    )
