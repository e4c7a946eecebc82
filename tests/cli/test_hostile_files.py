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


# A verbatim holdout question ("Where does Alice work?") with one character that renders as
# nothing inside a word: every control character but those that lay text out, and the other
# invisible kinds (format characters, variation selectors, a tag, a Hangul filler).
CONTROLS = [chr(c) for c in [*range(0x00, 0x09), *range(0x0E, 0x20), *range(0x7F, 0x85), *range(0x86, 0xA0)]]
INVISIBLE = ["\u00ad", "\u034f", "\u180e", "\u200b", "\u200d", "\u2060", "\u2066", "\ufe0f", "\ufeff", "\U000e0041", "\u3164"]


def test_a_character_that_renders_as_nothing_cannot_hide_a_holdout_question(mini_holdout, tmp_path):
    """One record per character, each a hit (exit 3); on the records a person reads."""
    hidden = CONTROLS + INVISIBLE
    training, report = tmp_path / "train.jsonl", tmp_path / "report.json"
    training.write_text("".join(json.dumps({"prompt": f"Q: Where does Al{c}ice work?", "completion": "sales"}) + "\n" for c in hidden), encoding="utf-8")
    code, shown = _invoke("contamination", "check", "--holdout", str(mini_holdout), "--workers", "1", "--report-json", str(report), str(training))
    assert code == 3, shown
    found = {h["record"] for h in json.loads(report.read_text())["hits"] if h["kind"] == "question-exact" and h["holdout_item"] == "mini/mini-01"}
    assert [f"U+{ord(c):04X}" for i, c in enumerate(hidden) if i not in found] == []


def test_a_line_break_still_parts_words(mini_holdout, tmp_path):
    """Characters that lay text out read as white space: they part words as before."""
    training = tmp_path / "train.jsonl"
    training.write_text(json.dumps({"prompt": "Al\nice and\twork", "completion": "Where\rdoes Alice\x85work?"}) + "\n", encoding="utf-8")
    code, shown = _invoke("contamination", "check", "--holdout", str(mini_holdout), "--workers", "1", str(training))
    assert code == 3 and "question-exact" in shown and "record 1: completion" in shown, shown
    assert "record 1: prompt" not in shown, shown


@pytest.mark.parametrize("form", ["jsonl", "parquet"])
def test_a_record_that_is_not_utf8_is_named_never_clean(mini_holdout, tmp_path, form):
    """Arrow's JSON and Parquet readers keep a string's bytes as they are: a record whose text
    is not UTF-8 (here the holdout question with one byte 0xFF inside a word) is bad input
    naming the file and the record, not a pass and not a traceback."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = [b"an unrelated sentence", b"Q: Where does Al\xffice work?"]
    if form == "jsonl":
        training = tmp_path / "train.jsonl"
        training.write_bytes(b"".join(b'{"prompt": "' + t + b'", "completion": "x"}\n' for t in texts))
    else:
        training = tmp_path / "train.parquet"
        raw = pa.array(texts, pa.binary())
        pq.write_table(pa.table({"prompt": pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())}), training)
    code, shown = _invoke("contamination", "check", "--holdout", str(mini_holdout), "--workers", "1", str(training))
    _one_named_line(code, shown, training)
    assert "record 1 " in shown and "prompt" in shown and "not UTF-8" in shown, shown


@pytest.mark.parametrize("where", ["prompt", "completion.deep", "other"])
def test_a_record_nested_at_any_depth_is_read_or_refused(mini_holdout, tmp_path, where):
    """A configured field nested 100,000 deep is refused naming the line (exit 2); the same
    nesting in a field the check does not read is read past (the record is checked)."""
    value = DEEP if where != "completion.deep" else '{"deep": ' + DEEP + "}"
    record = '{"prompt": "Where does Alice work?", "completion": "x", "other": ' + DEEP + "}" if where == "other" else (
        '{"prompt": ' + (value if where == "prompt" else '"x"') + ', "completion": ' + (value if where != "prompt" else '"x"') + "}")
    training = tmp_path / "train.jsonl"
    training.write_text(record + "\n", encoding="utf-8")
    code, shown = _invoke("contamination", "check", "--holdout", str(mini_holdout), "--workers", "1", str(training))
    if where == "other":
        assert code == 3 and "mini/mini-01" in shown, shown
    else:
        _one_named_line(code, shown, training)
        assert "line 1: not valid JSON: nested too deep" in shown, shown


def yaml_bomb(indent: str = "") -> str:
    """A billion-laughs YAML bomb under one key: 9 levels of 9 aliases over 9 strings, 9^10
    (3.5 billion) strings in ~1 KB (the attack's was 7.5 KB)."""
    levels = [f'{indent}  l0: &l0 ["{"lol" * 20}"' + ', "lol"' * 8 + "]"]
    levels += [f"{indent}  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 10)]
    return "\n".join(levels) + "\n"


def test_a_yaml_bomb_in_a_sealed_holdout_is_refused_naming_the_bound(mini_holdout, mini_gold, tmp_path, monkeypatch):
    """Under the questions file's `source` (any mapping): `holdout seal`, `holdout verify` of a
    holdout sealed with it, and a run that loads it refuse it (exit 2) naming the file and the
    bound, before anything expands it (on main: sealed, verified, then a run's MemoryError)."""
    from kgeval.holdout import seal_holdout

    questions = mini_holdout / "mini" / "questions.yaml"
    questions.write_text(questions.read_text() + "source:\n" + yaml_bomb(), encoding="utf-8")
    code, shown = _invoke("holdout", "seal", "--holdout", str(mini_holdout))
    _one_named_line(code, shown, questions)
    assert "YAML alias bound" in shown and "KGEVAL_YAML_ALIAS_BOUND" in shown, shown
    seal_holdout(mini_holdout)  # sealed with the bomb (as a seal before the bound did)
    for command in (["holdout", "verify", "--holdout", str(mini_holdout)],
                    ["run", "--system", "oracle", "--seeds", "1", "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(tmp_path / "r.duckdb")]):
        code, shown = _invoke(*command)
        _one_named_line(code, shown, questions)
        assert "YAML alias bound" in shown, shown
    monkeypatch.setenv("KGEVAL_YAML_ALIAS_BOUND", str(10**10))  # configurable: a bound above the bomb's 3.9 billion nodes lets it load
    from kgeval._files import parse_yaml

    assert len(parse_yaml("source:\n" + yaml_bomb())["source"]["l9"]) == 9
    monkeypatch.setenv("KGEVAL_YAML_ALIAS_BOUND", "lots")
    code, shown = _invoke("holdout", "verify", "--holdout", str(mini_holdout))
    assert code == 2 and "KGEVAL_YAML_ALIAS_BOUND='lots'" in shown, shown


@pytest.mark.parametrize("name", ["kgeval.yaml", "access.yaml", "pre_eval.yaml"])
def test_every_yaml_reader_has_the_bound(mini_holdout, mini_gold, tmp_path, name):
    """A configuration, an access file and a checklist with a bomb: exit 2 naming the bound."""
    path = tmp_path / name
    path.write_text("x-bomb:\n" + yaml_bomb(), encoding="utf-8")
    common = ["--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(tmp_path / "r.duckdb")]
    option = {"kgeval.yaml": ["run", "--system", "oracle", "--config"], "access.yaml": ["serve", "--access"], "pre_eval.yaml": ["run", "--system", "oracle", "--checklist"]}[name]
    code, shown = _invoke(*option, str(path), *common)
    _one_named_line(code, shown, path)
    assert "YAML alias bound" in shown, shown


def _peak_rss_of(*args: str) -> tuple[int, str, int]:
    """`python -m kgeval ARGS` in a process of its own: (exit code, output, its peak RSS in
    bytes), measured by a wrapper whose only child it is."""
    import subprocess
    import sys

    from tests.conftest import REPO

    wrapper = (
        "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); print(r.stdout + r.stderr); sys.exit(r.returncode)"
    )
    done = subprocess.run([sys.executable, "-c", wrapper, sys.executable, "-m", "kgeval", *args], cwd=REPO, capture_output=True, text=True, timeout=600)
    peak, _, shown = done.stdout.partition("\n")
    return done.returncode, shown + done.stderr, int(peak) * 1024


RSS_BOUND = 1 << 30
"""Generous: the check of a small file takes ~0.3 GB; decoding the bombs below takes > 1 GiB."""


def test_a_parquet_dictionary_bomb_is_refused_in_bounded_memory(mini_holdout, tmp_path):
    """A ~400-byte Parquet file whose one dictionary value (1 MiB, the holdout question first)
    is named by 1,024 rows: 1 GiB of text once decoded. Refused naming the bound (exit 2)
    before it is decoded; the check's peak memory stays far below the 1 GiB."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    bomb = tmp_path / "bomb.parquet"
    value = "Where does Alice work? " + "a" * (1 << 20)
    pq.write_table(pa.table({"prompt": pa.array([value] * 1024).dictionary_encode()}), bomb, compression="zstd", store_schema=False)
    assert bomb.stat().st_size < 4096
    code, shown, peak = _peak_rss_of("contamination", "check", "--holdout", str(mini_holdout), "--workers", "1", str(bomb))
    assert code == 2 and "Traceback" not in shown and str(bomb) in shown, shown
    assert "Parquet decompressed-size bound (contamination.max_decompressed_mb: 512)" in shown, shown
    assert peak < RSS_BOUND, f"peak RSS {peak >> 20} MiB"


def test_a_parquet_column_over_the_bound_is_refused_before_it_is_read(mini_holdout, tmp_path):
    """A column chunk that decompresses (by the file's metadata) to more than the bound, here
    set to 1 MB in the configuration, and a 2 MiB string in 1 KB: refused naming the row
    group, column and bound; under the bound the same file is read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    big = tmp_path / "big.parquet"
    pq.write_table(pa.table({"prompt": ["Where does Alice work? " + "b" * (2 << 20)]}), big, compression="zstd", store_schema=False)
    config = tmp_path / "kgeval.yaml"
    config.write_text("guards:\n  contamination:\n    max_decompressed_mb: 1\n", encoding="utf-8")
    code, shown, peak = _peak_rss_of("contamination", "check", "--holdout", str(mini_holdout), "--workers", "1", "--config", str(config), str(big))
    assert code == 2 and "row group 0: column prompt decompresses to 2,097," in shown, shown
    assert "contamination.max_decompressed_mb: 1)" in shown and peak < RSS_BOUND, shown
    config.write_text("guards:\n  contamination:\n    max_decompressed_mb: 4\n", encoding="utf-8")
    code, shown, _ = _peak_rss_of("contamination", "check", "--holdout", str(mini_holdout), "--workers", "1", "--config", str(config), str(big))
    assert code == 3 and "mini/mini-01" in shown, shown


def _kgeval(*args: str, timeout: float = 120) -> tuple[int, str]:
    """`python -m kgeval ARGS` in a process of its own: a command that waited on a FIFO would
    time out here (a failed test), not hang the suite."""
    import subprocess
    import sys

    from tests.conftest import REPO

    done = subprocess.run([sys.executable, "-m", "kgeval", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize(("kind", "role"), [
    *(("fifo", role) for role in ("db-runs", "db-report", "db-run", "training", "replay", "config", "qald")),
    *(("device", role) for role in ("db-runs", "training", "replay")),
])
def test_a_fifo_or_a_device_given_as_an_input_is_named_as_such(mini_holdout, mini_gold, tmp_path, kind, role):
    """A FIFO (reading it waits for a writer: `--db` hung) or a character device (never ends)
    given where a file is read: exit 2 naming it as what it is, never "no such file"."""
    import os

    suffix = {"training": ".jsonl", "config": ".yaml", "replay": ".jsonl", "qald": ".json"}.get(role, ".duckdb")
    path = tmp_path / f"input{suffix}"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    common = ["--holdout", str(mini_holdout), "--gold", str(mini_gold)]
    args = {
        "db-runs": ["runs", "--db", str(path)],
        "db-report": ["report", "some-run", "--db", str(path)],
        "db-run": ["run", "--system", "oracle", "--seeds", "1", *common, "--db", str(path)],
        "training": ["contamination", "check", "--holdout", str(mini_holdout), str(path)],
        "replay": ["run", "--system", "replay", "--replay", str(path), "--seeds", "1", *common, "--db", str(tmp_path / "r.duckdb")],
        "config": ["run", "--system", "oracle", "--config", str(path), "--seeds", "1", *common, "--db", str(tmp_path / "r.duckdb")],
        "qald": ["holdout", "import", "qald", str(path), "--name", "x", "--kg", str(mini_holdout / "mini" / "kg.ttl"), "--out", str(tmp_path / "h")],
    }[role]
    code, shown = _kgeval(*args)
    named = "a FIFO" if kind == "fifo" else "a character device"
    assert code == 2 and "Traceback" not in shown and f"{path}: " in shown and f"is {named}, not a file" in shown, shown
    assert "no such file" not in shown and "does not exist" not in shown, shown


def test_a_broken_first_line_of_a_replay_jsonl_is_named_as_a_broken_line(mini_holdout, mini_gold, tmp_path):
    """Not "not a QALD JSON file": a first line that closes its object is a JSONL record."""
    replay = tmp_path / "answers.jsonl"
    replay.write_text('{"kg": "mini", "question_id": "mini-01", "seed": 0, "answer": [}\n'
                      '{"kg": "mini", "question_id": "mini-02", "seed": 0, "answer": []}\n', encoding="utf-8")
    code, shown = _invoke("run", "--system", "replay", "--replay", str(replay), "--seeds", "1", "--holdout", str(mini_holdout),
                          "--gold", str(mini_gold), "--db", str(tmp_path / "r.duckdb"))
    _one_named_line(code, shown, replay)
    assert f"{replay}:1: not valid JSON" in shown and "QALD" not in shown, shown
