"""Suites are built, stored and switched in like the gold; unchanged questions keep their suite."""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from kgeval.errors import CheckFailed
from kgeval.gold import read_gold, read_suites, suites_path
from kgeval.gold._layout import DAMAGED_GOLD, DISPLAY_DIR, MANIFEST
from tests.suites.conftest import REPO, build, copy_kgs


def test_every_question_has_a_distilled_suite(hr_suites) -> None:
    holdout, gold, report = hr_suites
    assert sorted(report.built) == sorted(s.question_id for s in report.suites) and not report.skipped
    suites = read_suites(gold)
    for suite in report.suites:
        assert suite.neighbours, suite.question_id
        assert len(suite.neighbours) <= 8
        for n in suite.neighbours:
            entry = suites.entry(n, suite.question_id)
            assert entry.kg == n and entry.query_sha256 == suite.query_sha256 and not entry.nondeterministic
    assert statistics.median(s.kill_rate for s in report.suites if s.kill_rate is not None) >= 0.95
    kept = suites.kgs["hr"].neighbours
    assert set(kept) == {n for s in report.suites for n in s.neighbours}  # neighbours no question keeps are not stored
    for n, info in kept.items():
        assert info.triples <= suites.kgs["hr"].triples
        assert all((suites.version / f).is_file() for f in info.files)


def test_killed_mutants_name_their_neighbour(hr_suites) -> None:
    _, gold, report = hr_suites
    suites = read_suites(gold)
    killed = [(s, m) for s in report.suites for m in s.mutants if m.status == "killed"]
    assert killed, "no mutant needed a neighbour: the suites add nothing"
    for suite, mutant in killed:
        assert mutant.by in suite.neighbours
        assert suites.entry(mutant.by, suite.question_id).result.sha256() != ""


def test_unchanged_questions_keep_their_suite_and_a_changed_one_is_distilled(tmp_path: Path) -> None:
    holdout = copy_kgs(tmp_path / "holdout", "hr")
    gold = tmp_path / "gold"
    first = build(holdout, gold)
    version = read_suites(gold).version
    again = build(holdout, gold)
    assert sorted(again.reused) == sorted(first.built) and not again.built
    assert read_suites(gold).version == version  # the same bytes: the same version
    questions = holdout / "hr" / "questions.yaml"
    questions.write_text(questions.read_text().replace('"Karen Novak"', '"Omar Tanaka"', 1))
    from kgeval.holdout import seal_holdout

    seal_holdout(holdout)
    third = build(holdout, gold)
    assert third.built == ["hr-01"] and len(third.reused) == len(first.built) - 1


def test_an_edited_neighbour_is_refused(hr_suites, tmp_path: Path) -> None:
    _, gold, _ = hr_suites
    suites = read_suites(gold)
    neighbour = next(iter(suites.kgs["hr"].neighbours.values()))
    path = suites.version / neighbour.files[0]
    original = path.read_bytes()
    try:
        path.write_bytes(original.replace(b"http://", b"http:/", 1))  # any edit (not a value the fuzzer may have drawn away)
        with pytest.raises(CheckFailed, match="sha256 differs"):
            read_suites(gold)
    finally:
        path.write_bytes(original)
    read_suites(gold)


@pytest.mark.parametrize("how", ["a garbage byte", "emptied", "missing", "a directory"])
def test_a_damaged_display_file_is_refused_as_the_golds_is(hr_suites, how: str) -> None:
    """DESIGN invariant 9: a suite's display file no judge reads is still evidence of the
    version; damaged, the suites fail closed exactly as a gold with a damaged display does."""
    _, gold, _ = hr_suites
    suites = read_suites(gold)
    neighbour = sorted(suites.entries)[0]  # a suite version's displays are its neighbours'
    for read, version, kg in ((read_gold, read_gold(gold).version, "hr"), (read_suites, suites.version, neighbour)):
        path = version / DISPLAY_DIR / f"{kg}.json"
        original = path.read_bytes()
        try:
            _damage(path, original, how)
            with pytest.raises(CheckFailed, match=re.escape(f"{DISPLAY_DIR}/{kg}.json")) as refused:
                read(gold)
            assert "missing" in str(refused.value) or DAMAGED_GOLD in str(refused.value), refused.value
        finally:
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
            path.write_bytes(original)
    read_suites(gold)


def _damage(path: Path, original: bytes, how: str) -> None:
    if how == "a garbage byte":
        path.write_bytes(original[:10] + (b"X" if original[10:11] != b"X" else b"Y") + original[11:])
    elif how == "emptied":
        path.write_bytes(b"")
    else:
        path.unlink()
        if how == "a directory":
            path.mkdir()


def test_signed_with_the_integrity_key(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KGEVAL_INTEGRITY_KEY", "k" * 40)
    holdout = copy_kgs(tmp_path / "holdout", "trials")
    gold = tmp_path / "gold"
    build(holdout, gold)
    manifest = suites_path(gold) / "current" / MANIFEST
    assert '"tag"' in manifest.read_text()
    monkeypatch.setenv("KGEVAL_INTEGRITY_KEY", "x" * 40)
    with pytest.raises(CheckFailed):
        read_suites(gold)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink() and p.name != ".lock"}


def test_gold_seal_signs_suites_written_without_the_key(hr_suites, tmp_path: Path) -> None:
    """Suites have a gold's manifest and HMAC: `kgeval gold seal` on `<gold>/suites` signs a
    version written without the key as it is (only MANIFEST.tag is added, its manifest hash
    unchanged), after which the key verifies it and another key does not; a tampered version
    is refused (exit 2) and nothing is written."""
    _, built, _ = hr_suites
    gold = tmp_path / "gold"
    shutil.copytree(built, gold, symlinks=True)
    key, other = tmp_path / "key", tmp_path / "other"
    key.write_text("k" * 64, encoding="utf-8")
    other.write_text("o" * 64, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KGEVAL_INTEGRITY_KEY")} | {"PYTHONPATH": str(REPO)}
    run = lambda *args, key_file=None: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "kgeval", *args], capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env=env | ({"KGEVAL_INTEGRITY_KEY_FILE": str(key_file)} if key_file else {}),
    )  # fmt: skip
    show = ("suite", "show", "--gold", str(gold))
    unsigned = run(*show, key_file=key)
    assert unsigned.returncode == 1 and "no integrity tag" in unsigned.stderr, unsigned.stderr
    assert f"`kgeval gold seal --gold {suites_path(gold)}`" in unsigned.stderr, unsigned.stderr  # the directory to seal
    before, files = read_suites(gold).manifest_sha256, _files(gold)

    tampered = tmp_path / "tampered"
    shutil.copytree(built, tampered, symlinks=True)
    display = next((suites_path(tampered) / "current" / "display").iterdir())
    display.write_bytes(display.read_bytes() + b" ")
    untouched = _files(tampered)
    refused = run("gold", "seal", "--gold", str(suites_path(tampered)), "--key-file", str(key))
    assert refused.returncode == 2 and "not sealed" in refused.stderr and f"display/{display.name}: sha256 differs" in refused.stderr, refused.stderr
    assert _files(tampered) == untouched

    sealed = run("gold", "seal", "--gold", str(suites_path(gold)), "--key-file", str(key))
    assert sealed.returncode == 0 and f"gold manifest {before[:12]}, unchanged" in sealed.stdout, sealed.stderr
    version = os.readlink(suites_path(gold) / "current")
    after = _files(gold)
    assert [n for n in after if n not in files] == [f"suites/{version}/{MANIFEST.replace('.json', '.tag')}"]
    assert {n: b for n, b in after.items() if n in files} == files
    verified = run(*show, key_file=key)
    assert verified.returncode == 0 and "median kill rate" in verified.stdout, verified.stderr
    assert read_suites(gold).manifest_sha256 == before
    wrong = run(*show, key_file=other)
    assert wrong.returncode == 1 and "does not match" in wrong.stderr, wrong.stderr
    again = run("gold", "seal", "--gold", str(suites_path(gold)), "--key-file", str(key))
    assert again.returncode == 0 and "already signed with this integrity key" in again.stdout, again.stderr


def test_gold_seal_of_a_gold_seals_its_suites_too(hr_suites, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gold with suites is sealed whole: its suites first (a damaged one: exit 2, nothing
    written, the gold left unsigned), then the gold; both then verify under the key."""
    _, built, _ = hr_suites
    key = tmp_path / "key"
    key.write_text("k" * 64, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KGEVAL_INTEGRITY_KEY")} | {"PYTHONPATH": str(REPO)}
    seal = lambda gold: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "kgeval", "gold", "seal", "--gold", str(gold), "--key-file", str(key)], capture_output=True, text=True, timeout=600, env=env
    )  # fmt: skip
    damaged = tmp_path / "damaged"
    shutil.copytree(built, damaged, symlinks=True)
    record = suites_path(damaged) / "current" / "suites" / "hr.json"
    record.write_bytes(record.read_bytes().replace(b'"killed"', b'"survived"', 1))
    untouched = _files(damaged)
    refused = seal(damaged)
    assert refused.returncode == 2 and "suites/hr.json: sha256 differs" in refused.stderr, refused.stderr
    assert _files(damaged) == untouched

    gold = tmp_path / "gold"
    shutil.copytree(built, gold, symlinks=True)
    sealed = seal(gold)
    assert sealed.returncode == 0 and f"gold {suites_path(gold)}: content verified, signed" in " ".join(sealed.stdout.split()), sealed.stdout
    monkeypatch.setenv("KGEVAL_INTEGRITY_KEY_FILE", str(key))
    assert read_suites(gold).kgs and read_gold(gold).entries  # both signed: neither refused


def test_cli_builds_then_shows(tmp_path: Path) -> None:
    holdout = copy_kgs(tmp_path / "holdout", "trials")
    gold = tmp_path / "gold"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = lambda *args: subprocess.run([sys.executable, "-m", "kgeval", *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)  # noqa: E731
    assert run("gold", "rebuild", "--holdout", str(holdout), "--gold", str(gold)).returncode == 0
    built = run("suite", "build", "--holdout", str(holdout), "--gold", str(gold))
    assert built.returncode == 0, built.stderr
    assert "median kill rate" in built.stdout and "16 distilled" in built.stdout
    shown = run("suite", "show", "trials-02", "--gold", str(gold))
    assert shown.returncode == 0 and "trials-02: neighbours trials~n" in shown.stdout and "killed" in shown.stdout
    missing = run("suite", "show", "nope-1", "--gold", str(gold))
    assert missing.returncode == 2 and "nope-1: no suite" in missing.stderr
    again = run("suite", "build", "--holdout", str(holdout), "--gold", str(gold))
    assert "0 distilled, 16 unchanged" in again.stdout


def test_gold_rebuild_builds_the_suites_when_configured(tmp_path: Path) -> None:
    holdout = copy_kgs(tmp_path / "holdout", "trials")
    gold = tmp_path / "gold"
    config = tmp_path / "kgeval.yaml"
    config.write_text("suite:\n  with_gold: true\n  neighbours: 4\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ran = subprocess.run([sys.executable, "-m", "kgeval", "gold", "rebuild", "--holdout", str(holdout), "--gold", str(gold), "--config", str(config)],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "suites built in" in ran.stdout and "16 distilled" in ran.stdout
    suites = read_suites(gold)
    assert all(n.rsplit("~n", 1)[1] in ("00", "01", "02", "03") for n in suites.kgs["trials"].neighbours)
    config.write_text("suite:\n  neighbours: 0\n")
    bad = subprocess.run([sys.executable, "-m", "kgeval", "suite", "build", "--holdout", str(holdout), "--gold", str(gold), "--config", str(config)],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)  # fmt: skip
    assert bad.returncode == 2 and "suite.neighbours" in bad.stderr


def test_cli_summary_names_the_kill_rates(hr_suites) -> None:
    _, gold, _ = hr_suites
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    shown = subprocess.run([sys.executable, "-m", "kgeval", "suite", "show", "--gold", str(gold)], capture_output=True, text=True, env=env, timeout=600)
    assert shown.returncode == 0, shown.stderr
    assert "median kill rate" in shown.stdout and "kill rates: 100%" in shown.stdout


def test_judge_asked_only_about_results_unlike_the_reference_and_builds_agree(tmp_path: Path) -> None:
    """Distillation hashes each mutant's result on its cells and asks the judge (`Differs`) only
    about one whose hash is not the reference's: the judge accepts the gold itself, so building
    Terms and judging there is wasted. And the questions' work on the original KG runs while the
    neighbours are made: two builds (the same seed and KG) still give the same bytes."""
    from kgeval.config import KgevalConfig
    from kgeval.gold import build_suites
    from kgeval.holdout import load_holdout
    from kgeval.judges import judges_from_config
    from kgeval.runs import neighbour_store, suite_differs
    from tests.suites.conftest import store_for

    holdout = copy_kgs(tmp_path / "holdout", "hr")
    cfg = KgevalConfig()
    build(holdout, tmp_path / "first")  # the gold, and suites built as the CLI builds them
    judge = suite_differs(judges_from_config(cfg.judges)[cfg.judges.primary])
    asked: list[bool] = []

    def differs(question, entry, result, sparql) -> bool:  # noqa: ANN001
        asked.append(result.sha256() == entry.result_sha256)
        return judge(question, entry, result, sparql)

    second = tmp_path / "second"
    shutil.copytree(tmp_path / "first", second, ignore=shutil.ignore_patterns("suites"))
    build_suites(load_holdout(holdout), store_for(cfg), neighbour_store(cfg), differs, cfg.suite, cfg.gold, suites_path(second))
    assert asked and not any(asked), f"the judge was asked about {sum(asked)} results equal to the reference's"
    files = lambda gold: json.loads((suites_path(gold) / "current" / MANIFEST).read_text())["files"]  # noqa: E731
    assert files(second) == files(tmp_path / "first")


def test_suite_differs_hashes_no_result_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Distillation hashes a mutant's result once, on its cells (`_compared`), and asks the judge
    only about one unlike the reference's: `suite_differs` hashes nothing again, and still says
    what the judge says (a wrong result told apart; the reference's own result not)."""
    from kgeval.config import KgevalConfig
    from kgeval.gold._suite import Reference
    from kgeval.holdout import load_holdout
    from kgeval.judges import judges_from_config
    from kgeval.runs import suite_differs
    from kgeval.stores import EmbeddedStore, QueryResult

    cfg = KgevalConfig()
    holdout = load_holdout(REPO / "holdout")
    question = next(q for q in holdout.questions() if q.id == "hr-02")
    store = EmbeddedStore(next(kg for kg in holdout.kgs if kg.id == "hr").files)
    run = lambda text: store.execute_cells(text, timeout_s=60, row_cap=cfg.gold.row_cap)  # noqa: E731
    reference, wrong = run(question.sparql), run(question.sparql.replace("SELECT", "SELECT DISTINCT", 1) + " LIMIT 1")
    assert wrong.sha256() != reference.sha256()
    differs = suite_differs(judges_from_config(cfg.judges)[cfg.judges.primary])
    hashed = []
    real = QueryResult.sha256
    monkeypatch.setattr(QueryResult, "sha256", lambda self: hashed.append(self) or real(self))
    entry = Reference.of(reference)
    assert differs(question, entry, wrong.typed(), "wrong") is True
    assert differs(question, entry, reference.typed(), question.sparql) is False
    assert hashed == []


def test_the_reference_query_runs_on_the_neighbours_in_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DESIGN invariant 12 for the suite build: a reference query (an imported benchmark wrote
    it) runs on each neighbour as on the KG, in the sandbox workers at `gold.timeout_s` and
    `gold.row_cap`, never in this process on a copy of the neighbour."""
    import kgeval.runs
    from kgeval.config import KgevalConfig
    from kgeval.stores._embedded import EmbeddedStore

    cfg, opened, ran = KgevalConfig(), [], []
    real = kgeval.runs.neighbour_store

    def counted(config, workers=None):  # noqa: ANN001, ANN202
        open_one = real(config, workers)
        return lambda kg: opened.append(open_one(kg)) or opened[-1]

    trusted = EmbeddedStore._trusted

    def spied(self, query, **kw):  # noqa: ANN001, ANN003, ANN202
        if self in opened and kw["timeout_s"] == cfg.gold.timeout_s:
            ran.append((self._store is None, kw["row_cap"] in (1, cfg.gold.row_cap)))  # 1: an ASK
        return trusted(self, query, **kw)

    monkeypatch.setattr(kgeval.runs, "neighbour_store", counted)
    monkeypatch.setattr(EmbeddedStore, "_trusted", spied)
    build(copy_kgs(tmp_path / "holdout", "hr"), tmp_path / "gold", cfg)
    assert opened and ran, (len(opened), len(ran))
    assert ran == [(True, True)] * len(ran)
