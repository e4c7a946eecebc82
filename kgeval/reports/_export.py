"""`kgeval export`: one JSON line per attempt with its verdicts."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator

from kgeval.runs import ResultsDB


def export_lines(db: ResultsDB, run_id: str) -> Iterator[str]:
    db.metadata(run_id)  # an unknown run is a clear error, not an empty export
    verdicts = defaultdict(list)
    for qid, seed, verdict in db.verdicts(run_id):
        verdicts[(qid, seed)].append(
            {
                "judge": verdict.judge,
                "version": verdict.version,
                "correct": verdict.correct,
                "path": verdict.path,
                "matched": verdict.matched,
                "unmatched": verdict.unmatched,
                "missing": verdict.missing,
                "gold_total": verdict.gold_total,
                "reason": verdict.reason,
                "details": verdict.details,
            }
        )
    for attempt in db.attempts(run_id):
        record = attempt.model_dump(mode="json")
        record["run_id"] = run_id
        record["verdicts"] = verdicts.get((attempt.question_id, attempt.seed), [])
        yield json.dumps(record, ensure_ascii=False, sort_keys=True)
