"""The error messages a newcomer meets first, each naming what is wrong, where, and the fix."""

from __future__ import annotations

import json
import socket

from tests.cli.test_anywhere import kgeval_in
from tests.oversight import write_access


def test_a_missing_holdout_names_the_flag_and_kgeval_home(tmp_path):
    lost = kgeval_in(tmp_path, "run", "--system", "oracle")
    assert lost.returncode == 2
    assert "holdout: holdout directory does not exist" in lost.stderr and "--holdout" in lost.stderr and "KGEVAL_HOME" in lost.stderr, lost.stderr


def test_an_edited_sealed_question_says_how_to_restore_or_reseal(tmp_path, mini_holdout):
    questions = mini_holdout / "mini" / "questions.yaml"
    questions.write_text(questions.read_text().replace("Where does Alice work?", "Where does Alice work now?"))
    verified = kgeval_in(tmp_path, "holdout", "verify", "--holdout", str(mini_holdout))
    assert verified.returncode == 1 and "mini/questions.yaml: sha256 differs from the manifest" in verified.stderr
    assert "restore the files as sealed" in verified.stderr and "`kgeval holdout seal`" in verified.stderr and "`kgeval gold rebuild`" in verified.stderr


def test_a_misspelt_config_key_gets_a_did_you_mean_and_the_file(tmp_path):
    (tmp_path / "kgeval.yaml").write_text("run:\n  seedz: 2\njudgez: {}\n")
    misspelt = kgeval_in(tmp_path, "run", "--system", "oracle")
    assert misspelt.returncode == 2
    assert "kgeval.yaml: invalid configuration: run.seedz: unknown key; did you mean run.seeds?; judgez: unknown key; did you mean judges?" in misspelt.stderr
    (tmp_path / "kgeval.yaml").write_text("run:\n  seeds: [2\n")
    broken = kgeval_in(tmp_path, "run", "--system", "oracle")
    assert broken.returncode == 2 and "<unicode string>" not in broken.stderr and "in kgeval.yaml, line 2, column 10" in broken.stderr, broken.stderr


def test_a_json_array_corpus_is_read_as_the_records_it_holds(tmp_path, mini_holdout):
    records = [{"prompt": "How do I bake bread?", "completion": "Knead."}, {"prompt": "Who works in sales?", "completion": "?"}]
    corpus = tmp_path / "train.json"
    corpus.write_text(json.dumps(records, indent=2))
    checked = kgeval_in(tmp_path, "contamination", "check", str(corpus), "--holdout", str(mini_holdout))
    assert checked.returncode == 3, checked.stderr
    assert f"{corpus}: record 2: prompt: question-exact" in checked.stdout and "2 records" in checked.stdout
    corpus.write_text(json.dumps([{"prompt": "fine"}, {"prompt": 7}]))
    bad = kgeval_in(tmp_path, "contamination", "check", str(corpus), "--holdout", str(mini_holdout))
    assert bad.returncode == 2 and "record 2 of the JSON array (counted from 1" in bad.stderr and "not valid JSON" not in bad.stderr, bad.stderr


def test_contamination_records_are_numbered_as_lines_and_the_field_option_named(tmp_path, mini_holdout):
    """Issue 44 item 11: "record 2" was the file's third line; a file whose records hold `text`
    was refused without naming --field."""
    corpus = tmp_path / "train.jsonl"
    lines = [{"prompt": "How do I bake bread?"}, {"prompt": "Knead it."}, {"prompt": "Who works in sales?"}]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in lines))
    checked = kgeval_in(tmp_path, "contamination", "check", str(corpus), "--holdout", str(mini_holdout))
    assert checked.returncode == 3 and f"{corpus}: record 3: prompt: question-exact" in checked.stdout, checked.stdout
    corpus.write_text("".join(json.dumps({"text": r["prompt"]}) + "\n" for r in lines))
    unread = kgeval_in(tmp_path, "contamination", "check", str(corpus), "--holdout", str(mini_holdout))
    assert unread.returncode == 2 and "none of its 3 records has any of the fields" in unread.stderr
    assert "name the field that holds their text with --field NAME" in unread.stderr, unread.stderr
    named = kgeval_in(tmp_path, "contamination", "check", str(corpus), "--field", "text", "--holdout", str(mini_holdout))
    assert named.returncode == 3 and f"{corpus}: record 3: text: question-exact" in named.stdout, named.stdout


def test_a_port_in_use_is_said_before_serving_with_a_port_hint(tmp_path, mini_holdout, mini_gold):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        served = kgeval_in(
            tmp_path, "serve", "--port", str(port), "--access", str(write_access(tmp_path / "access.yaml")),
            "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(tmp_path / "r.duckdb"),
        )  # fmt: skip
    assert served.returncode == 2, served.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in served.stderr and "--port" in served.stderr and "serving" not in served.stderr


def test_a_missing_gold_is_said_once_without_none(tmp_path, mini_holdout):
    (tmp_path / "gold").mkdir()
    refused = kgeval_in(tmp_path, "run", "--system", "oracle", "--holdout", str(mini_holdout))
    assert refused.returncode == 1
    assert refused.stderr.count("kgeval gold rebuild") == 1 and "None" not in refused.stderr, refused.stderr
