"""The sealed holdout manifest: the sha256 of every file, and one hash over them all."""

from __future__ import annotations

import json
from pathlib import Path

from kgeval._files import sha256_file, sha256_json, write_json_atomic
from kgeval.errors import CheckFailed, InputError

MANIFEST = "MANIFEST.json"


def _holdout_files(root: Path) -> dict[str, str]:
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or rel.as_posix() == MANIFEST:
            continue
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            continue
        files[rel.as_posix()] = sha256_file(path)
    return files


def seal_holdout(root: Path) -> str:
    """Write MANIFEST.json for the holdout at `root`; return the manifest hash."""
    files = _holdout_files(Path(root))
    digest = sha256_json(files)
    write_json_atomic(Path(root) / MANIFEST, {"files": files, "sha256": digest})
    return digest


def read_manifest(root: Path) -> dict:
    path = Path(root) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckFailed(f"{path}: missing; seal the holdout with `kgeval holdout seal`") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckFailed(f"{path}: unreadable: {exc}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise InputError(f"{path}: not a holdout manifest (no 'files' table)")
    return manifest


def holdout_problems(root: Path) -> list[str]:
    """Every difference between the holdout on disk and its manifest; empty when sealed."""
    manifest = read_manifest(root)
    expected: dict[str, str] = manifest["files"]
    actual = _holdout_files(Path(root))
    problems = [f"{name}: missing" for name in sorted(expected.keys() - actual.keys())]
    problems += [f"{name}: not in the manifest" for name in sorted(actual.keys() - expected.keys())]
    problems += [f"{name}: sha256 differs from the manifest" for name in sorted(expected.keys() & actual.keys()) if expected[name] != actual[name]]
    if manifest.get("sha256") != sha256_json(expected):
        problems.append(f"{MANIFEST}: its own sha256 does not match its file table")
    return problems


DECISION_FILES = ("EXCLUDED.yaml", "CONFIRMED_EMPTY.yaml")
"""Decisions on record (`_exclusions`, `_confirmed`): written only by their commands, which reseal."""


def decisions_edited(root: Path) -> list[str]:
    """The decision files that differ from the sealed manifest (edited, added or removed by
    hand since the last seal); empty when there is no manifest yet."""
    try:
        expected = read_manifest(root)["files"]
    except CheckFailed:
        return []
    actual = _holdout_files(Path(root))
    return [name for name in DECISION_FILES if expected.get(name) != actual.get(name)]


def verify_holdout(root: Path) -> str:
    """Raise CheckFailed listing every problem; return the manifest hash when sealed."""
    problems = holdout_problems(root)
    if problems:
        raise CheckFailed(f"{root}: holdout does not match {MANIFEST}:\n  " + "\n  ".join(problems))
    return read_manifest(root)["sha256"]
