"""Reading a gold: the ONE verified loader every command goes through.

Layout of one version (see `_layout` for how versions are switched):
    MANIFEST.json        holdout manifest hash, engines, build settings, sha256 of every file
                         below, and with an integrity key configured an HMAC tag over all that
    <kg>.json            {"kg": ..., "entries": [GoldEntry, ...], "failures": [GoldFailure, ...]}
    display/<kg>.json    {question_id: "first 10 ... (N total)"}; no judge reads it

Every read checks, before anything is used: the manifest's tag (when a key is configured: an
edit that recomputed the plain hashes is caught), each file's sha256 against the manifest, and
each entry's result against its `result_sha256`. A gold that fails is refused (CheckFailed,
exit 1), never read past.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kgeval._files import canonical_json, not_a_file, sha256_bytes, sha256_file
from kgeval.errors import CheckFailed, StaleGold
from kgeval.gold._index import EntrySummary, KgIndex, read_entry, scan_kg_file
from kgeval.gold._layout import ATTACHED_DIRS, DAMAGED_GOLD, MANIFEST, TAG_FILE, version_dir
from kgeval.gold._model import GoldEntry, GoldFailure
from kgeval.holdout import Holdout, KnowledgeGraph, read_manifest
from kgeval.integrity import KEY_ENV, KEY_FILE_ENV, check_tag, integrity_key
from kgeval.stores import QueryResult, Store


class StoreIdentity(BaseModel, frozen=True):
    """Which engine served which data: what a gold was built on, or what would run now."""

    engine: str
    """Store name, e.g. "oxigraph-embedded"."""
    engine_version: str
    """The store's version."""
    data_sha256: str
    """Hash of the data it serves (files, or the declared data version of a remote store)."""

    def describe(self) -> str:
        return f"{self.engine} {self.engine_version} over data {self.data_sha256[:12]}"


class BuildSettings(BaseModel, frozen=True):
    """The gold settings besides the row cap that shape an entry: an entry is reused only when
    they are unchanged."""

    executions: int
    """`gold.executions` of the rebuild."""
    tie_probe_rows: int
    """`gold.tie_probe_rows` of the rebuild."""
    checks: int = 1
    """Version of the checks a rebuild runs on each entry (tie probes, determinism scans):
    entries built by older checks are built again. 2: a sub-select's LIMIT/OFFSET is probed."""


class GoldManifest(BaseModel):
    """MANIFEST.json of one gold version."""

    model_config = ConfigDict(extra="forbid")

    format: int = 1
    """1: the layout before failed entries and build settings; 2: this one."""
    holdout_manifest_sha256: str
    """The sealed holdout manifest the gold was built from."""
    engines: list[dict[str, str]] = Field(default_factory=list)
    """Every (name, version) of the engines that executed the entries."""
    stores: dict[str, StoreIdentity] = Field(default_factory=dict)
    """Per KG: the engine and data it was built on."""
    row_cap: int | None = None
    """Rows kept per entry."""
    build: BuildSettings | None = None
    """Settings of the rebuild (None in format 1)."""
    files: dict[str, str]
    """sha256 of every file of the version, by path relative to it."""
    partial: bool = False
    """True only in the staging directory of a rebuild still running (or killed): the KGs
    finished so far, which the next rebuild reuses. Never true in a version switched in."""
    tag: str | None = None
    """HMAC-SHA256 of the manifest without this field, under the integrity key
    (`kgeval.integrity`); absent when the gold was written without a key (`kgeval gold seal`
    then writes it beside the manifest: `TAG_FILE`)."""

    def signed_payload(self) -> str:
        return canonical_json(self.model_dump(mode="json", exclude={"tag"}))


def store_identity(store: Store) -> StoreIdentity:
    return StoreIdentity(engine=store.name, engine_version=store.version, data_sha256=store.data_sha256)


def entry_identity(entry: GoldEntry) -> StoreIdentity:
    return StoreIdentity(engine=entry.engine, engine_version=entry.engine_version, data_sha256=entry.kg_sha256)


def summary_identity(entry: EntrySummary) -> StoreIdentity:
    return StoreIdentity(engine=entry.engine, engine_version=entry.engine_version, data_sha256=entry.kg_sha256)


class KgGold(BaseModel):
    """One KG file of a gold (`<kg>.json`)."""

    kg: str
    """KG id."""
    entries: list[GoldEntry]
    """Its questions' entries, in question order."""
    failures: list[GoldFailure] = Field(default_factory=list)
    """Its failed reference queries (absent in format 1)."""


class GoldReader:
    """A gold version opened for reading: its manifest is parsed and its tag checked; each KG
    file is verified when read (one KG in memory at a time, for the rebuild's reuse)."""

    def __init__(self, gold_dir: Path, *, check_key: bool = True) -> None:
        """`check_key=False` only for `kgeval gold seal`, which checks the content itself."""
        self.gold_dir = Path(gold_dir)
        self.version = version_dir(self.gold_dir)
        path = self.version / MANIFEST
        raw = _read_bytes(path)
        self.manifest_sha256 = sha256_bytes(raw)
        try:
            self.manifest = GoldManifest.model_validate_json(raw)
        except ValidationError as exc:
            raise CheckFailed(f"{path}: not a gold manifest ({exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}): {DAMAGED_GOLD}") from None
        key = integrity_key() if check_key else None
        if key is not None:
            check_tag(
                self.manifest.signed_payload(), self.tag(), key, str(path),
                sign_with=f"sign this gold with the key set: `kgeval gold seal --gold {self.gold_dir}` (its content checked first; its manifest hash unchanged, so runs "
                f"already made still name it), or unset {KEY_ENV} and {KEY_FILE_ENV} to use it unsigned",
            )  # fmt: skip

    def tag(self) -> str | None:
        """The manifest's tag: written in it by a rebuild with the key, or beside it by `gold seal`."""
        if self.manifest.tag:
            return self.manifest.tag
        side = self.version / TAG_FILE
        return _read_bytes(side).decode("ascii", "replace").strip() if side.is_file() else None

    @property
    def kg_files(self) -> list[str]:
        return [name for name in self.manifest.files if not name.startswith(ATTACHED_DIRS)]

    def read_kg(self, name: str) -> KgGold:
        """One KG file (`<kg>.json`), its hash and every entry's result hash checked."""
        path = self.version / name
        raw = _read_bytes(path)
        if sha256_bytes(raw) != self.manifest.files.get(name):
            raise CheckFailed(f"{name}: sha256 differs from {MANIFEST} ({path}): {DAMAGED_GOLD}")
        try:
            kg = KgGold.model_validate_json(raw)  # one pass in pydantic's own JSON parser
        except ValidationError as exc:
            raise CheckFailed(f"{path}: not a gold file ({exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}): {DAMAGED_GOLD}") from None
        for entry in kg.entries:
            if entry.result.sha256() != entry.result_sha256:
                raise CheckFailed(f"{entry.kg}/{entry.question_id}: result does not match its result_sha256 ({path})")
        return kg

    def index_kg(self, name: str) -> KgIndex:
        """One KG file streamed (`_index.scan_kg_file`): the same checks as `read_kg`, holding
        one entry at a time; entries stay on disk. A file scanned before in this process at the
        same sha256 is only hashed again, not parsed again (its entries' bytes are checked
        against the scan when read)."""
        path, expected = self.version / name, self.manifest.files.get(name)
        key = (os.path.realpath(path), expected)  # never raises: a link loop is named when read
        scanned = _SCANNED.get(key)
        if scanned is not None:
            if not path.is_file() or sha256_file(path) != expected:
                raise CheckFailed(f"{name}: sha256 differs from {MANIFEST} ({path}): {DAMAGED_GOLD}")
            return scanned
        scanned = scan_kg_file(path, name, expected)
        while len(_SCANNED) >= _SCANNED_LIMIT:
            _SCANNED.pop(next(iter(_SCANNED)))
        _SCANNED[key] = scanned
        return scanned

    def check_file(self, name: str) -> bytes:
        """A file that is not read as a KG gold file (a display file, a suite's neighbour KG or
        record): its hash checked; its bytes."""
        path = self.version / name
        raw = _read_bytes(path)
        if name not in self.manifest.files or sha256_bytes(raw) != self.manifest.files[name]:
            raise CheckFailed(f"{name}: sha256 differs from {MANIFEST} ({path}): {DAMAGED_GOLD}")
        return raw


def _read_bytes(path: Path) -> bytes:
    if (kind := not_a_file(path)) is not None:  # a FIFO would be waited on for ever
        raise CheckFailed(f"{path}: {kind}, not a file: {DAMAGED_GOLD}")
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise CheckFailed(f"{path}: missing; build it with `kgeval gold rebuild`") from None
    except OSError as exc:
        raise CheckFailed(f"{path}: unreadable ({exc.strerror or exc}): {DAMAGED_GOLD}") from None


@dataclass
class Gold:
    """A whole verified gold version."""

    version: Path
    """The version directory read (resolved once from `current`)."""
    manifest: GoldManifest
    manifest_sha256: str
    """sha256 of the version's MANIFEST.json: what runs record as `gold_manifest_sha256`."""
    entries: dict[str, GoldEntry]
    """Every entry by question id."""
    failures: dict[str, GoldFailure]
    """Every recorded failure by question id."""


T = TypeVar("T")

_SCANNED: dict[tuple[str, str | None], KgIndex] = {}
"""KG files scanned in this process, by (resolved path, sha256 the manifest expects): a run's
checklist and its dispatch scan the same files (summaries only: small)."""
_SCANNED_LIMIT = 64


@dataclass
class GoldIndex:
    """A whole gold version verified in one streamed pass (tag, every file's sha256, every
    entry's result hash), its entries left on disk: a summary per entry, `entry()` reads one."""

    version: Path
    manifest: GoldManifest
    manifest_sha256: str
    entries: dict[str, EntrySummary]
    """Every entry's summary by question id."""
    failures: dict[str, GoldFailure]
    """Every recorded failure by question id."""

    def entry(self, question_id: str, results: MutableMapping[str, QueryResult] | None = None) -> GoldEntry:
        """The verified entry of `question_id`, read from its file now (CheckFailed when there
        is none, or when its bytes changed since the scan); `results` shares equal results
        between entries (`_index.read_entry`)."""
        summary = self.entries.get(question_id)
        if summary is None:
            raise CheckFailed(f"{question_id}: no gold entry in {self.version}; rebuild with `kgeval gold rebuild`")
        return read_entry(summary, results)


def _each_kg_file(reader: GoldReader, read: Callable[[str], T], attached: Callable[[str], object] | None = None) -> Iterator[T]:
    """`read(name)` of every KG file of the version in manifest order; display files, which
    no judge reads, (and a suite's neighbours and records) are checked against their hash only,
    or by `attached(name)`, which must check it too (`GoldReader.check_file`)."""
    check = attached or reader.check_file
    for name in reader.manifest.files:
        if name.startswith(ATTACHED_DIRS):
            check(name)
        else:
            yield read(name)


def index_gold(gold_dir: Path) -> GoldIndex:
    """The gold in force verified as `read_gold` verifies it, streamed: memory follows the
    largest entry, not the gold (CheckFailed names the first problem)."""
    reader = GoldReader(gold_dir)
    entries, failures = _by_question(_each_kg_file(reader, reader.index_kg))
    return GoldIndex(reader.version, reader.manifest, reader.manifest_sha256, entries, failures)


def _by_question(kgs: Iterator) -> tuple[dict, dict[str, GoldFailure]]:
    """The entries (or their summaries) and the failures of KG files, by question id."""
    entries, failures = {}, {}
    for kg in kgs:
        entries.update((e.question_id, e) for e in kg.entries)
        failures.update((f.question_id, f) for f in kg.failures)
    return entries, failures


class GoldLoans:
    """Gold entries lent to a run's attempts: each is read from its file (verified) when its
    question's first attempt needs it and dropped when its last attempt has been judged, so a
    run holds the entries of the questions in flight, not the holdout. Thread-safe."""

    def __init__(self, gold: GoldIndex, attempts: Mapping[str, int]) -> None:
        """`attempts`: how many attempts of each question will borrow its entry."""
        self._gold, self._left = gold, dict(attempts)
        self._held: dict[str, GoldEntry] = {}
        # entries with equal results share one result object while any holder (an entry lent,
        # a judge's cache of prepared golds) keeps it: no memory of its own
        self._results: weakref.WeakValueDictionary[str, QueryResult] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    @contextmanager
    def lend(self, question_id: str) -> Iterator[GoldEntry]:
        """The entry of `question_id` for one attempt; returned when the block ends."""
        with self._lock:  # one reader at a time: two seeds of a question read it once
            entry = self._held.get(question_id)
            if entry is None:
                entry = self._held[question_id] = self._gold.entry(question_id, self._results)
        try:
            yield entry
        finally:
            with self._lock:
                left = self._left[question_id] = self._left.get(question_id, 1) - 1
                if left <= 0:
                    self._held.pop(question_id, None)
                    del self._left[question_id]

    @property
    def held(self) -> int:
        """Entries in memory now."""
        return len(self._held)


def read_gold(gold_dir: Path) -> Gold:
    """The gold in force, verified file by file (CheckFailed names the first problem)."""
    reader = GoldReader(gold_dir)
    entries, failures = _by_question(_each_kg_file(reader, reader.read_kg))
    return Gold(reader.version, reader.manifest, reader.manifest_sha256, entries, failures)


def load_gold(gold_dir: Path) -> dict[str, GoldEntry]:
    """Every gold entry by question id, after the same checks as `gold verify` makes on the
    files (tag, hashes, result hashes). Display files are checked, not returned."""
    return read_gold(gold_dir).entries


def gold_manifest_sha256(gold_dir: Path) -> str:
    """sha256 of the manifest of the gold in force (its identity for runs and comparisons)."""
    return GoldReader(gold_dir).manifest_sha256


@dataclass
class GoldStatus:
    """Why a gold cannot be trusted: corrupt (altered, missing, unreadable) or stale (intact,
    but built for another holdout, query, engine, engine version or data version); and which
    reference queries failed (`failed`: not excluded; `excluded`: excluded on record)."""

    corrupt: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    failed: dict[str, GoldFailure] = field(default_factory=dict)
    excluded: dict[str, GoldFailure] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.corrupt and not self.stale


StoreFactory = Callable[[KnowledgeGraph], Store]


def gold_status(gold_dir: Path, holdout: Holdout, store_for: StoreFactory | None = None) -> GoldStatus:
    """Check the gold against its manifest and the holdout; with `store_for` (the factory the
    rebuild or the run would use now), also against the engine and data it would run on."""
    status = GoldStatus()
    try:
        gold = index_gold(gold_dir)  # streamed: the checklist's memory does not follow the gold either
    except CheckFailed as exc:
        status.corrupt.append(str(exc))
        return status  # files are missing or altered: their entries cannot be trusted to load
    holdout_sha = read_manifest(holdout.root)["sha256"]
    built_from = gold.manifest.holdout_manifest_sha256
    if built_from != holdout_sha:
        status.stale.append(f"{MANIFEST}: built from a different holdout (holdout manifest {holdout_sha[:12]}, gold says {built_from[:12]})")
    _check_entries(gold, holdout, status)
    if store_for is not None:
        _check_stores(gold.entries, holdout, store_for, status)
    return status


def gold_problems(gold_dir: Path, holdout: Holdout, store_for: StoreFactory | None = None) -> list[str]:
    """Every reason the gold cannot be trusted for this holdout (corrupt, then stale). Failed
    reference queries are not among them: `gold_status(...).failed` lists those."""
    status = gold_status(gold_dir, holdout, store_for)
    return status.corrupt + status.stale


def _check_entries(gold: GoldIndex, holdout: Holdout, status: GoldStatus) -> None:
    for question in holdout.questions():
        entry, failure = gold.entries.get(question.id), gold.failures.get(question.id)
        if failure is not None:
            table = status.excluded if question.id in holdout.exclusions else status.failed
            table[question.id] = failure
            if failure.query_sha256 and failure.query_sha256 != question.sparql_sha256:
                status.stale.append(f"{question.kg}/{question.id}: reference query changed since it failed")
        elif entry is None:
            status.corrupt.append(f"{question.kg}/{question.id}: no gold entry")
        elif entry.query_sha256 != question.sparql_sha256:
            status.stale.append(f"{question.kg}/{question.id}: reference SPARQL changed since the gold was built")


def _check_stores(gold: dict[str, EntrySummary], holdout: Holdout, store_for: StoreFactory, status: GoldStatus) -> None:
    for kg in holdout.kgs:
        built = {summary_identity(gold[q.id]) for q in kg.questions if q.id in gold}
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


def verify_gold(gold_dir: Path, holdout: Holdout, store_for: StoreFactory | None = None) -> str:
    """Raise CheckFailed listing every problem (StaleGold when the gold is intact but stale;
    CheckFailed naming each failed reference query not excluded on record); return the gold
    manifest's sha256."""
    status = gold_status(gold_dir, holdout, store_for)
    if status.corrupt:
        lines = [f"corrupt: {p}" for p in status.corrupt] + [f"stale: {p}" for p in status.stale]
        raise CheckFailed(f"{gold_dir}: gold does not verify:\n  " + "\n  ".join(lines))
    if status.stale:
        raise StaleGold(f"{gold_dir}: gold is STALE (intact, but built for something else); rebuild it with `kgeval gold rebuild`:\n  " + "\n  ".join(status.stale))
    if status.failed:
        lines = [f"{f.kg}/{qid}: {f.error}" for qid, f in status.failed.items()]
        raise CheckFailed(
            f"{gold_dir}: {len(lines)} reference queries failed and are not excluded; fix them and rebuild, "
            "or exclude them on record (`kgeval holdout exclude QID... --why TEXT`):\n  " + "\n  ".join(lines)
        )
    return gold_manifest_sha256(gold_dir)
