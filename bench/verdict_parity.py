"""Every verdict a run writes, dumped so two builds can be compared field for field.

A speed change to the run path (judging, execution, writing) must not change one verdict.
This script runs, with the code of the checkout it is in:
- the replay of `bench/run.py`'s generated holdout (4 KGs, 1,056 attempts; generated from a
  fixed random seed, so every checkout writes the same holdout and replay), and
- the oracle and weak controls on the shipped sample holdout (`holdout/`, `gold/`), 3 seeds,

and writes one JSON file holding every verdict row (question, seed, judge and every Verdict
field) and every attempt's stored fields but its times and ids (its latency, each try's start
and latency) and the measured `query_resources` of its `extra` (set on whichever seed executed a
text first, which the threads' timing decides). Given two such files, it prints how many rows each holds and
every row that differs, and exits 1 when any does.

    python bench/verdict_parity.py dump OUT.json
    python bench/verdict_parity.py compare BEFORE.json AFTER.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import run as run_bench  # noqa: E402

from kgeval.config import GoldConfig, KgevalConfig, RunConfig, load_config  # noqa: E402
from kgeval.gold import rebuild_gold  # noqa: E402
from kgeval.holdout import load_holdout  # noqa: E402
from kgeval.runs import ResultsDB, execute_run  # noqa: E402
from kgeval.stores import EmbeddedStore  # noqa: E402
from kgeval.systems import ReplaySystem, system_from_name  # noqa: E402


def rows_of_run(db: ResultsDB, run_id: str, label: str) -> dict[str, dict]:
    """Every verdict and attempt outcome of one run, keyed so two builds' rows pair up."""
    rows: dict[str, dict] = {}
    for qid, seed, verdict in db.verdicts(run_id):
        rows[f"{label} verdict {qid} {seed} {verdict.judge}"] = verdict.model_dump(mode="json")
    for attempt in db.attempts(run_id):
        extra = {k: v for k, v in attempt.extra.items() if k != "query_resources"}
        tries = [t.model_dump(mode="json", include={"n", "outcome", "error", "http_status"}) for t in attempt.tries]
        fields = attempt.model_dump(mode="json", exclude={"latency_ms", "tries", "extra"})
        rows[f"{label} attempt {attempt.question_id} {attempt.seed}"] = {**fields, "extra": extra, "tries": tries}
    return rows


def dump(out: Path) -> None:
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        holdout_root, replay = run_bench.write_bench_holdout(tmp, 1050, 4, 1500, 3)
        report = rebuild_gold(load_holdout(holdout_root), lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp / "gold")
        assert report.ok, report.failures
        cfg = KgevalConfig(run=RunConfig(seeds=3, retry_backoff_s=0.0))
        with ResultsDB(tmp / "bench.duckdb") as db:
            meta = execute_run(load_holdout(holdout_root), tmp / "gold", ReplaySystem(replay), cfg, db, checklist=run_bench._passing_checklist)
            rows |= rows_of_run(db, meta.run_id, "bench-replay")
        sample_cfg = load_config(None)
        sample_cfg = sample_cfg.model_copy(update={"run": sample_cfg.run.model_copy(update={"seeds": 3})})
        sample = load_holdout(ROOT / "holdout")
        with ResultsDB(tmp / "sample.duckdb") as db:
            for name in ("oracle", "weak"):
                system = system_from_name(name, config=sample_cfg, holdout=sample)
                meta = execute_run(sample, ROOT / "gold", system, sample_cfg, db, checklist=run_bench._passing_checklist)
                rows |= rows_of_run(db, meta.run_id, f"sample-{name}")
    out.write_text(json.dumps(rows, sort_keys=True, indent=0), encoding="utf-8")
    kinds = {}
    for key in rows:
        label, kind = key.split()[:2]
        kinds[f"{label} {kind}s"] = kinds.get(f"{label} {kind}s", 0) + 1
    print(f"{out}: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))


def compare(before: Path, after: Path) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    lines = differences(a, b)
    print("\n".join([f"{before}: {len(a)} rows; {after}: {len(b)} rows", *lines]))
    return 1 if len(lines) > 1 else 0


def differences(a: dict[str, dict], b: dict[str, dict], limit: int = 20) -> list[str]:
    """A count line, then each row that differs (the fields that do) or is in one only."""
    differ = sorted(k for k in a.keys() & b.keys() if a[k] != b[k])
    only = sorted(a.keys() ^ b.keys())
    lines = [f"{len(a.keys() & b.keys())} rows in both, {len(differ)} differ, {len(only)} in one only"]
    for key in differ[:limit]:
        fields = sorted(f for f in a[key].keys() | b[key].keys() if a[key].get(f) != b[key].get(f))
        lines.append(f"  {key}: " + "; ".join(f"{f}: {a[key].get(f)!r} -> {b[key].get(f)!r}" for f in fields))
    return lines + [f"  only in {'before' if key in a else 'after'}: {key}" for key in only[:limit]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("dump").add_argument("out", type=Path)
    cmp = sub.add_parser("compare")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.out)
    else:
        sys.exit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
