"""The seed judge: exact set match for small golds, precision-only membership for large ones.

It is kept as it was first specified so that numbers stay comparable over time. Its known
weakness (DESIGN invariant 4): membership is precision-only, so a strict subset of a large
gold passes. The execution-grounded judge exists to see recall.

Items: a gold row is the set of its normalized cells; an answer item is one normalized value
(from an answer list) or the set of normalized cells of one executed result row. An item
matches a gold row when they share a value, so "Alice" matches the row (Alice, 5).
"""

from __future__ import annotations

from kgeval._files import sha256_json
from kgeval.config import SeedJudgeConfig
from kgeval.holdout import Question
from kgeval.judges._model import Candidate, Verdict
from kgeval.judges._normalize import normalize_item, normalize_term
from kgeval.stores import QueryResult

LOGIC_VERSION = "1"

Item = frozenset[str]


def gold_items(gold: QueryResult) -> list[Item]:
    """The gold as items: ASK -> one boolean item, SELECT -> one item per stored row."""
    if gold.form == "ask":
        return [frozenset({"true" if gold.boolean else "false"})]
    rows = (frozenset(v for v in map(normalize_term, row) if v is not None) for row in gold.rows)
    return [r for r in rows if r]


def candidate_items(candidate: Candidate) -> list[Item] | None:
    """The answer as distinct items, or None when the system gave neither list nor result."""
    if candidate.items is not None:
        return list(dict.fromkeys(frozenset({normalize_item(i)}) for i in candidate.items))
    result = candidate.result
    if result is None:
        return None
    if result.form == "ask":
        return [frozenset({"true" if result.boolean else "false"})]
    rows = (frozenset(v for v in map(normalize_term, row) if v is not None) for row in result.rows)
    return list(dict.fromkeys(r for r in rows if r))


class SeedJudge:
    """Exact below `exact_below` gold items, membership at or above (see module docstring)."""

    name = "seed"

    def __init__(self, config: SeedJudgeConfig) -> None:
        self.config = config
        self.config_sha256 = sha256_json({"logic": LOGIC_VERSION, **config.model_dump()})
        self.version = f"{self.name}-{LOGIC_VERSION}+{self.config_sha256[:8]}"

    def judge(self, question: Question, gold: QueryResult, candidate: Candidate) -> Verdict:
        answer = candidate_items(candidate)
        if answer is None:
            return self._verdict(False, "no_answer", gold, reason="the system gave no answer and no SPARQL")
        if gold.form == "ask" or gold.total < self.config.exact_below:
            return self._exact(gold, answer)
        return self._membership(gold, answer)

    def _exact(self, gold: QueryResult, answer: list[Item]) -> Verdict:
        rows = gold_items(gold)
        matched = sum(1 for item in answer if any(item & row for row in rows))
        missing = sum(1 for row in rows if not any(row & item for item in answer))
        unmatched = len(answer) - matched
        correct = unmatched == 0 and missing == 0
        path = "ask" if gold.form == "ask" else "exact"
        reason = (
            f"exact set match after normalization: {matched} of {len(answer)} answer items in the gold, "
            f"{missing} of {len(rows)} gold items missing"
        )
        return self._verdict(correct, path, gold, matched, unmatched, missing, reason)

    def _membership(self, gold: QueryResult, answer: list[Item]) -> Verdict:
        values = set().union(*gold_items(gold))
        matched = sum(1 for item in answer if not item.isdisjoint(values))
        precision = matched / len(answer) if answer else 0.0
        enough = len(answer) >= self.config.min_items
        correct = enough and precision >= self.config.min_precision
        reason = (
            f"membership: {matched} of {len(answer)} answer items in the full gold "
            f"(precision {precision:.3f}, needs >= {self.config.min_precision}); "
            f"{len(answer)} items (needs >= {self.config.min_items})"
        )
        if gold.truncated:
            reason += f"; gold kept {len(gold.rows)} of {gold.total} rows"
        return self._verdict(
            correct, "membership", gold, matched, len(answer) - matched, None, reason, {"precision": precision}
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
        return Verdict(
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
