"""`kgeval gold rebuild`: execute every reference query and store the full typed result.

Each query runs `gold.executions` times (differing results flag it nondeterministic), is
scanned for volatile and engine-dependent constructs, and, when it has a cut (LIMIT/OFFSET,
or an ordered result cut by the row cap), is probed for ties at the cut (DESIGN invariant 2:
an undetermined answer is flagged with its acceptable answers, never silently frozen).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

from kgeval.config import GoldConfig
from kgeval.errors import QueryError
from kgeval.gold._model import GoldEntry, GoldFailure, GoldFlag, display_text
from kgeval.gold._store import write_gold
from kgeval.gold._ties import find_ties, needs_tie_check
from kgeval.holdout import Holdout, KnowledgeGraph, Question, read_manifest
from kgeval.stores import Store, guard_query, query_determinism

StoreFactory = Callable[[KnowledgeGraph], Store]
Progress = Callable[[str], None]


@dataclass
class RebuildReport:
    """What a rebuild did, for the CLI and the benchmark."""

    entries: list[GoldEntry] = field(default_factory=list)
    failures: list[GoldFailure] = field(default_factory=list)
    store_seconds: float = 0.0
    """Time spent inside the stores' query calls (every execution and tie probe)."""
    load_seconds: float = 0.0
    """Time spent building the stores (loading KG files)."""
    total_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def flagged(self) -> dict[GoldFlag, list[str]]:
        """For every flag, the questions ("kg/question_id") whose gold carries it."""
        table: dict[GoldFlag, list[str]] = {flag: [] for flag in get_args(GoldFlag)}
        for entry in self.entries:
            for flag in entry.flags:
                table[flag].append(f"{entry.kg}/{entry.question_id}")
        return table


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
                report.entries.append(build_entry(kg.id, question, store, config))
            except QueryError as exc:
                report.failures.append(GoldFailure(kg=kg.id, question_id=question.id, error=str(exc)))
            finally:
                report.store_seconds += time.perf_counter() - t0
                if progress:
                    progress(question.id)
    if report.ok and out_dir is not None:
        displays = {e.question_id: display_text(e.result, config.display_items) for e in report.entries}
        write_gold(out_dir, report.entries, displays, read_manifest(holdout.root)["sha256"])
    report.total_seconds = time.perf_counter() - started
    return report


def build_entry(kg_id: str, question: Question, store: Store, config: GoldConfig) -> GoldEntry:
    """Execute one reference query `config.executions` times and check it for ties."""
    results = [
        store.execute(question.reference_query, timeout_s=config.timeout_s, row_cap=config.row_cap)
        for _ in range(config.executions)
    ]
    result, hashes = results[0], [r.sha256() for r in results]
    sparql = question.query_language == "sparql"  # the static checks and the tie probe parse SPARQL
    determinism = query_determinism(question.sparql) if sparql else None
    volatile = determinism.volatile if determinism else ()
    engine_dependent = determinism.engine_dependent if determinism else ()
    nondeterministic = [f"uses {name}" for name in volatile]
    if len(set(hashes)) > 1:
        nondeterministic.insert(0, f"{len(set(hashes))} different results in {len(hashes)} executions")
    ties, tie_error = None, None
    shape = guard_query(question.sparql) if sparql else None
    if shape is not None and needs_tie_check(shape, result):
        try:
            ties = find_ties(store, question.sparql, shape, result, timeout_s=config.timeout_s, probe_rows=config.tie_probe_rows)
        except QueryError as exc:
            tie_error = str(exc)
    return GoldEntry(
        kg=kg_id,
        question_id=question.id,
        query_sha256=question.sparql_sha256,
        kg_sha256=store.data_sha256,
        engine=store.name,
        engine_version=store.version,
        row_cap=config.row_cap,
        result=result,
        result_sha256=result.sha256(),
        execution_sha256s=hashes,
        nondeterministic=nondeterministic,
        engine_dependent=list(engine_dependent),
        ties=ties,
        tie_check_error=tie_error,
    )
