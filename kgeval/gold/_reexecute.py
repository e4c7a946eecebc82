"""`kgeval gold verify --reexecute`: run every reference query again on the configured store
and compare with the stored gold. Hashes and tags prove a gold was not edited after it was
written; re-execution proves it is what the queries answer now (a gold forged with the key, or
built against other data, differs here)."""

from __future__ import annotations

from collections.abc import Callable

from kgeval.config import GoldConfig
from kgeval.errors import QueryError
from kgeval.gold._model import GoldEntry
from kgeval.holdout import Holdout, KnowledgeGraph
from kgeval.stores import Store

StoreFactory = Callable[[KnowledgeGraph], Store]


def reexecution_differences(
    gold: dict[str, GoldEntry], holdout: Holdout, store_for: StoreFactory, config: GoldConfig, progress: Callable[[str], None] | None = None
) -> list[str]:
    """One line per question whose re-executed result is not its stored gold (or, for a tied
    gold, not one of its acceptable answers); a nondeterministic gold is not compared."""
    differences = []
    for kg in holdout.kgs:
        entries = [gold[q.id] for q in kg.questions if q.id in gold]
        if not entries:
            continue
        store = store_for(kg)
        by_id = {q.id: q for q in kg.questions}
        for entry in entries:
            problem = _difference(entry, by_id[entry.question_id].reference_query, store, config)
            if problem:
                differences.append(f"{kg.id}/{entry.question_id}: {problem}")
            if progress:
                progress(entry.question_id)
    return differences


def _difference(entry: GoldEntry, query: str, store: Store, config: GoldConfig) -> str | None:
    if entry.nondeterministic:
        return None  # one sample of several possible answers: nothing fixed to compare
    try:
        now = store.execute(query, timeout_s=config.timeout_s, row_cap=entry.row_cap)
    except QueryError as exc:
        return f"the reference query fails now: {exc}"
    if now.sha256() == entry.result_sha256:
        return None
    if entry.ties is not None and now.total == entry.result.total and entry.ties.accepts(now.rows):
        return None  # the engine broke a tie the other way: still an acceptable answer
    return f"result differs from the stored gold ({now.total} rows now, {entry.result.total} stored)"
