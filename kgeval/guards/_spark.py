"""The contamination check on Spark: the shard API (`ShardScanner`, `merge_reports`) in Spark tasks.

A local file (a path every executor reads, as Spark reads one) is planned into the local
check's shards (`plan_shards`), one Spark task each, read and scanned in the Python workers by
the local reader: the same bounds, errors and hits, and no reading in the JVM (Spark's text
reader alone cost as much CPU as the whole local check).

Directories and URLs are read through Spark's own file systems (`s3a://`, `hdfs://` with the
cluster's credentials), then scanned in `mapInArrow`. JSONL reaches the Python workers as the
raw bytes of its lines (a JSON array file: the file's bytes) and is parsed there by the local
reader's code (`parse_jsonl`, `json_array_table`): the same records refused, the same UTF-8
check naming the record (Spark's JSON reader read some invalid byte sequences as other
characters, so a hidden question could pass). Parquet is read by Spark's reader (corrupt files
never skipped) once each file's footer is checked on the driver against the local reader's
decompressed-size bound (`check_chunk`). A record that cannot be read fails the check
(InputError: exit code 2) naming its file and record.

The scanner (holding the holdout index: holdout material) is broadcast once; each partition
returns one `PartialReport` per shard or file split it read. The driver orders them by file and
shard or split start, so record numbers count from the start of each file as locally: the
same hits, the same report.

A table the builder already has (Delta, Parquet, a query) is checked with `check_dataframe`;
records are then numbered in the DataFrame's partition order, under the file name "<dataframe>"
(or per file when it carries `_metadata`, see `with_file_positions`).

pyspark is imported inside the functions: it is the optional `spark` extra.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kgeval.config import GuardsConfig
from kgeval._files import check_input_file
from kgeval.errors import InputError
from kgeval.guards._contamination import PartialReport, Report, ShardScanner, _sample_lines, merge_reports
from kgeval.guards._index import HoldoutIndex
from kgeval.guards._records import Format, RecordError, Shard, check_chunk, file_format, json_array_table, json_schema, parse_jsonl, plan_shards, starts_with

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DATAFRAME = "<dataframe>"
_FILE, _START, _SIZE, _TEXT = "__kgeval_file", "__kgeval_start", "__kgeval_size", "__kgeval_text"
_OUT = pa.schema([("file", pa.string()), ("start", pa.int64()), ("part", pa.int64()), ("partial", pa.string())])
_OUT_DDL = "file string, start long, part long, partial string"


def spark_session(master: str | None = None) -> SparkSession:
    """The active SparkSession, or a new one on `master` (default `local[*]`). A local
    session's Python workers run this interpreter, so they import this kgeval."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise InputError("--engine spark needs pyspark: pip install 'kgeval[spark]' (and Java 17 or 21)") from None
    builder = SparkSession.builder.appName("kgeval contamination check")
    if master:
        builder = builder.master(master)
    if (master or "local").startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.config("spark.pyspark.python", sys.executable).config("spark.driver.host", "127.0.0.1")
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1")
    return builder.getOrCreate()


def check_files_spark(
    paths: Sequence[str | Path], index: HoldoutIndex, config: GuardsConfig | None = None, spark: SparkSession | None = None
) -> Report:
    """`check_contamination` on Spark: JSONL files, JSON files holding one array of records, and
    Parquet files (or directories of them, or any URL Spark's file systems read: `s3a://`,
    `gs://`, `hdfs://`; a URL is read by its suffix, as JSONL or Parquet, and a `.json` URL
    whose first byte is `[` as a JSON array of records) read through
    Spark's file systems (module docstring)."""
    config = config or GuardsConfig()
    spark = spark or spark_session()
    started = time.perf_counter()
    files = [str(p) for p in paths]
    by_format: dict[Format, list[str]] = {}
    for f in files:
        fmt = _format_of(f, spark)
        if not _is_plain_file(f):
            by_format.setdefault(fmt, []).append(f)
    scanner = ShardScanner(_with_sample(index, files, config), config.contamination.fields, config.contamination.max_decompressed_mb)
    partials: list[tuple[str, int, int, PartialReport]] = []
    for fmt, group in by_format.items():
        df = _read(spark, group, fmt, scanner)
        partials += _scanned(df, scanner, fmt, spark)
    shards = [s for f in dict.fromkeys(files) if _is_plain_file(f) for s in plan_shards(f, config.contamination.chunk_mb << 20)]
    read = _in_file_order(partials, [f for group in by_format.values() for f in group]) + _scanned_shards(shards, scanner, spark)
    rank = {f: i for i, f in reversed(list(enumerate(files)))}
    report = merge_reports(
        sorted(read, key=lambda p: rank.get(p.file, len(files))), scanner,
        workers=spark.sparkContext.defaultParallelism, allow_empty=config.contamination.allow_empty,
    )
    return report.model_copy(update={"seconds": time.perf_counter() - started})


def _scanned_shards(shards: list[Shard], scanner: ShardScanner, spark: SparkSession) -> list[PartialReport]:
    """Local files (a path every executor reads, as Spark reads it) planned into the local
    check's shards and scanned by the Python workers with its reader, one Spark task a shard:
    the JVM reads nothing (its text reader alone cost about what the whole scan costs)."""
    if not shards:
        return []
    shared = spark.sparkContext.broadcast(scanner)
    try:
        scan = lambda part: [shared.value.scan_shard(s).model_dump_json() for s in part]  # noqa: E731
        rdd = spark.sparkContext.parallelize(shards, len(shards)).mapPartitions(scan)
        return [PartialReport.model_validate_json(p) for p in _failing_as_input(rdd.collect, [s.file for s in shards])]
    finally:
        shared.unpersist()


def check_dataframe(df: DataFrame, index: HoldoutIndex, config: GuardsConfig | None = None) -> Report:
    """Scan a Spark DataFrame whose columns hold the configured fields (as in a JSONL record):
    records are numbered in partition order under "<dataframe>", or per file when the frame
    came from `with_file_positions`."""
    config = config or GuardsConfig()
    started = time.perf_counter()
    scanner = ShardScanner(index, config.contamination.fields, config.contamination.max_decompressed_mb)
    partials = _scanned(df, scanner, "dataframe", df.sparkSession)
    ordered = [p for *_, p in sorted(partials, key=lambda row: row[:3])]
    report = merge_reports(ordered, scanner, workers=df.sparkSession.sparkContext.defaultParallelism, allow_empty=config.contamination.allow_empty)
    return report.model_copy(update={"seconds": time.perf_counter() - started})


def with_file_positions(df: DataFrame) -> DataFrame:
    """`df` (read from files) with each record's file, split start and file size from
    Spark's `_metadata` column: hits then name the file and the record's place in it."""
    return df.select("*", *_positions(df))


def _positions(df: DataFrame) -> list:
    meta = df.select("_metadata").schema["_metadata"].dataType
    if "file_block_start" not in meta.names:
        raise InputError("this Spark version's _metadata has no file_block_start: records cannot be located (Spark >= 3.5 needed)")
    return [df["_metadata.file_path"].alias(_FILE), df["_metadata.file_block_start"].alias(_START), df["_metadata.file_size"].alias(_SIZE)]


def _format_of(file: str, spark: SparkSession) -> Format:
    if not re.match(r"^\w+://", file) and Path(file).is_dir():
        found = sorted({_local_format(p) for p in Path(file).rglob("*") if p.is_file() and not p.name.startswith((".", "_"))})
        if len(found) != 1:
            raise InputError(f"{file}: a directory must hold files of one format (JSONL, a JSON array of records, or Parquet), not {found or 'nothing'}")
        return found[0]
    if re.match(r"^\w+://", file):
        fmt = file_format(file)
        return "json_array" if fmt == "jsonl" and _url_starts_with_bracket(spark, file) else fmt
    check_input_file(file, "training file")
    if not Path(file).is_file():
        raise InputError(f"{file}: no such file")
    return _local_format(Path(file))


def _local_format(file: Path) -> Format:
    """`file_format`, and "json_array" for a JSON file holding one array of records, as the
    local check reads it (`plan_shards`)."""
    fmt = file_format(file)
    return "json_array" if fmt == "jsonl" and starts_with(file, b"[") else fmt


def _url_starts_with_bracket(spark: SparkSession, url: str) -> bool:
    """`starts_with(url, b"[")` read through Spark's file system on the driver (the one its
    readers use, with the cluster's credentials): a `.json` URL holding one array of records is
    read as the records it holds, as a local file is, not as JSON Lines."""
    jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()  # noqa: SLF001 - the Hadoop FS Spark reads with
    path = jvm.org.apache.hadoop.fs.Path(url)
    stream = _failing_as_input(lambda: path.getFileSystem(conf).open(path), [url])
    try:
        for _ in range(_MAX_LEADING_BYTES):  # a byte per call: a file starts with `[` or `{` after a few at most
            byte = stream.read()
            if byte < 0 or bytes([byte]) not in _LEADING:
                return byte == ord("[")
        return False
    finally:
        stream.close()


_LEADING = {b" ", b"\t", b"\r", b"\n", b"\xef", b"\xbb", b"\xbf"}
"""Bytes before a JSON file's first value: white space and a UTF-8 byte order mark."""
_MAX_LEADING_BYTES = 4096


def _with_sample(index: HoldoutIndex, files: list[str], config: GuardsConfig) -> HoldoutIndex:
    """The local check's anchor choice (a sound prefilter either way), from the first file when
    it is a local JSONL file."""
    cc = config.contamination
    first = files[0] if files else ""
    if not cc.sample_mb or re.match(r"^\w+://", first) or not Path(first).is_file() or file_format(first) != "jsonl":
        return index
    return index.with_anchors_from(_sample_lines(first, cc.sample_mb << 20))


def _read(spark: SparkSession, files: list[str], fmt: Format, scanner: ShardScanner) -> DataFrame:
    """Spark's reader for `fmt`: corrupt files never skipped; JSONL as raw lines (a JSON array
    file whole), Parquet as the fields' columns once every footer is within the bound."""
    reader = spark.read.option("ignoreCorruptFiles", "false").option("ignoreMissingFiles", "false")
    if fmt in ("jsonl", "json_array"):
        df = _failing_as_input(lambda: reader.text(files, wholetext=fmt == "json_array"), files)
        return df.select(df["value"].alias(_TEXT), *_positions(df))
    df = _failing_as_input(lambda: reader.parquet(*files), files)
    columns = sorted({f.steps[0][0] for f in scanner.fields} & set(df.columns))
    if not columns:
        raise InputError(f"{', '.join(files)}: none of the configured fields ({', '.join(f.text for f in scanner.fields)}) is a column")
    _check_footers(spark, df.inputFiles(), files, columns, scanner.max_bytes)
    return df.select(*columns, *_positions(df))


def _check_footers(spark: SparkSession, files: list[str], named: list[str], columns: list[str], max_bytes: int) -> None:
    """The local reader's decompressed-size bound on every column chunk the check reads, from
    each file's footer read on the driver through Spark's file system: a bomb is refused
    before any executor decompresses a page of it. A file is named as given (`named`)."""
    jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()  # noqa: SLF001 - the Hadoop FS Spark reads with
    for file in files:
        name = next((given for given in named if _file_key(given) == _file_key(file)), file)
        opened = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(jvm.org.apache.hadoop.fs.Path(file), conf)
        blocks = _failing_as_input(lambda: _footer_blocks(jvm, opened), [name])
        for group, block in enumerate(blocks):
            for chunk in block.getColumns():
                size, stored = chunk.getTotalUncompressedSize(), chunk.getTotalSize()
                check_chunk(name, group, chunk.getPath().toDotString(), size, stored, columns, max_bytes)


def _footer_blocks(jvm: Any, opened: Any) -> list:
    reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(opened)
    try:
        return list(reader.getFooter().getBlocks())
    finally:
        reader.close()


def _scanned(df: DataFrame, scanner: ShardScanner, fmt: Format, spark: SparkSession) -> list[tuple[str, int, int, PartialReport]]:
    """(file, split start, partition, partial report) of each split the job read."""
    shared = spark.sparkContext.broadcast(scanner)
    try:
        rows = _failing_as_input(lambda: df.mapInArrow(_partition_scan(shared, fmt), _OUT_DDL).collect(), [DATAFRAME])
    finally:
        shared.unpersist()
    return [(r.file, r.start, r.part, PartialReport.model_validate_json(r.partial)) for r in rows]


def _partition_scan(shared: Any, fmt: Format):  # noqa: ANN202 - runs on executors
    def scan(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        scanner: ShardScanner = shared.value
        part = TaskContext.get().partitionId()
        done: dict[tuple[str, int], PartialReport] = {}
        for batch in batches:
            for file, start, size, piece in _splits(batch):
                partial = _scan_piece(scanner, piece, file, fmt, size)
                done[(file, start)] = done[(file, start)].followed_by(partial) if (file, start) in done else partial
        rows = [{"file": f, "start": s, "part": part, "partial": p.model_dump_json()} for (f, s), p in done.items()]
        yield pa.RecordBatch.from_pylist(rows, schema=_OUT)

    return scan


def _scan_piece(scanner: ShardScanner, piece: pa.RecordBatch, file: str, fmt: Format, size: int) -> PartialReport:
    """One run of rows of a file split; a record that cannot be read gives a partial with
    `error` (and `error_record`, counted from the piece's first)."""
    try:
        return scanner.scan_batch(_records_of(piece, file, fmt, scanner), file, fmt, size)
    except RecordError as exc:
        return PartialReport(file=file, format=fmt, file_bytes=size, error=exc.problem, error_record=exc.record)
    except InputError as exc:
        return PartialReport(file=file, format=fmt, file_bytes=size, error=str(exc))


def _records_of(piece: pa.RecordBatch, file: str, fmt: Format, scanner: ShardScanner) -> pa.RecordBatch | pa.Table:
    """The records of a piece: Spark's columns (Parquet, a DataFrame), or its raw JSON lines
    (a JSON array file: its bytes) parsed as the local check parses them."""
    if _TEXT not in piece.schema.names:
        return piece
    raw = piece.column(_TEXT).view(pa.binary())  # the bytes as read: the scan checks they are UTF-8
    if fmt == "json_array":
        return json_array_table(raw[0].as_py(), file, scanner.fields)
    lines = pa.ListArray.from_arrays(pa.array([0, len(raw)], pa.int32()), raw)
    table = parse_jsonl(pc.binary_join(lines, b"\n")[0].as_py(), scanner.fields)
    return table if table is not None else json_schema(scanner.fields).empty_table()


def _splits(batch: pa.RecordBatch) -> Iterator[tuple[str, int, int, pa.RecordBatch]]:
    """Runs of rows from one file split: (file, split start, file size, rows)."""
    if _FILE not in batch.schema.names:
        yield DATAFRAME, 0, 0, batch
        return
    files, starts = batch.column(_FILE), batch.column(_START)
    changed = pc.or_(pc.not_equal(files[1:], files[:-1]), pc.not_equal(starts[1:], starts[:-1]))
    bounds = [0, *(np.flatnonzero(changed.to_numpy(zero_copy_only=False)) + 1).tolist(), batch.num_rows]
    for a, b in zip(bounds, bounds[1:]):
        if b > a:
            yield files[a].as_py(), starts[a].as_py(), batch.column(_SIZE)[a].as_py(), batch.slice(a, b - a)


def _in_file_order(partials: list[tuple[str, int, int, PartialReport]], files: list[str]) -> list[PartialReport]:
    """Partials ordered as the local check orders shards (files as given, then split start),
    each named by the path the user gave."""
    given = {_file_key(f): (i, f) for i, f in enumerate(files)}
    ordered = []
    for file, start, part, partial in partials:
        rank, name = given.get(_file_key(file), (len(files), file))
        named = {"file": name, "hits": [h.model_copy(update={"file": name}) for h in partial.hits]}
        if partial.error:  # a worker names the file as Spark does (`file:/...`)
            named["error"] = partial.error.replace(file, name)
        ordered.append(((rank, file, start, part), partial.model_copy(update=named)))
    ordered.sort(key=lambda pair: pair[0])
    return [p for _, p in ordered]


def _file_key(file: str) -> str:
    """One spelling for a local path and Spark's `file:/...` URI of it (and `s3://` vs `s3a://`)."""
    if m := re.match(r"^\w+:(.*)$", file):
        return unquote(m.group(1)).lstrip("/")
    return str(Path(file).resolve()).lstrip("/")


def _is_plain_file(file: str) -> bool:
    return not re.match(r"^\w+://", file) and Path(file).is_file()


def _failing_as_input(action, files: list[str]):  # noqa: ANN001, ANN202
    """Run a Spark action; a failed read (malformed record, corrupt or missing file) is
    InputError naming the file and Spark's deepest cause: the check fails, never passes."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    try:
        return action()
    except (Py4JJavaError, PySparkException) as exc:
        raise InputError(_spark_failure(str(exc), files)) from None


def _spark_failure(text: str, files: list[str]) -> str:
    if m := re.search(r"kgeval\.errors\.InputError: (.*)", text):
        return m.group(1).strip()
    if "thrown from the Python worker" in text:
        errors = re.findall(r"^(\w+(?:Error|Exception): .*)$", text, re.MULTILINE)
        return (f"the Spark job failed in a Python worker (is kgeval, with pyarrow, installed on every executor?): "
                f"{errors[-1] if errors else text.strip().splitlines()[0]}")
    where = re.search(r"error while reading file (\S+?)\.?\s", text)
    file = where.group(1) if where else ", ".join(files)
    causes = re.findall(r"^Caused by: (.*)$", text, re.MULTILINE)
    reason = causes[-1] if causes else next((line for line in text.splitlines() if line.strip()), "Spark job failed")
    return f"{file}: Spark could not read it (truncated, malformed or not {'/'.join(('JSONL', 'Parquet'))}?): {reason.strip()[:500]}"
