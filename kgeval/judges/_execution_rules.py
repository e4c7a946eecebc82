"""The execution judge's named rules, tried on an answer its comparison rejects.

Each rule rewrites the answer (or both results) into what a careful grader reads it as, and the
judge compares again; the rule accepts only when that comparison accepts. Each is switchable in
`judges.execution` and recorded in the verdict (`details["rule"]`, the reason's first words);
`label_for_entity` and its `shared_names` are off by default (`_leniency.py`, docs/scoring.md).

- `symmetric_pairs`: the question asks for unordered pairs (it declares `answer_form:
  unordered_pairs`, or its reference query lists each pair once by ordering its two projected
  variables). Both results are read with each pair in one canonical orientation, so an answer
  giving (A,B) and (B,A) for the gold's (A,B) is accepted; an answer missing a pair in both
  orientations, or with a pair the gold lacks, is still rejected.
- `entity_for_label` / `label_for_entity`: the answer gives an entity's IRI where the gold gives
  its name, or the reverse. The answer gets, beside each IRI column, the gold name the IRI's KG
  label (or IRI tail) equals, and beside each literal column, the gold entity that literal names
  when no other entity of the gold bears it (`labels.shared_names`: entities outside the gold
  may bear it too, and the verdict names such names; off, no other labelled entity of the KG
  may). An IRI the reference query itself writes (the entity the question is about) is never
  taken as a name. A name borne by several gold entities is not enough alone to identify one:
  the verdict says so. An answer list (no SPARQL) is read
  as the one-column result its items stand for: a list of names, or of IRIs, gets these rules.
"""

from __future__ import annotations

import re
import weakref
from collections import Counter
from collections.abc import Callable
from functools import lru_cache

from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Variable

from kgeval.config import ExecutionJudgeConfig
from kgeval.errors import QueryError
from kgeval.holdout import Question
from kgeval.judges._cache import GoldCache
from kgeval.judges._lookup import KgLookup, fold
from kgeval.judges._model import Verdict
from kgeval.judges._rules import reference_iris
from kgeval.stores import QueryResult, Term, compares_by_order, guard_query, query_algebra
from kgeval.stores._lexer import string_value
from kgeval.stores._query import terminals

Recompare = Callable[[QueryResult, QueryResult], Verdict]
"""Compare an answer with a gold again (the execution judge's comparison, rules off)."""

def try_rules(
    config: ExecutionJudgeConfig, question: Question, gold: QueryResult, answer: QueryResult, lookup: KgLookup | None, rejected: Verdict,
    recompare: Recompare, *, listed: bool = False,
) -> Verdict:
    """The first rule's accepting verdict on `answer` (an executed result, or the one an answer
    list stands for: `listed`), or `rejected` with what the rules found; `lookup`: the KG's labels."""
    if pairs_rule_applies(config, question, gold, answer):
        verdict = recompare(oriented(gold), oriented(answer))
        if verdict.correct:
            return _accepted(verdict, "symmetric_pairs", "symmetric pairs: each pair compared in one orientation (the question asks for unordered pairs)")
    if lookup is None or not (config.labels.entity_for_label or config.labels.label_for_entity):
        return rejected
    widened, used, ambiguous = with_named_columns(
        config, gold, answer, lookup, asked_about(question.sparql, lookup), listed=listed, languages=languages_named(question.question)
    )
    if used:
        verdict = recompare(gold, widened)
        rule = "entity_for_label" if "entity_for_label" in used else "label_for_entity"
        if verdict.correct:
            return _accepted(verdict, rule, f"{rule.replace('_', '-')}: {used[rule]}")
        rejected = rejected.model_copy(update={"reason": f"{rejected.reason}; {rule.replace('_', '-')} ({used[rule]}), still wrong: {verdict.reason}"})
    if ambiguous:
        shown = "; ".join(f"{name!r} names {n} entities" for name, n in sorted(ambiguous.items())[:3])
        note = f"; label-for-entity not applied: {shown} in the KG, not enough alone to identify the gold's entity"
        return rejected.model_copy(update={"reason": rejected.reason + note, "details": {**rejected.details, "ambiguous_labels": dict(ambiguous)}})
    return rejected


def asked_about(reference: str, lookup: KgLookup) -> frozenset[str]:
    """The entities a question is about, as its reference query finds them: every IRI it writes,
    and every entity bearing a name it writes (`?c rdfs:label "Corvin"@en` is about Corvin). Such
    an entity is never taken for a name the gold gives: "the German name of Corvin" is one of
    Corvin's labels, and answering Corvin itself does not give it, however the query found it."""
    iris = reference_iris(reference)
    try:
        strings = {string_value(t.text) for t in terminals(reference) if t.kind == "string"}
    except QueryError:
        return iris
    return iris.union(*(lookup.bearers(text) for text in strings))


_LANGUAGES = {
    "en": "english inglés ingles englisch", "de": "german deutsch alemán aleman", "es": "spanish español espanol spanisch castellano",
    "fr": "french français francais französisch francés frances", "it": "italian italiano italienisch", "pt": "portuguese portugiesisch portugués",
    "nl": "dutch niederländisch neerlandés", "pl": "polish polnisch polaco", "ru": "russian russisch ruso", "zh": "chinese chinesisch chino",
    "ja": "japanese japanisch japonés",
}  # fmt: skip
_LANGUAGE_OF = {word: tag for tag, words in _LANGUAGES.items() for word in words.split()}
_LANGUAGE = "|".join(sorted(_LANGUAGE_OF, key=len, reverse=True))
_LANGUAGE_ASKED = re.compile(
    rf"\b(?:(?:in|en|auf)\s+({_LANGUAGE})\b|({_LANGUAGE})\s+(?:names?|labels?|titles?|words?|terms?|translations?|spellings?|versions?)\b)",
    re.IGNORECASE,
)
"""A language a question asks a name in: `in German`, `en alemán`, `auf Deutsch`, `the German
name`, `Spanish label`; not a language word used of something else (`English football clubs`,
`German cities`), whose gold names an IRI may still give."""


def languages_named(question: str) -> frozenset[str]:
    """The language tags of the languages a question asks a name in ("What is the German name of
    ...?", "... in Spanish": `de`, `es`): a gold name in such a language is the name in that
    language, which the entity's IRI does not give."""
    return frozenset(_LANGUAGE_OF[(a or b).lower()] for a, b in _LANGUAGE_ASKED.findall(question))


def _accepted(verdict: Verdict, rule: str, why: str) -> Verdict:
    return verdict.model_copy(update={"reason": f"{why}; {verdict.reason}", "details": {**verdict.details, "rule": rule}})


def pairs_rule_applies(config: ExecutionJudgeConfig, question: Question, gold: QueryResult, answer: QueryResult) -> bool:
    if config.symmetric_pairs == "off" or gold.form != "select" or len(gold.vars) != 2 or len(answer.vars) != 2:
        return False
    if question.answer_form == "unordered_pairs":
        return True
    return config.symmetric_pairs == "declared_or_detected" and lists_pairs_once(question.sparql)


@lru_cache(maxsize=1024)
def lists_pairs_once(sparql: str) -> bool:
    """True when the reference query filters its two projected variables by order
    (`FILTER(STR(?a) < STR(?b))`): the author listed each unordered pair once."""
    compares = compares_by_order(sparql)
    if compares is False:
        return False  # no order comparison at all: nothing to parse for
    if compares and not _may_compare_variables(sparql):
        return False  # none between two variables (?n > 20): nothing to parse for either
    try:
        algebra = query_algebra(sparql)
    except QueryError:
        return False
    projected = {str(v) for v in algebra.get("PV") or ()}
    if len(projected) != 2:
        return False
    stack: list[object] = [algebra]
    while stack:
        node = stack.pop()
        if isinstance(node, CompValue):
            if node.name == "RelationalExpression" and node.get("op") in ("<", ">", "<=", ">="):
                if {_variable(node.get("expr")), _variable(node.get("other"))} == projected:
                    return True
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return False


_VARIABLES_BY_ORDER = re.compile(r"(?:\?[^ ]+|\)) (?:<|>|<=|>=) (?:\?|STR ?\(|\()", re.IGNORECASE)
"""In the guard's canonical text (one space between tokens, comments dropped, `$x` as `?x`):
an order comparison whose left operand ends with a variable or `)` and whose right one starts
with a variable, `STR(` or `(`. Every comparison the algebra walk of `lists_pairs_once` looks
for (?a < ?b, STR(?a) < STR(?b), bracketed) has this shape; a text without one has none."""


def _may_compare_variables(sparql: str) -> bool:
    """False only when the query surely compares no two variables by order (read as the guard
    reads it, which `compares_by_order` said is how rdflib reads it); True when unsure."""
    try:
        canonical = guard_query(sparql).text
    except QueryError:
        return True
    return _VARIABLES_BY_ORDER.search(canonical) is not None


def _variable(expr: object) -> str | None:
    """The variable an order comparison reads: ?a itself, or STR(?a)."""
    if isinstance(expr, Variable):
        return str(expr)
    if isinstance(expr, CompValue) and expr.name == "Builtin_STR":
        return _variable(expr.get("arg"))
    return None


def oriented(result: QueryResult) -> QueryResult:
    """A two-column result with each row's pair in one canonical orientation."""
    rows = [sorted(row, key=lambda t: "" if t is None else t.canonical()) for row in result.rows]
    return result.model_copy(update={"rows": rows, "ordered": False})


DERIVED_SUFFIXES = ("__name", "__entity")
"""What `with_named_columns` appends to an answer column's name for the column it derives beside
it: the comparison counts the two as one column (either may be the one aligned with the gold)."""


def with_named_columns(
    config: ExecutionJudgeConfig, gold: QueryResult, answer: QueryResult, lookup: KgLookup, asked_about: frozenset[str] = frozenset(),
    *, listed: bool = False, languages: frozenset[str] = frozenset(),
) -> tuple[QueryResult, dict[str, str], dict[str, int]]:
    """The answer with a derived column beside each column (see module docstring); what each
    rule translated, in words; and the names found ambiguous (name -> entities bearing it).
    An answer IRI in `asked_about` (the reference query's own IRIs: the entity the question is
    about) is never taken as a name: "the German name of Vienna" is a label of Vienna, and
    answering Vienna itself does not give it. Nor is an IRI taken as a gold name tagged with a
    language the question names (`languages`: "the Spanish name of the department headed by
    ..." is its `@es` label, which the department's IRI does not give, however it was found)."""
    gold_names, gold_iris, gold_iris_named = _GOLD_TERMS.get(gold)
    if languages:
        gold_names = {name: t for name, t in gold_names.items() if (t.lang or "").split("-")[0].lower() not in languages}
    columns, used, ambiguous = [], {}, {}
    for k, var in enumerate(answer.vars):
        cells = [row[k] for row in answer.rows]
        kinds = {c.type for c in cells if c is not None}
        if kinds == {"uri"} and gold_names and config.labels.entity_for_label:
            derived, n = _names_for(cells, gold_names, lookup, asked_about)
            if n:
                columns.append((var + DERIVED_SUFFIXES[0], derived))
                used["entity_for_label"] = f"{n} answer IRI(s) of ?{var} taken as the gold's names by their KG labels"
        elif kinds == {"literal"} and gold_iris and config.labels.label_for_entity:
            shared: dict[str, int] = {}
            repeated: dict[str, tuple[int, int]] = {}
            derived, n = _entities_for(
                cells, gold_iris, gold_iris_named(lookup), lookup, ambiguous, shared if config.labels.shared_names else None, listed, repeated
            )
            if n:
                columns.append((var + DERIVED_SUFFIXES[1], derived))
                used["label_for_entity"] = (
                    f"{n} answer name(s) of ?{var} taken as the gold's entities they label"
                    + "".join(f"; {name!r} names {k} entities of the KG, one of them in the gold" for name, k in sorted(shared.items())[:3])
                    + "".join(
                        f"; {name!r} written {k} times, once for each of the {k} gold entities bearing it" + (f" ({b} in the KG)" if b > k else "")
                        for name, (k, b) in sorted(repeated.items())[:3]
                    )
                )
    if not columns:
        return answer, {}, ambiguous
    rows = [list(row) + [derived[i] for _, derived in columns] for i, row in enumerate(answer.rows)]
    widened = answer.model_copy(update={"vars": [*answer.vars, *(name for name, _ in columns)], "rows": rows})
    return widened, used, ambiguous


class _IrisByName:
    """The gold's IRIs by each of their folded names in a KG (`KgLookup.names`), per lookup:
    which gold IRIs a name is a name of, in one dict lookup instead of a pass over the gold."""

    def __init__(self, iris: set[str]) -> None:
        self._iris = iris
        # held weakly: the prepared gold outlives its run in the module's cache, and a lookup
        # holds its KG's store and label index, which must go when the run's stores close
        self._by_lookup: weakref.WeakKeyDictionary[KgLookup, dict[str, frozenset[str]]] = weakref.WeakKeyDictionary()

    def __call__(self, lookup: KgLookup) -> dict[str, frozenset[str]]:
        kept = self._by_lookup.get(lookup)
        if kept is not None:
            return kept
        by_name: dict[str, set[str]] = {}
        for iri in self._iris:
            for name in lookup.names(iri):
                by_name.setdefault(name, set()).add(iri)
        frozen = {name: frozenset(iris) for name, iris in by_name.items()}
        self._by_lookup[lookup] = frozen  # a run has one lookup per KG: a few entries
        return frozen


def gold_names_and_iris(gold: QueryResult) -> tuple[dict[str, Term], set[str], _IrisByName]:
    """The gold's literals by folded name, its IRIs, and its IRIs by name (per lookup)."""
    names = {fold(t.value): t for row in gold.rows for t in row if t is not None and t.type == "literal"}
    iris = {t.value for row in gold.rows for t in row if t is not None and t.type == "uri"}
    return names, iris, _IrisByName(iris)


_GOLD_TERMS: GoldCache[tuple[dict[str, Term], set[str], _IrisByName]] = GoldCache(gold_names_and_iris)
"""Per gold, once: every wrong answer of every seed asks the label rules about the same gold."""


def gold_iris(gold: QueryResult) -> set[str]:
    """The gold's IRIs (prepared once per gold)."""
    return _GOLD_TERMS.get(gold)[1]


def _names_for(cells: list[Term | None], gold_names: dict[str, Term], lookup: KgLookup, asked_about: frozenset[str]) -> tuple[list[Term | None], int]:
    derived, n = [], 0
    for cell in cells:
        hits = sorted(lookup.names(cell.value) & gold_names.keys()) if cell is not None and cell.value not in asked_about else []
        derived.append(gold_names[hits[0]] if hits else cell)
        n += bool(hits)
    return derived, n


def _entities_for(
    cells: list[Term | None],
    gold_iris: set[str],
    gold_iris_by_name: dict[str, frozenset[str]],
    lookup: KgLookup,
    ambiguous: dict[str, int],
    shared: dict[str, int] | None,
    listed: bool,
    repeated: dict[str, tuple[int, int]],
) -> tuple[list[Term | None], int]:
    """Each name's gold entity where one gold entity bears it, and no other KG entity does
    unless `shared` (which then collects such names); names that are not enough go to
    `ambiguous` (name -> entities bearing it). In an answer list (`listed`), a name written as
    many times as gold entities bear it stands for those entities, one each ("Paris", "Paris"
    for Paris, France and Paris, Texas); not in an executed result, where a repeated row says
    nothing of how many entities the query found. Such names go to `repeated` (name -> gold
    entities bearing it, KG entities bearing it)."""
    derived, n = [], 0
    times = Counter(fold(cell.value) for cell in cells if cell is not None) if listed else Counter()
    dealt: dict[str, list[str]] = {}
    for cell in cells:
        target = None
        if cell is not None:
            bearers = lookup.bearers(cell.value) | gold_iris_by_name.get(fold(cell.value), frozenset())
            named = bearers & gold_iris
            if len(named) == 1 and (len(bearers) == 1 or shared is not None):
                target = Term.iri(next(iter(named)))
                if len(bearers) > 1:
                    shared[cell.value] = len(bearers)  # type: ignore[index]
            elif named and times[fold(cell.value)] == len(named) and (len(bearers) == len(named) or shared is not None):
                # a list naming "Paris" twice where two gold entities bear the name: one each
                left = dealt.setdefault(fold(cell.value), sorted(named))
                target = Term.iri(left.pop())
                repeated[cell.value] = (len(named), len(bearers))
            elif named:
                ambiguous[cell.value] = len(bearers)
        derived.append(target or cell)
        n += target is not None
    return derived, n
