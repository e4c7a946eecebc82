"""Incremental, resumable rebuild: executions are counted by a real store (a subclass of the
embedded pyoxigraph store that counts its `execute_cells` calls, the entry point the rebuild
executes reference queries and tie probes through), never a mock of the engine."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from kgeval.config import GoldConfig
from kgeval.errors import CheckFailed, InputError, StoreError
from kgeval.gold import gold_status, load_gold, read_gold, rebuild_gold, verify_gold
from kgeval.holdout import (
    exclude_questions,
    include_questions,
    load_holdout,
    verify_holdout,
)
from kgeval.stores import EmbeddedStore
from tests.conftest import MINI_QUESTIONS, PREFIX, REPO, write_holdout


class CountingStore(EmbeddedStore):
    """The embedded store, counting the reference queries and tie probes it executes."""

    executed: list[str] = []

    def execute_cells(self, query: str, *, timeout_s: float, row_cap: int):  # noqa: ANN201
        CountingStore.executed.append(query)
        return super().execute_cells(query, timeout_s=timeout_s, row_cap=row_cap)

    def execute_probe(self, probe: str, cut, *, timeout_s: float, row_cap: int):  # noqa: ANN001, ANN201
        CountingStore.executed.append(probe)
        return super().execute_probe(probe, cut, timeout_s=timeout_s, row_cap=row_cap)


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


def test_an_unchanged_rebuild_never_loads_a_kg_and_a_changed_question_loads_only_its_own(tmp_path):
    """Reuse is decided on the files' hashes: a KG none of whose questions execute is not
    loaded into the process at all (on a 1M-triple KG, seconds of the unchanged rebuild)."""
    holdout = write_holdout(tmp_path / "h")
    _rebuild(holdout, tmp_path / "gold")
    opened: list[CountingStore] = []

    def store_for(kg):  # noqa: ANN001, ANN202
        opened.append(CountingStore(kg.files))
        return opened[-1]

    again = rebuild_gold(load_holdout(holdout), store_for, GoldConfig(), tmp_path / "gold")
    assert again.built == [] and opened and all(store._local_store is None for store in opened)
    questions = [dict(q) for q in MINI_QUESTIONS]
    questions[0]["sparql"] = questions[0]["sparql"] + "  # changed"
    write_holdout(holdout, questions)
    opened.clear()
    changed = rebuild_gold(load_holdout(holdout), store_for, GoldConfig(), tmp_path / "gold")
    assert changed.built == [questions[0]["id"]] and opened[0]._local_store is not None


def test_a_kg_file_changed_after_its_store_opened_is_refused_when_it_loads(tmp_path):
    """The data version a store reports is its files' hashes at open; the copy it loads later
    must be of those files, or its queries fail (named, never answered from other data)."""
    path = tmp_path / "kg.ttl"
    path.write_text("<http://x/a> <http://x/p> <http://x/b> .\n", encoding="utf-8")
    store = EmbeddedStore([path])
    path.write_text("<http://x/a> <http://x/p> <http://x/c> .\n", encoding="utf-8")
    for _ in range(2):  # found once, then refused without loading again
        with pytest.raises(StoreError, match="KG files changed since the store opened them"):
            store.execute("SELECT ?o WHERE { ?s ?p ?o }", timeout_s=60, row_cap=10)


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


def _gold_with_an_edited_row(tmp_path: Path) -> tuple[Path, Path]:
    """The mini holdout and its gold, one row of which was then edited ("alice" -> "alicia")."""
    holdout = write_holdout(tmp_path / "h")
    gold = tmp_path / "gold"
    _rebuild(holdout, gold)
    path = gold / "mini.json"
    path.write_text(path.read_text().replace("alice", "alicia", 1))
    return holdout, gold


def test_an_altered_previous_gold_is_never_reused(tmp_path):
    holdout, gold = _gold_with_an_edited_row(tmp_path)
    report = _rebuild(holdout, gold)
    assert len(report.built) == len(MINI_QUESTIONS) and "does not verify" in (report.reuse_note or "")
    assert "alicia" not in (gold / "mini.json").read_text()
    verify_gold(gold, load_holdout(holdout))


def test_a_reused_entry_that_fails_its_result_hash_when_read_makes_its_kg_execute_again(tmp_path):
    # a row edited and the manifest's plain file hash "fixed" (no key): the file indexes, but the
    # entry's own result hash fails when it is read back to be written; nothing of that KG is
    # reused, the report counts each question once, and the new gold holds no edited row
    import json

    from kgeval._files import sha256_file

    holdout, gold = _gold_with_an_edited_row(tmp_path)
    manifest = json.loads((gold / "MANIFEST.json").read_text())
    manifest["files"]["mini.json"] = sha256_file(gold / "mini.json")
    (gold / "MANIFEST.json").write_text(json.dumps(manifest))
    report = _rebuild(holdout, gold)
    assert "result does not match" in (report.reuse_note or "")
    assert sorted(report.built) == sorted(q["id"] for q in MINI_QUESTIONS) and not report.reused and report.ok
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
    with pytest.raises(InputError, match="no question 'nope-1'"):
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
    # a second entry for one question (two reasons on record) is refused, by the reseal too
    path.write_text(path.read_text() + path.read_text().split("excluded:\n", 1)[1])
    from kgeval.holdout import load_exclusions
    from tests.cli.test_cli import kgeval

    with pytest.raises(CheckFailed, match="EXCLUDED.yaml: sha256 differs from MANIFEST.json: damaged, or edited by hand"):
        load_exclusions(holdout)  # every reader refuses it, not only `holdout verify`
    unsealed = tmp_path / "unsealed"
    shutil.copytree(holdout, unsealed)
    (unsealed / "MANIFEST.json").unlink()
    with pytest.raises(InputError, match="question mini-02 is excluded twice"):
        load_exclusions(unsealed)
    # and a hand-edited decision file is never blessed by a reseal (a forged exclusion, who/when/why
    # copied, was accepted once resealed): decisions change only through their commands
    sealed = kgeval("holdout", "seal", "--holdout", str(holdout))
    assert sealed.returncode == 1 and "EXCLUDED.yaml changed since the holdout was sealed, not by kgeval" in sealed.stderr, sealed.stderr
    forged = holdout / "CONFIRMED_EMPTY.yaml"
    forged.write_text("confirmed_empty:\n- {question_id: mini-03, why: forged, sparql_sha256: '" + "0" * 64 + "', by: alice, at: '2026-01-01'}\n")
    path.write_text(path.read_text().split("excluded:\n", 1)[0] + "excluded: []\n")
    sealed = kgeval("holdout", "seal", "--holdout", str(holdout))
    assert sealed.returncode == 1 and "EXCLUDED.yaml, CONFIRMED_EMPTY.yaml changed" in sealed.stderr, sealed.stderr
    forged.unlink()
    include = kgeval("holdout", "include", "mini-01", "--holdout", str(holdout))  # refuses: the holdout does not match its manifest
    assert include.returncode == 1 and "refusing to reseal" in include.stderr, include.stderr


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


def test_old_versions_and_leftovers_are_collected_keeping_the_newest_two(tmp_path):
    holdout = write_holdout(tmp_path / "h")
    gold = tmp_path / "gold"
    versions = []
    for n in range(4):
        questions = [dict(q) for q in MINI_QUESTIONS]
        questions[0]["sparql"] += f"  # variant {n}"
        write_holdout(holdout, questions)
        (gold / f".staging-left-by-a-kill-{n}").mkdir(parents=True)
        versions.append(_rebuild(holdout, gold).version.name)
    on_disk = sorted(p.name for p in gold.iterdir() if p.is_dir() and not p.is_symlink())
    assert on_disk == sorted(versions[-2:])  # in force + the one before; no staging junk
    assert (gold / "current").readlink().as_posix() == versions[-1]
    verify_gold(gold, load_holdout(holdout))


def test_one_writer_at_a_time(tmp_path):
    from kgeval.gold._layout import writer_lock

    holdout = write_holdout(tmp_path / "h")
    with writer_lock(tmp_path / "gold"), pytest.raises(InputError, match="another `kgeval gold rebuild` is writing"):
        _rebuild(holdout, tmp_path / "gold")


def test_a_gold_in_the_layout_before_versions_is_read_and_migrated(tmp_path):
    holdout = write_holdout(tmp_path / "h")
    _rebuild(holdout, tmp_path / "built")
    legacy = tmp_path / "legacy"
    shutil.copytree((tmp_path / "built" / "current").resolve(), legacy)  # plain files, no `current`
    assert load_gold(legacy).keys() == {q["id"] for q in MINI_QUESTIONS}
    verify_gold(legacy, load_holdout(holdout))
    report = _rebuild(holdout, legacy)
    assert report.built == [] and (legacy / "current").is_symlink()
    assert (legacy / "mini.json").is_symlink() and (legacy / "display").is_symlink() and (legacy / "MANIFEST.json").is_symlink()
    verify_gold(legacy, load_holdout(holdout))


def test_memory_follows_the_largest_kg_not_the_holdout(tmp_path):
    """Each KG's gold is written and dropped when that KG is done: peak memory of a rebuild of
    twelve KGs stays near that of four (holding every entry until one final write, as before,
    grows with the KG count)."""
    import gc
    import tracemalloc

    ttl = "".join(f"<http://x/e{i}> <http://x/label> \"entity number {i} with a long label\" .\n" for i in range(2000))

    def peak(kgs: int) -> int:
        root = tmp_path / f"h{kgs}"
        for k in range(kgs):
            qs = [{"id": f"k{k}-q{j}", "question": "All?", "sparql": f"SELECT ?e ?l WHERE {{ ?e <http://x/label> ?l }} # {j}", "domain": "d"} for j in range(3)]
            write_holdout(root, qs, ttl=ttl, kg=f"k{k}")
        holdout = load_holdout(root)
        stores = {kg.id: EmbeddedStore(kg.files) for kg in holdout.kgs}
        gc.collect()
        tracemalloc.start()
        rebuild_gold(holdout, lambda kg: stores[kg.id], GoldConfig(executions=1), tmp_path / f"gold{kgs}")
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    peak(1)  # warm-up: first-use caches (imports, parser tables) are not the gold's
    four, twelve = peak(4), peak(12)
    print(f"peak traced memory: 4 KGs {four / 2**20:.1f} MiB, 12 KGs {twelve / 2**20:.1f} MiB")
    assert twelve < 1.3 * four
