"""`kgeval show` as a user runs it: a replay run made by `kgeval run` with a configuration file
(primary judge `seed`, two seeds), then shown from another directory."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from tests.cli.test_cli import kgeval
from tests.viewing import write_replay


@pytest.fixture
def cli_run(mini_holdout, mini_gold, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # rich wraps to the terminal width; a wide one keeps lines whole
    config = tmp_path / "kgeval.yaml"
    config.write_text(yaml.safe_dump({"judges": {"primary": "seed"}, "run": {"seeds": 2}}), encoding="utf-8")
    db = tmp_path / "results.duckdb"
    ran = kgeval("run", "--system", "replay", "--replay", str(write_replay(tmp_path / "replay.jsonl")), "--holdout", str(mini_holdout),
                 "--gold", str(mini_gold), "--db", str(db), "--config", str(config))
    assert ran.returncode == 0, ran.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return db, ran.stdout.strip().splitlines()[-1], elsewhere


def test_show_prints_rows_beside_the_gold_with_marks_and_every_verdict(cli_run):
    db, run_id, cwd = cli_run
    shown = kgeval("show", run_id, "mini-06", "--seed", "1", "--db", str(db), "--page-size", "10", cwd=cwd)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "List all items." in text and "seed 1" in text
    assert "answer: 29 rows (29 matched)" in text and "gold: 30 rows (29 matched, 1 missing)" in text
    assert "rows 1–10 of 29 (page 1 of 3)" in text and "rows 1–10 of 30 (page 1 of 3)" in text
    assert "seed (primary)" in text and "execution" in text and "P 1.000 R 0.967" in text
    assert "executed again read-only on oxigraph-embedded" in text
    assert "seeds: 0 correct, 1 correct (shown); --seed S shows another" in shown.stderr
    pages = [kgeval("show", run_id, "mini-06", "--seed", "1", "--db", str(db), "--page-size", "10", "--page", str(n), cwd=cwd).stdout for n in (1, 2, 3)]
    assert "rows 21–29 of 29 (page 3 of 3)" in pages[2] and "rows 21–30 of 30 (page 3 of 3)" in pages[2]
    marked = [line for page in pages for line in page.splitlines() if "entities/item7 " in line]
    assert len(marked) == 1 and "│ - │ http://example.org/mini/entities/item7" in marked[0]  # on the gold side only, marked missing


def test_show_opens_the_wrong_seed_first_when_seeds_disagree_and_lists_them(cli_run):
    """mini-01: seed 0 is right, seed 1's SPARQL does not parse. Without --seed, the wrong seed
    is shown (it was seed 0, which looks like nothing is amiss), and every seed is listed."""
    db, run_id, cwd = cli_run
    shown = kgeval("show", run_id, "mini/mini-01", "--db", str(db), "--format", "json", cwd=cwd)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["seed"] == 1
    text = kgeval("show", run_id, "mini-01", "--db", str(db), cwd=cwd)
    assert "seeds: 0 correct, 1 wrong (invalid sparql) (shown)" in text.stderr, text.stderr
    agreeing = kgeval("show", run_id, "mini-02", "--db", str(db), "--format", "json", cwd=cwd)
    assert json.loads(agreeing.stdout)["seed"] == 0  # both wrong: the first seed


def test_show_json_is_the_sample_model(cli_run):
    db, run_id, cwd = cli_run
    shown = kgeval("show", run_id, "mini-02", "--db", str(db), "--format", "json", cwd=cwd)
    assert shown.returncode == 0, shown.stderr
    sample = json.loads(shown.stdout)
    assert sample["primary_judge"] == "seed" and sample["verdicts"][0]["judge"] == "seed"
    assert [r["mark"] for r in sample["gold_table"]["rows"]] == ["matched", "missing"]
    assert sample["gold"]["review_state"] == "never_reviewed" and sample["attempt"]["state"] == "answered"


def test_show_names_what_is_wrong_with_the_request(cli_run, tmp_path):
    db, run_id, cwd = cli_run
    unknown = kgeval("show", run_id, "mini-99", "--db", str(db), cwd=cwd)
    assert unknown.returncode == 2 and "no question 'mini-99'" in unknown.stderr
    seed = kgeval("show", run_id, "mini-02", "--seed", "5", "--db", str(db), cwd=cwd)
    assert seed.returncode == 2 and "no attempt with seed 5; seeds: 0, 1" in seed.stderr
    run = kgeval("show", "no-such-run", "mini-02", "--db", str(db), cwd=cwd)
    assert run.returncode == 2 and "no run 'no-such-run'" in run.stderr
    gold = kgeval("show", run_id, "mini-02", "--db", str(db), "--gold", str(tmp_path / "nowhere"), cwd=cwd)
    assert gold.returncode == 2 and "nowhere: gold directory not found" in gold.stderr


def test_report_html_shows_each_wrong_answer_whole(cli_run):
    db, run_id, cwd = cli_run
    page = kgeval("report", run_id, "--db", str(db), "--format", "html", cwd=cwd)
    assert page.returncode == 0, page.stderr
    html = page.stdout
    # wrong under the primary (seed) judge: mini-01 (seed 1's SPARQL is broken), -02, -05, -08;
    # the judges disagree on mini-06
    assert html.count('<section class="sample"') == 5
    assert 'id="sample-mini-01-1"' in html and all(f'id="sample-mini-{n}-0"' in html for n in ("02", "05", "06", "08"))
    assert html.count('class="mark-missing"') >= 2  # Bob (mini-02), item7 (mini-06)
    # each wrong answer's reason is a list nested in its item, not a sibling of it
    assert re.search(r'<li><a href="#sample-mini-02-0"><strong>mini/mini-02</strong></a>[^\n]*\n<ul>\n<li>exact set match', html)


def test_show_has_help():
    result = kgeval("show", "--help")
    assert result.returncode == 0 and "Usage" in result.stdout and "--seed" in result.stdout


def test_show_never_cuts_a_query_at_the_terminal_width(cli_run, monkeypatch):
    """Issue 44 item 6: a one-line SPARQL query was cut at the terminal's width, and the FILTER
    that made it wrong was invisible. Every character of both queries is shown, wrapped."""
    from kgeval.holdout import load_holdout
    from kgeval.runs import ResultsDB

    db, run_id, cwd = cli_run
    monkeypatch.setenv("COLUMNS", "60")
    shown = kgeval("show", run_id, "mini-07", "--db", str(db), cwd=cwd)
    assert shown.returncode == 0, shown.stderr
    with ResultsDB(db, read_only=True) as results:
        holdout = load_holdout(results.metadata(run_id).holdout)
    reference = next(q.sparql for q in holdout.questions() if q.id == "mini-07")
    assert max(map(len, reference.splitlines())) > 60  # a line wider than the terminal
    squeezed = re.sub(r"[\s│]", "", shown.stdout)
    assert re.sub(r"\s", "", reference) in squeezed, shown.stdout
