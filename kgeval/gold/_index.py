"""Reading a KG's gold file one entry at a time, so a run holds the entries of the questions in
flight, not the holdout (issue 13: a 10,000-question run over a 1M-triple KG held ~2.1 GB).

`scan_kg_file` streams the file once, block by block, and checks what `GoldReader.read_kg`
checks: the file's sha256 against the manifest (a half-written or edited file is refused with
the same message), and each entry's result against its `result_sha256`. Of each entry it keeps
only an `EntrySummary`: what the checklist reads (query hash, engine, data hash, form, total)
and where the entry lies in the file, with the sha256 of those bytes. `read_entry` reads one
entry back and refuses it unless its bytes are exactly those the scan verified, so a file edited
after the scan is caught entry by entry, not read past.

The scan parses JSON with the standard library's C decoder (no pydantic, no Term per cell);
`read_entry` builds the typed `GoldEntry` (pydantic at the edge) of one entry only.

Golds repeat results (several questions with one answer list, count or ASK). Each summary keeps
the sha256 of its result's bytes as stored (`result_digest`) and where they lie: the scan spells a result
canonically (the costly part of checking result_sha256) once per distinct content, and a run
reads each distinct result into one object (`read_entry`'s `results`), which the judges then
prepare once. Within a file's scan, a result whose text is one verified before is found by a
comparison of the text, not decoded again (`_Repeats`).
"""

from __future__ import annotations

import codecs
import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from collections.abc import Callable, MutableMapping
from typing import Any, BinaryIO, NamedTuple

from pydantic import ValidationError

from kgeval._files import not_a_file
from kgeval.errors import CheckFailed
from kgeval.gold._layout import DAMAGED_GOLD, MANIFEST
from kgeval.gold._model import GoldEntry, GoldFailure
from kgeval.stores import QueryResult, answer_sha256, canonical_spelling, share_terms

_BLOCK = 1 << 20
_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class EntrySummary(NamedTuple):
    """One verified entry of a KG file, without its rows: what the checklist reads, and where
    `read_entry` finds the entry again."""

    question_id: str
    kg: str
    query_sha256: str
    engine: str
    engine_version: str
    kg_sha256: str
    form: str
    """"select" or "ask"."""
    total: int
    """The result's true number of rows."""
    path: Path
    """The KG file holding the entry."""
    offset: int
    """Byte offset of the entry's JSON object in the file."""
    length: int
    """Its length in bytes."""
    sha256: str
    """sha256 of those bytes, as the scan read (and verified) them."""
    result_digest: str = ""
    """sha256 of the bytes of the entry's result as stored: entries whose results have the same
    digest hold the same result, so a run reads and prepares it once."""
    result_offset: int = 0
    """Byte offset of the result in the entry's bytes."""
    result_length: int = 0
    """Its length in bytes."""


@dataclass
class KgIndex:
    """One KG file scanned: its entries' summaries in file order, and its failures."""

    name: str
    """The file's path relative to the gold version (`<kg>.json`)."""
    kg: str
    entries: list[EntrySummary] = field(default_factory=list)
    failures: list[GoldFailure] = field(default_factory=list)


class _Malformed(Exception):
    """The file is not a gold KG file (reported once its sha256 is known to match)."""


class _Text:
    """A UTF-8 file read block by block: `text[pos:]` is what is not consumed yet, `offset` the
    byte offset of `text[pos]` in the file, `digest` the sha256 of every byte read so far."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle, self.digest = handle, hashlib.sha256()
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.text, self.pos, self.offset, self.eof = "", 0, 0, False

    def read_more(self, size: int = _BLOCK) -> None:
        block = self.handle.read(size)
        self.digest.update(block)
        self.eof = not block
        try:
            self.text = self.text[self.pos :] + self.decoder.decode(block, final=self.eof)
        except UnicodeDecodeError as exc:
            raise _Malformed(f"not UTF-8 at byte {self.offset}: {exc.reason}") from None
        self.pos = 0

    def read_to_end(self) -> str:
        while not self.eof:
            self.read_more()
        return self.digest.hexdigest()

    def next_char(self, consume: bool = True) -> str:
        """The next character that is not JSON whitespace ("" at the end of the file)."""
        while True:
            end = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
            self.offset += end - self.pos  # whitespace is ASCII: one byte a character
            self.pos = end
            if self.pos < len(self.text) or self.eof:
                break
            self.read_more()
        char = self.text[self.pos : self.pos + 1]
        if consume and char:
            self.pos, self.offset = self.pos + 1, self.offset + len(char.encode())
        return char

    def expect(self, chars: str) -> str:
        char = self.next_char()
        if char not in chars or not char:
            raise _Malformed(f"expected {' or '.join(repr(c) for c in chars)} at byte {self.offset}, found {char!r}")
        return char

    def value(self, decode: Callable[[str, int], tuple[Any, int]] = _DECODER.raw_decode) -> tuple[Any, bytes]:
        """The next JSON value (an object, array or string: they end with their own closing
        character, so a block boundary cannot cut one into a shorter valid value) and its bytes.
        `decode(text, pos)`: what is decoded of it, and where it ends (JSONDecodeError when the
        text ends before the value does)."""
        self.next_char(consume=False)
        size = _BLOCK
        while True:
            try:
                obj, end = decode(self.text, self.pos)
                break
            except json.JSONDecodeError as exc:
                if self.eof:
                    raise _Malformed(f"invalid JSON at byte {self.offset}: {exc.msg}") from None
                self.read_more(size)  # the value continues past this block
                size *= 2
            except (ValueError, RecursionError) as exc:  # a number of over 4,300 digits, nesting too deep: never a gold value
                raise _Malformed(f"invalid JSON at byte {self.offset}: {exc if isinstance(exc, ValueError) else 'nested too deep'}") from None
        raw = self.text[self.pos : end].encode()
        self.pos, self.offset = end, self.offset + len(raw)
        return obj, raw


def scan_kg_file(path: Path, name: str, expected_sha256: str | None) -> KgIndex:
    """Stream one KG file: CheckFailed when its sha256 is not `expected_sha256` (missing,
    half-written, edited), when it is not a gold file, or when an entry's result does not match
    its result_sha256 (the same checks and messages as `GoldReader.read_kg`)."""
    if (kind := not_a_file(path)) is not None:  # a FIFO would be waited on for ever
        raise CheckFailed(f"{path}: {kind}, not a file: {DAMAGED_GOLD}")
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        raise CheckFailed(f"{path}: missing; build it with `kgeval gold rebuild`") from None
    except OSError as exc:
        raise CheckFailed(f"{path}: unreadable ({exc.strerror or exc}): {DAMAGED_GOLD}") from None
    with handle:
        text = _Text(handle)
        index, problem = KgIndex(name=name, kg=""), None
        try:
            problem = _scan_object(text, index, path)
        except _Malformed as exc:
            problem = f"{path}: not a gold file: {exc}"
        try:
            digest = text.read_to_end()
        except _Malformed:
            digest = ""
    if digest != expected_sha256:
        raise CheckFailed(f"{name}: sha256 differs from {MANIFEST} ({path}): {DAMAGED_GOLD}")
    if problem is not None:
        raise CheckFailed(problem)
    return index


def _scan_object(text: _Text, index: KgIndex, path: Path) -> str | None:
    """Read `{"kg": ..., "entries": [...], "failures": [...]}` (any key order, any spacing) into
    `index`; returns the first entry whose result does not match its hash, as a message."""
    mismatch = None
    text.expect("{")
    if text.next_char(consume=False) == "}":
        raise _Malformed("no entries")
    while True:
        key, _ = text.value()
        text.expect(":")
        if key == "entries":
            mismatch = _scan_entries(text, index, path)
        elif key == "failures":
            failures, _ = text.value()
            index.failures = [_failure(f, path) for f in failures]
        else:
            value, _ = text.value()
            if key == "kg":
                index.kg = value
        if text.expect(",}") == "}":
            break
    if text.next_char():
        raise _Malformed(f"text after the end at byte {text.offset}")
    return mismatch


def _scan_entries(text: _Text, index: KgIndex, path: Path) -> str | None:
    mismatch = None
    text.expect("[")
    if text.next_char(consume=False) == "]":
        text.next_char()
        return None
    repeats = _Repeats()
    decode = partial(_entry_and_result, repeats=repeats)
    while True:
        text.next_char(consume=False)  # the entry starts after the whitespace before it
        offset = text.offset
        (entry, result), raw = text.value(decode)
        summary, matches = _summary(entry, result, raw, path, offset)
        if matches:
            repeats.add(result, entry["result"], entry["result_sha256"])
        index.entries.append(summary)
        if not matches and mismatch is None:
            mismatch = f"{summary.kg}/{summary.question_id}: result does not match its result_sha256 ({path})"
        if text.expect(",]") == "]":
            return mismatch


def _entry_and_result(text: str, pos: int, repeats: _Repeats) -> tuple[tuple[dict, _StoredResult | None], int]:
    """Decode the JSON object at `pos` member by member, as `raw_decode` would (the last of
    duplicate keys wins), keeping where its "result" lies: ((the object, the result as
    stored), end). A result whose text is one met before in the scan (`repeats`) is not
    decoded again. JSONDecodeError when the text ends or breaks before the object does."""
    start, obj, result = pos, {}, None
    if text[pos : pos + 1] != "{":
        raise json.JSONDecodeError("Expecting '{'", text, pos)
    pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
    if text[pos : pos + 1] == "}":
        return (obj, None), pos + 1
    while True:
        key, pos = _DECODER.raw_decode(text, pos)
        if not isinstance(key, str):
            raise json.JSONDecodeError("Expecting property name", text, pos)
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        if text[pos : pos + 1] != ":":
            raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
        pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
        seen = repeats.find(text, pos) if key == "result" else None
        if seen is not None:
            obj[key], end = seen.head, pos + len(seen.text)
            result = _StoredResult(len(text[start:pos].encode()), seen.length, seen.digest, None, seen)
        else:
            obj[key], end = _DECODER.raw_decode(text, pos)
            if key == "result":
                result = _StoredResult.decoded(text[start:pos], text[pos:end])
        pos = _SPACE.match(text, end).end()  # type: ignore[union-attr]
        char = text[pos : pos + 1]
        if char == "}":
            return (obj, result), pos + 1
        if char != ",":  # also a number cut at the end of a block: the caller reads on
            raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
        pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]


class _StoredResult(NamedTuple):
    offset: int
    """Byte offset of the entry's result in the entry's JSON."""
    length: int
    """Length of the result's JSON bytes as stored."""
    digest: str
    """Their sha256."""
    text: str | None = None
    """The result's JSON text, when it was decoded (not a repeat)."""
    seen: _Seen | None = None
    """The same text met before in the scan (and verified then), or None."""

    @classmethod
    def decoded(cls, before: str, result_text: str) -> _StoredResult:
        raw = result_text.encode()
        return cls(len(before.encode()), len(raw), hashlib.sha256(raw).hexdigest(), result_text)


class _Seen(NamedTuple):
    """A result's text met in a scan, whose result matched the result_sha256 beside it."""

    text: str
    length: int
    """Its length in UTF-8 bytes."""
    digest: str
    """sha256 of those bytes."""
    head: dict
    """What `_summary` reads of the result (form and total)."""
    result_sha256: str
    """The hash its result matched: the hash of any identical text."""


_HEAD_CHARS = 256
_REPEATS_BUDGET_CHARS = 16 << 20


class _Repeats:
    """Results verified in one KG file's scan, found again by their text. Golds repeat results
    (the same list, count or ASK for several questions: half the entries of bench/run.py's
    holdout), and decoding a result to find where it ends was most of the scan. A text that
    starts with the whole text of a result met before holds that very result there (a JSON
    object ends at its closing brace), so it is compared at C speed, not decoded, spelled or
    hashed again. The texts kept are bounded (`_REPEATS_BUDGET_CHARS`); past that, results are
    decoded as before."""

    def __init__(self) -> None:
        self._by_head: dict[str, list[_Seen]] = {}
        self._left = _REPEATS_BUDGET_CHARS

    def find(self, text: str, pos: int) -> _Seen | None:
        """The result met before whose whole text starts at `text[pos]`, or None."""
        for seen in self._by_head.get(text[pos : pos + _HEAD_CHARS], ()):
            if text.startswith(seen.text, pos):
                return seen
        return None

    def add(self, stored: _StoredResult | None, result: Any, result_sha256: Any) -> None:
        """Remember a result just decoded that matched `result_sha256` (while the budget lasts)."""
        if stored is None or stored.text is None or not isinstance(result_sha256, str) or len(stored.text) > self._left:
            return
        head = {"form": result["form"], "total": result.get("total", 0)}
        self._by_head.setdefault(stored.text[:_HEAD_CHARS], []).append(_Seen(stored.text, stored.length, stored.digest, head, result_sha256))
        self._left -= len(stored.text)


def _summary(entry: Any, stored: _StoredResult | None, raw: bytes, path: Path, offset: int) -> tuple[EntrySummary, bool]:
    """The entry's summary, and whether its result matches its result_sha256."""
    try:
        result = entry["result"]
        assert stored is not None  # there is a result
        summary = EntrySummary(
            entry["question_id"], entry["kg"], entry["query_sha256"], entry["engine"], entry["engine_version"], entry["kg_sha256"],
            result["form"], result.get("total", 0), path, offset, len(raw), hashlib.sha256(raw).hexdigest(),
            stored.digest, stored.offset, stored.length,
        )  # fmt: skip
        if stored.seen is not None:  # the very text of a result that hashed to seen.result_sha256
            return summary, entry["result_sha256"] == stored.seen.result_sha256
        return summary, _matches(result, stored.digest, entry["result_sha256"])
    except (KeyError, TypeError, AttributeError) as exc:
        raise _Malformed(f"entry at byte {offset}: missing or malformed {exc}") from None


_VERIFIED: dict[str, str] = {}
"""Result digest -> the result_sha256 its result was found to match, in this process: golds
repeat results (the same list or count for several questions), and whether a result matches a
hash is a function of the two, so a result verified once is not spelled out again."""
_VERIFIED_LIMIT = 1 << 16


def _matches(result: Any, digest: str, result_sha256: Any) -> bool:
    """Whether the result (as parsed) hashes to `result_sha256` (on plain cells: the same hash
    `QueryResult.sha256` computes on Terms)."""
    if _VERIFIED.get(digest) == result_sha256:
        return True
    lines = ["\t".join([_spelling(c) for c in row]) for row in result.get("rows", [])]
    found = answer_sha256(result["form"], result.get("boolean"), tuple(result.get("vars", [])), lines, result.get("total", 0), result.get("ordered", False))
    if found != result_sha256:
        return False
    if len(_VERIFIED) >= _VERIFIED_LIMIT:
        _VERIFIED.clear()
    _VERIFIED[digest] = result_sha256
    return True


def _spelling(cell: Any) -> str:
    """`cell_spelling` of a cell as stored (a JSON object, or null), spelt from the object: no
    tuple built per cell (this was half of the scan's time on spelling), an IRI in place."""
    if cell is None:
        return ""
    kind, value = cell["type"], cell["value"]
    if kind == "uri":
        return f"<{value}>"
    return canonical_spelling(kind, value, cell.get("datatype"), cell.get("lang"))


def _failure(item: Any, path: Path) -> GoldFailure:
    try:
        return GoldFailure.model_validate(item)
    except ValidationError as exc:
        raise _Malformed(f"failure record: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}") from None


def read_entry(summary: EntrySummary, results: MutableMapping[str, QueryResult] | None = None) -> GoldEntry:
    """The entry `summary` describes, read from its file: CheckFailed unless its bytes are those
    the scan verified (the file was edited or replaced since) and it is a valid entry.

    `results` (result digest -> result) shares results between entries: an entry whose result
    is there (read before from identical JSON) gets that very object, and a new one is added.
    Judges prepare a gold once per result object (`judges.GoldCache`), so questions that share
    a gold share its preparation."""
    try:
        with open(summary.path, "rb") as handle:
            handle.seek(summary.offset)
            raw = handle.read(summary.length)
    except OSError as exc:
        raise CheckFailed(f"{summary.path}: unreadable ({exc.strerror or exc}): {DAMAGED_GOLD}") from None
    if hashlib.sha256(raw).hexdigest() != summary.sha256:
        raise CheckFailed(
            f"{summary.kg}/{summary.question_id}: gold entry changed on disk since the gold was verified ({summary.path}); "
            "a gold version is never edited: check it with `kgeval gold verify`, rebuild with `kgeval gold rebuild`"
        )
    shared = results.get(summary.result_digest) if results is not None and summary.result_digest else None
    try:
        if shared is None:
            entry = GoldEntry.model_validate_json(raw)
        else:  # the same bytes as the scan's, so the same result: the one already built
            start, end = summary.result_offset, summary.result_offset + summary.result_length
            fields = json.loads(raw[:start] + b"null" + raw[end:])
            fields["result"] = shared
            entry = GoldEntry.model_validate(fields)
    except ValidationError as exc:
        raise CheckFailed(f"{summary.path}: not a gold entry ({summary.question_id}): {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}") from None
    if shared is None:
        share_terms(entry.result.rows)
        if results is not None and summary.result_digest:
            results[summary.result_digest] = entry.result
    return entry
