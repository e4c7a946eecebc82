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
