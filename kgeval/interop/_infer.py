"""Question type and order sensitivity of an imported question, read from its reference query
as kgeval.stores reads it (the guard's shape and the query algebra): no second parser.

Types, in the order they are tried: ask (ASK form); count (COUNT the only aggregate, no GROUP
BY); aggregate (any other aggregate, or a GROUP BY, at the top level or in a sub-select the
answer comes from); lookup (LIMIT 1, or one projected variable bound from a fixed subject:
`ex:alice ex:worksIn ?d`); list (anything else). ORDER BY with LIMIT adds order-limit.
"""

from __future__ import annotations

from typing import Any

from rdflib.term import Variable

from kgeval.holdout import Tag
from kgeval.stores import QueryShape, guard_query, query_algebra

# algebra nodes between a SELECT and the pattern its answer comes from
_PASS_THROUGH = {"Project", "Extend", "Distinct", "Reduced", "Slice", "OrderBy", "Filter", "ToMultiSet"}


def inferred_tags(sparql: str) -> list[str]:
    """The question's type tag (and order-limit) from its reference query, sorted."""
    shape = guard_query(sparql)
    tags = {_query_type(sparql, shape)}
    if shape.ordered and shape.limit is not None:
        tags.add(Tag.ORDER_LIMIT)
    return sorted(t.value for t in tags)


def has_order_by(sparql: str) -> bool:
    """The reference query orders its solutions (top-level ORDER BY)."""
    return guard_query(sparql).ordered


def _query_type(sparql: str, shape: QueryShape) -> Tag:
    if shape.form == "ask":
        return Tag.ASK
    node = query_algebra(sparql).p
    while _name(node) in _PASS_THROUGH:
        node = node.get("p")
    if _name(node) == "AggregateJoin":
        aggregates = {a.name for a in node.A} - {"Aggregate_Sample"}  # rdflib adds SAMPLE for group keys
        grouped = node.p.get("expr") is not None
        return Tag.COUNT if aggregates == {"Aggregate_Count"} and not grouped else Tag.AGGREGATE
    if shape.limit == 1 or (len(shape.variables) == 1 and _bound_from_fixed_subject(node)):
        return Tag.LOOKUP
    return Tag.LIST


def _name(node: Any) -> str | None:
    return getattr(node, "name", None)


def _bound_from_fixed_subject(node: Any) -> bool:
    """The pattern is one basic graph pattern whose every triple has a fixed subject."""
    triples = node.get("triples") if _name(node) == "BGP" else None
    return bool(triples) and all(not isinstance(s, Variable) for s, _, _ in triples)
