"""Which rows of an Arrow string column hold any of many literal strings (the prefilters).

Hyperscan (a multi-literal SIMD matcher, the kind `rg` uses) scans the column's whole data
buffer in one call, with the start and end of each match; numpy maps them to rows through the
column's offsets. No Python runs per row: only one callback per match. A match that spans two
rows is dropped (`mask` says whether a row holds a needle by itself), and every match ending
inside a row is reported, so none within a row is lost. It reads a megabyte in ~1 ms where
RE2 over one alternation of the same strings (Arrow's `match_substring_regex`) takes ~3.

`pattern` is the same set as one RE2 expression: `mask` gives what RE2 gives with it, case
folded the same way (Unicode simple case folding: KELVIN SIGN is `k`, `ſ` is `s`, `É` is `é`;
no full folding: `ß` is not `ss`). Without Hyperscan (a platform without its wheel) `mask`
runs that expression in Arrow: slower, the same rows.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

try:
    import hyperscan
except ImportError:  # no wheel for this platform: the RE2 expression, same rows
    hyperscan = None

_SPECIAL = set(r"\.^$|?*+()[]{}/-")
_WORD_BYTES = np.zeros(256, dtype=bool)
_WORD_BYTES[[*range(48, 58), *range(65, 91), *range(97, 123)]] = True
_SCAN_LIMIT = 1 << 30
"""Bytes scanned in one call at most (Hyperscan takes an unsigned int length)."""
_compiled = threading.local()
"""Per thread (a database's scratch space serves one scan at a time): Needles -> database."""


@dataclass(frozen=True)
class Needles:
    """Strings to look for: `literals` anywhere, `words` only where a word starts (not right
    after an ASCII letter or digit, the word start `tokens` splits at: `_` separates words)."""

    literals: frozenset[str] = frozenset()
    words: frozenset[str] = frozenset()
    ignore_case: bool = False

    @classmethod
    def of(cls, literals: Iterable[str] = (), words: Iterable[str] = (), *, ignore_case: bool = False) -> Needles:
        return cls(frozenset(x for x in literals if x), frozenset(x for x in words if x), ignore_case)

    def __bool__(self) -> bool:
        return bool(self.literals or self.words)

    @cached_property
    def pattern(self) -> str:
        """The needles as one expression, valid in Python `re` and RE2 (case: `ignore_case`)."""
        parts = sorted(_escape(x) for x in self.literals) + [_word_start(w) + _escape(w) for w in sorted(self.words)]
        return "|".join(parts) if parts else r"[^\s\S]"  # the empty alternative never matches

    def mask(self, texts: list[str] | pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Per text, whether a needle lies inside it (nulls: False)."""
        array = texts if isinstance(texts, (pa.Array, pa.ChunkedArray)) else pa.array(texts, pa.large_string())
        if not self or not len(array):
            return np.zeros(len(array), dtype=bool)
        if hyperscan is None:
            return re2_mask(array, self.pattern, ignore_case=self.ignore_case)
        if isinstance(array, pa.ChunkedArray):
            return np.concatenate([self._scanned(c) for c in array.chunks]) if array.num_chunks else np.zeros(0, dtype=bool)
        return self._scanned(array)

    def _scanned(self, array: pa.Array) -> np.ndarray:
        """`mask` of one array by Hyperscan over its data buffer, a window of rows at a time."""
        offsets = _offsets(array)
        data = array.buffers()[2]
        found = np.zeros(len(array), dtype=bool)
        if data is None or offsets[-1] == offsets[0]:
            return found
        view = memoryview(data)
        first = 0
        while first < len(array):
            last = max(first + 1, int(np.searchsorted(offsets, offsets[first] + _SCAN_LIMIT, "right")) - 1)
            rows = self._rows_found(view, offsets[first : last + 1])
            found[first + rows] = True
            first = last
        if array.null_count:
            found &= pc.is_valid(array).to_numpy(zero_copy_only=False)
        return found

    def _rows_found(self, view: memoryview, offsets: np.ndarray) -> np.ndarray:
        """Rows (from 0 at `offsets[0]`) holding a match that starts and ends within them and,
        for a word, does not follow a letter or digit."""
        ids, starts, ends = [], [], []

        def found(pattern: int, start: int, end: int, flags: int, context: object) -> None:
            ids.append(pattern)
            starts.append(start)
            ends.append(end)

        base = int(offsets[0])
        self._database().scan(view[base : int(offsets[-1])], match_event_handler=found)
        if not ids:
            return np.zeros(0, dtype=np.int64)
        start, end = np.array(starts, dtype=np.int64) + base, np.array(ends, dtype=np.int64) + base
        row = np.searchsorted(offsets, start, "right") - 1
        inside = row == np.searchsorted(offsets, end - 1, "right") - 1
        word = self._guarded[np.array(ids, dtype=np.int64)]
        if word.any():
            after_word = np.zeros(len(start), dtype=bool)
            inner = word & (start > offsets[row])  # a row's first byte follows nothing
            after_word[inner] = _WORD_BYTES[np.frombuffer(view, np.uint8)[start[inner] - 1]]
            inside &= ~after_word
        return np.unique(row[inside])

    @cached_property
    def _guarded(self) -> np.ndarray:
        """Per needle id of the database, whether a match must be at a word start."""
        return np.array([False] * len(self.literals) + [bool(_word_start(w)) for w in sorted(self.words)], dtype=bool)

    def _database(self):  # noqa: ANN202 - a hyperscan.Database
        cache = _compiled.__dict__.setdefault("databases", {})
        if self not in cache:
            cache[self] = _compile(sorted(self.literals) + sorted(self.words), self.ignore_case)
        return cache[self]


def _compile(needles: list[str], ignore_case: bool):  # noqa: ANN202 - a hyperscan.Database
    flags = hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_UCP | hyperscan.HS_FLAG_SOM_LEFTMOST
    if ignore_case:
        flags |= hyperscan.HS_FLAG_CASELESS
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    expressions = [_hyperscan_literal(x) for x in needles]
    database.compile(expressions=expressions, ids=list(range(len(needles))), elements=len(needles), flags=[flags] * len(needles))
    return database


def _hyperscan_literal(needle: str) -> bytes:
    """`needle` as a Hyperscan expression matching exactly it: ASCII punctuation and spaces as
    `\\xHH`, everything else as itself (UTF-8)."""
    return "".join(c if c.isalnum() or not c.isascii() else f"\\x{ord(c):02x}" for c in needle).encode()


def _offsets(array: pa.Array) -> np.ndarray:
    wide = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    raw = np.frombuffer(array.buffers()[1], np.int64 if wide else np.int32)
    return raw[array.offset : array.offset + len(array) + 1].astype(np.int64)


def re2_mask(texts: list[str] | pa.Array, pattern: str, *, ignore_case: bool = False) -> np.ndarray:
    """Which texts `pattern` finds something in: RE2 (Arrow's regex engine), linear time."""
    array = texts if isinstance(texts, (pa.Array, pa.ChunkedArray)) else pa.array(texts, pa.large_string())
    found = pc.match_substring_regex(array, pattern=pattern, ignore_case=ignore_case)
    return pc.fill_null(found, False).to_numpy(zero_copy_only=False)


def _escape(literal: str) -> str:
    """Escape for both Python `re` and RE2 (pyarrow): a backslash before each metacharacter."""
    return "".join("\\" + c if c in _SPECIAL else c for c in literal)


def _word_start(word: str) -> str:
    """A word-start guard that never rejects what `tokens` would split out: `_` separates
    tokens but is a word character to `\\b`, and RE2's `\\b` is ASCII-only."""
    return r"(?:\b|_)" if word[:1].isascii() and word[:1].isalnum() else ""
