"""A run's memory follows the questions in flight, not the holdout (issue 13, "bounded memory",
run side): the checklist verifies the gold in one streamed pass, each entry is read when its
question's first attempt starts and dropped when its last is judged, and the execution cache is
bounded. Before, a run loaded every gold entry up front and the cache kept every candidate
result (a 10,000-question run over a 1M-triple KG held ~2.1 GB). Measured with tracemalloc on a
real store, the real pre-eval checklist and the replay system."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from kgeval.checklists import pre_eval_checklist
from kgeval.config import GoldConfig, KgevalConfig, RunConfig
from kgeval.errors import CheckFailed
from kgeval.gold import GoldEntry, index_gold, rebuild_gold
from kgeval.holdout import load_holdout
from kgeval.judges import _execution, _execution_rules, _reading
from kgeval.judges._cache import GoldCache
from kgeval.runs import ResultsDB, execute_run
from kgeval.runs._attempt import Execution, ExecutionCache
from kgeval.stores import EmbeddedStore, QueryResult
from kgeval.systems import ReplaySystem
from tests.conftest import EX, PREFIX, REPO, write_holdout

CHECKLIST = pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")
PEOPLE = 1000
SELECT_PEOPLE = "SELECT ?p ?n ?a WHERE { ?p ex:name ?n ; ex:age ?a }"


def _kg() -> str:
    lines = [f"@prefix ex: <{EX}vocab/> .", f"@prefix e: <{EX}entities/> ."]
    lines += [f'e:p{i} a ex:Person ; ex:name "Person number {i}" ; ex:age {20 + i % 40} .' for i in range(PEOPLE)]
    return "\n".join(lines) + "\n"


def _built(root: Path, questions: int) -> tuple[Path, Path, Path]:
    """A one-KG holdout of `questions` questions of 1,000 rows each, its gold, and a replay whose
    candidates are one text for every question (so the execution cache holds one result and
    only the gold can grow with the questions)."""
    asked = [
        {"id": f"q{i:03d}", "question": f"people, {i}", "domain": "hr", "sparql": PREFIX + f"{SELECT_PEOPLE}  # reference {i}"}
        for i in range(questions)
    ]  # fmt: skip
    holdout_dir = write_holdout(root / "holdout", asked, ttl=_kg())
    holdout = load_holdout(holdout_dir)
    report = rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), root / "gold")
    assert report.ok and len(report.built) == questions
    replay = root / "replay.jsonl"
    records = [{"kg": "mini", "question_id": q["id"], "seed": s, "sparql": PREFIX + SELECT_PEOPLE} for q in asked for s in range(2)]
    replay.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return holdout_dir, root / "gold", replay


def _run_heap_peak(root: Path, questions: int) -> float:
    """Peak traced Python memory (bytes) of the checklist and the run of `questions` questions.
    The judges keep their own bounded cache of prepared golds (`judges._cache.GoldCache`, 256
    by default): cut to 4 here, so that 24 questions show whether the run itself holds them."""
    holdout_dir, gold, replay = _built(root, questions)
    holdout = load_holdout(holdout_dir)
    cfg = KgevalConfig(run=RunConfig(seeds=2, concurrency=2))
    with ResultsDB(root / "r.duckdb") as db:
        tracemalloc.start()
        try:
            meta = execute_run(holdout, gold, ReplaySystem(replay), cfg, db, checklist=CHECKLIST)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        verdicts = db.verdicts(meta.run_id)
    assert len(verdicts) == 2 * 2 * questions and all(v.correct for _, _, v in verdicts)  # two judges, two seeds
    return peak


def test_run_memory_does_not_grow_with_the_questions_of_one_kg(tmp_path, monkeypatch):
    monkeypatch.setattr(GoldCache.__init__, "__defaults__", (4,))
    for module_cache in (_reading._GOLD_KINDS, _execution._HOLDS_LITERAL, _execution_rules._GOLD_TERMS):  # made at import
        monkeypatch.setattr(module_cache, "_size", 4)
    few = _run_heap_peak(tmp_path / "few", 4)
    many = _run_heap_peak(tmp_path / "many", 24)
    # every entry loaded up front: 24 questions needed ~4x the memory of 4 (11.0 MB and 41.6 MB
    # measured before the fix); read per question and dropped: 11.1 MB and 13.2 MB
    print(f"Python heap peak of a run (checklist included): {few / 2**20:.1f} MB for 4 questions, {many / 2**20:.1f} MB for 24")
    # measured against what the 20 more entries take when held (a ratio to `few` alone broke
    # when the run's own baseline shrank: 4.5 -> 3.5 MB once the gold scan stopped decoding
    # results it had verified before)
    held = 20 * _entry_heap_bytes(tmp_path / "many" / "gold")
    assert many - few < 0.1 * held, (
        f"{many / 2**20:.1f} MB for 24 questions against {few / 2**20:.1f} MB for 4, where holding 20 more entries "
        f"takes {held / 2**20:.1f} MB: the run holds the gold, not the questions in flight"
    )


def _entry_heap_bytes(gold: Path) -> int:
    """Python heap one entry of the gold takes when read on its own (its result's rows typed)."""
    summary = index_gold(gold).entries["q000"]
    with open(summary.path, "rb") as handle:
        handle.seek(summary.offset)
        raw = handle.read(summary.length)
    tracemalloc.start()
    try:
        entry = GoldEntry.model_validate_json(raw)
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert entry.result.total == PEOPLE
    return size


def test_an_entry_edited_after_the_gold_was_verified_is_refused_when_read(tmp_path):
    """The run verifies the gold up front and reads each entry later: an entry whose bytes
    changed in between (a hand edit of the version in force) is refused, not judged against."""
    _, gold, _ = _built(tmp_path, 3)
    index = index_gold(gold)
    assert index.entry("q001").result.total == PEOPLE
    path = index.entries["q001"].path
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("Person number 7", "Person number 8", 1), encoding="utf-8")  # same length, one row changed
    with pytest.raises(CheckFailed, match="q000: gold entry changed on disk since the gold was verified"):
        index.entry("q000")
    with pytest.raises(CheckFailed, match="sha256 differs"):
        index_gold(gold)  # and a new scan refuses the whole file


def test_a_half_written_kg_file_is_refused_by_the_streamed_scan(tmp_path):
    _, gold, _ = _built(tmp_path, 3)
    path = index_gold(gold).entries["q000"].path
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(CheckFailed, match=r"mini.json: sha256 differs from MANIFEST.json"):
        index_gold(gold)


def test_the_execution_cache_keeps_recent_results_within_its_row_bound():
    def result(rows: int) -> Execution:
        return Execution(result=QueryResult(form="select", vars=["x"], rows=[[None]] * rows, total=rows))

    cache = ExecutionCache(max_rows=1000)
    for i in range(50):
        cache.execution(("kg", f"q{i}"), lambda: result(99), lambda e: True)
        cache.execution(("kg", "shared"), lambda: result(99), lambda e: True)  # used by every question: stays
    assert sum(len(e.result.rows) + 1 for e in cache._results.values()) <= 1000
    assert cache.execution(("kg", "shared"), lambda: result(1), lambda e: True)[1]  # still cached
    assert not cache.execution(("kg", "q0"), lambda: result(1), lambda e: True)[1]  # long gone
