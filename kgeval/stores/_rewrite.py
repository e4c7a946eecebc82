"""Reading more from a guarded query's tree: the unlimited "order probe", and determinism.

Deciding whether an ORDER BY … LIMIT k answer has ties at the cut needs the rows beyond the
cut and each row's ORDER BY key. The probe is the same query with LIMIT/OFFSET removed,
DISTINCT/REDUCED removed (applied again by the caller, keeping first occurrences, as SPARQL
does), and every ORDER BY expression projected as an extra column.

Both work on the guard's canonical text (`QueryShape.text`) and its grammar tree, never by
searching the text: keywords are matched by the grammar in any case (`select`, `order by`,
`(count(*) as ?n)`), and comments and escapes are already gone. The probe is an edit of spans
of that tree, and is guarded again before it is returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import tree_sitter

from kgeval.errors import QuerySyntaxError
from kgeval.stores._query import _SUB_SELECTS, LANGUAGE, guard_query, parsed_tree

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


@lru_cache(maxsize=4096)
def order_probe(query: str) -> OrderProbe:
    """The order probe of a SELECT query (see the module docstring). Without ORDER BY it has
    no key columns: every row shares the empty key.

    Raises QuerySyntaxError when the query is not a SELECT, QueryRefused as the guard does.
    """
    shape = guard_query(query)
    if shape.form != "select":
        raise QuerySyntaxError("an order probe needs a SELECT query")
    select_query = next(c for c in parsed_tree(shape.text).root_node.named_children if c.type == "select_query")
    select = _child(select_query, "select_clause")
    modifier = _child(select_query, "solution_modifier")
    edits: list[tuple[int, int, str]] = []  # (start byte, end byte, replacement), non-overlapping
    distinct = next((c for c in select.children if c.type in ("DISTINCT", "REDUCED")), None)
    if distinct is not None:
        edits.append((distinct.start_byte, distinct.end_byte, ""))
    keys, key_vars, descending = _order_keys(_child(modifier, "order_clause"), shape.variables)
    projection = [c for c in select.children if c.type not in ("SELECT", "DISTINCT", "REDUCED")]
    star = any(c.type == "*" for c in projection)
    columns = " ".join(f"?{v}" for v in shape.variables) if star else " ".join(_text(c) for c in projection)
    edits.append((projection[0].start_byte, projection[-1].end_byte, " ".join([columns, *keys])))
    limits = _child(modifier, "limit_offset_clauses")
    if limits is not None:
        edits.append((limits.start_byte, limits.end_byte, ""))
    data = shape.text.encode("utf-8")
    for start, end, replacement in sorted(edits, reverse=True):
        data = data[:start] + replacement.encode("utf-8") + data[end:]
    probe = guard_query(data.decode("utf-8"))
    return OrderProbe(probe.text, tuple(key_vars), distinct is not None, tuple(descending))


@lru_cache(maxsize=4096)
def order_variables(query: str) -> tuple[str, ...] | None:
    """The variables of a SELECT query's top-level ORDER BY, in order; None when the query has
    no ORDER BY or a condition sorts by anything but a (bracketted) variable."""
    shape = guard_query(query)
    if not shape.ordered:
        return None
    select_query = next(c for c in parsed_tree(shape.text).root_node.named_children if c.type == "select_query")
    order_clause = _child(_child(select_query, "solution_modifier"), "order_clause")
    names = [_plain_variable(c.children[-1]) for c in _children(order_clause, "order_condition")]
    return None if None in names else tuple(names)  # type: ignore[arg-type]


@lru_cache(maxsize=4096)
def limited_sub_selects(query: str) -> tuple[str, ...]:
    """Every sub-select with LIMIT or OFFSET, at any depth, as a query of its own (the
    prologue and the sub-select's text), guarded. SPARQL evaluates a sub-select bottom-up, on
    its own, so that query returns exactly the rows it joins into the whole; when its cut goes
    through tied rows, the engine's choice among them is part of the whole answer."""
    root = parsed_tree(guard_query(query).text).root_node
    prologue = _child(root, "prologue")
    head = _text(prologue) + " " if prologue is not None else ""
    selects = tree_sitter.QueryCursor(_SUB_SELECTS).captures(root).get("select", [])
    limited = [n for n in sorted(selects, key=lambda n: n.start_byte) if _child(_child(n, "solution_modifier"), "limit_offset_clauses")]
    return tuple(guard_query(head + _text(n)).text for n in limited)


def _order_keys(order_clause: tree_sitter.Node | None, projected: tuple[str, ...]) -> tuple[list[str], list[str], list[bool]]:
    """(extra key columns to project, the key variable of each condition, which descend)."""
    keys, key_vars, descending = [], [], []
    for i, condition in enumerate(_children(order_clause, "order_condition")):
        descending.append(condition.children[0].type == "DESC")
        expression = condition.children[-1]
        var = _plain_variable(expression)
        if var is not None and var in projected:
            key_vars.append(var)
            continue
        key_vars.append(f"{KEY_PREFIX}{i}")
        keys.append(f"( {_text(expression)} AS ?{KEY_PREFIX}{i} )")
    return keys, key_vars, descending


def _plain_variable(expression: tree_sitter.Node) -> str | None:
    """The variable an ORDER BY condition sorts by, when it is a bare (or bracketted) one."""
    node = expression
    while node.type == "bracketted_expression" and len(node.named_children) == 1:
        node = node.named_children[0]
    return _text(node)[1:] if node.type == "var" else None


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8")


def _child(node: tree_sitter.Node | None, kind: str) -> tree_sitter.Node:
    found = next((c for c in node.children if c.type == kind), None) if node is not None else None
    return found  # type: ignore[return-value]


def _children(node: tree_sitter.Node | None, kind: str) -> list[tree_sitter.Node]:
    return [c for c in node.children if c.type == kind] if node is not None else []


_VOLATILE = {"RAND": "RAND()", "NOW": "NOW()", "UUID": "UUID()", "STRUUID": "STRUUID()", "BNODE": "BNODE()"}
_ENGINE_CHOICE = {
    "SAMPLE": "SAMPLE() picks an engine-chosen value",
    "GROUP_CONCAT": "GROUP_CONCAT() concatenates in an engine-chosen order",
}
_CALLS = tree_sitter.Query(LANGUAGE, "(build_in_function) @builtin (aggregate) @aggregate (function_call) @function")
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
    """Scan the query's tree for volatile functions and engine-dependent constructs: built-in
    calls and aggregates by their keyword, called function IRIs with prefixes resolved."""
    shape = guard_query(query)
    root = parsed_tree(shape.text).root_node
    prefixes = _prefixes(root)
    calls = tree_sitter.QueryCursor(_CALLS).captures(root)
    volatile = {_VOLATILE[n.children[0].type] for n in calls.get("builtin", []) if n.children[0].type in _VOLATILE}
    engine = {_ENGINE_CHOICE[n.children[0].type] for n in calls.get("aggregate", []) if n.children[0].type in _ENGINE_CHOICE}
    for node in calls.get("function", []):
        iri = _iri(node.children[0], prefixes)
        if iri not in _SPARQL_CASTS:
            engine.add(f"calls <{iri}>, which is not a SPARQL 1.1 function")
    if shape.form == "select" and not shape.ordered and (shape.limit is not None or shape.offset):
        engine.add("LIMIT/OFFSET without ORDER BY: which rows are kept is up to the engine")
    return Determinism(tuple(sorted(volatile)), tuple(sorted(engine)))


def _prefixes(root: tree_sitter.Node) -> dict[str, str]:
    """PREFIX declarations of the prologue (the canonical text declares every prefix used)."""
    declared = {}
    for declaration in _children(_child(root, "prologue"), "prefix_declaration"):
        namespace, iri = _child(declaration, "namespace"), _child(declaration, "iri_reference")
        declared[_text(namespace).removesuffix(":")] = _text(iri)[1:-1]
    return declared


def _iri(node: tree_sitter.Node, prefixes: dict[str, str]) -> str:
    """The IRI of an `iri_reference` or `prefixed_name` node."""
    text = _text(node)
    if node.type == "iri_reference":
        return text[1:-1]
    prefix, _, local = text.partition(":")
    return prefixes.get(prefix, prefix + ":") + local


NEPTUNE_HINTS = "http://aws.amazon.com/neptune/vocab/v01/QueryHints#"


@lru_cache(maxsize=4096)
def with_neptune_timeout_hint(query: str, timeout_ms: int) -> str:
    """The query with Neptune's `queryTimeout` hint first in its top-level WHERE clause, so
    Neptune itself stops it after `timeout_ms` (its SPARQL protocol has no timeout parameter).
    Full IRIs, no PREFIX: the hint cannot clash with the query's own prefixes. Guarded again."""
    shape = guard_query(query)
    top = next(c for c in parsed_tree(shape.text).root_node.named_children if c.type.endswith("_query"))
    opening = _child(_child(_child(top, "where_clause"), "group_graph_pattern"), "{")
    hint = f" <{NEPTUNE_HINTS}Query> <{NEPTUNE_HINTS}queryTimeout> {int(timeout_ms)} ."
    data = shape.text.encode("utf-8")
    return guard_query((data[: opening.end_byte] + hint.encode() + data[opening.end_byte :]).decode("utf-8")).text


COUNT_VAR = "__kgeval_count"


@lru_cache(maxsize=4096)
def sorted_rows_count_query(query: str) -> str:
    """`SELECT (COUNT(*) AS ?__kgeval_count)` over a SELECT query without its top-level ORDER
    BY, LIMIT and OFFSET: how many solutions the engine must sort to answer it. Guarded again."""
    shape = guard_query(query)
    root = parsed_tree(shape.text).root_node
    select_query = next(c for c in root.named_children if c.type == "select_query")
    modifier = _child(select_query, "solution_modifier")
    cut = [n for n in (_child(modifier, "order_clause"), _child(modifier, "limit_offset_clauses")) if n is not None]
    data = shape.text.encode("utf-8")
    prologue = _child(root, "prologue")
    head = data[: prologue.end_byte] if prologue is not None else b""
    body = data[select_query.start_byte : select_query.end_byte]
    for node in sorted(cut, key=lambda n: n.start_byte, reverse=True):
        start, end = node.start_byte - select_query.start_byte, node.end_byte - select_query.start_byte
        body = body[:start] + body[end:]
    text = f"{head.decode()} SELECT (COUNT(*) AS ?{COUNT_VAR}) WHERE {{ {{ {body.decode()} }} }}"
    return guard_query(text).text
