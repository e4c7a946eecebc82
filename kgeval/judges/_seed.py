"""The seed judge: exact set match for small golds, precision-only membership for large ones.

It is kept as it was first specified so that numbers stay comparable over time. Its known
weakness (DESIGN invariant 4): membership is precision-only, so a strict subset of a large
gold passes. Its verdicts therefore show recall and say `strict_subset: N of M` when the answer
is one; the execution judge is the one whose decision sees recall.

Items: a gold row is the set of its normalized cells; an answer item is one normalized value
(from an answer list) or the set of normalized cells of one executed result row. An item
matches a gold row when they share a value, so "Alice" matches the row (Alice, 5).

Speed (the membership path on answer lists is the hot path of a run's judging):
- the gold is indexed once (value -> ids of the gold rows holding it) and cached per gold object;
- the index remembers (bounded) each answer text it has met with its key, in one of two memos:
  texts whose key is a gold value, and texts whose key is not; an answer item met before costs
  one dict lookup;
- a text that alone spells its gold value (the common case: the gold's own spelling) is also in
  a set, so the usual item costs one set lookup, which touches less memory than a dict lookup
  (with many large golds in turn, judging is bound by memory latency, not by the interpreter);
- a verdict's content is a pure function of a few counts once the gold is fixed, so it is
  memoized (bounded) per gold index, and built without pydantic's per-field work (`new_verdict`).
tests/judges/test_seed_fast.py checks all of it against the straightforward implementation
(tests/judges/seed_reference.py), field for field, on random inputs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import compress, filterfalse, repeat
from operator import is_

from kgeval._files import sha256_json
from kgeval.config import SeedJudgeConfig
from kgeval.holdout import Question
from kgeval.judges._cache import GoldCache
from kgeval.judges._model import Candidate, Verdict, new_verdict
from kgeval.judges._normalize import Normalizer
from kgeval.judges._reading import read_items
from kgeval.judges._rules import failure_reason, vacuous_iris, vacuous_reason
from kgeval.stores import QueryResult

LOGIC_VERSION = "13"
"""4: model failures (invalid SPARQL, refused, candidate timeout) with no answer list are judged
wrong, with the failure as path, and vacuous results (`judges.seed.vacuous`) are wrong; every
other decision is as in 3. 5: numbers with a fractional part compare at 12 significant digits
(`_normalize` rule 4: a computed average as xsd:decimal equals it as a double). 6: a text
whose digits start with a zero is an identifier, not a number (`00118` != `118`); a result is
not vacuous for IRIs the reference query needs too. 7: a date-time at midnight UTC is its date
(`_normalize` rule 5b); an answer list to an ASK reads yes / no as booleans. 8: an answer
list's prefixed names the reference query declares are IRIs, and `Name (ID)` is the ID when the
ID is a gold IRI's tail (`_normalize.read_items`). 9: thousands separators are read
(`2,872,800` = `2872800`). 10: an answer list's prefixed names the store predeclares
(`store.predeclared_prefixes`) are IRIs too, where the reference query does not declare them;
yes / no answer a gold of one xsd:boolean value (a yes/no question asked with SELECT); a date
written out in English (`January 1, 1985`) is that date where the gold holds dates. 11: a year
alone (`1994`) is the gold's 1 January of that year where the gold holds it (a date known to the
year); where every gold value is a number, one with a unit, a currency, a scale word or a hedge
(`169 minutes`, `$1,200`, `2.5 million`, `about 150`), or in words (`three`), is that number,
unless the question names another unit of its kind; a text saying it is the answer (`The answer
is X.`) is X; the one date or number of a plain sentence is read; a numeric date whose order of
day and month is plain is read; `None` answers an empty gold; a yes/no whose first word the text
contradicts is not read (`_reading.read_items`). 12 (acceptance test 6): an answer list reads
German and Spanish forms (yes/no, dates, dot-grouped numbers before a decimal comma, number words
up to twelve, "none") and SPARQL JSON terms as their values; a German or Spanish word qualifying
a sentence's one value keeps it unread (`_reading.read_items`); a `mailto:` or `tel:` IRI compares by
its address under `iri_tail` (`_normalize`). 13 (issue 32): the answer-list
readings are named and switchable (`readings`), and those that need a guess are off by default:
a hedged number (`about 150`), a year for a date, the one value of a sentence; one row whose values are all unbound
(`SELECT (MIN(?x) AS ?m)` over no solutions) says nothing, as a count of 0 does: vacuous when
vocabulary the KG lacks makes it (`_rules.is_uninformative`)."""

_LISTS_BEFORE_SPELLINGS = 8
"""Answer lists judged against a gold before its spellings are learned (`GoldIndex.spelled`)."""

Item = frozenset[str]
_UNBOUND = frozenset([None])

_MEMO_LIMIT = 1 << 14
"""Answer texts an index remembers beyond the gold's own spellings, and verdict contents an
index remembers (then each starts over)."""


@dataclass(eq=False)
class GoldIndex:
    """A gold prepared for the seed judge."""

    rows: dict[str, tuple[int, ...]]
    """Normalized value -> ids of the (non-empty, kept) gold rows that hold it."""
    size: int
    """Gold items: non-empty kept rows plus the rows beyond the cap (1 for ASK)."""
    spelled: dict[str, str]
    """A gold cell's own text -> its key, where the text normalizes to the cell's key: an answer
    item spelt as the gold spells it skips normalization. Filled by `learn_spellings` when the
    `_LISTS_BEFORE_SPELLINGS`-th answer list is judged against the gold (executed results never
    read it): learning costs two normalizations per gold cell, and a text met in an earlier list
    is memoized anyway, so it pays only where many lists are judged against one gold."""
    injective: bool = False
    """Each value is in one gold row and no two values share a row (a one-column gold of
    distinct values): gold items covered by an answer's hits = the number of its hit values."""
    inside: dict[str, str] = field(default_factory=dict)
    """Answer text -> its key, for texts whose key is a gold value: `spelled`, plus the answer
    texts met so far. Keys are pure functions of the text, so this is a memo, never a source of
    difference."""
    outside: dict[str, str] = field(default_factory=dict)
    """Answer text -> its key, for the texts met so far whose key is not a gold value."""
    lone: set[str] = field(default_factory=set)
    """The texts of `inside` that no other text of `inside` shares a key with: distinct lone
    texts have distinct keys, so an answer's lone texts are counted without their keys (a set
    lookup touches less memory than a dict lookup: the hot path)."""
    first: dict[str, str] = field(default_factory=dict)
    """Key of a text of `inside` -> the first text of `inside` met with it (lone until a second
    one is met)."""
    decided: dict[tuple[int, int, int, bool], dict] = field(default_factory=dict)
    """(answer items, matched, covered, full answer) -> the verdict's fields: with the gold and
    the judge fixed, a verdict is a pure function of these figures."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held while an answer list is counted (`list_counts`): which texts are lone changes as
    texts are met, and a run's worker threads share the index."""
    spellings_known: bool = False
    """`spelled` (and the memos it seeds) are filled."""
    lists_met: int = 0
    """Answer lists judged against the gold so far (up to the one that fills `spelled`)."""

    def learn_spellings(self, gold: QueryResult, normalizer: Normalizer) -> None:
        """Fill `spelled` and the memos from the gold's cells, once (under `lock`), when the
        `_LISTS_BEFORE_SPELLINGS`-th answer list comes: the earlier ones are normalized item by
        item (and memoized)."""
        if self.spellings_known:
            return
        self.lists_met += 1
        if self.lists_met < _LISTS_BEFORE_SPELLINGS:
            return
        cells = [term for row in gold.rows for term in row if term is not None] if gold.form == "select" else []
        values = [term.value for term in cells]
        for value, key, spelt in zip(values, normalizer.cells(cells), normalizer.items(values)):
            if spelt == key:
                self.spelled[_own_copy(value)] = key
        self.forget()
        self.spellings_known = True

    def forget(self) -> None:
        """Start the text memos over (bounded memory)."""
        self.inside.clear()
        self.outside.clear()
        self.lone.clear()
        self.first.clear()
        for text, key in self.spelled.items():
            self.remember(text, key)

    def remember(self, text: str, key: str) -> None:
        """Memoize a text whose key is a gold value (a text not memoized yet)."""
        self.inside[text] = key
        first = self.first.setdefault(key, text)
        if first is text:
            self.lone.add(text)
        else:
            self.lone.discard(first)


def index_gold(gold: QueryResult, normalizer: Normalizer) -> GoldIndex:
    if gold.form == "ask":
        return GoldIndex({"true" if gold.boolean else "false": (0,)}, 1, {}, True, spellings_known=True)
    rows: dict[str, list[int]] = {}
    kept = 0
    for row in normalizer.rows(gold.rows, len(gold.vars)):
        values = set(row)
        values.discard(None)
        if not values:
            continue
        for value in values:
            rows.setdefault(value, []).append(kept)
        kept += 1
    frozen = {v: tuple(ids) for v, ids in rows.items()}
    injective = all(len(ids) == 1 for ids in frozen.values()) and len({ids[0] for ids in frozen.values()}) == len(frozen)
    return GoldIndex(frozen, kept + gold.total - len(gold.rows), {}, injective)


def _own_copy(text: str) -> str:
    """A new string equal to `text`: the index's own spellings are allocated one after the
    other, so the memo lookups of the hot path touch fewer memory pages than the gold's cells
    (spread among their Term objects) would."""
    return (text + "\0")[:-1]


def list_counts(items: list, index: GoldIndex, normalizer: Normalizer) -> tuple[int, int, int]:
    """(distinct keys, distinct keys in the gold, gold items they cover) of an answer list.

    The membership hot path: one set lookup per item that is a lone text of the index (see
    `GoldIndex.lone`), a dict lookup per other item met before (spelt as in the gold, or met in
    an earlier answer). Lone texts, other gold texts and texts outside the gold have disjoint
    keys, so distinct keys are counted per kind; a text met for the first time may share its
    key with a lone text, so then the lone texts' keys are looked up.
    """
    try:
        rest = list(filterfalse(index.lone.__contains__, items))
    except TypeError:  # an unhashable item (a JSON list or object): normalize every item
        keys = list(set(map(normalizer.item, items)))
        return (len(keys), *_match(index, keys))
    lone = index.lone.intersection(items) if rest else set(items)
    inside: set[str] = set()
    outside: set[str] = set()
    first_met = False
    if rest:
        found = list(map(index.outside.get, rest))
        outside.update(found)
        if None in outside:
            outside.discard(None)
            rest = list(compress(rest, map(is_, found, repeat(None))))
            found = list(map(index.inside.get, rest))
            inside.update(found)
            if None in inside:
                inside.discard(None)
                if len(index.inside) + len(index.outside) >= len(index.spelled) + _MEMO_LIMIT:
                    index.forget()
                    return list_counts(items, index, normalizer)
                first_met = _meet(compress(rest, map(is_, found, repeat(None))), index, normalizer, inside, outside)
    if first_met or not index.injective:
        inside.update(map(index.inside.__getitem__, lone))
        matched = len(inside)
    else:
        matched = len(lone) + len(inside)
    covered = matched if index.injective else len(set().union(*map(index.rows.__getitem__, inside)))
    return matched + len(outside), matched, covered


def _meet(texts: Iterable, index: GoldIndex, normalizer: Normalizer, inside: set[str], outside: set[str]) -> bool:
    """Normalize texts met for the first time into `inside` or `outside` and memoize them;
    whether one has a gold value as its key."""
    rows = index.rows
    met_inside = False
    for text in texts:
        key = normalizer.item(text)
        memoize = type(text) is str  # 1, 1.0 and True are one dict key but not one key
        if key in rows:
            inside.add(key)
            met_inside = True
            if memoize:
                index.remember(text, key)
        else:
            outside.add(key)
            if memoize:
                index.outside[text] = key
    return met_inside


def candidate_items(candidate: Candidate, normalizer: Normalizer) -> list[str] | list[Item] | None:
    """The answer as distinct items: values for a list, value sets for result rows; None
    when the system gave neither list nor result."""
    if candidate.items is not None:
        return list(dict.fromkeys(normalizer.items(candidate.items)))
    if candidate.result is None:
        return None
    return result_items(candidate.result, normalizer)


def result_items(result: QueryResult, normalizer: Normalizer) -> list[str] | list[Item]:
    """An executed result as distinct items (seeds executing the same query share one
    result, so the judge prepares it once: `SeedJudge._answers`)."""
    if result.form == "ask":
        return ["true" if result.boolean else "false"]
    rows = map(frozenset, normalizer.rows(result.rows, len(result.vars)))
    return list(dict.fromkeys(row - _UNBOUND if None in row else row for row in rows if row and row != _UNBOUND))


def _match(index: GoldIndex, answer: list[str] | list[Item]) -> tuple[int, int]:
    """(answer items sharing a value with the gold, gold items sharing a value with the answer)."""
    rows = index.rows
    if not answer or isinstance(answer[0], str):
        hits = [rows[v] for v in answer if v in rows]
        matched = len(hits)
    else:  # value sets: an item matches when it shares a value with the gold (counted in C)
        shared = rows.keys() & set().union(*answer)
        matched = len(answer) - sum(map(shared.isdisjoint, answer))
        hits = list(map(rows.__getitem__, shared))
    covered = len(set().union(*hits)) if hits else 0
    return matched, covered


class SeedJudge:
    """Exact below `exact_below` gold items, membership at or above (see module docstring)."""

    name = "seed"

    def __init__(self, config: SeedJudgeConfig) -> None:
        self.config = config
        self.config_sha256 = sha256_json({"logic": LOGIC_VERSION, **config.model_dump(mode="json")})
        self.version = f"{self.name}-{LOGIC_VERSION}+{self.config_sha256[:8]}"
        self.normalizer = Normalizer(config.normalize)
        self._golds: GoldCache[GoldIndex] = GoldCache(lambda gold: index_gold(gold, self.normalizer))
        self._answers: GoldCache[list[str] | list[Item]] = GoldCache(lambda result: result_items(result, self.normalizer))

    def judge(self, question: Question, gold: QueryResult, candidate: Candidate) -> Verdict:
        items = candidate.items
        if items is not None:
            items = read_items(items, question.sparql, gold, candidate.store_prefixes, question.question, self.config.readings)
        if items is not None:
            index = self._golds.get(gold)
            with index.lock:
                index.learn_spellings(gold, self.normalizer)
                answer_items, matched, covered = list_counts(items, index, self.normalizer)
            full_answer = True
        else:
            early = self._model_failure(gold, candidate, question.sparql)
            if early is not None:
                return early
            answer = self._answers.get(candidate.result) if candidate.result is not None else candidate_items(candidate, self.normalizer)
            if answer is None:
                return new_verdict(self._fields(False, "no_answer", gold, reason="the system gave no answer and no SPARQL"))
            index = self._golds.get(gold)
            matched, covered = _match(index, answer)
            answer_items = len(answer)
            full_answer = candidate.result is not None and not candidate.result.truncated
        decision = (answer_items, matched, covered, full_answer)
        fields = index.decided.get(decision)
        if fields is None:
            if len(index.decided) >= _MEMO_LIMIT:
                index.decided.clear()
            fields = index.decided[decision] = self._decide(gold, index.size, answer_items, matched, covered, full_answer)
        fields = fields.copy()
        fields["details"] = fields["details"].copy()
        return new_verdict(fields)

    def _model_failure(self, gold: QueryResult, candidate: Candidate, reference: str) -> Verdict | None:
        """A failure verdict when the SPARQL failed (and no list was given) or its result is
        vacuous; None when the answer is to be compared."""
        if candidate.failure is not None or candidate.sparql_error is not None:
            return new_verdict(self._fields(False, candidate.failure or "invalid_sparql", gold, reason=failure_reason(candidate)))
        missing = vacuous_iris(candidate, reference) if self.config.vacuous else []
        if missing:
            details = {"missing_vocabulary": missing, "precision": 0.0, "recall": 0.0, "f1": 0.0}
            return new_verdict(self._fields(False, "vacuous", gold, reason=vacuous_reason(missing), details=details))
        return None

    def _decide(self, gold: QueryResult, gold_items: int, answer_items: int, matched: int, covered: int, full_answer: bool) -> dict:
        """A verdict's fields: a pure function of these figures (memoized by `judge`)."""
        details = _figures(matched, covered, answer_items, gold_items, full_answer)
        if gold.form == "ask" or gold.total < self.config.exact_below:
            return self._exact(gold, gold_items, answer_items, matched, covered, details)
        return self._membership(gold, answer_items, matched, details)

    def _exact(self, gold: QueryResult, gold_items: int, answer_items: int, matched: int, covered: int, details: dict) -> dict:
        missing = gold_items - covered
        unmatched = answer_items - matched
        correct = unmatched == 0 and missing == 0
        path = "ask" if gold.form == "ask" else "exact"
        reason = (
            f"exact set match after normalization: {matched} of {answer_items} answer items in the gold, "
            f"{missing} of {gold_items} gold items missing"
        )
        return self._fields(correct, path, gold, matched, unmatched, missing, _with_subset(reason, details), details)

    def _membership(self, gold: QueryResult, answer_items: int, matched: int, details: dict) -> dict:
        precision = details["precision"]
        correct = answer_items >= self.config.min_items and precision >= self.config.min_precision
        reason = (
            f"membership: {matched} of {answer_items} answer items in the full gold "
            f"(precision {precision:.3f}, needs >= {self.config.min_precision}); "
            f"{answer_items} items (needs >= {self.config.min_items}); "
            f"recall {details['recall']:.3f} (not checked by membership)"
        )
        if gold.truncated:
            reason += f"; gold kept {len(gold.rows)} of {gold.total} rows"
        return self._fields(correct, "membership", gold, matched, answer_items - matched, None, _with_subset(reason, details), details)

    def _fields(
        self,
        correct: bool,
        path: str,
        gold: QueryResult,
        matched: int = 0,
        unmatched: int = 0,
        missing: int | None = None,
        reason: str = "",
        details: dict | None = None,
    ) -> dict:
        """A verdict's fields, every one, in declaration order (what `new_verdict` needs)."""
        return {
            "judge": self.name,
            "version": self.version,
            "config_sha256": self.config_sha256,
            "correct": correct,
            "path": path,
            "matched": matched,
            "unmatched": unmatched,
            "missing": missing,
            "gold_total": gold.total,
            "reason": reason,
            "details": details or {},
        }


def _figures(matched: int, covered: int, answer_items: int, gold_items: int, full_answer: bool) -> dict:
    """Precision, recall and F1 over items, and whether the answer is a strict subset.

    Recall counts gold items sharing a value with the answer over all gold items (rows beyond
    the gold's cap count as not given, so recall is a lower bound when the gold is truncated).
    `full_answer`: an answer list, or an executed result that was not truncated.
    """
    precision = matched / answer_items if answer_items else (1.0 if gold_items == 0 else 0.0)
    recall = covered / gold_items if gold_items else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    details: dict = {"precision": precision, "recall": recall, "f1": f1}
    if full_answer and answer_items and matched == answer_items and covered < gold_items:
        details["strict_subset"] = f"{covered} of {gold_items}"
    return details


def _with_subset(reason: str, details: dict) -> str:
    subset = details.get("strict_subset")
    return f"{reason}; strict_subset: {subset}" if subset else reason
