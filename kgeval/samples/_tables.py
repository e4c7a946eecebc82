"""The gold and the answer as two tables, columns aligned and rows marked as the execution
judge sees them: the same normalization, the same column alignment, the same set semantics."""

from __future__ import annotations

from typing import Any

from kgeval.judges import ExecutionJudge, align_columns, project, table_of_items, table_of_result
from kgeval.samples._model import RowMark, SampleRow, SampleTable
from kgeval.samples._text import item_text
from kgeval.stores import QueryResult, Term

_XSD = "http://www.w3.org/2001/XMLSchema#"


def cell_text(term: Term | None) -> str | None:
    """A cell as a person reads it: the IRI, or the literal with its language or datatype."""
    if term is None:
        return None
    if term.type == "bnode":
        return f"_:{term.value}"
    if term.type == "uri" or (term.datatype is None and term.lang is None):
        return term.value
    if term.lang:
        return f"{term.value}@{term.lang}"
    datatype = "xsd:" + term.datatype[len(_XSD) :] if term.datatype.startswith(_XSD) else f"<{term.datatype}>"
    return f"{term.value}^^{datatype}"


def _result_cells(result: QueryResult) -> tuple[list[str], list[list[str | None]]]:
    if result.form == "ask":
        return ["boolean"], [[str(bool(result.boolean)).lower()]]
    return list(result.vars), [[cell_text(c) for c in row] for row in result.rows]


def _mapping_from_hint(hint: object, gold_vars: tuple[str, ...], answer_vars: tuple[str, ...]) -> tuple[int, ...] | None:
    """The judge's own alignment as stored in its verdict (`details.columns`), when usable."""
    if not isinstance(hint, dict) or set(hint) != set(gold_vars):
        return None
    if any(v is not None and v not in answer_vars for v in hint.values()):
        return None
    return tuple(answer_vars.index(hint[g]) if hint[g] is not None else -1 for g in gold_vars)


def _table(columns: list[str], aligned: list[str | None], cells: list[list[str | None]], marks: list[RowMark | None], total: int, truncated: bool) -> SampleTable:
    counts: dict[RowMark, int] = {}
    for mark in marks:
        if mark is not None:
            counts[mark] = counts.get(mark, 0) + 1
    rows = [SampleRow(cells=c, mark=m) for c, m in zip(cells, marks)]
    return SampleTable(columns=columns, aligned_to=aligned, rows=rows, total=total, truncated=truncated, counts=counts)


def gold_table(gold: QueryResult) -> SampleTable:
    """The gold alone, rows unmarked (nothing to compare it with)."""
    columns, cells = _result_cells(gold)
    return _table(columns, list(columns), cells, [None] * len(cells), gold.total, gold.truncated)


def marked_tables(
    gold: QueryResult, answer: QueryResult | None, items: list[Any] | None, judge: ExecutionJudge, columns_hint: object = None
) -> tuple[SampleTable, SampleTable | None, list[str]]:
    """(gold table, answer table, notes on the columns). The answer's columns come in the
    order of the gold columns they align to, extra columns after; None without an answer."""
    gold_columns, gold_cells = _result_cells(gold)
    if answer is None and items is None:
        return gold_table(gold), None, []
    normalizer = judge.typed if answer is not None else judge.untyped
    g = table_of_result(gold, normalizer)
    if answer is not None:
        a = table_of_result(answer, normalizer)
        answer_columns, answer_cells = _result_cells(answer)
        answer_total, answer_truncated = answer.total, answer.truncated
    else:
        a = table_of_items(items or [], normalizer)
        answer_columns, answer_cells = ["item"], [[item_text(i)] for i in items or []]
        answer_total, answer_truncated = len(answer_cells), False
    mapping = _mapping_from_hint(columns_hint, g.vars, a.vars) or align_columns(g, a, judge.config.max_column_mappings).mapping
    projected = project(a, mapping)
    answer_keys, gold_keys = set(projected), set(g.rows)
    gold_marks: list[RowMark] = ["matched" if row in answer_keys else "missing" for row in g.rows]
    answer_marks: list[RowMark] = ["matched" if row in gold_keys else "extra" for row in projected]
    order = [k for k in mapping if k >= 0] + [k for k in range(len(answer_columns)) if k not in mapping]
    aligned = {k: gold_columns[j] for j, k in enumerate(mapping) if k >= 0}
    shown = [[row[k] for k in order] for row in answer_cells]
    answer_table = _table([answer_columns[k] for k in order], [aligned.get(k) for k in order], shown, answer_marks, answer_total, answer_truncated)
    shown_gold = _table(gold_columns, list(gold_columns), gold_cells, gold_marks, gold.total, gold.truncated)
    return shown_gold, answer_table, _column_notes(gold_columns, answer_columns, mapping)


def _column_notes(gold_columns: list[str], answer_columns: list[str], mapping: tuple[int, ...]) -> list[str]:
    notes = []
    for j, k in enumerate(mapping):
        if k < 0:
            notes.append(f"gold column ?{gold_columns[j]} has no answer column: the answer is missing it")
        elif answer_columns[k] != gold_columns[j]:
            notes.append(f"answer column ?{answer_columns[k]} compared as gold column ?{gold_columns[j]} (the judge's column alignment)")
    extra = [answer_columns[k] for k in range(len(answer_columns)) if k not in mapping]
    if extra:
        notes.append("extra answer column(s) " + ", ".join(f"?{c}" for c in extra) + ": not compared")
    return notes
