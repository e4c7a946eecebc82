"""The tie probe's early stop (`EmbeddedStore.execute_probe`, `_engine.evaluate_probe`) decides
every tie exactly as reading the whole probe does.

Each case runs `find_ties` twice on the same pyoxigraph data: through the embedded store, which
reads the probe only to the first row past the window whose key neither edge of the window has
(then only checks the later rows' key terms), and through the same store reading every probe
row up to the cap (the base `Store.execute_probe`, what the tie check read before). The acceptable
answers, or the error, must be the same, at the default cap and at caps that end the probe
inside a key group."""

from __future__ import annotations

import pytest

from kgeval.errors import QueryError
from kgeval.gold._ties import find_ties
from kgeval.stores import EmbeddedStore, ProbeCut, Store, guard_query, order_probe

X = "http://x/"
P = f"PREFIX x: <{X}> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> "
TTL = f"""@prefix x: <{X}> . @prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
x:a x:price 1 ; x:tag "t", "u" ; x:opt "o1" .
x:b x:price 2 ; x:tag "t", "u" .
x:c x:price 2.0 ; x:tag "t" ; x:opt "o1" .
x:d x:price "2.0e0"^^xsd:double ; x:tag "t", "u" .
x:e x:price 3 ; x:tag "t" .
x:f x:price 4 ; x:tag "t", "u" ; x:opt "o2" .
x:g x:price "4"^^xsd:int .
x:h x:price 5 . x:i x:price 6 . x:j x:price 7 . x:k x:price 8 .
x:n1 x:odd 2 . x:n2 x:odd 2.5 . x:n3 x:odd "2e0"^^xsd:decimal . x:n4 x:odd 3 . x:n5 x:odd 4 .
x:m1 x:any 1 . x:m2 x:any 2 . x:m3 x:any 2 . x:m1 x:any 3 . x:m4 x:any 4 . x:m5 x:any 5 .
_:b1 x:rank 1 . _:b2 x:rank 2 . x:r3 x:rank 3 .
"""

QUERIES = {
    "ties across datatypes at the cut": "SELECT ?s ?p WHERE { ?s x:price ?p } ORDER BY ?p LIMIT 2",
    "clean cut": "SELECT ?s ?p WHERE { ?s x:price ?p } ORDER BY ?p LIMIT 1",
    "offset cut through two groups": "SELECT ?s WHERE { ?s x:price ?p } ORDER BY ?p LIMIT 4 OFFSET 2",
    "offset inside a group": "SELECT ?s WHERE { ?s x:price ?p } ORDER BY ?p LIMIT 1 OFFSET 2",
    "offset past the end": "SELECT ?s WHERE { ?s x:price ?p } ORDER BY ?p OFFSET 40",
    "descending, int and integer tied": "SELECT ?s WHERE { ?s x:price ?p } ORDER BY DESC(?p) LIMIT 7",
    "distinct with duplicates": "SELECT DISTINCT ?s WHERE { ?s x:price ?p ; x:tag ?t } ORDER BY DESC(?p) LIMIT 2",
    "distinct, a duplicate right after the group": "SELECT DISTINCT ?s WHERE { ?s x:any ?p } ORDER BY ?p LIMIT 2",
    "equal keys apart in the engine's order": "SELECT ?s ?p WHERE { ?s x:odd ?p } ORDER BY ?p LIMIT 1",
    "two keys": "SELECT ?s ?p WHERE { ?s x:price ?p } ORDER BY ?p DESC(?s) LIMIT 2",
    "an expression key": "SELECT ?s WHERE { ?s x:price ?p } ORDER BY (?p * 2) LIMIT 3",
    "string keys": "SELECT ?s WHERE { ?s x:price ?p } ORDER BY STR(?p) LIMIT 2",
    "unbound keys": "SELECT ?s WHERE { ?s x:price ?p OPTIONAL { ?s x:opt ?o } } ORDER BY ?o LIMIT 3",
    "blank nodes share a key": "SELECT ?b WHERE { ?b x:rank ?r } ORDER BY ?b LIMIT 1",
    "no ORDER BY": "SELECT ?s WHERE { ?s x:price ?p } LIMIT 2",
}


class WholeProbeStore(EmbeddedStore):
    """The embedded store reading every probe row up to the cap (the base store's way)."""

    def execute_probe(self, probe: str, cut: ProbeCut, *, timeout_s: float, row_cap: int):  # noqa: ANN201
        return Store.execute_probe(self, probe, cut, timeout_s=timeout_s, row_cap=row_cap)


@pytest.fixture(scope="module")
def kg(tmp_path_factory):
    path = tmp_path_factory.mktemp("ties") / "kg.ttl"
    path.write_text(TTL, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def stores(kg):
    pair = (EmbeddedStore([kg]), WholeProbeStore([kg]), EmbeddedStore([kg], local_copy=False))
    yield pair
    for store in pair:
        store.close()


def _ties(store: Store, query: str, probe_rows: int) -> tuple:
    """What the tie check stores for `query`: the acceptable answers, or why it could not tell
    (blank node labels dropped: each store loads the data with labels of its own)."""
    result = store.execute(query, timeout_s=30, row_cap=2000)
    try:
        ties = find_ties(store, query, guard_query(query), result, timeout_s=30, probe_rows=probe_rows)
    except QueryError as exc:
        return ("error", str(exc))
    return ("ties", _unlabelled(ties.model_dump()))


def _unlabelled(data: object) -> object:
    if isinstance(data, dict):
        return {k: "_:" if k == "value" and data.get("type") == "bnode" else _unlabelled(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_unlabelled(item) for item in data]
    return data


@pytest.mark.parametrize("probe_rows", [10000, 3, 4, 5, 6])
@pytest.mark.parametrize("name", QUERIES)
def test_the_early_stop_decides_as_the_whole_probe(stores, name, probe_rows):
    early, whole, sandboxed = stores
    query = P + QUERIES[name]
    expected = _ties(whole, query, probe_rows)
    assert _ties(early, query, probe_rows) == expected
    assert _ties(sandboxed, query, probe_rows) == expected  # the worker reads it the same way


def _read(store: Store, query: str, probe_rows: int = 10000):  # noqa: ANN202
    """The probe's rows the embedded store reads for `query`'s tie check."""
    probe, shape = order_probe(query), guard_query(query)
    rows = store.execute(query, timeout_s=30, row_cap=2000).rows
    cut = ProbeCut(shape.offset, shape.offset + len(rows), probe.key_vars, tuple(shape.variables), probe.distinct)
    return store.execute_probe(probe.text, cut, timeout_s=30, row_cap=probe_rows)


def test_the_probe_stops_after_the_group_of_the_cut(stores):
    """LIMIT 2 over 1, 2, 2.0, 2.0e0, 3, ...: the rows read end with the first key after 2."""
    early, whole, _ = stores
    read = _read(early, P + QUERIES["ties across datatypes at the cut"])
    assert not read.complete and len(read.rows) == 5 and not read.truncated
    assert read.rows[-1][1][1] == "3"
    assert len(_read(whole, P + QUERIES["ties across datatypes at the cut"]).rows) == 11


def test_a_later_row_that_may_share_the_key_makes_the_probe_read_whole(stores):
    """2, 2.5, "2e0"^^xsd:decimal: the engine orders the invalid decimal as text, after 2.5,
    yet its key is 2. The check of the rows after the stop finds it: the probe is read whole
    and the tie group holds both rows."""
    early, _, _ = stores
    query = P + QUERIES["equal keys apart in the engine's order"]
    assert _read(early, query).complete
    _, ties = _ties(early, query, 10000)
    [group] = ties["groups"]
    assert [row[0]["value"] for row in group["candidates"]] == [X + "n1", X + "n3"] and group["choose"] == 1


def test_a_group_running_to_the_cap_is_read_to_the_cap(stores):
    """The cap ends the probe inside the group of the cut: no row past it, so it is read to the
    cap and the group is marked incomplete, as before."""
    early, _, _ = stores
    query = P + QUERIES["ties across datatypes at the cut"]
    read = _read(early, query, probe_rows=3)
    assert read.complete and read.truncated and len(read.rows) == 3
    _, ties = _ties(early, query, 3)
    assert [group["complete"] for group in ties["groups"]] == [False]


def test_the_float_shortcut_finds_every_spelling_of_a_number():
    """`_may_spell` parses floats first and decimals only near the number: it must say True
    whenever a value spells the number (`decimal_value`), whatever the spelling, the other
    values (some float() cannot read, NaN, both infinities: its sorted search then leaves it to
    the exact check) or the number's size."""
    import random
    from decimal import Decimal

    from kgeval.stores._cells import decimal_value
    from kgeval.stores._engine import _may_spell

    rng = random.Random(7)
    numbers = [Decimal(2), Decimal(0), Decimal("-0.1"), Decimal("1E+400"), Decimal("1.000000000000000000000000001"), Decimal("123456.78")]
    spellings = ["2", "2.0", "+2", " 2 ", "2e0", "0.2E1", "20e-1", "0", "-0", "0.0e5", "-0.10", "-1e-1", "1e400", "10E+399",
                 "1.0000000000000000000000000014", "1.00000000000000000000000000149", "123456.780", "12345678e-2"]
    noise = ["abc", "2.5", "1.9999999", "nan", "inf", "-inf", "1e308", "", "0x10", "1_000", "3", "-2", "1e-400", "123456.7800001", "2.000000001", "1.999999999"]
    for _ in range(2000):
        values = rng.sample(spellings + noise, rng.randint(1, 8))
        for number in numbers:
            expected = any(decimal_value(v) == number for v in values)
            assert _may_spell(values, number) == expected, (values, number)


@pytest.mark.parametrize("probe_rows", [10000, 31, 32, 33, 150, 400])
def test_a_group_over_many_chunks_decides_as_the_whole_probe(tmp_path, probe_rows):
    """The probe's rows are converted a few first (32), then twice as many each time: a key
    group that runs through several of those chunks, a stop in a later chunk, a cap at a
    chunk's edge or inside the group, and DISTINCT counted across chunks all decide the ties
    the whole probe decides."""
    lines = [f"<{X}g{i}> <{X}price> 1 ; <{X}tag> \"t\", \"u\" ." for i in range(150)]
    lines += [f"<{X}h{i}> <{X}price> {2 + i % 3} ." for i in range(300)]
    kg = tmp_path / "kg.ttl"
    kg.write_text("\n".join(lines) + "\n", encoding="utf-8")
    trio = (EmbeddedStore([kg]), WholeProbeStore([kg]), EmbeddedStore([kg], local_copy=False))
    try:
        for query in [
            "SELECT ?s WHERE { ?s x:price ?p } ORDER BY ?p LIMIT 1",
            "SELECT ?s WHERE { ?s x:price ?p } ORDER BY ?p LIMIT 3 OFFSET 148",
            "SELECT ?s ?p WHERE { ?s x:price ?p } ORDER BY DESC(?p) LIMIT 5",
            "SELECT DISTINCT ?s WHERE { ?s x:price ?p ; x:tag ?t } ORDER BY ?p LIMIT 2",
        ]:
            early, whole, sandboxed = (_ties(store, P + query, probe_rows) for store in trio)
            assert early == whole and sandboxed == whole, query
        assert not _read(trio[0], P + "SELECT ?s WHERE { ?s x:price ?p } ORDER BY ?p LIMIT 1").complete  # it did stop early
    finally:
        for store in trio:
            store.close()
