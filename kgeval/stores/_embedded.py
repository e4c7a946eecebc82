"""The embedded store: pyoxigraph in process, the default (no server, no keys)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyoxigraph as ox

from kgeval._files import sha256_file, sha256_json
from kgeval.errors import InputError, QueryRejected, StoreError
from kgeval.stores._base import Store, run_with_deadline
from kgeval.stores._functions import DERIVED_INTEGER_CASTS
from kgeval.stores._query import QueryShape
from kgeval.stores._results import Row, Term, collect_rows

_FORMATS = {
    ".ttl": ox.RdfFormat.TURTLE,
    ".nt": ox.RdfFormat.N_TRIPLES,
    ".nq": ox.RdfFormat.N_QUADS,
    ".trig": ox.RdfFormat.TRIG,
    ".rdf": ox.RdfFormat.RDF_XML,
    ".owl": ox.RdfFormat.RDF_XML,
}


def rdf_format(path: Path) -> ox.RdfFormat:
    """The RDF syntax of a KG file, from its extension."""
    try:
        return _FORMATS[path.suffix.lower()]
    except KeyError:
        raise InputError(f"{path}: unknown RDF file extension (use one of {', '.join(_FORMATS)})") from None


def term_from_oxigraph(term: ox.NamedNode | ox.Literal | ox.BlankNode | None) -> Term | None:
    if term is None:
        return None
    if isinstance(term, ox.NamedNode):
        return Term.iri(term.value)
    if isinstance(term, ox.BlankNode):
        return Term.bnode(term.value)
    if isinstance(term, ox.Literal):
        return Term.literal(term.value, term.datatype.value, term.language)
    raise StoreError(f"unsupported term in result: {term!r}")


class EmbeddedStore(Store):
    """An in-memory pyoxigraph store loaded from KG files into the default graph.

    Timeouts: the query runs in a worker thread; when it overruns, `execute` raises
    QueryTimeout at once and the worker stops at its next row. A query that spends its whole
    time before its first row (a large cross product) keeps its core busy until the engine
    returns that row: pyoxigraph offers no way to interrupt it.
    """

    name = "oxigraph-embedded"

    def __init__(self, files: Sequence[Path]) -> None:
        self._store = ox.Store()
        self._files = [Path(f) for f in files]
        for path in self._files:
            try:
                self._store.bulk_load(path=str(path), format=rdf_format(path))
            except (SyntaxError, ValueError, OSError) as exc:
                raise InputError(f"{path}: cannot load KG: {exc}") from None
        self._data_sha = sha256_json(sorted((p.name, sha256_file(p)) for p in self._files))

    @property
    def version(self) -> str:
        return ox.__version__

    @property
    def data_sha256(self) -> str:
        return self._data_sha

    def _ask(self, query: str, timeout_s: float) -> bool:
        return run_with_deadline(lambda cancel: bool(self._query(query)), timeout_s)

    def _select(
        self, query: str, shape: QueryShape, timeout_s: float, row_cap: int
    ) -> tuple[list[str], list[Row], int]:
        def evaluate(cancel: threading.Event) -> tuple[list[str], list[Row], int]:
            solutions = self._query(query)
            variables = solutions.variables

            def rows() -> Iterator[Row]:
                for solution in solutions:
                    if cancel.is_set():
                        return
                    yield [term_from_oxigraph(solution[v]) for v in variables]

            kept, total = collect_rows(rows(), row_cap=row_cap, ordered=shape.ordered)
            return [v.value for v in variables], kept, total

        return run_with_deadline(evaluate, timeout_s)

    def _query(self, query: str):  # noqa: ANN202 - pyoxigraph's result union
        try:
            return self._store.query(query, custom_functions=DERIVED_INTEGER_CASTS)
        except SyntaxError as exc:
            raise QueryRejected(f"oxigraph rejected the query: {exc}") from None
        except RuntimeError as exc:  # e.g. a function the engine lacks: the query's fault
            raise QueryRejected(f"oxigraph rejected the query: {exc}") from None
        except OSError as exc:
            raise StoreError(f"oxigraph failed: {exc}") from None

