from pathlib import Path

import pytest

from kgeval.errors import InputError, QueryRefused, QueryTimeout
from kgeval.stores import EmbeddedStore, Term
from tests.conftest import UNENDING

XSD = "http://www.w3.org/2001/XMLSchema#"


@pytest.fixture
def store(tmp_path: Path) -> EmbeddedStore:
    ttl = tmp_path / "kg.ttl"
    lines = ['@prefix x: <http://x/> .', '@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .',
             'x:a x:name "Haus"@de ; x:n "7"^^xsd:integer ; x:d "2024-01-31"^^xsd:date ; x:s "plain" .']
    lines += [f"x:c{i} a x:Complaint ." for i in range(2400)]
    ttl.write_text("\n".join(lines) + "\n")
    return EmbeddedStore([ttl])


def test_select_keeps_terms_typed(store):
    result = store.execute("SELECT ?p ?o WHERE { <http://x/a> ?p ?o }", timeout_s=60, row_cap=100)
    cells = {row[0].value.rsplit("/", 1)[1]: row[1] for row in result.rows}
    assert cells["name"] == Term.literal("Haus", lang="de")
    assert cells["n"] == Term.literal("7", XSD + "integer")
    assert cells["d"] == Term.literal("2024-01-31", XSD + "date")
    assert cells["s"] == Term.literal("plain")


def test_row_cap_keeps_true_total(store):
    result = store.execute("SELECT ?c WHERE { ?c a <http://x/Complaint> }", timeout_s=60, row_cap=2000)
    assert (len(result.rows), result.total, result.truncated) == (2000, 2400, True)


def test_ask_and_unbound_cells(store):
    assert store.execute("ASK { <http://x/a> ?p ?o }", timeout_s=60, row_cap=10).boolean is True
    result = store.execute("SELECT ?o ?z WHERE { <http://x/a> <http://x/s> ?o OPTIONAL { ?o <http://x/none> ?z } }", timeout_s=60, row_cap=10)
    assert result.rows == [[Term.literal("plain"), None]]


def test_timeout(store):
    with pytest.raises(QueryTimeout, match="longer than 0.2 s"):  # its rows stream: the abandoned thread stops reading
        store.execute(UNENDING, timeout_s=0.2, row_cap=10)


def test_guard_applies_before_the_store(store):
    with pytest.raises(QueryRefused):
        store.execute("DELETE WHERE { ?s ?p ?o }", timeout_s=60, row_cap=10)
    assert store.execute("ASK { ?s ?p ?o }", timeout_s=60, row_cap=10).boolean is True


def test_bad_kg_file_names_the_file(tmp_path):
    bad = tmp_path / "broken.ttl"
    bad.write_text("this is not turtle")
    store = EmbeddedStore([bad])  # opening hashes the file; the KG is parsed when first needed
    with pytest.raises(InputError, match="broken.ttl"):
        store.load()
    with pytest.raises(InputError, match="broken.ttl"):
        store.execute("ASK { ?s ?p ?o }", timeout_s=60, row_cap=1)


def test_a_quad_files_named_graphs_are_read_by_plain_queries_and_by_graph(tmp_path):
    """A TriG or N-Quads KG keeps its named graphs, and its default graph is their union (as an
    endpoint with a union default graph): before, a plain query over a TriG KG found nothing."""
    (tmp_path / "films.trig").write_text(
        "<http://f/g/films> { <http://f/amelie> <http://f/year> 2001 . <http://f/heat> <http://f/year> 1995 . }\n"
        "<http://f/g/people> { <http://f/audrey> <http://f/starsIn> <http://f/amelie> . }\n"
        "<http://f/top> <http://f/is> <http://f/amelie> .\n"  # the file's own default graph
    )
    (tmp_path / "more.nq").write_text("<http://f/up> <http://f/year> \"2009\"^^<http://www.w3.org/2001/XMLSchema#integer> <http://f/g/films> .\n")
    store = EmbeddedStore([tmp_path / "films.trig", tmp_path / "more.nq"])
    count = "SELECT (COUNT(*) AS ?n) {} WHERE {{ {} }}"
    cases = {
        count.format("", "?s ?p ?o"): "5",
        count.format("FROM <http://f/g/films>", "?s ?p ?o"): "3",  # both files' triples of that graph
        count.format("", "GRAPH ?g { ?s ?p ?o }"): "4",
        count.format("", "GRAPH <http://f/g/people> { ?s ?p ?o }"): "1",
    }
    for query, expected in cases.items():
        assert store.execute(query, timeout_s=30, row_cap=10).rows[0][0].value == expected, query
        candidate, _ = store.execute_candidate(query, timeout_s=30, row_cap=10)  # in a sandbox worker: the same data
        assert candidate.rows[0][0].value == expected, query
    store.close()
