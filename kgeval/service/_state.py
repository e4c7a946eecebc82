"""What the service holds while it runs: the holdout, gold, judges, stores, and one
connection to the results database (DuckDB connections are used under one lock)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from kgeval.audit import AuditLog
from kgeval.config import KgevalConfig
from kgeval.gold import GoldEntry, load_gold
from kgeval.holdout import Holdout, Question, load_holdout
from kgeval.judges import Judge, judges_from_config
from kgeval.review import ReviewLog
from kgeval.runs import ResultsDB
from kgeval.service._access import Access
from kgeval.service._contamination import TextMatcher, matcher_for
from kgeval.stores import Store, open_store


@dataclass
class ServiceSettings:
    db: Path
    holdout: Path
    gold: Path
    config: KgevalConfig
    access: Access
    max_texts: int = 1000
    """Texts accepted by one contamination request."""


@dataclass
class ServiceState:
    settings: ServiceSettings
    holdout: Holdout
    gold: dict[str, GoldEntry]
    judges: dict[str, Judge]
    matcher: TextMatcher
    results: ResultsDB
    audits: AuditLog
    reviews: ReviewLog
    lock: threading.RLock = field(default_factory=threading.RLock)
    _stores: dict[str, Store] = field(default_factory=dict)

    @classmethod
    def open(cls, settings: ServiceSettings) -> ServiceState:
        holdout = load_holdout(settings.holdout)
        return cls(
            settings=settings,
            holdout=holdout,
            gold=load_gold(settings.gold),
            judges=judges_from_config(settings.config.judges),
            matcher=matcher_for(holdout, settings.config),
            results=ResultsDB(settings.db),
            audits=AuditLog(settings.db),
            reviews=ReviewLog(settings.db),
        )

    def close(self) -> None:
        self.reviews.close()
        self.audits.close()
        self.results.close()

    def question(self, question_id: str) -> Question | None:
        return next((q for q in self.holdout.questions() if q.id == question_id), None)

    def store(self, kg: str) -> Store:
        with self.lock:
            if kg not in self._stores:
                self._stores[kg] = open_store(self.settings.config.store, self.holdout.kg(kg).files)
            return self._stores[kg]
