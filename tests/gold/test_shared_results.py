"""Questions whose golds are equal share one result (issue 13, run speed): the verifying scan
spells a result canonically once per distinct content, and a run reads it into one object that
the judges prepare once. Sharing must never blur two different golds, and must not weaken the
tamper checks (an entry edited after the scan, a result_sha256 that does not match)."""

from __future__ import annotations

import json

import pytest

from kgeval._files import sha256_file
from kgeval.errors import CheckFailed
from kgeval.gold import GoldLoans, index_gold
from kgeval.stores import CellResult
import kgeval.gold._index as gold_index
from tests.runs.test_run_memory import PEOPLE, _built


def test_entries_with_equal_results_are_lent_one_result_object(tmp_path):
    _, gold, _ = _built(tmp_path, 3)  # three reference queries (comments differ), one answer
    index = index_gold(gold)
    loans = GoldLoans(index, {"q000": 1, "q001": 1, "q002": 1})
    with loans.lend("q000") as first, loans.lend("q001") as second:
        assert (first.question_id, second.question_id) == ("q000", "q001")
        assert first.query_sha256 != second.query_sha256
        assert second.result is first.result  # read once, prepared once by the judges
        alone = index.entry("q001")  # read without sharing: the same entry, field for field
        assert alone.result is not first.result and alone.model_dump() == second.model_dump()
        assert first.result.total == PEOPLE and first.result.sha256() == first.result_sha256


def test_a_shared_result_does_not_excuse_an_entry_edited_after_the_scan(tmp_path):
    _, gold, _ = _built(tmp_path, 3)
    index = index_gold(gold)
    loans = GoldLoans(index, {"q000": 2, "q002": 1})
    with loans.lend("q000"):  # its result is now shared, and q002's result was equal
        path = index.entries["q002"].path
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace('"Person number 7"', '"Person number 8"', 3), encoding="utf-8")  # q002's row too
        with pytest.raises(CheckFailed, match="q002: gold entry changed on disk since the gold was verified"):
            with loans.lend("q002"):
                pass


def test_a_result_verified_once_does_not_pass_a_wrong_result_sha256_later(tmp_path):
    """The scan remembers results it has verified (by the digest of their JSON); a later entry
    with the same result but another result_sha256 is still refused."""
    _, gold, _ = _built(tmp_path, 3)
    version = (gold / "current").resolve()
    path = version / "mini.json"
    payload = json.loads(path.read_text())
    payload["entries"][2]["result_sha256"] = "0" * 64  # q000 and q001 verify the result first
    path.write_text(json.dumps(payload))
    manifest_path = version / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"]["mini.json"] = sha256_file(path)
    manifest.pop("tag", None)
    manifest_path.write_text(json.dumps(manifest))
    gold_index._VERIFIED.clear()
    with pytest.raises(CheckFailed, match="q002: result does not match its result_sha256"):
        index_gold(gold)
    assert gold_index._VERIFIED  # the equal results before it were verified and remembered


def _rewrite_kg_file(gold, rewrite) -> None:
    """Rewrite mini.json with `rewrite(payload) -> text` and fix its hash in the manifest."""
    version = (gold / "current").resolve()
    path = version / "mini.json"
    path.write_text(rewrite(json.loads(path.read_text())), encoding="utf-8")
    manifest_path = version / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"]["mini.json"] = sha256_file(path)
    manifest.pop("tag", None)
    manifest_path.write_text(json.dumps(manifest))


def test_the_scan_reads_entries_cut_by_small_blocks_and_any_spacing_or_key_order(tmp_path, monkeypatch):
    """Entries are decoded member by member (to find each result's bytes): a block boundary
    anywhere (inside a number too) and a file written with other spacing and key order give
    the same entries, and the results are still shared."""
    _, gold, _ = _built(tmp_path, 3)
    expected = {qid: index_gold(gold).entry(qid).model_dump() for qid in ("q000", "q001", "q002")}

    def pretty(payload: dict) -> str:
        payload["entries"] = [dict(reversed(list(e.items()))) for e in payload["entries"]]  # "result" last but one
        return json.dumps(payload, indent=3, ensure_ascii=False)

    _rewrite_kg_file(gold, pretty)
    for block in (7, 64, 1 << 20):
        monkeypatch.setattr(gold_index._Text.read_more, "__defaults__", (block,))
        monkeypatch.setattr(gold_index, "_BLOCK", block)
        from kgeval.gold import _store

        _store._SCANNED.clear()
        index = index_gold(gold)
        loans = GoldLoans(index, {"q000": 1, "q002": 1})
        with loans.lend("q000") as first, loans.lend("q002") as third:
            assert third.result is first.result
            assert {"q000": first.model_dump(), "q002": third.model_dump()} == {q: expected[q] for q in ("q000", "q002")}
        assert index.entry("q001").model_dump() == expected["q001"]


def test_a_result_that_only_starts_like_one_met_before_is_decoded_and_checked(tmp_path, monkeypatch):
    """The scan does not decode a result whose text is one it verified before (`_Repeats`):
    a result that starts like an earlier one (same columns, same first rows) but is another
    one is decoded, summarized and checked as itself, and gives the summaries a scan that
    remembers nothing gives."""
    from kgeval.gold import _store
    from kgeval.stores import QueryResult

    _, gold, _ = _built(tmp_path, 3)

    def one_row_fewer(payload: dict) -> str:
        third = payload["entries"][2]
        third["result"]["rows"] = third["result"]["rows"][:-1]
        third["result"]["total"] -= 1
        third["result_sha256"] = QueryResult.model_validate(third["result"]).sha256()
        return json.dumps(payload)

    _rewrite_kg_file(gold, one_row_fewer)
    _store._SCANNED.clear()
    index = index_gold(gold)
    assert index.entries["q002"].total == PEOPLE - 1
    assert index.entries["q001"].result_digest == index.entries["q000"].result_digest != index.entries["q002"].result_digest
    assert index.entry("q002").result.total == PEOPLE - 1
    monkeypatch.setattr(gold_index, "_REPEATS_BUDGET_CHARS", 0)  # nothing remembered: every result decoded
    _store._SCANNED.clear()
    assert index_gold(gold).entries == index.entries

    def wrong_hash_on_a_repeat(payload: dict) -> str:
        payload["entries"][1]["result_sha256"] = payload["entries"][2]["result_sha256"]  # q001 repeats q000's text
        return json.dumps(payload)

    _rewrite_kg_file(gold, wrong_hash_on_a_repeat)
    monkeypatch.setattr(gold_index, "_REPEATS_BUDGET_CHARS", 16 << 20)
    _store._SCANNED.clear()
    gold_index._VERIFIED.clear()
    with pytest.raises(CheckFailed, match="q001: result does not match its result_sha256"):
        index_gold(gold)


@pytest.mark.parametrize("bad_cell", [{"type": "triple", "value": "x"}, {"type": "uri", "value": 7}, {"type": "literal", "value": "x", "lang": 5}])
def test_a_gold_cell_that_is_no_term_is_refused_when_the_entry_is_read(tmp_path, bad_cell):
    """A cell that is no valid term makes the entry "not a gold entry" when it is read, even
    when its result_sha256 was made to match (no integrity key): the scan spells cells, it does
    not validate them as terms, so a faster reader must keep this check (one building a Term
    per distinct cell took an unknown kind for a literal)."""
    from kgeval.gold import _store

    _, gold, _ = _built(tmp_path, 3)

    def corrupt(payload: dict) -> str:
        first = payload["entries"][0]
        first["result"]["rows"][0][0] = bad_cell
        rows = [tuple(None if c is None else (c.get("type"), c.get("value"), c.get("datatype"), c.get("lang"))
                      for c in row) for row in first["result"]["rows"]]  # fmt: skip
        r = first["result"]
        first["result_sha256"] = CellResult(r["form"], tuple(r["vars"]), rows, r["total"], r.get("boolean"), r.get("ordered", False)).sha256()
        return json.dumps(payload)

    _rewrite_kg_file(gold, corrupt)
    _store._SCANNED.clear()
    index = index_gold(gold)  # the scan spells cells; it does not build terms
    with pytest.raises(CheckFailed, match="not a gold entry \\(q000\\)"):
        index.entry("q000")
    assert index.entry("q001").result.total == PEOPLE
