"""Incremental, resumable rebuild: executions are counted by a real store (a subclass of the
embedded pyoxigraph store that counts its `execute` calls), never a mock of the engine."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from kgeval.config import GoldConfig
from kgeval.errors import CheckFailed, InputError
from kgeval.gold import gold_status, load_gold, read_gold, rebuild_gold, verify_gold
from kgeval.holdout import exclude_questions, include_questions, load_holdout, verify_holdout
from kgeval.stores import EmbeddedStore
from tests.conftest import MINI_QUESTIONS, PREFIX, REPO, write_holdout


class CountingStore(EmbeddedStore):
    """The embedded store, counting the reference queries and tie probes it executes."""

    executed: list[str] = []

    def execute(self, query: str, *, timeout_s: float, row_cap: int):  # noqa: ANN201
        CountingStore.executed.append(query)
        return super().execute(query, timeout_s=timeout_s, row_cap=row_cap)


def _rebuild(holdout: Path, gold: Path, **kwargs):  # noqa: ANN003, ANN202
    CountingStore.executed = []
    return rebuild_gold(load_holdout(holdout), lambda kg: CountingStore(kg.files), GoldConfig(), gold, **kwargs)


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A copy of the shipped sample holdout (4 KGs, 66 questions) to change."""
    shutil.copytree(REPO / "holdout", tmp_path / "holdout")
    return tmp_path / "holdout"


def test_second_rebuild_of_the_sample_executes_nothing(sample, tmp_path):
    first = _rebuild(sample, tmp_path / "gold")
    assert len(first.built) == 66 and len(CountingStore.executed) >= 132  # 2 executions each
    version = first.version
    t0 = time.perf_counter()
    second = _rebuild(sample, tmp_path / "gold")
    seconds = time.perf_counter() - t0
    assert CountingStore.executed == [] and second.built == [] and len(second.reused) == 66
    assert second.version == version  # same bytes: the same version stays in force
    print(f"second rebuild of the sample holdout: {seconds:.3f} s, 0 queries executed")
    verify_gold(tmp_path / "gold", load_holdout(sample))


def test_changing_one_question_executes_only_that_one(tmp_path):
    holdout = write_holdout(tmp_path / "h")
    _rebuild(holdout, tmp_path / "gold")
    questions = [dict(q) for q in MINI_QUESTIONS]
    questions[1]["sparql"] = PREFIX + "select ?p where { ?p ex:worksIn e:it }  # now IT"
    write_holdout(holdout, questions)
    report = _rebuild(holdout, tmp_path / "gold")
    assert report.built == ["mini-02"] and len(report.reused) == len(MINI_QUESTIONS) - 1
    assert CountingStore.executed == [questions[1]["sparql"]] * 2
    gold = load_gold(tmp_path / "gold")
    assert [r[0].value for r in gold["mini-02"].result.rows] == ["http://example.org/mini/entities/carol"]
    verify_gold(tmp_path / "gold", load_holdout(holdout))


def test_changed_data_row_cap_or_force_execute_again(tmp_path):
    holdout = write_holdout(tmp_path / "h")
    _rebuild(holdout, tmp_path / "gold")
    assert _rebuild(holdout, tmp_path / "gold", force=True).built == [q["id"] for q in MINI_QUESTIONS]
    kg = holdout / "mini" / "kg.ttl"
    kg.write_text(kg.read_text() + "e:dave a ex:Person .\n")
    write_holdout(holdout, ttl=kg.read_text())
    assert len(_rebuild(holdout, tmp_path / "gold").built) == len(MINI_QUESTIONS)
    CountingStore.executed = []
    report = rebuild_gold(load_holdout(holdout), lambda kg: CountingStore(kg.files), GoldConfig(row_cap=5), tmp_path / "gold")
    assert len(report.built) == len(MINI_QUESTIONS) and read_gold(tmp_path / "gold").manifest.row_cap == 5


def test_an_altered_previous_gold_is_never_reused(tmp_path):
    holdout = write_holdout(tmp_path / "h")
    gold = tmp_path / "gold"
    _rebuild(holdout, gold)
    path = gold / "mini.json"
    path.write_text(path.read_text().replace("alice", "alicia", 1))
    report = _rebuild(holdout, gold)
    assert len(report.built) == len(MINI_QUESTIONS) and "does not verify" in (report.reuse_note or "")
    assert "alicia" not in (gold / "mini.json").read_text()
    verify_gold(gold, load_holdout(holdout))


def test_excluded_failure_is_kept_on_record_and_not_retried(tmp_path):
    questions = [dict(q) for q in MINI_QUESTIONS]
    questions[2]["sparql"] = PREFIX + "SELECT ?x WHERE { ?x ex:unknown:bad }"
    holdout = write_holdout(tmp_path / "h", questions)
    first = _rebuild(holdout, tmp_path / "gold")
    assert not first.ok and [f.question_id for f in first.failures] == ["mini-03"]
    assert list(gold_status(tmp_path / "gold", load_holdout(holdout)).failed) == ["mini-03"]
    added, _ = exclude_questions(holdout, ["mini-03"], "the query is malformed; rewrite pending")
    assert added[0].why == "the query is malformed; rewrite pending" and added[0].at
    verify_holdout(holdout)  # resealed
    second = _rebuild(holdout, tmp_path / "gold")
    assert second.ok and CountingStore.executed == [] and second.failures[0].question_id == "mini-03"
    status = gold_status(tmp_path / "gold", load_holdout(holdout))
    assert status.ok and not status.failed and list(status.excluded) == ["mini-03"]
    verify_gold(tmp_path / "gold", load_holdout(holdout))
    assert [q.id for q in load_holdout(holdout).evaluated_questions()] == [q["id"] for q in questions if q["id"] != "mini-03"]
    assert _rebuild(holdout, tmp_path / "gold", force=True).built == [q["id"] for q in questions if q["id"] != "mini-03"]
    include_questions(holdout, ["mini-03"])
    assert not _rebuild(holdout, tmp_path / "gold").ok  # no longer excluded: tried again
    assert CountingStore.executed == [questions[2]["sparql"]]
    with pytest.raises(CheckFailed, match="not excluded"):
        verify_gold(tmp_path / "gold", load_holdout(holdout))


def test_exclusion_refuses_unknown_ids_and_an_unsealed_holdout(tmp_path):
    holdout = write_holdout(tmp_path / "h")
    with pytest.raises(InputError, match="no question nope-1"):
        exclude_questions(holdout, ["nope-1"], "why")
    with pytest.raises(InputError, match="--why is required"):
        exclude_questions(holdout, ["mini-01"], "  ")
    (holdout / "mini" / "kg.ttl").write_text("# tampered\n")
    with pytest.raises(CheckFailed, match="refusing to reseal"):
        exclude_questions(holdout, ["mini-01"], "why")


def test_exclusions_file_edited_without_reseal_fails_the_holdout(tmp_path):
    holdout = write_holdout(tmp_path / "h")
    exclude_questions(holdout, ["mini-01"], "ambiguous question")
    path = holdout / "EXCLUDED.yaml"
    path.write_text(path.read_text().replace("mini-01", "mini-02"))
    with pytest.raises(CheckFailed, match="EXCLUDED.yaml: sha256 differs"):
        verify_holdout(holdout)


def test_a_killed_rebuilds_finished_kgs_are_reused(tmp_path):
    """A staging directory left by a kill (partial manifest naming the KGs done) is resumed."""
    holdout = write_holdout(tmp_path / "h")
    write_holdout(tmp_path / "h", [dict(q, id=q["id"].replace("mini", "other")) for q in MINI_QUESTIONS], kg="other")
    gold = tmp_path / "gold"
    _rebuild(holdout, gold)
    staging = gold / ".staging-killed"
    shutil.copytree(gold / "current", staging)
    manifest = (staging / "MANIFEST.json").read_text()
    (staging / "MANIFEST.json").write_text(manifest.replace('"partial": false', '"partial": true'))
    shutil.rmtree(gold / (gold / "current").readlink())
    (gold / "current").unlink()  # as if the first rebuild had been killed before its switch
    report = _rebuild(holdout, gold)
    assert report.built == [] and len(report.reused) == 2 * len(MINI_QUESTIONS)
    assert not staging.exists()  # garbage-collected once the new version is in force
    verify_gold(gold, load_holdout(holdout))
