"""The gold directory: one JSON file per KG, display files apart, a manifest of hashes.

Layout:
    gold/MANIFEST.json        holdout manifest hash, engines, sha256 of every file below
    gold/<kg>.json            {"kg": ..., "entries": [GoldEntry, ...]}
    gold/display/<kg>.json    {question_id: "first 10 ... (N total)"}; no judge reads it
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from pydantic import ValidationError

from kgeval._files import sha256_file, write_atomic, write_json_atomic
from kgeval.errors import CheckFailed, InputError
from kgeval.gold._model import GoldEntry
from kgeval.holdout import Holdout, read_manifest

MANIFEST = "MANIFEST.json"
DISPLAY_DIR = "display"


def write_gold(out_dir: Path, entries: list[GoldEntry], displays: dict[str, str], holdout_sha: str) -> None:
    """Write every gold file atomically, then the manifest last (a crash leaves it stale, never
    pointing at half-written files: verify would fail, not pass)."""
    out_dir = Path(out_dir)
    by_kg: dict[str, list[GoldEntry]] = defaultdict(list)
    for entry in entries:
        by_kg[entry.kg].append(entry)
    files: dict[str, str] = {}
    for kg, kg_entries in sorted(by_kg.items()):
        gold_path = out_dir / f"{kg}.json"
        payload = {"kg": kg, "entries": [e.model_dump(mode="json") for e in kg_entries]}
        write_atomic(gold_path, json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n")
        files[gold_path.name] = sha256_file(gold_path)
        display_path = out_dir / DISPLAY_DIR / f"{kg}.json"
        write_json_atomic(display_path, {e.question_id: displays[e.question_id] for e in kg_entries})
        files[f"{DISPLAY_DIR}/{kg}.json"] = sha256_file(display_path)
    engines = sorted({(e.engine, e.engine_version) for e in entries})
    manifest = {
        "holdout_manifest_sha256": holdout_sha,
        "engines": [{"name": n, "version": v} for n, v in engines],
        "row_cap": entries[0].row_cap if entries else None,
        "files": files,
    }
    write_json_atomic(out_dir / MANIFEST, manifest)


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckFailed(f"{path}: missing; build it with `kgeval gold rebuild`") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckFailed(f"{path}: unreadable: {exc}") from None


def _read_manifest(gold_dir: Path) -> dict:
    manifest = _read_json(gold_dir / MANIFEST)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise CheckFailed(f"{gold_dir / MANIFEST}: not a gold manifest (no 'files' table)")
    return manifest


def load_gold(gold_dir: Path) -> dict[str, GoldEntry]:
    """Every gold entry by question id. Display files are not read."""
    gold_dir = Path(gold_dir)
    manifest = _read_manifest(gold_dir)
    gold: dict[str, GoldEntry] = {}
    for name in manifest["files"]:
        if name.startswith(f"{DISPLAY_DIR}/"):
            continue
        payload = _read_json(gold_dir / name)
        try:
            for raw in payload["entries"]:  # type: ignore[index]
                entry = GoldEntry.model_validate(raw)
                gold[entry.question_id] = entry
        except (KeyError, TypeError, ValidationError) as exc:
            raise InputError(f"{gold_dir / name}: not a gold file: {exc}") from None
    return gold


def gold_problems(gold_dir: Path, holdout: Holdout) -> list[str]:
    """Every reason the gold cannot be trusted for this holdout; empty when it can."""
    gold_dir = Path(gold_dir)
    manifest = _read_manifest(gold_dir)
    problems: list[str] = []
    for name, expected in manifest["files"].items():
        path = gold_dir / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif sha256_file(path) != expected:
            problems.append(f"{name}: sha256 differs from {MANIFEST}")
    holdout_sha = read_manifest(holdout.root)["sha256"]
    built_from = str(manifest.get("holdout_manifest_sha256"))  # type: ignore[union-attr]
    if built_from != holdout_sha:
        problems.append(f"{MANIFEST}: built from a different holdout (holdout manifest {holdout_sha[:12]}, gold says {built_from[:12]})")
    if any(not p.startswith(MANIFEST) for p in problems):
        return problems  # files are missing or altered: their entries cannot be trusted to load
    return problems + _entry_problems(load_gold(gold_dir), holdout)


def _entry_problems(gold: dict[str, GoldEntry], holdout: Holdout) -> list[str]:
    problems = []
    for question in holdout.questions():
        entry = gold.get(question.id)
        if entry is None:
            problems.append(f"{question.kg}/{question.id}: no gold entry")
        elif entry.query_sha256 != question.sparql_sha256:
            problems.append(f"{question.kg}/{question.id}: reference SPARQL changed since the gold was built")
        elif entry.result.sha256() != entry.result_sha256:
            problems.append(f"{question.kg}/{question.id}: result does not match its result_sha256")
    return problems


def verify_gold(gold_dir: Path, holdout: Holdout) -> str:
    """Raise CheckFailed listing every problem; return the gold manifest's sha256."""
    problems = gold_problems(gold_dir, holdout)
    if problems:
        raise CheckFailed(f"{gold_dir}: gold does not verify:\n  " + "\n  ".join(problems))
    return sha256_file(Path(gold_dir) / MANIFEST)
