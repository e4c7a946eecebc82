"""How large a value a query can build, estimated from its text before any store runs it.

A few string functions let a short query build a huge value: forty chained
`BIND(CONCAT(?a, ?a) AS ?b)` double a 16-byte string to 16 TB. No engine here stops that by
its own limits: Oxigraph server's `--timeout-s`, Virtuoso's `MaxQueryExecutionTime`, its
per-request `timeout` and its `MaxQueryMem` all leave the evaluation of one row's expressions
running (measured: both servers grow past 6 GB and keep a core busy long after kgeval stopped
waiting). So a candidate query is refused before it is sent when the largest value it can build
is over `store.candidates.max_value_bytes`, whatever the store.

The estimate reads the guard's grammar tree: a string literal is its length, a variable bound
by BIND or `(... AS ?v)` is the estimate of its expression, any other variable holds a data
value taken to be `assumed_value_bytes` long; CONCAT adds its arguments, REPLACE can put the
replacement at every character, ENCODE_FOR_URI, UCASE and LCASE can triple a string, and every
other expression is at most as large as its largest argument. It over-estimates on purpose;
legitimate queries stay orders of magnitude below the cap (tests/stores/test_value_size.py runs
every reference query of CK25 and the sample holdout through it).
"""

from __future__ import annotations

import re
from functools import lru_cache

import tree_sitter

from kgeval.stores._query import parsed_tree

_CEILING = 1e30
"""Estimates stop growing here (a float never overflows on a hostile chain)."""
_SCALAR_BYTES = 64.0
"""A number, boolean, or any other non-string leaf."""
_TRIPLING = {"ENCODE_FOR_URI", "UCASE", "LCASE"}
"""%XX for every byte; case mapping of some characters yields up to three."""
_BUILDERS = {"CONCAT", "REPLACE", *_TRIPLING}
"""The calls whose value can be larger than their largest argument: what the cap is about."""
_BUILDER_WORDS = re.compile("|".join(sorted(_BUILDERS)), re.IGNORECASE)
"""Any of `_BUILDERS` in a text, in any case (keywords are case-insensitive)."""


@lru_cache(maxsize=4096)
def estimated_value_bytes(canonical: str, assumed_value_bytes: int) -> float:
    """The largest value (UTF-8 bytes) the query `canonical` (a `QueryShape.text`) may build,
    with every data value taken to be `assumed_value_bytes` long."""
    if _BUILDER_WORDS.search(canonical) is None:
        return 0.0  # no builder's keyword in the text the tree is parsed from: no builder node
    root = parsed_tree(canonical).root_node
    data = float(assumed_value_bytes)
    bound: dict[str, float] = {}
    definitions = _definitions(root)
    for _ in range(2):  # the second pass sees variables used before the text defines them
        for name, expression in definitions:
            bound[name] = max(bound.get(name, 0.0), _sizes(expression, bound, data)[expression.id])
    sizes = _sizes(root, bound, data)  # every expression: FILTER, ORDER BY, HAVING too
    built = [sizes[n.id] for n in _nodes(root) if n.child_count and n.children[0].type in _BUILDERS]
    return max(built, default=0.0)  # a data value the query only reads is not its doing


def _definitions(root: tree_sitter.Node) -> list[tuple[str, tree_sitter.Node]]:
    """(variable, expression) of every BIND, `(expression AS ?v)` and GROUP BY condition, in
    document order but each SELECT's projection after its WHERE and GROUP BY (it reads them)."""
    found: list[tuple[str, tree_sitter.Node]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in ("bind", "select_clause", "group_condition"):
            found.extend(_bound_here(node))
            continue
        children = node.children
        if node.type in ("select_query", "sub_select"):
            children = sorted(children, key=lambda c: c.type == "select_clause")  # stable: projection last
        stack.extend(reversed(children))
    return found


def _bound_here(node: tree_sitter.Node) -> list[tuple[str, tree_sitter.Node]]:
    """The (variable, expression) pairs `node` (a BIND, projection or GROUP BY condition) binds."""
    items = node.children
    pairs = []
    for i, item in enumerate(items):
        if item.type == "AS" and 0 < i < len(items) - 1 and items[i + 1].type == "var":
            pairs.append((_text(items[i + 1]), items[i - 1]))
    return pairs


def _sizes(expression: tree_sitter.Node, bound: dict[str, float], data: float) -> dict[int, float]:
    """The estimate of every node under `expression` (by node id), computed bottom-up without
    recursion: chains of calls can be long."""
    sizes: dict[int, float] = {}
    for node in reversed(_nodes(expression)):  # children before their parent
        sizes[node.id] = min(_CEILING, _node_size(node, [sizes[c.id] for c in node.children], bound, data))
    return sizes


def _nodes(top: tree_sitter.Node) -> list[tree_sitter.Node]:
    """Every node under `top`, each before its children."""
    order: list[tree_sitter.Node] = []
    stack = [top]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.children)
    return order


def _node_size(node: tree_sitter.Node, children: list[float], bound: dict[str, float], data: float) -> float:
    if node.type == "var":
        return bound.get(_text(node), data)
    if node.type in ("string", "iri_reference"):
        return float(node.end_byte - node.start_byte)
    if node.child_count == 0:
        return _SCALAR_BYTES if node.is_named else 0.0  # a number; not a keyword or punctuation
    head = node.children[0].type
    if head == "CONCAT" or (node.type == "expression_list" and node.parent is not None and node.parent.children[0].type == "CONCAT"):
        return sum(size for child, size in zip(node.children, children) if child.is_named)
    if head == "REPLACE" and node.named_child_count >= 3:
        text, _, replacement = [size for child, size in zip(node.children, children) if child.is_named][:3]
        return text + (text + 1) * replacement  # the replacement at every position, at worst
    if head in _TRIPLING:
        return 3 * max(children)
    return max(children)


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8")
