"""Where a gold lives on disk, and how a new one replaces the old in ONE rename.

Layout (DESIGN invariant 11: a kill leaves the old gold intact or the new one complete):

    gold/current -> v-<hash>            symlink: the gold in force; replaced atomically
    gold/v-<hash>/MANIFEST.json         one complete gold version, never edited once switched in
    gold/v-<hash>/<kg>.json, display/   (hash: the first 16 hex digits of its manifest's sha256)
    gold/v-<hash>/MANIFEST.tag          the manifest's HMAC tag, when `kgeval gold seal` signed it later
    gold/MANIFEST.json -> current/MANIFEST.json, gold/<kg>.json, gold/display
                                        links through `current`, so older paths still resolve
    gold/.staging-*/                    a version being written (left by a killed rebuild: junk)

A new version is written in full in a staging directory beside the old one, renamed to its
`v-<hash>` name, and switched in by renaming a fresh symlink over `current`. Readers resolve
`current` once and read that version only, so a switch during a read cannot mix two golds.
A run holds the version it resolved (`hold_version`: a shared lock on its directory) until it
ends, and garbage collection passes over a held version: a rebuild during the run neither
changes nor removes the gold the run is judged against.
A directory whose MANIFEST.json is a plain file (the layout before versions, or a version
directory named directly) is read as it is.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kgeval._files import sha256_file
from kgeval.errors import CheckFailed, InputError

MANIFEST = "MANIFEST.json"
TAG_FILE = "MANIFEST.tag"
"""The manifest's HMAC tag written beside it by `kgeval gold seal` (a gold written without the
key, signed later): the manifest's bytes, and so its hash, the gold's identity, stay as they were."""
DISPLAY_DIR = "display"
ATTACHED_DIRS = (f"{DISPLAY_DIR}/", "neighbours/", "suites/")
"""Directories of a version whose files are checked against their hash but are not KG gold
files: displays, and a test suite's neighbour KGs and records (`_suite`)."""
CURRENT = "current"
LOCK = ".lock"
STAGING_PREFIX = ".staging-"
_VERSION = re.compile(r"v-[0-9a-f]{16}")
DAMAGED_GOLD = "the gold is damaged or was edited: `kgeval gold rebuild` writes it anew (or restore the gold directory from a backup)"
"""What to do about a gold file that is unreadable or does not match its manifest."""


def version_name(manifest_sha256: str) -> str:
    return f"v-{manifest_sha256[:16]}"


def version_dir(gold_dir: Path) -> Path:
    """The directory holding the gold in force: `current`'s target, read once, or `gold_dir`
    itself when it holds a plain MANIFEST.json. CheckFailed when there is no gold."""
    gold_dir = Path(gold_dir)
    pointer = gold_dir / CURRENT
    if pointer.is_symlink():
        target = os.readlink(pointer)
        if not _VERSION.fullmatch(target):
            raise CheckFailed(f"{pointer}: points at {target!r}, not a gold version directory of {gold_dir} (v-<hash>)")
        return gold_dir / target
    if pointer.exists():
        raise CheckFailed(f"{pointer}: not a symlink to a gold version; rebuild with `kgeval gold rebuild`")
    return gold_dir


def has_gold(gold_dir: Path) -> bool:
    """True when `gold_dir` holds a gold in either layout (it may still fail to verify)."""
    return (Path(gold_dir) / CURRENT).is_symlink() or (Path(gold_dir) / MANIFEST).is_file()


def version_dirs(gold_dir: Path) -> list[Path]:
    """Every complete version directory, oldest first."""
    if not Path(gold_dir).is_dir():
        return []
    found = [p for p in Path(gold_dir).iterdir() if p.is_dir() and not p.is_symlink() and _VERSION.fullmatch(p.name)]
    return sorted(found, key=lambda p: (p.stat().st_mtime, p.name))


def new_staging_dir(gold_dir: Path) -> Path:
    Path(gold_dir).mkdir(parents=True, exist_ok=True)
    staging = Path(gold_dir) / f"{STAGING_PREFIX}{os.getpid()}-{time.time_ns()}"
    staging.mkdir()
    return staging


def publish(gold_dir: Path, staging: Path, manifest_sha256: str) -> Path:
    """Move a complete staging directory to its version name and switch `current` to it.

    The switch is one rename of a new symlink over `current`; everything before it only adds
    files that no reader looks at. Returns the version directory now in force."""
    gold_dir = Path(gold_dir)
    name = version_name(manifest_sha256)
    target = gold_dir / name
    if target.is_dir() and _intact(target, manifest_sha256):
        shutil.rmtree(staging)  # the same gold is already there, complete: nothing to add
        os.utime(target)  # it is the newest version again, for garbage collection
    else:
        if target.exists():  # same name, other bytes (edited by hand): never switch to it
            name = version_name(hashlib.sha256(f"{manifest_sha256}{time.time_ns()}".encode()).hexdigest())
            target = gold_dir / name
        _fsync_tree(staging)
        os.rename(staging, target)
    _link(gold_dir / CURRENT, name)
    _fsync_dir(gold_dir)
    _compat_links(gold_dir, target)
    return target


def _intact(version: Path, manifest_sha256: str) -> bool:
    """True when `version` holds exactly the files its manifest (of this sha256) names."""
    try:
        raw = (version / MANIFEST).read_bytes()
        files = json.loads(raw)["files"]
        return hashlib.sha256(raw).hexdigest() == manifest_sha256 and all(
            sha256_file(version / name) == digest for name, digest in files.items()  # streamed: a KG file can be GBs
        )
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _link(path: Path, target: str) -> None:
    """Make `path` a symlink to `target` in one rename (a plain file there is replaced)."""
    if path.is_symlink() and os.readlink(path) == target:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{time.time_ns()}.tmp")
    os.symlink(target, tmp)
    try:
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def _compat_links(gold_dir: Path, version: Path) -> None:
    """gold/<name> -> current/<name> for the manifest, each KG file and the display directory,
    so paths of the layout before versions still resolve; links to files no longer in the
    gold are removed. Made after the switch: no reader depends on them."""
    wanted = {MANIFEST, DISPLAY_DIR} | {p.name for p in version.glob("*.json")}
    for name in sorted(wanted):
        path = gold_dir / name
        if path.is_dir() and not path.is_symlink():  # the display directory of the old layout
            aside = gold_dir / f"{STAGING_PREFIX}old-{name}-{time.time_ns()}"
            os.rename(path, aside)
            shutil.rmtree(aside)
        _link(path, f"{CURRENT}/{name}")
    for path in gold_dir.iterdir():
        if path.is_symlink() and path.name not in wanted and path.name != CURRENT and os.readlink(path).startswith(f"{CURRENT}/"):
            path.unlink()


def collect_garbage(gold_dir: Path, keep: int) -> list[str]:
    """Remove staging leftovers and all but the `keep` newest versions (the one in force is
    always kept). Call only while holding the writer lock; returns what was removed."""
    gold_dir = Path(gold_dir)
    in_force = version_dir(gold_dir).name
    removed = []
    for path in gold_dir.iterdir():
        if path.name.startswith(STAGING_PREFIX) and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
    older = [p for p in version_dirs(gold_dir) if p.name != in_force]
    for path in older[: max(len(older) - max(keep - 1, 0), 0)]:
        if _held(path):  # a run is judged against it: removed by a later rebuild
            continue
        # renamed first, so a kill during the removal leaves staging junk, never a half version
        aside = gold_dir / f"{STAGING_PREFIX}gc-{path.name}-{time.time_ns()}"
        os.rename(path, aside)
        shutil.rmtree(aside, ignore_errors=True)
        removed.append(path.name)
    return removed


class VersionHold:
    """A version directory kept from garbage collection until `close` (or the end of a `with`
    block, or of the process): a shared lock on the directory, which `collect_garbage` tests.
    A directory that cannot be opened is not held (reading it will say why)."""

    def __init__(self, version: Path) -> None:
        self.version = Path(version)
        try:
            self._fd: int | None = os.open(self.version, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            self._fd = None
            return
        fcntl.flock(self._fd, fcntl.LOCK_SH)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None

    def __enter__(self) -> VersionHold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def hold_version(version: Path) -> VersionHold:
    """Hold `version` from garbage collection (`VersionHold`) until the hold is closed."""
    return VersionHold(version)


def _held(version: Path) -> bool:
    """Whether a run holds `version` (`hold_version`)."""
    try:
        fd = os.open(version, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@contextmanager
def writer_lock(gold_dir: Path) -> Iterator[None]:
    """One writer at a time per gold directory (a second rebuild is refused, exit 2)."""
    Path(gold_dir).mkdir(parents=True, exist_ok=True)
    with open(Path(gold_dir) / LOCK, "a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"{gold_dir}: another `kgeval gold rebuild` is writing this gold; wait for it to finish") from None
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    """Directory entries of a finished version reach the disk before it is switched in (its
    files were fsynced as they were written)."""
    for path in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        _fsync_dir(path)
