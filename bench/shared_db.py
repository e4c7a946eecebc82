"""What a run's persistence costs now that it shares the results database (issue 41 item 12),
as a ratio to the way it persisted before, measured in this one process.

Before: the run held one DuckDB connection for its whole length and wrote each group of
completed attempts in its own transaction (`ResultsDB.record_attempts` on a held connection:
still what that method does). Now: each group is one fsync'd journal line (`RunWriter.record`)
and every `run.db_flush_s` the journal goes into the database in one opening of the file
(`RunWriter.flush`: open, one transaction, close).

Two paces, each on N realistic attempts (SPARQL, an answer list, tries, two verdicts with
details) written to a fresh file, before and after alternately, `--repeat` times:
- fast system: groups of 32 attempts (a replay run's 50 ms windows), one flush per 20 groups
  (1 s of such a run);
- slow system: one attempt per group, one flush per group (a model answering about once a
  second: every flush moves one attempt).

Prints CPU and wall per attempt (median) and the ratios now / before.

    python bench/shared_db.py [--attempts 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kgeval.judges import Verdict  # noqa: E402
from kgeval.runs import Attempt, ResultsDB, RunMetadata, RunQuestion, Try  # noqa: E402
from kgeval.runs._db import attempt_rows_of  # noqa: E402
from kgeval.runs._journal import RunWriter  # noqa: E402

RUN = "bench-run"


def _results(n: int) -> list[tuple[Attempt, list[Verdict]]]:
    out = []
    for i in range(n):
        qid, seed = f"q{i // 5:05d}", i % 5
        sparql = "PREFIX ex: <http://example.org/>\nSELECT ?person ?name WHERE { ?person a ex:Person ; ex:name ?name ; ex:worksIn ?d . ?d ex:label \"Sales\" } ORDER BY ?name LIMIT 50"
        attempt = Attempt(
            kg="hr", question_id=qid, seed=seed, state="answered", sparql=sparql,
            answer=[f"http://example.org/person/{k}" for k in range(8)], latency_ms=812.5 + i, result_total=8,
            tries=[Try(n=1, started_at="2026-12-07T17:00:00.000+00:00", latency_ms=812.5 + i, outcome="ok")],
        )  # fmt: skip
        details = {"matched_rows": 8, "gold_rows": 8, "rules": [], "columns": ["person", "name"]}
        verdicts = [
            Verdict(judge=name, version=f"{name}-3", config_sha256="0" * 64, correct=True, path="exact", matched=8, gold_total=8, reason="same rows", details=details)
            for name in ("seed", "execution")
        ]
        out.append((attempt, verdicts))
    return out


def _new_run(path: Path, n: int) -> ResultsDB:
    db = ResultsDB(path)
    metadata = RunMetadata(
        run_id=RUN, system="bench", system_version="1", holdout="holdout", seeds=list(range(5)), primary_judge="execution",
        judge_versions={"seed": "seed-3", "execution": "execution-3"}, kgeval_version="bench", started_at="2026-12-07T17:00:00",
        holdout_manifest_sha256="0" * 64, gold_manifest_sha256="0" * 64, config_sha256="0" * 64,
    )  # fmt: skip
    questions = [RunQuestion(kg="hr", question_id=f"q{k:05d}", question=f"question {k}", domain="hr", qtype="list", honeypot=False) for k in range(n // 5 + 1)]
    db.create_run(metadata, questions)
    return db


def _before(db: ResultsDB, groups: list[list], flush_every: int) -> None:
    for group in groups:  # one transaction per group on the connection held all along
        db.record_attempts(RUN, group)
    db.close()


def _now(db: ResultsDB, groups: list[list], flush_every: int) -> None:
    db.release()
    writer = RunWriter(db, RUN, flush_s=float("inf"))  # flushed here every `flush_every` groups, as the clock would
    for i, group in enumerate(groups, 1):
        writer.record(attempt_rows_of(RUN, group))
        if i % flush_every == 0:
            writer.flush(wait_s=0.0)
    writer.flush(wait_s=None)
    writer.journal.remove()


def _measure(way: Callable[[ResultsDB, list[list], int], None], results: list, size: int, flush_every: int, workdir: Path, k: int) -> tuple[float, float]:
    path = workdir / f"{way.__name__}-{size}-{k}.duckdb"
    db = _new_run(path, len(results))
    groups = [results[i : i + size] for i in range(0, len(results), size)]
    cpu, wall = time.process_time(), time.perf_counter()
    way(db, groups, flush_every)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    with ResultsDB(path, read_only=True) as check:
        assert len(check.done_keys(RUN)) == len(results), "not every attempt was written"
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    results = _results(args.attempts)
    with tempfile.TemporaryDirectory() as tmp:
        for label, size, flush_every, n in (("fast system", 32, 20, args.attempts), ("slow system", 1, 1, min(args.attempts, 300))):
            figures: dict[str, list[tuple[float, float]]] = {"_before": [], "_now": []}
            for k in range(args.repeat):
                for way in (_before, _now):  # alternately: the machine's load falls on both
                    figures[way.__name__].append(_measure(way, results[:n], size, flush_every, Path(tmp), k))
            per = {name: (statistics.median(c for c, _ in f) / n * 1000, statistics.median(w for _, w in f) / n * 1000) for name, f in figures.items()}
            (bc, bw), (nc, nw) = per["_before"], per["_now"]
            print(
                f"{label} ({n} attempts, groups of {size}, a flush per {flush_every} group(s), median of {args.repeat}): "
                f"before {bc:.3f} ms CPU / {bw:.3f} ms wall per attempt; now {nc:.3f} ms CPU / {nw:.3f} ms wall; "
                f"ratio now/before: CPU {nc / bc:.2f}x, wall {nw / bw:.2f}x"
            )


if __name__ == "__main__":
    main()
