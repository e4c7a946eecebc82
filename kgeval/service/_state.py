"""What the service holds while it runs: the holdout, gold, judges, stores and page sessions.

The results database is NOT held open: DuckDB lets one process write a file at a time, and a
process holding a connection locks the other processes out, so `kgeval report` or `audit
record` would fail while the service idles. Each request opens the file for as long as it
needs it (`ServiceState.database`): read-only to read, read-write only to append, through
`connect_duckdb`, which waits a bounded time for another process's lock. Within the process,
one lock serializes the opens (DuckDB refuses a read-only and a read-write connection to one
file in one process at once).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from fastapi import HTTPException

from kgeval.audit import AuditLog
from kgeval.config import KgevalConfig, ServiceConfig
from kgeval.errors import InputError
from kgeval.gold import GoldEntry, Suites, has_suites, load_gold, read_suites
from kgeval.holdout import Holdout, Question, check_kg_files, load_holdout, resolve_question_id
from kgeval.judges import Judge, KgLookup, judges_from_config
from kgeval.review import ReviewLog
from kgeval.runs import ResultsDB, store_lookup
from kgeval.service._access import Access, Principal
from kgeval.service._contamination import DEFAULT_GATE_DIR, TextMatcher, matcher_for
from kgeval.stores import Store, open_store


@dataclass
class ServiceSettings:
    db: Path
    holdout: Path
    gold: Path
    config: KgevalConfig
    access: Access
    gate_dir: Path = DEFAULT_GATE_DIR
    """Schema-gate directory whose training fingerprints the contamination matcher leaves out."""

    @property
    def service(self) -> ServiceConfig:
        return self.config.service


@dataclass
class Database:
    """The results database's tables, open for one request."""

    results: ResultsDB
    audits: AuditLog
    reviews: ReviewLog


class Sessions:
    """The page's sign-in sessions: a random id (the cookie) -> the principal, until it
    expires. Kept in memory: a restarted service asks the page to sign in again; the token
    itself never leaves the sign-in request."""

    def __init__(self, lifetime_s: float) -> None:
        self._lifetime_s = lifetime_s
        self._by_id: dict[str, tuple[Principal, float]] = {}
        self._lock = threading.Lock()

    def start(self, principal: Principal) -> str:
        session_id = secrets.token_urlsafe(32)
        with self._lock:
            now = time.monotonic()
            self._by_id = {k: v for k, v in self._by_id.items() if v[1] > now}  # forget expired ones
            self._by_id[session_id] = (principal, now + self._lifetime_s)
        return session_id

    def principal(self, session_id: str | None) -> Principal | None:
        if not session_id:
            return None
        with self._lock:
            found = self._by_id.get(session_id)
        if found is None or found[1] <= time.monotonic():
            return None
        return found[0]

    def end(self, session_id: str | None) -> None:
        with self._lock:
            self._by_id.pop(session_id or "", None)


@dataclass
class ServiceState:
    settings: ServiceSettings
    holdout: Holdout
    gold: dict[str, GoldEntry]
    judges: dict[str, Judge]
    matcher: TextMatcher
    sessions: Sessions
    suites: Suites | None = None
    """The test suites beside the gold (`<gold>/suites`), verified, when there are any: the
    sample view shows the neighbour where a coincidental accept diverges."""
    lock: threading.RLock = field(default_factory=threading.RLock)
    _stores: dict[str, Store] = field(default_factory=dict)
    _lookups: dict[str, KgLookup | None] = field(default_factory=dict)
    _heavy: anyio.CapacityLimiter | None = None
    _in_flight: dict[str, int] = field(default_factory=dict)
    """Heavy requests in flight per caller (`service.heavy_per_caller`)."""

    @property
    def heavy(self) -> anyio.CapacityLimiter:
        """The pool heavy requests share (`service.heavy_workers` threads); made on first use,
        inside the event loop."""
        if self._heavy is None:
            self._heavy = anyio.CapacityLimiter(self.settings.service.heavy_workers)
        return self._heavy

    def take_heavy_turn(self, caller: str) -> bool:
        """Count one more heavy request of `caller` in flight; False (nothing counted) when it has
        `service.heavy_per_caller` already. Each turn taken is given back by `end_heavy_turn`."""
        with self.lock:
            if self._in_flight.get(caller, 0) >= self.settings.service.heavy_per_caller:
                return False
            self._in_flight[caller] = self._in_flight.get(caller, 0) + 1
            return True

    def end_heavy_turn(self, caller: str) -> None:
        with self.lock:
            left = self._in_flight.pop(caller) - 1
            if left:
                self._in_flight[caller] = left

    def authenticate(self, token: str | None, session_id: str | None) -> Principal | None:
        """The caller named by a bearer token, or else by a page session id."""
        if token is not None:
            return self.settings.access.authenticate(token)
        return self.sessions.principal(session_id)

    @classmethod
    def open(cls, settings: ServiceSettings) -> ServiceState:
        holdout = load_holdout(settings.holdout)
        state = cls(
            settings=settings,
            holdout=holdout,
            gold=load_gold(settings.gold),
            judges=judges_from_config(settings.config.judges),
            matcher=matcher_for(holdout, settings.config, settings.gate_dir),
            sessions=Sessions(settings.service.session_hours * 3600),
            suites=read_suites(settings.gold) if has_suites(settings.gold) else None,
        )
        with state.database(write=True):
            pass  # creates the file and every table, so that later readers can open it read-only
        return state

    @contextmanager
    def database(self, *, write: bool = False) -> Iterator[Database]:
        """The results database for one request: read-only unless `write`; closed afterwards,
        so no lock is held between requests. DatabaseBusy when another process holds the
        file longer than `service.db_wait_s`."""
        from kgeval._duckdb import connect_duckdb

        wait_s = self.settings.service.db_wait_s
        with self.lock, closing(connect_duckdb(self.settings.db, read_only=not write, wait_s=wait_s)):
            # while this first connection is open, the process holds the file: the three
            # below share its database instance and open at once
            with (
                ResultsDB(self.settings.db, read_only=not write) as results,
                AuditLog(self.settings.db, read_only=not write) as audits,
                ReviewLog(self.settings.db, read_only=not write) as reviews,
            ):
                yield Database(results, audits, reviews)

    def close(self) -> None:
        with self.lock:
            for store in self._stores.values():
                getattr(store, "close", lambda: None)()
            self._stores.clear()
            self._lookups.clear()

    def question(self, ref: str) -> Question:
        """The holdout question `ref` names, as `id` or `kg/id` (the forms kgeval prints);
        HTTP 404 naming it (and the candidates, when it names two) otherwise."""
        questions = self.holdout.questions()
        try:
            question_id = resolve_question_id(ref, ((q.kg, q.id) for q in questions), "holdout")
        except InputError as exc:
            raise HTTPException(404, str(exc)) from None
        return next(q for q in questions if q.id == question_id)

    def store(self, kg: str) -> Store:
        with self.lock:
            if kg not in self._stores:
                held = self.holdout.kg(kg)
                check_kg_files(self.holdout.root, kg, held.files)
                self._stores[kg] = open_store(self.settings.config.store, held.files, kg, graphs=held.graphs)
            return self._stores[kg]

    def lookup(self, kg: str) -> KgLookup | None:
        """The judges' labels and vocabulary of KG `kg`, as a run has them (kept while serving:
        the KG does not change under a sealed holdout); none for a property graph."""
        store = self.store(kg)
        with self.lock:
            if kg not in self._lookups:
                self._lookups[kg] = store_lookup(store, kg, self.settings.config)
            return self._lookups[kg]
