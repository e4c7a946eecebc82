"""Which rows of an Arrow string column hold any of many literal strings (the prefilters).

Hyperscan (a multi-literal SIMD matcher, the kind `rg` uses) scans the column's rows joined
by line breaks (one Arrow copy) in one call; numpy maps the end of each match to its row
through the column's offsets. No Python runs per row: only one callback per match. No needle
Hyperscan looks for holds a line break, so no match spans two rows, and every match inside a
row is reported; a word needle's bounds (a non-letter, the start or the end) may be the break
between rows. It reads a megabyte in ~1 ms where RE2 over one alternation of the same strings
(Arrow's `match_substring_regex`) takes ~3.

`pattern` is the same set as one RE2 expression: `mask` gives what RE2 gives with it, case
folded the same way (Unicode simple case folding: KELVIN SIGN is `k`, `ſ` is `s`, `É` is `é`;
no full folding: `ß` is not `ss`), except that RE2's ASCII `\\b` misses a word whose first
letter is KELVIN SIGN or LONG S, which `mask` finds. Without Hyperscan (a platform without
its wheel) `mask` runs that expression in Arrow: slower, the same rows. The texts must be
valid UTF-8, as Arrow strings are.
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
_SCAN_LIMIT = 1 << 30
"""Bytes scanned in one call at most (Hyperscan takes an unsigned int length)."""
_compiled = threading.local()
"""Per thread (a database's scratch space serves one scan at a time): Needles -> database."""


@dataclass(frozen=True)
class Needles:
    """Strings to look for: `literals` anywhere; `words` (question features) as a whole word
    spelled like them or with `s` or `ing` after (the spellings whose `feature` is the word):
    not right after an ASCII letter or digit (`_` separates words), nor right before one."""

    literals: frozenset[str] = frozenset()
    words: frozenset[str] = frozenset()
    ignore_case: bool = False

    @classmethod
    def of(cls, literals: Iterable[str] = (), words: Iterable[str] = (), *, ignore_case: bool = False) -> Needles:
        return cls(frozenset(x for x in literals if x), frozenset(x for x in words if x), ignore_case)

    def __bool__(self) -> bool:
        return bool(self.literals or self.words)

    def __getstate__(self) -> dict:
        # The compiled database travels with the needles: compiling the prefilter's costs a
        # worker ~0.3 CPU-s, loading it ~0.1 ms.
        blobs = [hyperscan.dumpb(d) for d in self._database()] if hyperscan is not None and self else None
        return {"literals": self.literals, "words": self.words, "ignore_case": self.ignore_case, "database": blobs}

    def __setstate__(self, state: dict) -> None:
        blobs = state.pop("database", None)
        for name, value in state.items():
            object.__setattr__(self, name, value)
        if blobs is not None and hyperscan is not None:
            _compiled.__dict__.setdefault("databases", {})[self] = tuple(_loaded(b) for b in blobs)

    @cached_property
    def pattern(self) -> str:
        """The needles as one expression, valid in Python `re` and RE2 (case: `ignore_case`)."""
        parts = sorted(_escape(x) for x in self.literals) + [_as_word(w, _escape(w), "$") for w in sorted(self.words)]
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
        """`mask` of one array by Hyperscan, a window of rows (at most `_SCAN_LIMIT` bytes) at a time."""
        offsets = _offsets(array)
        found = np.zeros(len(array), dtype=bool)
        first = 0
        while first < len(array):
            last = max(first + 1, int(np.searchsorted(offsets, offsets[first] + _SCAN_LIMIT, "right")) - 1)
            found[first:last] = self._found_in(array.slice(first, last - first))
            first = last
        if array.null_count:
            found &= pc.is_valid(array).to_numpy(zero_copy_only=False)
        if self._multiline:  # literals with a line break could join two rows: RE2 row by row
            found |= re2_mask(array, self._multiline.pattern, ignore_case=self.ignore_case)
        return found

    def _found_in(self, rows: pa.Array) -> np.ndarray:
        """Rows with a match: one scan of the rows joined by line breaks (which no needle
        Hyperscan looks for holds, so no match spans two rows; a word's bounds may be one)."""
        offsets = _offsets(rows)
        found = np.zeros(len(rows), dtype=bool)
        if offsets[-1] == offsets[0]:
            return found
        ends: list[int] = []
        variants: list[int] = []
        joined = _joined(rows, "\n")
        for database in self._database():
            database.scan(joined, match_event_handler=lambda i, s, e, f, c: (variants if i == _VARIANT_ID else ends).append(e))
        starts = offsets - offsets[0] + np.arange(len(offsets))  # row i's first byte in the joined bytes
        # A match's last byte is its needle's, or a word's bound: a byte of its row or the break after it.
        found[np.searchsorted(starts, np.array(ends, dtype=np.int64) - 1, "right") - 1] = True
        if variants:  # what the caseless Unicode mode finds in them: the rows read with k and s for the variants
            at = np.unique(np.searchsorted(starts, np.array(variants, dtype=np.int64) - 1, "right") - 1)
            spelled = rows.take(pa.array(at, pa.int64()))
            for variant, letter in _ASCII_VARIANTS.items():
                spelled = pc.replace_substring(spelled, variant, letter)
            found[at] = self._found_in(spelled)
        return found

    @cached_property
    def _multiline(self) -> Needles:
        return Needles.of([x for x in self.literals if "\n" in x], ignore_case=self.ignore_case)

    def _database(self) -> tuple:  # of hyperscan.Database
        """The needles' databases, compiled once per thread: the ASCII needles' over bytes and
        the others' over UTF-8 (`_compile`)."""
        cache = _compiled.__dict__.setdefault("databases", {})
        if self not in cache:
            ascii_, other = [], []
            for needle, is_word in sorted([(x, False) for x in self.literals if "\n" not in x] + [(w, True) for w in self.words]):
                (ascii_ if needle.isascii() else other).append((needle, is_word))
            bytewise = [_expression(n, w) for n, w in ascii_]
            unicode = [_expression(n, w) for n, w in other]
            cache[self] = tuple(
                _compile(expressions, self.ignore_case, utf8) for expressions, utf8 in ((bytewise, False), (unicode, True)) if expressions
            )
        return cache[self]


def _joined(rows: pa.Array, separator: str) -> pa.Buffer:
    """The rows' bytes with `separator` between rows (one copy, in Arrow)."""
    return pc.binary_join(_as_one_list(rows), pa.scalar(separator, rows.type))[0].as_buffer()


def _as_word(word: str, escaped: str, end: str, plural: str = "s") -> str:
    """A word needle's expression: not glued to an ASCII letter or digit on either side, with
    the `s` or `ing` a feature drops. (RE2's `\\b` is ASCII-only and `_` is a word character
    to it, hence `(?:\\b|_)`; Hyperscan has `^` at the start of the scanned bytes.) A word not
    starting with an ASCII letter or digit is a plain literal."""
    if not (word[:1].isascii() and word[:1].isalnum()):
        return escaped
    start = r"(?:\b|_)" if end == "$" else r"(?:^|[^0-9A-Za-z])"
    return f"{start}{escaped}(?:{plural}|ing)?(?:[^0-9A-Za-z]|{end})"


_ASCII_VARIANTS = {"\u212a": "k", "\u017f": "s"}
"""The only characters outside ASCII that Unicode simple case folding (Hyperscan's caseless
UTF-8 mode) takes for an ASCII letter or digit: KELVIN SIGN for `k`, LONG S for `s` (checked
over every code point, tests/guards/test_needles.py)."""
_VARIANT_ID = 1 << 30
"""The id of the expression matching `_ASCII_VARIANTS` in a caseless bytes database."""


def _expression(needle: str, is_word: bool) -> bytes:
    """A needle's Hyperscan expression."""
    literal = _hyperscan_literal(needle)
    return _as_word(needle, literal.decode(), "\\z").encode() if is_word else literal


def _compile(expressions: list[bytes], ignore_case: bool, utf8: bool = True):  # noqa: ANN202 - a hyperscan.Database
    """A block-mode database of `expressions`. Over UTF-8 with Unicode classes and case
    folding, or (`utf8` False: ASCII expressions) over bytes, which compiles the prefilter's
    ~4x faster (~0.1 CPU-s instead of ~0.4, paid once per check): no ASCII expression can
    match inside a multi-byte character, and a word bound (`[^0-9A-Za-z]`) is then a byte of
    one. Caseless over bytes, the database also reports `_ASCII_VARIANTS` (id `_VARIANT_ID`):
    `Needles._found_in` reads the rows holding one again with the letter they fold to, so
    that it finds what the Unicode mode finds."""
    unicode = hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_UCP if utf8 else 0
    flags = unicode | (hyperscan.HS_FLAG_CASELESS if ignore_case else 0)
    ids = list(range(len(expressions)))
    if ignore_case and not utf8:
        expressions = [*expressions, "|".join("".join(f"\\x{b:02x}" for b in c.encode()) for c in _ASCII_VARIANTS).encode()]
        ids.append(_VARIANT_ID)
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=ids, elements=len(expressions), flags=[flags] * len(expressions))
    return database


def _hyperscan_literal(needle: str) -> bytes:
    """`needle` as a Hyperscan expression matching exactly it: ASCII punctuation and spaces as
    `\\xHH`, everything else as itself (UTF-8)."""
    return "".join(c if c.isalnum() or not c.isascii() else f"\\x{ord(c):02x}" for c in needle).encode()


def _offsets(array: pa.Array) -> np.ndarray:
    wide = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    raw = np.frombuffer(array.buffers()[1], np.int64 if wide else np.int32)
    return raw[array.offset : array.offset + len(array) + 1].astype(np.int64)


def rows_with_bytes(array: pa.Array, ranges: tuple[tuple[int, int], ...]) -> np.ndarray:
    """The rows (indexes, ascending) holding a byte in one of the inclusive `ranges` of ASCII
    bytes: one Hyperscan scan of the column's data buffer where it lies (no copy: one byte
    cannot span two rows; ~0.5 ms per MB), each match's end mapped to its row through the
    offsets. Without Hyperscan the same class in RE2. For bytes that are rare in text (control
    characters): a callback per match."""
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    if hyperscan is None:
        expression = "[" + "".join(f"\\x{{{lo:x}}}-\\x{{{hi:x}}}" for lo, hi in ranges) + "]"
        return np.flatnonzero(re2_mask(array, expression))
    offsets = _offsets(array)
    data = array.buffers()[2]
    if data is None or offsets[-1] == offsets[0]:
        return np.zeros(0, dtype=np.int64)
    database = _byte_class_database(ranges)
    view, ends = memoryview(data), []
    add = ends.append
    for start in range(int(offsets[0]), int(offsets[-1]), _SCAN_LIMIT):
        end = min(start + _SCAN_LIMIT, int(offsets[-1]))
        database.scan(view[start:end], match_event_handler=lambda i, s, e, f, c, base=start: add(base + e))
    return np.unique(np.searchsorted(offsets, np.array(ends, dtype=np.int64) - 1, "right") - 1)


def _byte_class_database(ranges: tuple[tuple[int, int], ...]):  # noqa: ANN202 - a hyperscan.Database
    cache = _compiled.__dict__.setdefault("byte_classes", {})
    if ranges not in cache:
        expression = ("[" + "".join(f"\\x{lo:02x}-\\x{hi:02x}" for lo, hi in ranges) + "]").encode()
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(expressions=[expression], ids=[0], elements=1, flags=[0])
        cache[ranges] = database
    return cache[ranges]


def re2_mask(texts: list[str] | pa.Array, pattern: str, *, ignore_case: bool = False) -> np.ndarray:
    """Which texts `pattern` finds something in: RE2 (Arrow's regex engine), linear time."""
    array = texts if isinstance(texts, (pa.Array, pa.ChunkedArray)) else pa.array(texts, pa.large_string())
    found = pc.match_substring_regex(array, pattern=pattern, ignore_case=ignore_case)
    return pc.fill_null(found, False).to_numpy(zero_copy_only=False)


def _escape(literal: str) -> str:
    """Escape for both Python `re` and RE2 (pyarrow): a backslash before each metacharacter."""
    return "".join("\\" + c if c in _SPECIAL else c for c in literal)


def whole_words(lines: pa.Array, words: tuple[str, ...], table: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """Each occurrence of one of `words` as a whole word of a line whose bytes `table` maps
    (word bytes to themselves, separators to spaces): (line, index in `words`) of each, in
    one Hyperscan scan of the lines joined by spaces. None without Hyperscan."""
    if hyperscan is None:
        return None
    database, ids = _words_database(words)
    lines = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    offsets = _offsets(lines)
    data = lines.buffers()[2]
    if database is None or data is None or offsets[-1] == offsets[0]:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    joined = _joined(lines, " ")
    found: list[int] = []
    add = found.extend
    database.scan(b" " + joined.to_pybytes().translate(table) + b" ", match_event_handler=lambda i, s, e, f, c: add((i, e)))
    hits = np.array(found, dtype=np.int64).reshape(-1, 2)
    starts = offsets - offsets[0] + np.arange(len(offsets)) + 1  # line i's first byte in the scanned bytes
    return np.searchsorted(starts, hits[:, 1] - 2, "right") - 1, ids[hits[:, 0]]


def occurrences(text: str, needles: Iterable[str], *, ignore_case: bool = False) -> dict[str, int]:
    """How often each needle occurs in `text`, to rank needles by rarity: one Hyperscan scan
    (overlapping occurrences counted), or `str.count` per needle without it."""
    needles = sorted({n for n in needles if n})
    if hyperscan is None or not needles:
        haystack = text.lower() if ignore_case else text
        return {n: haystack.count(n.lower() if ignore_case else n) for n in needles}
    counts = [0] * len(needles)

    def found(i: int, start: int, end: int, flags: int, context: object) -> None:
        counts[i] += 1

    # Bytes, ASCII case only: a count for ranking, compiled ~10x faster than with UTF-8 and UCP.
    expressions = [_hyperscan_literal(n) for n in needles]
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    flags = hyperscan.HS_FLAG_CASELESS if ignore_case else 0
    database.compile(expressions=expressions, ids=list(range(len(needles))), elements=len(needles), flags=[flags] * len(needles))
    database.scan(text.encode("utf-8", "replace"), match_event_handler=found)
    return dict(zip(needles, counts))


def _as_one_list(lines: pa.Array) -> pa.Array:
    wide = pa.types.is_large_string(lines.type)
    bounds = pa.array([0, len(lines)], pa.int64() if wide else pa.int32())
    return (pa.LargeListArray if wide else pa.ListArray).from_arrays(bounds, pc.fill_null(lines, ""))


def words_database(words: tuple[str, ...]) -> bytes | None:
    """`whole_words`' compiled database for `words`, serialized (None without Hyperscan)."""
    database = _words_database(words)[0] if hyperscan is not None else None
    return hyperscan.dumpb(database) if database is not None else None


def load_words_database(words: tuple[str, ...], blob: bytes | None) -> None:
    """Install a `words_database` in this thread (~0.1 ms; compiling takes ~20 ms)."""
    if blob is not None and hyperscan is not None:
        spelled = [i for i, w in enumerate(words) if w.isascii() and w.isalnum()]
        _compiled.__dict__.setdefault("words", {})[words] = _loaded(blob), np.array(spelled, dtype=np.int64)


def _loaded(blob: bytes):  # noqa: ANN202 - a hyperscan.Database
    database = hyperscan.loadb(blob, hyperscan.HS_MODE_BLOCK)
    database.scratch = hyperscan.Scratch(database)
    return database


def _words_database(words: tuple[str, ...]):  # noqa: ANN202 - (hyperscan.Database, index in `words` per id)
    """` word ` for each word the byte table can spell (ASCII letters and digits)."""
    cache = _compiled.__dict__.setdefault("words", {})
    if words not in cache:
        spelled = [i for i, w in enumerate(words) if w.isascii() and w.isalnum()]
        if not spelled:
            cache[words] = None, np.zeros(0, dtype=np.int64)
            return cache[words]
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        expressions = [b"\\x20" + _hyperscan_literal(words[i]) + b"\\x20" for i in spelled]
        database.compile(expressions=expressions, ids=list(range(len(spelled))), elements=len(spelled), flags=[0] * len(spelled))
        cache[words] = database, np.array(spelled, dtype=np.int64)
    return cache[words]
