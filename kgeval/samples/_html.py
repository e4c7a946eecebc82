"""A sample as an HTML fragment (for the self-contained report) and SPARQL highlighting shared
with the service page. No scripts: long tables are cut into pages as collapsed sections."""

from __future__ import annotations

import html

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import SparqlLexer

from kgeval.samples._model import Sample, SampleTable
from kgeval.samples._text import MARK_SYMBOL, answer_in_query_text, attempt_facts, counts_text, detail_items, execution_text, figures_text, state_text

SAMPLE_CSS = """
.sample{border:1px solid #d8dee6;border-radius:6px;padding:.6rem 1rem;margin:1rem 0;background:#fff}
.sample .flags span,.badge{display:inline-block;border-radius:9px;padding:0 .5rem;margin-right:.3rem;font-size:.8rem;background:#fff3cd;border:1px solid #e0b400}
.side{display:grid;grid-template-columns:1fr 1fr;gap:1rem;align-items:start}.side>div{overflow-x:auto}
table.rows td,table.rows th{font-size:.85rem;word-break:break-all}
tr.mark-matched td:first-child{color:#22663a}tr.mark-missing{background:#fde2e2}tr.mark-extra{background:#fff3cd}
tr.mark-missing td:first-child,tr.mark-extra td:first-child{font-weight:700}
.highlight pre{white-space:pre-wrap;font-size:.85rem;padding:.4rem;border-radius:4px;background:#f7f9fb}
.correct{color:#22663a;font-weight:600}.wrong{color:#a12a2a;font-weight:600}dl.attempt{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;margin:.3rem 0}
dl.attempt dt{color:#5a6472}dl.attempt dd{margin:0}.note{color:#8a6d00}
"""

_FORMATTER = HtmlFormatter(noclasses=True, nobackground=True, style="friendly")
_MARK_WORD = {"matched": "matched", "missing": "missing from the answer", "extra": "extra, not in the gold"}


def highlight_sparql(text: str) -> str:
    """SPARQL as highlighted HTML (inline styles: the page stays self-contained)."""
    return highlight(text, SparqlLexer(), _FORMATTER)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def table_html(title: str, table: SampleTable, page_size: int = 50) -> str:
    """The rows in pages of `page_size`: the first open, the rest collapsed."""
    head = "<th></th>" + "".join(
        f"<th>?{_e(c)}" + ("" if a in (None, c) else f" → ?{_e(a)}") + (" <em>(extra)</em>" if a is None else "") + "</th>"
        for c, a in zip(table.columns, table.aligned_to or table.columns)
    )
    pages = []
    for start in range(0, max(len(table.rows), 1), page_size):
        body = "".join(
            f'<tr class="mark-{r.mark or "none"}" title="{_MARK_WORD.get(r.mark or "", "")}"><td>{MARK_SYMBOL.get(r.mark or "", "")}</td>'
            + "".join(f"<td>{'' if c is None else _e(c)}</td>" for c in r.cells) + "</tr>"
            for r in table.rows[start : start + page_size]
        )
        rows = f'<table class="rows"><tr>{head}</tr>{body}</table>'
        if start:
            rows = f"<details><summary>rows {start + 1}–{min(start + page_size, len(table.rows))}</summary>{rows}</details>"
        pages.append(rows)
    return f"<div><h5>{_e(title)}: {_e(counts_text(table))}</h5>{''.join(pages)}</div>"


def sample_html(sample: Sample, page_size: int = 50) -> str:
    """The whole sample as one HTML fragment (section element)."""
    s, a = sample, sample.attempt
    parts = [
        f'<section class="sample" id="sample-{_e(s.question_id)}-{s.seed}">',
        f"<h4>{_e(s.kg)}/{_e(s.question_id)} · seed {s.seed} · {_outcome_html(s)}{' · honeypot' if s.honeypot else ''}</h4>",
        f"<p><strong>{_e(s.question)}</strong> <small>(domain {_e(s.domain)}, type {_e(s.qtype)})</small></p>",
        _gold_html(s),
    ]
    if s.answer_in_query:
        parts.insert(2, f'<p class="flags"><span>answer in query</span> {_e(answer_in_query_text(s))}</p>')
    if a.sparql:
        parts.append("<h5>candidate SPARQL</h5>" + highlight_sparql(a.sparql))
    parts.append(f"<p>answer rows: {_e(execution_text(s))}</p>")
    if s.answer_table or s.gold_table:
        answer = table_html("answer", s.answer_table, page_size) if s.answer_table else "<div><h5>answer: no rows</h5></div>"
        gold = table_html("gold", s.gold_table, page_size) if s.gold_table else "<div><h5>gold: not available</h5></div>"
        parts.append(f'<div class="side">{answer}{gold}</div>')
    if s.suite_neighbour:
        there = table_html("answer there", s.suite_answer_table, page_size) if s.suite_answer_table else "<div><h5>answer there: no rows</h5></div>"
        gold_there = table_html(f"gold of {s.suite_neighbour}", s.suite_gold_table, page_size) if s.suite_gold_table else "<div><h5>no gold rows there</h5></div>"
        parts.append(f'<h5 class="wrong">coincidental accept: diverges on neighbour KG {_e(s.suite_neighbour)} of its test suite</h5><div class="side">{there}{gold_there}</div>')
    parts.append(_verdicts_html(s))
    parts.append('<h5>attempt</h5><dl class="attempt">' + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in attempt_facts(s)) + "</dl>")
    if s.reference_sparql:
        parts.append("<details><summary>reference SPARQL</summary>" + highlight_sparql(s.reference_sparql) + "</details>")
    parts += [f'<p class="note">{_e(n)}</p>' for n in (*s.column_notes, *s.notes)]
    return "\n".join([*parts, "</section>"])


def _outcome_html(s: Sample) -> str:
    primary = next((v for v in s.verdicts if v.judge == s.primary_judge), None)
    if primary is None:
        return f'<span class="wrong">{_e(state_text(s.attempt))}</span>'
    return '<span class="correct">correct</span>' if primary.correct else '<span class="wrong">wrong</span>'


def _gold_html(s: Sample) -> str:
    g = s.gold
    if g is None:
        return '<p class="note">gold not available</p>'
    flags = "".join(f"<span>{_e(f)}</span>" for f in g.flags) or "none"
    extra = [f"tied: {g.ties}"] if g.ties else []
    extra += [f"nondeterministic: {w}" for w in g.nondeterministic] + [f"engine-dependent: {w}" for w in g.engine_dependent]
    review = g.review_state or "not read"
    return f'<p class="flags">gold flags: {flags} · review: {_e(review)} · {g.total} row{"" if g.total == 1 else "s"} · built on {_e(g.engine)}</p>' + "".join(
        f'<p class="note">{_e(x)}</p>' for x in extra
    )


def _verdicts_html(s: Sample) -> str:
    if not s.verdicts:
        return f"<p>verdicts: none stored (terminal state {_e(state_text(s.attempt))})</p>"
    rows = "".join(
        f"<tr><td>{_e(v.judge)}{' (primary)' if v.judge == s.primary_judge else ''}<br><small>{_e(v.version)}</small></td>"
        f'<td class="{"correct" if v.correct else "wrong"}">{"correct" if v.correct else "wrong"}</td><td>{_e(v.path)}</td>'
        f"<td>{_e(figures_text(v) or '—')}</td><td>{_e(v.reason)}</td>"
        f"<td>{'<br>'.join(f'{_e(k)}: {_e(val)}' for k, val in detail_items(v))}</td></tr>"
        for v in s.verdicts
    )
    return f"<table><tr><th>judge</th><th>decision</th><th>path</th><th>P / R / F1</th><th>reason</th><th>details</th></tr>{rows}</table>"
