from pathlib import Path

import pytest
import yaml

from kgeval.errors import CheckFailed, InputError
from kgeval.holdout import holdout_problems, load_holdout, seal_holdout, verify_holdout
from tests.conftest import MINI_QUESTIONS, write_holdout


def test_load_and_verify_sealed_holdout(mini_holdout):
    holdout = load_holdout(mini_holdout)
    assert [kg.id for kg in holdout.kgs] == ["mini"]
    assert len(holdout.questions()) == len(MINI_QUESTIONS)
    assert holdout.questions()[0].kg == "mini"
    assert len(verify_holdout(mini_holdout)) == 64


def test_any_change_breaks_the_seal(mini_holdout):
    ttl = mini_holdout / "mini" / "kg.ttl"
    ttl.write_text(ttl.read_text() + "\n# edited\n")
    (mini_holdout / "mini" / "extra.txt").write_text("new")
    problems = holdout_problems(mini_holdout)
    assert "mini/kg.ttl: sha256 differs from the manifest" in problems
    assert "mini/extra.txt: not in the manifest" in problems
    with pytest.raises(CheckFailed, match="kg.ttl"):
        verify_holdout(mini_holdout)


def test_missing_file_and_missing_manifest(mini_holdout):
    (mini_holdout / "mini" / "kg.ttl").unlink()
    assert "mini/kg.ttl: missing" in holdout_problems(mini_holdout)
    (mini_holdout / "MANIFEST.json").unlink()
    with pytest.raises(CheckFailed, match="holdout seal"):
        verify_holdout(mini_holdout)


def test_bad_question_names_file_and_id(tmp_path: Path):
    bad = [dict(MINI_QUESTIONS[0]), {"id": "mini-02", "question": "no query", "domain": "hr"}]
    root = write_holdout(tmp_path / "h", bad)
    with pytest.raises(InputError, match=r"questions.yaml: question mini-02: .*exactly one reference query: sparql"):
        load_holdout(root)


def test_unknown_tag_and_duplicate_ids_are_rejected(tmp_path: Path):
    root = write_holdout(tmp_path / "h", [{**MINI_QUESTIONS[0], "tags": ["lookup", "vibes"]}])
    with pytest.raises(InputError, match="mini-01: tags"):
        load_holdout(root)
    root = write_holdout(tmp_path / "h2", [MINI_QUESTIONS[0], MINI_QUESTIONS[0]])
    write_holdout(root, [MINI_QUESTIONS[0]], kg="other")
    with pytest.raises(InputError, match="also used in KG"):
        load_holdout(root)


def test_kg_field_must_match_directory(tmp_path: Path):
    root = write_holdout(tmp_path / "h")
    doc = yaml.safe_load((root / "mini" / "questions.yaml").read_text())
    doc["kg"] = "other"
    (root / "mini" / "questions.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match="directory is 'mini'"):
        load_holdout(root)


def test_seal_is_stable(mini_holdout):
    assert seal_holdout(mini_holdout) == seal_holdout(mini_holdout)
