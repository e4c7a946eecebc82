"""The seed judge: exact set match for small golds, precision-only membership for large ones.

It is kept as it was first specified so that numbers stay comparable over time. Its known
weakness (DESIGN invariant 4): membership is precision-only, so a strict subset of a large
gold passes. Its verdicts therefore show recall and say `strict_subset: N of M` when the answer
is one; the execution judge is the one whose decision sees recall.

Items: a gold row is the set of its normalized cells; an answer item is one normalized value
(from an answer list) or the set of normalized cells of one executed result row. An item
matches a gold row when they share a value, so "Alice" matches the row (Alice, 5).

Speed: the gold is indexed once (value -> ids of the gold rows holding it) and cached per gold
object, so judging an answer costs one dict lookup per answer value: the index also remembers
(bounded) each answer text it has seen with its key and gold rows. The verdict of an answer
list is built without pydantic's per-field work (`_new_verdict`); tests/judges/test_seed_fast.py
checks it against the straightforward implementation (tests/judges/seed_reference.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import countOf

from kgeval._files import sha256_json
from kgeval.config import SeedJudgeConfig
from kgeval.holdout import Question
from kgeval.judges._cache import GoldCache
from kgeval.judges._model import Candidate, Verdict
from kgeval.judges._normalize import Normalizer
from kgeval.stores import QueryResult

LOGIC_VERSION = "2"

Item = frozenset[str]

_SEEN_LIMIT = 1 << 14
"""Answer texts an index remembers beyond the gold's own spellings (then it starts over)."""


@dataclass(frozen=True)
class GoldIndex:
    """A gold prepared for the seed judge."""

    rows: dict[str, tuple[int, ...]]
    """Normalized value -> ids of the (non-empty, kept) gold rows that hold it."""
    size: int
    """Gold items: non-empty kept rows plus the rows beyond the cap (1 for ASK)."""
    spelled: dict[str, tuple[str, tuple[int, ...]]]
    """A gold cell's own text -> (its key, its row ids), where the text normalizes to the cell's
    key: an answer item spelt as the gold spells it skips normalization."""
    injective: bool = False
    """Each value is in one gold row and no two values share a row (a one-column gold of
    distinct values): gold items covered by an answer's hits = the number of its hit values."""
    seen: dict[str, tuple[str, tuple[int, ...] | None]] = field(default_factory=dict)
    """Answer text -> (its key, its gold row ids or None): `spelled`, plus the answer texts
    looked up so far (bounded by _SEEN_LIMIT). Keys are pure functions of the text, so this is
    a memo, never a source of difference."""


def index_gold(gold: QueryResult, normalizer: Normalizer) -> GoldIndex:
    if gold.form == "ask":
        return GoldIndex({"true" if gold.boolean else "false": (0,)}, 1, {}, True, {})
    rows: dict[str, list[int]] = {}
    spellings: dict[str, str] = {}
    kept = 0
    for row in gold.rows:
        values = set()
        for term in row:
            key = normalizer.term(term)
            if key is not None:
                values.add(key)
                if normalizer.text(term.value) == key:
                    spellings[term.value] = key
        if not values:
            continue
        for value in values:
            rows.setdefault(value, []).append(kept)
        kept += 1
    frozen = {v: tuple(ids) for v, ids in rows.items()}
    spelled = {text: (key, frozen[key]) for text, key in spellings.items()}
    injective = all(len(ids) == 1 for ids in frozen.values()) and len({ids[0] for ids in frozen.values()}) == len(frozen)
    return GoldIndex(frozen, kept + gold.total - len(gold.rows), spelled, injective, dict(spelled))


def list_keys(items: list, index: GoldIndex, normalizer: Normalizer) -> dict[str, tuple[int, ...] | None]:
    """Distinct keys of an answer list in first-seen order, each with the gold rows holding it
    (None: not in the gold). The membership hot path: one lookup per item whose text the index
    has seen (spelt as in the gold, or met in an earlier answer)."""
    seen = index.seen
    try:
        found = list(map(seen.get, items))
    except TypeError:  # an unhashable item (a JSON list or object): normalize every item
        found = [None] * len(items)
    if None in found:
        rows, item = index.rows, normalizer.item
        for n, hit in enumerate(found):
            if hit is None:
                i = items[n]
                key = item(i)
                hit = found[n] = (key, rows.get(key))
                if type(i) is str:
                    if len(seen) >= len(index.spelled) + _SEEN_LIMIT:
                        seen.clear()
                        seen.update(index.spelled)
                    seen[i] = hit
    return dict(found)  # a repeated key keeps its first place; its rows are the same


def candidate_items(candidate: Candidate, normalizer: Normalizer) -> list[str] | list[Item] | None:
    """The answer as distinct items: values for a list, value sets for result rows; None
    when the system gave neither list nor result."""
    if candidate.items is not None:
        return list(dict.fromkeys(normalizer.items(candidate.items)))
    result = candidate.result
    if result is None:
        return None
    if result.form == "ask":
        return ["true" if result.boolean else "false"]
    rows = (frozenset(v for v in map(normalizer.term, row) if v is not None) for row in result.rows)
    return list(dict.fromkeys(r for r in rows if r))


@dataclass
class _Match:
    matched: int
    covered: int
    """Gold items sharing a value with some answer item."""


def _match(index: GoldIndex, answer: list[str] | list[Item]) -> _Match:
    rows = index.rows
    if not answer or isinstance(answer[0], str):
        hits = [rows[v] for v in answer if v in rows]
        matched = len(hits)
    else:
        hits, matched = [], 0
        for item in answer:
            found = [rows[v] for v in item if v in rows]
            matched += bool(found)
            hits += found
    covered = len(set().union(*hits)) if hits else 0
    return _Match(matched, covered)


class SeedJudge:
    """Exact below `exact_below` gold items, membership at or above (see module docstring)."""

    name = "seed"

    def __init__(self, config: SeedJudgeConfig) -> None:
        self.config = config
        self.config_sha256 = sha256_json({"logic": LOGIC_VERSION, **config.model_dump(mode="json")})
        self.version = f"{self.name}-{LOGIC_VERSION}+{self.config_sha256[:8]}"
        self.normalizer = Normalizer(config.normalize)
        self._golds: GoldCache[GoldIndex] = GoldCache(lambda gold: index_gold(gold, self.normalizer))
        self._min_items, self._min_precision = config.min_items, config.min_precision
        self._needs_items, self._needs_precision = f"{config.min_items}", f"{config.min_precision}"

    def judge(self, question: Question, gold: QueryResult, candidate: Candidate) -> Verdict:
        items = candidate.items
        if items is not None:
            index = self._golds.get(gold)
            keys = list_keys(items, index, self.normalizer)
            answer_items = len(keys)
            if index.injective:
                matched = covered = answer_items - countOf(keys.values(), None)
            else:
                hits = [ids for ids in keys.values() if ids is not None]
                matched, covered = len(hits), len(set().union(*hits)) if hits else 0
            full_answer = True
        else:
            answer = candidate_items(candidate, self.normalizer)
            if answer is None:
                return self._verdict(False, "no_answer", gold, reason="the system gave no answer and no SPARQL")
            index = self._golds.get(gold)
            match = _match(index, answer)
            matched, covered, answer_items = match.matched, match.covered, len(answer)
            full_answer = candidate.result is not None and not candidate.result.truncated
        details = _figures(matched, covered, answer_items, index.size, full_answer)
        if gold.form == "ask" or gold.total < self.config.exact_below:
            return self._exact(gold, answer_items, matched, covered, index, details)
        return self._membership(gold, answer_items, matched, details)

    def _exact(self, gold: QueryResult, answer_items: int, matched: int, covered: int, index: GoldIndex, details: dict) -> Verdict:
        missing = index.size - covered
        unmatched = answer_items - matched
        correct = unmatched == 0 and missing == 0
        path = "ask" if gold.form == "ask" else "exact"
        reason = (
            f"exact set match after normalization: {matched} of {answer_items} answer items in the gold, "
            f"{missing} of {index.size} gold items missing"
        )
        return self._verdict(correct, path, gold, matched, unmatched, missing, _with_subset(reason, details), details)

    def _membership(self, gold: QueryResult, answer_items: int, matched: int, details: dict) -> Verdict:
        precision = details["precision"]
        correct = answer_items >= self._min_items and precision >= self._min_precision
        reason = (
            f"membership: {matched} of {answer_items} answer items in the full gold "
            f"(precision {_three_places(precision)}, needs >= {self._needs_precision}); "
            f"{answer_items} items (needs >= {self._needs_items}); "
            f"recall {_three_places(details['recall'])} (not checked by membership)"
        )
        if gold.truncated:
            reason += f"; gold kept {len(gold.rows)} of {gold.total} rows"
        subset = details.get("strict_subset")
        if subset:
            reason += f"; strict_subset: {subset}"
        return _new_verdict(
            {
                "judge": self.name,
                "version": self.version,
                "config_sha256": self.config_sha256,
                "correct": correct,
                "path": "membership",
                "matched": matched,
                "unmatched": answer_items - matched,
                "missing": None,
                "gold_total": gold.total,
                "reason": reason,
                "details": details,
            }
        )

    def _verdict(
        self,
        correct: bool,
        path: str,
        gold: QueryResult,
        matched: int = 0,
        unmatched: int = 0,
        missing: int | None = None,
        reason: str = "",
        details: dict | None = None,
    ) -> Verdict:
        return _new_verdict(
            {
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
        )


_THREE_PLACES: dict[float, str] = {}


def _three_places(x: float) -> str:
    """`f"{x:.3f}"`, memoized (bounded): precisions and recalls are ratios of small counts,
    so the same few values recur."""
    text = _THREE_PLACES.get(x)
    if text is None:
        if len(_THREE_PLACES) >= 4096:
            _THREE_PLACES.clear()
        text = _THREE_PLACES[x] = f"{x:.3f}"
    return text


_VERDICT_FIELDS = frozenset(Verdict.model_fields)
_new_object = Verdict.__new__
_set_attribute = object.__setattr__


def _new_verdict(fields: dict) -> Verdict:
    """What `Verdict.model_construct(**fields)` builds when `fields` holds every field, in
    declaration order: the same `__dict__`, fields set, no extra, no private attributes;
    without its per-field alias and default work (the hot path of membership judging)."""
    verdict = _new_object(Verdict)
    _set_attribute(verdict, "__dict__", fields)
    _set_attribute(verdict, "__pydantic_fields_set__", set(_VERDICT_FIELDS))
    _set_attribute(verdict, "__pydantic_extra__", None)
    _set_attribute(verdict, "__pydantic_private__", None)
    return verdict


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
