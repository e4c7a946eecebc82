"""The seed judge: exact set match for small golds, precision-only membership for large ones.

It is kept as it was first specified so that numbers stay comparable over time. Its known
weakness (DESIGN invariant 4): membership is precision-only, so a strict subset of a large
gold passes. Its verdicts therefore show recall and say `strict_subset: N of M` when the answer
is one; the execution judge is the one whose decision sees recall.

Items: a gold row is the set of its normalized cells; an answer item is one normalized value
(from an answer list) or the set of normalized cells of one executed result row. An item
matches a gold row when they share a value, so "Alice" matches the row (Alice, 5).

Speed: the gold is indexed once (value -> ids of the gold rows holding it) and cached per gold
object, so judging an answer costs one normalization and one dict lookup per answer value.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgeval._files import sha256_json
from kgeval.config import SeedJudgeConfig
from kgeval.holdout import Question
from kgeval.judges._cache import GoldCache
from kgeval.judges._model import Candidate, Verdict
from kgeval.judges._normalize import Normalizer
from kgeval.stores import QueryResult

LOGIC_VERSION = "1"

Item = frozenset[str]


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


def index_gold(gold: QueryResult, normalizer: Normalizer) -> GoldIndex:
    if gold.form == "ask":
        return GoldIndex({"true" if gold.boolean else "false": (0,)}, 1, {})
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
    return GoldIndex(frozen, kept + gold.total - len(gold.rows), spelled)


def list_keys(items: list, index: GoldIndex, normalizer: Normalizer) -> dict[str, tuple[int, ...] | None]:
    """Distinct keys of an answer list, each with the gold rows holding it (None: not in the
    gold). The membership hot path: one lookup per item spelt as in the gold."""
    spelled, rows, item = index.spelled, index.rows, normalizer.item
    keys: dict[str, tuple[int, ...] | None] = {}
    for i in items:
        hit = spelled.get(i) if type(i) is str else None
        if hit is None:
            key = item(i)
            keys.setdefault(key, rows.get(key))
        else:
            keys.setdefault(hit[0], hit[1])
    return keys


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

    def judge(self, question: Question, gold: QueryResult, candidate: Candidate) -> Verdict:
        if candidate.items is not None:
            index = self._golds.get(gold)
            keys = list_keys(candidate.items, index, self.normalizer)
            hits = [ids for ids in keys.values() if ids is not None]
            answer: list = list(keys)
            match = _Match(len(hits), len(set().union(*hits)) if hits else 0)
        else:
            answer = candidate_items(candidate, self.normalizer)
            if answer is None:
                return self._verdict(False, "no_answer", gold, reason="the system gave no answer and no SPARQL")
            index = self._golds.get(gold)
            match = _match(index, answer)
        details = _figures(match, len(answer), index.size, candidate)
        if gold.form == "ask" or gold.total < self.config.exact_below:
            return self._exact(gold, answer, match, index, details)
        return self._membership(gold, answer, match, details)

    def _exact(self, gold: QueryResult, answer: list, match: _Match, index: GoldIndex, details: dict) -> Verdict:
        missing = index.size - match.covered
        unmatched = len(answer) - match.matched
        correct = unmatched == 0 and missing == 0
        path = "ask" if gold.form == "ask" else "exact"
        reason = (
            f"exact set match after normalization: {match.matched} of {len(answer)} answer items in the gold, "
            f"{missing} of {index.size} gold items missing"
        )
        return self._verdict(correct, path, gold, match.matched, unmatched, missing, _with_subset(reason, details), details)

    def _membership(self, gold: QueryResult, answer: list, match: _Match, details: dict) -> Verdict:
        precision = details["precision"]
        enough = len(answer) >= self.config.min_items
        correct = enough and precision >= self.config.min_precision
        reason = (
            f"membership: {match.matched} of {len(answer)} answer items in the full gold "
            f"(precision {precision:.3f}, needs >= {self.config.min_precision}); "
            f"{len(answer)} items (needs >= {self.config.min_items}); "
            f"recall {details['recall']:.3f} (not checked by membership)"
        )
        if gold.truncated:
            reason += f"; gold kept {len(gold.rows)} of {gold.total} rows"
        reason = _with_subset(reason, details)
        return self._verdict(correct, "membership", gold, match.matched, len(answer) - match.matched, None, reason, details)

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
        return Verdict.model_construct(  # fields built here, typed: validation skipped on the hot path
            judge=self.name,
            version=self.version,
            config_sha256=self.config_sha256,
            correct=correct,
            path=path,
            matched=matched,
            unmatched=unmatched,
            missing=missing,
            gold_total=gold.total,
            reason=reason,
            details=details or {},
        )


def _figures(match: _Match, answer_items: int, gold_items: int, candidate: Candidate) -> dict:
    """Precision, recall and F1 over items, and whether the answer is a strict subset.

    Recall counts gold items sharing a value with the answer over all gold items (rows beyond
    the gold's cap count as not given, so recall is a lower bound when the gold is truncated).
    """
    precision = match.matched / answer_items if answer_items else (1.0 if gold_items == 0 else 0.0)
    recall = match.covered / gold_items if gold_items else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    details: dict = {"precision": precision, "recall": recall, "f1": f1}
    full_answer = candidate.items is not None or (candidate.result is not None and not candidate.result.truncated)
    if full_answer and answer_items and match.matched == answer_items and match.covered < gold_items:
        details["strict_subset"] = f"{match.covered} of {gold_items}"
    return details


def _with_subset(reason: str, details: dict) -> str:
    subset = details.get("strict_subset")
    return f"{reason}; strict_subset: {subset}" if subset else reason
