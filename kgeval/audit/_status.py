"""An item's audit state at its current hash, and a run's audit counts.

Decisions are append-only and bound to the item hash an auditor saw (DESIGN invariant 9).
Each auditor's latest decision at the current hash counts; when auditors' decisions differ
the item is a conflict, shown as one, and counted as a false accept until they agree: a
later "agree" never hides another auditor's "disagree"."""

from __future__ import annotations

from datetime import UTC, datetime

from kgeval.audit._model import AuditCounts, AuditItem, AuditRecord, AuditState, Decision, Key
from kgeval.audit._store import AuditLog
from kgeval.errors import CheckFailed, InputError


def audit_decisions(items: dict[Key, AuditItem], records: list[AuditRecord]) -> dict[Key, dict[str, Decision]]:
    """Each auditor's latest decision at the item's current hash (a changed mind is a later
    record of the same auditor); items with no current decision are left out."""
    decided: dict[Key, dict[str, Decision]] = {}
    for record in records:  # oldest first: an auditor's later record overrides their earlier one
        key = (record.question_id, record.seed)
        item = items.get(key)
        if item is not None and record.item_sha256 == item.sha256():
            decided.setdefault(key, {})[record.auditor] = record.decision
    return decided


def audit_states(items: dict[Key, AuditItem], records: list[AuditRecord]) -> dict[Key, AuditState]:
    """Per item: the decision its auditors' latest decisions at its current hash share; a
    conflict when they differ (one auditor's later "agree" never hides another's "disagree");
    stale when decided only at other hashes; unaudited when never decided."""
    states: dict[Key, AuditState] = {key: "unaudited" for key in items}
    for record in records:
        key = (record.question_id, record.seed)
        if key in states:
            states[key] = "stale"
    for key, by_auditor in audit_decisions(items, records).items():
        found = set(by_auditor.values())
        states[key] = found.pop() if len(found) == 1 else "conflict"
    return states


def conflict_text(decided: dict[str, Decision]) -> str:
    """Who decided what, in words: "ann, carl disagree; bob agrees"."""
    parts = []
    for decision in ("disagree", "agree"):
        names = sorted(name for name, d in decided.items() if d == decision)
        if names:
            parts.append(f"{', '.join(names)} {decision if len(names) > 1 else decision + 's'}")
    return "; ".join(parts)


def found_false(state: AuditState) -> bool:
    """Whether audits count the accept as a false accept: every auditor disagrees, or the
    auditors conflict (counted as false until they resolve it: never as agree)."""
    return state in ("disagree", "conflict")


def audit_counts(items: dict[Key, AuditItem], records: list[AuditRecord]) -> AuditCounts:
    states = audit_states(items, records)
    current = {k: s for k, s in states.items() if s in ("agree", "disagree", "conflict")}
    in_dissent = {k: s for k, s in current.items() if items[k].dissenting_judges}
    in_flagged = {k: s for k, s in current.items() if not items[k].dissenting_judges and items[k].flagged}
    return AuditCounts(
        accepted=len(items),
        audited=len(current),
        disagree=sum(1 for s in current.values() if found_false(s)),
        conflicted=sum(1 for s in current.values() if s == "conflict"),
        stale=sum(1 for s in states.values() if s == "stale"),
        accepted_disagreements=sum(1 for item in items.values() if item.dissenting_judges),
        audited_disagreements=len(in_dissent),
        disagree_in_disagreements=sum(1 for s in in_dissent.values() if found_false(s)),
        accepted_flagged=sum(1 for item in items.values() if not item.dissenting_judges and item.flagged),
        audited_flagged=len(in_flagged),
        disagree_in_flagged=sum(1 for s in in_flagged.values() if found_false(s)),
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
