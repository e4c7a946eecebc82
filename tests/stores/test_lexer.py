"""The canonical text: SPARQL terminals by the specification, written back in one plain form."""

from __future__ import annotations

import os
from pathlib import Path

import pyoxigraph as ox
import pytest
import yaml

from kgeval.errors import QuerySyntaxError
from kgeval.holdout import load_holdout
from kgeval.stores import guard_query
from kgeval.stores._engine import load_kg
from kgeval.stores._functions import DERIVED_INTEGER_CASTS
from kgeval.stores._lexer import canonical_text, canonical_tokens
from kgeval.stores._query import _check_same_terminals, parsed_tree
from tests.conftest import REPO
from tests.stores.dotted_names import CASES, SPORTS_TTL


def canonical(text: str) -> str:
    return canonical_text(canonical_tokens(text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("select $x where { ?x ?p ?o } # c\nlimit 1", "SELECT ?x WHERE { ?x ?p ?o } LIMIT 1"),
        ("ASK { ?s ?p '''it's\n\"a\"''' }", 'ASK { ?s ?p "it\'s\\n\\"a\\"" }'),
        ('ASK { ?s ?p """tab\there\\\\""" }', 'ASK { ?s ?p "tab\\there\\\\" }'),
        ("ASK { ?s ?p 'x'@en-GB . ?s ?p '1'^^<http://www.w3.org/2001/XMLSchema#int> }",
         'ASK { ?s ?p "x"@en-GB . ?s ?p "1"^^<http://www.w3.org/2001/XMLSchema#int> }'),
        ("ask { ?s ?p TRUE, False ; a ?c FILTER(isiri(?s) && SAMETERM(?s, ?s)) }",
         "ASK { ?s ?p true , false ; a ?c FILTER ( isIRI( ?s ) && sameTerm( ?s , ?s ) ) }"),
        ("PREFIX ex: <http://x/> ASK { ?s ex:a\\#b\\.c ?o }", "PREFIX ex: <http://x/> ASK { ?s <http://x/a#b.c> ?o }"),
        ("PREFIX ex: <http://x/> ASK { ex:A.C._Milan ex:p ex:St._Louis , ex:1..2 , ex:plain , ex:v2.6.32 }",
         "PREFIX ex: <http://x/> ASK { <http://x/A.C._Milan> ex:p <http://x/St._Louis> , <http://x/1..2> , ex:plain , <http://x/v2.6.32> }"),
        ("ASK { ?s ?p ( ) , [ ] , -5 , +1.5e3 , .5 }", "ASK { ?s ?p () , [] , -5 , +1.5e3 , .5 }"),
        ("ASK { FILTER(?x<10&&?y>=2) FILTER(?x=<http://a/b>) }", "ASK { FILTER ( ?x < 10 && ?y >= 2 ) FILTER ( ?x = <http://a/b> ) }"),
        ("ASK { ?s ?p \"\\u00E9\\U0001F600\" }", 'ASK { ?s ?p "é😀" }'),
    ],
)
def test_canonical_forms(text, expected):
    assert canonical(text) == expected
    assert canonical(expected) == expected  # a fixed point


@pytest.mark.parametrize("prefix", ["bif", "rdfs", "xsd"])
def test_undeclared_prefixes_are_named(prefix):
    """No engine's implicit prefixes: Oxigraph has none, Virtuoso many (store.predeclared_prefixes
    re-runs a candidate with them declared, and says so)."""
    with pytest.raises(QuerySyntaxError, match=rf"prefix {prefix}: is not declared \(add PREFIX {prefix}: <...>; .* store\.predeclared_prefixes\)"):
        canonical(f"SELECT * WHERE {{ ?s {prefix}:contains 'x' }}")
    assert "PREFIX bif:" in canonical("PREFIX bif: <bif:> SELECT * WHERE { ?s bif:contains 'x' }")


def test_a_grammar_that_reads_other_terminals_is_refused():
    """The check that tree-sitter read the lexer's terminals fails when they differ (here a
    text with a comment the lexer never produced)."""
    tokens = canonical_tokens("SELECT ?s WHERE { ?s ?p ?o }")
    text = canonical_text(tokens) + " # SERVICE"
    with pytest.raises(QuerySyntaxError, match="comments of the query differently"):
        _check_same_terminals(parsed_tree(text).root_node, tokens, text)
    shifted = canonical_text(tokens).replace("?o", '"?o"')
    with pytest.raises(QuerySyntaxError, match="strings of the query differently"):
        _check_same_terminals(parsed_tree(shifted).root_node, tokens, shifted)


def _reference_queries() -> list[tuple[str, list[Path], str]]:
    found = []
    for kg in load_holdout(REPO / "holdout").kgs:
        found += [(f"{kg.id}/{q.id}", list(kg.files), q.sparql) for q in kg.questions]
    ck25 = Path(os.environ.get("KGEVAL_CK25", "/nonexistent"))
    if (ck25 / "questions.yml").is_file():
        graphs = sorted((ck25 / "graphs").glob("*.ttl"))
        found += [(f"ck25/{q['id']}", graphs, q["query"]["sparql"]) for q in yaml.safe_load((ck25 / "questions.yml").read_text())["questions"]]
    return found


def test_the_engine_answers_the_canonical_text_as_it_answers_the_original():
    """Every reference query of the sample holdout (and CK25 when $KGEVAL_CK25 is set): the
    same rows from Oxigraph for the text as written and the text the guard approved."""
    stores: dict[tuple[Path, ...], ox.Store] = {}
    queries = _reference_queries()
    for name, files, text in queries:
        store = stores.setdefault(tuple(files), load_kg(files))  # the raw engine: the unguarded text, for comparison only
        original = store.query(text, custom_functions=DERIVED_INTEGER_CASTS)
        approved = store.query(guard_query(text).text, custom_functions=DERIVED_INTEGER_CASTS)
        if type(original).__name__ == "QueryBoolean":
            assert bool(original) == bool(approved), name
        else:
            assert sorted(map(str, original)) == sorted(map(str, approved)), name
    assert len(queries) >= 66


@pytest.mark.parametrize(
    "expression",
    ['CONCAT("a", "b")', 'COALESCE(?unbound, "x")', "concat ('a' , 'b')", 'coalesce (?u, 1)', "STRLEN (CONCAT ( 'a', 'b' ))"],
)
def test_the_canonical_text_of_builtin_calls_runs_on_oxigraph(expression):
    """Oxigraph 0.5 refuses `CONCAT (...)` and `COALESCE (...)` with a space before the
    argument list, although SPARQL allows it: the canonical text glues every built-in call's
    list to its name, so a candidate's CONCAT is not turned into a syntax error by the guard."""
    shape = guard_query(f"SELECT ({expression} AS ?v) WHERE {{}}")
    rows = list(ox.Store().query(shape.text))
    assert len(rows) == 1 and rows[0]["v"] is not None


RESERVED_NAMES = ["a", "true", "FALSE", "not", "str", "Lang", "count", "bound", "regex", "if", "year", "now", "sum", "exists", "select", "filter", "minus", "graph", "values", "bind", "optional", "in", "as"]
USES = ["?c {n}:p ?p", "?c ?x {n}:v", "?c ?x ?o FILTER(?o = {n}:v)", "{n}:s ?x ?o", "?c ?x ?o BIND({n}:v AS ?z)", "?c {n}:p {n}:v"]


@pytest.mark.parametrize("name", RESERVED_NAMES)
def test_a_prefix_named_like_a_keyword_is_a_prefix(name):
    """`PREFIX a: <...>` or `str:` is legal SPARQL and Oxigraph reads it; the guard's grammar read
    `true:x` as the keyword, so such a candidate was judged invalid_sparql. The canonical text
    writes each use as its full IRI and the engine answers it as the original."""
    store = ox.Store()
    store.extend([ox.Quad(ox.NamedNode("http://x/s"), ox.NamedNode("http://x/p"), ox.NamedNode("http://x/v"))])
    for use in USES:
        query = f"PREFIX {name}: <http://x/> SELECT * WHERE {{ {use.format(n=name)} }}"
        original = [tuple(map(str, row)) for row in store.query(query)]
        canonical = guard_query(query).text
        assert [tuple(map(str, row)) for row in store.query(canonical)] == original, (query, canonical)
        assert f" {name}:" not in canonical  # no reader can take it for the keyword


@pytest.mark.parametrize("case", sorted(CASES))
def test_names_with_dots_reach_the_engine_as_full_iris(case):
    """Oxigraph 0.5 ends a local name at its second run of dots: the guard approved
    `dbr:A.C._Milan` and the engine refused the approved text ("expected OPTIONAL"), or read
    `dbr:Linux_2.6.32` in VALUES as two values. Every name with a dot in its local part is
    written as its full IRI, and the engine gives the answer SPARQL defines."""
    query, expected = CASES[case]
    approved = guard_query(query).text
    assert not [t for t in approved.split() if t.startswith(("dbr:", "res:")) and "." in t], approved
    store = ox.Store()
    store.load(SPORTS_TTL.encode(), ox.RdfFormat.TURTLE)  # the raw engine, as the sandbox workers hold it
    answer = store.query(approved, custom_functions=DERIVED_INTEGER_CASTS)
    assert (bool(answer) if isinstance(expected, bool) else {tuple(t.value for t in row) for row in answer}) == expected


def test_under_an_empty_namespace_a_dotted_name_is_kept_or_refused():
    """`PREFIX : <>` is the BASE, and there is no IRI to write: a name the engine reads whole
    stays as written; one it would cut at its second run of dots is refused, saying what to do."""
    assert canonical("BASE <http://x/> PREFIX : <> ASK { :St._Louis ?p ?o }") == "BASE <http://x/> PREFIX : <> ASK { :St._Louis ?p ?o }"
    with pytest.raises(QuerySyntaxError, match=r"cannot write :A.C._Milan as an IRI \(its prefix is declared as <>: write the full IRI\)"):
        canonical("BASE <http://x/> PREFIX : <> ASK { :A.C._Milan ?p ?o }")


def test_names_that_would_expand_the_text_past_the_bound_are_refused():
    """A long PREFIX IRI used by many dotted names: each is sent as the full IRI, so a 20 KB
    query would become megabytes for the guard and the engine; it is refused, named, instead.
    A real query with a thousand dotted DBpedia names stays far below the bound."""
    from kgeval.errors import QueryRefused
    from kgeval.stores import guard_query
    from kgeval.stores._lexer import MAX_EXPANSION

    long_ns = "http://example.org/" + "n" * 9_000 + "/"
    hostile = f"PREFIX p: <{long_ns}>\nselect * WHERE {{ VALUES ?x {{ " + " ".join(f"p:a.b{i}" for i in range(1_000)) + " } }"
    assert len(hostile.encode()) < 20_000
    with pytest.raises(QueryRefused, match=rf"prefixed names expand to over {MAX_EXPANSION} more bytes of full IRIs .* at line 2"):
        guard_query(hostile)
    real = "PREFIX dbr: <http://dbpedia.org/resource/>\nSELECT ?x WHERE { VALUES ?x { " + " ".join(f"dbr:J._R._{i}.b" for i in range(1_000)) + " } }"
    shape = guard_query(real)
    assert "<http://dbpedia.org/resource/J._R._999.b>" in shape.text and len(shape.text) - len(real) < MAX_EXPANSION


def test_a_cast_of_a_huge_number_is_an_error_not_a_stall():
    """A red-team pass: with the sandbox off, `xsd:int("1e1000000"^^xsd:double)` made a
    million-digit integer holding the interpreter lock (the run process stalled 50 s). A number
    with more digits than any integer type holds is a cast error (unbound), at once. (A liveness
    bound, not a speed figure: the casts take milliseconds; a stall holds the thread for minutes.)"""
    import threading

    import pyoxigraph as ox

    store = ox.Store()
    rows: dict[str, tuple] = {}

    def cast_all() -> None:
        for exponent in ("1e1000000", "1e99999999", "-1e5000"):
            text = f'PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> SELECT (xsd:nonNegativeInteger("{exponent}"^^xsd:double) AS ?n) (xsd:int("{exponent}"^^xsd:decimal) AS ?m) WHERE {{}}'
            rows[exponent] = tuple(next(iter(store.query(text, custom_functions=DERIVED_INTEGER_CASTS))))

    caster = threading.Thread(target=cast_all, daemon=True)
    caster.start()
    caster.join(120)
    assert not caster.is_alive(), "a cast of a huge number stalled"
    assert rows == {e: (None, None) for e in ("1e1000000", "1e99999999", "-1e5000")}
    row = next(iter(store.query('PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> SELECT (xsd:nonNegativeInteger("1e30"^^xsd:double) AS ?n) WHERE {}', custom_functions=DERIVED_INTEGER_CASTS)))
    assert row[0].value == str(10**30)


XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
GLUED_SPELLINGS = [
    "PREFIX: <http://valuenet/ontop/> SELECT ?x ?o WHERE { ?x :p ?o }",
    "PREFIX:<http://valuenet/ontop/> SELECT ?x ?o WHERE { ?x :p ?o }",
    "prefix: <http://valuenet/ontop/> select ?x ?o where { ?x :p ?o }",
    "BASE <http://valuenet/> PREFIX: <http://valuenet/ontop/> SELECT ?x ?o WHERE { ?x :p ?o }",
    "PREFIX ex: <http://valuenet/ontop/> PREFIX: <http://valuenet/ontop/> SELECT ?x ?o WHERE { ?x :p ?o }",
    "PREFIXex: <http://valuenet/ontop/> SELECT ?x ?o WHERE { ?x ex:p ?o }",
    "SELECT ?x ?o WHERE { ?x ?p ?o } ORDER BY ?o LIMIT1",
    "SELECT ?x ?o WHERE { ?x ?p ?o } ORDER BY ?o LIMIT 1OFFSET1",
    "SELECT ?x ?o WHERE { ?x ?p ?o } ORDER BY ?o LIMIT 1 OFFSET1",
    "SELECT ?x ?o WHERE { ?x ?p ?o } ORDER BYDESC(?o)",
    "SELECTDISTINCT ?o WHERE { ?x ?p ?o }",
    "SELECT ?x ?o WHERE { ?x ?p ?o FILTER(?o NOTIN (1)) }",
]


@pytest.mark.parametrize("query", GLUED_SPELLINGS)
def test_spellings_oxigraph_runs_are_read_as_it_reads_them(query):
    """A model wrote `PREFIX: <http://valuenet/ontop/>`: Oxigraph (and rdflib) read it as
    `PREFIX : <...>`, the guard called it invalid SPARQL. Oxigraph matches keywords without a
    word boundary; the guard now reads these spellings so too, and the canonical text it
    approves (the only text a store sends) writes them apart, with the same rows from Oxigraph."""
    store = ox.Store()
    ns = "http://valuenet/ontop/"
    store.extend([ox.Quad(ox.NamedNode(ns + s), ox.NamedNode(ns + "p"), ox.Literal(str(n), datatype=ox.NamedNode(XSD_INTEGER)))
                  for n, s in enumerate("abc")])
    original = sorted(tuple(map(str, row)) for row in store.query(query))
    approved = guard_query(query).text
    assert original and sorted(tuple(map(str, row)) for row in store.query(approved)) == original, approved
    assert canonical(approved) == approved


def test_prefix_glued_to_its_name_runs_on_the_embedded_store(tmp_path):
    """Through the store every run uses: the canonical text declares `PREFIX :`."""
    from kgeval.stores import EmbeddedStore

    ttl = tmp_path / "kg.ttl"
    ttl.write_text('@prefix : <http://valuenet/ontop/> .\n:singer1 :name "Ada" .\n:singer2 :name "Bo" .\n', encoding="utf-8")
    query = "PREFIX: <http://valuenet/ontop/>\nSELECT ?n WHERE { ?s :name ?n }"
    assert guard_query(query).text.startswith("PREFIX : <http://valuenet/ontop/> SELECT")
    result = EmbeddedStore([ttl]).execute(query, timeout_s=60, row_cap=10)
    assert sorted(row[0].value for row in result.rows) == ["Ada", "Bo"]


@pytest.mark.parametrize(
    "query",
    [
        "PREFIX: <http://x/> PREFIX: <http://y/> SELECT * WHERE { ?s :p ?o } LIMIT",  # still broken
        "SELECT ?s WHERE { ?s PREFIX: <http://x/> }",  # not where a declaration stands
        "SELECT ?s WHERE { ?s ?p ?o } LIMITS 1",  # no keyword LIMITS
        "SELECT ?s WHERE { ?s ?p ?o } SELECT10",
    ],
)
def test_spellings_oxigraph_refuses_stay_refused(query):
    with pytest.raises(SyntaxError):
        list(ox.Store().query(query))
    with pytest.raises(QuerySyntaxError):
        guard_query(query)


@pytest.mark.parametrize("update", ["INSERTDATA { <http://a> <http://b> <http://c> }", "DELETEWHERE { ?s ?p ?o }"])
def test_a_glued_update_is_still_refused_as_an_update(update):
    """Splitting glued keywords lets nothing through unread: the pieces are keywords like any."""
    from kgeval.errors import QueryRefused

    with pytest.raises(QueryRefused, match="updates"):
        guard_query(update)
