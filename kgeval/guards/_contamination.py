"""The contamination check: is any holdout material in a fine-tuning data set?

It is a map over shards with an ordered reduce, and that is its public API (the shard API):

- `build_index` once (the index is holdout material: its normalized questions, IRIs and
  queries; ship it to workers, never publish it);
- `ShardScanner(index, fields)`: picklable, sent once to each worker; `scan_shard(shard)`
  scans one shard of `plan_shards(file, chunk_bytes)` (a JSONL byte range, Parquet row
  groups), `scan_batch(batch, ...)` one Arrow record batch, each into a `PartialReport`;
- `merge_reports(partials, scanner)`: the partial reports, in shard order, into the `Report`
  the local check prints (record numbers offset by the records of the shards before).

The local check is that API on a process pool (in shard order, so memory is bounded by the
shards in flight, not by the file size); the Spark adapter (`kgeval.guards.check_dataframe`)
is the same API in `mapInArrow`. In each shard the configured text fields go first through the
prefilter (many literals found at once over the whole column: `Needles`); only lines it keeps meet
the Python matchers. Every record is parsed, so a truncated or malformed file is an
InputError, never a pass.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, Field

from kgeval.config import ContaminationConfig, GuardsConfig
from kgeval.errors import InputError, LeakDetected
from kgeval.guards._fingerprint import SchemaFingerprint
from kgeval.guards._index import HoldoutIndex, Match, MatchKind, build_index, unique_matches
from kgeval.guards._records import FieldPath, Format, RecordError, Shard, field_texts, file_format, open_binary, plan_shards, read_shard, release_read_buffer
from kgeval.guards._text import folded_rows
from kgeval.holdout import Holdout

MAX_REPORTED_HITS = 1000


class Hit(BaseModel):
    """Holdout material found in one training record."""

    file: str
    record: int
    """0-based index of the record in its file (blank JSONL lines are not records); in a
    `PartialReport`, in its shard. Messages number records from 1 (`Hit.number`): record 3 is
    the third record, the third line of a JSONL file without blank lines."""
    field: str
    """The configured field the text came from."""
    kind: MatchKind
    matched: str
    """The text that matched (at most 200 characters)."""
    holdout_item: str
    """Which holdout item: "kg <id>" or "<kg>/<question id>"."""
    score: float | None = None

    @property
    def number(self) -> int:
        """The record's number as messages give it: from 1, as an editor numbers lines."""
        return self.record + 1


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
        unread = sum(f.records_without_text for f in self.files)
        if unread:  # a record whose text is in a field not configured is not checked: said, not hidden
            head += f"; NOT CHECKED: {unread} records have no text in the fields {', '.join(self.fields)} (add theirs to the configured fields)"
        if self.clean:
            return f"clean: {head}"
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.hits_by_kind.items()))
        return f"CONTAMINATED: {self.hit_count} hits ({kinds}); {head}"


class ContaminationError(LeakDetected):
    """Holdout material was found in training data; `report` lists every hit."""

    def __init__(self, report: Report) -> None:
        first = report.hits[0]
        super().__init__(
            f"{report.hit_count} holdout leaks found, first: {first.file}: record {first.number}: "
            f"{first.kind} {first.matched!r} ({first.holdout_item})"
        )
        self.report = report


class PartialReport(BaseModel):
    """What one shard (or one batch of records) held: `merge_reports` joins them in shard order."""

    file: str
    """The file the records came from (a path or URL as given; "<dataframe>" for a table)."""
    format: Format = "jsonl"
    file_bytes: int = 0
    """Size of the whole file (0 when unknown)."""
    records: int = 0
    records_with_text: int = 0
    """Records in which some configured field held text."""
    hits: list[Hit] = Field(default_factory=list)
    """The first `MAX_REPORTED_HITS` hits, record numbers counted from the shard's first record."""
    hits_by_kind: dict[str, int] = Field(default_factory=dict)
    """All hits by kind, including any not listed."""
    error: str | None = None
    """Why the shard could not be read: the whole check fails (InputError), never passes."""
    error_record: int | None = None
    """The record `error` is about, when it is one (counted from the shard's first): the
    merged report names it counted from the file's first."""

    def followed_by(self, later: PartialReport) -> PartialReport:
        """This partial and the next one of the same file, as one."""
        if self.error:
            return self
        if later.error:
            moved = None if later.error_record is None else self.records + later.error_record
            return self.model_copy(update={"error": later.error, "error_record": moved})
        moved = [h.model_copy(update={"record": h.record + self.records}) for h in later.hits]
        kinds = Counter(self.hits_by_kind) + Counter(later.hits_by_kind)
        return self.model_copy(update={
            "records": self.records + later.records,
            "records_with_text": self.records_with_text + later.records_with_text,
            "hits": (self.hits + moved)[:MAX_REPORTED_HITS], "hits_by_kind": dict(kinds),
            "file_bytes": max(self.file_bytes, later.file_bytes),
        })


class ShardScanner:
    """Scans shards and record batches for one holdout index and list of fields.

    Picklable: send it once to each worker (a process pool's initializer, a Spark broadcast).
    It holds the holdout index, which is holdout material: keep it off shared storage."""

    def __init__(self, index: HoldoutIndex, fields: Sequence[str], max_decompressed_mb: int = ContaminationConfig().max_decompressed_mb) -> None:
        self.index = index
        self.fields = tuple(FieldPath.parse(f) for f in fields)
        self.max_bytes = max_decompressed_mb << 20
        """The Parquet decompressed-size bound (`contamination.max_decompressed_mb`), in bytes."""
        self._caches()

    def __getstate__(self) -> dict:
        return {"index": self.index, "fields": self.fields, "max_bytes": self.max_bytes}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._caches()

    def _caches(self) -> None:
        # Cached because training data repeats lines and texts (system prompts, schema context).
        self._line_matches = lru_cache(maxsize=65_536)(lambda line, questions, literals: tuple(self.index.match_line(line, questions, literals)))
        self._query_matches = lru_cache(maxsize=4096)(lambda text: tuple(self.index.match_query(text, prefiltered=True)))
        self._frozen = False

    def scan_shard(self, shard: Shard) -> PartialReport:
        """Every record of one shard; a shard that cannot be read gives a partial with `error`."""
        partial = PartialReport(file=shard.file, format=shard.format, file_bytes=shard.file_bytes)
        if not self._frozen:
            # What the caller holds before the first shard (every module, its own objects)
            # outlives the check: frozen, the per-shard collections no longer traverse it
            # (~0.1-0.2 CPU-s in a process that has loaded a holdout and its judges).
            gc.freeze()
        try:
            for batch in read_shard(shard, self.fields, self.max_bytes):
                partial = partial.followed_by(self.scan_batch(batch, shard.file, shard.format, shard.file_bytes))
        except RecordError as exc:
            partial.error, partial.error_record = exc.problem, partial.records + exc.record
        except InputError as exc:
            partial.error = str(exc)
        self._collect_garbage()
        return partial

    def scan_batch(self, batch: pa.RecordBatch | pa.Table, file: str, format: Format = "jsonl", file_bytes: int = 0) -> PartialReport:
        """Every record of one Arrow batch (columns named like the fields' first segments)."""
        hits: list[Hit] = []
        seen = np.zeros(batch.num_rows, dtype=bool)
        for f in self.fields:
            rows, texts = field_texts(batch, f, file, self.max_bytes)
            seen[rows] = True
            if len(texts):
                for t, found in self._field_matches(texts):
                    hits += [Hit(file=file, record=int(rows[t]), field=f.text, **m.model_dump()) for m in found]
        hits.sort(key=lambda h: h.record)  # field by field above; records in order, fields in config order
        return PartialReport(
            file=file, format=format, file_bytes=file_bytes, records=batch.num_rows, records_with_text=int(seen.sum()),
            hits=hits[:MAX_REPORTED_HITS], hits_by_kind=dict(Counter(h.kind for h in hits)),
        )

    def _collect_garbage(self) -> None:
        # Reference cycles left by a shard hold its Arrow buffers (tens of MB) until the cyclic
        # GC runs, which few Python allocations trigger: collect per shard, so memory stays flat.
        gc.collect()
        if not self._frozen:
            # What survives the first shard is long-lived too (modules imported on first use,
            # cached matches): frozen with the rest.
            gc.freeze()
            self._frozen = True

    def _field_matches(self, texts: pa.Array) -> Iterable[tuple[int, list[Match]]]:
        """(text index, its matches) for each text of one field with any, in text order.

        Texts are matched as they are, and those that `folded` changes (only rows with
        characters outside ASCII are looked at) again as it reads them, a text's matches
        joined: so a copy in full-width forms, hidden characters or look-alike letters meets
        the prefilter as the text it looks like, and ASCII-only data pays one pass of
        `string_is_ascii`."""
        found = dict(self._matches_as_given(texts))
        rows, changed = folded_rows(texts)
        if len(rows):
            for t, matches in self._matches_as_given(pa.array(changed, pa.large_string())):
                found[int(rows[t])] = unique_matches(matches + found.get(int(rows[t]), []))
        yield from sorted(found.items())

    def _matches_as_given(self, texts: pa.Array) -> Iterable[tuple[int, list[Match]]]:
        """`_field_matches` of texts without folding them.

        Training data repeats lines (system prompts, schema context), so the lines the
        prefilter keeps are deduplicated in Arrow and each distinct line matched once;
        per-text Python work is left only for texts that have a matching line or may hold a
        reference query."""
        lines = pc.split_pattern(texts, "\n")
        flat = pc.list_flatten(lines)
        kept = np.flatnonzero(self.index.prefilter_mask(flat))
        if not len(kept):
            return
        owner = pc.list_parent_indices(lines).to_numpy()[kept]
        distinct = flat.take(pa.array(kept, pa.int64())).dictionary_encode()
        words = distinct.dictionary
        # Only the distinct lines some matcher may fire on meet Python (most lines that pass the
        # prefilter for one question word hold too few of its words to match it).
        mask, only, literal = self.index.line_candidates(words)
        worth = np.flatnonzero(mask)
        per_line: list[tuple[Match, ...]] = [()] * len(words)
        for i, line in zip(worth.tolist(), words.take(pa.array(worth, pa.int64())).to_pylist()):
            per_line[i] = self._line_matches(line, tuple(only[i]) if i in only else None, bool(literal[i]))
        line_code = distinct.indices.to_numpy()
        line_hit = np.array([bool(m) for m in per_line], dtype=bool)[line_code]
        candidates, maybe_query = self._query_candidates(texts, owner, words, line_code)
        for t in np.union1d(owner[line_hit], candidates[maybe_query]).tolist():
            found = [m for i in _span(owner, t) if line_hit[i] for m in per_line[line_code[i]]]
            if maybe_query[np.searchsorted(candidates, t)]:
                found += self._query_matches(texts[t].as_py())
            if unique := unique_matches(found):
                yield t, unique

    def _query_candidates(
        self, texts: pa.Array, owner: np.ndarray, words: pa.Array, line_code: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The texts with a kept line (sorted), and which of them hold a query key. Keys
        the prefilter covers are looked for in the distinct kept lines only (a text holds one
        exactly when one of its kept lines does); the others in the whole texts."""
        candidates = np.unique(owner)
        key_line = self.index.line_query_prefilter.mask(words)[line_code]
        maybe_query = np.isin(candidates, owner[key_line])
        if self.index.text_query_prefilter is not None:
            rest = np.flatnonzero(~maybe_query)
            found = self.index.text_query_prefilter.mask(texts.take(pa.array(candidates[rest], pa.int64())))
            maybe_query[rest[found]] = True
        return candidates, maybe_query


def _span(owner: np.ndarray, t: int) -> range:
    """Positions of text `t`'s kept lines (`owner` is sorted: lines keep their text order)."""
    return range(np.searchsorted(owner, t, "left"), np.searchsorted(owner, t, "right"))


def merge_reports(
    partials: Iterable[PartialReport], scanner: ShardScanner, *, workers: int = 1, seconds: float = 0.0, allow_empty: bool = False
) -> Report:
    """Partial reports in shard order (a file's shards together, in file order) as one report;
    InputError when any shard could not be read, a file had none of the fields, or (unless
    `allow_empty`) a file held no records."""
    per_file: dict[str, PartialReport] = {}
    for partial in partials:
        before = per_file.get(partial.file)
        if partial.error:
            raise InputError(_error_of(partial, before.records if before else 0))
        per_file[partial.file] = before.followed_by(partial) if before else partial.model_copy(update={"hits": list(partial.hits)})
    if not allow_empty:
        _refuse_empty(list(per_file.values()))
    files = [_file_summary(p, scanner.fields) for p in per_file.values()]
    kinds = sum((Counter(p.hits_by_kind) for p in per_file.values()), Counter())
    hits = [h for p in per_file.values() for h in p.hits][:MAX_REPORTED_HITS]
    return Report(
        files=files, hits=hits, hit_count=sum(kinds.values()), hits_by_kind=dict(kinds),
        records=sum(f.records for f in files), bytes=sum(f.bytes for f in files),
        seconds=seconds, workers=workers, holdout_kgs=list(scanner.index.kgs),
        fields=[f.text for f in scanner.fields],
    )


def _error_of(partial: PartialReport, records_before: int) -> str:
    """A shard's error, naming its file and the record it is about (counted as hits are)."""
    if partial.error_record is None:
        return partial.error or ""
    return f"{partial.file}: record {records_before + partial.error_record} (counted from 0, as hits are): {partial.error}"


def _refuse_empty(per_file: list[PartialReport]) -> None:
    """An empty training file is almost always a failed export: checking it proves nothing."""
    if not per_file:
        raise InputError(f"no records were read: nothing was checked ({_ALLOW_EMPTY})")
    for partial in per_file:
        if not partial.records:
            held = f"{partial.file_bytes} bytes, blank lines only" if partial.file_bytes and partial.format == "jsonl" else f"{partial.file_bytes} bytes"
            raise InputError(
                f"{partial.file}: contains no records ({held}): an empty training file is usually a failed export, "
                f"and nothing in it was checked ({_ALLOW_EMPTY})"
            )


_ALLOW_EMPTY = "--allow-empty or contamination.allow_empty: true accepts it"


def _file_summary(partial: PartialReport, fields: tuple[FieldPath, ...]) -> FileSummary:
    if partial.records and not partial.records_with_text:
        raise InputError(
            f"{partial.file}: none of its {partial.records} records has any of the fields "
            f"{', '.join(f.text for f in fields)}: nothing would be checked; name the field that holds their text with --field NAME "
            "(repeatable; a nested one as a.b, a list's items as a[].b), or set guards.contamination.fields"
        )
    return FileSummary(
        file=partial.file, format=partial.format, records=partial.records, bytes=partial.file_bytes,
        records_without_text=partial.records - partial.records_with_text, hits=sum(partial.hits_by_kind.values()),
    )


def _sample_lines(file: str, size: int) -> list[str]:
    """The first `size` bytes of a JSONL file as lines (raw: only word counts are taken from
    them); nothing for Parquet, whose anchors keep their default ranking."""
    if file_format(file) == "parquet":
        return []
    with open_binary(file) as fh:
        return fh.read(size).decode("utf-8", errors="replace").splitlines()


class ScanProgress(BaseModel):
    """How far a check has come, after each shard (in shard order)."""

    shards_done: int
    shards: int
    bytes_done: int
    """Bytes of the shards scanned (Parquet: their row groups' uncompressed size)."""
    bytes_total: int
    records: int
    """Records scanned so far."""
    hits: int


Progress = Callable[[ScanProgress], None]
"""Called in the calling process after each shard."""


def check_contamination(
    paths: Sequence[Path | str],
    holdout: Holdout | HoldoutIndex,
    config: GuardsConfig | None = None,
    training: Sequence[SchemaFingerprint] = (),
    progress: Progress | None = None,
) -> Report:
    """Scan every record of every file (local paths or URLs) for holdout material; raise
    InputError on a bad file."""
    config = config or GuardsConfig()
    cc = config.contamination
    index = holdout if isinstance(holdout, HoldoutIndex) else build_index(holdout, config, list(training))
    started = time.perf_counter()
    files = [str(p) for p in paths]
    shards = [s for f in dict.fromkeys(files) for s in plan_shards(f, cc.chunk_mb << 20)]
    if cc.sample_mb and files:
        index = index.with_anchors_from(_sample_lines(files[0], cc.sample_mb << 20))
    scanner = ShardScanner(index, cc.fields, cc.max_decompressed_mb)
    workers = min(cc.workers or os.cpu_count() or 1, len(shards)) or 1
    partials = _reported(shards, scan_shards(shards, scanner, workers), progress)
    return merge_reports(partials, scanner, workers=workers, seconds=0.0, allow_empty=cc.allow_empty).model_copy(
        update={"seconds": time.perf_counter() - started}
    )


def _reported(shards: list[Shard], partials: Iterable[PartialReport], progress: Progress | None) -> Iterable[PartialReport]:
    state = ScanProgress(shards_done=0, shards=len(shards), bytes_done=0, bytes_total=sum(s.size for s in shards), records=0, hits=0)
    for shard, partial in zip(shards, partials):
        state.shards_done += 1
        state.bytes_done += shard.size
        state.records += partial.records
        state.hits += sum(partial.hits_by_kind.values())
        if progress:
            progress(state)
        yield partial


def scan_shards(shards: Sequence[Shard], scanner: ShardScanner, workers: int) -> Iterable[PartialReport]:
    """The shards' partial reports, in shard order: in this process, or on a pool of
    `workers` processes that each receive the scanner once."""
    if workers <= 1:
        return _in_process(shards, scanner)
    ctx = mp.get_context("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")
    if ctx.get_start_method() == "forkserver":
        # Workers fork from a server that imported this module once (~0.7 CPU-s each otherwise),
        # and pandas, which pyarrow imports on first use when it is installed (~0.4 CPU-s each).
        ctx.set_forkserver_preload([__name__, "pandas"])
    pool = ctx.Pool(workers, initializer=_install, initargs=(scanner,))

    def ordered() -> Iterable[PartialReport]:
        with pool:
            yield from pool.imap(_scan_installed, shards, chunksize=1)

    return ordered()


_WORKER_SCANNER: ShardScanner | None = None
"""A pool worker's scanner, installed once by the pool's initializer."""


def _install(scanner: ShardScanner) -> None:
    global _WORKER_SCANNER
    # What the worker inherited from the forkserver (every imported module) lives as long as
    # it: frozen, the per-shard collections no longer traverse it (~0.1 CPU-s a worker).
    gc.freeze()
    _WORKER_SCANNER = scanner


def _scan_installed(shard: Shard) -> PartialReport:
    assert _WORKER_SCANNER is not None
    return _WORKER_SCANNER.scan_shard(shard)


def _in_process(shards: Sequence[Shard], scanner: ShardScanner) -> Iterable[PartialReport]:
    """The shards scanned in this process, which outlives the check: what the scanner froze
    is unfrozen afterwards, so the caller's garbage is collected as before, and the read
    buffer is let go."""
    try:
        yield from (scanner.scan_shard(s) for s in shards)
    finally:
        gc.unfreeze()
        release_read_buffer()


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
