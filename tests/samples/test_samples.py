"""The sample view's data: the replay run of tests/viewing.py, its candidates executed again
read-only on the embedded store, rows marked as the execution judge sees them."""

from __future__ import annotations

import json

import pytest

from kgeval.config import KgevalConfig
from kgeval.errors import CheckFailed, InputError
from kgeval.gold import load_gold
from kgeval.holdout import load_holdout, seal_holdout
from kgeval.runs import ResultsDB
from kgeval.samples import SampleSource, build_sample, sample_index, store_opener
from tests.conftest import EX, MINI_TTL
from tests.viewing import P, replay_run, write_replay

E = f"{EX}entities/"


@pytest.fixture
def replayed(mini_holdout, mini_gold, tmp_path):
    db = tmp_path / "r.duckdb"
    run_id = replay_run(mini_holdout, mini_gold, db, write_replay(tmp_path / "replay.jsonl"))
    return mini_holdout, mini_gold, db, run_id


@pytest.fixture
def source(replayed):
    holdout_dir, gold_dir, db, _ = replayed
    holdout = load_holdout(holdout_dir)
    with ResultsDB(db, read_only=True) as results:
        yield SampleSource(results, load_gold(gold_dir), holdout, store_opener(KgevalConfig(), holdout))


def _cells(table, mark):  # noqa: ANN001, ANN202
    return [row.cells for row in table.rows if row.mark == mark]


def test_a_missing_row_is_marked_on_the_gold_side(source, replayed):
    sample = build_sample(source, replayed[3], "mini-02")
    assert sample.execution.source == "re-executed" and sample.execution.run_total == 1 and not sample.execution.differs_from_run
    assert _cells(sample.gold_table, "missing") == [[E + "bob"]]
    assert _cells(sample.gold_table, "matched") == [[E + "alice"]]
    assert sample.answer_table.columns == ["person"] and sample.answer_table.aligned_to == ["p"]
    assert [r.mark for r in sample.answer_table.rows] == ["matched"]
    assert [v.judge for v in sample.verdicts] == ["execution", "seed"]  # the primary judge first
    assert sample.verdicts[0].details["recall"] == 0.5


def test_columns_follow_the_judges_alignment_and_an_extra_label_column_is_not_compared(source, replayed):
    sample = build_sample(source, replayed[3], "mini-01", seed=0)
    assert sample.answer_table.columns == ["dept", "name"]
    assert sample.answer_table.aligned_to == ["d", None]
    assert sample.answer_table.rows[0].cells == [E + "sales", "Sales@en"]
    assert sample.answer_table.counts == {"matched": 1} and sample.gold_table.counts == {"matched": 1}
    assert any("?name" in n and "not compared" in n for n in sample.column_notes)


def test_extra_rows_subsets_and_ask_answers(source, replayed):
    run_id = replayed[3]
    extra = build_sample(source, run_id, "mini-08")
    assert _cells(extra.answer_table, "extra") == [["Sales@en"]] and _cells(extra.answer_table, "matched") == [["Vertrieb@de"]]
    subset = build_sample(source, run_id, "mini-06", seed=1)
    assert subset.gold_table.counts == {"matched": 29, "missing": 1}
    assert _cells(subset.gold_table, "missing") == [[E + "item7"]]
    assert {v.judge: v.correct for v in subset.verdicts} == {"execution": False, "seed": True}
    ask = build_sample(source, run_id, "mini-05")
    assert ask.answer_table.rows[0].cells == ["true"] and ask.answer_table.rows[0].mark == "extra"
    assert ask.gold_table.rows[0].cells == ["false"] and ask.gold_table.rows[0].mark == "missing"
    count = build_sample(source, run_id, "mini-03")
    assert count.answer_table.columns == ["total"] and count.answer_table.rows[0].cells == ["3^^xsd:integer"]


def test_broken_sparql_is_judged_wrong_and_shows_the_error_and_the_gold_alone(source, replayed):
    sample = build_sample(source, replayed[3], "mini-01", seed=1)
    assert sample.attempt.state == "answered"  # the model's failure: scored wrong, never excused
    assert {(v.judge, v.path, v.correct) for v in sample.verdicts} >= {("execution", "invalid_sparql", False)}
    assert sample.execution.error.startswith("QuerySyntaxError")
    assert sample.answer_table is None and [r.mark for r in sample.gold_table.rows] == [None]
    assert sample.seeds == [0, 1]


def test_a_harness_error_is_shown_unjudged(source, replayed):
    sample = build_sample(source, replayed[3], "mini-04", seed=1)
    assert sample.attempt.state == "error" and sample.attempt.error_kind == "missing" and sample.verdicts == []
    assert sample.execution.source == "none" and sample.answer_table is None


def test_an_empty_gold_is_flagged(source, replayed):
    sample = build_sample(source, replayed[3], "mini-07")
    assert sample.gold.flags == ["empty"] and sample.gold_table.total == 0 and sample.answer_table.total == 0


def test_an_answer_list_is_compared_as_one_column(mini_holdout, mini_gold, tmp_path):
    replay = tmp_path / "answers.jsonl"
    replay.write_text(json.dumps({"kg": "mini", "question_id": "mini-02", "seed": 0, "answer": ["http://example.org/mini/entities/bob", "Dave"]}) + "\n")
    db = tmp_path / "list.duckdb"
    run_id = replay_run(mini_holdout, mini_gold, db, replay, seeds=1)
    holdout = load_holdout(mini_holdout)
    with ResultsDB(db, read_only=True) as results:
        sample = build_sample(SampleSource(results, load_gold(mini_gold), holdout, store_opener(KgevalConfig(), holdout)), run_id, "mini-02")
    assert sample.execution.source == "answer-list"
    assert sample.answer_table.columns == ["item"]
    assert {tuple(r.cells): r.mark for r in sample.answer_table.rows} == {(E + "bob",): "matched", ("Dave",): "extra"}
    assert _cells(sample.gold_table, "missing") == [[E + "alice"]]


def test_a_store_changed_since_the_run_is_said_not_hidden(replayed):
    holdout_dir, gold_dir, db, run_id = replayed
    kg_file = holdout_dir / "mini" / "kg.ttl"
    kg_file.write_text(MINI_TTL.replace("e:alice a ex:Person ; rdfs:label \"Alice\"@en ; ex:age \"34\"", "e:alice a ex:Person ; rdfs:label \"Alice\"@en ; ex:age \"44\""), encoding="utf-8")
    edited = load_holdout(holdout_dir)
    with ResultsDB(db, read_only=True) as results, pytest.raises(CheckFailed, match="mini/kg.ttl: sha256 differs from .*MANIFEST.json"):
        build_sample(SampleSource(results, load_gold(gold_dir), edited, store_opener(KgevalConfig(), edited)), run_id, "mini-02")  # not sealed: damaged, or an edit
    seal_holdout(holdout_dir)  # the edit is meant: sealed, the KG has changed since the run
    holdout = load_holdout(holdout_dir)
    with ResultsDB(db, read_only=True) as results:
        sample = build_sample(SampleSource(results, load_gold(gold_dir), holdout, store_opener(KgevalConfig(), holdout)), run_id, "mini-02")
    assert sample.execution.differs_from_run and sample.execution.run_total == 1
    assert sample.answer_table.total == 0
    assert any("the run stored 1" in n and "not the ones judged" in n for n in sample.notes)


def test_without_a_store_or_gold_the_view_says_what_it_cannot_show(replayed):
    _, _, db, run_id = replayed
    with ResultsDB(db, read_only=True) as results:
        sample = build_sample(SampleSource(results, {}), run_id, "mini-02")
    assert sample.gold is None and sample.gold_table is None and sample.answer_table is None
    assert any("no store" in n for n in sample.notes) and any("no gold entry" in n for n in sample.notes)


def test_unknown_questions_and_seeds_are_named(source, replayed):
    with pytest.raises(InputError, match="no question 'mini-99'; questions: mini-01, mini-02"):
        build_sample(source, replayed[3], "mini-99")
    with pytest.raises(InputError, match="no attempt with seed 7; seeds: 0, 1"):
        build_sample(source, replayed[3], "mini-02", seed=7)


def test_the_index_has_one_line_per_attempt_with_outcome_disagreement_and_flags(source, replayed):
    lines = {(s.question_id, s.seed): s for s in sample_index(source, replayed[3])}
    assert len(lines) == 16  # the unrecorded attempt is an attempt too
    assert lines[("mini-01", 1)].outcome == "wrong" and lines[("mini-01", 1)].path == "invalid_sparql"
    assert lines[("mini-04", 1)].outcome == "error" and lines[("mini-04", 1)].error_kind == "missing"
    assert lines[("mini-06", 0)].disagreement and lines[("mini-06", 0)].outcome == "wrong"
    assert not lines[("mini-02", 0)].disagreement and lines[("mini-02", 0)].path == "set"
    assert lines[("mini-07", 0)].gold_flags == ["empty"] and lines[("mini-07", 0)].outcome == "correct"
    assert sorted(q for (q, s), line in lines.items() if s == 0 and line.outcome == "wrong") == ["mini-02", "mini-05", "mini-06", "mini-08"]
    assert sorted(q for (q, s), line in lines.items() if s == 1 and line.outcome == "wrong") == ["mini-01", "mini-02", "mini-05", "mini-06", "mini-08"]


def test_messy_sparql_is_kept_verbatim(source, replayed):
    sample = build_sample(source, replayed[3], "mini-02")
    assert sample.attempt.sparql.startswith(P) and "# only the young ones" in sample.attempt.sparql


def test_a_tied_gold_is_shown_as_the_acceptable_answer_the_judges_compared(tmp_path):
    """ORDER BY ?d LIMIT 2 cuts through the sales group (Alice, Bob): either is right. A candidate
    that keeps Bob where the gold kept Alice is compared with the acceptable answer holding Bob."""
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.stores import EmbeddedStore
    from tests.conftest import PREFIX, write_holdout

    question = {"id": "tie-01", "question": "Name two people by department.", "domain": "hr", "tags": ["list"],
                "sparql": PREFIX + "SELECT ?p WHERE { ?p ex:worksIn ?d } ORDER BY ?d LIMIT 2"}
    holdout_dir = write_holdout(tmp_path / "holdout", [question])
    holdout = load_holdout(holdout_dir)
    rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold")
    gold = load_gold(tmp_path / "gold")
    assert "tied" in gold["tie-01"].flags
    kept = {row[0].value.rsplit("/", 1)[1] for row in gold["tie-01"].result.rows}
    other = ({"alice", "bob"} - kept).pop()
    candidate = P + f"SELECT ?p WHERE {{ VALUES ?p {{ e:carol e:{other} }} }}"
    replay = tmp_path / "tie.jsonl"
    replay.write_text(json.dumps({"kg": "mini", "question_id": "tie-01", "seed": 0, "sparql": candidate}) + "\n")
    run_id = replay_run(holdout_dir, tmp_path / "gold", tmp_path / "r.duckdb", replay, seeds=1)
    with ResultsDB(tmp_path / "r.duckdb", read_only=True) as results:
        sample = build_sample(SampleSource(results, gold, holdout, store_opener(KgevalConfig(), holdout)), run_id, "tie-01")
    assert sample.gold.flags == ["tied"] and "any 1 of 2 rows" in sample.gold.ties
    assert {v.judge: v.correct for v in sample.verdicts}["execution"] is True
    assert sorted(c[0] for c in _cells(sample.gold_table, "matched")) == sorted([E + "carol", E + other])
    assert sample.gold_table.counts == {"matched": 2} and sample.answer_table.counts == {"matched": 2}
    assert any("the gold is tied" in n for n in sample.notes)


def test_an_excluded_question_is_named_as_excluded_and_ids_are_listed_in_numeric_order(mini_holdout, mini_gold, tmp_path):
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.holdout import exclude_questions
    from kgeval.stores import EmbeddedStore

    exclude_questions(mini_holdout, ["mini-03"], "asks about an entity the KG lacks; ticket 12")
    rebuild_gold(load_holdout(mini_holdout), lambda kg: EmbeddedStore(kg.files), GoldConfig(), mini_gold)  # resealed: the gold follows
    db = tmp_path / "r.duckdb"
    run_id = replay_run(mini_holdout, mini_gold, db, write_replay(tmp_path / "replay.jsonl"))
    holdout = load_holdout(mini_holdout)
    with ResultsDB(db, read_only=True) as results:
        source = SampleSource(results, load_gold(mini_gold), holdout, store_opener(KgevalConfig(), holdout))
        with pytest.raises(InputError, match=r"'mini-03' was excluded from the run on record \(asks about an entity the KG lacks; ticket 12\)"):
            build_sample(source, run_id, "mini-03")
        with pytest.raises(InputError) as unknown:
            build_sample(source, run_id, "mini-99")
    listed = str(unknown.value).split("questions: ")[1].split(", ")
    assert "mini-03" not in listed and listed == sorted(listed, key=lambda q: int(q.split("-")[1]))
