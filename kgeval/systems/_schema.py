"""The KG schema summary a model sees: its classes and predicates, most used first."""

from __future__ import annotations

from kgeval.stores import Store

_CLASSES = "SELECT ?c (COUNT(?s) AS ?n) WHERE {{ ?s a ?c }} GROUP BY ?c ORDER BY DESC(?n) ?c LIMIT {k}"
_PREDICATES = "SELECT ?p (COUNT(*) AS ?n) WHERE {{ ?s ?p ?o }} GROUP BY ?p ORDER BY DESC(?n) ?p LIMIT {k}"


def schema_summary(store: Store, *, classes: int = 40, predicates: int = 60, timeout_s: float = 60.0) -> str:
    """Two lines a prompt can carry: classes with instance counts, predicates with use counts."""
    lines = []
    for title, template, k in (("Classes (instances)", _CLASSES, classes), ("Predicates (uses)", _PREDICATES, predicates)):
        result = store.execute(template.format(k=k), timeout_s=timeout_s, row_cap=k)
        shown = [f"<{row[0].value}> ({row[1].value})" for row in result.rows if row[0] is not None and row[1] is not None]
        lines.append(f"{title}: " + (", ".join(shown) or "none"))
    return "\n".join(lines)
