"""A rebuild's memory follows one entry, not the number of questions (issue 13, "bounded
memory"): each entry is written to its KG's file as soon as it is built. Before, every entry of
a KG was held until the KG was done, so a holdout of one large KG (one 1M-triple KG with 10,000
questions) held its whole gold in memory. Measured with tracemalloc on a real store."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from kgeval.config import GoldConfig
from kgeval.gold import load_gold, rebuild_gold
from kgeval.holdout import load_holdout
from kgeval.stores import EmbeddedStore
from tests.conftest import EX, PREFIX, write_holdout

PEOPLE = 1000


def _kg() -> str:
    lines = [f"@prefix ex: <{EX}vocab/> .", f"@prefix e: <{EX}entities/> ."]
    lines += [f'e:p{i} a ex:Person ; ex:name "Person number {i}" ; ex:age {20 + i % 40} .' for i in range(PEOPLE)]
    return "\n".join(lines) + "\n"


def _python_heap_peak(root: Path, questions: int, *, unchanged: bool = False) -> float:
    """Peak traced Python memory (bytes) of rebuilding `questions` questions of 1,000 rows each:
    from nothing, or (`unchanged`) after a first rebuild, reusing every entry."""
    asked = [
        {"id": f"q{i}", "question": f"people, {i}", "domain": "hr", "sparql": PREFIX + f"SELECT ?p ?n ?a WHERE {{ ?p ex:name ?n ; ex:age ?a }}  # {i}"}
        for i in range(questions)
    ]  # fmt: skip
    holdout = load_holdout(write_holdout(root / "holdout", asked, ttl=_kg()))
    store = EmbeddedStore(holdout.kgs[0].files)  # loaded before tracing: only the rebuild is measured
    if unchanged:
        rebuild_gold(holdout, lambda kg: store, GoldConfig(), root / "gold", force=True)
    tracemalloc.start()
    try:
        report = rebuild_gold(holdout, lambda kg: store, GoldConfig(), root / "gold", force=not unchanged)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.ok and len(report.reused if unchanged else report.built) == questions
    gold = load_gold(root / "gold")
    assert len(gold) == questions and all(len(e.result.rows) == PEOPLE for e in gold.values())
    return peak


def test_rebuild_memory_does_not_grow_with_the_questions_of_one_kg(tmp_path):
    few = _python_heap_peak(tmp_path / "few", 4)
    many = _python_heap_peak(tmp_path / "many", 20)
    # holding every entry: 20 questions need ~5x the memory of 4 (7.0 MB, 33.9 MB measured before
    # the fix); written as built: about the same
    print(f"Python heap peak of a rebuild: {few / 2**20:.1f} MB for 4 questions, {many / 2**20:.1f} MB for 20")
    assert many < 1.6 * few, f"{many / 2**20:.1f} MB for 20 questions against {few / 2**20:.1f} MB for 4: entries are held, not written as built"


def test_an_unchanged_rebuild_reads_the_previous_gold_one_entry_at_a_time(tmp_path):
    few = _python_heap_peak(tmp_path / "few", 4, unchanged=True)
    many = _python_heap_peak(tmp_path / "many", 20, unchanged=True)
    # the previous KG file parsed whole for reuse: 20 questions need ~5x the memory of 4; indexed
    # and each reused entry read back as it is written: about the same
    print(f"Python heap peak of an unchanged rebuild: {few / 2**20:.1f} MB for 4 questions, {many / 2**20:.1f} MB for 20")
    assert many < 1.6 * few, f"{many / 2**20:.1f} MB for 20 questions against {few / 2**20:.1f} MB for 4: the previous gold is held, not streamed"
