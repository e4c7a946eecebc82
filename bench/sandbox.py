"""What the candidate sandbox costs: each query executed as a candidate (a sandbox worker
process) against the same query in process (`Store.execute`) and against the raw engine.

    python bench/sandbox.py [--repeat N] [--holdout DIR]   (KGEVAL_CK25 names the ck25 directory)

Queries: the CK25 reference queries over its KG when KGEVAL_CK25 is set, and the shipped sample
holdout's. For every query, the three ways run interleaved, best of N each:
- raw: pyoxigraph `Store.query` and every term of every row read (what any caller pays);
- in process: `EmbeddedStore.execute` (guard from its cache, rows kept, Terms built);
- sandboxed: `EmbeddedStore.execute_candidate` (the same, in a worker, one round trip).
Printed: the sums, the ratios (sandboxed / in process, sandboxed / raw, in process / raw), and
the overhead per query in milliseconds. The machine is shared and noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kgeval.errors import QueryError  # noqa: E402
from kgeval.holdout import load_holdout  # noqa: E402
from kgeval.stores import EmbeddedStore, guard_query  # noqa: E402
from kgeval.stores._functions import DERIVED_INTEGER_CASTS  # noqa: E402

ROW_CAP = 2000
TIMEOUT_S = 120.0


def query_sets(holdout: Path | None) -> list[tuple[str, list[Path], list[str]]]:
    """(label, KG files, queries) for each KG benchmarked."""
    sets = []
    ck25 = os.environ.get("KGEVAL_CK25")
    if ck25 and Path(ck25, "questions.yml").is_file():
        doc = yaml.safe_load(Path(ck25, "questions.yml").read_text(encoding="utf-8"))
        sets.append(("ck25", sorted(Path(ck25, "graphs").glob("*.ttl")), [q["query"]["sparql"] for q in doc["questions"]]))
    loaded = load_holdout(holdout or REPO / "holdout")
    for kg in loaded.kgs:
        sets.append((f"sample/{kg.id}", list(kg.files), [q.sparql for q in loaded.questions() if q.kg == kg.id]))
    return sets


def _raw(store: EmbeddedStore, query: str) -> None:
    answer = store._store.query(query, custom_functions=DERIVED_INTEGER_CASTS)  # noqa: SLF001 - the engine itself
    if not isinstance(answer, bool) and hasattr(answer, "variables"):
        for solution in answer:
            for _ in solution:
                pass


def _timed(run, repeat: int) -> float:  # noqa: ANN001 - a thunk
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def bench_set(files: list[Path], queries: list[str], repeat: int, overheads: list[float]) -> tuple[float, float, float, int]:
    """(raw s, in-process s, sandboxed s, queries timed) over the queries that run; appends
    each query's sandbox overhead (s) to `overheads`."""
    store = EmbeddedStore(files)
    store.load()  # loaded on first use otherwise: inside the first timing
    store.execute_candidate("ASK {}", timeout_s=TIMEOUT_S, row_cap=1)  # start a worker: its start is not per query
    raw = local = boxed = 0.0
    timed = 0
    try:
        for query in queries:
            try:
                guard_query(query)
                expected = store.execute(query, timeout_s=TIMEOUT_S, row_cap=ROW_CAP).sha256()
                assert store.execute_candidate(query, timeout_s=TIMEOUT_S, row_cap=ROW_CAP)[0].sha256() == expected
            except QueryError:
                continue
            raw += _timed(lambda: _raw(store, query), repeat)  # noqa: B023 - used at once
            in_process = _timed(lambda: store.execute(query, timeout_s=TIMEOUT_S, row_cap=ROW_CAP), repeat)  # noqa: B023
            sandboxed = _timed(lambda: store.execute_candidate(query, timeout_s=TIMEOUT_S, row_cap=ROW_CAP), repeat)  # noqa: B023
            local, boxed, timed = local + in_process, boxed + sandboxed, timed + 1
            overheads.append(sandboxed - in_process)
    finally:
        store.close()
    return raw, local, boxed, timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--holdout", type=Path, default=None)
    args = parser.parse_args()
    total = [0.0, 0.0, 0.0, 0]
    overheads: list[float] = []
    print(f"{'KG':24s} {'n':>4s} {'raw ms':>9s} {'in-proc ms':>11s} {'sandbox ms':>11s} {'box/in-proc':>12s} {'box/raw':>8s} {'in-proc/raw':>12s}")
    for label, files, queries in query_sets(args.holdout):
        raw, local, boxed, n = bench_set(files, queries, args.repeat, overheads)
        for i, value in enumerate((raw, local, boxed, n)):
            total[i] += value
        print(f"{label:24s} {n:4d} {raw * 1e3:9.1f} {local * 1e3:11.1f} {boxed * 1e3:11.1f} {boxed / local:12.2f} {boxed / raw:8.2f} {local / raw:12.2f}")
    raw, local, boxed, n = total
    print(f"{'all':24s} {n:4d} {raw * 1e3:9.1f} {local * 1e3:11.1f} {boxed * 1e3:11.1f} {boxed / local:12.2f} {boxed / raw:8.2f} {local / raw:12.2f}")
    median = statistics.median(overheads)
    print(f"sandbox overhead per query over in process: median {median * 1e3:.2f} ms, mean {(boxed - local) / n * 1e3:.2f} ms "
          f"({n} queries, best of {args.repeat} each)")


if __name__ == "__main__":
    main()
