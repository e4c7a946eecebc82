"""Hostile input files (a number of 5,000 digits, JSON nested 100,000 deep, bytes that are not
UTF-8) are bad input: exit 2 with one line naming the file, never a traceback."""

from __future__ import annotations

import json
import traceback

import pytest
from typer.testing import CliRunner

from kgeval.cli import app

DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 5000


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    shown = result.output + ("".join(traceback.format_exception(result.exception)) if result.exception and not isinstance(result.exception, SystemExit) else "")
    return result.exit_code, shown


def _one_named_line(code: int, shown: str, path: object) -> None:
    assert code == 2 and "Traceback" not in shown, shown
    assert str(path) in shown, shown


@pytest.mark.parametrize(
    "content",
    [
        pytest.param('{"kg": "mini", "question_id": "mini-01", "seed": ' + HUGE + ', "answer": []}\n', id="jsonl-huge-number"),
        pytest.param('{"kg": "mini", "question_id": "mini-01", "answer": ' + DEEP + "}\n", id="jsonl-deep"),
        pytest.param(DEEP, id="text2sparql-deep"),
        pytest.param('{"questions": [{"id": ' + HUGE + "}]}", id="qald-huge-number"),
        pytest.param(b'{"kg": "mini", "question_id": "mini-01", "answer": ["\xff"]}\n', id="not-utf8"),
    ],
)
def test_a_hostile_replay_file_is_bad_input(mini_holdout, mini_gold, tmp_path, content):
    replay = tmp_path / "replay.json"
    replay.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, shown = _invoke("run", "--system", "replay", "--replay", str(replay), "--seeds", "1", "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(tmp_path / "r.duckdb"))
    _one_named_line(code, shown, replay)


@pytest.mark.parametrize(
    "content",
    [pytest.param('{"questions": ' + DEEP + "}", id="deep"), pytest.param('{"questions": [{"id": ' + HUGE + "}]}", id="huge-number"),
     pytest.param(b'{"questions": [{"id": "1", "question": [{"language": "en", "string": "\xff"}]}]}', id="not-utf8")],
)
def test_a_hostile_qald_file_is_bad_input(mini_holdout, tmp_path, content):
    qald = tmp_path / "bench.json"
    qald.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, shown = _invoke("holdout", "import", "qald", str(qald), "--name", "x", "--kg", str(mini_holdout / "mini" / "kg.ttl"), "--out", str(tmp_path / "h"))
    _one_named_line(code, shown, qald)


def test_yaml_that_is_not_utf8_is_bad_input(mini_holdout, mini_gold, tmp_path):
    config = tmp_path / "kgeval.yaml"
    config.write_bytes(b"run:\n  seeds: 1  # \xff\n")
    code, shown = _invoke("run", "--system", "oracle", "--seeds", "1", "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(tmp_path / "r.duckdb"), "--config", str(config))
    _one_named_line(code, shown, config)
    questions = mini_holdout / "mini" / "questions.yaml"  # an unsealed edit: the run loads the holdout to check it
    questions.write_bytes(questions.read_bytes() + b"# \xff\n")
    code, shown = _invoke("run", "--system", "oracle", "--seeds", "1", "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(tmp_path / "r.duckdb"))
    _one_named_line(code, shown, questions)
    access = tmp_path / "access.yaml"
    access.write_bytes(b"tokens: []  # \xff\n")
    code, shown = _invoke("serve", "--access", str(access), "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(tmp_path / "s.duckdb"))
    _one_named_line(code, shown, access)


def test_json_stays_json():
    from kgeval._files import parse_json

    assert parse_json(json.dumps({"a": [1, 2.5, "x"]}), "here") == {"a": [1, 2.5, "x"]}


@pytest.mark.parametrize("tail", [HUGE, DEEP], ids=["huge-number", "deep"])
def test_a_sealed_file_with_a_hostile_value_fails_its_check_by_name(mini_holdout, mini_gold, tmp_path, tail):
    """The holdout's MANIFEST.json and a gold KG file edited to hold a 5,000-digit number or
    100,000-deep nesting: exit 1 naming the file (a failed check), not a traceback."""
    from kgeval.gold._layout import version_dir

    manifest = mini_holdout / "MANIFEST.json"
    original = manifest.read_text()
    manifest.write_text(original.rstrip()[:-1] + ', "x": ' + tail + "}")
    code, shown = _invoke("holdout", "verify", "--holdout", str(mini_holdout))
    assert code == 1 and "Traceback" not in shown and str(manifest) in shown, shown
    manifest.write_text(original)
    gold_file = version_dir(mini_gold) / "mini.json"
    gold_file.write_text(gold_file.read_text().rstrip()[:-1] + ', "x": ' + tail + "}")
    code, shown = _invoke("gold", "verify", "--no-store-check", "--holdout", str(mini_holdout), "--gold", str(mini_gold))
    assert code == 1 and "Traceback" not in shown and "mini.json" in shown, shown
