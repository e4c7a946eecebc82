"""The contamination check: is any holdout material in a fine-tuning data set?

Files are cut into units (JSONL byte ranges of `chunk_mb`, Parquet row groups) and the units
scanned by a pool of worker processes, in order, so memory is bounded by the units in flight,
not by the file size. In each unit the configured text fields go first through the prefilter
(one RE2 expression run by Arrow over the whole column); only texts it hits meet the matchers
(`HoldoutIndex.match_text`). Every record is parsed, so a truncated or malformed file is an
InputError, never a pass.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel

from kgeval.config import GuardsConfig
from kgeval.errors import InputError, LeakDetected
from kgeval.guards._fingerprint import SchemaFingerprint
from kgeval.guards._index import HoldoutIndex, Match, MatchKind, build_index, unique_matches
from kgeval.guards._records import FieldPath, Format, Unit, field_texts, file_format, plan_units, read_unit
from kgeval.holdout import Holdout

MAX_REPORTED_HITS = 1000


class Hit(BaseModel):
    """Holdout material found in one training record."""

    file: str
    record: int
    """0-based index of the record in its file (blank JSONL lines are not records)."""
    field: str
    """The configured field the text came from."""
    kind: MatchKind
    matched: str
    """The text that matched (at most 200 characters)."""
    holdout_item: str
    """Which holdout item: "kg <id>" or "<kg>/<question id>"."""
    score: float | None = None


class FileSummary(BaseModel):
    """What was read from one file."""

    file: str
    format: Format
    records: int
    bytes: int
    records_without_text: int
    """Records in which no configured field held any text (nothing in them was checked)."""
    hits: int


class Report(BaseModel):
    """The outcome of a contamination check."""

    files: list[FileSummary]
    hits: list[Hit]
    """The first `MAX_REPORTED_HITS` hits, in file and record order."""
    hit_count: int
    """All hits, including any not listed."""
    hits_by_kind: dict[str, int]
    records: int
    bytes: int
    seconds: float
    workers: int
    holdout_kgs: list[str]
    fields: list[str]

    @property
    def clean(self) -> bool:
        return self.hit_count == 0

    def summary(self) -> str:
        mb = self.bytes / 1e6
        rate = mb / self.seconds if self.seconds else 0.0
        head = (
            f"{len(self.files)} files, {self.records} records, {self.bytes} bytes ({mb:.1f} MB) read in "
            f"{self.seconds:.2f} s ({rate:.1f} MB/s, {self.workers} workers); holdout KGs: {', '.join(self.holdout_kgs)}"
        )
        if self.clean:
            return f"clean: {head}"
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.hits_by_kind.items()))
        return f"CONTAMINATED: {self.hit_count} hits ({kinds}); {head}"


class ContaminationError(LeakDetected):
    """Holdout material was found in training data; `report` lists every hit."""

    def __init__(self, report: Report) -> None:
        first = report.hits[0]
        super().__init__(
            f"{report.hit_count} holdout leaks found, first: {first.file}: record {first.record}: "
            f"{first.kind} {first.matched!r} ({first.holdout_item})"
        )
        self.report = report


@dataclass
class _UnitResult:
    records: int = 0
    hits: list[Hit] = field(default_factory=list)
    with_text: int = 0
    error: str | None = None


_INDEX: HoldoutIndex | None = None
_FIELDS: tuple[FieldPath, ...] = ()
_FROZEN = False


def _init_worker(index: HoldoutIndex, fields: tuple[FieldPath, ...]) -> None:
    global _INDEX, _FIELDS, _FROZEN
    _INDEX, _FIELDS, _FROZEN = index, fields, False
    _line_matches.cache_clear()
    _query_matches.cache_clear()


def _scan_unit(unit: Unit) -> _UnitResult:
    assert _INDEX is not None
    result = _UnitResult()
    try:
        for batch in read_unit(unit, _FIELDS):
            _scan_batch(batch, unit.path, result)
    except InputError as exc:
        result.error = str(exc)
    # Reference cycles left by a unit hold its Arrow buffers (tens of MB) until the cyclic GC
    # runs, which few Python allocations trigger: collect per unit, so memory stays flat.
    gc.collect()
    global _FROZEN
    if not _FROZEN:
        # What survives the first unit is long-lived (the index, modules imported on first use,
        # cached matches): freeze it so the per-unit collections no longer traverse it all.
        gc.freeze()
        _FROZEN = True
    return result


def _scan_batch(batch, path: Path, result: _UnitResult) -> None:  # noqa: ANN001 - Arrow batch or table
    """Prefilter every line of every configured field in Arrow (RE2); match the lines it keeps."""
    base = result.records
    seen = np.zeros(batch.num_rows, dtype=bool)
    for f in _FIELDS:
        rows, texts = field_texts(batch, f, path)
        seen[rows] = True
        if len(texts):
            for t, found in _field_matches(texts):
                result.hits += [Hit(file=str(path), record=base + int(rows[t]), field=f.text, **m.model_dump()) for m in found]
    result.records += batch.num_rows
    result.with_text += int(seen.sum())


def _field_matches(texts: pa.Array) -> Iterable[tuple[int, list[Match]]]:
    """(text index, its matches) for each text of one field with any, in text order.

    Training data repeats lines (system prompts, schema context), so the lines the prefilter
    keeps are deduplicated in Arrow and each distinct line matched once; per-text Python work
    is left only for texts that have a matching line or may hold a reference query."""
    assert _INDEX is not None
    lines = pc.split_pattern(texts, "\n")
    flat = pc.list_flatten(lines)
    keep = pc.fill_null(pc.match_substring_regex(flat, pattern=_INDEX.prefilter, ignore_case=True), False)
    kept = np.flatnonzero(keep.to_numpy(zero_copy_only=False))
    if not len(kept):
        return
    owner = pc.list_parent_indices(lines).to_numpy()[kept]
    distinct = flat.filter(keep).dictionary_encode()
    per_line = [_line_matches(line) for line in distinct.dictionary.to_pylist()]
    line_code = distinct.indices.to_numpy()
    line_hit = np.array([bool(m) for m in per_line], dtype=bool)[line_code]
    # As before, a text is tried as a query only when one of its lines passed the prefilter.
    candidates = np.unique(owner)
    maybe_query = _mask(pc.match_substring_regex(texts.take(pa.array(candidates, pa.int64())), pattern=_INDEX.query_prefilter))
    todo = np.union1d(owner[line_hit], candidates[maybe_query])
    for t in todo.tolist():
        found = [m for i in _span(owner, t) if line_hit[i] for m in per_line[line_code[i]]]
        if maybe_query[np.searchsorted(candidates, t)]:
            found += _query_matches(texts[t].as_py())
        if unique := unique_matches(found):
            yield t, unique


def _span(owner: np.ndarray, t: int) -> range:
    """Positions of text `t`'s kept lines (`owner` is sorted: lines keep their text order)."""
    return range(np.searchsorted(owner, t, "left"), np.searchsorted(owner, t, "right"))


def _sample_lines(path: Path, size: int) -> list[str]:
    """The first `size` bytes of a JSONL file as lines (raw: only word counts are taken from
    them); nothing for Parquet, whose anchors keep their default ranking."""
    if file_format(path) == "parquet":
        return []
    with open(path, "rb") as fh:
        return fh.read(size).decode("utf-8", errors="replace").splitlines()


def _mask(array: pa.Array) -> np.ndarray:
    return pc.fill_null(array, False).to_numpy(zero_copy_only=False)


# Cached because training data repeats lines and texts (system prompts, schema context).
@lru_cache(maxsize=65_536)
def _line_matches(line: str) -> tuple[Match, ...]:
    assert _INDEX is not None
    return tuple(_INDEX.match_line(line))


@lru_cache(maxsize=4096)
def _query_matches(text: str) -> tuple[Match, ...]:
    assert _INDEX is not None
    return tuple(_INDEX.match_query(text, prefiltered=True))


def check_contamination(
    paths: Sequence[Path],
    holdout: Holdout | HoldoutIndex,
    config: GuardsConfig | None = None,
    training: Sequence[SchemaFingerprint] = (),
) -> Report:
    """Scan every record of every file for holdout material; raise InputError on a bad file."""
    config = config or GuardsConfig()
    cc = config.contamination
    index = holdout if isinstance(holdout, HoldoutIndex) else build_index(holdout, config, list(training))
    fields = tuple(FieldPath.parse(f) for f in cc.fields)
    started = time.perf_counter()
    plans = {Path(p): plan_units(Path(p), cc.chunk_mb << 20) for p in paths}
    if cc.sample_mb and paths:
        index = index.with_anchors_from(_sample_lines(Path(paths[0]), cc.sample_mb << 20))
    units = [u for plan in plans.values() for u in plan]
    workers = min(cc.workers or os.cpu_count() or 1, len(units)) or 1
    report = _merge(plans, units, _run_units(units, index, fields, workers), index, fields, workers)
    return report.model_copy(update={"seconds": time.perf_counter() - started})


def _run_units(units: list[Unit], index: HoldoutIndex, fields: tuple[FieldPath, ...], workers: int) -> Iterable[_UnitResult]:
    if workers <= 1:
        _init_worker(index, fields)
        return _in_process(units)
    ctx = mp.get_context("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")
    pool = ctx.Pool(workers, initializer=_init_worker, initargs=(index, fields))

    def ordered() -> Iterable[_UnitResult]:
        with pool:
            yield from pool.imap(_scan_unit, units, chunksize=1)

    return ordered()


def _in_process(units: list[Unit]) -> Iterable[_UnitResult]:
    """The units scanned in this process, which outlives the check: what `_scan_unit` froze
    is unfrozen afterwards, so the caller's garbage is collected as before."""
    try:
        yield from (_scan_unit(u) for u in units)
    finally:
        gc.unfreeze()


def _merge(
    plans: dict[Path, list[Unit]],
    units: list[Unit],
    results: Iterable[_UnitResult],
    index: HoldoutIndex,
    fields: tuple[FieldPath, ...],
    workers: int,
) -> Report:
    per_file = {p: {"records": 0, "with_text": 0, "hits": 0} for p in plans}
    hits: list[Hit] = []
    kinds: Counter[str] = Counter()
    for unit, result in zip(units, results):
        if result.error:
            raise InputError(result.error)
        tally = per_file[unit.path]
        for hit in result.hits:
            hit.record += tally["records"]
            kinds[hit.kind] += 1
            if len(hits) < MAX_REPORTED_HITS:
                hits.append(hit)
        tally["records"] += result.records
        tally["with_text"] += result.with_text
        tally["hits"] += len(result.hits)
    files = [_file_summary(p, plan, per_file[p], fields) for p, plan in plans.items()]
    return Report(
        files=files, hits=hits, hit_count=sum(kinds.values()), hits_by_kind=dict(kinds),
        records=sum(f.records for f in files), bytes=sum(f.bytes for f in files),
        seconds=0.0, workers=workers, holdout_kgs=list(index.kgs),
        fields=[f.text for f in fields],
    )


def _file_summary(path: Path, plan: list[Unit], tally: dict, fields: tuple[FieldPath, ...]) -> FileSummary:
    if tally["records"] and not tally["with_text"]:
        raise InputError(
            f"{path}: none of its {tally['records']} records has any of the fields "
            f"{', '.join(f.text for f in fields)}: nothing would be checked (set contamination.fields)"
        )
    return FileSummary(
        file=str(path), format=plan[0].format, records=tally["records"], bytes=path.stat().st_size,
        records_without_text=tally["records"] - tally["with_text"], hits=tally["hits"],
    )


def assert_clean(
    paths: Sequence[Path],
    holdout: Holdout | HoldoutIndex,
    config: GuardsConfig | None = None,
    training: Sequence[SchemaFingerprint] = (),
) -> Report:
    """`check_contamination`, raising ContaminationError (exit code 3) on any hit."""
    report = check_contamination(paths, holdout, config, training)
    if not report.clean:
        raise ContaminationError(report)
    return report
