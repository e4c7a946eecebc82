"""Reading training records in bounded pieces: JSONL byte ranges and Parquet row groups.

Only the configured text fields are read; every record is still parsed in full, so a file
that is truncated or malformed anywhere raises InputError naming the file and the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

from kgeval.errors import InputError

Format = Literal["jsonl", "parquet"]
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


@dataclass(frozen=True)
class Unit:
    """A piece of work: a byte range of a JSONL file, or row groups of a Parquet file."""

    path: Path
    format: Format
    start: int = 0
    end: int = 0
    row_groups: tuple[int, ...] = ()


def file_format(path: Path) -> Format:
    suffix = path.suffix.lower()
    if suffix in _JSONL:
        return "jsonl"
    if suffix in _PARQUET:
        return "parquet"
    raise InputError(f"{path}: unknown training file type (JSONL: {', '.join(_JSONL)}; Parquet: {', '.join(_PARQUET)})")


def plan_units(path: Path, chunk_bytes: int) -> list[Unit]:
    """Split a file into units of about `chunk_bytes`: JSONL at line ends, Parquet by row group."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    fmt = file_format(path)
    if fmt == "parquet":
        return _parquet_units(path, chunk_bytes)
    size = path.stat().st_size
    bounds = [0]
    with open(path, "rb") as fh:
        while bounds[-1] + chunk_bytes < size:
            fh.seek(bounds[-1] + chunk_bytes)
            fh.readline()
            bounds.append(fh.tell())
    if bounds[-1] < size or size == 0:
        bounds.append(size)
    return [Unit(path, "jsonl", a, b) for a, b in zip(bounds, bounds[1:])]


def _parquet_units(path: Path, chunk_bytes: int) -> list[Unit]:
    meta = _parquet_file(path).metadata
    units, group, size = [], [], 0
    for i in range(meta.num_row_groups):
        group.append(i)
        size += meta.row_group(i).total_byte_size
        if size >= chunk_bytes:
            units.append(Unit(path, "parquet", row_groups=tuple(group)))
            group, size = [], 0
    if group or not units:
        units.append(Unit(path, "parquet", row_groups=tuple(group)))
    return units


def _parquet_file(path: Path) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{path}: not a readable Parquet file (truncated or corrupt?): {exc}") from None


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


def read_unit(unit: Unit, fields: tuple[FieldPath, ...]) -> Iterator[pa.RecordBatch | pa.Table]:
    """The records of `unit`, in order, as Arrow batches holding the configured fields."""
    if unit.format == "parquet":
        yield from _read_parquet(unit, fields)
        return
    with open(unit.path, "rb") as fh:
        fh.seek(unit.start)
        data = fh.read(unit.end - unit.start)
    if not data or data.isspace():  # isspace stops at the first byte that is not: no copy, unlike strip
        return
    options = pj.ParseOptions(explicit_schema=json_schema(fields), unexpected_field_behavior="ignore")
    try:
        yield pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(use_threads=False, block_size=max(1 << 20, len(data) + 1)),
            parse_options=options,
        )
    except pa.ArrowInvalid as exc:
        raise InputError(_locate_json_error(unit, data, fields, exc)) from None


def _read_parquet(unit: Unit, fields: tuple[FieldPath, ...]) -> Iterator[pa.RecordBatch]:
    pf = _parquet_file(unit.path)
    present = set(pf.schema_arrow.names)
    columns = sorted({f.steps[0][0] for f in fields} & present)
    if not columns:
        raise InputError(f"{unit.path}: none of the configured fields ({', '.join(f.text for f in fields)}) is a column")
    try:
        yield from pf.iter_batches(batch_size=65_536, row_groups=list(unit.row_groups), columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{unit.path}: row groups {list(unit.row_groups)}: cannot be read (truncated or corrupt?): {exc}") from None


def _locate_json_error(unit: Unit, data: bytes, fields: tuple[FieldPath, ...], exc: Exception) -> str:
    """Name the first bad line of a JSONL range (slow path: only when parsing failed)."""
    line_base = _count_lines_before(unit.path, unit.start)
    for offset, line in enumerate(data.split(b"\n")):
        if not line.strip():
            continue
        where = f"{unit.path}: line {line_base + offset + 1}"
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            return f"{where}: not valid JSON (truncated or malformed): {err}"
        if not isinstance(record, dict):
            return f"{where}: a record must be a JSON object, not {type(record).__name__}"
        problem = _field_type_problem(record, fields)
        if problem:
            return f"{where}: {problem}"
    return f"{unit.path}: bytes {unit.start}-{unit.end}: cannot be parsed: {exc}"


def _count_lines_before(path: Path, offset: int) -> int:
    count, done = 0, 0
    with open(path, "rb") as fh:
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


def field_texts(batch: pa.RecordBatch | pa.Table, f: FieldPath, path: Path) -> tuple[np.ndarray, pa.Array]:
    """The non-null values of one field, with the index of the record each came from."""
    n = batch.num_rows
    name = f.steps[0][0]
    if name not in batch.schema.names:
        return np.empty(0, dtype=np.int64), pa.array([], pa.string())
    arr = batch.column(name)
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    rows = np.arange(n, dtype=np.int64)
    for i, (step, is_list) in enumerate(f.steps):
        if i > 0:
            if not pa.types.is_struct(arr.type) or arr.type.get_field_index(step) < 0:
                return np.empty(0, dtype=np.int64), pa.array([], pa.string())
            arr = pc.struct_field(arr, [step])
        if is_list:
            if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
                raise InputError(f"{path}: field {f.text!r}: {step} is {arr.type}, not a list")
            rows = rows[pc.list_parent_indices(arr).to_numpy()]
            arr = pc.list_flatten(arr)
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        if pa.types.is_null(arr.type):
            return np.empty(0, dtype=np.int64), pa.array([], pa.string())
        raise InputError(f"{path}: field {f.text!r} is {arr.type}, not a string")
    valid = pc.is_valid(arr)
    return rows[valid.to_numpy(zero_copy_only=False)], arr.filter(valid)
