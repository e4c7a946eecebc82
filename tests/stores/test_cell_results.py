"""`Store.execute_cells` (plain cells, the gold rebuild's path) answers exactly as `execute`
(typed Terms): the same rows in the same order, the same total and flags, the same hash, on
the embedded store (its own cell path) and on real SPARQL servers (the default conversion),
for every question of the test holdouts, with a row cap that cuts unordered results."""

from __future__ import annotations

import pytest

from kgeval.stores import CellResult, EmbeddedStore, Store, open_store

MESSY = [  # beside the holdouts' own queries: mixed case, comments, blank nodes, aggregates
    "prefix t: <http://example.org/types/>\nselect * where { ?s t:addr ?x . ?x ?p ?o } # blank nodes, unordered",
    "PREFIX t: <http://example.org/types/>\nSelect ?o (count(*) as ?n) WHERE { ?s ?p ?o } group by ?o order by desc(?n) ?o limit 3",
    "PREFIX t: <http://example.org/types/>\nSELECT ?n WHERE { { SELECT ?n WHERE { t:a t:name ?n } ORDER BY ?n } } OFFSET 1",
    "ask { ?s ?p ?o }",
]


def _compare(store: Store, query: str, row_cap: int) -> None:
    typed = store.execute(query, timeout_s=30, row_cap=row_cap)
    cells = store.execute_cells(query, timeout_s=30, row_cap=row_cap)
    assert isinstance(cells, CellResult)
    assert cells.typed() == typed, query
    assert cells.sha256() == typed.sha256(), query


def _queries(label: str, kg) -> list[str]:  # noqa: ANN001
    return [q.sparql for q in kg.questions] + (MESSY if label == "types" else [])


@pytest.mark.parametrize("row_cap", [2000, 2])
def test_embedded_cells_equal_typed_results(server_holdouts, row_cap):
    compared = 0
    for label, holdout in server_holdouts.items():
        for kg in holdout.kgs:
            store = EmbeddedStore(kg.files)
            for query in _queries(label, kg):
                _compare(store, query, row_cap)
                compared += 1
            store.close()
    assert compared >= 20


def test_server_cells_equal_typed_results(oxigraph_server, server_holdouts):
    for label, holdout in server_holdouts.items():
        config = oxigraph_server.config(label)
        for kg in holdout.kgs:
            store = open_store(config, kg.files, kg.id)
            for query in _queries(label, kg):
                _compare(store, query, 2)
