"""The gold directory: one JSON file per KG, display files apart, a manifest of hashes.

Layout:
    gold/MANIFEST.json        holdout manifest hash, engines, sha256 of every file below
    gold/<kg>.json            {"kg": ..., "entries": [GoldEntry, ...]}
    gold/display/<kg>.json    {question_id: "first 10 ... (N total)"}; no judge reads it
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from kgeval._files import sha256_file, write_atomic, write_json_atomic
from kgeval.errors import CheckFailed, InputError, StaleGold
from kgeval.gold._model import GoldEntry
from kgeval.holdout import Holdout, KnowledgeGraph, read_manifest
from kgeval.stores import Store

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
        "stores": {kg: _identity(kg_entries[0]).model_dump() for kg, kg_entries in sorted(by_kg.items())},
        "row_cap": entries[0].row_cap if entries else None,
        "files": files,
    }
    write_json_atomic(out_dir / MANIFEST, manifest)


class StoreIdentity(BaseModel, frozen=True):
    """Which engine served which data: what a gold was built on, or what would run now."""

    engine: str
    engine_version: str
    data_sha256: str

    def describe(self) -> str:
        return f"{self.engine} {self.engine_version} over data {self.data_sha256[:12]}"


def store_identity(store: Store) -> StoreIdentity:
    return StoreIdentity(engine=store.name, engine_version=store.version, data_sha256=store.data_sha256)


def _identity(entry: GoldEntry) -> StoreIdentity:
    return StoreIdentity(engine=entry.engine, engine_version=entry.engine_version, data_sha256=entry.kg_sha256)


@dataclass
class GoldStatus:
    """Why a gold cannot be trusted: corrupt (altered, missing, unreadable) or stale (intact,
    but built for another holdout, query, engine, engine version or data version)."""

    corrupt: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.corrupt and not self.stale


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


def gold_status(
    gold_dir: Path, holdout: Holdout, store_for: Callable[[KnowledgeGraph], Store] | None = None
) -> GoldStatus:
    """Check the gold against its manifest and the holdout; with `store_for` (the factory the
    rebuild or the run would use now), also against the engine and data it would run on."""
    gold_dir = Path(gold_dir)
    manifest = _read_manifest(gold_dir)
    status = GoldStatus()
    for name, expected in manifest["files"].items():
        path = gold_dir / name
        if not path.is_file():
            status.corrupt.append(f"{name}: missing")
        elif sha256_file(path) != expected:
            status.corrupt.append(f"{name}: sha256 differs from {MANIFEST}")
    holdout_sha = read_manifest(holdout.root)["sha256"]
    built_from = str(manifest.get("holdout_manifest_sha256"))
    if built_from != holdout_sha:
        status.stale.append(f"{MANIFEST}: built from a different holdout (holdout manifest {holdout_sha[:12]}, gold says {built_from[:12]})")
    if status.corrupt:
        return status  # files are missing or altered: their entries cannot be trusted to load
    gold = load_gold(gold_dir)
    _check_entries(gold, holdout, status)
    if store_for is not None:
        _check_stores(gold, holdout, store_for, status)
    return status


def gold_problems(gold_dir: Path, holdout: Holdout, store_for: Callable[[KnowledgeGraph], Store] | None = None) -> list[str]:
    """Every reason the gold cannot be trusted for this holdout (corrupt, then stale)."""
    status = gold_status(gold_dir, holdout, store_for)
    return status.corrupt + status.stale


def _check_entries(gold: dict[str, GoldEntry], holdout: Holdout, status: GoldStatus) -> None:
    for question in holdout.questions():
        entry = gold.get(question.id)
        if entry is None:
            status.corrupt.append(f"{question.kg}/{question.id}: no gold entry")
        elif entry.result.sha256() != entry.result_sha256:
            status.corrupt.append(f"{question.kg}/{question.id}: result does not match its result_sha256")
        elif entry.query_sha256 != question.sparql_sha256:
            status.stale.append(f"{question.kg}/{question.id}: reference SPARQL changed since the gold was built")


def _check_stores(
    gold: dict[str, GoldEntry], holdout: Holdout, store_for: Callable[[KnowledgeGraph], Store], status: GoldStatus
) -> None:
    for kg in holdout.kgs:
        built = {_identity(gold[q.id]) for q in kg.questions if q.id in gold}
        if not built:
            continue
        now = store_identity(store_for(kg))
        for identity in sorted(built - {now}, key=lambda i: i.describe()):
            what = [name for name, a, b in (
                ("engine", identity.engine, now.engine),
                ("engine version", identity.engine_version, now.engine_version),
                ("data", identity.data_sha256, now.data_sha256),
            ) if a != b]
            status.stale.append(f"{kg.id}: STALE: another {' and '.join(what)}: gold built on {identity.describe()}, the store now is {now.describe()}")


def verify_gold(gold_dir: Path, holdout: Holdout, store_for: Callable[[KnowledgeGraph], Store] | None = None) -> str:
    """Raise CheckFailed listing every problem (StaleGold when the gold is intact but stale);
    return the gold manifest's sha256."""
    status = gold_status(gold_dir, holdout, store_for)
    if status.corrupt:
        lines = [f"corrupt: {p}" for p in status.corrupt] + [f"stale: {p}" for p in status.stale]
        raise CheckFailed(f"{gold_dir}: gold does not verify:\n  " + "\n  ".join(lines))
    if status.stale:
        raise StaleGold(f"{gold_dir}: gold is STALE (intact, but built for something else); rebuild it with `kgeval gold rebuild`:\n  " + "\n  ".join(status.stale))
    return sha256_file(Path(gold_dir) / MANIFEST)
