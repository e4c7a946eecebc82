"""Issue 44 item 4: "empty gold" has one meaning everywhere. The checklist's `empty_gold` item,
`kgeval gold show --empty` and the report's "without the empty-like golds" figure count the
same golds (`kgeval.review.empty_golds`), by kind, in the same words: before, the checklist
counted a false ASK only when the KG lacked its vocabulary, `gold show --empty` every false ASK,
and the report without its gold the golds of no rows. Driven through `python -m kgeval`."""

from __future__ import annotations

import re

from tests.cli.test_cli import kgeval
from tests.conftest import MINI_QUESTIONS, PREFIX, REPO, write_holdout

COUNTED = re.compile(r"\d+ empty-like golds: \d+ empty, \d+ one-row zero/unbound, \d+ false ASK(?: \(\d+ excluded on record\))?")


def _three_counts(holdout, gold, db) -> tuple[str, str, str, str]:  # noqa: ANN001
    """(gold show's count, the checklist's, the report's, the report's figure line), each as given."""
    listed = kgeval("gold", "show", "--empty", "--holdout", str(holdout), "--gold", str(gold))
    assert listed.returncode == 0, listed.stderr
    ran = kgeval("run", "--system", "oracle", "--seeds", "1", "--holdout", str(holdout), "--gold", str(gold), "--db", str(db))
    assert ran.returncode == 0, ran.stderr[-3000:]
    run_id = ran.stdout.strip().splitlines()[-1]
    report = kgeval("report", run_id, "--db", str(db), "--holdout", str(holdout), "--gold", str(gold))
    assert report.returncode == 0, report.stderr[-3000:]
    (checklist,) = [line for line in report.stdout.splitlines() if line.startswith("- empty_gold: pass")]
    (figure,) = [line for line in report.stdout.splitlines() if "without the empty-like golds" in line]
    return COUNTED.search(listed.stderr).group(0), COUNTED.search(checklist).group(0), COUNTED.search(figure).group(0), figure


def test_the_shipped_sample_is_counted_alike_by_the_three(tmp_path):
    gold_show, checklist, report, figure = _three_counts(REPO / "holdout", REPO / "gold", tmp_path / "r.duckdb")
    assert gold_show == checklist == report == "9 empty-like golds: 4 empty, 0 one-row zero/unbound, 5 false ASK", (gold_show, checklist, report)
    assert "9 of them judged in this run" in figure


def test_a_holdout_of_every_kind_is_counted_alike_by_the_three(tmp_path):
    questions = [
        *MINI_QUESTIONS,  # mini-07 empty (expect_empty), mini-05 a false ASK over vocabulary the KG has
        {"id": "mini-20", "question": "Did Alice win an award?", "sparql": PREFIX + "ASK { e:alice ex:awardWon ?a }", "domain": "hr"},
        {"id": "mini-90", "question": "How old is the youngest in legal?", "sparql": PREFIX + "SELECT (MIN(?a) AS ?m) WHERE { ?p ex:worksIn e:legal ; ex:age ?a }", "domain": "hr"},
        {"id": "mini-91", "question": "How many people work in legal?", "sparql": PREFIX + "SELECT (COUNT(?p) AS ?n) WHERE { ?p ex:worksIn e:legal }", "domain": "hr"},
    ]
    holdout, gold = write_holdout(tmp_path / "holdout", questions), tmp_path / "gold"
    for step in (
        ("holdout", "confirm-empty", "mini-20", "mini-90", "--why", "no awards nor legal department in this extract", "--holdout", str(holdout)),
        ("holdout", "exclude", "mini-91", "--why", "duplicate of mini-90", "--holdout", str(holdout)),
        ("gold", "rebuild", "--include-excluded", "--holdout", str(holdout), "--gold", str(gold)),  # the excluded one's gold too
    ):
        done = kgeval(*step)
        assert done.returncode == 0, (step, done.stderr)
    gold_show, checklist, report, figure = _three_counts(holdout, gold, tmp_path / "r.duckdb")
    expected = "5 empty-like golds: 1 empty, 2 one-row zero/unbound, 2 false ASK (1 excluded on record)"
    assert gold_show == checklist == report == expected, (gold_show, checklist, report)
    assert "4 of them judged in this run" in figure  # the excluded one is not asked
