"""A model's answer never vanishes into "missing" (issue 32, item 7): a replay record that
matches no question of the holdout stops the run naming it, with "did you mean" only for a
likely misspelling (issue 44); a KG named in another case than the holdout stores it (an older
import stored `cre_Doc_Template_Mgt` as `cre_doc_template_mgt`) is matched with one warning line. Driven through the CLI over a Spider-like benchmark imported with `kgeval holdout
import qald --kg-dir` (three KGs with mixed-case names)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kgeval.holdout import load_holdout
from tests.conftest import REPO
from tests.interop.test_benchmark_import import _people_ttl, _qald_benchmark

KGS = ("cre_Doc_Template_Mgt", "Pets_1", "concert_singer")


def kgeval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgeval", *args], capture_output=True, text=True, cwd=REPO, timeout=600)


@pytest.fixture(scope="module")
def spider_like(tmp_path_factory):
    """(holdout, gold) of a QALD benchmark over three KGs named as Spider names its databases."""
    root = tmp_path_factory.mktemp("spider-like")
    kg_dir = root / "kgs"
    kg_dir.mkdir()
    for name in KGS:  # a directory per database, named as the benchmark's db_id field names it
        (kg_dir / name).mkdir()
        (kg_dir / name / "data.ttl").write_text(_people_ttl(name, 12), encoding="utf-8")
    qald = _qald_benchmark(root, {name: name for name in KGS}, per_kg=8)
    holdout, gold = root / "h", root / "g"
    done = kgeval("holdout", "import", "qald", str(qald), "--kg-dir", str(kg_dir), "--kg-field", "kg", "--out", str(holdout))
    assert done.returncode == 0, done.stderr
    assert "stored otherwise" not in done.stdout, done.stdout  # the benchmark's names, as it writes them
    rebuilt = kgeval("gold", "rebuild", "--holdout", str(holdout), "--gold", str(gold))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert [kg.id for kg in load_holdout(holdout).kgs] == ["Pets_1", "concert_singer", "cre_Doc_Template_Mgt"]
    return holdout, gold


def _replay(path: Path, holdout: Path, rename: dict[str, str], extra: list[dict] = ()) -> Path:
    """Every question answered with its reference query, its KG written as `rename` says."""
    records = [{"kg": rename.get(q.kg, q.kg), "question_id": q.id, "sparql": q.sparql} for q in load_holdout(holdout).questions()]
    path.write_text("".join(json.dumps(r) + "\n" for r in [*records, *extra]), encoding="utf-8")
    return path


def _run(holdout: Path, gold: Path, replay: Path, db: Path) -> subprocess.CompletedProcess:
    return kgeval("run", "--system", "replay", "--replay", str(replay), "--seeds", "1", "--holdout", str(holdout), "--gold", str(gold), "--db", str(db))


def test_a_kg_named_as_the_benchmark_writes_it_is_matched_with_one_warning(spider_like, tmp_path):
    """A replay written against an older import's lower-cased names. Before: the 8 questions of
    such a KG were 'missing: no recorded answer' and the run published a number without them."""
    holdout, gold = spider_like
    replay = _replay(tmp_path / "r.jsonl", holdout, {"cre_Doc_Template_Mgt": "cre_doc_template_mgt", "Pets_1": "pets_1"})
    ran = _run(holdout, gold, replay, tmp_path / "r.duckdb")
    assert ran.returncode == 0, ran.stderr
    warnings = [line for line in ran.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "16 replay records" in warnings[0] and "cre_doc_template_mgt as cre_Doc_Template_Mgt" in warnings[0], ran.stderr
    assert "accuracy: 100.0%" in ran.stdout and "errors: 0" in ran.stdout, ran.stdout


def test_a_record_for_a_question_the_holdout_lacks_stops_the_run_naming_it(spider_like, tmp_path):
    holdout, gold = spider_like
    first = load_holdout(holdout).kg("concert_singer").questions[0].id
    extra = [{"kg": "concert_singers", "question_id": first, "sparql": "ASK {}"},
             {"kg": "cre_Doc_Template_Mgt", "question_id": "cre_Doc_Template_Mgt-99", "sparql": "ASK {}"}]
    replay = _replay(tmp_path / "r.jsonl", holdout, {}, extra)
    ran = _run(holdout, gold, replay, tmp_path / "r.duckdb")
    assert ran.returncode == 2, (ran.returncode, ran.stderr)
    assert "2 of 26 replay records match no question of the holdout" in ran.stderr, ran.stderr
    assert f"{replay}:25: kg 'concert_singers', question_id '{first}': no such question (did you mean 'concert_singer/{first}'?)" in ran.stderr
    # another number is another question, never offered (world_1-764 is not world_1-796)
    assert f"{replay}:26: kg 'cre_Doc_Template_Mgt', question_id 'cre_Doc_Template_Mgt-99': no such question\n" in ran.stderr, ran.stderr
    assert "accuracy" not in ran.stdout


def test_a_qald_replay_naming_the_kg_in_another_case_is_matched(spider_like, tmp_path):
    """The QALD replay reader matches a question by its source id and the benchmark's KG field,
    ignoring the field's case; a source id the holdout lacks is named, never skipped."""
    from kgeval.errors import InputError
    from kgeval.systems import ReplaySystem

    holdout, _ = spider_like
    loaded = load_holdout(holdout)
    kg = loaded.kg("cre_Doc_Template_Mgt")
    source_id = kg.source["ids"][kg.questions[0].id]
    doc = {"questions": [{"id": source_id, "kg": "CRE_DOC_TEMPLATE_MGT", "query": {"sparql": kg.questions[0].sparql}}]}
    (tmp_path / "q.json").write_text(json.dumps(doc), encoding="utf-8")
    assert ReplaySystem(tmp_path / "q.json", loaded).respond(kg.questions[0], 0).sparql == kg.questions[0].sparql
    doc["questions"][0]["id"] = "999"
    (tmp_path / "q.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match="question 999: no question of the holdout was imported from source id '999'"):
        ReplaySystem(tmp_path / "q.json", loaded)


def test_a_record_for_a_question_excluded_on_record_is_counted_excluded_not_refused(spider_like, tmp_path):
    """Issue 44 item 2: the benchmark's answers cover every question, those excluded on record
    too; their records are not asked and are said to be so, never refused. A record for a
    question that does not exist still stops the run, naming it."""
    import shutil

    holdout, _ = spider_like
    copy, gold = tmp_path / "h", tmp_path / "g"
    shutil.copytree(holdout, copy)
    left_out = [q.id for q in load_holdout(copy).kg("Pets_1").questions[:2]]
    excluded = kgeval("holdout", "exclude", *left_out, "--why", "reference query is ambiguous", "--holdout", str(copy))
    assert excluded.returncode == 0, excluded.stderr
    assert kgeval("gold", "rebuild", "--holdout", str(copy), "--gold", str(gold)).returncode == 0
    replay = _replay(tmp_path / "r.jsonl", copy, {})
    ran = _run(copy, gold, replay, tmp_path / "r.duckdb")
    assert ran.returncode == 0, ran.stderr
    assert f"replay records for 2 question(s) excluded on record are not asked (counted as excluded: {', '.join(sorted(left_out))})" in ran.stderr
    assert "accuracy: 100.0%" in ran.stdout and "excluded on record: 2" in ran.stdout, ran.stdout
    ghost = _replay(tmp_path / "g.jsonl", copy, {}, [{"kg": "Pets_1", "question_id": "Pets_1-999", "sparql": "ASK {}"}])
    stopped = _run(copy, gold, ghost, tmp_path / "g.duckdb")
    assert stopped.returncode == 2 and "1 of 25 replay records match no question" in stopped.stderr, stopped.stderr
    assert "question_id 'Pets_1-999': no such question" in stopped.stderr
