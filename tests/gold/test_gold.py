import json
from pathlib import Path

import pytest

from kgeval.config import GoldConfig
from kgeval.errors import CheckFailed
from kgeval.gold import GoldEntry, gold_problems, gold_status, load_gold, read_gold, rebuild_gold, verify_gold
from kgeval.holdout import load_holdout, seal_holdout
from kgeval.stores import EmbeddedStore
from tests.conftest import MINI_QUESTIONS, PREFIX, write_holdout
from tests.stores.dotted_names import CASES, REJECTED, SPORTS_TTL, TIED


def _rebuild(holdout_dir: Path, gold_dir: Path, **cfg):
    return rebuild_gold(load_holdout(holdout_dir), lambda kg: EmbeddedStore(kg.files), GoldConfig(**cfg), gold_dir)


def test_gold_has_full_rows_hashes_and_engine(mini_holdout, mini_gold):
    gold = load_gold(mini_gold)
    assert set(gold) == {q["id"] for q in MINI_QUESTIONS}
    items = gold["mini-06"]
    assert (items.result.total, items.result.truncated, len(items.result.rows)) == (30, False, 30)
    assert items.engine == "oxigraph-embedded" and items.engine_version
    assert items.result_sha256 == items.result.sha256()
    assert gold["mini-04"].result.boolean is True and gold["mini-05"].result.boolean is False
    assert gold["mini-07"].result.total == 0
    verify_gold(mini_gold, load_holdout(mini_holdout))


def test_cap_keeps_total_and_flags_truncation(tmp_path):
    ttl = "".join(f"<http://x/entities/ConsumerComplaint/{i}> a <http://x/Complaint> .\n" for i in range(2400))
    q = [{"id": "big-01", "question": "All complaints?", "sparql": "SELECT ?c WHERE { ?c a <http://x/Complaint> }", "domain": "finance", "tags": ["large-list"]}]
    holdout = write_holdout(tmp_path / "h", q, ttl=ttl, kg="big")
    report = _rebuild(holdout, tmp_path / "gold")
    entry = load_gold(tmp_path / "gold")["big-01"]
    assert report.ok
    assert (len(entry.result.rows), entry.result.total, entry.result.truncated) == (2000, 2400, True)


def test_display_is_kept_apart_and_never_in_the_gold_record(mini_gold):
    display = json.loads((mini_gold / "display" / "mini.json").read_text())
    assert display["mini-06"].endswith("… (30 total)")
    assert display["mini-04"] == "true"
    assert "display" not in GoldEntry.model_fields
    raw = json.loads((mini_gold / "mini.json").read_text())
    assert "…" not in json.dumps(raw)


def test_hand_corrupted_gold_fails_verify(mini_holdout, mini_gold):
    path = mini_gold / "mini.json"
    path.write_text(path.read_text().replace("alice", "alicia", 1))
    with pytest.raises(CheckFailed, match="mini.json: sha256 differs"):
        verify_gold(mini_gold, load_holdout(mini_holdout))


def test_corrupted_rows_with_recomputed_manifest_still_fail(mini_holdout, mini_gold):
    # someone edits a row and "fixes" the manifest hash: the per-entry result hash catches it
    from kgeval._files import sha256_file

    path = mini_gold / "mini.json"
    path.write_text(path.read_text().replace("alice", "alicia", 1))
    manifest = json.loads((mini_gold / "MANIFEST.json").read_text())
    manifest["files"]["mini.json"] = sha256_file(path)
    (mini_gold / "MANIFEST.json").write_text(json.dumps(manifest))
    assert any("result does not match" in p for p in gold_problems(mini_gold, load_holdout(mini_holdout)))


def test_gold_from_another_holdout_or_changed_query_fails(mini_holdout, mini_gold):
    questions = [dict(q) for q in MINI_QUESTIONS]
    questions[0]["sparql"] = PREFIX + "SELECT ?d WHERE { e:bob ex:worksIn ?d }"
    write_holdout(mini_holdout, questions)
    problems = gold_problems(mini_gold, load_holdout(mini_holdout))
    assert any("different holdout" in p for p in problems)
    assert "mini/mini-01: reference SPARQL changed since the gold was built" in problems


def test_syntax_error_is_recorded_by_id_and_the_rest_is_written(mini_holdout, mini_gold):
    questions = [dict(q) for q in MINI_QUESTIONS]
    questions[2]["sparql"] = "SELECT ?x WHERE { ?x ?p "
    write_holdout(mini_holdout, questions)
    report = _rebuild(mini_holdout, mini_gold)
    assert not report.ok
    assert [(f.kg, f.question_id) for f in report.failures] == [("mini", "mini-03")]
    assert "does not parse" in report.failures[0].error
    gold = read_gold(mini_gold)
    assert set(gold.entries) == {q["id"] for q in MINI_QUESTIONS} - {"mini-03"}
    assert gold.failures["mini-03"].error == report.failures[0].error
    status = gold_status(mini_gold, load_holdout(mini_holdout))
    assert status.ok and list(status.failed) == ["mini-03"]
    with pytest.raises(CheckFailed, match=r"(?s)1 reference queries failed and are not excluded.*mini/mini-03"):
        verify_gold(mini_gold, load_holdout(mini_holdout))


def test_rebuild_is_byte_identical(mini_holdout, tmp_path):
    _rebuild(mini_holdout, tmp_path / "a")
    _rebuild(mini_holdout, tmp_path / "b")
    for name in ("mini.json", "display/mini.json", "MANIFEST.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_resealed_holdout_needs_rebuilt_gold(mini_holdout, mini_gold):
    (mini_holdout / "NOTES.md").write_text("a new file changes the holdout manifest")
    seal_holdout(mini_holdout)
    with pytest.raises(CheckFailed, match="different holdout"):
        verify_gold(mini_gold, load_holdout(mini_holdout))


def test_reference_names_with_several_dots_are_executed(tmp_path):
    """QALD-style references naming `dbr:A.C._Milan`, `dbr:J._R._R._Tolkien` ... were recorded as
    failed ("oxigraph rejected the query: error at 1:152: expected OPTIONAL"), and one with
    `dbr:Linux_2.6.32` in VALUES as an empty answer. Now each gold holds the answer the data
    gives, and the tie at LIMIT 1 between two A.C._Milan players is found."""
    questions = [{"id": f"sports-{name}", "question": name, "sparql": query, "domain": "sports", "tags": ["list"]} for name, (query, _) in CASES.items()]
    questions.append({"id": "sports-tied", "question": "One player of the first club", "sparql": TIED, "domain": "sports", "tags": ["list"]})
    report = _rebuild(write_holdout(tmp_path / "holdout", questions, SPORTS_TTL, kg="sports"), tmp_path / "gold")
    assert report.ok, report.failures
    gold = load_gold(tmp_path / "gold")
    for name, (_, expected) in CASES.items():
        result = gold[f"sports-{name}"].result
        assert (result.boolean if isinstance(expected, bool) else {tuple(t.value for t in row) for row in result.rows}) == expected, name
    tied = gold["sports-tied"]
    assert tied.tie_check_error is None and tied.ties is not None and tied.ties.tied
    assert [(len(g.candidates), g.choose) for g in tied.ties.groups] == [(2, 1)]


def test_an_engine_error_points_into_the_approved_text(tmp_path):
    """Oxigraph's "error at line:column" counts in the text the guard approved (one rewritten
    line), not in the reference as written (line 4 here): the failure says so and quotes it."""
    questions = [{"id": "sports-bind", "question": "Milan players", "sparql": REJECTED, "domain": "sports", "tags": ["list"]}]
    report = _rebuild(write_holdout(tmp_path / "holdout", questions, SPORTS_TTL, kg="sports"), tmp_path / "gold")
    error = report.failures[0].error
    assert "oxigraph rejected the query: error at 1:" in error and "of the text the guard approved (not the query as written)" in error
    assert "BIND ( 1 AS ?player ) }⟨here⟩" in error
