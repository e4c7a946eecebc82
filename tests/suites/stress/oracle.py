"""A plain, independent reading of the stress set's claims: pyoxigraph directly, no kgeval code.

The shipped KGs are loaded as the holdout files say (CK25: both of its KG files, in the default
graph), reference queries are read from the holdout's own question files, and results are
compared as the field's execution accuracy does (Spider): the same number of columns in any
permutation, rows as multisets (bags), in order when the question is order-sensitive, ASK as a
boolean. A case that `needs` the `extra_columns` leniency is compared as sets of rows projected
on some injective choice of its columns. Terms compare as RDF terms (their N-Triples form).

`apply_edit` / `undo_edit` change one loaded store in place and back, so every edit of a KG is
tried on one copy of it.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from collections.abc import Callable, Iterable
from functools import lru_cache
from itertools import permutations
from pathlib import Path

import pyoxigraph as ox
import yaml

from tests.suites.stress.cases import KgEdit, StressCase

REPO = Path(__file__).resolve().parents[3]
SAMPLE_KGS = ("hr", "complaints", "catalogue", "trials")
CK25_FILES = ("prod-inst.ttl", "text2sparql.ttl")
"""The CK25 files a holdout import keeps as KG data (queries.ttl is the answer key, left out)."""


def ck25_root() -> Path | None:
    """$KGEVAL_CK25 when it holds the dataset, else None (tests skip with CK25_MISSING)."""
    root = Path(os.environ.get("KGEVAL_CK25", "/nonexistent"))
    return root if (root / "questions.yml").is_file() else None


@dataclass(frozen=True)
class Reference:
    sparql: str
    order_sensitive: bool


@lru_cache(maxsize=None)
def references() -> dict[str, Reference]:
    """Every reference query by question id, read from the question files themselves."""
    refs: dict[str, Reference] = {}
    for kg in SAMPLE_KGS:
        doc = yaml.safe_load((REPO / "holdout" / kg / "questions.yaml").read_text(encoding="utf-8"))
        refs |= {q["id"]: Reference(q["sparql"], bool(q.get("order_sensitive"))) for q in doc["questions"]}
    root = ck25_root()
    if root is not None:
        doc = yaml.safe_load((root / "questions.yml").read_text(encoding="utf-8"))
        # CK25 states no order-sensitivity: a top-level ORDER BY makes it so, as the import reads it
        refs |= {f"ck25-{q['id']}": Reference(q["query"]["sparql"], "ORDER BY" in q["query"]["sparql"].upper()) for q in doc["questions"]}
    return refs


def kg_files(kg: str) -> list[Path]:
    if kg == "ck25":
        root = ck25_root()
        assert root is not None
        return [root / "graphs" / name for name in CK25_FILES]
    return [REPO / "holdout" / kg / "kg.ttl"]


def load_store(kg: str) -> ox.Store:
    """A fresh in-memory copy of `kg` (every file in the default graph)."""
    store = ox.Store()
    for path in kg_files(kg):
        store.bulk_load(path=str(path), format=ox.RdfFormat.TURTLE)
    return store


Rows = tuple[tuple[str | None, ...], ...]
Result = bool | tuple[tuple[str, ...], Rows]


def run(store: ox.Store, sparql: str) -> Result:
    """ASK: its boolean; SELECT: (variables, rows of N-Triples strings, None for unbound)."""
    solutions = store.query(sparql)
    if isinstance(solutions, ox.QueryBoolean) or isinstance(solutions, bool):
        return bool(solutions)
    variables = tuple(v.value for v in solutions.variables)
    rows = tuple(tuple(None if t is None else str(t) for t in s) for s in solutions)
    return variables, rows


def same_result(reference: Result, answer: Result, *, ordered: bool, extra_columns: bool = False) -> bool:
    """Whether `answer` gives `reference`'s result (module docstring: how)."""
    if isinstance(reference, bool) or isinstance(answer, bool):
        return reference is answer
    (ref_vars, ref_rows), (ans_vars, ans_rows) = reference, answer
    if not extra_columns and len(ref_vars) != len(ans_vars):
        return False
    for mapping in permutations(range(len(ans_vars)), len(ref_vars)):
        projected = [tuple(row[i] for i in mapping) for row in ans_rows]
        if extra_columns:
            if set(projected) == set(ref_rows):
                return True
        elif (projected == list(ref_rows)) if ordered else (Counter(projected) == Counter(ref_rows)):
            return True
    return False


def agrees(store: ox.Store, case: StressCase) -> bool:
    """Whether `case` gives its reference query's result on `store` as it is now."""
    ref = references()[case.question_id]
    return same_result(run(store, ref.sparql), run(store, case.sparql), ordered=ref.order_sensitive, extra_columns="extra_columns" in case.needs)


def edit_triples(edit_text: str, prefixes: str) -> list[ox.Triple]:
    return list(ox.parse(prefixes + edit_text, format=ox.RdfFormat.TURTLE)) if edit_text.strip() else []


def apply_edit(store: ox.Store, edit: KgEdit, prefixes: str) -> None:
    """Remove then add `edit`'s triples; AssertionError naming a triple the KG lacks (to remove) or has (to add)."""
    for triple in edit_triples(edit.remove, prefixes):
        quad = ox.Quad(triple.subject, triple.predicate, triple.object)
        assert quad in store, f"breaks_on removes {triple}, which the KG does not have"
        store.remove(quad)
    for triple in edit_triples(edit.add, prefixes):
        quad = ox.Quad(triple.subject, triple.predicate, triple.object)
        assert quad not in store, f"breaks_on adds {triple}, which the KG has already"
        store.add(quad)


def undo_edit(store: ox.Store, edit: KgEdit, prefixes: str) -> None:
    """The KG as it was before `apply_edit(store, edit)`."""
    for triple in edit_triples(edit.add, prefixes):
        store.remove(ox.Quad(triple.subject, triple.predicate, triple.object))
    for triple in edit_triples(edit.remove, prefixes):
        store.add(ox.Quad(triple.subject, triple.predicate, triple.object))


# ---- schema: what a neighbour KG keeps ------------------------------------------------------

RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")


@dataclass(frozen=True)
class Schema:
    """What issue 40's neighbour KGs keep: the kinds of triples (subject classes, predicate,
    object classes or datatype and language) and, per subject class and predicate, the range of
    values a subject has (a predicate every employee has once stays so)."""

    kinds: frozenset[tuple]
    counts: dict[tuple, tuple[int, int]]


def _object_kind(obj: ox.NamedNode | ox.BlankNode | ox.Literal, types: Callable[[object], tuple]) -> tuple:
    if isinstance(obj, ox.Literal):
        return ("literal", obj.datatype.value, obj.language or "")
    return ("node", types(obj))


def schema_of(store: ox.Store) -> Schema:
    """The schema of the default graph of `store`."""
    typed: dict = {}
    for quad in store.quads_for_pattern(None, RDF_TYPE, None, ox.DefaultGraph()):
        typed[quad.subject] = tuple(sorted({*typed.get(quad.subject, ()), quad.object.value}))
    kinds: set[tuple] = set()
    per_subject: dict[tuple, Counter] = {}
    for quad in store.quads_for_pattern(None, None, None, ox.DefaultGraph()):
        if quad.predicate == RDF_TYPE:
            continue
        classes = typed.get(quad.subject, ())
        kinds.add((classes, quad.predicate.value, _object_kind(quad.object, lambda node: typed.get(node, ()))))
        per_subject.setdefault((classes, quad.predicate.value), Counter())[quad.subject] += 1
    members = Counter(typed.values())
    counts = {}
    for key, by_subject in per_subject.items():
        lacking = members[key[0]] - len(by_subject) if key[0] else 0
        counts[key] = (0 if lacking > 0 else min(by_subject.values()), max(by_subject.values()))
    return Schema(frozenset(kinds), counts)


def schema_changes(before: Schema, store: ox.Store, subjects: Iterable[ox.NamedNode | ox.BlankNode]) -> list[str]:
    """How the nodes an edit touched (`subjects`: the subjects of its triples) leave `before`'s
    schema in `store`: a triple of theirs (as subject or object) of a kind `before` lacks, or a
    predicate of their classes with a number of values outside `before`'s range. Empty when the
    edited KG could be one of `before`'s neighbours. Only touched nodes can change either."""
    graph = ox.DefaultGraph()

    def types(node: object) -> tuple:
        return tuple(sorted({q.object.value for q in store.quads_for_pattern(node, RDF_TYPE, None, graph)}))

    changes: set[str] = set()
    for subject in subjects:
        classes, counts = types(subject), Counter()
        for quad in store.quads_for_pattern(subject, None, None, graph):
            if quad.predicate != RDF_TYPE:
                counts[quad.predicate.value] += 1
                kind = (classes, quad.predicate.value, _object_kind(quad.object, types))
                if kind not in before.kinds:
                    changes.add(f"new kind of triple {kind}")
        for quad in store.quads_for_pattern(None, None, subject, graph):
            kind = (types(quad.subject), quad.predicate.value, ("node", classes))
            if quad.predicate != RDF_TYPE and kind not in before.kinds:
                changes.add(f"new kind of triple {kind}")
        for (key_classes, predicate), (low, high) in before.counts.items():
            n = counts[predicate]
            if key_classes == classes and (n or classes) and not low <= n <= high:
                changes.add(f"{predicate} on {classes or 'untyped'} subjects: {subject} has {n} values each, the KG {low}..{high}")
    return sorted(changes)
