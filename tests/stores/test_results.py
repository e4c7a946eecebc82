import random

from kgeval.stores import QueryResult, Term, collect_rows

XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"


def test_terms_stay_typed_and_canonical():
    assert Term.iri("http://x/a").canonical() == "<http://x/a>"
    assert Term.literal("1", XSD_INT).canonical() == f'"1"^^<{XSD_INT}>'
    assert Term.literal("Haus", lang="DE").canonical() == '"Haus"@de'
    assert Term.literal("a\"b").canonical() == '"a\\"b"'
    # a simple literal's xsd:string datatype is implicit, as SPARQL JSON results leave it out
    assert Term.literal("x", "http://www.w3.org/2001/XMLSchema#string") == Term.literal("x")
    assert Term.bnode("b0").canonical() == Term.bnode("other").canonical() == "_:"


def _result(rows, ordered=False):
    return QueryResult(form="select", vars=["x"], rows=rows, total=len(rows), ordered=ordered)


def test_hash_is_order_insensitive_unless_ordered():
    rows = [[Term.iri(f"http://x/{i}")] for i in range(5)]
    assert _result(rows).sha256() == _result(list(reversed(rows))).sha256()
    assert _result(rows, ordered=True).sha256() != _result(list(reversed(rows)), ordered=True).sha256()


def test_hash_distinguishes_datatype_language_and_value():
    variants = [Term.literal("1"), Term.literal("1", XSD_INT), Term.literal("1", lang="en"), Term.iri("1")]
    hashes = {_result([[t]]).sha256() for t in variants}
    assert len(hashes) == len(variants)


def test_collect_rows_keeps_same_rows_whatever_the_input_order():
    rows = [[Term.iri(f"http://x/{i:04d}")] for i in range(2400)]
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    kept_a, total_a = collect_rows(iter(rows), row_cap=2000, ordered=False)
    kept_b, total_b = collect_rows(iter(shuffled), row_cap=2000, ordered=False)
    assert total_a == total_b == 2400
    assert kept_a == kept_b == rows[:2000]


def test_collect_rows_keeps_the_first_rows_of_an_ordered_result():
    rows = [[Term.iri(f"http://x/{i}")] for i in range(10)]
    kept, total = collect_rows(iter(reversed(rows)), row_cap=3, ordered=True)
    assert total == 10 and kept == list(reversed(rows))[:3]


def test_a_golds_terms_are_handed_to_the_results_that_repeat_them():
    """Once a gold's rows are shared, a candidate result with the same cells is built from the
    gold's very Term objects (no Term built again), which equal freshly built ones."""
    from kgeval.stores import rows_from_cells, share_terms

    gold_rows = [[Term.iri("http://x/shared-1"), Term.literal("7", XSD_INT)], [Term.iri("http://x/shared-2"), None]]
    share_terms(gold_rows)
    cells = [(("uri", "http://x/shared-2", None, None), ("literal", "7", XSD_INT, None)), (("uri", "http://x/unseen", None, None),)]
    rows = rows_from_cells(cells)
    assert rows[0][0] is gold_rows[1][0]
    assert rows[0][1] is gold_rows[0][1]
    assert rows[0] == [Term.iri("http://x/shared-2"), Term.literal("7", XSD_INT)]
    assert rows[1] == [Term.iri("http://x/unseen")]
