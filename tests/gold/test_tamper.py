"""Tampered gold is refused by every reader (issue 16): edits, deletions and forgeries, with and
without the integrity key. Readers: `gold verify`, the run's checklist and dispatch, `report`,
`audit sample/show/record`, `review status`, `gold export`, the service."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from kgeval._files import canonical_json, sha256_file
from kgeval.config import GoldConfig, KgevalConfig
from kgeval.errors import CheckFailed
from kgeval.gold import gold_problems, load_gold, read_gold, rebuild_gold, verify_gold
from kgeval.holdout import load_holdout
from kgeval.integrity import KEY_ENV, sign
from kgeval.reports import build_report
from kgeval.runs import ResultsDB
from kgeval.service import Access, ServiceSettings, ServiceState
from kgeval.stores import EmbeddedStore
from tests.cli.test_cli import kgeval
from tests.oversight import run_system

KEY = "k" * 32


def _version(gold: Path) -> Path:
    return (gold / "current").resolve()


def _rewrite_manifest(gold: Path, update: Callable[[dict], None], key: str | None) -> None:
    """What a forger with file access does: fix every plain hash, re-sign with `key` if given."""
    path = _version(gold) / "MANIFEST.json"
    manifest = json.loads(path.read_text())
    update(manifest)
    for name in manifest["files"]:
        manifest["files"][name] = sha256_file(_version(gold) / name)
    manifest.pop("tag", None)
    if key is not None:
        manifest["tag"] = sign(canonical_json({"partial": False, **{k: v for k, v in manifest.items()}}), key.encode())
    path.write_text(json.dumps(manifest))


def _edit_row_and_rehash(gold: Path, key: str | None = None) -> None:
    from kgeval.stores import QueryResult

    path = _version(gold) / "mini.json"
    payload = json.loads(path.read_text())
    entry = next(e for e in payload["entries"] if e["question_id"] == "mini-02")
    entry["result"]["rows"][0][0]["value"] = "http://example.org/mini/entities/mallory"
    entry["result_sha256"] = QueryResult.model_validate(entry["result"]).sha256()
    entry["execution_sha256s"] = [entry["result_sha256"]] * len(entry["execution_sha256s"])
    path.write_text(json.dumps(payload))
    _rewrite_manifest(gold, lambda m: None, key)


def _delete_entry_and_rehash(gold: Path, key: str | None = None) -> None:
    path = _version(gold) / "mini.json"
    payload = json.loads(path.read_text())
    payload["entries"] = [e for e in payload["entries"] if e["question_id"] != "mini-06"]
    path.write_text(json.dumps(payload))
    _rewrite_manifest(gold, lambda m: None, key)


def _plain_row_edit(gold: Path) -> None:
    path = gold / "mini.json"  # through the compatibility link, into the version in force
    path.write_text(path.read_text().replace("alice", "alicia", 1))


def _delete_file(gold: Path) -> None:
    (_version(gold) / "mini.json").unlink()


def _strip_tag(gold: Path) -> None:
    _rewrite_manifest(gold, lambda m: None, None)


def _sign_with_another_key(gold: Path) -> None:
    _edit_row_and_rehash(gold, key="x" * 32)


def _point_current_elsewhere(gold: Path) -> None:
    (gold / "current").unlink()
    os.symlink("../elsewhere", gold / "current")


TAMPERS = {
    "row edited": _plain_row_edit,
    "KG file deleted": _delete_file,
    "row edited, hashes and manifest recomputed": _edit_row_and_rehash,
    "entry deleted, hashes and manifest recomputed": _delete_entry_and_rehash,
    "tag stripped": _strip_tag,
    "signed with another key": _sign_with_another_key,
    "pointer moved out of the gold": _point_current_elsewhere,
}


@pytest.fixture
def keyed(monkeypatch):  # noqa: ANN001, ANN201
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture
def signed_gold(keyed, mini_holdout, tmp_path):  # noqa: ANN001, ANN201
    gold = tmp_path / "signed-gold"
    assert rebuild_gold(load_holdout(mini_holdout), lambda kg: EmbeddedStore(kg.files), GoldConfig(), gold).ok
    assert read_gold(gold).manifest.tag
    return gold


def test_signed_gold_verifies_and_unsigned_is_refused_with_a_key(mini_holdout, tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    unsigned = tmp_path / "unsigned"
    rebuild_gold(load_holdout(mini_holdout), lambda kg: EmbeddedStore(kg.files), GoldConfig(), unsigned)
    assert read_gold(unsigned).manifest.tag is None
    monkeypatch.setenv(KEY_ENV, KEY)
    with pytest.raises(CheckFailed, match="no integrity tag"):
        load_gold(unsigned)  # built without the key: unsigned evidence is not trusted
    report = rebuild_gold(load_holdout(mini_holdout), lambda kg: EmbeddedStore(kg.files), GoldConfig(), unsigned)
    # the unsigned entries are not reused: the key signs only what was executed under it
    assert len(report.built) == 8 and "no integrity tag" in report.reuse_note and read_gold(unsigned).manifest.tag
    verify_gold(unsigned, load_holdout(mini_holdout))


@pytest.mark.parametrize("tamper", list(TAMPERS), ids=list(TAMPERS))
def test_every_tamper_is_refused_by_every_library_reader(tamper, signed_gold, mini_holdout, tmp_path):
    # a run on the intact gold first: its report and audits read the gold afterwards
    db = tmp_path / "r.duckdb"
    run_id = run_system(mini_holdout, signed_gold, db, "oracle", seeds=1)
    TAMPERS[tamper](signed_gold)
    holdout = load_holdout(mini_holdout)
    with pytest.raises(CheckFailed):
        load_gold(signed_gold)  # audit sample/show/record, review, gold export, service, dispatch
    with pytest.raises(CheckFailed):
        verify_gold(signed_gold, holdout)
    assert gold_problems(signed_gold, holdout)  # the run's checklist item "gold"
    with ResultsDB(db, read_only=True) as results:
        report = build_report(results, run_id, gold_dir=signed_gold, config=KgevalConfig())
    assert report.audit is None and report.gold_refused and report.gold_refused in report.notes, report.notes
    settings = ServiceSettings(db=tmp_path / "s.duckdb", holdout=mini_holdout, gold=signed_gold, config=KgevalConfig(), access=Access({}))
    with pytest.raises(CheckFailed):
        ServiceState.open(settings)  # the service refuses to start on it


def test_without_a_key_a_recomputed_forgery_is_the_documented_gap(mini_holdout, mini_gold):
    """Plain hashes only prove accidents: an editor who recomputes them passes. This is why the
    key exists; the test pins the limit so the README's claim stays true."""
    _edit_row_and_rehash(mini_gold, key=None)
    verify_gold(mini_gold, load_holdout(mini_holdout))
    assert load_gold(mini_gold)["mini-02"].result.rows[0][0].value.endswith("mallory")


def test_cli_readers_refuse_a_keyed_forgery(signed_gold, mini_holdout, tmp_path):
    db = tmp_path / "r.duckdb"
    run_id = run_system(mini_holdout, signed_gold, db, "oracle", seeds=1)
    _edit_row_and_rehash(signed_gold, key=None)  # hashes fixed, but no key: tag missing
    common = ["--gold", str(signed_gold)]
    for command in (
        ["gold", "verify", "--holdout", str(mini_holdout)],
        ["audit", "sample", run_id, "--accepts", "2", "--db", str(db)],
        ["review", "status", "--holdout", str(mini_holdout), "--db", str(db)],
        ["gold", "export", "--holdout", str(mini_holdout)],
        ["run", "--holdout", str(mini_holdout), "--system", "oracle", "--seeds", "1", "--db", str(db)],
    ):
        result = kgeval(*command, *common)
        assert result.returncode == 1, (command, result.stdout, result.stderr)
        assert "integrity tag" in result.stderr and "Traceback" not in result.stderr, (command, result.stderr)
    report = kgeval("report", run_id, "--db", str(db), *common)
    # the report is printed (its figures are the stored verdicts), and refused loudly: exit 1
    assert report.returncode == 1 and "## Accuracy" in report.stdout and "gold refused" in report.stdout, report.stdout
    assert "integrity tag" in report.stderr and "Traceback" not in report.stderr, report.stderr
    elsewhere = kgeval("report", run_id, "--db", str(db), "--gold", str(tmp_path / "no-gold-here"))
    assert elsewhere.returncode == 0 and "gold unavailable" in elsewhere.stdout  # no gold given here: a note, not a refusal


def test_a_forgery_signed_with_the_key_is_caught_by_reexecution(signed_gold, mini_holdout):
    """Whoever holds the key can sign anything; re-executing the reference queries cannot be
    fooled: `gold verify --reexecute` names the forged question."""
    _edit_row_and_rehash(signed_gold, key=KEY)
    verify_gold(signed_gold, load_holdout(mini_holdout))  # the forger's signature is valid
    result = kgeval("gold", "verify", "--reexecute", "--holdout", str(mini_holdout), "--gold", str(signed_gold))
    assert result.returncode == 1, result.stdout
    assert "1 questions answer differently when re-executed" in result.stderr
    assert "mini/mini-02: result differs from the stored gold" in result.stderr


def test_reexecution_of_the_shipped_gold_matches(tmp_path):
    result = kgeval("gold", "verify", "--reexecute")
    assert result.returncode == 0, result.stderr
    assert "re-executed 66 reference queries: every result matches the stored gold" in result.stdout
