"""Text and query normal forms shared by the contamination check and the example-bank guards.

Questions: Unicode NFKC, case folded, split into runs of letters and digits (so case, spacing
and punctuation never matter). The *features* of a text are its tokens minus a short list of
function words, lightly stemmed (`departments` -> `department`, `working` -> `work`). Similarity is the
Jaccard similarity of feature sets: exact on short texts, no sampling, so no MinHash is needed
(holdout questions number in the hundreds and are a dozen words long).

SPARQL: parsed by rdflib and translated to algebra, which expands prefixes and folds
whitespace; variables are then renamed ?v0, ?v1, ... and blank nodes (which rdflib names at
random) _:b0, _:b1, ... in order of first appearance and the algebra serialized, so two
queries that differ only in prefixes, variable names, layout or keyword case have the same
canonical form.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any

from rdflib import BNode, Literal, URIRef, Variable
from rdflib.plugins.sparql.parserutils import CompValue

from kgeval.errors import QuerySyntaxError
from kgeval.guards._vocab import namespace
from kgeval.stores import query_algebra

TOKEN = re.compile(r"[^\W_]+")
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

STOPWORDS = frozenset(
    """a an the of in on at to for from by with about as into over under between and or not no
    is are was were be been being do does did has have had will would can could should shall may
    might must what which who whom whose where when why how that this these those there here it
    its their them they he she his her we our you your i me my all any each every some give list
    show tell find name please many much more most less least than also only very just such
    other per get""".split()
)


def tokens(text: str) -> list[str]:
    """Normalized words: NFKC, case folded, runs of letters and digits."""
    return TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


def normalize_question(text: str) -> str:
    """The normalized form used for exact matching: tokens joined by single spaces."""
    return " ".join(tokens(text))


def feature(token: str) -> str:
    """A word's feature: a plural `s` and an `ing` dropped (`departments` -> `department`,
    `working` -> `work`); light on purpose, the same on both sides of every comparison."""
    if len(token) > 5 and token.endswith("ing"):
        return token[:-3]
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def features(words: Iterable[str]) -> frozenset[str]:
    """Content-word features of normalized tokens (module docstring)."""
    return frozenset(feature(t) for t in words if t not in STOPWORDS)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def question_similarity(a: str, b: str) -> float:
    """Content-word Jaccard similarity of two questions, in [0, 1]."""
    return jaccard(features(tokens(a)), features(tokens(b)))


def _anycase(*words: str) -> str:
    """Case-insensitive alternation by character classes: much faster than re.IGNORECASE."""
    return "|".join("".join(f"[{c}{c.lower()}]" for c in w) for w in words)


_QUERY_START = re.compile(rf"\b(?:{_anycase('PREFIX', 'BASE', 'SELECT', 'ASK', 'CONSTRUCT', 'DESCRIBE')})\b")
QUERY_KEYWORD = re.compile(rf"\b(?:{_anycase('SELECT', 'ASK')})\b")
_FENCE = re.compile(r"```[a-zA-Z]*\n(.*?)```", re.DOTALL)


def _algebra(text: str) -> CompValue | None:
    """The query's algebra as kgeval.stores reads it (escaped local names resolved, parses
    serialized and cached), or None when it does not parse."""
    try:
        return query_algebra(text)
    except QuerySyntaxError:
        return None


def canonical_sparql(text: str) -> str | None:
    """The canonical form of a SPARQL query (module docstring), or None when it does not parse."""
    algebra = _algebra(text)
    return None if algebra is None else "".join(_serialize(algebra, {}))


def query_needles(text: str) -> frozenset[str]:
    """Strings any query with the same canonical form must contain: for each IRI (rdf:type
    excepted, it may be written `a`) its namespace (declared in a PREFIX or written out; rdflib
    knows no undeclared prefix) and its local name, and each string literal. A cheap test that
    spares parsing text that cannot match. (A prefix declared for a shorter namespace, with
    escaped slashes in local names, or a BASE with relative IRIs, escapes it.)"""
    algebra = _algebra(text)
    if algebra is None:
        return frozenset()
    found = set()
    for term in _terms(algebra):
        if isinstance(term, URIRef) and str(term) != RDF_TYPE:
            iri = str(term)
            ns = namespace(iri)
            found.update((ns, iri[len(ns):]))
        elif isinstance(term, Literal) and term.datatype is None:
            found.add(str(term))
    return frozenset(n for n in found if n)


_DECLARATION = re.compile(r"(?i)\bPREFIX\s+([^\s:<>]*):\s*<([^<>\s]*)>|\bBASE\s*<[^<>\s]*>")


def declarations(text: str) -> str:
    """A query's PREFIX and BASE declarations, one a line ("" when it has none)."""
    return "\n".join(m.group(0) for m in _DECLARATION.finditer(text))


def written_names(text: str) -> dict[str, str]:
    """IRI -> the prefixed name a query writes it as (`hr:worksIn`), for each IRI it writes
    with a prefix it declares: what a copy of the query without its declarations still holds."""
    body = _DECLARATION.sub(" ", text)
    declared = sorted(((m.group(1), m.group(2)) for m in _DECLARATION.finditer(text) if m.group(2)), key=lambda d: -len(d[1]))
    names = {}
    for iri in iris_in_query(text):
        for prefix, ns in declared:
            if iri.startswith(ns) and f"{prefix}:{iri[len(ns):]}" in body:
                names[iri] = f"{prefix}:{iri[len(ns):]}"
                break
    return names


def bare_query_needles(text: str, named: set[str] | dict) -> frozenset[str]:
    """Strings a copy of the query without its declarations must contain: `query_needles`,
    less the namespaces it writes only in declarations, plus the prefixed names of the IRIs
    in `named` (the holdout's distinctive ones) as it writes them."""
    body = _DECLARATION.sub(" ", text)
    kept = {n for n in query_needles(text) if "://" not in n or n in body}
    return frozenset(kept | {name for iri, name in written_names(text).items() if iri in named})


def sparql_candidates(text: str) -> Iterator[str]:
    """Pieces of free text that may be a SPARQL query: the whole text, fenced code blocks, and
    the text from the first query keyword on."""
    yield text
    yield from (m.group(1) for m in _FENCE.finditer(text))
    start = _QUERY_START.search(text)
    if start and start.start() > 0:
        yield text[start.start():]


def iris_in_query(text: str) -> set[str]:
    """The IRIs a query mentions, prefixes expanded (empty when it does not parse)."""
    algebra = _algebra(text)
    return set() if algebra is None else {str(t) for t in _terms(algebra) if isinstance(t, URIRef)}


def _terms(algebra: CompValue) -> Iterator[URIRef | Literal]:
    stack: list[Any] = [algebra]
    while stack:
        node = stack.pop()
        if isinstance(node, (URIRef, Literal)):
            yield node
        elif isinstance(node, dict):
            stack.extend(v for k, v in node.items() if not str(k).startswith("_"))
        elif isinstance(node, (list, tuple, set, frozenset)):
            stack.extend(node)


def _shape(triple: tuple) -> tuple[str, ...]:
    """A triple's spelling with its variables and blank nodes blanked: an order independent of
    their names."""
    return tuple("?" if isinstance(t, (Variable, BNode)) else t.n3() for t in triple)


def _serialize(node: Any, names: dict[str, str]) -> Iterator[str]:
    if isinstance(node, Variable):
        yield "?" + names.setdefault(str(node), f"v{len(names)}")
    elif isinstance(node, BNode):  # rdflib names `[]` and paths' blank nodes at random: named in order too
        yield "_:" + names.setdefault(node.n3(), f"b{len(names)}")
    elif isinstance(node, (URIRef, Literal)):
        yield node.n3()
    elif isinstance(node, CompValue):
        yield node.name + "("
        for key, value in node.items():
            if key.startswith("_"):  # rdflib bookkeeping (_vars), derived from the rest
                continue
            yield key + "="
            # rdflib fills PV from a set for ASK and SELECT *: its order is arbitrary, so
            # projections compare as sets (the body, serialized first, has named them all).
            if key == "PV":
                value = frozenset(value)
            elif node.name == "BGP" and key == "triples":
                value = sorted(value, key=_shape)  # rdflib orders triples by variable names
            yield from _serialize(value, names)
            yield ","
        yield ")"
    elif isinstance(node, dict):
        yield "{"
        for key, value in node.items():
            yield from _serialize(key, names)
            yield ":"
            yield from _serialize(value, names)
            yield ","
        yield "}"
    elif isinstance(node, (list, tuple)):
        yield "["
        for item in node:
            yield from _serialize(item, names)
            yield ","
        yield "]"
    elif isinstance(node, (set, frozenset)):
        yield "{" + ",".join(sorted("".join(_serialize(item, names)) for item in node)) + "}"
    else:
        yield repr(node)
