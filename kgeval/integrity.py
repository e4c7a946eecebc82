"""Keyed integrity: an HMAC key that only the service and the release owner hold.

A plain sha256 proves a file was not damaged by accident; anyone who edits a gold row can
recompute it. With a key configured, every writer of stored evidence (gold, audit and review
logs) also writes an HMAC-SHA256 tag, and every reader checks it: an edit made without the key
is detected even when the plain hashes were recomputed.

The key comes from the environment, first match wins:
- `KGEVAL_INTEGRITY_KEY`: the key itself (at least 16 bytes of text);
- `KGEVAL_INTEGRITY_KEY_FILE`: a file whose content (stripped of surrounding whitespace) is the key.
No key configured: `integrity_key()` is None and only the plain hashes are written and checked.

Make a key with `umask 077; openssl rand -hex 32 > /etc/kgeval/key` (64 characters). Evidence
written before the key was set carries no tag and is refused once it is set: sign the holdout
with `kgeval holdout seal` and the gold with `kgeval gold seal` (each after checking its content;
both manifest hashes unchanged, so runs made on them still name them).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

from kgeval.errors import CheckFailed, InputError

KEY_ENV = "KGEVAL_INTEGRITY_KEY"
KEY_FILE_ENV = "KGEVAL_INTEGRITY_KEY_FILE"
MIN_KEY_BYTES = 16


def integrity_key() -> bytes | None:
    """The configured HMAC key, or None. InputError names a key that is too short or a key
    file that cannot be read."""
    raw = os.environ.get(KEY_ENV)
    if raw is None and os.environ.get(KEY_FILE_ENV):
        path = Path(os.environ[KEY_FILE_ENV])
        return key_from_file(path, f"{path} (${KEY_FILE_ENV})")
    return None if raw is None else _checked_key(raw, f"${KEY_ENV}")


def key_from_file(path: Path, source: str | None = None) -> bytes:
    """The key a file holds (stripped of surrounding whitespace); InputError naming `source`
    (default: the file) when it cannot be read or is too short."""
    source = source or str(path)
    try:
        raw = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{source}: cannot read the integrity key: {exc}") from None
    return _checked_key(raw, source)


def _checked_key(raw: str, source: str) -> bytes:
    key = raw.encode("utf-8")
    if len(key) < MIN_KEY_BYTES:
        raise InputError(f"{source}: the integrity key must be at least {MIN_KEY_BYTES} bytes")
    return key


def sign(payload: str | bytes, key: bytes) -> str:
    """HMAC-SHA256 of `payload` under `key`, hex."""
    data = payload.encode("utf-8") if isinstance(payload, str) else payload
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def check_tag(payload: str | bytes, tag: str | None, key: bytes, where: str, sign_with: str = "") -> None:
    """CheckFailed naming `where` unless `tag` is the HMAC of `payload` under `key`
    (compared in constant time). A missing tag fails too: with a key configured, unsigned
    evidence is not trusted; `sign_with` names the command that signs it, for the message."""
    if not tag:
        fix = f"; {sign_with}" if sign_with else ""
        raise CheckFailed(f"{where}: no integrity tag, but an integrity key is configured (written without the key?){fix}")
    if not hmac.compare_digest(sign(payload, key), tag):
        raise CheckFailed(f"{where}: integrity tag does not match: edited without the key, or signed with another key")
