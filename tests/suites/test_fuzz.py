"""Neighbour KGs keep the schema and fuzz values and links, deterministically."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyoxigraph as ox

from kgeval.gold._fuzz import make_neighbours, named_terms

HR = Path(__file__).resolve().parents[2] / "holdout" / "hr" / "kg.ttl"
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
NAMED = named_terms([
    "PREFIX hr: <http://example.org/hr/vocab/> ASK { <http://example.org/hr/entities/Employee/E5989> hr:remote true }",
    'PREFIX hr: <http://example.org/hr/vocab/> PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> SELECT ?o { ?o rdfs:label "Berlin" }',
])


def _original() -> list[ox.Quad]:
    return list(ox.parse(path=str(HR), format=ox.RdfFormat.TURTLE))


def _statements(text: str) -> list[ox.Quad]:
    return list(ox.parse(text.encode(), format=ox.RdfFormat.N_TRIPLES))


def _schema(quads) -> tuple[set, set, set]:
    classes = {q.object.value for q in quads if q.predicate == RDF_TYPE}
    predicates = {q.predicate.value for q in quads}
    datatypes = {(q.predicate.value, q.object.datatype.value) for q in quads if isinstance(q.object, ox.Literal)}
    return classes, predicates, datatypes


def test_same_seed_same_bytes_other_seed_other_bytes() -> None:
    a = make_neighbours("hr", [HR], {}, 3, seed=0)
    b = make_neighbours("hr", [HR], {}, 3, seed=0)
    c = make_neighbours("hr", [HR], {}, 3, seed=1)
    assert [n.files for n in a] == [n.files for n in b]
    assert [n.files for n in a] != [n.files for n in c]
    assert len({tuple(n.files.values()) for n in a}) == 3  # each neighbour is its own KG


def test_schema_types_and_cardinality_kept_values_fuzzed() -> None:
    """Classes, predicates, datatypes and every kept entity's types stay; a subject never gains
    values of a predicate it had, and no predicate gets more values per subject than it had
    anywhere; some values go missing and some predicates reach an entity of another class."""
    original = _original()
    o_classes, o_predicates, o_datatypes = _schema(original)
    types = {(q.subject, q.object) for q in original if q.predicate == RDF_TYPE}
    per_subject = Counter((q.subject, q.predicate) for q in original)
    for neighbour in make_neighbours("hr", [HR], {}, 8, seed=0, named=NAMED):  # named entities changed too
        quads = _statements(neighbour.files["kg.nt"])
        assert len(quads) == neighbour.triples <= len(original)
        classes, predicates, datatypes = _schema(quads)
        assert classes == o_classes and predicates == o_predicates and datatypes <= o_datatypes
        kept = {q.subject for q in quads} & {q.subject for q in original}
        assert {(s, c) for s, c in types if s in kept} <= {(q.subject, q.object) for q in quads if q.predicate == RDF_TYPE}
        counts = Counter((q.subject, q.predicate) for q in quads)
        assert all(counts[key] <= n for key, n in per_subject.items() if key[0] in kept), "a subject gained values of a predicate"
        most = {p: max(n for (_, q), n in per_subject.items() if q == p) for p in {q.predicate for q in original}}
        assert all(n <= most[p] for (_, p), n in counts.items()), "a predicate with one value per subject got two"
        assert set(quads) != set(original)
        assert any(counts[key] < n for key, n in per_subject.items() if key[0] in kept), "no value went missing"
        assert any(key not in per_subject for key in counts if key[0] in kept), "no predicate reached another class"


def test_entities_dropped_and_duplicated_under_fresh_iris() -> None:
    heavy = make_neighbours("hr", [HR], {}, 4, seed=0)[3]  # the heaviest level
    subjects = {q.subject.value for q in _statements(heavy.files["kg.nt"])}
    original = {q.subject.value for q in _original()}
    assert original - subjects, "no entity was dropped"
    fresh = subjects - original
    assert fresh and all("--n03-dup" in iri for iri in fresh)


def _facts(quads, subject: ox.NamedNode) -> dict:
    return {q.predicate: q.object for q in quads if q.subject == subject and q.predicate != RDF_TYPE}


def test_a_named_entity_changes_in_half_the_neighbours() -> None:
    """An entity a reference query names by IRI has every fact changed (a literal to a value
    beside its own) in half the neighbours whatever the draw: hard-coding its remote flag, or
    matching its values loosely, then differs. One named by a value ("Berlin") keeps that value
    there and has its other facts changed."""
    employee, office = ox.NamedNode("http://example.org/hr/entities/Employee/E5989"), ox.NamedNode("http://example.org/hr/entities/Office/BER")
    original = _original()
    facts, office_facts = _facts(original, employee), _facts(original, office)
    assert NAMED >= {f"<{employee.value}>", '"Berlin"'}
    changed, office_changed = 0, 0
    for neighbour in make_neighbours("hr", [HR], {}, 8, seed=0, named=NAMED):
        quads = _statements(neighbour.files["kg.nt"])
        theirs = _facts(quads, employee)
        literals = {p for p, o in facts.items() if isinstance(o, ox.Literal) and len([q for q in original if q.subject == employee and q.predicate == p]) == 1}
        changed += bool(theirs) and not any(theirs.get(p) == facts[p] for p in literals)  # a value may also go missing
        ber = _facts(quads, office)
        others = [p for p in office_facts if office_facts[p] != ox.Literal("Berlin")]
        office_changed += ox.Literal("Berlin") in ber.values() and not any(ber.get(p) == office_facts[p] for p in others)
    assert changed >= 3 and office_changed >= 3  # half of eight, but for a neighbour that drops the entity


def test_same_bytes_whatever_the_process_string_hashing() -> None:
    """Deterministic across processes: the named strings join the pools in a fixed order (a
    set of strings iterated as it came gave other bytes under another PYTHONHASHSEED)."""
    import subprocess
    import sys

    script = (
        "import hashlib; from tests.suites.test_fuzz import HR, NAMED; from kgeval.gold._fuzz import make_neighbours; "
        "print(hashlib.sha256(''.join(n.files['kg.nt'] for n in make_neighbours('hr', [HR], {}, 4, seed=0, named=NAMED | {'\"London\"', '\"Engineering\"'})).encode()).hexdigest())"
    )
    root = Path(__file__).resolve().parents[2]
    digests = {
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=root, env={**__import__("os").environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}, timeout=120).stdout
        for seed in ("1", "2", "3")
    }
    assert len(digests) == 1, digests


def test_a_kg_read_once_gives_the_same_neighbours() -> None:
    """The suite build reads and hashes the KG once and hands it to `make_neighbours`: the
    neighbours are those it makes reading the files itself."""
    from kgeval.gold._fuzz import kg_sha256, read_kg

    made = make_neighbours("hr", [HR], {}, 2, seed=0, named=NAMED)
    given = make_neighbours("hr", [HR], {}, 2, seed=0, named=NAMED, read=(read_kg([HR]), kg_sha256([HR])))
    assert [n.files for n in given] == [n.files for n in made]
