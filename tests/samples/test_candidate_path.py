"""The sample view executes a candidate's SPARQL as the run executed it: through
`kgeval.runs.execute_candidate` (the read-only guard, the sandbox worker, the candidate budget,
the predeclared prefixes), with the configuration the run recorded. The candidate's SPARQL is
untrusted input (DESIGN invariant 12) when it is shown as much as when it is judged."""

from __future__ import annotations

from typer.testing import CliRunner

from kgeval.cli import app
from kgeval.config import CandidateQueryConfig, KgevalConfig, RunConfig, StoreConfig
from kgeval.gold import load_gold
from kgeval.holdout import load_holdout
from kgeval.runs import ResultsDB
from kgeval.samples import SampleSource, build_sample
from kgeval.stores import EmbeddedStore
from tests.conftest import EX
from tests.viewing import NO_PREFIX_LINES, PREDECLARED, config_run

E = f"{EX}entities/"
EVERY_TRIPLE = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"
"""Over a 300-byte candidate result budget on the mini KG (about 150 triples): the run cuts it."""


class RecordingStore(EmbeddedStore):
    """An embedded store that records every query sent down its trusted, in-process path."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.trusted: list[str] = []

    def execute(self, query: str, *, timeout_s: float, row_cap: int):  # noqa: ANN201
        self.trusted.append(query)
        return super().execute(query, timeout_s=timeout_s, row_cap=row_cap)


def test_an_over_budget_candidate_is_cut_as_the_run_cut_it_never_run_on_the_trusted_path(mini_holdout, mini_gold, tmp_path):
    budget = StoreConfig(candidates=CandidateQueryConfig(max_result_bytes=300))
    cfg = KgevalConfig(run=RunConfig(seeds=1), store=budget)
    db = tmp_path / "hostile.duckdb"
    run_id = config_run(mini_holdout, mini_gold, db, {"mini-06": EVERY_TRIPLE}, cfg)
    holdout = load_holdout(mini_holdout)
    stores: list[RecordingStore] = []

    def store_for(kg: str) -> RecordingStore:
        stores.append(RecordingStore(holdout.kg(kg).files, candidates=budget.candidates))
        return stores[-1]

    with ResultsDB(db, read_only=True) as results:
        sample = build_sample(SampleSource(results, load_gold(mini_gold), holdout, store_for), run_id, "mini-06")
    assert {v.judge: v.path for v in sample.verdicts}["execution"] == "over_budget"  # what the run judged
    assert sample.execution.error.startswith("QueryOverBudget") and sample.answer_table is None
    assert [q for s in stores for q in s.trusted] == []  # the candidate never ran in this process, unbounded
    shown = CliRunner().invoke(app, ["show", run_id, "mini-06", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert "QueryOverBudget" in shown.output and "answer: " not in shown.output, shown.output


def test_show_executes_a_candidate_without_prefix_lines_with_the_runs_predeclared_prefixes(mini_holdout, mini_gold, tmp_path):
    cfg = KgevalConfig(run=RunConfig(seeds=1), store=StoreConfig(predeclared_prefixes=PREDECLARED))
    db = tmp_path / "wd.duckdb"
    run_id = config_run(mini_holdout, mini_gold, db, NO_PREFIX_LINES, cfg)
    shown = CliRunner().invoke(app, ["show", run_id, "mini-02", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert "QuerySyntaxError" not in shown.output and "failed" not in shown.output
    assert "answer: 2 rows (2 matched)" in shown.output and "ies/alice" in shown.output and "ies/bob" in shown.output, shown.output
    assert "predeclared prefixes e, ex" in shown.output or "predeclared prefixes ex, e" in shown.output
    ask = CliRunner().invoke(app, ["show", run_id, "mini-04", "--db", str(db)])
    assert ask.exit_code == 0 and "QuerySyntaxError" not in ask.output and "true" in ask.output
