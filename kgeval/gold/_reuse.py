"""The previous gold's entries of one KG, for an incremental rebuild, without holding them.

A KG file of 10,000 entries of up to 2,000 rows is gigabytes once parsed. The rebuild needs,
per question, only the keys that decide reuse (query hash, data hash, engine and version, row
cap) and, for the questions reused, the entry itself when it is written. So the file is read
twice: `index_kg_file` streams it once (its sha256 checked against the manifest before anything
is used) and keeps each entry's keys and byte span; `PreviousEntry.read` reads one entry's span
back when it is written into the new gold, checks the span's sha256 and the entry's result
hash (as `GoldReader.read_kg` does), and the entry is dropped once written. Memory follows the
largest entry, not the KG.
"""

from __future__ import annotations

import codecs
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import ValidationError

from kgeval.errors import CheckFailed
from kgeval.gold._model import GoldEntry, GoldFailure
from kgeval.gold._store import GoldReader, StoreIdentity

_CHUNK = 1 << 18
_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class PreviousEntry:
    """One entry of a previous gold: what decides its reuse, and where its bytes are."""

    question_id: str
    query_sha256: str
    row_cap: int
    identity: StoreIdentity
    """Engine, engine version and data it was built on."""
    path: Path
    offset: int
    """Byte offset of the entry's JSON object in `path`."""
    length: int
    span_sha256: str
    """sha256 of those bytes, read while the whole file's sha256 was checked."""

    def read(self) -> GoldEntry:
        """The entry, parsed from its bytes; CheckFailed when they changed since they were
        indexed or its result does not match its result_sha256."""
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            raw = fh.read(self.length)
        if hashlib.sha256(raw).hexdigest() != self.span_sha256:
            raise CheckFailed(f"{self.path}: entry {self.question_id} changed while the rebuild read the file")
        try:
            entry = GoldEntry.model_validate_json(raw)
        except ValidationError as exc:
            raise CheckFailed(f"{self.path}: entry {self.question_id} is not a gold entry: {exc.errors()[0]['msg']}") from None
        if entry.result.sha256() != entry.result_sha256:
            raise CheckFailed(f"{entry.kg}/{entry.question_id}: result does not match its result_sha256 ({self.path})")
        return entry


@dataclass
class PreviousKg:
    """One KG's entries (indexed, not held) and failures in the previous gold, by question id."""

    entries: dict[str, PreviousEntry]
    failures: dict[str, GoldFailure]


def index_kg_file(reader: GoldReader, name: str) -> PreviousKg:
    """Index one KG file of a verified gold version (`<kg>.json`): its sha256 is checked against
    the manifest while it is streamed, and CheckFailed raised (nothing indexed) when it differs
    or the file is not a gold file."""
    path = reader.version / name
    try:
        with open(path, "rb") as fh:
            stream = _JsonStream(fh, path)
            previous = _scan_kg(stream)
            stream.read_to_end()
    except FileNotFoundError:
        raise CheckFailed(f"{path}: missing; build it with `kgeval gold rebuild`") from None
    except OSError as exc:
        raise CheckFailed(f"{path}: unreadable: {exc}") from None
    if stream.sha256() != reader.manifest.files.get(name):
        raise CheckFailed(f"{name}: sha256 differs from the gold manifest ({path})")
    return previous


def _scan_kg(stream: _JsonStream) -> PreviousKg:
    """{"kg": ..., "entries": [...], "failures": [...]} in any key order and spacing."""
    previous = PreviousKg({}, {})
    stream.expect("{")
    while stream.peek() != "}":
        key, _, _ = stream.value()
        stream.expect(":")
        if key in ("entries", "failures") and stream.peek() == "[":
            stream.expect("[")
            while stream.peek() != "]":
                _add(previous, key, stream)
                if stream.peek() == ",":
                    stream.expect(",")
            stream.expect("]")
        else:
            stream.value()
        if stream.peek() == ",":
            stream.expect(",")
    stream.expect("}")
    return previous


def _add(previous: PreviousKg, key: str, stream: _JsonStream) -> None:
    item, offset, span = stream.value()
    try:
        if key == "failures":
            failure = GoldFailure.model_validate(item)
            previous.failures[failure.question_id] = failure
            return
        identity = StoreIdentity(engine=item["engine"], engine_version=item["engine_version"], data_sha256=item["kg_sha256"])
        entry = PreviousEntry(
            question_id=item["question_id"], query_sha256=item["query_sha256"], row_cap=item["row_cap"], identity=identity,
            path=stream.path, offset=offset, length=len(span), span_sha256=hashlib.sha256(span).hexdigest(),
        )  # fmt: skip
    except (KeyError, TypeError, ValidationError) as exc:
        what = "a failure" if key == "failures" else "an entry"
        raise CheckFailed(f"{stream.path}: not a gold file: {what} at byte {offset} is malformed ({type(exc).__name__}: {exc})") from None
    previous.entries[entry.question_id] = entry


class _JsonStream:
    """A JSON text read from a binary file a chunk at a time, each value parsed by the standard
    library's C decoder and handed over with its byte offset and bytes; the file's sha256 is
    computed on the way. Holds the current value's text, not the file."""

    def __init__(self, fh: BinaryIO, path: Path) -> None:
        self.path = path
        self._fh = fh
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._digest = hashlib.sha256()
        self._text = ""
        self._pos = 0
        self._offset = 0
        """Byte offset in the file of `_text[_pos]`."""
        self._eof = False

    def sha256(self) -> str:
        return self._digest.hexdigest()

    def read_to_end(self) -> None:
        """Consume what follows the JSON value (a newline): the file's hash covers every byte."""
        self._skip_whitespace()
        if self._pos < len(self._text) or self._more():
            raise self._malformed("text after the end of the gold file")

    def peek(self) -> str:
        """The next character that is not whitespace (not consumed); CheckFailed at the end."""
        self._skip_whitespace()
        if self._pos >= len(self._text) and not self._more():
            raise self._malformed("the file ends early")
        return self._text[self._pos]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise self._malformed(f"expected {char!r}")
        self._advance(1)

    def value(self) -> tuple[Any, int, bytes]:
        """The next JSON value, its byte offset and its bytes."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self._text, self._pos)
                if end < len(self._text) or self._eof:  # a number at the very end may go on
                    break
            except json.JSONDecodeError:
                if self._eof:
                    raise self._malformed("not valid JSON") from None
            self._more()
        offset, span = self._offset, self._text[self._pos : end].encode()
        self._pos, self._offset = end, self._offset + len(span)
        return value, offset, span

    def _skip_whitespace(self) -> None:
        while True:
            text, pos = self._text, self._pos
            while pos < len(text) and text[pos] in _WHITESPACE:
                pos += 1
            self._advance(pos - self._pos)
            if self._pos < len(self._text) or not self._more():
                return

    def _advance(self, chars: int) -> None:
        """Consume `chars` characters (ASCII punctuation and whitespace: one byte each)."""
        self._pos += chars
        self._offset += chars

    def _more(self) -> bool:
        """Append the next chunk (at least as large as what is held: reading a large value
        is linear); False at the end of the file."""
        if self._eof:
            return False
        chunk = self._fh.read(max(_CHUNK, len(self._text) - self._pos))
        self._digest.update(chunk)
        try:
            decoded = self._utf8.decode(chunk, final=not chunk)
        except UnicodeDecodeError:
            raise self._malformed("not UTF-8 text") from None
        self._text = self._text[self._pos :] + decoded
        self._pos = 0
        self._eof = not chunk
        return bool(chunk)

    def _malformed(self, what: str) -> CheckFailed:
        return CheckFailed(f"{self.path}: not a gold file: {what} at byte {self._offset}")
