"""`kgeval gold seal`: sign a gold written without the integrity key, leaving it as it is.

A gold built before a key was configured has no tag, and is refused once the key is set. A
rebuild would sign it, but as a new version with another manifest hash: every run made on the
old one would then name a gold that is no longer in force. Sealing checks the gold's content
first (every file against the manifest, every entry's result against its hash: a damaged gold
is refused, never blessed), then writes the HMAC of the manifest beside it (`TAG_FILE`). The
manifest's bytes, hence its hash, the gold's identity, are unchanged (DESIGN invariant 9: only
the key holder's word makes evidence signed; nothing stored changes).
"""

from __future__ import annotations

from pathlib import Path

from kgeval._files import write_atomic
from kgeval.errors import CheckFailed, InputError
from kgeval.gold._layout import MANIFEST, TAG_FILE, writer_lock
from kgeval.gold._store import GoldReader, _each_kg_file
from kgeval.integrity import check_tag, sign


def seal_gold(gold_dir: Path, key: bytes) -> tuple[str, bool]:
    """(the gold's manifest sha256, whether a tag was written): False when it was signed with
    this key already. InputError (exit 2) naming what is wrong for a damaged gold, or one signed
    with another key; nothing is written then."""
    with writer_lock(gold_dir):  # no rebuild switches another version in meanwhile
        try:
            reader = GoldReader(gold_dir, check_key=False)
            for _ in _each_kg_file(reader, reader.index_kg):  # every file's hash; each entry's result hash
                pass
            existing = reader.tag()
            if existing is not None:
                check_tag(reader.manifest.signed_payload(), existing, key, str(reader.version / MANIFEST))
                return reader.manifest_sha256, False
        except CheckFailed as exc:
            raise InputError(f"{gold_dir}: not sealed: {exc}") from None
        write_atomic(reader.version / TAG_FILE, sign(reader.manifest.signed_payload(), key) + "\n")
        return reader.manifest_sha256, True
