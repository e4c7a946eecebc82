"""One planted-leak corpus, three engines: the local check, the shard API by hand, Spark local[2].

Done means the same hits (file, record, field, kind, matched text, holdout item, score) from
all three; a clean corpus passes on all three; a truncated or malformed file fails on all three.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kgeval.config import ContaminationConfig, GuardsConfig
from kgeval.errors import InputError
from kgeval.guards import (
    PartialReport,
    Report,
    ShardScanner,
    build_index,
    check_contamination,
    check_dataframe,
    check_files_spark,
    merge_reports,
    plan_shards,
)
from kgeval.holdout import load_holdout
from tests.conftest import REPO
from tests.guards.test_contamination import (
    HR02_RENAMED,
    PLANTED,
    _ck25_records,
    _escaped_json,
)

CONFIG = GuardsConfig(contamination=ContaminationConfig(workers=2))
# Leaks the local check catches, each kind in each record form (prompt/completion, chat).
EXTRA = [
    ("namespace", "kg hr", {"prompt": "PREFIX h: <http://example.org/hr/vocab/> SELECT * WHERE { ?s ?p ?o }", "completion": "x"}),
    ("kg-identifier", "kg catalogue", {"messages": [{"role": "user", "content": "data from holdout/catalogue, line 3"}]}),
    ("question-near", "hr/hr-03", {"messages": [{"role": "system", "content": "Be brief."},
                                               {"role": "user", "content": "how many employees are located at the toronto office"}]}),
    ("sparql", "hr/hr-02", {"messages": [{"role": "assistant", "content": f"Here:\n```sparql\n{HR02_RENAMED}\n```"}]}),
]


@pytest.fixture(scope="module")
def index():
    return build_index(load_holdout(REPO / "holdout"), GuardsConfig())


def _leaks() -> list[tuple[str, str, dict]]:
    return [(kind, item, record) for kind, (item, record) in PLANTED.items()] + EXTRA


def _records(rng: random.Random, leaks: list[tuple[str, str, dict]], copies: int) -> tuple[list[dict], dict[int, tuple[str, str]]]:
    """Clean CK25 records `copies` times over, each leak at a random record."""
    records = _ck25_records() * copies
    planted: dict[int, tuple[str, str]] = {}
    for kind, item, record in leaks:
        at = rng.randrange(len(records) + 1)
        records.insert(at, record)
        planted = {(k + 1 if k >= at else k): v for k, v in planted.items()} | {at: (kind, item)}
    return records, planted


def _write_jsonl(path: Path, records: list[dict], escaped: int | None = None) -> Path:
    lines = [_escaped_json(r) if i == escaped else json.dumps(r) for i, r in enumerate(records)]
    path.write_text("\n".join(lines[:7]) + "\n\n" + "\n".join(lines[7:]) + "\n", encoding="utf-8")  # a blank line is no record
    return path


def _write_parquet(path: Path, records: list[dict]) -> Path:
    rows = [{"prompt": r.get("prompt"), "completion": r.get("completion"),
             "messages": r.get("messages", []), "meta": "x"} for r in records]
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=16)
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[list[Path], dict[tuple[str, int], tuple[str, str]]]:
    """Three files (two JSONL, one Parquet) of ~40-100 kB, every leak kind planted."""
    rng = random.Random(3)
    root = tmp_path_factory.mktemp("corpus")
    expected: dict[tuple[str, int], tuple[str, str]] = {}
    files = []
    for name, copies in (("a.jsonl", 3), ("b.parquet", 2), ("c.jsonl", 1)):
        records, planted = _records(rng, _leaks(), copies)
        path = root / name
        if name.endswith(".parquet"):
            files.append(_write_parquet(path, records))
        else:
            escaped = next(i for i, (kind, _) in planted.items() if kind == "iri")
            files.append(_write_jsonl(path, records, escaped))
        expected |= {(str(path), rec): kv for rec, kv in planted.items()}
    return files, expected


def _hits(report: Report) -> list[tuple]:
    return [(h.file, h.record, h.field, h.kind, h.matched, h.holdout_item, h.score) for h in report.hits]


def _files(report: Report) -> list[tuple]:
    return [(f.file, f.format, f.records, f.bytes, f.records_without_text, f.hits) for f in report.files]


def by_shard_api(paths: list[Path], index, chunk_bytes: int = 8192) -> Report:
    """The shard API as an engine adapter uses it: plan, scan shards in any order, merge in order."""
    shards = [s for p in paths for s in plan_shards(p, chunk_bytes)]
    scanner = ShardScanner(index, CONFIG.contamination.fields)
    partials: dict[int, PartialReport] = {}
    for i in reversed(range(len(shards))):  # any order, on any machine
        partials[i] = scanner.scan_shard(shards[i])
    return merge_reports([partials[i] for i in range(len(shards))], scanner)


def test_planted_leaks_give_the_same_hits_locally_by_shards_and_on_spark(index, corpus, spark):
    paths, expected = corpus
    local = check_contamination(paths, index, CONFIG)
    found = {(h.file, h.record): (h.kind, h.holdout_item) for h in local.hits}
    assert set(found) == set(expected), "local check: planted records and flagged records differ"
    assert {(h.file, h.record, h.kind, h.holdout_item) for h in local.hits} >= {(f, r, k, i) for (f, r), (k, i) in expected.items()}
    assert len(by_shard := by_shard_api(paths, index).hits) == len(local.hits)
    assert len(plan_shards(paths[0], 8192)) > 3 and local.hit_count == len(local.hits)

    on_spark = check_files_spark(paths, index, CONFIG, spark)
    assert _hits(on_spark) == _hits(local) == [(h.file, h.record, h.field, h.kind, h.matched, h.holdout_item, h.score) for h in by_shard]
    assert _files(on_spark) == _files(local) == _files(by_shard_api(paths, index))
    assert on_spark.hits_by_kind == local.hits_by_kind and on_spark.summary().startswith("CONTAMINATED")
    # URLs are read by Spark's own readers (local paths by the workers, as shards): the same hits
    urls = [p.resolve().as_uri() for p in paths]
    by_spark_readers = check_files_spark(urls, index, CONFIG, spark)
    assert [h[1:] for h in _hits(by_spark_readers)] == [h[1:] for h in _hits(local)]
    assert [f[1:] for f in _files(by_spark_readers)] == [f[1:] for f in _files(local)]


def test_a_clean_corpus_passes_on_all_three(index, tmp_path, spark):
    paths = [_write_jsonl(tmp_path / "clean.jsonl", _ck25_records() * 4), _write_parquet(tmp_path / "clean.parquet", _ck25_records())]
    for report in (check_contamination(paths, index, CONFIG), by_shard_api(paths, index), check_files_spark(paths, index, CONFIG, spark)):
        assert report.clean and report.records == 250, report.summary()
        assert [f.records for f in report.files] == [200, 50]


def _broken(tmp_path: Path, kind: str) -> Path:
    good = json.dumps({"prompt": "a harmless prompt " * 30, "completion": "ok"}) + "\n"
    if kind == "truncated.jsonl":
        data = good * 200 + '{"prompt": "cut off in the mid'
    elif kind == "malformed.jsonl":
        data = good * 100 + "this line is not json\n" + good * 100
    else:
        path = _write_parquet(tmp_path / "whole.parquet", [json.loads(good)] * 400)
        (tmp_path / kind).write_bytes(path.read_bytes()[:-300])
        return tmp_path / kind
    (tmp_path / kind).write_text(data, encoding="utf-8")
    return tmp_path / kind


@pytest.mark.parametrize("kind", ["truncated.jsonl", "malformed.jsonl", "truncated.parquet"])
def test_a_truncated_or_malformed_file_fails_on_all_three(index, tmp_path, spark, kind):
    bad = _broken(tmp_path, kind)
    clean = _write_jsonl(tmp_path / "fine.jsonl", _ck25_records())
    engines = {
        "local": lambda: check_contamination([clean, bad], index, CONFIG),
        "shards": lambda: by_shard_api([clean, bad], index),
        "spark": lambda: check_files_spark([clean, bad], index, CONFIG, spark),
    }
    for name, run in engines.items():
        with pytest.raises(InputError) as caught:
            run()
        assert kind in str(caught.value), (name, str(caught.value))


def test_a_dataframe_is_checked_in_partition_order(index, spark):
    rng = random.Random(9)
    records, planted = _records(rng, _leaks(), 2)
    rows = [{"prompt": r.get("prompt"), "completion": r.get("completion"), "messages": r.get("messages")} for r in records]
    df = spark.createDataFrame(rows, "prompt string, completion string, messages array<struct<role: string, content: string>>")
    report = check_dataframe(df.repartition(1).coalesce(1), index, CONFIG)
    assert {h.record: (h.kind, h.holdout_item) for h in report.hits}.keys() == planted.keys()
    assert report.records == len(records) and report.files[0].file == "<dataframe>"
    assert {(h.record, h.kind, h.holdout_item) for h in report.hits} >= {(r, k, i) for r, (k, i) in planted.items()}


def test_urls_are_read_through_fsspec(index, corpus):
    """Remote paths (s3://, gs://, hf:// need their fsspec packages and the network, which
    this machine lacks) go through the same fsspec calls as memory:// and file:// here."""
    paths, _ = corpus
    local = check_contamination(paths, index, CONFIG)
    memory = fsspec.filesystem("memory")
    urls = []
    for p in paths:
        memory.pipe(f"/corpus/{p.name}", p.read_bytes())
        urls.append(f"memory://corpus/{p.name}")
    # memory:// lives in this process only: one worker; file:// URLs go to the pool's workers.
    in_memory = check_contamination(urls, index, GuardsConfig(contamination=ContaminationConfig(workers=1)))
    by_name = {str(p): u for p, u in zip(paths, urls)}
    assert [(by_name[f], *rest) for f, *rest in _hits(local)] == _hits(in_memory)
    file_urls = check_contamination([p.resolve().as_uri() for p in paths], index, CONFIG)
    assert [h[1:] for h in _hits(file_urls)] == [h[1:] for h in _hits(local)]
    with pytest.raises(InputError, match="no such file"):
        check_contamination(["memory://corpus/missing.jsonl"], index, CONFIG)


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.run([sys.executable, "-m", "kgeval", "contamination", "check", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=600, env=env)


def test_cli_engine_spark_prints_what_the_local_check_prints(corpus, tmp_path, spark):
    paths, _ = corpus
    files = [str(p) for p in paths]
    local = _cli(*files)
    on_spark = _cli(*files, "--engine", "spark", "--spark-master", "local[2]")
    assert local.returncode == on_spark.returncode == 3, on_spark.stderr[-2000:]
    hit_lines = [line for line in local.stdout.splitlines() if ": record " in line]
    assert len(hit_lines) >= 10 and hit_lines == [line for line in on_spark.stdout.splitlines() if ": record " in line]
    # a malformed file on Spark: test_a_truncated_or_malformed_file_fails_on_all_three (the
    # InputError naming it, which the CLI turns into exit 2 for every engine); a second Spark
    # session from the command line cost this test half a minute
    bad = _cli(str(_broken(tmp_path, "malformed.jsonl")))
    assert bad.returncode == 2 and "malformed.jsonl" in bad.stderr, bad.stderr[-2000:]


def test_a_dataframe_with_file_positions_numbers_records_per_file(index, corpus, spark):
    """A builder's own read of Parquet files, located by Spark's `_metadata`: the local hits."""
    from kgeval.guards import with_file_positions

    paths, _ = corpus
    parquet = next(p for p in paths if p.suffix == ".parquet")
    local = check_contamination([parquet], index, CONFIG)
    report = check_dataframe(with_file_positions(spark.read.parquet(str(parquet))), index, CONFIG)
    assert [(h.record, h.field, h.kind, h.holdout_item) for h in report.hits] == [(h.record, h.field, h.kind, h.holdout_item) for h in local.hits]
    assert report.files[0].file.endswith("b.parquet") and report.records == local.records


def test_a_json_array_export_gives_the_same_hits_on_all_three(index, tmp_path, spark):
    """A JSON export (one pretty-printed array of records, as many tools write) is read as the
    records it holds by the local check, the shard API and Spark, with the same hits and record
    numbers. Spark read it line by line and failed on its first line."""
    records, planted = _records(random.Random(5), _leaks(), 1)
    export = tmp_path / "export.json"
    export.write_text(json.dumps(records, indent=2), encoding="utf-8")
    paths = [export, _write_jsonl(tmp_path / "more.jsonl", _ck25_records())]
    local = check_contamination(paths, index, CONFIG)
    assert {h.record for h in local.hits if h.file == str(export)} == set(planted)
    assert local.files[0].format == "json_array" and local.files[0].records == len(records)
    on_spark = check_files_spark(paths, index, CONFIG, spark)
    assert _hits(on_spark) == _hits(local) == _hits(by_shard_api(paths, index))
    assert _files(on_spark) == _files(local)
    # Given as a URL (read by Spark's readers, not as shards): an array too, not JSON Lines.
    url = export.resolve().as_uri()
    by_url, by_path = check_files_spark([url], index, CONFIG, spark), check_contamination([url], index, CONFIG)
    assert by_url.files[0].format == "json_array" and by_url.files[0].records == len(records)
    assert _hits(by_url) == _hits(by_path) and {h.record for h in by_url.hits} == set(planted)


HIDDEN = b"Q: which department does karen no%svak work in?"
"""The holdout question hr-01 with bytes that are not UTF-8 inside a word."""


def _undecodable(tmp_path: Path, form: str, bad: bytes) -> tuple[Path, int]:
    """A file of clean CK25 records (several Spark splits) and, deep in it, one record whose
    prompt holds `bad`: the file and the record's number (counted from 0)."""
    clean = [json.dumps(r).encode() for r in _ck25_records() * 3]
    at = len(clean) - 7
    lines = clean[:at] + [b'{"prompt": "' + HIDDEN % bad + b'", "completion": "x"}'] + clean[at:]
    path = tmp_path / f"train.{form}"
    if form == "jsonl":
        path.write_bytes(b"\n".join(lines) + b"\n")
    elif form == "json":
        path.write_bytes(b"[\n" + b",\n".join(lines) + b"\n]\n")
    else:
        prompts = pa.array([json.loads(x)["prompt"].encode() if i != at else HIDDEN % bad for i, x in enumerate(lines)], pa.binary())
        texts = pa.Array.from_buffers(pa.string(), len(prompts), prompts.buffers())  # stored as they are, unchecked
        pq.write_table(pa.table({"prompt": texts}), path, row_group_size=16)
    return path, at


def _refusals(paths: list, index, config: GuardsConfig, spark) -> list[str]:
    """The InputError messages of the local check and of Spark on `paths` (each must fail)."""
    failures = []
    for run in (lambda: check_contamination(paths, index, config), lambda: check_files_spark(paths, index, config, spark)):
        with pytest.raises(InputError) as caught:
            run()
        failures.append(str(caught.value))
    return failures


@pytest.mark.parametrize("bad", [b"\xc1\xb8", b"\xff", b"\xed\xa0\x80"], ids=["overlong-x", "ff", "surrogate"])
@pytest.mark.parametrize(("form", "given"), [("jsonl", "path"), ("parquet", "path"), ("json", "path"), ("jsonl", "url"), ("parquet", "url"), ("json", "url")])
def test_a_record_that_is_not_utf8_is_refused_on_spark_as_locally(index, tmp_path, spark, form, bad, given):
    """A record whose text is not UTF-8 fails the check on Spark as it does locally (exit 2),
    with the same message naming the file and the record, never a report. Spark's JSON reader
    read the overlong `\\xc1\\xb8` as "x", so the hidden question passed as clean; the other
    sequences failed its parse without naming the record, and Parquet named neither. A path is
    read by the workers as shards, a URL by Spark's readers (a `.json` URL holding an array as
    one, as a path is)."""
    file, at = _undecodable(tmp_path, form, bad)
    path = file if given == "path" else file.resolve().as_uri()
    failures = _refusals([path], index, CONFIG, spark)
    assert failures[0] == failures[1], failures
    assert str(path) in failures[1] and ("not UTF-8" in failures[1] or "utf-8" in failures[1]), failures[1]
    if form != "json":  # a JSON array is parsed whole: Python's decoder names the byte
        assert f"record {at} (counted from 0" in failures[1], failures[1]


@pytest.mark.parametrize("given", ["path", "url"])
def test_a_parquet_column_over_the_bound_is_refused_on_spark_before_it_is_read(index, tmp_path, spark, given):
    """The local reader's decompressed-size bound holds on Spark: a column chunk that
    decompresses (by the footer) to more than `max_decompressed_mb`, here 1 MB and a 2 MiB
    string stored in 1 KB, is refused with the local message naming row group, column and
    bound; Spark read it whole before. Under the bound the same file is read, the leak found.
    A path is read by the workers as shards, a URL by Spark's reader after the footer check."""
    big = tmp_path / "big.parquet"
    pq.write_table(pa.table({"prompt": ["which department does karen novak work in? " + "b" * (2 << 20)]}), big, compression="zstd")
    assert big.stat().st_size < 4096
    big = big if given == "path" else big.resolve().as_uri()
    bounded = GuardsConfig(contamination=ContaminationConfig(workers=1, max_decompressed_mb=1))
    failures = _refusals([big], index, bounded, spark)
    assert failures[0] == failures[1], failures
    assert "row group 0: column prompt decompresses to 2,097," in failures[1] and "contamination.max_decompressed_mb: 1)" in failures[1]
    roomy = GuardsConfig(contamination=ContaminationConfig(workers=1, max_decompressed_mb=4))
    assert check_files_spark([big], index, roomy, spark).hits_by_kind == {"question-exact": 1}


def test_jsonl_shards_are_read_into_one_reused_buffer_their_records_intact(tmp_path):
    """Issue 43: each 32 MB JSONL shard was read into a fresh `bytes`, fresh pages the kernel
    faults in and zeroes for every shard (~24,000 minor faults per 0.1 GB). The shards of a
    thread are read into one buffer, reused: safe because a shard's records are parsed into
    Arrow's own memory, which the next read leaves intact. Reverted to a `bytes` per read, the
    two reads share no buffer."""
    from kgeval.guards._records import FieldPath, _read_range, parse_jsonl, release_read_buffer

    path = tmp_path / "two.jsonl"
    first, second = b'{"prompt": "the first record"}\n', b'{"prompt": "a second one"}\n'  # shards: the last the shortest
    path.write_bytes(first + second)
    fields = (FieldPath.parse("prompt"),)
    try:
        one = _read_range(str(path), 0, len(first))
        table = parse_jsonl(one, fields)
        two = _read_range(str(path), len(first), len(first) + len(second))
        assert one.obj is two.obj  # the same buffer, read over
        assert bytes(two) == second and table.column("prompt").to_pylist() == ["the first record"]
        assert parse_jsonl(two, fields).column("prompt").to_pylist() == ["a second one"]
    finally:
        release_read_buffer()
