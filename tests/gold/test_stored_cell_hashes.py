"""The streamed gold scan (`kgeval/gold/_index.py`) checks each result against its
result_sha256 on the cells as stored, spelt without building a Term or a tuple per cell: the
hash must be the one `QueryResult.sha256()` gives on the typed result, for every kind of cell."""

from __future__ import annotations

import json

from kgeval.gold._index import _matches, _VERIFIED
from kgeval.stores import QueryResult, Term

CELLS = [
    Term.iri("http://example.org/a b/ä#x"),
    Term.literal('say "hi"\\ there\nand\rback'),
    Term.literal("Abteilung", lang="DE"),
    Term.literal("1.50", "http://www.w3.org/2001/XMLSchema#decimal"),
    Term.literal("plain", "http://www.w3.org/2001/XMLSchema#string"),
    Term.bnode("b0"),
    None,
]


def _stored(result: QueryResult) -> dict:
    """The result as the gold file holds it (JSON)."""
    return json.loads(result.model_dump_json())


def test_the_scan_hashes_every_kind_of_cell_as_the_typed_result_does():
    for ordered in (False, True):
        rows = [[CELLS[i], CELLS[(i + 3) % len(CELLS)]] for i in range(len(CELLS))]
        result = QueryResult(form="select", vars=["x", "y"], rows=rows, total=len(rows) + 5, truncated=True, ordered=ordered)
        _VERIFIED.clear()
        assert _matches(_stored(result), f"digest-{ordered}", result.sha256())
    ask = QueryResult(form="ask", boolean=True, total=1)
    assert _matches(_stored(ask), "digest-ask", ask.sha256())


def test_the_scan_refuses_a_result_one_cell_away_from_its_hash():
    rows = [[cell] for cell in CELLS]
    result = QueryResult(form="select", vars=["x"], rows=rows, total=len(rows))
    expected = result.sha256()
    for n, cell in enumerate(CELLS):
        if cell is None:
            continue
        stored = _stored(result)
        stored["rows"][n][0]["value"] += "x" if cell.type != "bnode" else ""
        stored["rows"][n][0]["lang" if cell.lang else "type"] = cell.lang.upper() if cell.lang else ("bnode" if cell.type != "bnode" else "uri")
        _VERIFIED.clear()
        assert not _matches(stored, f"tampered-{n}", expected), cell
