import pytest

from kgeval.errors import QueryRefused, QuerySyntaxError
from kgeval.stores import guard_query


def test_shape_of_select_with_order_and_limit():
    shape = guard_query("SELECT ?a (COUNT(?b) AS ?c) WHERE { ?a <http://x/p> ?b } GROUP BY ?a ORDER BY DESC(?c) LIMIT 5")
    assert (shape.form, shape.ordered, shape.limit, shape.variables) == ("select", True, 5, ("a", "c"))


def test_shape_of_plain_select_and_ask():
    assert guard_query("SELECT ?s WHERE { ?s ?p ?o }").ordered is False
    assert guard_query("ASK { ?s ?p ?o }").form == "ask"


@pytest.mark.parametrize(
    "query",
    [
        "INSERT DATA { <http://a> <http://b> <http://c> }",
        "DELETE WHERE { ?s ?p ?o }",
        "LOAD <http://example.org/data.ttl>",
        "CLEAR ALL",
        "DROP GRAPH <http://g>",
        "CREATE GRAPH <http://g>",
        "ADD DEFAULT TO <http://g>",
        "MOVE DEFAULT TO <http://g>",
        "COPY DEFAULT TO <http://g>",
    ],
)
def test_updates_are_refused(query):
    with pytest.raises(QueryRefused, match="updates"):
        guard_query(query)


def test_service_is_refused_even_nested():
    with pytest.raises(QueryRefused, match="SERVICE"):
        guard_query("SELECT * WHERE { ?s ?p ?o { SELECT ?s WHERE { SERVICE <http://evil> { ?s ?p ?o } } } }")


def test_construct_is_refused_and_size_is_capped():
    with pytest.raises(QueryRefused, match="CONSTRUCT"):
        guard_query("CONSTRUCT WHERE { ?s ?p ?o }")
    with pytest.raises(QueryRefused, match="byte limit"):
        guard_query("SELECT * WHERE { ?s ?p ?o } # " + "x" * 100, max_bytes=50)


def test_syntax_errors_say_so():
    with pytest.raises(QuerySyntaxError, match="does not parse"):
        guard_query("SELEC ?x WHERE { ?x ?p ?o }")
    with pytest.raises(QuerySyntaxError, match="prefix"):
        guard_query("SELECT ?x WHERE { ?x foo:bar ?o }")
