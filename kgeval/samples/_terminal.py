"""A sample in the terminal (rich): the same sections as the page, rows paged."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from kgeval.samples._model import Sample, SampleTable
from kgeval.samples._text import MARK_SYMBOL, answer_in_query_text, attempt_facts, counts_text, detail_items, execution_text, figures_text, page_bounds, state_text

_MARK_STYLE = {"matched": "green", "missing": "bold red", "extra": "bold yellow"}


def sample_renderable(sample: Sample, page: int = 1, page_size: int = 20) -> RenderableType:
    """Everything about one attempt, top to bottom; tables show rows of `page` only."""
    parts: list[RenderableType] = [_header(sample), _gold(sample)]
    if sample.attempt.sparql:
        parts.append(Panel(Syntax(sample.attempt.sparql, "sparql", word_wrap=True), title="candidate SPARQL", title_align="left"))
    elif sample.attempt.answer is not None:
        parts.append(Text(f"answer list ({len(sample.attempt.answer)} items), no SPARQL"))
    parts.append(_tables(sample, page, page_size))
    if sample.suite_neighbour:
        grid = Table.grid(padding=(0, 3))
        answer = _rows_table("answer there", sample.suite_answer_table, page, page_size) if sample.suite_answer_table else Text("no answer rows there")
        gold = _rows_table(f"gold of {sample.suite_neighbour}", sample.suite_gold_table, page, page_size) if sample.suite_gold_table else Text("no gold rows there")
        grid.add_row(answer, gold)
        parts.append(Group(Text(f"coincidental accept: on neighbour KG {sample.suite_neighbour} of its test suite the answer diverges", style="bold red"), grid))
    parts.append(_verdicts(sample))
    parts.append(_attempt(sample))
    if sample.reference_sparql:
        parts.append(Panel(Syntax(sample.reference_sparql, "sparql", word_wrap=True), title="reference SPARQL", title_align="left"))
    notes = [*sample.column_notes, *sample.notes]
    if notes:
        parts.append(Text("\n".join(f"note: {n}" for n in notes), style="yellow"))
    return Group(*parts)


def _header(s: Sample) -> RenderableType:
    seeds = " ".join(f"[{x}]" if x == s.seed else str(x) for x in s.seeds)
    honeypot = "  HONEYPOT" if s.honeypot else ""
    primary = next((v for v in s.verdicts if v.judge == s.primary_judge), None)
    outcome = (state_text(s.attempt), "yellow") if primary is None else (("correct", "green") if primary.correct else ("wrong", "red"))
    text = Text.assemble((f"{s.kg}/{s.question_id}", "bold"), "  ", (outcome[0], f"bold {outcome[1]}"), f"  seed {s.seed} (seeds {seeds})  run {s.run_id}{honeypot}\n")
    text.append(s.question, style="bold cyan")
    text.append(f"\ndomain {s.domain} · type {s.qtype}")
    if s.answer_in_query:
        text.append("\n" + answer_in_query_text(s), style="bold yellow")
    return Panel(text, title="sample", title_align="left")


def _gold(s: Sample) -> RenderableType:
    g = s.gold
    if g is None:
        return Text("gold: not available", style="yellow")
    flags = ", ".join(g.flags) or "none"
    lines = [f"gold flags: {flags}", f"review: {g.review_state or 'not read'}", f"{g.total} row{'' if g.total == 1 else 's'} · built on {g.engine}"]
    lines += [f"tied: {g.ties}"] if g.ties else []
    lines += [f"nondeterministic: {w}" for w in g.nondeterministic] + [f"engine-dependent: {w}" for w in g.engine_dependent]
    lines += [f"tie check could not run: {g.tie_check_error}"] if g.tie_check_error else []
    return Text("\n".join(lines), style="bold yellow" if g.flags else "")


def _attempt(s: Sample) -> RenderableType:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim")
    grid.add_column(overflow="fold")
    for label, value in attempt_facts(s):
        grid.add_row(label, Text(value, style="red" if label == "terminal state" and s.attempt.state == "error" else ""))
    return Panel(grid, title="attempt", title_align="left")


def _rows_table(title: str, table: SampleTable, page: int, page_size: int) -> RenderableType:
    start, end, pages = page_bounds(len(table.rows), page, page_size)
    caption = f"rows {start + 1}–{end} of {len(table.rows)} (page {min(max(page, 1), pages)} of {pages})" if pages > 1 else None
    out = Table(caption=caption, show_lines=False)
    out.add_column("", width=1)
    for name, aligned in zip(table.columns, table.aligned_to or table.columns):
        out.add_column(f"?{name}" + ("" if aligned in (None, name) else f" → ?{aligned}") + (" (extra)" if aligned is None else ""), overflow="fold")
    for row in table.rows[start:end]:
        style = _MARK_STYLE.get(row.mark or "", "")
        symbol = MARK_SYMBOL[row.mark] if row.mark else ""
        out.add_row(Text(symbol, style=style), *(Text("" if c is None else c, style=style if row.mark != "matched" else "") for c in row.cells))
    return Group(Text(f"{title}: {counts_text(table)}", style="bold"), out)


def _tables(s: Sample, page: int, page_size: int) -> RenderableType:
    source = execution_text(s)
    grid = Table.grid(padding=(0, 3))
    answer = _rows_table("answer", s.answer_table, page, page_size) if s.answer_table else Text("no answer rows")
    gold = _rows_table("gold", s.gold_table, page, page_size) if s.gold_table else Text("no gold rows")
    grid.add_row(answer, gold)
    legend = Text("= matched   - missing (in the gold, not the answer)   + extra (in the answer, not the gold)", style="dim")
    return Group(Text(f"answer rows: {source}"), grid, legend)


def _verdicts(s: Sample) -> RenderableType:
    table = Table(title="verdicts", title_justify="left", show_lines=True)
    for name in ("judge", "decision", "path", "P / R / F1", "reason", "details"):
        table.add_column(name, overflow="fold")
    for v in s.verdicts:
        judge = v.judge + (" (primary)" if v.judge == s.primary_judge else "")
        decision = Text("correct" if v.correct else "wrong", style="green" if v.correct else "red")
        details = "\n".join(f"{k}: {val}" for k, val in detail_items(v))
        table.add_row(f"{judge}\n{v.version}", decision, v.path, figures_text(v) or "—", v.reason, details)
    if not s.verdicts:
        return Text(f"verdicts: none stored (terminal state {state_text(s.attempt)})")
    return table
