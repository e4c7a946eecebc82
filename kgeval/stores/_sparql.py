"""A SPARQL 1.1 Protocol endpoint as a store (Oxigraph server, Virtuoso, Fuseki, GraphDB ...).

SPARQLWrapper builds the request (query, default-graph-uri / named-graph-uri, Accept header,
basic auth); this module sends it with a real deadline, maps HTTP failures to StoreError and
QueryTimeout naming the endpoint and the HTTP status, and parses the SPARQL JSON results into
the same typed `Term` model as the embedded store.

The store's data hash is the `data_version` declared in configuration: a remote store cannot
hash files it does not hold, so whoever loads the endpoint declares what it serves, and the
gold records that string where the embedded store records the sha256 of the KG files.
"""

from __future__ import annotations

import json
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import Any

from SPARQLWrapper import JSON, POST, SPARQLWrapper

from kgeval.errors import QueryOverBudget, QueryRejected, QueryTimeout, StoreError
from kgeval.stores._base import Store
from kgeval.stores._cells import XSD, Cell, CellRow, cells_key, keep_rows, literal_cell
from kgeval.stores._query import QueryShape, guard_query
from kgeval.stores._results import QueryResources, QueryResult, Row, Term, rows_from_cells
from kgeval.stores._rewrite import sorted_rows_count_query

RequestSigner = Callable[[urllib.request.Request], None]
"""Adds authentication headers to a fully built request just before it is sent (Neptune SigV4)."""

_CHUNK = 1 << 16
_ERROR_BODY_CHARS = 300
_MAX_ERROR_BYTES = 64 << 20
_TAIL_BYTES = 2048
_ERROR_GRACE_S = 5.0
_SERVER_HEADERS: dict[str, str] = {}
"""Server header last answered by each endpoint: a run opens one store per KG on one endpoint,
and each knows its server's product (and timeout parameter) once any of them has been answered."""
_FUSEKI = "fuseki"
_FUSEKI_REQUEST_ID = "Fuseki-Request-Id"
"""The header every Fuseki answer carries (it sends no Server header): how kgeval knows it."""
_FUSEKI_TIMED_OUT = "Query timed out"
"""The body of Fuseki's HTTP 503 when its timeout stopped a query."""
_ANYTIME_STATE = "S1TAT"
"""Virtuoso's SQL state for "returning incomplete results, query interrupted by result timeout"."""
_ABORTED_AT_TIMEOUT = ("SR177", "SR203")
"""How Virtuoso sometimes answers a query its timeout stopped instead of S1TAT: SR177 "Misc
Transaction Error" (seen on a cartesian ORDER BY), SR203 "Async statement killed by SQLCancel"
(a cross product's forked thread)."""
_OVER_COST_ESTIMATE = re.compile(r"The estimated execution time (\d+) \(sec\) exceeds the limit of (\d+) \(sec\)")
"""Virtuoso's refusal (HTTP 500, SQL state 42000) of a query whose estimated cost is over its
`MaxQueryCostEstimationTime`: the query's cost, decided before it ran, never a server fault."""
_EARLY_SHARE = 0.1
"""Such an abort counts as the timeout when it came after at least (1 - this share) of the time
limit the server was sent."""
VIRTUOSO_TIMEOUT_RESOLUTION_S = 2.0
"""Virtuoso looks at a query's timeout only every two seconds (its documentation on anytime
queries: "timeouts are checked every two seconds with default settings"; measured on 7.2: a
1-1.9 s `timeout` stopped a cross product at 2.0 s, a 2.5 or 3.5 s one at 4.0 s; sooner when other
requests keep the server busy). kgeval sends it the budget less this, so that it has stopped the
query (on every thread it gave it) before kgeval's deadline: sent the budget itself, it went on
for up to 2 s past the deadline on both cores of a 2-core machine."""
_VIRTUOSO_MIN_TIMEOUT_MS = 1000
"""Virtuoso ignores a `timeout` under one second."""


class ServerRowLimit(StoreError):
    """The server cut the result at its own row limit (Virtuoso's ResultSetMaxRows): a trusted
    query's StoreError (the gold would be short), a candidate's QueryOverBudget (its result is
    larger than the server serves: the model's failure, never the harness's)."""


class SparqlEndpointStore(Store):
    """Any SPARQL 1.1 Protocol query endpoint, queried with HTTP POST and JSON results.

    Timeouts are enforced on the client: the whole exchange (connect, wait, read) must finish
    within `timeout_s`, or QueryTimeout is raised and the connection is dropped. Where the
    server's protocol has one, the same timeout is sent with the request, so the server stops
    the query too (`timeout_parameters`): Virtuoso's `timeout` (milliseconds, two seconds under
    kgeval's: it looks at its timeout only that often) and Fuseki's `timeout` (seconds);
    Neptune's is a query hint (`NeptuneSparqlStore`). Oxigraph server has only its own
    `--timeout-s`. A partial answer the server sends at its limit (Virtuoso's
    "anytime" result) is a QueryTimeout, never a result. docs/engines.md lists the server
    settings kgeval expects.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        data_version: str,
        default_graphs: Sequence[str] = (),
        named_graphs: Sequence[str] = (),
        username: str | None = None,
        password: str | None = None,
        product: str | None = None,
        product_version: str | None = None,
        signer: RequestSigner | None = None,
        name_prefix: str = "sparql-endpoint",
    ) -> None:
        self.endpoint = endpoint
        self._data_version = data_version
        self._default_graphs = tuple(default_graphs)
        self._named_graphs = tuple(named_graphs)
        self._credentials = (username, password) if username else None
        self._signer = signer
        self._name_prefix = name_prefix
        self._product = product
        self._product_version = product_version
        self._server_header: str | None = None

    # -- identity recorded with gold ------------------------------------------------------

    @property
    def name(self) -> str:  # type: ignore[override]
        product, _ = self._server_product()
        return f"{self._name_prefix}:{product}"

    @property
    def version(self) -> str:
        _, version = self._server_product()
        return version

    @property
    def data_sha256(self) -> str:
        return self._data_version

    def _server_product(self) -> tuple[str, str]:
        """(product, version) from the Server header when the server sends one, else config.
        A configured product without its version still asks the server once: else the identity
        would read `unknown` until some query had run, and differ from the one the gold recorded."""
        if self._server_header is None and (self._product is None or self._product_version is None):
            self.execute("ASK {}", timeout_s=30, row_cap=1)  # learn the Server header once
        product, version = self._product or "unknown", self._product_version or "unknown"
        if self._server_header:
            first = self._server_header.split()[0]
            head, _, tail = first.partition("/")
            product = self._product or head
            version = self._product_version or tail or "unknown"
        if version == "unknown" and _FUSEKI in product.lower():
            version = self._fuseki_version()
        return product, version

    def _fuseki_version(self) -> str:
        """Fuseki's version from its `/$/server` status (it sends no Server header); "unknown"
        when the server does not serve it (an admin path turned off, a proxy in front)."""
        if self._product_version is None:
            parts = urllib.parse.urlsplit(self.endpoint)
            request = urllib.request.Request(f"{parts.scheme}://{parts.netloc}/$/server", headers={"Accept": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    version = json.loads(response.read(_CHUNK)).get("version")
            except (OSError, ValueError, AttributeError):
                version = None
            self._product_version = version if isinstance(version, str) and version else "unknown"
        return self._product_version

    # -- queries --------------------------------------------------------------------------

    def _ask(self, query: str, timeout_s: float) -> bool:
        doc = self._request_json(query, timeout_s)
        if isinstance(doc.get("boolean"), bool):
            return doc["boolean"]
        virtuoso = _virtuoso_ask(doc)
        if virtuoso is None:
            raise StoreError(f"{self.endpoint}: ASK answer has no boolean: {_snippet(doc)}")
        return virtuoso

    def _select(
        self, query: str, shape: QueryShape, timeout_s: float, row_cap: int
    ) -> tuple[list[str], list[Row], int]:
        doc = self._request_json(query, timeout_s)
        try:
            variables = [str(v) for v in doc["head"]["vars"]]
            bindings = doc["results"]["bindings"]
        except (KeyError, TypeError):
            raise StoreError(f"{self.endpoint}: not a SPARQL JSON SELECT result: {_snippet(doc)}") from None

        def rows() -> Iterator[CellRow]:
            for binding in bindings:
                yield tuple(cell_from_json(binding.get(v), self.endpoint) for v in variables)

        # ranked on plain cells: Terms are built for the rows kept only
        kept, total = keep_rows(rows(), row_cap=row_cap, ordered=shape.ordered, key=cells_key)
        return variables, rows_from_cells(kept), total

    def _request_json(self, query: str, timeout_s: float) -> dict[str, Any]:
        request = self._build_request(query, self.timeout_parameters(timeout_s))
        body = self._send(request, timeout_s, self._server_limit_s(timeout_s))
        try:
            doc = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise StoreError(f"{self.endpoint}: answer is not SPARQL JSON ({exc}): {body[:_ERROR_BODY_CHARS]!r}") from None
        if not isinstance(doc, dict):
            raise StoreError(f"{self.endpoint}: answer is not a JSON object: {_snippet(doc)}")
        return doc

    def _run_candidate(
        self, query: str, shape: QueryShape, timeout_s: float, row_cap: int
    ) -> tuple[QueryResult, QueryResources]:
        """Oxigraph server (0.5) and Fuseki (5) check their timeout while they produce
        solutions but not while they sort them: an ORDER BY over a cross product keeps a core
        busy long after kgeval gave up. So an ordered candidate is first counted there (a count
        is stopped at the timeout) and refused over `max_sorted_rows`; the query gets the time
        that is left."""
        if shape.form == "select" and shape.ordered and self._sorts_past_timeout():
            started = time.monotonic()
            self._refuse_large_sort(query, timeout_s)
            timeout_s -= time.monotonic() - started
            if timeout_s <= 0:
                raise QueryTimeout(f"{self.endpoint}: query ran longer than its timeout (while counting what it sorts)")
        try:
            return super()._run_candidate(query, shape, timeout_s, row_cap)
        except ServerRowLimit as exc:
            # the candidate's result is larger than the server serves: its cost, as a result
            # over max_response_bytes is (a gold built here has fewer rows, or it would not build)
            raise QueryOverBudget(f"{exc} (a candidate's result over the server's row limit is over budget)") from None

    def _sorts_past_timeout(self) -> bool:
        """Oxigraph server 0.5 and Fuseki 5 go on sorting after their timeout (measured on
        Fuseki: an ORDER BY over a cross product kept 0.3 core busy for 40 s after its 3 s
        `timeout` had answered 503)."""
        product = self._known_product()
        return "oxigraph" in product or _FUSEKI in product

    def _refuse_large_sort(self, query: str, timeout_s: float) -> None:
        counting = guard_query(sorted_rows_count_query(query))
        _, rows, _ = self._select(counting.text, counting, timeout_s, 1)
        cell = rows[0][0] if rows and rows[0] else None
        count = int(cell.value) if cell is not None and cell.value.isdigit() else 0
        limit = self.candidate_limits.max_sorted_rows
        if count > limit:
            raise QueryOverBudget(
                f"{self.endpoint}: the query sorts {count:,} solutions, over the {limit:,} allowed "
                "(store.candidates.max_sorted_rows): this server does not stop a sort at its timeout"
            )

    def _known_product(self) -> str:
        """The configured product, else the Server header of an earlier answer from this
        endpoint (lower case). Nothing is sent to learn it: a run records the engine's name
        before its first candidate; `store.product` makes even the first request carry it."""
        return (self._product or self._server_header or _SERVER_HEADERS.get(self.endpoint) or "").lower()

    def timeout_parameters(self, timeout_s: float) -> dict[str, str]:
        """The request parameters that make the server itself stop the query by `timeout_s`:
        Virtuoso's `timeout` in milliseconds (`virtuoso_timeout_ms`: the budget less its
        timeout's resolution), Fuseki's in seconds; none for other products (Oxigraph server
        has no per-request timeout: it ignores the parameter; its bound is `--timeout-s`; an
        unknown server might refuse a parameter it does not know)."""
        product = self._known_product()
        if "virtuoso" in product:
            return {"timeout": str(virtuoso_timeout_ms(timeout_s))}
        if _FUSEKI in product or "jena" in product:
            return {"timeout": f"{timeout_s:g}"}
        return {}

    def _server_limit_s(self, timeout_s: float) -> float:
        """The time limit `timeout_parameters` give the server for a query kgeval gives
        `timeout_s`, in seconds (Virtuoso's is shorter); `timeout_s` where they give none."""
        return virtuoso_timeout_ms(timeout_s) / 1000 if "virtuoso" in self._known_product() else timeout_s

    def _build_request(self, query: str, parameters: dict[str, str] | None = None) -> urllib.request.Request:
        wrapper = SPARQLWrapper(self.endpoint)
        wrapper.setMethod(POST)
        wrapper.setReturnFormat(JSON)
        wrapper.setOnlyConneg(True)  # the Accept header only: no format=/output= parameters
        wrapper.setQuery(query)
        for graph in self._default_graphs:
            wrapper.addDefaultGraph(graph)
        for graph in self._named_graphs:
            wrapper.addNamedGraph(graph)
        for name, value in (parameters or {}).items():
            wrapper.addParameter(name, value)
        if self._credentials:
            wrapper.setCredentials(*self._credentials)
        request = wrapper._createRequest()  # noqa: SLF001 - the documented way to reuse its request building
        if self._signer is not None:
            self._signer(request)
        return request

    def _send(self, request: urllib.request.Request, timeout_s: float, server_limit_s: float) -> bytes:
        """Send `request`; return the body read within the deadline. `server_limit_s`: when the
        server was told to stop the query (an abort from it after then is the timeout)."""
        started = time.monotonic()
        deadline = started + timeout_s
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                self._server_header = _server_of(response.headers) or self._server_header or ""
                _SERVER_HEADERS[self.endpoint] = self._server_header
                _refuse_server_truncation(response.headers, self.endpoint, server_limit_s)
                return _read_before(response, deadline, timeout_s, self.endpoint, self.candidate_limits.max_response_bytes)
        except urllib.error.HTTPError as exc:
            detail, partial = _error_body(exc, deadline)
            if partial:
                raise _partial_answer(self.endpoint, server_limit_s) from None
            if exc.code == 503 and detail.startswith(_FUSEKI_TIMED_OUT):
                # Fuseki's own limit (the `timeout` kgeval sent, or arq:queryTimeout): the query
                # ran too long, the server is well (a busy or down server answers otherwise)
                raise QueryTimeout(f"{self.endpoint}: the server stopped the query at its time limit ({detail[:80]})") from None
            if any(code in detail for code in _ABORTED_AT_TIMEOUT) and time.monotonic() - started >= server_limit_s * (1 - _EARLY_SHARE):
                # Virtuoso sometimes ends a query its per-request timeout stopped with an abort
                # instead of S1TAT: at or after the limit it was sent, a timeout
                raise QueryTimeout(
                    f"{self.endpoint}: query ran longer than the {server_limit_s:g} s the server was given of {timeout_s:g} s "
                    f"(the server aborted it: {detail[:200]})"
                ) from None
            if estimate := _OVER_COST_ESTIMATE.search(detail):
                raise QueryOverBudget(
                    f"{self.endpoint}: the server refused the query before running it: its estimated execution time, "
                    f"{int(estimate[1]):,} s, is over the server's limit of {estimate[2]} s (Virtuoso's MaxQueryCostEstimationTime)"
                ) from None
            raise self._http_error(exc.code, f"{self.endpoint}: HTTP {exc.code} {exc.reason}: {detail}") from None
        except (TimeoutError, socket.timeout):
            raise QueryTimeout(f"{self.endpoint}: query ran longer than {timeout_s:g} s") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                raise QueryTimeout(f"{self.endpoint}: query ran longer than {timeout_s:g} s") from None
            raise StoreError(f"{self.endpoint}: cannot reach the endpoint: {exc.reason}") from None
        except (ConnectionError, OSError) as exc:
            raise StoreError(f"{self.endpoint}: connection failed: {exc}") from None

    def _http_error(self, status: int, message: str) -> StoreError:
        """400: the engine refused the query as written: the query's fault, not the store's."""
        error = QueryRejected if status == 400 else StoreError
        return error(message, http_status=status)


def virtuoso_timeout_ms(timeout_s: float) -> int:
    """The `timeout` Virtuoso is sent for a query kgeval gives `timeout_s`: that less
    VIRTUOSO_TIMEOUT_RESOLUTION_S, so it stops the query before kgeval's deadline, and at least
    the second it reads (under 3 s of budget it may then stop after kgeval's deadline)."""
    return max(_VIRTUOSO_MIN_TIMEOUT_MS, round((timeout_s - VIRTUOSO_TIMEOUT_RESOLUTION_S) * 1000))


def _server_of(headers: Any) -> str:
    """The Server header; Fuseki 5 sends none but marks every answer with Fuseki-Request-Id."""
    server = headers.get("Server", "")
    if not server and headers.get(_FUSEKI_REQUEST_ID):
        return "Fuseki"
    return server


def _partial_answer(endpoint: str, limit_s: float) -> QueryTimeout:
    return QueryTimeout(
        f"{endpoint}: the server stopped the query at its time limit ({limit_s:g} s) and sent a partial "
        "answer (Virtuoso's anytime result, SQL state S1TAT); a partial answer is never scored"
    )


def _read_before(response: Any, deadline: float, timeout_s: float, endpoint: str, max_bytes: int) -> bytes:
    """The body, read within the deadline and at most `max_bytes` long (a GROUP_CONCAT over a
    cross product must not fill the judge's memory); QueryOverBudget beyond."""
    chunks: list[bytes] = []
    size = 0
    while chunk := response.read(_CHUNK):
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise QueryOverBudget(
                f"{endpoint}: the answer is over the {max_bytes:,}-byte limit (store.candidates.max_response_bytes)"
            )
        if time.monotonic() > deadline:
            raise QueryTimeout(f"{endpoint}: query ran longer than {timeout_s:g} s (while reading the answer)")
    return b"".join(chunks)


def _refuse_server_truncation(headers: Any, endpoint: str, limit_s: float) -> None:
    """Virtuoso cuts results at its ResultSetMaxRows and says so only in a header, and answers
    an over-time "anytime" query with partial results: either would make a silently short gold."""
    max_rows = headers.get("X-SPARQL-MaxRows")
    if max_rows:
        raise ServerRowLimit(
            f"{endpoint}: the server cut the result at its own limit of {max_rows} rows "
            "(raise ResultSetMaxRows in virtuoso.ini's [SPARQL] section)"
        )
    state = headers.get("X-SQL-State")
    if state == _ANYTIME_STATE:
        raise _partial_answer(endpoint, limit_s)
    if state:
        raise StoreError(f"{endpoint}: the server returned a partial result ({state}): {headers.get('X-SQL-Message', '')}")


def _virtuoso_ask(doc: dict[str, Any]) -> bool | None:
    """Virtuoso 7.2 answers ASK as a SELECT of `__ASK_RETVAL`: one row holding 1 when true, no
    row when false. None when `doc` is not that shape."""
    try:
        if doc["head"]["vars"] != ["__ASK_RETVAL"]:
            return None
        bindings = doc["results"]["bindings"]
        return any(b.get("__ASK_RETVAL", {}).get("value") not in (None, "0") for b in bindings)
    except (KeyError, TypeError, AttributeError):
        return None


def _error_body(exc: urllib.error.HTTPError, deadline: float) -> tuple[str, bool]:
    """(the start of an error answer, whether it ends in Virtuoso's anytime timeout).

    Virtuoso answers a query its per-request timeout stopped while results were being written
    with HTTP 500: the rows written so far, then `Virtuoso S1TAT Error ...`. The answer is read
    to its end (at most _MAX_ERROR_BYTES, until shortly after the deadline: the server's own
    timeout ends at the client's), keeping its start and its tail."""
    head, tail, size = b"", b"", 0
    try:
        while (chunk := exc.read(_CHUNK)) and size < _MAX_ERROR_BYTES and time.monotonic() < deadline + _ERROR_GRACE_S:
            head = head or chunk[: 4 * _ERROR_BODY_CHARS]
            tail = (tail + chunk)[-_TAIL_BYTES:]
            size += len(chunk)
    except OSError:
        pass
    partial = f"{_ANYTIME_STATE} Error".encode() in tail
    text = " ".join(head.decode("utf-8", "replace").split())
    return text[:_ERROR_BODY_CHARS] or "(no body)", partial


def _snippet(doc: object) -> str:
    return json.dumps(doc)[:_ERROR_BODY_CHARS]


def term_from_json(cell: dict[str, Any] | None, endpoint: str) -> Term | None:
    """One cell of SPARQL JSON results as a Term; None when the variable is unbound in that row."""
    return rows_from_cells([(cell_from_json(cell, endpoint),)])[0][0]


def cell_from_json(cell: dict[str, Any] | None, endpoint: str) -> Cell:
    """One cell of SPARQL JSON results as a plain cell; None when unbound.

    Virtuoso still writes the pre-standard `typed-literal` type: a literal with a datatype.
    """
    if cell is None:
        return None
    kind, value = cell.get("type"), cell.get("value")
    if kind not in ("uri", "bnode", "literal", "typed-literal"):
        raise StoreError(f"{endpoint}: unsupported result cell type {kind!r}: {_snippet(cell)}")
    if not isinstance(value, str):
        raise StoreError(f"{endpoint}: result cell without a string value: {_snippet(cell)}")
    if kind == "uri":
        return ("uri", value, None, None)
    if kind == "bnode":
        return ("bnode", value, None, None)
    datatype, lang = cell.get("datatype"), cell.get("xml:lang")
    if not isinstance(datatype, str | None) or not isinstance(lang, str | None):
        raise StoreError(f"{endpoint}: result cell with a malformed datatype or language: {_snippet(cell)}")
    if datatype in _CANONICAL_NUMBERS:
        value = _CANONICAL_NUMBERS[datatype](value)
    return literal_cell(value, datatype, lang)


def _canonical_integer(value: str) -> str:
    text = value.strip()
    if not _INTEGER.fullmatch(text):
        return value  # not an xsd:integer lexical form: kept as the server wrote it
    return str(int(text))


def _canonical_decimal(value: str) -> str:
    """Without leading zeros, trailing fractional zeros, or a fraction that is zero."""
    text = value.strip()
    if not _DECIMAL.fullmatch(text):
        return value  # not an xsd:decimal lexical form: kept as the server wrote it
    number = Decimal(text)
    spelled = f"{number:f}"
    if "." in spelled:
        spelled = spelled.rstrip("0").rstrip(".")
    return "0" if spelled in ("-0", "") else spelled


_INTEGER = re.compile(r"[+-]?\d+")
_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)")
_CANONICAL_NUMBERS: dict[str, Callable[[str], str]] = {XSD + "integer": _canonical_integer, XSD + "decimal": _canonical_decimal}
"""Fuseki answers with the data's own lexical form of a number (`0.50`, `007`); Oxigraph (the
embedded store) and Virtuoso with the canonical one (`0.5`, `7`). The same value must make the
same gold wherever it was rebuilt (docs/engines.md)."""
