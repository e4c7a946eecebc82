"""KG names and question ids are stored as the benchmark writes them, by every importer, and
every command takes them as written; a near-miss gets "did you mean" only when it is a likely
misspelling (issue 44, item 1). An import once stored `cre_Doc_Template_Mgt` as
`cre_doc_template_mgt`: the benchmark's own ids were refused by `show`, `holdout exclude` and
`confirm-empty`, and an export's ids no longer joined with the benchmark's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgeval.cli import app
from kgeval.holdout import likely_meant, load_holdout
from tests.interop.test_benchmark_import import _text2sparql_dataset

NS = "http://bench.example/cre/"


def _cli(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "300"})


def _benchmark(root: Path) -> tuple[Path, Path]:
    """A QALD file over KG `cre_Doc_Template_Mgt` (a file in the KG directory), ids 764 and 796."""
    kg_dir = root / "kgs"
    kg_dir.mkdir(parents=True)
    (kg_dir / "cre_Doc_Template_Mgt.ttl").write_text(
        f'@prefix ex: <{NS}> .\nex:t1 a ex:Template ; ex:name "A" .\nex:t2 a ex:Template ; ex:name "B" .\n', encoding="utf-8"
    )
    questions = [
        {"id": qid, "kg": "cre_Doc_Template_Mgt", "question": [{"language": "en", "string": text}],
         "query": {"sparql": f"PREFIX ex: <{NS}>\n{sparql}"}}
        for qid, text, sparql in [
            ("764", "Names of the templates?", "SELECT ?n WHERE { ?t ex:name ?n }"),
            ("796", "How many templates?", "SELECT (COUNT(?t) AS ?c) WHERE { ?t a ex:Template }"),
        ]
    ]  # fmt: skip
    path = root / "bench.json"
    path.write_text(json.dumps({"dataset": {"id": "spider4sparql"}, "questions": questions}), encoding="utf-8")
    return path, kg_dir


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    path, kg_dir = _benchmark(tmp_path)
    done = _cli("holdout", "import", "qald", str(path), "--kg-dir", str(kg_dir), "--out", str(tmp_path / "h"))
    assert done.exit_code == 0, done.output
    assert "stored otherwise" not in done.output  # nothing renamed, nothing to warn about
    return tmp_path / "h"


def test_qald_import_keeps_the_benchmarks_kg_name_and_ids(imported):
    holdout = load_holdout(imported)
    assert [kg.id for kg in holdout.kgs] == ["cre_Doc_Template_Mgt"]
    assert [q.id for q in holdout.questions()] == ["cre_Doc_Template_Mgt-764", "cre_Doc_Template_Mgt-796"]
    assert (imported / "cre_Doc_Template_Mgt" / "questions.yaml").is_file()


def test_text2sparql_import_keeps_the_directory_name(tmp_path):
    dataset = _text2sparql_dataset(tmp_path / "Corporate_KG", "corporate", "corp")
    done = _cli("holdout", "import", "text2sparql", str(dataset), "--out", str(tmp_path / "h"))
    assert done.exit_code == 0, done.output
    assert [kg.id for kg in load_holdout(tmp_path / "h").kgs] == ["Corporate_KG"]


def test_the_benchmarks_ids_are_taken_by_the_record_commands(imported):
    excluded = _cli("holdout", "exclude", "cre_Doc_Template_Mgt-764", "--why", "ambiguous", "--holdout", str(imported))
    assert excluded.exit_code == 0, excluded.output
    confirmed = _cli("holdout", "confirm-empty", "cre_Doc_Template_Mgt/cre_Doc_Template_Mgt-796", "--why", "x", "--holdout", str(imported))
    assert confirmed.exit_code == 0, confirmed.output
    assert set(load_holdout(imported).exclusions) == {"cre_Doc_Template_Mgt-764"}


def test_a_likely_misspelling_gets_did_you_mean(imported):
    lower = _cli("holdout", "exclude", "cre_doc_template_mgt-764", "--why", "x", "--holdout", str(imported))
    assert lower.exit_code == 2
    assert "did you mean 'cre_Doc_Template_Mgt-764'?" in lower.output, lower.output
    slip = _cli("holdout", "exclude", "cre_Doc_Tempalte_Mgt-796", "--why", "x", "--holdout", str(imported))
    assert slip.exit_code == 2 and "did you mean 'cre_Doc_Template_Mgt-796'?" in slip.output, slip.output


def test_another_number_is_never_suggested(imported):
    """world_1-764 is not world_1-796: a near miss in a number names another question."""
    other = _cli("holdout", "exclude", "cre_Doc_Template_Mgt-769", "--why", "x", "--holdout", str(imported))
    assert other.exit_code == 2 and "no question 'cre_Doc_Template_Mgt-769'" in other.output
    assert "did you mean" not in other.output, other.output


@pytest.mark.parametrize(
    ("given", "names", "meant"),
    [
        ("world_1-764", ["world_1-796", "world_1-765"], None),  # numbers differ: another question
        ("world_1-764", ["world_1-7640"], None),
        ("hr-01", ["hr-1", "hr-2"], "hr-1"),  # the same number written otherwise
        ("WORLD_1-764", ["world_1-764", "world_1-796"], "world_1-764"),
        ("wrold_1-764", ["world_1-764", "world_1-796"], "world_1-764"),
        ("hr-1", ["xy-1"], None),  # alike in nothing but the number
        ("retail-3", ["retail-a-3", "retail-b-3"], None),  # two as close: no guess
    ],
)
def test_likely_meant_near_misses(given, names, meant):
    assert likely_meant(given, names) == meant


def test_kgs_differing_only_in_case_are_refused(tmp_path):
    path, kg_dir = _benchmark(tmp_path)
    (kg_dir / "CRE_doc_template_mgt.ttl").write_bytes((kg_dir / "cre_Doc_Template_Mgt.ttl").read_bytes())
    doc = json.loads(path.read_text())
    doc["questions"].append({**doc["questions"][0], "id": "1", "kg": "CRE_doc_template_mgt"})
    path.write_text(json.dumps(doc), encoding="utf-8")
    done = _cli("holdout", "import", "qald", str(path), "--kg-dir", str(kg_dir), "--out", str(tmp_path / "h"))
    assert done.exit_code == 2 and "differ only in case" in done.output, done.output
    assert not (tmp_path / "h").exists()
