"""With an integrity key, the holdout manifest is signed: an edit sealed again without the key
(an order-sensitive flag turned off, a question reworded) is refused by every check of the
holdout, the pre-eval checklist included. Without a key the manifest stays a plain sha256."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kgeval.cli import app
from kgeval.config import GoldConfig
from kgeval.errors import InputError
from kgeval.gold import rebuild_gold
from kgeval.holdout import MANIFEST, holdout_problems, load_holdout, seal_holdout
from kgeval.integrity import KEY_ENV
from kgeval.stores import EmbeddedStore
from tests.conftest import write_holdout

KEY = "the release owner's key, 32 bytes"
OTHER = "somebody else's key, also long enough"
runner = CliRunner()


def _edit_a_question(root: Path) -> None:
    path = root / "mini" / "questions.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["questions"][0]["question"] += " (reworded)"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def test_an_edit_sealed_without_the_key_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    root = write_holdout(tmp_path / "holdout")
    assert "hmac" in json.loads((root / MANIFEST).read_text()) and holdout_problems(root) == []

    _edit_a_question(root)
    monkeypatch.delenv(KEY_ENV)
    seal_holdout(root)
    assert holdout_problems(root) == []  # no key: the plain hashes agree
    monkeypatch.setenv(KEY_ENV, KEY)
    assert [p for p in holdout_problems(root) if "no integrity tag" in p and MANIFEST in p], holdout_problems(root)

    monkeypatch.setenv(KEY_ENV, OTHER)  # sealed under another key
    seal_holdout(root)
    monkeypatch.setenv(KEY_ENV, KEY)
    assert [p for p in holdout_problems(root) if "does not match" in p], holdout_problems(root)

    verified = runner.invoke(app, ["holdout", "verify", "--holdout", str(root)])
    assert verified.exit_code == 1 and MANIFEST in verified.output and "integrity tag" in verified.output

    sealed = runner.invoke(app, ["holdout", "seal", "--holdout", str(root)])  # the key holder blesses it
    assert sealed.exit_code == 0, sealed.output
    assert holdout_problems(root) == []


def test_a_tag_copied_onto_another_file_table_does_not_match(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    root = write_holdout(tmp_path / "holdout")
    tag = json.loads((root / MANIFEST).read_text())["hmac"]
    _edit_a_question(root)
    monkeypatch.delenv(KEY_ENV)
    seal_holdout(root)
    manifest = json.loads((root / MANIFEST).read_text())
    (root / MANIFEST).write_text(json.dumps({**manifest, "hmac": tag}), encoding="utf-8")
    monkeypatch.setenv(KEY_ENV, KEY)
    assert [p for p in holdout_problems(root) if "does not match" in p]


def test_the_checklist_refuses_a_run_on_a_holdout_resealed_without_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    root = write_holdout(tmp_path / "holdout")
    gold = tmp_path / "gold"
    assert rebuild_gold(load_holdout(root), lambda kg: EmbeddedStore(kg.files), GoldConfig(), gold).ok
    args = ["run", "--system", "oracle", "--holdout", str(root), "--gold", str(gold), "--seeds", "1"]
    ran = runner.invoke(app, [*args, "--db", str(tmp_path / "a.duckdb")])
    assert ran.exit_code == 0, ran.output

    _edit_a_question(root)  # the gold binds the query and the KG, not the question text: only the seal can tell
    monkeypatch.delenv(KEY_ENV)
    seal_holdout(root)
    monkeypatch.setenv(KEY_ENV, KEY)
    refused = runner.invoke(app, [*args, "--db", str(tmp_path / "b.duckdb")])
    assert refused.exit_code != 0 and "integrity tag" in refused.output, refused.output


def _plant_kg(root, name: str, id_prefix: str) -> None:
    """A copy of the mini KG in `root/name`, its questions renamed: a KG the manifest skips."""
    import shutil

    planted = root / name
    shutil.copytree(root / "mini", planted)
    doc = yaml.safe_load((planted / "questions.yaml").read_text(encoding="utf-8"))
    doc["kg"] = name
    doc["questions"] = [{**q, "id": id_prefix + q["id"]} for q in doc["questions"]]
    (planted / "questions.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def test_a_kg_in_a_byte_code_cache_directory_is_never_read(tmp_path, monkeypatch):
    """Red team 6: the manifest leaves out every `__pycache__` directory, the loader only hidden
    ones, so a KG directory named `__pycache__` added 17 questions that a signed manifest did not
    cover: `holdout verify` passed, and the key holder's next `gold rebuild` signed their gold."""
    monkeypatch.setenv(KEY_ENV, KEY)
    root = write_holdout(tmp_path / "holdout")
    n_questions = len(load_holdout(root).questions())
    _plant_kg(root, "__pycache__", "p-")
    assert holdout_problems(root) == []  # outside the manifest, as byte-code caches are
    assert len(load_holdout(root).questions()) == n_questions  # and outside what is read


def test_files_the_manifest_does_not_cover_are_never_read(tmp_path, monkeypatch):
    """A red-team pass added questions the signed manifest did not cover, and `holdout verify`
    passed while runs read them: a KG in a hidden directory, a KG linked in from elsewhere, a
    hidden RDF file beside a KG's own. The loader now reads only what a manifest covers (hidden
    entries are skipped as the manifest skips them) and refuses a KG directory that is a link."""
    import shutil

    monkeypatch.setenv(KEY_ENV, KEY)
    root = write_holdout(tmp_path / "holdout")
    before = load_holdout(root)
    n_questions, files = len(before.questions()), before.kg("mini").files
    _plant_kg(root, ".extra", "x-")
    (root / "mini" / ".planted.ttl").write_text("<http://x/a> <http://x/p> <http://x/b> .\n", encoding="utf-8")
    assert holdout_problems(root) == []  # hidden entries are outside the manifest, as before
    after = load_holdout(root)
    assert len(after.questions()) == n_questions and after.kg("mini").files == files  # and outside what is read

    outside = tmp_path / "elsewhere" / "linked"
    shutil.copytree(root / "mini", outside)
    doc = yaml.safe_load((outside / "questions.yaml").read_text(encoding="utf-8"))
    doc["kg"], doc["questions"] = "linked", [{**q, "id": "l-" + q["id"]} for q in doc["questions"]]
    (outside / "questions.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    verified = runner.invoke(app, ["holdout", "verify", "--holdout", str(root)])
    assert verified.exit_code != 0 and "may not be a symbolic link" in verified.output, verified.output
    with pytest.raises(InputError, match="may not be a symbolic link"):
        load_holdout(root)
