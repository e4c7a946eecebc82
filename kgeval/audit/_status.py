"""An item's audit state at its current hash, and a run's audit counts."""

from __future__ import annotations

from datetime import UTC, datetime

from kgeval.audit._model import AuditCounts, AuditItem, AuditRecord, AuditState, Decision, Key
from kgeval.audit._store import AuditLog
from kgeval.errors import CheckFailed, InputError


def audit_states(items: dict[Key, AuditItem], records: list[AuditRecord]) -> dict[Key, AuditState]:
    """Latest decision at the item's current hash; stale when decided only at other hashes."""
    states: dict[Key, AuditState] = {key: "unaudited" for key in items}
    for record in records:  # oldest first: a later record overrides an earlier one
        key = (record.question_id, record.seed)
        item = items.get(key)
        if item is None:
            continue
        if record.item_sha256 == item.sha256():
            states[key] = record.decision
        elif states[key] == "unaudited":
            states[key] = "stale"
    return states


def audit_counts(items: dict[Key, AuditItem], records: list[AuditRecord]) -> AuditCounts:
    states = audit_states(items, records)
    current = {k: s for k, s in states.items() if s in ("agree", "disagree")}
    in_dissent = {k: s for k, s in current.items() if items[k].dissenting_judges}
    in_flagged = {k: s for k, s in current.items() if not items[k].dissenting_judges and items[k].flagged}
    return AuditCounts(
        accepted=len(items),
        audited=len(current),
        disagree=sum(1 for s in current.values() if s == "disagree"),
        stale=sum(1 for s in states.values() if s == "stale"),
        accepted_disagreements=sum(1 for item in items.values() if item.dissenting_judges),
        audited_disagreements=len(in_dissent),
        disagree_in_disagreements=sum(1 for s in in_dissent.values() if s == "disagree"),
        accepted_flagged=sum(1 for item in items.values() if not item.dissenting_judges and item.flagged),
        audited_flagged=len(in_flagged),
        disagree_in_flagged=sum(1 for s in in_flagged.values() if s == "disagree"),
    )


def record_decision(
    log: AuditLog,
    items: dict[Key, AuditItem],
    key: Key,
    seen_sha256: str,
    auditor: str,
    decision: Decision,
    note: str = "",
) -> AuditRecord:
    """Append a decision, refusing one made on a view of the item that is no longer current."""
    item = items.get(key)
    if item is None:
        run = next(iter(items.values())).run_id if items else "this run"
        raise InputError(f"question {key[0]} seed {key[1]}: not an accepted answer of run {run} (audits cover accepts only)")
    if not auditor.strip():
        raise InputError("an audit record needs the auditor's name")
    current = item.sha256()
    if seen_sha256 != current:
        raise CheckFailed(
            f"question {key[0]} seed {key[1]}: {seen_sha256[:12]} is not this item's hash (now {current[:12]}): the item "
            "changed since it was shown, or the hash is another item's; show it again (`kgeval audit show`) and decide"
        )
    record = AuditRecord(
        run_id=item.run_id,
        question_id=key[0],
        seed=key[1],
        item_sha256=current,
        auditor=auditor,
        decision=decision,
        note=note,
        recorded_at=datetime.now(UTC).isoformat(timespec="microseconds"),
    )
    log.append(record)
    return record
