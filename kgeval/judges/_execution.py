"""The execution-grounded judge: the candidate's full executed result against the gold's.

The run loop executes the candidate's SPARQL read-only on the same store, with the same row
cap and timeout as the gold, and hands the typed result over as `Candidate.result`. This judge:

- compares as the field does (Spider's execution evaluation, `result_eq` of Zhong et al.'s test
  suite): the same number of columns in any order, rows as multisets, in order only where the
  question is order-sensitive. What it accepts beyond that is a named rule (`_leniency`
  `COMPARATOR_RULES`, DESIGN invariant 13): `label_columns`, `extra_columns`, `duplicates`;
- aligns columns: the answer may name and order its columns differently. Every injective
  mapping of gold columns to answer columns is scored by value overlap (ties: how many gold rows
  it matches, same name, then same position) and the best one kept. A gold column with no
  overlapping answer column is missing, and the answer is wrong (a label *instead of* the IRI:
  labels and IRIs never compare equal under the default rules). An answer column no gold column
  is aligned with is extra: the answer is wrong (path `extra_columns`) unless the column holds
  the KG's labels of an aligned entity column (`label_columns`, on: `?xLabel` beside `?x`) or
  `extra_columns` is on (off: a grouped count's key beside the count states what was not asked);
- compares the projected rows as sets: precision = answer rows in the gold / answer rows, recall
  = gold rows in the answer / gold rows, and F1. Correct only when precision >= min_precision
  and recall >= min_recall (default 1.0 and 1.0: equal sets), and, when the sets are equal, the
  rows are the same multiset or `duplicates` is on (on: a row repeated, or a repeat missing,
  states no other value; off, path `duplicates`);
- checks order only when the question is order-sensitive: the answer must follow the gold's
  order, where rows that tie on the reference query's ORDER BY variables may come in any order
  (when those keys are not plain projected variables, every row is its own tie group);
- compares ASK, COUNT and other single values as values (a gold of one row and one column):
  `1` = `"1"^^xsd:integer`, `"-0.20"` = `-0.2`, `true` = `"true"`; a list where one value was
  asked is wrong (extra rows lower precision);
- says `strict_subset: 12 of 400` when the full answer is a strict subset of the gold;
- answers the model failure's kind (`invalid_sparql`, `refused`, `candidate_timeout`, ...)
  when the candidate's SPARQL failed, whatever else it gave, and `vacuous` when its empty /
  false / zero result comes from vocabulary the KG lacks (`_rules.py`);
- then, on an answer the comparison rejects, tries its named rules (`_execution_rules.py`): the
  entity for its label (on) or the label for its entity (off by default: a name is not the
  entity), as the KG links them (`labels`), and unordered pairs given in both orientations
  (`symmetric_pairs`). A rule that accepts says so in the verdict (`details["rule"]`, and the
  reason starts with its name);
- records beside every verdict, in `details["leniency"]`, whether the field's standard
  comparison (no rules) and the all-rules comparison accept the answer, and which rules alone
  decide it (`_leniency.py`; DESIGN invariant 13).

Precision, recall and F1 are in every verdict's details (0 for a failure).

An answer with no SPARQL but an answer list is judged the same way as a one-column answer of
untyped values (`list_normalize` rules), except that an item spelling an IRI of the host of a
gold IRI compares as the full IRI (either scheme, the list rules but `iri_tail`): the tail
bridges other namespaces and bare names, but `http://dbpedia.org/resource/DC` is not the
gold's `http://dbpedia.org/resource/AC/DC` (the verdict names such IRIs). The label rules read
an answer list as the one-column result its items stand for (`result_of_items`: an IRI where an
item spells one, a plain literal otherwise).

Truncated results (total > rows kept). Unordered results keep the canonically smallest rows,
ordered ones the first rows (`collect_rows`), so two results cut by the same rule are
comparable row for row when their columns are the same, in the same order, and their totals
are equal: the verdict then compares the kept rows and says the rows beyond the cap were not
compared. Otherwise nothing can be concluded beyond the totals, and the answer is not
accepted (`truncated` path; raise `run.row_cap` and `gold.row_cap` to judge it).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cached_property, lru_cache
from itertools import islice, permutations

from kgeval._files import sha256_json
from kgeval.config import ExecutionJudgeConfig
from kgeval.errors import QueryError
from kgeval.holdout import Question
from kgeval.judges._cache import GoldCache
from kgeval.judges._execution_rules import DERIVED_SUFFIXES, gold_iris, try_rules
from kgeval.judges._leniency import READINGS, RESULT_RULES, leniency, rules_on, variant_config
from kgeval.judges._lookup import KgLookup, fold
from kgeval.judges._model import Candidate, Verdict, new_verdict
from kgeval.judges._normalize import Normalizer, item_iri, item_term
from kgeval.judges._reading import read_items
from kgeval.judges._rules import failure_reason, vacuous_iris, vacuous_reason
from kgeval.stores import QueryResult, Term, order_variables
from kgeval.stores._lexer import string_value
from kgeval.stores._query import terminals

LOGIC_VERSION = "14"
"""2: model failures judged by kind, vacuous answers, the label and symmetric-pairs rules,
predeclared prefixes recorded, precision/recall/F1 in every verdict. 3: the label rules apply
to answer lists too (a list of names where the gold has entities, or the reverse); numbers
with a fractional part compare at 12 significant digits (`_normalize` rule 4); an answer
list's IRI of a gold IRI's host compares as the full IRI, not by its tail alone. 4: a text
whose digits start with a zero is an identifier, not a number (`00118` != `118`); a result is
not vacuous for IRIs the reference query needs too; entity-for-label never takes an IRI the
reference query writes (the question's own subject) as a name. 5: a date-time at midnight UTC
is its date (`_normalize` rule 5b); an answer list to an ASK reads yes / no as booleans. 6: an
answer list's prefixed names the reference query declares are IRIs, and `Name (ID)` is the ID
when the ID is a gold IRI's tail (`_normalize.read_items`). 7: thousands separators are read
(`2,872,800` = `2872800`). 8: an answer list's prefixed names the store predeclares
(`store.predeclared_prefixes`) are IRIs too, where the reference query does not declare them;
yes / no answer a gold of one xsd:boolean value (a yes/no question asked with SELECT); a date
written out in English (`January 1, 1985`) is that date where the gold holds dates;
label-for-entity takes a name entities outside the gold bear too as the one gold entity bearing
it (`labels.shared_names`). 9: a single value that is an approximate number compares at the
precision it has (`_same_number`): an xsd:float at 5 significant digits (the same AVG over
floats was 6.9037037 on pyoxigraph, 6.9037027 on Oxigraph server and 6.903703724896466 as
Virtuoso's decimal; over 200 floats 6.937497 and 6.937491 where the mean is 6.9375),
another number at the fewer digits either side writes, 6 to 12 (Virtuoso writes every
xsd:double with 6: 618833.0 for 618832.9). 10: in an answer list, a name written as many
times as gold entities bear it stands for those entities, one each (`Paris`, `Paris`); a year
alone is the gold's 1 January of that year where the gold holds it; where every gold value is a
number, one with a unit, a currency, a scale word or a hedge, or in words (`three`), is that
number, unless the question names another unit of its kind; `The answer is X.` is X; the one
date or number of a plain sentence, a numeric date whose order of day and month is plain, and
`None` for an empty gold are read; a yes/no whose first word the text contradicts is not
(`_reading.read_items`); an entity bearing a name the reference query writes is never taken
for a name the gold gives (`asked_about`); a
list of one text naming several things is read split at `,`, `;` and `and`, and an executed
result's one GROUP_CONCAT column as the values it joined (split at the query's separator, a row
per value), when that reading is right and the answer as it is is not (`split_listing`). 11
(acceptance test 6): entity-for-label never takes an IRI for a gold name tagged with a language
the question names ("the German name of ..."); an answer list reads German and Spanish forms:
yes/no (`Ja`, `Nein`, `Sí`), dates (`15. Mai 1915`, `el 3 de marzo de 2001`), numbers with
dot-grouped thousands before a decimal comma (`4.250.000,50 €`), whole numbers in words up to
twelve (`drei`, `seis`), "none" for an empty gold (`Keine`, `Ninguno`), and a listing joined by
`und` / `y`; a German or Spanish word qualifying a sentence's one value (`Mehr als 40`, `Más de
16`, `nicht`) keeps it unread, as the English ones do; SPARQL JSON terms in an answer list
(`{"type": "uri", "value": ...}`) are their values; an answer list read by the label rules keeps
the order it was written in (names answering an order-sensitive question in order are right), and
a label rule that translated an answer without making it right says so in the reason; a `mailto:`
or `tel:` IRI compares by its address under `iri_tail` (`_normalize`). 12 (issue 32): leniency is
opt-in, named and counted (`_leniency`): label-for-entity (and its shared names) is off by default,
as are the answer-list readings that need a guess (a hedged number, a year for a date, the one value
of a sentence); every reading and the approximate-number comparison are switchable; every verdict
records, in `details["leniency"]`, whether the field's standard comparison and the all-rules
comparison accept the answer, and which rules alone decide it; an answer list's verdict names
the readings it applied (`details["readings"]`); a split listing's accept names its rule; one row whose values
are all unbound (`SELECT (MIN(?x) AS ?m)` over no solutions) says nothing, as a count of 0 does:
vacuous when vocabulary the KG lacks makes it (`_rules.is_uninformative`). 13 (issue 40): the
field's comparator, named: an answer with a column the gold lacks is wrong (path `extra_columns`)
unless the column holds the KG's labels or descriptions of an aligned entity column, or the
entities an aligned column of names names (`label_columns`, on), or
`extra_columns` is on (off by default); rows compare as multisets unless `duplicates` (on) reads
them as sets, a difference in repeats alone being path `duplicates` when it is off; the accept
names the comparator rules it needed (`details["comparator_rules"]`), so the standard figure is
Spider's comparator (same number of columns in any order, bags, order where asked); columns
sharing the same values are aligned by how their rows pair them (a relation and its inverse). 14:
an answer's own column named as the label rules name theirs (`?x__name`, `?x__entity`) is an
extra column like any other: only a column the rules derived is counted with its source."""

_NO_FIGURES = {"precision": 0.0, "recall": 0.0, "f1": 0.0}
"""The figures of a verdict with nothing to compare (a failure, no answer)."""
_XSD_BOOLEAN = "http://www.w3.org/2001/XMLSchema#boolean"
_XSD_FLOAT = "http://www.w3.org/2001/XMLSchema#float"
_XSD_APPROXIMATE = frozenset({_XSD_FLOAT, "http://www.w3.org/2001/XMLSchema#double"})
_FLOAT_DIGITS = 5
"""Digits an xsd:float compares at: one holds 6 for sure (FLT_DIG), and a sum or average of
floats loses more by the order in which the engine adds (over 200 floats pyoxigraph and Oxigraph
server differed by 1.3e-6 of the value)."""
_NUMBER_DIGITS = (6, 12)
"""Fewest and most significant digits a single number compares at (`_same_number`): 6 is
what Virtuoso writes of an xsd:double; 12 is `_normalize` rule 4's precision."""
_ABSENT = "\x00absent"
"""The value of a gold column the answer lacks: equals no gold value."""

Key = str | None
RowKeys = tuple[Key, ...]


@dataclass(frozen=True)
class Table:
    """A result as normalized keys: what the comparison works on."""

    vars: tuple[str, ...]
    rows: tuple[RowKeys, ...]
    total: int
    truncated: bool
    ordered: bool
    form: str = "select"

    @cached_property
    def row_set(self) -> frozenset[RowKeys]:
        """Distinct rows (computed once: a gold's table is cached per gold)."""
        return frozenset(self.rows)

    @cached_property
    def column_sets(self) -> tuple[frozenset[Key], ...]:
        """Distinct values of each column."""
        if not self.vars or set(map(len, self.rows)) != {len(self.vars)}:
            return tuple(frozenset(row[j] for row in self.rows) for j in range(len(self.vars)))
        return tuple(map(frozenset, zip(*self.rows)))  # columns in C: rows are as wide as vars


def _approximate(result: QueryResult | None) -> frozenset[str]:
    """The approximate datatypes (xsd:float, xsd:double) among a one-row result's cells."""
    if result is None or len(result.rows) != 1:
        return frozenset()
    return frozenset(cell.datatype for cell in result.rows[0] if cell is not None and cell.datatype in _XSD_APPROXIMATE)


def _same_number(gold: Key, answer: Key, is_float: bool, approximate: bool) -> int:
    """The significant digits at which two normalized numbers are the same value, or 0.

    Integers keep every digit (counts, identifiers) unless one side is an approximate type. An
    xsd:float compares at 5 digits; other numbers at the fewer digits either side writes, no
    fewer than 6 (Virtuoso writes doubles so; an answer of `6.9` is not the average 6.9037) and
    no more than 12. Equal when they differ by at most half a unit in that digit."""
    try:
        a, b = Decimal(gold or "x"), Decimal(answer or "x")
    except InvalidOperation:
        return 0
    if not (a.is_finite() and b.is_finite()) or a == b or (not approximate and a == a.to_integral_value() and b == b.to_integral_value()):
        return 0
    written = min(len(a.normalize().as_tuple().digits), len(b.normalize().as_tuple().digits))
    digits = _FLOAT_DIGITS if is_float else min(max(written, _NUMBER_DIGITS[0]), _NUMBER_DIGITS[1])
    magnitude = max(abs(a), abs(b)).adjusted()
    return digits if abs(a - b) <= Decimal(5).scaleb(magnitude - digits) else 0


def table_of_result(result: QueryResult, normalizer: Normalizer) -> Table:
    if result.form == "ask":
        cell = normalizer.term(Term.literal("true" if result.boolean else "false", _XSD_BOOLEAN))
        return Table(("boolean",), ((cell,),), 1, False, False, "ask")
    rows = tuple(normalizer.rows(result.rows, len(result.vars)))
    return Table(tuple(result.vars), rows, result.total, result.truncated, result.ordered)


def result_of_items(items: list) -> QueryResult | None:
    """An answer list as a one-column result of the cells its items stand for (`item_term`), in
    the order the system wrote them (ordered, as the list's own table is: `_items_table`); None
    when an item is a JSON list or object, which stands for no cell."""
    if not all(isinstance(item, (str, int, float)) for item in items):
        return None
    rows = [[item_term(item)] for item in items]
    return QueryResult(form="select", vars=["item"], rows=rows, total=len(rows), ordered=True)


_LISTING = re.compile(r"\s*(?:[,;]\s*(?:(?:and|und|y)\s+)?|\s+(?:and|und|y)\s+)", re.IGNORECASE)
"""Where a text listing several things is split: `,` and `;` (with an `and` after them) and
`and` between words; German `und` and Spanish `y` as `and` (`ISWC, ESWC, ACL y NeurIPS`)."""


def listed_parts(text: str) -> list[str]:
    """The things one text lists (`A, B and C` -> A, B, C); the text alone when it lists none."""
    parts = [part.strip() for part in _LISTING.split(text)]
    return parts if all(parts) else [text]


@lru_cache(maxsize=1024)
def concatenated_columns(sparql: str) -> dict[str, str]:
    """The variables a query binds to a GROUP_CONCAT (`(GROUP_CONCAT(?n; SEPARATOR=", ") AS
    ?names)`), each with its separator (SPARQL's default: one space); empty when it has none or
    does not lex."""
    if "group_concat" not in sparql.lower():
        return {}
    try:
        tokens = terminals(sparql)
    except QueryError:
        return {}
    found: dict[str, str] = {}
    for i, token in enumerate(tokens):
        if token.keyword != "GROUP_CONCAT":
            continue
        depth, separator, j = 0, " ", i + 1
        for j in range(i + 1, len(tokens)):
            depth += {"(": 1, ")": -1}.get(tokens[j].text, 0)
            if tokens[j].keyword == "SEPARATOR" and j + 2 < len(tokens) and tokens[j + 2].kind == "string":
                separator = string_value(tokens[j + 2].text)
            if depth == 0:
                break
        if j + 2 < len(tokens) and tokens[j + 1].keyword == "AS" and tokens[j + 2].kind == "var":
            found[tokens[j + 2].text[1:]] = separator
    return found


def table_of_items(items: list, normalizer: Normalizer) -> Table:
    return _items_table(normalizer.items(items))


def _items_table(keys: list[str]) -> Table:
    rows = tuple((key,) for key in keys)
    return Table(("item",), rows, len(rows), False, True, "list")


def _host(iri: str) -> str:
    """Where an IRI lives: its authority (http and https alike, case-insensitive), or its scheme
    when it has none (`urn:`)."""
    scheme, _, rest = iri.partition(":")
    if rest.startswith("//"):
        return rest[2:].split("/", 1)[0].split("#", 1)[0].lower()
    return scheme.lower()


def _scheme_free(iri: str) -> str:
    """The IRI with https written as http (the same resource by either scheme)."""
    return "http:" + iri[6:] if iri[:6].lower() == "https:" else iri


class _GoldIris:
    """A gold's IRIs as an answer list's IRIs are compared with them: by full IRI (list rules
    without `iri_tail`, either scheme) when the answer's IRI has the host of a gold IRI, giving
    that gold IRI's key; by tail (the list rules) when it lives elsewhere."""

    def __init__(self, gold: QueryResult, untyped: Normalizer, full: Normalizer) -> None:
        self._iris = {cell.value for row in gold.rows for cell in row if cell is not None and cell.type == "uri"} if gold.form == "select" else set()
        self._untyped, self._full = untyped, full
        self.hosts = {_host(iri) for iri in self._iris}

    @cached_property
    def keys(self) -> dict[str, str]:
        """Full key -> the key the gold's table holds for that IRI. Built when an answer first
        names an IRI of a gold host (two normalizations per gold IRI: most of the judges' time
        when a list of prefixed names met a 1,500-IRI gold, whose hosts it never names)."""
        iris = list(self._iris)
        return dict(zip(self._full.texts(list(map(_scheme_free, iris))), self._untyped.texts(iris)))

    @cached_property
    def tails(self) -> set[str]:
        """The keys the gold's table holds for its IRIs."""
        return set(self.keys.values())


def _same_host_keys(items: list, keys: list[str], gold: _GoldIris, full: Normalizer) -> list[str]:
    """`keys` of an answer list with each IRI of a gold host keyed as `_GoldIris` says (in
    place); the items among them that share a gold IRI's tail but are not that IRI."""
    clashes = []
    for i, item in enumerate(items):
        iri = item_iri(item) if isinstance(item, str) else None
        if iri is None or _host(iri) not in gold.hosts:
            continue
        key = gold.keys.get(full.text(_scheme_free(iri)))
        if key is None:
            if keys[i] in gold.tails:
                clashes.append(iri)
            key = _ABSENT + iri  # equals no gold value
        keys[i] = key
    return clashes


@dataclass(frozen=True)
class Alignment:
    mapping: tuple[int, ...]
    """For each gold column, the answer column it maps to (-1: none)."""
    overlap: tuple[int, ...]
    """For each gold column, distinct values shared with its answer column."""


def align_columns(gold: Table, answer: Table, max_mappings: int) -> Alignment:
    """The injective gold -> answer column mapping with the largest value overlap."""
    g, a = len(gold.vars), len(answer.vars)
    overlap = [[len(ans & gs) for ans in answer.column_sets] + [0] * max(0, g - a) for gs in gold.column_sets]
    width = max(a, g)

    def score(mapping: tuple[int, ...]) -> tuple[int, int, int]:
        shared = sum(overlap[j][k] for j, k in enumerate(mapping))
        names = sum(1 for j, k in enumerate(mapping) if k < a and gold.vars[j] == answer.vars[k])
        places = sum(1 for j, k in enumerate(mapping) if j == k)
        return shared, names, places

    if _mapping_count(width, g) <= max_mappings:
        best = max(permutations(range(width), g), key=score, default=())
        top = score(best)[0] if best else 0
        best = _best_by_rows(gold, answer, best, (m for m in permutations(range(width), g) if score(m)[0] == top), score)
    else:
        best = _greedy(overlap, g, width)
    mapping = tuple(k if k < a else -1 for k in best)
    return Alignment(mapping, tuple(overlap[j][k] if k >= 0 else 0 for j, k in enumerate(mapping)))


_TIED_MAPPINGS = 720
"""Mappings sharing the most values that are compared row by row at most (`_best_by_rows`)."""


def _best_by_rows(gold: Table, answer: Table, best: tuple[int, ...], tied: Iterator[tuple[int, ...]], score: Callable) -> tuple[int, ...]:
    """`best`, unless it leaves gold rows unmatched and another mapping sharing as many values
    column by column (`tied`) matches more gold rows (then names, then places): columns with the
    same values (a relation and its inverse) are told apart by how their rows pair them, as
    Spider's comparator tries every permutation of columns."""
    if not gold.rows or len(best) < 2:
        return best
    others = list(islice(tied, _TIED_MAPPINGS))
    if len(others) < 2:  # `best` alone shares that many values: nothing to tell apart
        return best

    def rows_matched(mapping: tuple[int, ...]) -> int:
        kept = tuple(k if k < len(answer.vars) else -1 for k in mapping)
        return len(gold.row_set & set(project(answer, kept)))

    if rows_matched(best) == len(gold.row_set):
        return best
    return max([best, *others], key=lambda m: (rows_matched(m), *score(m)[1:]))


def _mapping_count(width: int, g: int) -> int:
    count = 1
    for i in range(g):
        count *= width - i
    return count


def _greedy(overlap: list[list[int]], g: int, width: int) -> tuple[int, ...]:
    pairs = sorted(((overlap[j][k], -abs(j - k), j, k) for j in range(g) for k in range(width)), reverse=True)
    chosen: dict[int, int] = {}
    used: set[int] = set()
    for _, _, j, k in pairs:
        if j not in chosen and k not in used:
            chosen[j] = k
            used.add(k)
    return tuple(chosen[j] for j in range(g))


def _repeats(gold: Table, answer_rows: list[RowKeys], answer_set: set[RowKeys]) -> str:
    """How two results with the same distinct rows differ as multisets, in words; empty when
    they do not, or when their distinct rows differ (a precision or recall threshold below 1
    accepted them as sets: repeats are not compared then)."""
    gold_rows = gold.rows
    if len(gold_rows) == len(answer_rows) == len(answer_set) == len(gold.row_set):
        return ""  # no row repeated on either side
    in_gold, in_answer = Counter(gold_rows), Counter(answer_rows)
    if in_gold == in_answer or in_gold.keys() != in_answer.keys():
        return ""
    more = sum(1 for row, n in in_answer.items() if n > in_gold[row])
    fewer = sum(1 for row, n in in_gold.items() if n > in_answer[row])
    parts = [f"{more} row(s) repeated more often than in the gold"] * bool(more) + [f"{fewer} row(s) repeated less often"] * bool(fewer)
    return f"{len(answer_rows)} answer rows, {len(gold_rows)} gold rows: " + ", ".join(parts)


def _names_of(pairs: list[tuple[Term | None, Term | None]], lookup: KgLookup) -> bool:
    """Whether in every (entity, text) pair the entity is an IRI and the text a literal that the
    KG gives as one of its names or descriptions (descriptions asked only when a text is no name)."""
    if any(entity is None or entity.type != "uri" or text is None or text.type != "literal" for entity, text in pairs):
        return False
    unnamed = [(entity.value, fold(text.value)) for entity, text in pairs if fold(text.value) not in lookup.names(entity.value)]  # type: ignore[union-attr]
    described = lookup.descriptions(iri for iri, _ in unnamed) if unnamed else {}
    return all(text in described[iri] for iri, text in unnamed)


def _partners(vars_: tuple[str, ...], k: int, derived: frozenset[str]) -> list[int]:
    """The columns paired with column `k` by the label rules: the column derived from it beside it
    (`?x__name`, `?x__entity`: `with_named_columns`) or the column it was derived from. Only a
    column in `derived` (what the rules added, not the answer's own) is paired."""
    var = vars_[k]
    base, _, suffix = var.rpartition("__")
    if var in derived and base and f"__{suffix}" in DERIVED_SUFFIXES and base in vars_:
        return [vars_.index(base)]
    return [i for i, v in enumerate(vars_) if v in derived and v in {var + s for s in DERIVED_SUFFIXES}]


def project(answer: Table, mapping: tuple[int, ...]) -> list[RowKeys]:
    """Answer rows as gold-shaped rows: mapped columns in gold order, extra columns dropped."""
    if mapping == tuple(range(len(answer.vars))):
        return list(answer.rows)
    return [tuple(row[k] if k >= 0 else _ABSENT for k in mapping) for row in answer.rows]


@lru_cache(maxsize=1024)
def order_keys(sparql: str) -> tuple[str, ...] | None:
    """Variables of the reference query's top-level ORDER BY, or None when any sort key is
    not a plain (or bracketted) variable, the query has no ORDER BY, or does not pass the guard.
    Read from the guard's own parse (`order_variables`): rdflib's parse of the same text, which
    this used, cost ~15-50 ms a query, once per order-sensitive question of a run."""
    try:
        return order_variables(sparql)
    except QueryError:
        return None


def order_violation(gold: Table, answer_rows: list[RowKeys], tie_columns: list[int] | None) -> int | None:
    """Position of the first answer row out of the gold's order (ties may come in any
    order), or None when the answer follows it."""
    ranks: dict[RowKeys, list[int]] = {}
    rank, previous = -1, object()
    for row in gold.rows:
        tie = row if tie_columns is None else tuple(row[c] for c in tie_columns)
        if tie != previous:
            rank, previous = rank + 1, tie
        ranks.setdefault(row, []).append(rank)
    current = 0
    for position, row in enumerate(answer_rows):
        later = [r for r in ranks.get(row, ()) if r >= current]
        if not later:
            return position
        current = min(later)
    return None


def _may_name_entities(gold: QueryResult, candidate: Candidate) -> bool:
    """Whether label-for-entity could read this answer: labels at hand, a gold IRI, an answer literal."""
    if candidate.lookup is None or not gold_iris(gold):
        return False
    if candidate.result is not None:
        return _HOLDS_LITERAL.get(candidate.result)
    return any(not isinstance(item, (str, int, float)) or item_term(item).type == "literal" for item in candidate.items or ())


def _holds_literal(result: QueryResult) -> bool:
    return any(cell is not None and cell.type == "literal" for row in result.rows for cell in row)


_HOLDS_LITERAL: GoldCache[bool] = GoldCache(_holds_literal, size=16)
"""`_holds_literal` by executed result (at most 16 held, and with them their results: the seeds of
the questions in flight, which a run judges together; 256 would keep alive results the bounded
`runs.ExecutionCache` has let go; identity: the seeds of a question share one execution,
`runs.ExecutionCache`): asked for every judgement's leniency figures, it read every cell of a
1,500-row result once per seed (most of the judges' Python calls in bench/run.py's run)."""


def _with_readings(verdict: Verdict, readings: dict[str, bool]) -> Verdict:
    """The verdict naming the answer-list readings applied (`details["readings"]`) and those that
    found something but were off (`details["readings_off"]`)."""
    applied = [r for r in READINGS if readings.get(r)]
    off = [r for r in READINGS if readings.get(r) is False]
    details = {**verdict.details, **({"readings": applied} if applied else {}), **({"readings_off": off} if off else {})}
    words = [f"read with {', '.join(applied)}"] * bool(applied) + [f"readings off that would read it otherwise: {', '.join(off)}"] * bool(off)
    return verdict.model_copy(update={"reason": "; ".join([verdict.reason, *words]), "details": details})


_SHARED = ("typed", "untyped", "_typed_golds", "_untyped_golds", "_answers", "_full", "_gold_iris")
"""What a variant of a judge (another rule set) shares with it: normalization is not a rule."""


class ExecutionJudge:
    """Equal sets by default, recall visible (see module docstring)."""

    name = "execution"

    def __init__(self, config: ExecutionJudgeConfig, *, base: ExecutionJudge | None = None) -> None:
        """`base`: the judge this one is a variant of (another rule set, `_variant`): it shares
        the base's prepared golds and answers (rules do not change normalization) and records no
        leniency figures of its own."""
        self.config = config
        self.config_sha256 = sha256_json({"logic": LOGIC_VERSION, **config.model_dump(mode="json")})
        self.version = f"{self.name}-{LOGIC_VERSION}+{self.config_sha256[:8]}"
        self._rules_on = rules_on(config)
        self._variants: dict[str, ExecutionJudge] | None = None if base is not None else {}
        self._variants_lock = threading.Lock()
        if base is not None:
            self.__dict__.update({k: base.__dict__[k] for k in _SHARED})
            return
        self.typed = Normalizer(config.normalize)
        self.untyped = Normalizer(config.list_normalize)
        self._typed_golds: GoldCache[Table] = GoldCache(lambda g: table_of_result(g, self.typed))
        self._untyped_golds: GoldCache[Table] = GoldCache(lambda g: table_of_result(g, self.untyped))
        self._answers: GoldCache[Table] = GoldCache(lambda result: table_of_result(result, self.typed))
        self._full = Normalizer(config.list_normalize.model_copy(update={"iri_tail": False}))
        self._gold_iris: GoldCache[_GoldIris] = GoldCache(lambda g: _GoldIris(g, self.untyped, self._full))

    def judge(self, question: Question, gold: QueryResult, candidate: Candidate) -> Verdict:
        verdict = self._decided(question, gold, candidate)
        if self._variants is None:
            return verdict
        applicable = self._applicable(gold, candidate, verdict)

        def decide(name: str) -> bool:
            return self._variant(name)._decided(question, gold, candidate).correct

        figures = leniency(verdict, self._rules_on, applicable, decide)
        return verdict.model_copy(update={"details": {**verdict.details, "leniency": figures}})

    def _applicable(self, gold: QueryResult, candidate: Candidate, verdict: Verdict) -> tuple[str, ...]:
        """The rules that may change the verdict on this answer: the result rules (label-for-entity
        only where the KG's labels are at hand, the gold holds an IRI and the answer a literal; the
        column rules only where the answer has more columns than the gold),
        and the answer-list readings that found something switched off (`_reading.Used`)."""
        wider = candidate.result is not None and candidate.result.form == "select" and gold.form == "select" and len(candidate.result.vars) > len(gold.vars)
        rules = [
            r for r in RESULT_RULES
            if (r != "label_for_entity" or _may_name_entities(gold, candidate)) and (r not in ("label_columns", "extra_columns") or wider)
        ]  # fmt: skip
        return (*rules, *verdict.details.get("readings_off", ()))

    def _variant(self, name: str) -> ExecutionJudge:
        """This judge under another rule set (`_leniency.Decide` names it), built once."""
        variant = self._variants.get(name)  # type: ignore[union-attr]
        if variant is None:
            with self._variants_lock:
                variant = self._variants.setdefault(name, ExecutionJudge(variant_config(self.config, name), base=self))  # type: ignore[union-attr]
        return variant

    def _decided(self, question: Question, gold: QueryResult, candidate: Candidate) -> Verdict:
        """The verdict under this judge's rules, without the leniency figures."""
        verdict = self._judge(question, gold, candidate)
        if not verdict.correct and self.config.split_listing:
            verdict = self._split_listing(question, gold, candidate) or self._unnested(question, gold, candidate) or verdict
        if candidate.predeclared_prefixes:
            names = ", ".join(candidate.predeclared_prefixes)
            details = {**verdict.details, "predeclared_prefixes": list(candidate.predeclared_prefixes)}
            reason = f"{verdict.reason}; ran with the store's predeclared prefixes {names} (store.predeclared_prefixes)"
            verdict = verdict.model_copy(update={"details": details, "reason": reason})
        return verdict

    def _split_listing(self, question: Question, gold: QueryResult, candidate: Candidate) -> Verdict | None:
        """The verdict on an answer list's one text read as the several items it lists, when that
        reading is right (`split_listing`); None otherwise."""
        items = candidate.items
        if candidate.result is not None or candidate.sparql_error is not None or not items or len(items) != 1 or len(gold.rows) < 2:
            return None
        parts = listed_parts(items[0]) if isinstance(items[0], str) else []
        if len(parts) < 2:
            return None
        verdict = self._judge(question, gold, candidate.model_copy(update={"items": parts}))
        if not verdict.correct:
            return None
        reason = f"one item listing several: {items[0]!r} read as {len(parts)} items; {verdict.reason}"
        return verdict.model_copy(update={"reason": reason, "details": {**verdict.details, "split_item": items[0], "rule": verdict.details.get("rule", "split_listing")}})

    def _unnested(self, question: Question, gold: QueryResult, candidate: Candidate) -> Verdict | None:
        """The verdict on an executed result whose one GROUP_CONCAT column is read as the values
        it joined (a row per value, the row's other cells kept), when that reading is right and
        the gold has more rows than the result (`split_listing`); None otherwise."""
        result = candidate.result
        if result is None or result.form != "select" or result.truncated or not result.rows or len(gold.rows) <= len(result.rows):
            return None
        joined = concatenated_columns(candidate.sparql or "")
        columns = [k for k, name in enumerate(result.vars) if name in joined]
        if len(columns) != 1 or not joined[result.vars[columns[0]]]:
            return None
        k, separator = columns[0], joined[result.vars[columns[0]]]
        rows = []
        for row in result.rows:
            cell = row[k]
            if cell is None or cell.type != "literal":
                return None
            rows += [[*row[:k], item_term(part), *row[k + 1 :]] for part in cell.value.split(separator)]
        unnested = result.model_copy(update={"rows": rows, "total": len(rows)})
        verdict = self._judge(question, gold, candidate.model_copy(update={"result": unnested}))
        if not verdict.correct:
            return None
        reason = f"GROUP_CONCAT read as the values it joined: ?{result.vars[k]} split at {separator!r} into {len(rows)} rows; {verdict.reason}"
        details = {**verdict.details, "unnested": result.vars[k], "rule": verdict.details.get("rule", "split_listing")}
        return verdict.model_copy(update={"reason": reason, "details": details})

    def _judge(self, question: Question, gold: QueryResult, candidate: Candidate) -> Verdict:
        if candidate.sparql_error is not None:
            also = "; its answer list is not judged: the SPARQL is the answer" if candidate.items is not None else ""
            path = candidate.failure or "invalid_sparql"
            return self._verdict(False, path, gold, reason=failure_reason(candidate) + also, details=dict(_NO_FIGURES))
        missing = vacuous_iris(candidate, question.sparql) if self.config.vacuous else []
        if missing:
            details = {**_NO_FIGURES, "missing_vocabulary": missing}
            return self._verdict(False, "vacuous", gold, reason=vacuous_reason(missing), details=details)
        clashes: list[str] = []
        readings: dict[str, bool] = {}
        if candidate.result is not None:
            answer, gold_table = self._answers.get(candidate.result), self._typed_golds.get(gold)
            compared = "executed result"
        elif candidate.items is not None:
            items = read_items(candidate.items, question.sparql, gold, candidate.store_prefixes, question.question, self.config.readings, readings)
            answer, clashes = self._list_table(items, gold)
            gold_table, compared = self._untyped_golds.get(gold), "answer list"
        else:
            return self._verdict(False, "no_answer", gold, reason="the system gave no answer and no SPARQL", details=dict(_NO_FIGURES))
        verdict = _Comparison(self, question, gold, gold_table, answer, compared, _approximate(candidate.result), candidate.result, candidate.lookup).verdict()
        if candidate.result is None and readings:
            verdict = _with_readings(verdict, readings)
        if clashes:
            shown = ", ".join(clashes[:3]) + (f" and {len(clashes) - 3} more" if len(clashes) > 3 else "")
            note = f"; {shown}: the tail of a gold IRI, but not the gold's IRI (an IRI of the gold IRIs' host compares as the full IRI)"
            verdict = verdict.model_copy(update={"reason": verdict.reason + note, "details": {**verdict.details, "iri_clashes": clashes}})
        if verdict.correct:
            return verdict
        if candidate.result is not None:
            normalizer, golds, rules_answer = self.typed, self._typed_golds, candidate.result
        else:  # the rules read an answer list as the one-column result its items stand for
            rules_answer = result_of_items(items)
            if rules_answer is None:
                return verdict
            normalizer, golds = self.untyped, self._untyped_golds

        def recompare(gold_result: QueryResult, answer: QueryResult) -> Verdict:
            table = golds.get(gold) if gold_result is gold else table_of_result(gold_result, normalizer)
            derived = frozenset(answer.vars) - frozenset(rules_answer.vars)  # the label rules' columns, not the answer's own
            return _Comparison(
                self, question, gold, table, table_of_result(answer, normalizer), compared, answer=answer, lookup=candidate.lookup, derived=derived
            ).verdict()

        ruled = try_rules(self.config, question, gold, rules_answer, candidate.lookup, verdict, recompare, listed=candidate.result is None)
        kept = {k: verdict.details[k] for k in ("readings", "readings_off") if k in verdict.details}
        return ruled.model_copy(update={"details": {**ruled.details, **kept}}) if ruled is not verdict and kept else ruled

    def _list_table(self, items: list, gold: QueryResult) -> tuple[Table, list[str]]:
        """An answer list's table (`list_normalize` rules; with `iri_tail`, an IRI of a gold
        IRI's host compares as the full IRI: `_GoldIris`) and the IRIs that only shared a tail."""
        keys = self.untyped.items(items)
        if not self.untyped.config.iri_tail or not any(isinstance(item, str) and item_iri(item) is not None for item in items):
            return _items_table(keys), []  # no IRI to key as the gold's: its IRIs are not read (an empty list, names)
        gold_iris = self._gold_iris.get(gold)
        clashes = _same_host_keys(items, keys, gold_iris, self._full) if gold_iris.hosts else []
        return _items_table(keys), clashes

    def _verdict(
        self, correct: bool, path: str, gold: QueryResult, *, matched: int = 0, unmatched: int = 0, missing: int | None = None, reason: str = "", details: dict
    ) -> Verdict:
        return new_verdict({  # fields built here, typed: validation skipped on the hot path
            "judge": self.name, "version": self.version, "config_sha256": self.config_sha256, "correct": correct, "path": path,
            "matched": matched, "unmatched": unmatched, "missing": missing, "gold_total": gold.total, "reason": reason, "details": details,
        })  # fmt: skip


class _Comparison:
    """One answer against one gold; `verdict()` decides and explains."""

    def __init__(
        self, judge: ExecutionJudge, question: Question, gold: QueryResult, gold_table: Table, answer_table: Table, compared: str,
        answer_datatypes: frozenset[str] = frozenset(), answer: QueryResult | None = None, lookup: KgLookup | None = None,
        derived: frozenset[str] = frozenset(),
    ) -> None:
        self.judge, self.config = judge, judge.config
        self.question, self.gold, self.g, self.a = question, gold, gold_table, answer_table
        self.answer_datatypes = answer_datatypes
        """Approximate datatypes (xsd:float, xsd:double) of the answer's cells, when it was executed."""
        self.answer, self.lookup = answer, lookup
        """The answer's typed result (None: an answer list) and the KG's labels: `label_columns` reads them."""
        self.derived = derived
        """The answer's columns the label rules derived beside its own (`with_named_columns`): `_partners`."""
        self.details: dict = {"compared": compared}
        self.mapping: tuple[int, ...] = ()
        self.answer_set: set[RowKeys] = set()

    def verdict(self) -> Verdict:
        g, a = self.g, self.a
        alignment = align_columns(g, a, self.config.max_column_mappings)
        self.mapping = alignment.mapping
        rows = project(a, alignment.mapping)
        gold_set, answer_set = g.row_set, set(rows)
        self.answer_set = answer_set
        matched = len(gold_set & answer_set)
        self.details["columns"] = {g.vars[j]: (a.vars[k] if k >= 0 else None) for j, k in enumerate(alignment.mapping)}
        extra = [v for k, v in enumerate(a.vars) if k not in alignment.mapping]
        if extra:
            self.details["extra_columns"] = extra
        counts = {"matched": matched, "unmatched": len(answer_set) - matched, "missing": len(gold_set) - matched}
        missing_cols = [g.vars[j] for j, k in enumerate(alignment.mapping) if k < 0]
        disjoint = [(g.vars[j], a.vars[k]) for j, k in enumerate(alignment.mapping) if k >= 0 and alignment.overlap[j] == 0]
        if disjoint and gold_set and answer_set:
            self.details["disjoint_columns"] = {gv: av for gv, av in disjoint}
        if g.truncated or a.truncated:
            return self._truncated(alignment, gold_set, answer_set, matched, counts, missing_cols)
        if not matched and self._path() == "value" and len(answer_set) == 1 and self._same_single_number(next(iter(answer_set)), alignment.mapping):
            matched, counts = 1, {"matched": 1, "unmatched": 0, "missing": 0}
        precision, recall = self._figures(matched, len(answer_set), len(gold_set))
        if a.rows and matched == len(answer_set) and matched < len(gold_set):
            self.details["strict_subset"] = f"{matched} of {len(gold_set)}"
        return self._decide(precision, recall, rows, counts, missing_cols)

    def _figures(self, matched: int, answer_rows: int, gold_rows: int) -> tuple[float, float]:
        precision = matched / answer_rows if answer_rows else (1.0 if gold_rows == 0 else 0.0)
        recall = matched / gold_rows if gold_rows else (1.0 if answer_rows == 0 else 0.0)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        self.details.update(precision=precision, recall=recall, f1=f1, answer_rows=answer_rows, gold_rows=gold_rows)
        return precision, recall

    def _decide(self, precision: float, recall: float, rows: list[RowKeys], counts: dict, missing_cols: list[str]) -> Verdict:
        cfg = self.config
        path = self._path()
        figures = (
            f"{counts['matched']} of {self.details['answer_rows']} answer rows in the gold, "
            f"{counts['matched']} of {self.details['gold_rows']} gold rows in the answer "
            f"(precision {precision:.3f} needs >= {cfg.min_precision}, recall {recall:.3f} needs >= {cfg.min_recall})"
        )
        correct = precision >= cfg.min_precision and recall >= cfg.min_recall
        if missing_cols and (rows or self.g.rows):  # two empty results are equal whatever their columns (Spider's `result_eq`)
            path, correct = "missing_column", False
            figures = f"the answer has no column for gold column(s) {', '.join('?' + c for c in missing_cols)}; " + figures
        elif correct:
            rejected_by, note = self._beyond_standard(rows)
            figures += note
            if rejected_by is not None:
                path, correct = rejected_by, False
        if correct and self._order_matters():
            problem = self._order_problem(rows)
            self.details["order_checked"] = True
            if problem is not None:
                path, correct = "order", False
                figures += f"; {problem}"
            else:
                figures += "; order matches the gold's (ties accepted)"
        disjoint = self.details.get("disjoint_columns")
        if disjoint:
            figures += "; no shared value between " + ", ".join(f"gold ?{gv} and answer ?{av}" for gv, av in disjoint.items())
        subset = self.details.get("strict_subset")
        reason = f"{self._describe(path)}: {figures}" + (f"; strict_subset: {subset}" if subset else "")
        return self.judge._verdict(correct, path, self.gold, reason=reason, details=self.details, **counts)

    def _beyond_standard(self, rows: list[RowKeys]) -> tuple[str | None, str]:
        """Where an answer whose rows pass as sets differs from the gold under the field's
        comparator (extra columns, rows as bags): the rule that rejects it (its path: the
        comparator rule switched off), or None, and the words the reason adds. The rules that
        let it pass are named in `details["comparator_rules"]`."""
        cfg, used, notes = self.config, [], []
        if not rows and not self.g.rows:
            return None, ""  # two empty results are equal whatever their columns (Spider's `result_eq`)
        labels, others = self._extra_columns()
        if others or labels:
            shown = ", ".join("?" + v for v in [*labels, *others])
            if others and not cfg.extra_columns:
                why = f" ({', '.join('?' + v for v in labels)} the KG's labels of an aligned entity column)" if labels else ""
                return "extra_columns", f"; the answer has column(s) the gold lacks: {shown}{why} (rule extra_columns off)"
            if labels and not others and not (cfg.label_columns or cfg.extra_columns):
                return "extra_columns", f"; the answer has column(s) the gold lacks: {shown}, the KG's labels of an aligned entity column (rules label_columns and extra_columns off)"
            rule = "label_columns" if labels and not others and cfg.label_columns else "extra_columns"
            used.append(rule)
            notes.append(f"{rule}: extra column(s) {shown} not compared" + (" (the KG's labels of an aligned entity column)" if rule == "label_columns" else ""))
        repeats = _repeats(self.g, rows, self.answer_set)
        if repeats:
            if not cfg.duplicates:
                return "duplicates", f"; {repeats} (rule duplicates off: rows compared as multisets)"
            used.append("duplicates")
            notes.append(f"duplicates: {repeats}, rows compared as sets")
        if used:
            self.details["comparator_rules"] = used
        return None, "".join("; " + n for n in notes)

    def _extra_columns(self) -> tuple[list[str], list[str]]:
        """The answer's columns no gold column is aligned with: those holding the KG's labels of
        an aligned entity column (`_label_column`), and the others. A column the label rules
        derived beside one of the answer's (`with_named_columns`) is not extra when either of the
        two is aligned."""
        mapped = {k for k in self.mapping if k >= 0}
        vars_ = self.a.vars
        labels, others = [], []
        for k, var in enumerate(vars_):
            if k in mapped or any(p in mapped for p in _partners(vars_, k, self.derived)):
                continue
            if any(p < k for p in _partners(vars_, k, self.derived)):
                continue  # a derived column and its source, both unaligned: one extra column
            (labels if self._label_column(k, mapped) else others).append(var)
        return labels, others

    def _label_column(self, k: int, mapped: set[int]) -> bool:
        """Whether answer column `k` and one aligned answer column are an entity column and its
        names, row by row: every bound value of `k` a literal the KG gives as a name
        (`KgLookup.names`: labels, tail) or a description (`KgLookup.descriptions`) of the IRI in
        the same row of the aligned column (`?x ?xLabel` for a gold of `?x`), or every bound
        value of `k` an IRI bearing the aligned column's value so (`?x ?xLabel` for a gold of names)."""
        answer, lookup = self.answer, self.lookup
        if answer is None or lookup is None or answer.form != "select" or not answer.rows:
            return False
        for m in sorted(mapped):
            names = [(row[m], row[k]) for row in answer.rows if row[k] is not None]
            entities = [(row[k], row[m]) for row in answer.rows if row[k] is not None]
            if _names_of(names, lookup) or _names_of(entities, lookup):
                return True
        return False

    def _same_single_number(self, row: RowKeys, mapping: tuple[int, ...]) -> bool:
        """Whether the answer's one value is the gold's one number at the precision the two
        have (`_same_number`); says so in the details when it is."""
        numbers = self.config.normalize.numbers if self.details["compared"] == "executed result" else self.config.list_normalize.numbers
        cell = self.gold.rows[0][0] if self.gold.rows and self.gold.rows[0] else None
        if not numbers or not self.config.approximate_numbers or cell is None or mapping[0] < 0 or not self.g.rows:
            return False
        approximate = {cell.datatype} & _XSD_APPROXIMATE | self.answer_datatypes
        digits = _same_number(self.g.rows[0][0], row[0], _XSD_FLOAT in approximate, bool(approximate))
        if digits:
            self.details["number_digits"] = digits
        return bool(digits)

    def _path(self) -> str:
        if self.g.form == "ask":
            return "ask"
        return "value" if len(self.g.vars) == 1 and self.g.total == 1 else "set"

    @staticmethod
    def _describe(path: str) -> str:
        return {"ask": "ASK answer compared as a value", "value": "single value compared as a value"}.get(path, "set comparison")

    def _order_matters(self) -> bool:
        cfg, g = self.config, self.g
        return cfg.check_order and self.question.order_sensitive and g.form == "select" and g.ordered and len(g.rows) > 1

    def _order_problem(self, rows: list[RowKeys]) -> str | None:
        if not self.a.ordered:
            return "the question is order-sensitive and the answer's query has no ORDER BY"
        keys = order_keys(self.question.sparql)
        tie_columns = None
        if keys is not None and all(k in self.g.vars for k in keys):
            tie_columns = [self.g.vars.index(k) for k in keys]
        self.details["tie_columns"] = list(keys) if tie_columns is not None else None
        position = order_violation(self.g, rows, tie_columns)
        if position is None:
            return None
        return f"order differs from the gold's at answer row {position + 1} (ties accepted)"

    def _truncated(self, alignment: Alignment, gold_set: set, answer_set: set, matched: int, counts: dict, missing_cols: list[str]) -> Verdict:
        g, a = self.g, self.a
        self.details.update(gold_truncated=g.truncated, answer_truncated=a.truncated, gold_total=g.total, answer_total=a.total)
        same_cut = (
            g.truncated and a.truncated and len(g.rows) == len(a.rows) and g.total == a.total
            and g.ordered == a.ordered and alignment.mapping == tuple(range(len(a.vars)))
        )
        if same_cut and not missing_cols:
            precision, recall = self._figures(matched, len(answer_set), len(gold_set))
            self.details["compared_rows"] = "kept rows only"
            verdict = self._decide(precision, recall, project(a, alignment.mapping), counts, missing_cols)
            note = f"; both cut to {len(g.rows)} of {g.total} rows by the same rule: rows beyond the cap not compared"
            return verdict.model_copy(update={"reason": verdict.reason + note})
        if a.truncated and not g.truncated:
            why = f"the answer has {a.total} rows, over the row cap ({len(a.rows)} kept); the gold has {g.total}"
        elif g.total != a.total:
            why = f"the gold has {g.total} rows ({len(g.rows)} kept), the answer {a.total}: the sets differ"
        else:
            why = (
                f"the gold was cut to {len(g.rows)} of {g.total} rows and the answer's columns or cut differ, "
                "so equality cannot be concluded; raise gold.row_cap and run.row_cap to judge it"
            )
        self.details["kept_rows_matched"] = matched
        self._figures(matched, len(answer_set), len(gold_set))  # on the kept rows: P/R/F1 in every verdict
        return self.judge._verdict(False, "truncated", self.gold, reason=f"truncated result: {why}", details=self.details, **counts)
