"""A Gremlin store (Amazon Neptune's property graph, or any gremlinpython remote connection).

Reference queries are Gremlin text (`gremlin:` in questions.yaml). `execute` parses and guards
the text (`parse_gremlin`: read-only steps only), sends the bytecode through a gremlinpython
RemoteConnection, and maps what comes back into the same `QueryResult` model as SPARQL:

- each traverser is one row; a map (`project`, `valueMap`, `elementMap`, `select` of several
  keys) becomes columns named by its keys (`T.id`/`T.label` keys become `id`/`label`), any
  other value is one column named `value`;
- a vertex or edge becomes an IRI-like term from its id: `urn:gremlin:vertex:<id>`,
  `urn:gremlin:edge:<id>` (percent-encoded), whose path tail a judge compares as the id;
- property values become typed literals: str plain, bool xsd:boolean, every Java integer type
  (byte, short, int, long, BigInteger) xsd:integer, float and double xsd:double (GraphBinary
  gives a Java float as the double of its 32-bit value), BigDecimal xsd:decimal, Date and
  OffsetDateTime xsd:dateTime (UTC as `Z`); a one-element list (as valueMap gives) becomes its
  element; null is an unbound cell;
- lists of several values, nested maps and paths have no cell form: the query is refused
  with a StoreError saying so (unfold or project them).

A result is ordered when the top-level traversal has an order() step. Timeouts: the query runs
on a worker thread with a deadline (QueryTimeout when it overruns); on Neptune and a Gremlin
Server the `evaluationTimeout` request option is also sent so the server stops the query too.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from gremlin_python.driver.protocol import GremlinServerError
from gremlin_python.process.traversal import Bytecode
from gremlin_python.statics import BigDecimal
from gremlin_python.structure.graph import Edge, Path, Property, Vertex, VertexProperty

from kgeval.errors import InputError, QueryError, QueryTimeout, StoreError
from kgeval.stores._base import Store, run_with_deadline
from kgeval.stores._gremlin_parse import parse_gremlin
from kgeval.stores._query import QueryShape
from kgeval.stores._cells import XSD
from kgeval.stores._results import Row, Term, collect_rows

ConnectionFactory = Callable[[], Any]
"""Opens a gremlinpython RemoteConnection (anything with `submit(bytecode)` and `close()`)."""

VERTEX_PREFIX = "urn:gremlin:vertex:"
EDGE_PREFIX = "urn:gremlin:edge:"
VALUE_COLUMN = "value"
SERVER_TIMEOUT_STATUS = 598
"""The status a Gremlin Server (and Neptune) answers when a traversal ran past its evaluationTimeout."""


class GremlinStore(Store):
    """Gremlin traversals over a remote connection, opened per query on the worker thread
    (SQLite-backed connections are bound to their thread, and Neptune's SigV4-signed
    handshake must be fresh). `server_timeout`: send the timeout as the request's
    evaluationTimeout; `naive_utc`: the connection reads dates as naive UTC datetimes
    (gremlinpython's drivers do; a Gremlin Server's or Neptune's java.util.Date)."""

    def __init__(
        self,
        connect: ConnectionFactory,
        *,
        data_version: str,
        name: str,
        version: str,
        server_timeout: bool = False,
        naive_utc: bool = False,
    ) -> None:
        self._connect = connect
        self._data_version = data_version
        self.name = name
        self._version = version
        self._server_timeout = server_timeout
        self._naive_utc = naive_utc

    @property
    def version(self) -> str:
        return self._version

    @property
    def data_sha256(self) -> str:
        return self._data_version

    def _guard(self, query: str) -> QueryShape:
        parsed = parse_gremlin(query, max_bytes=self.max_query_bytes)
        return QueryShape("select", parsed.ordered, None, 0, (), query)  # sent as bytecode built from this parse

    def _refuse_over_budget(self, shape: QueryShape) -> None:
        """Not estimated: the value-size estimate reads SPARQL only; a Gremlin traversal is bounded
        by the server's evaluationTimeout, sent with every request when `server_timeout` is set."""

    def _ask(self, query: str, timeout_s: float) -> bool:  # pragma: no cover - _guard never says "ask"
        raise StoreError("Gremlin has no ASK form")

    def _select(
        self, query: str, shape: QueryShape, timeout_s: float, row_cap: int
    ) -> tuple[list[str], list[Row], int]:
        bytecode = parse_gremlin(query, max_bytes=self.max_query_bytes).bytecode
        if self._server_timeout:
            bytecode = _with_evaluation_timeout(bytecode, timeout_s)

        def evaluate(cancel: threading.Event) -> dict[tuple[Any, ...], int]:
            connection = self._open()
            try:
                counts: dict[tuple[Any, ...], int] = {}
                for value, bulk in _traversers(connection, bytecode):
                    if cancel.is_set():
                        break
                    cells = _cells(value, self._naive_utc)
                    counts[cells] = counts.get(cells, 0) + bulk
                return counts
            except QueryError:
                raise
            except GremlinServerError as exc:
                if exc.status_code == SERVER_TIMEOUT_STATUS:
                    raise QueryTimeout(f"{self.name}: the server stopped the traversal at its evaluationTimeout ({timeout_s:g} s)") from None
                raise StoreError(f"{self.name}: Gremlin query failed: {type(exc).__name__}: {exc}") from None
            except Exception as exc:  # gremlinpython and backends raise their own types
                raise StoreError(f"{self.name}: Gremlin query failed: {type(exc).__name__}: {exc}") from None
            finally:
                connection.close()

        counts = run_with_deadline(evaluate, timeout_s)
        variables = _columns(counts)
        kept, _ = collect_rows(_rows(counts, variables, row_cap), row_cap=row_cap, ordered=shape.ordered)
        return variables, kept, sum(counts.values())

    def _open(self) -> Any:
        try:
            return self._connect()
        except QueryError:
            raise
        except Exception as exc:
            raise StoreError(f"{self.name}: cannot open a Gremlin connection: {type(exc).__name__}: {exc}") from None


def _traversers(connection: Any, bytecode: Bytecode) -> Iterator[tuple[Any, int]]:
    """(value, bulk) of each traverser the connection returns. A bulk is never expanded: a
    server's bulked traverser can stand for 10^20 results (repeat() over a dense graph)."""
    traversers = connection.submit(bytecode).traversers
    while True:  # next(), as gremlinpython's Traversal reads them (gremlite's __iter__ differs)
        try:
            traverser = next(traversers)
        except StopIteration:
            return
        yield traverser.object, traverser.bulk


def _with_evaluation_timeout(bytecode: Bytecode, timeout_s: float) -> Bytecode:
    """The bytecode with Neptune's/TinkerPop's `evaluationTimeout` option (ms) in front."""
    from gremlin_python.process.strategies import OptionsStrategy

    timed = Bytecode()
    timed.add_source("withStrategies", OptionsStrategy(evaluationTimeout=int(timeout_s * 1000)))
    for name, *args in bytecode.source_instructions:
        timed.add_source(name, *args)
    for name, *args in bytecode.step_instructions:
        timed.add_step(name, *args)
    return timed


def _cells(value: Any, naive_utc: bool) -> tuple[Any, ...]:
    """A result value as hashable cells: a map as ((column, term), ...), anything else as
    (term,). Raises StoreError for a value with no cell form."""
    if isinstance(value, dict):
        return (_MAP, *((_key_name(k), term_from_gremlin(v, naive_utc)) for k, v in value.items()))
    return (term_from_gremlin(value, naive_utc),)


_MAP = object()
"""Marks the cells of a map result (see `_cells`)."""


def _columns(counts: dict[tuple[Any, ...], int]) -> list[str]:
    """Map keys in first-seen order when every result is a map; otherwise one column."""
    if not counts or not all(cells[0] is _MAP for cells in counts):
        return [VALUE_COLUMN]
    columns: dict[str, None] = {}
    for cells in counts:
        for key, _ in cells[1:]:
            columns.setdefault(key, None)
    return list(columns)


def _rows(counts: dict[tuple[Any, ...], int], variables: list[str], row_cap: int) -> Iterator[Row]:
    """Each distinct row, as many times as its bulk, but never more than the row cap (the rows
    kept cannot hold more copies; the total is the sum of the bulks)."""
    for cells, bulk in counts.items():
        if cells[0] is not _MAP:
            row = [cells[0]]
        elif variables == [VALUE_COLUMN]:
            raise StoreError("a Gremlin dict result has no single-cell form: unfold() or project() it")
        else:
            named = dict(cells[1:])
            row = [named.get(name) for name in variables]
        for _ in range(min(bulk, row_cap)):
            yield list(row)


def _key_name(key: Any) -> str:
    return key.name.rstrip("_") if hasattr(key, "name") and not isinstance(key, str) else str(key)


def term_from_gremlin(value: Any, naive_utc: bool = False) -> Term | None:
    """One Gremlin result value as a typed term (see the module docstring). `naive_utc`: a
    datetime without offset is UTC (gremlinpython reads a server's java.util.Date so)."""
    if value is None:
        return None
    if isinstance(value, Vertex):
        return Term.iri(VERTEX_PREFIX + quote(str(value.id), safe=""))
    if isinstance(value, Edge):
        return Term.iri(EDGE_PREFIX + quote(str(value.id), safe=""))
    if isinstance(value, (VertexProperty, Property)):
        return term_from_gremlin(value.value, naive_utc)
    if isinstance(value, bool):
        return Term.literal("true" if value else "false", XSD + "boolean")
    if isinstance(value, int):
        return Term.literal(str(value), XSD + "integer")
    if isinstance(value, float):
        return Term.literal(repr(value), XSD + "double")
    if isinstance(value, BigDecimal):  # gremlinpython's own type for a Java BigDecimal
        value = value.value
    if isinstance(value, Decimal):
        return Term.literal(str(value), XSD + "decimal")
    if isinstance(value, dt.datetime):
        if naive_utc and value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return Term.literal(_iso_datetime(value), XSD + "dateTime")
    if isinstance(value, str):
        return Term.literal(value)
    if isinstance(value, (list, tuple, set)) and len(value) == 1:
        return term_from_gremlin(next(iter(value)), naive_utc)
    if isinstance(value, (list, tuple, set, dict, Path)):
        kind = type(value).__name__
        raise StoreError(f"a Gremlin {kind} result has no single-cell form: unfold() or project() it")
    raise StoreError(f"unsupported Gremlin result value of type {type(value).__name__}: {value!r}")


def _iso_datetime(value: dt.datetime) -> str:
    """ISO 8601; a UTC offset is written `Z`, as SPARQL engines write xsd:dateTime in UTC."""
    text = value.isoformat()
    return text[:-6] + "Z" if value.utcoffset() == dt.timedelta(0) else text


def server_connection(endpoint: str) -> ConnectionFactory:
    """A factory of DriverRemoteConnections to a Gremlin Server's websocket
    (`ws://HOST:8182/gremlin`, or `wss://` behind TLS), traversal source `g`, GraphBinary."""
    if urlsplit(endpoint).scheme not in ("ws", "wss"):
        raise InputError(f"Gremlin Server endpoint {endpoint!r}: must be ws://HOST:8182/gremlin or wss://HOST:8182/gremlin")

    def connect() -> Any:
        from gremlin_python.driver.driver_remote_connection import DriverRemoteConnection

        return DriverRemoteConnection(endpoint, "g")

    return connect


def neptune_connection(endpoint: str, region: str, allow_insecure_http: bool = False) -> ConnectionFactory:
    """A factory of DriverRemoteConnections to Neptune's `wss://HOST:8182/gremlin`, each with a
    fresh SigV4-signed websocket handshake (service `neptune-db`)."""
    parts = urlsplit(endpoint)
    if parts.scheme != "wss" and not (parts.scheme == "ws" and allow_insecure_http):
        raise InputError(f"Neptune Gremlin endpoint {endpoint!r}: must be wss://HOST:8182/gremlin")
    signed_url = urlunsplit(("https" if parts.scheme == "wss" else "http", *parts[1:]))

    def connect() -> Any:
        from gremlin_python.driver.driver_remote_connection import DriverRemoteConnection

        from kgeval.stores._sigv4 import sigv4_headers

        headers = sigv4_headers("GET", signed_url, None, {}, region)
        headers["Host"] = parts.netloc
        return DriverRemoteConnection(endpoint, "g", headers=headers)

    return connect
