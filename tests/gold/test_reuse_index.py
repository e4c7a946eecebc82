"""The streaming index of a previous gold's KG file (`kgeval.gold._reuse`): byte spans must be
exact whatever the spacing, key order, multi-byte characters and chunk boundaries, and a file
that is not a gold file, or not the one the manifest names, is refused (never half-indexed).
The reader is a stand-in holding only the version directory and the manifest's file hashes
(what `index_kg_file` reads of a `GoldReader`); real golds go through it in test_incremental."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from kgeval.errors import CheckFailed
from kgeval.gold._reuse import index_kg_file


def _entry(qid: str, payload: str = "") -> dict:
    return {"kg": "k", "question_id": qid, "query_sha256": f"q-{qid}", "kg_sha256": "d", "engine": "e", "engine_version": "1", "row_cap": 5, "payload": payload}


def _index(tmp_path: Path, raw: bytes, digest: str | None = None):  # noqa: ANN202
    (tmp_path / "k.json").write_bytes(raw)
    reader = SimpleNamespace(version=tmp_path, manifest=SimpleNamespace(files={"k.json": digest or hashlib.sha256(raw).hexdigest()}))
    return index_kg_file(reader, "k.json")


@pytest.mark.parametrize("spacing", ["compact", "indented"])
def test_spans_are_the_exact_bytes_of_each_entry(tmp_path, spacing):
    # entries of ~400 KB of mixed one- to four-byte characters: they straddle the reader's chunks
    entries = [_entry(f"q{i}", ("é€😀a" * (i * 25_000 + 7))) for i in range(5)]
    failures = [{"kg": "k", "question_id": "qf", "error": "timeout", "query_sha256": "x"}]
    doc = {"failures": failures, "entries": entries, "kg": "k"}  # key order is not relied on
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":")) if spacing == "compact" else json.dumps(doc, ensure_ascii=False, indent=2)
    raw = (text + "\n").encode()
    previous = _index(tmp_path, raw)
    assert list(previous.entries) == [f"q{i}" for i in range(5)] and list(previous.failures) == ["qf"]
    for i, (qid, entry) in enumerate(previous.entries.items()):
        span = raw[entry.offset : entry.offset + entry.length]
        assert json.loads(span) == entries[i] and hashlib.sha256(span).hexdigest() == entry.span_sha256
        assert entry.query_sha256 == f"q-{qid}" and entry.row_cap == 5 and entry.identity.engine == "e"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b'{"kg":"k","entries":[{"question_id":"q1"}]}', "malformed (KeyError"),
        (b'{"kg":"k","entries":[{"question_id":"q1","query_sha256":"a"', "not valid JSON"),
        (b'{"kg":"k","entries":[]} trailing', "text after the end"),
        (b'{"kg":"\xff","entries":[]}', "not UTF-8"),
        (b'["not", "an", "object"]', "expected '{'"),
    ],
)
def test_a_file_that_is_not_a_gold_file_is_refused(tmp_path, raw, problem):
    with pytest.raises(CheckFailed, match=problem.replace("(", r"\(")):
        _index(tmp_path, raw)


def test_a_file_whose_hash_is_not_the_manifests_is_refused(tmp_path):
    raw = json.dumps({"kg": "k", "entries": [_entry("q1")], "failures": []}).encode()
    with pytest.raises(CheckFailed, match="sha256 differs"):
        _index(tmp_path, raw, digest="0" * 64)
