"""Rules every judge applies before comparing: model failures and vacuous answers.

**Model failures** (`Candidate.failure`): the system answered with SPARQL that does not parse or
run, that the read-only guard refused, or that ran past the candidate budget. Every judge says
`correct: false` with the failure kind as its path (DESIGN invariant 5): the attempt stays in
accuracy's denominator. An answer list given beside failing SPARQL is judged as before: the
seed judge compares the list, the execution judge says the SPARQL is the answer and rejects it.

**Vacuous answers**: an empty result, a false ASK or a count of zero cannot tell a right query
from a wrong one. When such a result comes from vocabulary the KG lacks (a predicate or class
IRI of a pattern every solution needs, occurring nowhere in the KG), the answer is wrong with
path `vacuous`, whatever the gold (an empty gold included), unless the reference query needs
the same missing IRIs: its gold then comes from the same absence (an ASK false, a count of zero
over a predicate this extract lacks), and the reference query itself must not be judged wrong
against its own gold. Patterns that cannot empty the result
alone (OPTIONAL, MINUS, one branch of a UNION, FILTER expressions, zero-or-more paths) are not
read. The same query on a KG that has the vocabulary is judged as usual.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from functools import lru_cache

from rdflib.paths import InvPath, OneOrMore, MulPath, SequencePath
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import URIRef

from kgeval.errors import QueryError
from kgeval.judges._model import FAILURE_WORDS, Candidate
from kgeval.stores import QueryResult, may_name_any, mentioned_iris, query_algebra

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_PASS_THROUGH = {
    "SelectQuery", "AskQuery", "Project", "Distinct", "Reduced", "Slice", "OrderBy", "Filter", "Extend",
    "Group", "AggregateJoin", "ToMultiSet", "Graph",
}  # fmt: skip
"""Algebra nodes whose result is empty when their (first) input is."""
_MAX_PROBED = 32
"""Most IRIs a query may write for the vacuous rule to ask the KG about each (one ASK each)
before it parses the query to find the few its patterns need."""


def failure_reason(candidate: Candidate) -> str:
    """The sentence a failure verdict gives: the kind in words and the store's message."""
    kind = candidate.failure or "invalid_sparql"
    return f"{FAILURE_WORDS[kind]}: the candidate's SPARQL failed: {candidate.sparql_error}"


def vacuous_iris(candidate: Candidate, reference: str) -> list[str]:
    """IRIs the KG lacks that alone make the candidate's empty / false / zero result; empty
    when the result says something, the KG has all the vocabulary the query needs, or the
    reference query `reference` needs the same missing IRIs (the gold then comes from that
    same absence: the reference query itself, or one like it, is not vacuous against it)."""
    if candidate.lookup is None or not candidate.sparql or candidate.result is None:
        return []
    if not is_uninformative(candidate.result):
        return []
    missing = missing_vocabulary(candidate.sparql, candidate.lookup)
    if missing:
        missing = [iri for iri in missing if iri not in reference_iris(reference)]
    return missing


def missing_vocabulary(sparql: str, lookup) -> list[str]:  # noqa: ANN001 - a KgLookup
    """IRIs the KG lacks that alone force the query's result to be empty (a pattern every
    solution needs), sorted; empty when the KG has them all or the query cannot be read."""
    mentioned = mentioned_iris(sparql)
    if mentioned is not None and len(mentioned) <= _MAX_PROBED and not lookup.lacks(mentioned):
        return []  # the KG has every IRI the query writes, those of its patterns included: no parse needed
    try:
        algebra = query_algebra(sparql)
    except QueryError:
        return []
    return sorted(_forced_empty(algebra, lookup) or [])


@lru_cache(maxsize=4096)  # asked for every wrong answer to the same question
def reference_iris(reference: str) -> frozenset[str]:
    """Every IRI the reference query writes (none when it cannot be read)."""
    mentioned = mentioned_iris(reference)
    if mentioned is not None:
        return mentioned
    try:
        algebra = query_algebra(reference)
    except QueryError:
        return frozenset()
    return frozenset(_all_iris(algebra))


def answer_in_query(sparql: str | None, gold: QueryResult, reference: str) -> list[str]:
    """IRIs of the gold's answer that the candidate query `sparql` names as constants and the
    reference query does not (sorted): the system knew the answer before it asked the KG
    (`SELECT ?l WHERE { <dept-73191> rdfs:label ?l }`). Not wrong by this alone; flagged on the
    attempt (`answer_in_query`) and drawn first by audit samples."""
    if not sparql or gold.form != "select":
        return []
    answer = {cell.value for row in gold.rows for cell in row if cell is not None and cell.type == "uri"}
    answer -= reference_iris(reference)
    mentioned = mentioned_iris(sparql)
    if mentioned is not None:  # read by the lexer: what `reference_iris` would read
        return sorted(answer & mentioned)
    # a text the lexer cannot read that writes none of them is not parsed (40 of 71 such texts
    # cost a 22-KG replay 0.34 s of CPU in rdflib's failing parses, and flagged nothing); asked
    # of every text, `may_name_any` itself took 0.31 s of the run's CPU (answers x namespaces)
    if not answer or not may_name_any(sparql, answer):
        return []
    return sorted(answer & reference_iris(sparql))


def _all_iris(node: object) -> list[str]:
    """Every IRI constant anywhere in an algebra tree."""
    if isinstance(node, URIRef):
        return [str(node)]
    if isinstance(node, dict):  # CompValue is a dict
        return [iri for value in node.values() for iri in _all_iris(value)]
    if isinstance(node, list | tuple | set):
        return [iri for value in node for iri in _all_iris(value)]
    if isinstance(node, InvPath | MulPath | SequencePath):
        return _path_iris(node)
    return []


def vacuous_reason(iris: list[str]) -> str:
    shown = ", ".join(f"<{iri}>" for iri in iris[:5]) + (" ..." if len(iris) > 5 else "")
    return (
        f"vacuous: the candidate's empty / false / zero result comes from vocabulary the KG lacks ({shown} "
        "occurs nowhere in the KG); such a result cannot tell a right query from a wrong one"
    )


def is_uninformative(result: QueryResult) -> bool:
    """An empty result, a false ASK, or one row of zeros / unbound cells: a COUNT of 0, or the
    one row an aggregate gives over no solutions (`SELECT (MIN(?x) AS ?m)` over a predicate the
    KG lacks: ?m unbound), which says nothing as an empty result does."""
    if result.form == "ask":
        return not result.boolean
    if result.total == 0:
        return True
    if result.total != 1 or not result.rows:
        return False
    return all(cell is None or _is_zero(cell.value) for cell in result.rows[0])


def says_nothing(result: QueryResult) -> bool:
    """A SELECT result that finds nothing in another spelling than no rows: one row of zeros
    or unbound cells (`is_uninformative`)."""
    return result.form == "select" and result.total == 1 and is_uninformative(result)


def _is_zero(text: str) -> bool:
    try:
        return Decimal(text.strip()) == 0
    except (InvalidOperation, ValueError):
        return False


def _forced_empty(node: object, lookup) -> list[str] | None:  # noqa: ANN001 - a KgLookup
    """IRIs the KG lacks that force `node`'s solutions to be empty; None when none do."""
    if not isinstance(node, CompValue):
        return None
    if node.name == "BGP":
        missing = [iri for iri in _pattern_iris(node.triples) if not lookup.occurs(iri)]
        return missing or None
    if node.name == "Join":
        found = [m for m in (_forced_empty(node.p1, lookup), _forced_empty(node.p2, lookup)) if m]
        return [iri for m in found for iri in m] or None
    if node.name in ("LeftJoin", "Minus"):
        return _forced_empty(node.p1, lookup)
    if node.name == "Union":
        left, right = _forced_empty(node.p1, lookup), _forced_empty(node.p2, lookup)
        return left + right if left and right else None
    if node.name in _PASS_THROUGH:
        return _forced_empty(node.get("p"), lookup)
    return None


def _pattern_iris(triples: list) -> list[str]:
    """Predicate IRIs (and IRIs of required property paths) and rdf:type classes of a BGP."""
    iris: list[str] = []
    for _s, p, o in triples:
        iris += _path_iris(p)
        if isinstance(p, URIRef) and str(p) == RDF_TYPE and isinstance(o, URIRef):
            iris.append(str(o))
    return list(dict.fromkeys(iris))


def _path_iris(path: object) -> list[str]:
    if isinstance(path, URIRef):
        return [str(path)]
    if isinstance(path, InvPath):
        return _path_iris(path.arg)
    if isinstance(path, SequencePath):
        return [iri for step in path.args for iri in _path_iris(step)]
    if isinstance(path, MulPath) and path.mod == OneOrMore:
        return _path_iris(path.path)
    return []  # alternatives, zero-or-more/one and negated paths can match without the IRI
