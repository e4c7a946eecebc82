"""The sealed holdout manifest: the sha256 of every file, one hash over them all, and with an
integrity key configured (`kgeval.integrity`) an HMAC tag of that hash.

A plain manifest proves the files were not changed by accident; anyone can edit a
questions.yaml (an order-sensitive flag, an answer form, a question's text) and seal again.
With a key, sealing signs the manifest and every check of the holdout (`holdout_problems`: the
pre-eval checklist, `holdout verify`, the commands that reseal) refuses a manifest whose tag is
missing or does not match: only a key holder can bless an edit."""

from __future__ import annotations

import json
from pathlib import Path

from kgeval._files import not_a_file, present, sha256_file, sha256_json, write_json_atomic
from kgeval.errors import CheckFailed, InputError
from kgeval.integrity import check_tag, integrity_key, sign

MANIFEST = "MANIFEST.json"


def outside_manifest(name: str) -> bool:
    """Whether a file or directory of this name is left out of the manifest, with all it holds:
    hidden entries and Python's byte-code caches. The loader skips exactly these (`_load`): a
    KG directory named `__pycache__` once added questions that a signed manifest did not cover."""
    return name.startswith(".") or name == "__pycache__"


def _holdout_files(root: Path) -> dict[str, str]:
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or rel.as_posix() == MANIFEST:
            continue
        if any(outside_manifest(part) for part in rel.parts):
            continue
        files[rel.as_posix()] = sha256_file(path)
    return files


def seal_holdout(root: Path) -> str:
    """Write MANIFEST.json for the holdout at `root` (signed when a key is configured); return
    the manifest hash."""
    files = _holdout_files(Path(root))
    digest = sha256_json(files)
    manifest: dict = {"files": files, "sha256": digest}
    key = integrity_key()
    if key is not None:
        manifest["hmac"] = sign(digest, key)
    write_json_atomic(Path(root) / MANIFEST, manifest)
    return digest


def read_manifest(root: Path) -> dict:
    manifest = sealed_manifest(root)
    if manifest is None:
        raise CheckFailed(f"{Path(root) / MANIFEST}: missing; seal the holdout with `kgeval holdout seal`")
    return manifest


def sealed_manifest(root: Path) -> dict | None:
    """The holdout's manifest; None when the holdout was never sealed (no MANIFEST.json). A
    manifest that is there but cannot be read as one (cut, zeroed, emptied, a directory) is
    damaged: CheckFailed naming it, never read as an unsealed holdout (DESIGN invariant 9)."""
    path = Path(root) / MANIFEST
    if not present(path):
        return None
    if (kind := not_a_file(path)) is not None:  # a FIFO would be waited on for ever
        raise CheckFailed(f"{path}: {DAMAGED_MANIFEST}: {kind}, not a file; {RESTORE_MANIFEST}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:  # a dangling symlink
        raise CheckFailed(f"{path}: {DAMAGED_MANIFEST}: a link to a missing file; {RESTORE_MANIFEST}") from None
    except (OSError, ValueError) as exc:  # ValueError: bad JSON or UTF-8, a number of over 4,300 digits
        raise CheckFailed(f"{path}: {DAMAGED_MANIFEST} ({exc}); {RESTORE_MANIFEST}") from None
    except RecursionError:
        raise CheckFailed(f"{path}: {DAMAGED_MANIFEST} (nested too deep); {RESTORE_MANIFEST}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise InputError(f"{path}: not a holdout manifest (no 'files' table); {RESTORE_MANIFEST}")
    return manifest


DAMAGED_MANIFEST = "holdout manifest is damaged or unreadable"
RESTORE_MANIFEST = (
    "restore it from a backup (e.g. `git checkout -- holdout/MANIFEST.json`); to seal the holdout anew instead, check its "
    "files, delete the damaged manifest and run `kgeval holdout seal`"
)


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
    key = integrity_key()
    if key is not None:
        try:
            check_tag(str(manifest.get("sha256", "")), manifest.get("hmac"), key, MANIFEST)
        except CheckFailed as exc:
            problems.append(f"{exc}; `kgeval holdout seal` with the key signs it, after checking what changed")
    return problems


def check_kg_files(root: Path, kg_id: str, files: tuple[Path, ...]) -> None:
    """Before a store loads a KG outside a run (`show`, the service's pages and `/judge`):
    CheckFailed naming each of its RDF files that is missing, unreadable or differs from the
    sealed manifest. A KG file cut, zeroed or emptied loads as a smaller or an empty graph, and
    an answer re-executed on it would show rows missing that the run found. Nothing is checked
    for a holdout never sealed (a run refuses one)."""
    manifest = sealed_manifest(root)
    if manifest is None:
        return
    listed = {name for name in manifest["files"] if name.startswith(f"{kg_id}/") and name.lower().endswith(RDF_SUFFIXES)}
    problems = [f"{Path(root) / name}: missing" for name in sorted(listed - {f"{kg_id}/{p.name}" for p in files})]
    for path in files:
        name = f"{kg_id}/{path.name}"
        try:
            same = manifest["files"].get(name) == sha256_file(path)
        except OSError as exc:
            problems.append(f"{path}: unreadable ({exc.strerror or exc})")
            continue
        if not same:
            problems.append(f"{path}: sha256 differs from {Path(root) / MANIFEST}")
    if problems:
        raise CheckFailed(
            f"KG {kg_id}: its data files do not match the sealed holdout (damaged, or changed since it was sealed): "
            + "; ".join(problems) + f"; nothing was loaded. {RESTORE_OR_RESEAL}"
        )


RDF_SUFFIXES = (".ttl", ".nt", ".nq", ".trig", ".rdf", ".owl")
"""The suffixes of a KG's data files (`_load`)."""


DECISION_FILES = ("EXCLUDED.yaml", "CONFIRMED_EMPTY.yaml")
"""Decisions on record (`_exclusions`, `_confirmed`): written only by their commands, which reseal."""


def decisions_edited(root: Path) -> list[str]:
    """The decision files that differ from the sealed manifest (edited, added or removed by
    hand since the last seal); empty when there is no manifest yet."""
    manifest = sealed_manifest(root)  # damaged: CheckFailed (whether a decision was edited is unknown)
    if manifest is None:
        return []
    expected = manifest["files"]
    actual = _holdout_files(Path(root))
    return [name for name in DECISION_FILES if expected.get(name) != actual.get(name)]


def verify_holdout(root: Path) -> str:
    """Raise CheckFailed listing every problem; return the manifest hash when sealed."""
    problems = holdout_problems(root)
    if problems:
        raise CheckFailed(f"{root}: holdout does not match {MANIFEST}:\n  " + "\n  ".join(problems) + "\n" + RESTORE_OR_RESEAL)
    return read_manifest(root)["sha256"]


RESTORE_OR_RESEAL = (
    "Fix: restore the files as sealed (from version control, e.g. `git checkout -- holdout/`, or your copy); or, if the "
    "change is meant, `kgeval holdout seal` (a new manifest: runs before it are no longer comparable) and `kgeval gold rebuild`"
)
"""What to do about a holdout that differs from its manifest."""
