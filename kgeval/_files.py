"""Hashing, canonical JSON, reading hostile input (YAML with its alias bound, JSON, paths that
are not files) and atomic writes (files, database transactions): the one place for each of
these facts."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no insignificant whitespace: stable input for hashes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_json(obj: Any) -> str:
    return sha256_text(canonical_json(obj))


def parse_yaml(text: str, where: str = "YAML document") -> Any:
    """`yaml.safe_load`, through libyaml when PyYAML was built with it (its wheels are): the
    same safe constructor and resolver, about twice as fast on a holdout's questions files.

    Bounded: an alias is the node its anchor names, shared, so a few kilobytes of anchors and
    aliases (a YAML bomb) stand for billions of nodes, which whatever walks the document
    (validation, hashing, a run) then expands. A document standing for more nodes than its
    text has characters plus `yaml_alias_bound()` (every node written takes a character at
    least: only aliases add more), or that holds itself, is an InputError naming `where` and
    the bound. libyaml refuses nesting deeper than 1,000 levels itself."""
    import yaml  # local: most commands never read YAML

    document = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - a safe loader
    _check_expansion(document, len(text), where)
    return document


def _check_expansion(document: Any, written: int, where: str) -> None:
    """InputError when `document` stands for more than `written + yaml_alias_bound()` nodes
    (each collection walked once, however many aliases name it: linear in the document as
    parsed), or when a collection holds itself (an alias inside its own anchor)."""
    from kgeval.config import YAML_ALIAS_BOUND_VARIABLE, yaml_alias_bound
    from kgeval.errors import InputError

    limit = written + yaml_alias_bound()
    nodes: dict[int, int] = {}  # a collection's id -> the nodes it stands for, itself included
    open_: set[int] = set()  # the collections being walked: the path from the document down
    stack: list[tuple[Any, bool]] = [(document, False)] if isinstance(document, (list, dict)) else []
    while stack:
        node, walked = stack.pop()
        values = list(node.values()) if isinstance(node, dict) else node
        if walked:
            open_.discard(id(node))
            nodes[id(node)] = 1 + len(node) * isinstance(node, dict) + sum(nodes.get(id(v), 1) for v in values)
            if nodes[id(node)] > limit:
                raise InputError(
                    f"{where}: stands for more than {limit:,} nodes through its aliases, far more than it holds (a YAML bomb?): "
                    f"refused by the YAML alias bound ({YAML_ALIAS_BOUND_VARIABLE}={limit - written}; docs/security.md)"
                )
        elif id(node) in open_:
            raise InputError(f"{where}: an alias inside its own anchor (a document that holds itself): refused")
        elif id(node) not in nodes:
            open_.add(id(node))
            stack.append((node, True))
            stack.extend((v, False) for v in values if isinstance(v, (list, dict)))


def parse_json(text: str | bytes, where: str, what: str = "valid JSON") -> Any:
    """`json.loads`, every way it fails on a hostile file an InputError naming `where`: bad
    syntax, a number over Python's 4,300-digit limit (ValueError), nesting past the recursion
    limit (RecursionError), bytes that are not UTF-8; these were tracebacks."""
    from kgeval.errors import InputError

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not {what}: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise InputError(f"{where}: not {what}: nested too deep") from None
    except ValueError as exc:  # UnicodeDecodeError, an integer of more than 4,300 digits
        raise InputError(f"{where}: not {what}: {exc}") from None


def present(path: Path) -> bool:
    """Whether anything is at `path`: a file, a directory, or a link, even one to nowhere or to
    itself (`Path.exists` says False for those). State that is present but cannot be read is
    damaged, never absent (DESIGN invariant 9)."""
    return path.exists() or path.is_symlink()


_NOT_FILES = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_a_file(path: Path | str) -> str | None:
    """What is at `path` (links followed) when it is a FIFO, a device or a socket: "a FIFO",
    "a character device", ...; None otherwise (a regular file, nothing, or a directory, which
    every reader's open fails on and names as damaged). Opening a FIFO waits for a writer and
    a device never ends: an input is checked before it is opened."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return next((name for test, name in _NOT_FILES if test(mode)), None)


def check_input_file(path: Path | str, what: str) -> None:
    """InputError `PATH: WHAT is a FIFO, not a file` (or a device, or a socket); nothing for
    anything else (the reader names what is wrong with it)."""
    from kgeval.errors import InputError

    kind = not_a_file(path)
    if kind is not None:
        raise InputError(f"{path}: {what} is {kind}, not a file")


def read_yaml(path: Path, what: str, missing_hint: str = "") -> Any:
    """Parse a YAML file; InputError naming the file (and `missing_hint` when it is absent)."""
    from kgeval.errors import InputError

    check_input_file(path, what)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: {what} missing" + (f" ({missing_hint})" if missing_hint else "")) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read {what} ({exc.strerror or exc}): damaged? {RESTORE}") from None
    return parse_yaml_bytes(data, path, what)


def parse_yaml_bytes(data: bytes, path: Path, what: str) -> Any:
    """Parse a YAML file's bytes; InputError naming the file when they are not UTF-8 YAML, or
    when there are none: a file emptied to 0 bytes (a cut write, a failed copy) is damaged,
    never read as an empty document and so as every default (DESIGN invariant 9). A file
    that holds only comments or `{}` is an empty document."""
    import yaml  # local: most commands never read YAML

    from kgeval.errors import InputError

    if not data.strip():
        raise InputError(f"{path}: {what} is empty ({len(data)} bytes): damaged or cut short; {RESTORE} (a document meant to be empty holds `{{}}`)")
    try:
        return parse_yaml(data.decode("utf-8"), f"{path}: {what}")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: {what} is not UTF-8 text ({exc}): damaged? {RESTORE}") from None
    except yaml.YAMLError as exc:  # its marks name the text parsed, "<unicode string>": the file is named instead
        named = str(exc).replace('"<unicode string>"', str(path))
        raise InputError(f"{path}: {what} is not valid YAML: {named}\nFix it, or if it was damaged, {RESTORE}") from None


RESTORE = "restore it from a backup"


@contextmanager
def writing_to(path: Path, what: str) -> Iterator[None]:
    """Writing `path`, a file or directory the user named (`-o`, `--report-json`): an OS error
    (a directory in the way that cannot be created, no permission, a directory where the file
    goes) is an InputError naming `path`, what was being written and the OS's reason, not a
    traceback. The writers under it leave nothing partial (temporary names, renamed)."""
    from kgeval.errors import InputError

    try:
        yield
    except OSError as exc:
        raise InputError(f"{path}: cannot write {what}: {_os_reason(Path(path), exc)}") from None


def _os_reason(path: Path, exc: OSError) -> str:
    """The OS's reason, naming the directory on the way to `path` that caused it, when one did
    (the temporary file beside `path` is not named: the user never gave it)."""
    reason = exc.strerror or str(exc)
    culprit = Path(exc.filename) if isinstance(exc.filename, str) else None
    if culprit is None or culprit == path or culprit not in path.parents:
        return reason
    if culprit.exists() and not culprit.is_dir():
        return f"{culprit} is not a directory"
    return f"{culprit}: {reason}"


def write_atomic(path: Path, text: str) -> None:
    """Write to a temporary file beside `path`, fsync, then rename over it.

    A crash or a failed write leaves the old file as it was (DESIGN invariant 11).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; these files are meant to be shared
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class HashedWriter:
    """A text file being written piece by piece (`write_atomic_pieces`); `sha256` of all its
    text once closed."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self._digest = hashlib.sha256()
        self.sha256 = ""

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
        self._digest.update(data)
        self._handle.write(data)


@contextmanager
def write_atomic_pieces(path: Path) -> Iterator[HashedWriter]:
    """`write_atomic` for text too large to hold at once: write it piece by piece; on leaving
    the block the file is fsynced and renamed over `path`, and `.sha256` is the hash of its
    text. An error inside the block leaves the old file as it was (DESIGN invariant 11)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)
        with os.fdopen(fd, "wb") as fh:
            writer = HashedWriter(fh)
            yield writer
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        writer.sha256 = writer._digest.hexdigest()
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, indent=1, ensure_ascii=False, sort_keys=True) + "\n")


@contextmanager
def transaction(con: Any) -> Iterator[Any]:
    """BEGIN ... COMMIT on a database connection (DuckDB's): all or nothing; on any error,
    ROLLBACK and re-raise."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
