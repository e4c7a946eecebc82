"""Writing a new gold version: one KG file at a time into a staging directory beside the gold
in force, then the manifest, then one rename switches it in (see `_layout`).

Memory follows the largest entry, not the holdout: each entry is written to its KG's file as
soon as it is built and then dropped (a holdout of one 1M-triple KG and 10,000 questions holds
one entry at a time, not 10,000). After every KG the staging directory's own manifest is
rewritten (marked partial), so a rebuild killed half-way leaves verified KG files that the
next rebuild reuses instead of executing their queries again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from kgeval._files import sha256_text, write_atomic, write_atomic_pieces
from kgeval.config import GoldConfig
from kgeval.gold._layout import DISPLAY_DIR, MANIFEST, STAGING_PREFIX, collect_garbage, new_staging_dir, publish
from kgeval.gold._model import GoldEntry, GoldFailure, display_text
from kgeval.gold._store import BuildSettings, GoldManifest, StoreIdentity, entry_identity
from kgeval.integrity import integrity_key, sign


CHECKS_VERSION = 2
"""`BuildSettings.checks` of the rebuilds this code runs."""


def build_settings(config: GoldConfig) -> BuildSettings:
    return BuildSettings(executions=config.executions, tie_probe_rows=config.tie_probe_rows, checks=CHECKS_VERSION)


class GoldWriter:
    """A new gold version being written; `commit()` switches it in."""

    def __init__(self, gold_dir: Path, holdout_sha256: str, config: GoldConfig) -> None:
        self.gold_dir = Path(gold_dir)
        self.staging = new_staging_dir(self.gold_dir)
        self._config = config
        self._manifest = GoldManifest(
            format=2, holdout_manifest_sha256=holdout_sha256, row_cap=config.row_cap, build=build_settings(config), files={}, partial=True
        )
        self._engines: set[tuple[str, str]] = set()

    def add_kg(self, kg: str, results: Iterable[GoldEntry | GoldFailure]) -> None:
        """Write one KG's gold file as `results` come (entries are written and dropped one by
        one; failures, few and small, follow them), then its display file and the partial
        manifest naming both. The file is compact JSON, entries and failures in question order
        (pydantic's own serializer: no intermediate dicts)."""
        name, display = f"{kg}.json", f"{DISPLAY_DIR}/{kg}.json"
        failures: list[GoldFailure] = []
        shown: dict[str, str] = {}
        identities: set[StoreIdentity] = set()
        written = 0
        with write_atomic_pieces(self.staging / name) as out:
            out.write(f'{{"kg":{json.dumps(kg, ensure_ascii=False)},"entries":[')
            for item in results:
                if isinstance(item, GoldFailure):
                    failures.append(item)
                    continue
                out.write(("," if written else "") + item.model_dump_json())
                written += 1
                shown[item.question_id] = display_text(item.result, self._config.display_items)
                identities.add(entry_identity(item))
                self._engines.add((item.engine, item.engine_version))
            out.write(f'],"failures":[{",".join(f.model_dump_json() for f in failures)}]}}\n')
        display_text_ = json.dumps(shown, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
        write_atomic(self.staging / display, display_text_)
        self._manifest.files[name] = out.sha256
        self._manifest.files[display] = sha256_text(display_text_)
        if identities:
            self._manifest.stores[kg] = min(identities, key=StoreIdentity.describe)
        self._write_manifest()

    def add_file(self, name: str, text: str) -> Path:
        """Write one more file of the version (a suite's neighbour KG or record, under one of
        `ATTACHED_DIRS`), named in the manifest with its sha256; its path in staging."""
        path = self.staging / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
        self._manifest.files[name] = sha256_text(text)
        return path

    def drop_file(self, name: str) -> None:
        """Take a file written by `add_file` out of the version again."""
        self._manifest.files.pop(name, None)
        (self.staging / name).unlink(missing_ok=True)

    def _write_manifest(self) -> str:
        manifest = self._manifest
        manifest.engines = [{"name": n, "version": v} for n, v in sorted(self._engines)]
        manifest.files = dict(sorted(manifest.files.items()))
        key = integrity_key()
        manifest.tag = sign(manifest.signed_payload(), key) if key is not None else None
        text = json.dumps(manifest.model_dump(mode="json", exclude_none=True), indent=1, ensure_ascii=False, sort_keys=True) + "\n"
        write_atomic(self.staging / MANIFEST, text)
        return sha256_text(text)

    def commit(self, keep_versions: int = 2) -> Path:
        """Write the final manifest and switch the new version in (one rename); then remove
        staging leftovers and versions beyond the `keep_versions` newest. Returns the version."""
        self._manifest.partial = False
        digest = self._write_manifest()
        version = publish(self.gold_dir, self.staging, digest)
        collect_garbage(self.gold_dir, keep_versions)
        return version


def latest_staging(gold_dir: Path) -> Path | None:
    """The newest staging directory a killed rebuild left with a partial manifest, if any
    (call while holding the writer lock: then no live rebuild owns it)."""
    if not Path(gold_dir).is_dir():
        return None
    found = [p for p in Path(gold_dir).iterdir() if p.name.startswith(STAGING_PREFIX) and (p / MANIFEST).is_file()]
    return max(found, key=lambda p: os.stat(p / MANIFEST).st_mtime, default=None)
