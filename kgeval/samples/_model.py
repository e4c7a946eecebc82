"""One attempt shown whole: what every view of a sample (terminal, HTML report, service page)
renders, so the three never disagree about what an auditor sees."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from kgeval.audit import AuditState, Decision
from kgeval.judges import Verdict
from kgeval.review import ReviewState
from kgeval.runs import Attempt, AttemptState, RunQuestion
from kgeval.systems import ErrorKind

RowMark = Literal["matched", "missing", "extra"]
"""A gold row the answer holds (matched) or lacks (missing); an answer row the gold lacks (extra).
Decided on the execution judge's normalized keys, after its column alignment."""

ExecutionSource = Literal["re-executed", "answer-list", "none"]
"""Where the answer table comes from: the candidate's SPARQL executed again read-only on the
run's store when the sample is shown (attempts keep only the row count, `result_total`); the
system's answer list (no SPARQL); or nothing to show."""


class SampleRow(BaseModel):
    """One row of a shown table, its cells in the table's column order."""

    cells: list[str | None]
    """Each cell as text (an IRI, or a literal with `@lang` / `^^datatype`); None when unbound."""
    mark: RowMark | None = None
    """None when the table is shown alone (a gold under review)."""


class SampleTable(BaseModel):
    """A result shown as a table: every kept row, each marked against the other side."""

    columns: list[str]
    """Column names in display order; for the answer, aligned to the gold's columns first."""
    aligned_to: list[str | None] = Field(default_factory=list)
    """For each column, the gold column the judge aligned it to (None: an extra column). For
    the gold table, each column itself."""
    rows: list[SampleRow]
    """The rows kept (at most the row cap), in the result's order."""
    total: int
    """The true number of rows (kept or not); 1 for ASK."""
    truncated: bool = False
    """True when `total` exceeds the rows kept."""
    counts: dict[RowMark, int] = Field(default_factory=dict)
    """Rows per mark, e.g. {"matched": 29, "missing": 1}."""


class GoldView(BaseModel):
    """The gold entry as a reviewer or auditor needs to judge it."""

    flags: list[str]
    """The gold's flags (empty, tied, nondeterministic, engine-dependent, truncated, unchecked)."""
    total: int
    """True size of the gold result."""
    engine: str
    """Engine and version that executed the reference query."""
    ties: str | None = None
    """The acceptable answers in words, when the gold is tied."""
    nondeterministic: list[str] = Field(default_factory=list)
    engine_dependent: list[str] = Field(default_factory=list)
    tie_check_error: str | None = None
    review_state: ReviewState | None = None
    """The gold review state at the current content hash; None when no review log was read."""
    result_sha256: str


class ExecutionView(BaseModel):
    """How the answer rows shown were obtained, and whether they are the rows the run judged."""

    source: ExecutionSource
    engine: str = ""
    """The store that executed the SPARQL now (name and version)."""
    error: str | None = None
    """Why the SPARQL failed now (it is then also the run's invalid_sparql, usually)."""
    run_total: int | None = None
    """Rows the run's execution returned (stored with the attempt)."""
    differs_from_run: bool = False
    """True when the total now differs from the run's: the store changed since the run."""


class AuditView(BaseModel):
    """The audit of this attempt, when the primary judge accepted it."""

    item_sha256: str
    """Hash of the audit item: a decision is recorded against it."""
    state: AuditState
    decisions: dict[str, Decision] = {}
    """Each auditor's latest decision at that hash (a conflict shows who decided what)."""


class Sample(RunQuestion):
    """One (question, seed) attempt of a run, with everything needed to check its verdict; the
    question as the run saw it (KG, id, text, domain, type, honeypot) and:"""

    run_id: str
    seed: int
    seeds: list[int]
    """Every seed of the question with an attempt in the run (to move between them)."""
    reference_sparql: str | None = None
    """The holdout's reference query; None when the holdout was not available."""
    gold: GoldView | None = None
    """None when the gold entry was not available."""
    attempt: Attempt
    """The stored attempt: terminal state, error, SPARQL, answer list, tries, latency, tokens."""
    execution: ExecutionView
    gold_table: SampleTable | None = None
    answer_table: SampleTable | None = None
    column_notes: list[str] = Field(default_factory=list)
    """How the columns were aligned: missing gold columns, extra answer columns."""
    primary_judge: str
    verdicts: list[Verdict]
    """Every stored verdict on the attempt, the primary judge's first."""
    audit: AuditView | None = None
    notes: list[str] = Field(default_factory=list)
    """What the view could not show, and why (no gold, no store, a changed store, ties)."""
    answer_in_query: list[str] = Field(default_factory=list)
    suite_neighbour: str | None = None
    """The neighbour KG of the question's test suite where the accepted answer diverges (a
    coincidental accept), when there is one: its tables follow."""
    suite_gold_table: SampleTable | None = None
    """That neighbour's gold rows, marked as the answer's rows there were compared with them."""
    suite_answer_table: SampleTable | None = None
    """The candidate's rows on that neighbour (executed again, sandboxed)."""
    """IRIs of the gold's answer the candidate query names as constants and the reference query
    does not (the attempt's `answer_in_query` flag): the system knew the answer before it asked."""


class SampleSummary(RunQuestion):
    """One line of the run page (the question as the run saw it, and the attempt's outcome):
    enough to filter, sort and open the sample."""

    seed: int
    state: AttemptState
    error_kind: ErrorKind | None = None
    outcome: Literal["correct", "wrong", "error"]
    """The primary judge's verdict, or error for an attempt that was not judged."""
    path: str | None = None
    """The primary judge's path."""
    verdicts: dict[str, bool] = Field(default_factory=dict)
    """Every judge's decision, by judge name."""
    disagreement: bool = False
    """True when the judges did not all decide the same."""
    gold_flags: list[str] = Field(default_factory=list)
    audit_state: AuditState | None = None
    """The audit state of an accept; None when the attempt was not accepted."""
    latency_ms: float = 0.0
    tries: int = 0
    answer_in_query: bool = False
    """The attempt is flagged `answer_in_query` (see `Sample.answer_in_query`)."""
