"""Issue 40: the report reads standard, headline and lenient on one axis and says how they differ.
A run through `kgeval run` (replay) on a small KG, each answer written to land on one side of a
gap: a label column beside the entities (headline above standard: `label_columns`), three columns
for the distinct type codes and a grouped count for a bare count (lenient above headline:
`extra_columns`), repeated rows (`duplicates`), and empty answers from a predicate the KG lacks
against empty golds (vacuous: standard above lenient, the count given)."""

from __future__ import annotations

import json

import pytest
import yaml

from kgeval.config import GoldConfig
from kgeval.gold import rebuild_gold
from kgeval.holdout import load_holdout, seal_holdout
from kgeval.judges._execution import LOGIC_VERSION
from kgeval.reports._leniency import older_standard_note
from kgeval.stores import EmbeddedStore
from tests.cli.test_cli import kgeval

P = "PREFIX v: <http://example.org/v/>\nPREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"
TTL = (
    "@prefix v: <http://example.org/v/> .\n@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
    + "".join(f'v:t{i} a v:Template ; rdfs:label "Template {i}" ; v:code "C{i % 3}" ; v:twin v:t{i} .\n' for i in range(9))
    + 'v:oslo a v:City ; rdfs:label "Oslo" .\nv:bergen a v:City ; rdfs:label "Bergen" .\n'
)
QUESTIONS = {
    # id: (reference, answer, (standard, headline, lenient))
    "cities": (P + "SELECT ?c WHERE { ?c a v:City }", P + "SELECT ?c ?l WHERE { ?c a v:City ; rdfs:label ?l }", (False, True, True)),
    "codes": (P + "SELECT DISTINCT ?k WHERE { ?t v:code ?k }", P + "SELECT ?t ?n ?k WHERE { ?t v:code ?k ; rdfs:label ?n }", (False, False, True)),
    "count": (P + "SELECT (COUNT(?t) AS ?n) WHERE { ?t a v:Template }",
              P + "SELECT ?y (COUNT(?t) AS ?n) WHERE { ?t a ?y FILTER(?y = v:Template) } GROUP BY ?y", (False, False, True)),
    "repeated": (P + "SELECT DISTINCT ?k WHERE { ?t v:code ?k }", P + "SELECT ?k WHERE { ?t v:code ?k }", (False, True, True)),
    "plain": (P + "SELECT ?c WHERE { ?c a v:City }", P + "SELECT ?city WHERE { ?city a v:City }", (True, True, True)),
    "wrong": (P + "SELECT ?c WHERE { ?c a v:City }", P + "SELECT ?c WHERE { ?c a v:Template }", (False, False, False)),
    **{
        f"empty-{i}": (P + f"SELECT ?t WHERE {{ ?t v:twin v:t{i} FILTER(?t != v:t{i}) }}", P + f"SELECT ?t WHERE {{ ?t v:sibling v:t{i} }}", (True, False, False))
        for i in range(5)
    },
}  # fmt: skip


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("figures")
    holdout_dir = tmp / "holdout"
    (holdout_dir / "kg").mkdir(parents=True)
    (holdout_dir / "kg" / "kg.ttl").write_text(TTL, encoding="utf-8")
    questions = [
        {"id": qid, "question": qid, "sparql": reference, "domain": "d", **({"expect_empty": True} if qid.startswith("empty") else {})}
        for qid, (reference, _, _) in QUESTIONS.items()
    ]
    (holdout_dir / "kg" / "questions.yaml").write_text(yaml.safe_dump({"kg": "kg", "title": "kg", "questions": questions}, sort_keys=False))
    seal_holdout(holdout_dir)
    assert rebuild_gold(load_holdout(holdout_dir), lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp / "gold").ok
    lines = [json.dumps({"kg": "kg", "question_id": qid, "seed": 0, "sparql": answer}) for qid, (_, answer, _) in QUESTIONS.items()]
    (tmp / "replay.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp / "kgeval.yaml").write_text(yaml.safe_dump({"run": {"seeds": 1}}), encoding="utf-8")
    common = ("--db", str(tmp / "r.duckdb"), "--config", str(tmp / "kgeval.yaml"))
    paths = ("--holdout", str(holdout_dir), "--gold", str(tmp / "gold"))
    ran = kgeval("run", "--system", "replay", "--replay", str(tmp / "replay.jsonl"), *paths, *common)
    assert ran.returncode == 0, ran.stderr
    run_id = ran.stdout.strip().splitlines()[-1]
    as_json = kgeval("report", run_id, "--gold", str(tmp / "gold"), "--format", "json", *common)
    as_markdown = kgeval("report", run_id, "--gold", str(tmp / "gold"), *common)
    assert as_json.returncode == 0 and as_markdown.returncode == 0, as_json.stderr + as_markdown.stderr
    return json.loads(as_json.stdout), as_markdown.stdout


def _expected(k: int) -> set[str]:
    return {qid for qid, (_, _, outcome) in QUESTIONS.items() if outcome[k]}


def test_each_figure_counts_the_questions_its_comparison_accepts(figures):
    report, _ = figures
    n = len(QUESTIONS)
    assert (report["standard_execution_accuracy"]["correct"], report["standard_execution_accuracy"]["n"]) == (len(_expected(0)), n)
    assert (report["overall"]["correct"], report["overall"]["n"]) == (len(_expected(1)), n)
    assert (report["lenient_accuracy"]["correct"], report["lenient_accuracy"]["n"]) == (len(_expected(2)), n)
    assert report["overall"]["correct"] <= report["lenient_accuracy"]["correct"]  # the headline never exceeds lenient
    assert report["lenient_accuracy"]["correct"] < report["standard_execution_accuracy"]["correct"]  # vacuous answers, this run


def test_the_gaps_name_the_questions_and_the_rules(figures):
    report, _ = figures
    gaps = report["figure_gaps"]
    assert set(gaps["above_standard"]) == _expected(1) - _expected(0) == {"cities", "repeated"}
    assert set(gaps["below_standard"]) == _expected(0) - _expected(1) == {f"empty-{i}" for i in range(5)}
    assert set(gaps["below_lenient"]) == _expected(2) - _expected(1) == {"codes", "count"}
    assert set(gaps["standard_only"]) == {f"empty-{i}" for i in range(5)} and gaps["standard_only_vacuous"] == 5
    rules = report["rule_accepts"]
    assert rules["label_columns"]["which"] == ["cities"] and rules["duplicates"]["which"] == ["repeated"]
    assert rules["extra_columns"]["which"] == ["codes", "count"] and rules["extra_columns"]["on"] is False
    changes = {c["rule"]: (c["accepts"], c["rejects"]) for c in report["rule_changes"] if c["judge"] == "execution"}
    assert changes["label_columns"] == (1, 0) and changes["duplicates"] == (1, 0) and changes["extra_columns"] == (0, 2)


def test_the_markdown_reads_the_three_figures_on_one_axis_and_explains_the_gaps(figures):
    _, markdown = figures
    table = markdown[markdown.index("| figure | accuracy |"):]
    rows = [line.split(" | ")[0].strip("| *") for line in table.splitlines()[2:5]]
    assert rows == ["standard execution accuracy", "headline", "lenient"]
    assert "headline above standard on 2 question(s): accepted by a rule that is on (alone: label_columns 1, duplicates 1)" in markdown
    assert "below it on 5: rejected by the vacuous check" in markdown
    assert "lenient above headline on 2 question(s): only a rule switched off accepts them (alone: extra_columns 2)" in markdown
    assert "**lenient below standard**: 5 question(s) standard accepts and lenient rejects, 5 of them vacuous answers" in markdown


def test_a_run_judged_before_the_fields_comparator_says_what_its_standard_figure_counts():
    assert older_standard_note({"execution": f"execution-{LOGIC_VERSION}+abcdef12"}) is None
    note = older_standard_note({"execution": "execution-12+abcdef12", "seed": "seed-13+0"})
    assert note is not None and "logic 12's: rows compared as sets and extra columns ignored" in note
    assert older_standard_note({"seed": "seed-13+0"}) is None
