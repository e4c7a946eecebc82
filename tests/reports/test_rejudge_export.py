"""`kgeval rejudge --from EXPORT.jsonl` (issue 42): an auditor with an export, the holdout and the
gold, and no results database, reproduces a run's verdicts and its seal's verdict hash; an
export line edited after the fact is named, never re-judged as genuine; a holdout or gold other
than the one the export names is refused; an answer edited with every hash made again is
re-judged and its attempt listed (exit 1)."""

from __future__ import annotations

import json

import pytest

from kgeval.reports import line_sha256
from kgeval.reports._export import lines_sha256
from kgeval.runs import ResultsDB, verdict_digest, verdicts_sha256
from tests.cli.test_cli import kgeval
from tests.conftest import MINI_QUESTIONS, REPO


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from tests.conftest import write_holdout

    tmp = tmp_path_factory.mktemp("export")
    holdout, gold, db = write_holdout(tmp / "holdout"), tmp / "gold", tmp / "r.duckdb"
    assert kgeval("gold", "rebuild", "--holdout", str(holdout), "--gold", str(gold)).returncode == 0
    ran = kgeval("run", "--system", "weak", "--seeds", "2", "--holdout", str(holdout), "--gold", str(gold), "--db", str(db))
    assert ran.returncode == 0, ran.stderr
    run_id = ran.stdout.strip().splitlines()[-1]
    export = tmp / "run.jsonl"
    assert kgeval("export", run_id, "--db", str(db), "-o", str(export)).returncode == 0
    with ResultsDB(db, read_only=True) as results:
        sealed = results.sealed_verdicts_sha256(run_id)
    return tmp, holdout, gold, run_id, export, sealed


def _lines(export) -> list[dict]:  # noqa: ANN001
    return [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]


def _write(path, records: list[dict]) -> None:  # noqa: ANN001
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records), encoding="utf-8")


def _rehashed(records: list[dict], *, verdicts: bool = False) -> list[dict]:
    """Every line's hash and the run record's lines hash made again (and the verdict hash, with
    `verdicts`): what an editor without the integrity key can do."""
    for r in records:
        r["line_sha256"] = line_sha256(r)
    seal = records[0]["run"]["seal"]
    seal["lines_sha256"] = lines_sha256([(r["question_id"], r["seed"], r["line_sha256"]) for r in records])
    if verdicts:
        seal["verdicts_sha256"] = verdicts_sha256([(r["question_id"], r["seed"], v["judge"], verdict_digest(r["question_id"], r["seed"], v)) for r in records for v in r["verdicts"]])
    return records


def test_an_export_alone_reproduces_the_verdicts_and_the_seal_hash(exported, tmp_path):
    _, holdout, gold, run_id, export, sealed = exported
    first = _lines(export)[0]
    assert first["run"]["seal"]["verdicts_sha256"] == sealed and first["run"]["metadata"]["run_id"] == run_id
    audit = tmp_path / "auditor.duckdb"  # no results database of the run's
    done = kgeval("rejudge", "--from", str(export), "--holdout", str(holdout), "--gold", str(gold), "--db", str(audit), "--format", "json")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["reproduced"] is True and data["changes"] == [] and data["identical"] == data["verdicts"] == 32
    assert data["source"] == "export" and data["verdicts_sha256"] == data["source_verdicts_sha256"] == sealed
    with ResultsDB(audit, read_only=True) as results:
        meta = results.metadata(data["run_id"])
        assert meta.derived_from.source == "export" and meta.derived_from.source_file == str(export) and meta.derived_from.source_run_id == run_id
        exported_verdicts = sorted((r["question_id"], r["seed"], v["judge"], json.dumps(v, sort_keys=True)) for r in _lines(export) for v in r["verdicts"])
        again = sorted((q, s, v.judge, json.dumps(v.model_dump(mode="json"), sort_keys=True)) for q, s, v in results.verdicts(data["run_id"]))
        assert again == exported_verdicts  # field for field


def test_an_edited_line_is_named_and_not_rejudged(exported, tmp_path):
    _, holdout, gold, _, export, _ = exported
    records = _lines(export)
    n = next(i for i, r in enumerate(records) if not r["verdicts"][0]["correct"])
    records[n]["verdicts"][0]["correct"] = True  # a wrong answer made right, its hash left as it was
    edited, audit = tmp_path / "edited.jsonl", tmp_path / "a.duckdb"
    _write(edited, records)
    done = kgeval("rejudge", "--from", str(edited), "--holdout", str(holdout), "--gold", str(gold), "--db", str(audit))
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and f"{edited}:{n + 1}: attempt {records[n]['question_id']} seed {records[n]['seed']}" in said, said
    assert "edited after the export" in said and "not re-judged as genuine" in said and not audit.exists()


@pytest.mark.parametrize(("verdicts", "said"), [(False, "its lines do not give the lines_sha256"), (True, "do not give the verdict hash its run's seal recorded")])
def test_an_edit_with_its_line_hash_made_again_is_caught_by_the_run_record(exported, tmp_path, verdicts, said):
    _, holdout, gold, _, export, sealed = exported
    records = _lines(export)
    n = next(i for i, r in enumerate(records) if not r["verdicts"][0]["correct"])
    records[n]["verdicts"][0]["correct"] = True
    records[n]["line_sha256"] = line_sha256(records[n])
    if verdicts:  # every hash of the file made again: only the seal's verdict hash, stated apart, is not
        _rehashed(records)
    _write(tmp_path / "edited.jsonl", records)
    done = kgeval("rejudge", "--from", str(tmp_path / "edited.jsonl"), "--holdout", str(holdout), "--gold", str(gold), "--db", str(tmp_path / "a.duckdb"))
    assert done.returncode == 2 and said in " ".join(done.stderr.split()), done.stderr


def test_an_answer_edited_with_every_hash_made_again_is_listed(exported, tmp_path):
    _, holdout, gold, _, export, _ = exported
    records = _lines(export)
    n = next(i for i, r in enumerate(records) if not r["verdicts"][0]["correct"] and r["sparql"])
    reference = next(q["sparql"] for q in MINI_QUESTIONS if q["id"] == records[n]["question_id"])
    records[n]["sparql"] = reference  # the right query put in place of the wrong one, verdicts left
    _write(tmp_path / "edited.jsonl", _rehashed(records, verdicts=True))
    done = kgeval("rejudge", "--from", str(tmp_path / "edited.jsonl"), "--holdout", str(holdout), "--gold", str(gold), "--db", str(tmp_path / "a.duckdb"))
    assert done.returncode == 1, done.stderr[-2000:]
    changed = [line for line in done.stdout.splitlines() if line.startswith("  ")]
    assert changed and all(f"{records[n]['question_id']} seed {records[n]['seed']}" in line for line in changed), done.stdout
    assert "wrong" in changed[0] and "-> right" in changed[0] and "differs from the source's" in done.stdout


def test_another_gold_or_holdout_is_refused_naming_both_manifests(exported, tmp_path):
    _, holdout, gold, _, export, _ = exported
    meta = _lines(export)[0]["run"]["metadata"]
    done = kgeval("rejudge", "--from", str(export), "--holdout", str(holdout), "--gold", str(REPO / "gold"), "--db", str(tmp_path / "a.duckdb"))
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and f"the gold of manifest {meta['gold_manifest_sha256'][:12]}" in said and "give the gold the run used (--gold)" in said, said
    done = kgeval("rejudge", "--from", str(export), "--holdout", str(REPO / "holdout"), "--gold", str(gold), "--db", str(tmp_path / "a.duckdb"))
    assert done.returncode == 2 and f"the holdout of manifest {meta['holdout_manifest_sha256'][:12]}" in " ".join(done.stderr.split()), done.stderr


def test_an_export_that_is_not_one_is_named(tmp_path):
    (tmp_path / "x.jsonl").write_text('{"kg": "mini", "question_id": "mini-01", "seed": 0}\n', encoding="utf-8")
    done = kgeval("rejudge", "--from", str(tmp_path / "x.jsonl"), "--db", str(tmp_path / "a.duckdb"))
    assert done.returncode == 2 and "not a kgeval export with its run record" in done.stderr, done.stderr
