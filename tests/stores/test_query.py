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


def test_shape_of_select_star_lists_the_variables_in_scope():
    shape = guard_query(
        "SELECT * WHERE { ?a <http://x/p> ?b . OPTIONAL { ?b <http://x/q> ?c } FILTER(?d > 1) MINUS { ?a <http://x/r> ?e } "
        "BIND(?b + 1 AS ?f) { SELECT ?g (COUNT(?h) AS ?n) WHERE { ?g <http://x/s> ?h } GROUP BY ?g } VALUES ?v { 1 } }"
    )
    assert shape.variables == ("a", "b", "c", "f", "g", "n", "v")


def test_shape_reads_keywords_in_any_case_and_the_top_level_only():
    shape = guard_query("select ?s where { { select ?s where { ?s ?p ?o } order by ?o limit 9 offset 9 } } offset 2")
    assert (shape.ordered, shape.limit, shape.offset, shape.variables) == (False, None, 2, ("s",))
    assert shape.text == "SELECT ?s WHERE { { SELECT ?s WHERE { ?s ?p ?o } ORDER BY ?o LIMIT 9 OFFSET 9 } } OFFSET 2"


def test_threads_guarding_at_once_agree():
    """Runs guard candidates from several threads: each thread parses with its own parser."""
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"select ?x{i} where {{ ?x{i} ?p ?o }} order by ?o limit {i + 1}" for i in range(200)]
    with ThreadPoolExecutor(8) as pool:
        shapes = list(pool.map(guard_query, texts))
    assert [(s.variables, s.limit) for s in shapes] == [((f"x{i}",), i + 1) for i in range(200)]


def test_nesting_is_limited_before_any_parser_runs():
    with pytest.raises(QueryRefused, match="nested 65 levels deep, over the limit of 64"):
        guard_query("SELECT * WHERE " + "{" * 65 + "}" * 65)
    assert guard_query("SELECT * WHERE " + "{" * 64 + "}" * 64).form == "select"


PROJECTION_ERRORS = [
    "SELECT ?s (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
    "select ?s where { ?s ?p ?o } order by count(?o)",
    "SELECT ?x WHERE { ?s ?p ?o } GROUP BY ?s",
    "SELECT * WHERE { ?s ?p ?o } GROUP BY ?s",
    "SELECT ?x WHERE { ?s ?p ?o } GROUP BY (STR(?p))",
    "SELECT (1 AS ?x) (2 AS ?x) WHERE {}",
    "SELECT (?o AS ?s) WHERE { ?s ?p ?o }",
    "SELECT ?s WHERE { { SELECT ?s (COUNT(*) AS ?n) WHERE { ?s ?p ?o } } }",
]
PROJECTION_FINE = [
    "SELECT ?s (COUNT(*) AS ?n) WHERE { ?s ?p ?o } GROUP BY ?s",
    "SELECT ?q (COUNT(*) AS ?n) WHERE { ?s ?p ?o } GROUP BY (STR(?p) AS ?q)",
    "SELECT ?p WHERE { ?s ?p ?o } GROUP BY (?p)",
    "SELECT (STR(?p) AS ?q) WHERE { ?s ?p ?o } GROUP BY ?p ?s",
    "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o } HAVING (COUNT(*) > 0)",
    "SELECT (?o AS ?x) WHERE { ?s ?p ?o FILTER(!BOUND(?x)) }",
]


@pytest.mark.parametrize("query", PROJECTION_ERRORS)
def test_projection_rules_are_the_queries_error_not_the_stores(query, tmp_path):
    """Engines reject these only when they run them (Oxigraph's SyntaxError, an endpoint's
    HTTP 400): the guard names them as the query's syntax errors before any store sees them."""
    from kgeval.stores import EmbeddedStore

    with pytest.raises(QuerySyntaxError, match="grouped nor aggregated|already bound|GROUP BY"):
        guard_query(query)
    (tmp_path / "kg.ttl").write_text("<http://x/a> <http://x/p> 1 .\n")
    with pytest.raises(QuerySyntaxError):
        EmbeddedStore([tmp_path / "kg.ttl"]).execute(query, timeout_s=60, row_cap=10)


@pytest.mark.parametrize("query", PROJECTION_FINE)
def test_projection_rules_let_valid_queries_run(query, tmp_path):
    from kgeval.stores import EmbeddedStore

    (tmp_path / "kg.ttl").write_text("<http://x/a> <http://x/p> 1 .\n")
    assert EmbeddedStore([tmp_path / "kg.ttl"]).execute(query, timeout_s=60, row_cap=10).total == 1


def test_a_refused_text_raises_a_fresh_error_every_time():
    """Refusals are cached like approvals, but each caller gets its own error: a store attaches
    what the query cost to the error it raises, and that must never reach the next caller."""
    update = "INSERT DATA { <http://x/a> <http://x/b> <http://x/c> }"
    with pytest.raises(QueryRefused) as first:
        guard_query(update)
    first.value.resources = "the first caller's cost"
    with pytest.raises(QueryRefused) as second:
        guard_query(update)
    assert second.value is not first.value
    assert str(second.value) == str(first.value)
    assert getattr(second.value, "resources", None) is None

    undeclared = "SELECT ?x WHERE { ?x ex:p ?y }"
    errors = []
    for _ in range(2):
        with pytest.raises(QuerySyntaxError) as raised:
            guard_query(undeclared)
        errors.append(raised.value)
    assert errors[0] is not errors[1]
    assert errors[0].undeclared_prefix == errors[1].undeclared_prefix == "ex"


def test_texts_the_lexer_reads_alike_are_one_query():
    """Layout, comments and keyword case are written away by the lexer: such texts get the same
    approved text and shape (parsed once), while a text with other terminals does not."""
    a = "PREFIX ex: <http://x/>\nSELECT ?s WHERE { ?s ex:p ?o } ORDER BY ?s LIMIT 3"
    b = "# a comment\nprefix ex: <http://x/>\n\nselect   ?s\nwhere {\n  ?s ex:p ?o  # trailing\n}\norder by ?s\nlimit 3"
    c = a.replace("LIMIT 3", "LIMIT 4")
    assert guard_query(a) == guard_query(b)
    assert guard_query(a).text == guard_query(b).text
    assert guard_query(c).text != guard_query(a).text and guard_query(c).limit == 4


def test_shape_of_a_query_whose_names_hold_dots():
    """The guard's facts come from the rewritten text, where `dbr:A.C._Milan` is its full IRI."""
    from tests.stores.dotted_names import TIED, R

    shape = guard_query(TIED)
    assert (shape.form, shape.ordered, shape.limit, shape.offset, shape.variables) == ("select", True, 1, 0, ("player", "club"))
    assert f"IN ( <{R}A.C._Milan> , <{R}A.F.C._Bournemouth> )" in shape.text


def test_virtuoso_full_text_is_read_as_a_predicate_or_a_call_and_no_other_engine_function():
    """`bif:contains` reads Virtuoso's text index, written as a predicate or called in a FILTER
    (LC-QuAD's DBpedia queries do both); any other `bif:` name stays refused, called or not."""
    for text in ("PREFIX bif: <bif:>\nSELECT ?l WHERE { ?s ?p ?l . ?l bif:contains 'Berl' }",
                 "PREFIX bif: <bif:>\nSELECT ?l WHERE { ?s ?p ?l FILTER(bif:contains(?l, 'Berl')) }",
                 "SELECT ?l WHERE { ?s ?p ?l FILTER(<bif:contains>(?l, 'Berl')) }"):  # fmt: skip
        assert guard_query(text).form == "select", text
    for text in ("PREFIX bif: <bif:>\nSELECT ?l WHERE { ?s ?p ?l FILTER(bif:st_intersects(?l, ?l)) }",
                 "SELECT (<bif:http_get>('http://127.0.0.1:9/') AS ?x) WHERE {}"):  # fmt: skip
        with pytest.raises(QueryRefused):
            guard_query(text)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT ?s WHERE { ?s a <http://x/Singer> } This query finds the singers with the most albums.",
        "SELECT ?s WHERE { ?s a <http://x/Singer> }\nThis query uses the service to add the names, and copies nothing",
        "ASK { ?s ?p ?o } Note: we could load or drop more data using a service",
    ],
)
def test_a_query_followed_by_prose_is_invalid_sparql_not_a_refused_update(query):
    """The words of the prose (`with`, `add`, `service`, `load`) are no keywords: the grammar
    cannot read the text and finds no update or SERVICE clause in it. It was 'refused: updates'."""
    with pytest.raises(QuerySyntaxError, match="does not parse"):
        guard_query(query)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT ?s WHERE { ?s ?p ?o } ; INSERT DATA { <http://a> <http://b> <http://c> }",
        "WITH <http://g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o } this deletes everything",
        "SELECT * WHERE { SERVICE <http://evil> { ?s ?p ?o } } and prose after it",
    ],
)
def test_an_update_or_service_with_errors_around_it_is_still_refused_as_one(query):
    with pytest.raises(QueryRefused, match="updates|SERVICE"):
        guard_query(query)


# ---- may_name_any: which texts the judges' answer-in-query flag need not parse ----------------

_BROKEN = [  # do not lex for the guard: before may_name_any, each cost rdflib a failed parse
    "SELECT ?d WHERE { e:p859 ex:worksIn ?d } # prefixes forgotten",
    "SELECT ?p ?s WHERE { ?p ex:worksIn e:d2 ; ex:salary ?s } ORDER BY DESC(?s) ?p LIMIT 5 # prefixes forgotten",
    'SELECT ?l WHERE { e:d2 rdfs:label ?l FILTER(lang(?l) = "de") }',  # rdfs: rdflib's own; e: undeclared
]
_READ_BY_RDFLIB = [  # texts rdflib reads with IRIs from every kind of writing
    "SELECT ?n WHERE { ?x schema:name ?n }",  # a namespace rdflib binds undeclared
    "SELECT ?x WHERE { ?x a <http://x/C> ; <http://x/p> (1 2) }",  # `a` and a collection: RDF IRIs written nowhere
    "PREFIX : <http://x/> SELECT ?x WHERE { ?x :p : }",  # an empty local name
    "PREFIX ex: <rel/> SELECT ?x WHERE { ?x ex:p <other> }",  # relative IRIs, no BASE
    "BASE <http://b/> SELECT ?x WHERE { ?x <p> ?y }",  # resolved against BASE
    "PREFIX ex: <http://x/> SELECT ?x WHERE { ?x ex:a\\.b ?y }",  # an escaped local name
    "PREFIX ex: <http://x/> SELECT ?x WHERE { ?x ex:p%41 ?y }",  # a percent escape, kept
    "PREFIX ex: <http://x/>\nPREFIX wikibase: <http://wikiba.se/ontology#>\nPREFIX bd: <http://www.bigdata.com/rdf#>\nSELECT ?x WHERE { ?x ex:p ?y . "
    'SERVICE wikibase:label { bd:serviceParam wikibase:language "en". } }',
]


def _texts() -> list[str]:
    from tests.stores.sparql_tricks import ACCEPTED, REFUSED

    tricks = [text.replace("{url}", "http://127.0.0.1:9") for text, _ in [*REFUSED.values(), *ACCEPTED.values()]]
    return [*_BROKEN, *_READ_BY_RDFLIB, *tricks]


def test_may_name_any_never_misses_an_iri_the_judges_read():
    """Every IRI `reference_iris` (the lexer's reading, else rdflib's algebra) finds in a text,
    may_name_any says the text may name: over the parser-trick corpus (escapes, comments, CR,
    SERVICE, BASE, glued keywords) and texts rdflib reads with IRIs written in every way."""
    from kgeval.judges._rules import reference_iris
    from kgeval.stores import may_name_any

    read = 0
    for text in _texts():
        assert reference_iris(text) or text not in _READ_BY_RDFLIB, text  # each kind of writing is read
        for iri in reference_iris(text):
            read += 1
            assert may_name_any(text, {iri}), (text, iri)
    assert read >= 30  # the corpus is read, not skipped


def test_may_name_any_rules_out_texts_that_name_none_of_the_iris():
    from kgeval.judges._rules import reference_iris
    from kgeval.stores import may_name_any, mentioned_iris

    answer = {"http://x/e/p17", "http://x/e/d2"}
    for text in _BROKEN:
        assert mentioned_iris(text) is None and not reference_iris(text)
        assert not may_name_any(text, answer), text
    assert may_name_any("PREFIX e: <http://x/e/> SELECT ?x WHERE { e:p17 ?p ?x", answer)  # written as a prefixed name
    assert may_name_any("SELECT ?x WHERE { <http://x/e/d2> ?p ?x", answer)  # written whole


def test_may_name_any_answers_as_testing_each_iri_against_each_namespace():
    """may_name_any finds IRIs in a namespace by bisecting the sorted IRIs: the same answer as
    testing each IRI against each namespace (its first form), on every text of the corpus and
    answers that sit in written, rdflib-bound, nested, empty and absent namespaces."""
    import random

    from kgeval.stores import may_name_any
    from kgeval.stores import _label_service
    from kgeval.stores._query import _RDF_NAMESPACE, _WRITTEN_IRI, _rdflib_namespaces

    def tested_one_by_one(text, iris):
        if "\\" in text or "\r" in text or "base" in text.lower() or _label_service.named(text):
            return None  # answered before the namespaces are read: not what this compares
        namespaces = (*_WRITTEN_IRI.findall(text), *_rdflib_namespaces())
        return any(iri.startswith(_RDF_NAMESPACE) or iri in text or any(iri.startswith(ns) and iri[len(ns) :] in text for ns in namespaces) for iri in iris)

    rng = random.Random(43)
    spaces = ["http://x/e/", "http://x/e/p1", "http://x/", "http://schema.org/", "http://www.w3.org/2002/07/owl#", "http://y/", ""]
    locals_ = ["p17", "p1", "d2", "p", "name", "Class", "a", "zz"]
    texts = [*_texts(), "PREFIX e: <http://x/e/> SELECT ?x WHERE { e:p17 ?p ?x }", "SELECT * WHERE { <> ?p ?o . ?s a ?c } # p1 d2",
             "PREFIX p: <http://x/e/p1> SELECT ?x WHERE { ?x p:7 ?y }", "SELECT ?x WHERE { ?x <http://y/name> ?y }"]  # fmt: skip
    compared = 0
    for text in texts:
        for _ in range(30):
            iris = {rng.choice(spaces) + rng.choice(locals_) for _ in range(rng.randint(1, 12))}
            expected = tested_one_by_one(text, iris)
            if expected is not None:
                compared += 1
                assert may_name_any(text, iris) == expected, (text, sorted(iris))
    assert compared >= 500


def test_answer_in_query_reads_a_text_the_lexer_reads_without_may_name_any(monkeypatch):
    """A text the guard's lexer reads is flagged from its mentioned IRIs alone: may_name_any
    (answers x namespaces, 0.31 s of a 22-KG replay's CPU when asked of every text) is asked
    only of texts the lexer cannot read, and the flag is what the parse would give."""
    from kgeval.judges import _rules
    from kgeval.stores import QueryResult, Term

    gold = QueryResult(form="select", vars=["x"], rows=[[Term(type="uri", value=f"http://x/e/d{n}")] for n in range(500)], total=500)
    asked: list[str] = []
    monkeypatch.setattr(_rules, "may_name_any", lambda text, iris: asked.append(text) or True)
    reference = "PREFIX e: <http://x/e/> SELECT ?x WHERE { ?x e:in e:d0 }"
    named = "PREFIX e: <http://x/e/> SELECT ?l WHERE { e:d7 e:label ?l . <http://x/e/d9> e:p ?l . ?x e:in e:d0 }"
    assert _rules.answer_in_query(named, gold, reference) == ["http://x/e/d7", "http://x/e/d9"]  # e:d0 is the reference's own
    assert _rules.answer_in_query("PREFIX e: <http://x/e/> SELECT ?x WHERE { ?x e:p ?y }", gold, reference) == []
    assert asked == []
    assert _rules.answer_in_query(_BROKEN[0], gold, reference) == []  # does not lex: may_name_any decides whether to parse
    assert asked == [_BROKEN[0]]
