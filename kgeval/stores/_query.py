"""Query analysis and the read-only guard, by parsing with rdflib (never by regular expression).

Every query a store executes, reference or candidate, goes through `guard_query` first
(DESIGN invariant 12): updates, SERVICE clauses, CONSTRUCT/DESCRIBE and over-long queries are
refused before any store sees them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pyparsing import ParseException
from rdflib.plugins.sparql.algebra import translateQuery
from rdflib.plugins.sparql.parser import parseQuery, parseUpdate
from rdflib.plugins.sparql.parserutils import CompValue

from kgeval.errors import QueryRefused, QuerySyntaxError

DEFAULT_MAX_QUERY_BYTES = 20_000
# rdflib's SPARQL grammar (pyparsing) keeps parse state in shared objects: two threads parsing
# at once corrupt each other ("postParse2() missing ... tokenList"). Runs execute candidates
# from several threads, so parsing is serialized; execution in the store is not.
_PARSE_LOCK = threading.Lock()
_MODIFIERS = {"Project", "Distinct", "Reduced", "Slice", "ToMultiSet"}


@dataclass(frozen=True)
class QueryShape:
    """What the parser says about a query."""

    form: Literal["select", "ask"]
    ordered: bool
    """The solution sequence is ordered (ORDER BY at the top level)."""
    limit: int | None
    """LIMIT, when there is one."""
    offset: int
    """OFFSET, 0 when there is none."""
    variables: tuple[str, ...]
    """Projected variables in order (SELECT only)."""


def guard_query(text: str, *, max_bytes: int = DEFAULT_MAX_QUERY_BYTES) -> QueryShape:
    """Analyse `text` and refuse anything that is not a read-only SELECT or ASK."""
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise QueryRefused(f"query is {size} bytes, over the {max_bytes}-byte limit")
    with _PARSE_LOCK:
        return _analyse(text)


@lru_cache(maxsize=4096)
def _analyse(text: str) -> QueryShape:
    try:
        parsed = parseQuery(text)
    except ParseException as exc:
        if _is_update(text):
            raise QueryRefused("updates (INSERT, DELETE, LOAD, CLEAR, DROP, CREATE, ADD, MOVE, COPY) are refused") from None
        raise QuerySyntaxError(f"SPARQL does not parse: {exc}") from None
    if _contains(parsed, "ServiceGraphPattern"):
        raise QueryRefused("SERVICE clauses are refused: a query may only read the store it is sent to")
    try:
        algebra = translateQuery(parsed).algebra
    except Exception as exc:  # rdflib raises bare Exceptions, e.g. for an unknown prefix
        raise QuerySyntaxError(f"SPARQL does not parse: {exc}") from None
    if algebra.name == "AskQuery":
        return QueryShape("ask", False, None, 0, ())
    if algebra.name != "SelectQuery":
        form = algebra.name.removesuffix("Query").upper()
        raise QueryRefused(f"{form} queries are not supported: only SELECT and ASK")
    return _select_shape(algebra)


def _select_shape(algebra: CompValue) -> QueryShape:
    ordered, limit, offset = False, None, 0
    node = algebra.p
    while isinstance(node, CompValue) and (node.name in _MODIFIERS or node.name == "OrderBy"):
        if node.name == "Slice":
            limit, offset = node.length, node.start or 0
        if node.name == "OrderBy":
            ordered = True
        node = node.p
    variables = tuple(str(v) for v in algebra.PV)
    return QueryShape("select", ordered, limit, offset, variables)


def _is_update(text: str) -> bool:
    try:
        parseUpdate(text)
    except ParseException:
        return False
    return True


def _contains(node: Any, name: str) -> bool:
    """True when a parse-tree node named `name` appears anywhere below `node`."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, CompValue):
            if item.name == name:
                return True
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif hasattr(item, "asList") and not isinstance(item, str):
            stack.extend(list(item))
    return False


def query_algebra(text: str) -> CompValue:
    """The SPARQL algebra of a query that parses (rdflib), under the parse lock that every
    parse in a run shares; raises QuerySyntaxError when it does not parse."""
    with _PARSE_LOCK:
        return _algebra(text)


@lru_cache(maxsize=1024)
def _algebra(text: str) -> CompValue:
    try:
        return translateQuery(parseQuery(text)).algebra
    except Exception as exc:  # noqa: BLE001 - rdflib raises bare Exceptions (unknown prefix ...)
        raise QuerySyntaxError(f"SPARQL does not parse: {exc}") from None
