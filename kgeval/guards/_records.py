"""Reading training records in bounded pieces (shards): JSONL byte ranges and Parquet row groups.

Only the configured text fields are read; every record is still parsed in full, so a file
that is truncated or malformed anywhere raises InputError naming the file and the line.

A file is a local path or a URL (`s3://`, `gs://`, `hf://`, `memory://` ...) read through
fsspec, whose protocol packages (s3fs, gcsfs, huggingface_hub) the user installs.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq
from pydantic import BaseModel

from kgeval._files import check_input_file, parse_json
from kgeval.errors import InputError

Format = Literal["jsonl", "json_array", "parquet", "dataframe"]
"""A file's format; "json_array": a .json file holding one JSON array of records (read whole,
by one worker); "dataframe": a Spark DataFrame given to `check_dataframe`."""
_JSONL = (".jsonl", ".ndjson", ".json")
_PARQUET = (".parquet", ".pq")


@dataclass(frozen=True)
class FieldPath:
    """A configured field: `messages[].content` is ("messages", list) then ("content", leaf)."""

    text: str
    steps: tuple[tuple[str, bool], ...]
    """(name, is a list) for each dotted segment."""

    @classmethod
    def parse(cls, text: str) -> FieldPath:
        steps = []
        for segment in text.split("."):
            name, is_list = (segment[:-2], True) if segment.endswith("[]") else (segment, False)
            if not name or "[" in name or "]" in name:
                raise InputError(f"field {text!r}: use dotted names with [] after lists, e.g. messages[].content")
            steps.append((name, is_list))
        if steps[-1][1]:
            raise InputError(f"field {text!r}: must end in a string field, not a list")
        return cls(text=text, steps=tuple(steps))


class Shard(BaseModel, frozen=True):
    """One piece of a training data set, scanned by one worker: a byte range of a JSONL file
    (from a line start to a line start) or row groups of a Parquet file."""

    file: str
    """A local path or a URL (`s3://bucket/train.jsonl`), as the user gave it."""
    format: Format
    start: int = 0
    """JSONL: first byte (a line start); Parquet: 0."""
    end: int = 0
    """JSONL: byte after the last (a line start or the end of the file); Parquet: 0."""
    row_groups: tuple[int, ...] = ()
    """Parquet: the row groups, in file order."""
    size: int = 0
    """Bytes of the shard (Parquet: the row groups' uncompressed size); for progress only."""
    file_bytes: int = 0
    """Size of the whole file."""


def is_url(file: str | Path) -> bool:
    return "://" in str(file)


def _fsspec(file: str):  # noqa: ANN202 - (fsspec filesystem, path in it)
    try:
        import fsspec
    except ImportError:
        raise InputError(f"{file}: reading URLs needs fsspec (pip install fsspec, and s3fs / gcsfs / huggingface_hub for its protocol)") from None
    try:
        return fsspec.core.url_to_fs(file)
    except (ImportError, ValueError) as exc:
        raise InputError(f"{file}: cannot open this URL's file system ({exc}); install its fsspec package (s3fs, gcsfs, huggingface_hub ...)") from None


@contextmanager
def open_binary(file: str | Path) -> Iterator[IO[bytes]]:
    """A local file or a URL, opened for reading bytes."""
    if not is_url(file):
        with open(file, "rb") as fh:
            yield fh
        return
    fs, path = _fsspec(str(file))
    try:
        fh = fs.open(path, "rb")
    except (OSError, ValueError) as exc:
        raise InputError(f"{file}: cannot be opened: {exc}") from None
    with fh:
        yield fh


def _size_of(file: str | Path) -> int:
    """Bytes of a file; InputError when it is not there."""
    if not is_url(file):
        check_input_file(file, "training file")
        if not Path(file).is_file():
            raise InputError(f"{file}: no such file")
        return Path(file).stat().st_size
    fs, path = _fsspec(str(file))
    try:
        if not fs.isfile(path):
            raise InputError(f"{file}: no such file")
        return int(fs.size(path))
    except OSError as exc:
        raise InputError(f"{file}: cannot be read: {exc}") from None


def file_format(path: Path | str) -> Format:
    suffix = PurePosixPath(str(path).split("?", 1)[0]).suffix.lower()
    if suffix in _JSONL:
        return "jsonl"
    if suffix in _PARQUET:
        return "parquet"
    raise InputError(f"{path}: unknown training file type (JSONL: {', '.join(_JSONL)}; Parquet: {', '.join(_PARQUET)})")


def plan_shards(file: str | Path, chunk_bytes: int) -> list[Shard]:
    """Split a file into shards of about `chunk_bytes`: JSONL at line ends, Parquet by row group."""
    size = _size_of(file)  # first: a FIFO or a device is named as such, whatever its name
    fmt = file_format(file)
    if fmt == "parquet":
        return _parquet_shards(str(file), chunk_bytes, size)
    if starts_with(file, b"["):  # a JSON array of records (a common export), not JSON Lines
        return [Shard(file=str(file), format="json_array", start=0, end=size, size=size, file_bytes=size)]
    bounds = [0]
    with open_binary(file) as fh:
        while bounds[-1] + chunk_bytes < size:
            fh.seek(bounds[-1] + chunk_bytes)
            fh.readline()
            bounds.append(fh.tell())
    if bounds[-1] < size or size == 0:
        bounds.append(size)
    return [Shard(file=str(file), format="jsonl", start=a, end=b, size=b - a, file_bytes=size) for a, b in zip(bounds, bounds[1:])]


def starts_with(file: str | Path, char: bytes) -> bool:
    """Whether the file's first byte that is not whitespace (or a UTF-8 byte order mark) is `char`."""
    with open_binary(file) as fh:
        while block := fh.read(4096):
            head = block.lstrip().removeprefix(b"\xef\xbb\xbf").lstrip()
            if head:
                return head[:1] == char
    return False


def _parquet_shards(file: str, chunk_bytes: int, file_bytes: int) -> list[Shard]:
    with _parquet_file(file) as pf:
        meta = pf.metadata
    shards, group, size = [], [], 0

    def close() -> None:
        shards.append(Shard(file=file, format="parquet", row_groups=tuple(group), size=size, file_bytes=file_bytes))

    for i in range(meta.num_row_groups):
        group.append(i)
        size += meta.row_group(i).total_byte_size
        if size >= chunk_bytes:
            close()
            group, size = [], 0
    if group or not shards:
        close()
    return shards


@contextmanager
def _parquet_file(file: str, fields: tuple[FieldPath, ...] = ()) -> Iterator[pq.ParquetFile]:
    """The Parquet file, its string columns under the configured `fields` read as dictionaries
    when they are stored as such: a dictionary page repeated by a million indices is kept as
    it is stored, not decoded into a million copies before its size is known (`_decoded`)."""
    with open_binary(file) as fh:
        try:
            pf = pq.ParquetFile(fh)
            if fields:
                pf = pq.ParquetFile(fh, metadata=pf.metadata, read_dictionary=_text_columns(pf, fields))
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"{file}: not a readable Parquet file (truncated or corrupt?): {exc}") from None
        yield pf


def _text_columns(pf: pq.ParquetFile, fields: tuple[FieldPath, ...]) -> list[str]:
    """The paths of the byte-array leaf columns under the fields' first segments."""
    tops = {f.steps[0][0] for f in fields}
    columns = (pf.schema.column(i) for i in range(len(pf.schema)))
    return [c.path for c in columns if c.physical_type == "BYTE_ARRAY" and c.path.split(".")[0] in tops]


def _check_decompressed(pf: pq.ParquetFile, group: int, columns: list[str], max_bytes: int, file: str) -> None:
    """InputError when a column chunk of the row group that the check reads decompresses (by
    the file's metadata) to more than `max_bytes`: refused before a byte of it is read."""
    row_group = pf.metadata.row_group(group)
    for i in range(row_group.num_columns):
        chunk = row_group.column(i)
        check_chunk(file, group, chunk.path_in_schema, chunk.total_uncompressed_size, chunk.total_compressed_size, columns, max_bytes)


def check_chunk(file: str, group: int, column: str, uncompressed: int, compressed: int, columns: list[str], max_bytes: int) -> None:
    """InputError when one column chunk (of a column under `columns`) decompresses to more than
    `max_bytes`: the one bound of every Parquet reader of the check (local and Spark)."""
    if column.split(".")[0] in columns and uncompressed > max_bytes:
        raise InputError(
            f"{file}: row group {group}: column {column} decompresses to {uncompressed:,} bytes "
            f"({compressed:,} stored): {_over_bound(max_bytes)}"
        )


def _over_bound(max_bytes: int) -> str:
    return (
        f"over the Parquet decompressed-size bound (contamination.max_decompressed_mb: {max_bytes >> 20}): refused, "
        "a decompression bomb? If the data is meant, raise the bound in the configuration or write smaller row groups"
    )


def json_schema(fields: tuple[FieldPath, ...]) -> pa.Schema:
    """The explicit schema pyarrow parses JSONL with: the configured fields, all leaves strings."""
    tree: dict = {}
    for f in fields:
        node = tree
        for name, is_list in f.steps[:-1]:
            node = node.setdefault((name, is_list), {})
        node[(f.steps[-1][0], False)] = None
    return pa.schema([pa.field(name, _arrow_type(sub, is_list)) for (name, is_list), sub in tree.items()])


def _arrow_type(sub: dict | None, is_list: bool) -> pa.DataType:
    if sub is None:
        return pa.string()
    struct = pa.struct([pa.field(n, _arrow_type(s, lst)) for (n, lst), s in sub.items()])
    return pa.list_(struct) if is_list else struct


def read_shard(shard: Shard, fields: tuple[FieldPath, ...], max_bytes: int = 0) -> Iterator[pa.RecordBatch | pa.Table]:
    """The records of `shard`, in order, as Arrow batches holding the configured fields.
    `max_bytes` (Parquet): the most a column chunk may decompress to (0: no bound)."""
    if shard.format == "parquet":
        yield from _read_parquet(shard, fields, max_bytes)
        return
    if shard.format == "json_array":
        yield _read_json_array(shard.file, fields)
        return
    data = _read_range(shard.file, shard.start, shard.end)
    try:
        table = parse_jsonl(data, fields)
    except RecordError as exc:
        line_base = _count_lines_before(shard.file, shard.start)
        raise InputError(f"{shard.file}: line {line_base + exc.line + 1}: {exc.problem}") from None
    except InputError as exc:
        raise InputError(f"{shard.file}: bytes {shard.start}-{shard.end}: {exc}") from None
    if table is not None:
        yield table


_READ_BUFFER = threading.local()
"""This thread's buffer for `_read_range`, reused from shard to shard."""


def _read_range(file: str, start: int, end: int) -> memoryview:
    """Bytes `start` to `end` of `file`, in this thread's reused buffer (valid until this
    thread's next call): a fresh `bytes` per shard is fresh memory from the system, whose pages
    the kernel faults in and zeroes for every 32 MB read (a minor fault per 4 KB page: 0.1 GB
    cost ~24,000). A shard's records are parsed into Arrow's own memory before the next read."""
    size = end - start
    buffer: bytearray | None = getattr(_READ_BUFFER, "buffer", None)
    if buffer is None or len(buffer) < size:
        buffer = _READ_BUFFER.buffer = bytearray(size)
    view = memoryview(buffer)[:size]
    with open_binary(file) as fh:
        fh.seek(start)
        done = 0
        while done < size and (got := fh.readinto(view[done:])):
            done += got
    return view[:done]


def release_read_buffer() -> None:
    """Let this thread's `_read_range` buffer go (a process that outlives the check: the caller's)."""
    _READ_BUFFER.__dict__.pop("buffer", None)


def parse_jsonl(data: bytes | memoryview, fields: tuple[FieldPath, ...]) -> pa.Table | None:
    """JSON Lines `data` as a table of the configured fields (None: blank lines only); on a
    line that is not a record, RecordError naming it (line and record counted from `data`'s
    first). Every engine parses a JSONL byte range here (the local reader, Spark's workers)."""
    if _blank(data):
        return None
    options = pj.ParseOptions(explicit_schema=json_schema(fields), unexpected_field_behavior="ignore")
    try:
        return pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(use_threads=False, block_size=max(1 << 20, len(data) + 1)),
            parse_options=options,
        )
    except pa.ArrowInvalid as exc:
        raise _first_bad_line(bytes(data), fields) or InputError(f"cannot be parsed: {exc}") from None


def _blank(data: bytes | memoryview) -> bool:
    """Empty or white space only. `bytes.isspace` stops at the first byte that is not (no copy,
    unlike strip): a range's first bytes are looked at first, the whole only if they are blank."""
    return not data or (bytes(data[:64]).isspace() and bytes(data).isspace())


def _read_parquet(shard: Shard, fields: tuple[FieldPath, ...], max_bytes: int) -> Iterator[pa.RecordBatch]:
    with _parquet_file(shard.file, fields) as pf:
        present = set(pf.schema_arrow.names)
        columns = sorted({f.steps[0][0] for f in fields} & present)
        if not columns:
            raise InputError(f"{shard.file}: none of the configured fields ({', '.join(f.text for f in fields)}) is a column")
        try:
            for group in shard.row_groups:  # one at a time: a dictionary-encoded field inside a list or struct
                # cannot be read from several row groups at once (pyarrow: "Nested data conversions not
                # implemented for chunked array outputs"), each row group having its own dictionary
                if max_bytes:
                    _check_decompressed(pf, group, columns, max_bytes, shard.file)
                yield from pf.iter_batches(batch_size=65_536, row_groups=[group], columns=columns)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"{shard.file}: row groups {list(shard.row_groups)}: cannot be read (truncated or corrupt?): {exc}") from None


def _read_json_array(file: str, fields: tuple[FieldPath, ...]) -> pa.Table:
    """The records of a file holding one JSON array of objects, as one Arrow table."""
    with open_binary(file) as fh:
        return json_array_table(fh.read(), file, fields)


def json_array_table(data: bytes, file: str, fields: tuple[FieldPath, ...]) -> pa.Table:
    """A file's bytes holding one JSON array of objects, as one Arrow table (every engine)."""
    try:  # strictly: json.loads of bytes lets UTF-8-encoded surrogates through (a traceback later)
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{file} (a JSON array of records): byte {exc.start}: not UTF-8 text, so it cannot be checked") from None
    records = parse_json(text, f"{file} (a JSON array of records)")
    if not isinstance(records, list):
        raise InputError(f"{file}: a JSON array of records must be one array, not {type(records).__name__}")
    for i, record in enumerate(records):
        problem = f"not {type(record).__name__}" if not isinstance(record, dict) else None
        problem = problem and f"a record must be a JSON object, {problem}"
        problem = problem or _field_type_problem(record, fields)
        if problem:
            raise InputError(f"{file}: record {i + 1} of the JSON array (counted from 1, as hits are): {problem}")
    return pa.Table.from_pylist(records, schema=json_schema(fields))


def _first_bad_line(data: bytes, fields: tuple[FieldPath, ...]) -> RecordError | None:
    """The first line of a JSONL range that is no record of the fields (slow path: only when
    parsing failed), with its line and record number in the range."""
    record = -1
    for line_no, line in enumerate(data.split(b"\n")):
        if not line.strip():
            continue
        record += 1
        try:  # every way json fails on a hostile line (nesting past the recursion limit too) named
            parsed = parse_json(line, "", "valid JSON")
        except InputError as err:
            return RecordError(record, str(err).removeprefix(": "), line=line_no)
        if not isinstance(parsed, dict):
            return RecordError(record, f"a record must be a JSON object, not {type(parsed).__name__}", line=line_no)
        if problem := _field_type_problem(parsed, fields):
            return RecordError(record, problem, line=line_no)
    return None


def _count_lines_before(file: str, offset: int) -> int:
    count, done = 0, 0
    with open_binary(file) as fh:
        while done < offset:
            block = fh.read(min(1 << 24, offset - done))
            count += block.count(b"\n")
            done += len(block)
    return count


def _field_type_problem(record: dict, fields: tuple[FieldPath, ...]) -> str | None:
    for f in fields:
        values: list = [record]
        for i, (name, is_list) in enumerate(f.steps):
            nxt = []
            for v in values:
                if not isinstance(v, dict):
                    return f"field {f.text!r}: {'.'.join(n for n, _ in f.steps[:i]) or 'record'} is not an object"
                item = v.get(name)
                if item is None:
                    continue
                if is_list and not isinstance(item, list):
                    return f"field {f.text!r}: {name} is not a list"
                nxt.extend(item if is_list else [item])
            values = nxt
        if any(not isinstance(v, str) for v in values):
            return f"field {f.text!r} is not a string"
    return None


def field_texts(batch: pa.RecordBatch | pa.Table, f: FieldPath, path: str, max_bytes: int = 0) -> tuple[np.ndarray, pa.Array]:
    """The non-null values of one field, with the index of the record each came from;
    InputError when a dictionary-encoded field would decode to more than `max_bytes` of text
    (0: no bound)."""
    decoded = lambda arr: _decoded(arr, max_bytes, f, path)  # noqa: E731
    n = batch.num_rows
    name = f.steps[0][0]
    if name not in batch.schema.names:
        return np.empty(0, dtype=np.int64), pa.array([], pa.string())
    arr = batch.column(name)
    if isinstance(arr, pa.ChunkedArray):  # one chunk as it is (combining copies it)
        if pa.types.is_dictionary(arr.type):  # chunks may hold different dictionaries
            arr = pc.cast(arr, arr.type.value_type)
        arr = arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    rows = np.arange(n, dtype=np.int64)
    for i, (step, is_list) in enumerate(f.steps):
        if i > 0:
            if not pa.types.is_struct(arr.type) or arr.type.get_field_index(step) < 0:
                return np.empty(0, dtype=np.int64), pa.array([], pa.string())
            arr = decoded(pc.struct_field(arr, [step]))
        else:
            arr = decoded(arr)
        if is_list:
            if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
                raise InputError(f"{path}: field {f.text!r}: {step} is {arr.type}, not a list")
            rows = rows[pc.list_parent_indices(arr).to_numpy()]
            arr = decoded(pc.list_flatten(arr))
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        if pa.types.is_null(arr.type):
            return np.empty(0, dtype=np.int64), pa.array([], pa.string())
        raise InputError(f"{path}: field {f.text!r} is {arr.type}, not a string")
    _check_utf8(arr, rows, f, path)
    if not arr.null_count:
        return rows, arr
    valid = pc.is_valid(arr)
    return rows[valid.to_numpy(zero_copy_only=False)], arr.filter(valid)


class RecordError(InputError):
    """One record that cannot be read: the check fails naming it (exit 2), never passes.
    `record` counts from the first record of what was read (a batch, a JSONL range), `line`
    (JSONL) from its first line."""

    def __init__(self, record: int, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.record, self.problem, self.line = record, problem, line


class UndecodableRecord(RecordError):
    """A record whose text is not UTF-8: it cannot be read as a person reads it, so it is
    refused (exit 2), never passed as clean."""


_INVALID_AT = re.compile(r"at string index (\d+)")


def _check_utf8(texts: pa.Array, rows: np.ndarray, f: FieldPath, path: str) -> None:
    """UndecodableRecord naming the first record whose text in `f` is not valid UTF-8. Arrow's
    JSON and Parquet readers take a string's bytes as they are; one full validation (SIMD,
    GB/s) per field and batch."""
    try:
        texts.validate(full=True)
    except pa.ArrowInvalid as exc:
        at = _INVALID_AT.search(str(exc))
        if at is None:
            raise InputError(f"{path}: field {f.text!r}: cannot be read: {exc}") from None
        raise UndecodableRecord(int(rows[int(at.group(1))]), f"field {f.text!r}: not UTF-8 text, so it cannot be checked") from None


def _decoded(arr: pa.Array, max_bytes: int = 0, f: FieldPath | None = None, path: str = "") -> pa.Array:
    """A dictionary-encoded column (a pandas categorical, a Parquet column stored with a
    dictionary) as its values: the same texts, one per record, nulls kept. Its decoded size is
    counted first (the dictionary's value lengths, by index): a small dictionary page named by
    many indices is a decompression bomb of its own, refused over `max_bytes` (0: no bound)."""
    if not pa.types.is_dictionary(arr.type):
        return arr
    if max_bytes and (pa.types.is_string(arr.type.value_type) or pa.types.is_large_string(arr.type.value_type)):
        size = pc.sum(pc.binary_length(arr.dictionary).take(arr.indices)).as_py() or 0
        if size > max_bytes:
            where = f"field {f.text!r}" if f is not None else "a field"
            raise InputError(f"{path}: {where}: {len(arr):,} values decode to {size:,} bytes of text in one batch: {_over_bound(max_bytes)}")
    return arr.dictionary_decode()
