"""Audit of accepts: a stratified sample of what the judge accepted, and auditors' decisions
bound to the hash of what they saw (DESIGN invariants 4 and 9)."""

from kgeval.audit._model import AuditCounts, AuditItem, AuditRecord, AuditSample, AuditState, Decision
from kgeval.audit._sample import GOLD_UNAVAILABLE, accepted_items, draw_sample
from kgeval.audit._status import audit_counts, audit_decisions, audit_states, conflict_text, found_false, record_decision
from kgeval.audit._store import AuditLog

__all__ = [
    "GOLD_UNAVAILABLE",
    "AuditCounts",
    "AuditItem",
    "AuditLog",
    "AuditRecord",
    "AuditSample",
    "AuditState",
    "Decision",
    "accepted_items",
    "audit_counts",
    "audit_decisions",
    "audit_states",
    "conflict_text",
    "draw_sample",
    "found_false",
    "record_decision",
]
