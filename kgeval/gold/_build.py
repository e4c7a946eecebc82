"""`kgeval gold rebuild`: execute every reference query and store the full typed result."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kgeval.config import GoldConfig
from kgeval.errors import QueryError
from kgeval.gold._model import GoldEntry, GoldFailure, display_text
from kgeval.gold._store import write_gold
from kgeval.holdout import Holdout, KnowledgeGraph, read_manifest
from kgeval.stores import Store

StoreFactory = Callable[[KnowledgeGraph], Store]
Progress = Callable[[str], None]


@dataclass
class RebuildReport:
    """What a rebuild did, for the CLI and the benchmark."""

    entries: list[GoldEntry] = field(default_factory=list)
    failures: list[GoldFailure] = field(default_factory=list)
    store_seconds: float = 0.0
    """Time spent inside the stores' query calls."""
    load_seconds: float = 0.0
    """Time spent building the stores (loading KG files)."""
    total_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures


def rebuild_gold(
    holdout: Holdout,
    store_for: StoreFactory,
    config: GoldConfig,
    out_dir: Path | None,
    progress: Progress | None = None,
) -> RebuildReport:
    """Execute every reference query; write the gold to `out_dir` only if all succeeded.

    A failed query is reported by KG and question id and never yields an (empty) gold; the
    previous gold, if any, is left untouched.
    """
    started = time.perf_counter()
    report = RebuildReport()
    for kg in holdout.kgs:
        t0 = time.perf_counter()
        store = store_for(kg)
        report.load_seconds += time.perf_counter() - t0
        for question in kg.questions:
            t0 = time.perf_counter()
            try:
                result = store.execute(question.reference_query, timeout_s=config.timeout_s, row_cap=config.row_cap)
            except QueryError as exc:
                report.failures.append(GoldFailure(kg=kg.id, question_id=question.id, error=str(exc)))
                continue
            finally:
                report.store_seconds += time.perf_counter() - t0
                if progress:
                    progress(question.id)
            report.entries.append(
                GoldEntry(
                    kg=kg.id,
                    question_id=question.id,
                    query_sha256=question.sparql_sha256,
                    kg_sha256=store.data_sha256,
                    engine=store.name,
                    engine_version=store.version,
                    row_cap=config.row_cap,
                    result=result,
                    result_sha256=result.sha256(),
                )
            )
    if report.ok and out_dir is not None:
        displays = {e.question_id: display_text(e.result, config.display_items) for e in report.entries}
        write_gold(out_dir, report.entries, displays, read_manifest(holdout.root)["sha256"])
    report.total_seconds = time.perf_counter() - started
    return report
