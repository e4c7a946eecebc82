"""Short texts every renderer of a sample shows the same way."""

from __future__ import annotations

import json
from typing import Any

from kgeval.judges import Verdict
from kgeval.runs import Attempt
from kgeval.samples._model import Sample, SampleTable

MARK_SYMBOL = {"matched": "=", "missing": "-", "extra": "+"}
"""The mark of a row in plain text: = matched, - missing (gold only), + extra (answer only)."""

FIGURES = ("precision", "recall", "f1")
SHOWN_DETAILS = {*FIGURES, "columns"}
"""Verdict details shown apart (the figures, the column alignment in the tables); every other
detail a judge reports is listed as it is, so a new judge path needs no change here."""


def figures_text(verdict: Verdict) -> str:
    """"P 1.000 R 0.967 F1 0.983", or "" when the judge reported none."""
    names = {"precision": "P", "recall": "R", "f1": "F1"}
    parts = [f"{names[k]} {verdict.details[k]:.3f}" for k in FIGURES if isinstance(verdict.details.get(k), int | float)]
    return " ".join(parts)


def detail_items(verdict: Verdict) -> list[tuple[str, str]]:
    """Every other detail of the verdict, as (name, value text)."""
    out = []
    for key, value in verdict.details.items():
        if key in SHOWN_DETAILS:
            continue
        out.append((key, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))
    counts = [("matched", verdict.matched), ("unmatched", verdict.unmatched), ("missing", verdict.missing), ("gold_total", verdict.gold_total)]
    return [(k, str(v)) for k, v in counts if v is not None] + out


def usage_text(attempt: Attempt) -> str:
    u = attempt.usage
    if u is None:
        return "not reported"
    parts = [(u.prompt_tokens, "prompt"), (u.candidates_tokens, "output"), (u.thoughts_tokens, "thinking"), (u.total_tokens, "total")]
    return ", ".join(f"{n} {name}" for n, name in parts if n is not None) or "not reported"


def state_text(attempt: Attempt) -> str:
    """"answered", "incomplete", or "error: invalid_sparql"."""
    return f"error: {attempt.error_kind or 'other'}" if attempt.state == "error" else attempt.state


def counts_text(table: SampleTable) -> str:
    counts = ", ".join(f"{n} {mark}" for mark, n in sorted(table.counts.items()))
    more = f"; {len(table.rows)} kept" if table.truncated else ""
    return f"{table.total} row{'' if table.total == 1 else 's'}" + (f" ({counts})" if counts else "") + more


def page_bounds(rows: int, page: int, page_size: int) -> tuple[int, int, int]:
    """(start, end, pages) of 1-based `page` (clamped into range)."""
    pages = max(1, -(-rows // page_size))
    page = min(max(page, 1), pages)
    start = (page - 1) * page_size
    return start, min(start + page_size, rows), pages


def item_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def attempt_facts(s: Sample) -> list[tuple[str, str]]:
    """The attempt as (label, value) lines: state, error, stop reason, tries, latency, tokens."""
    a = s.attempt
    facts = [("terminal state", state_text(a))]
    facts += [("error", a.error)] if a.error else []
    facts.append(("stop reason", a.stop_reason + (f" (provider: {a.finish_reason})" if a.finish_reason else "")))
    facts.append(("tries", "; ".join(f"{t.n}: {t.outcome}, {t.latency_ms:,.0f} ms" + (f", HTTP {t.http_status}" if t.http_status else "") for t in a.tries) or "0"))
    facts += [("latency", f"{a.latency_ms:,.0f} ms"), ("tokens", usage_text(a))]
    facts += [("served version", a.served_version)] if a.served_version else []
    facts += [("answer in query", answer_in_query_text(s))] if s.answer_in_query else []
    return facts


def answer_in_query_text(s: Sample) -> str:
    """The `answer_in_query` flag in words."""
    shown = ", ".join(f"<{iri}>" for iri in s.answer_in_query[:5]) + (" ..." if len(s.answer_in_query) > 5 else "")
    return f"ANSWER IN QUERY: the candidate query names {shown}, in the gold's answer, which the reference query does not name"


def execution_text(s: Sample) -> str:
    ex = s.execution
    text = {"re-executed": f"executed again read-only on {ex.engine}", "answer-list": "the system's answer list", "none": "none to show"}[ex.source]
    if ex.error:
        text += f"; failed: {ex.error}"
    if ex.run_total is not None:
        text += f" (the run's execution returned {ex.run_total} row{'' if ex.run_total == 1 else 's'})"
    return text
