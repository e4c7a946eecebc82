"""Rewriting a SELECT query through its parse tree: the unlimited "order probe".

Deciding whether an ORDER BY … LIMIT k answer has ties at the cut needs the rows beyond the
cut and each row's ORDER BY key. The probe is the same query with LIMIT/OFFSET removed,
DISTINCT/REDUCED removed (applied again by the caller, keeping first occurrences, as SPARQL
does), and every ORDER BY expression projected as an extra column.

The edit is made on spans that rdflib's own SPARQL grammar locates (the grammar's elements
recombined under pyparsing's `Located`), never by searching the query text. rdflib's algebra
serializer (`translateAlgebra`) was tried first and rejected: it garbles aggregates and HAVING.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import rdflib.plugins.sparql.parser as sp
from rdflib.plugins.sparql.algebra import translateQuery
from rdflib.plugins.sparql.parser import parseQuery
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Variable
from pyparsing import Keyword, Literal, Located, OneOrMore, Optional, ParseException, ParserElement, ZeroOrMore, rest_of_line

from kgeval.errors import QuerySyntaxError
from kgeval.stores._query import guard_query

KEY_PREFIX = "__kgeval_key"


@dataclass(frozen=True)
class OrderProbe:
    """The unlimited, key-projecting version of an ordered SELECT query."""

    text: str
    """The probe query: no LIMIT/OFFSET, no DISTINCT/REDUCED, ORDER BY keys projected last."""
    key_vars: tuple[str, ...]
    """For each ORDER BY condition, the probe variable holding its key: a projected variable
    itself, or an extra `__kgeval_keyN` column. Callers find columns by name, since engines
    order `SELECT *` columns as they like."""
    distinct: bool
    """The original query had DISTINCT or REDUCED: keep each projected row's first occurrence."""
    descending: tuple[bool, ...]
    """For each key, whether it sorts descending (informational)."""


def _build_locator() -> ParserElement:
    projection = OneOrMore(sp.Var | (Literal("(") + sp.Expression + Keyword("AS") + sp.Var + ")")) | Literal("*")
    select_clause = (
        Keyword("SELECT")
        + Optional(Located(Keyword("DISTINCT") | Keyword("REDUCED"))("modifier"))
        + Located(projection)("projection")
    )
    condition = (Keyword("ASC") | Keyword("DESC"))("dir") + Located(sp.BrackettedExpression)("expr") | Located(
        sp.Constraint | sp.Var
    )("expr")
    order_clause = Keyword("ORDER") + Keyword("BY") + OneOrMore(Located(condition)("condition*"))
    locator = (
        sp.Prologue
        + select_clause
        + ZeroOrMore(sp.DatasetClause)
        + sp.WhereClause
        + Optional(sp.GroupClause)
        + Optional(sp.HavingClause)
        + Optional(order_clause)
        + Optional(Located(sp.LimitOffsetClauses)("limitoffset"))
        + sp.ValuesClause
    )
    locator.ignore("#" + rest_of_line)
    return locator


_LOCATOR = _build_locator()


@lru_cache(maxsize=1024)
def order_probe(query: str) -> OrderProbe:
    """The order probe of a SELECT query (see the module docstring). Without ORDER BY it has
    no key columns: every row shares the empty key.

    Raises QuerySyntaxError when the query is not a SELECT the grammar locates.
    """
    shape = guard_query(query)
    if shape.form != "select":
        raise QuerySyntaxError("an order probe needs a SELECT query")
    text = sp.expandUnicodeEscapes(query)
    try:
        parsed = _LOCATOR.parse_string(text, parse_all=True)
    except ParseException as exc:
        raise QuerySyntaxError(f"cannot locate the solution modifiers: {exc}") from None
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement), non-overlapping
    if "modifier" in parsed:
        edits.append((parsed["modifier"].locn_start, parsed["modifier"].locn_end, ""))
    conditions = _order_conditions(query)
    keys, key_vars, descending = [], [], []
    for i, cond in enumerate(parsed.get("condition", [])):
        expr = cond["value"]["expr"]
        descending.append(cond["value"].get("dir") == "DESC")
        var = _plain_variable(expr["value"], conditions[i].expr if i < len(conditions) else None)
        if var is not None and var in shape.variables:
            key_vars.append(var)
            continue
        key_vars.append(f"{KEY_PREFIX}{i}")
        keys.append(f"({text[expr.locn_start:expr.locn_end]} AS ?{KEY_PREFIX}{i})")
    proj = parsed["projection"]
    star = text[proj.locn_start:proj.locn_end].strip() == "*"
    columns = " ".join(f"?{v}" for v in shape.variables) if star else text[proj.locn_start:proj.locn_end]
    edits.append((proj.locn_start, proj.locn_end, f"{columns} {' '.join(keys)}"))
    if "limitoffset" in parsed:
        edits.append((parsed["limitoffset"].locn_start, parsed["limitoffset"].locn_end, ""))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + f" {replacement} " + text[end:]
    guard_query(text)
    return OrderProbe(text, tuple(key_vars), "modifier" in parsed, tuple(descending))


def _plain_variable(tokens: object, algebra_expr: object) -> str | None:
    """The variable an ORDER BY condition sorts by, when it is a bare (or bracketted) one."""
    if isinstance(algebra_expr, Variable) and not str(algebra_expr).startswith("__agg_"):
        return str(algebra_expr)
    if len(tokens) == 1 and isinstance(tokens[0], Variable):  # type: ignore[arg-type,index]
        return str(tokens[0])  # type: ignore[index]
    return None


def _order_conditions(query: str) -> list:
    """The top-level ORDER BY conditions as rdflib's algebra sees them (a bracketted variable
    is a Variable there; an aggregate is an `__agg_N__` variable, never a projected one)."""
    node = translateQuery(parseQuery(query)).algebra.p
    while isinstance(node, CompValue):
        if node.name == "OrderBy":
            return list(node.expr)
        node = node.p
    return []


_VOLATILE = {
    "Builtin_RAND": "RAND()",
    "Builtin_NOW": "NOW()",
    "Builtin_UUID": "UUID()",
    "Builtin_STRUUID": "STRUUID()",
    "Builtin_BNODE": "BNODE()",
}
_ENGINE_CHOICE = {
    "Aggregate_Sample": "SAMPLE() picks an engine-chosen value",
    "Aggregate_GroupConcat": "GROUP_CONCAT() concatenates in an engine-chosen order",
}
_XSD = "http://www.w3.org/2001/XMLSchema#"
_SPARQL_CASTS = {_XSD + t for t in ("integer", "decimal", "float", "double", "string", "boolean", "dateTime")}


@dataclass(frozen=True)
class Determinism:
    """What the parser says about whether a query's answer is determined by the data."""

    volatile: tuple[str, ...]
    """Functions whose value changes between executions (RAND(), NOW(), UUID(), ...)."""
    engine_dependent: tuple[str, ...]
    """Why another engine may answer differently: engine-chosen values or orders, a LIMIT
    without ORDER BY, functions outside SPARQL 1.1 (an xsd:int cast, a vendor function)."""


@lru_cache(maxsize=4096)
def query_determinism(query: str) -> Determinism:
    """Scan the query for volatile functions and engine-dependent constructs.

    Built-in calls and aggregates are read from the parse tree (rdflib's algebra adds SAMPLE
    around grouped variables itself); function IRIs from the algebra, where prefixes are resolved.
    """
    shape = guard_query(query)
    volatile, engine = set(), set()
    for node in _nodes(parseQuery(query)):
        if node.name in _VOLATILE:
            volatile.add(_VOLATILE[node.name])
        elif node.name in _ENGINE_CHOICE:
            engine.add(_ENGINE_CHOICE[node.name])
    for node in _nodes(translateQuery(parseQuery(query)).algebra):
        if node.name == "Function" and str(node.get("iri")) not in _SPARQL_CASTS:
            engine.add(f"calls <{node.get('iri')}>, which is not a SPARQL 1.1 function")
    if shape.form == "select" and not shape.ordered and (shape.limit is not None or shape.offset):
        engine.add("LIMIT/OFFSET without ORDER BY: which rows are kept is up to the engine")
    return Determinism(tuple(sorted(volatile)), tuple(sorted(engine)))


def _nodes(tree: object) -> list[CompValue]:
    """Every CompValue below `tree` (parse tree or algebra)."""
    found, stack = [], [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, CompValue):
            found.append(item)
            stack.extend(v for k, v in item.items() if k != "_vars")
        elif isinstance(item, (list, tuple, set)):
            stack.extend(item)
        elif hasattr(item, "as_list") and not isinstance(item, str):
            stack.extend(list(item))
    return found
