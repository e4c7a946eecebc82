"""Where the suite could not judge an accept, the accept is unchecked, never passed (DESIGN
invariant 14): a question whose suite kept no neighbour, a neighbour file damaged after the
suites were verified; and a run checks on the suite version it recorded and holds, whatever a
suite build does meanwhile. Each through the CLI (`python -m kgeval`, or its app in process
where a hook on the run's own steps sets the moment)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import traceback
from pathlib import Path

import pytest

import tests.runs.test_gold_race as gold_race
from kgeval.config import KgevalConfig, SuiteConfig
from kgeval.gold import read_suites
from kgeval.gold._layout import version_dir, version_name
from kgeval.runs import ResultsDB
from tests.conftest import MINI_QUESTIONS, PREFIX, write_holdout
from tests.suites.conftest import build

RANDOM = {
    "id": "mini-r", "question": "Who are the people?", "domain": "hr",
    "sparql": PREFIX + "SELECT ?p WHERE { ?p a ex:Person FILTER(RAND() >= 0) }",
}  # fmt: skip
"""A reference query whose rows are fixed but which uses RAND(): not deterministic on any
neighbour (the gold build flags the function), so its suite keeps none."""


def kgeval(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgeval", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def run(holdout: Path, gold: Path, db: Path, *more: str) -> subprocess.CompletedProcess:
    return kgeval("run", "--system", "oracle", "--seeds", "1", "--holdout", str(holdout), "--gold", str(gold), "--db", str(db), *more, cwd=db.parent)


@pytest.fixture(scope="module")
def with_random(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(holdout, gold with suites) of the mini KG with three questions and `RANDOM`."""
    root = tmp_path_factory.mktemp("random")
    holdout = write_holdout(root / "holdout", [*MINI_QUESTIONS[:3], RANDOM])
    build(holdout, root / "gold")
    return holdout, root / "gold"


def test_an_accept_on_an_empty_suite_is_unchecked_not_passed(with_random, tmp_path: Path) -> None:
    holdout, gold = with_random
    suite = read_suites(gold).suite("mini-r")
    assert suite is not None and suite.neighbours == [] and len(suite.left_out) == 8
    ran = run(holdout, gold, tmp_path / "r.duckdb")
    assert ran.returncode == 0, ran.stderr
    run_id = ran.stdout.strip().splitlines()[-1]
    report = kgeval("report", run_id, "--db", str(tmp_path / "r.duckdb"), "--gold", str(gold), "--format", "json", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    figures = json.loads(report.stdout)
    assert figures["overall"]["correct"] == 4  # the oracle is accepted on the KG
    assert figures["test_suite_accuracy"]["correct"] == 3, "an accept no neighbour checked was counted as passed"
    assert figures["suites"]["unchecked"] == 1
    (why,) = figures["suites"]["unchecked_why"]
    assert why.startswith("its suite has no neighbour")
    with ResultsDB(tmp_path / "r.duckdb", read_only=True) as db:
        item = next(i for i in db.receipt(run_id).items if i.item == "suites")
    assert item.passed and "1 question with an empty suite" in item.observed and "mini/mini-r" in item.observed


def test_suite_required_refuses_a_question_whose_suite_is_empty(with_random, tmp_path: Path) -> None:
    holdout, gold = with_random
    config = tmp_path / "kgeval.yaml"
    config.write_text("suite:\n  required: true\n")
    refused = run(holdout, gold, tmp_path / "r.duckdb", "--config", str(config))
    assert refused.returncode == 1, refused.stdout + refused.stderr
    shown = refused.stdout + refused.stderr
    assert "mini/mini-r: its suite has no neighbour" in shown and "kgeval suite show mini-r" in shown


@pytest.mark.parametrize("sandbox", [True, False])
def test_a_neighbour_file_damaged_after_the_checklist_fails_its_load(with_random, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: bool) -> None:
    """`read_suites` verified every neighbour file (the checklist's, then the run's as it starts
    dispatching); the run loads them later, at its first check that executes on them. A file
    edited in between (still valid N-Triples, the same triples) is refused by the load: each
    accept is unchecked by the suite, never passed on bytes no manifest verified; the sandbox's
    workers name the file. Without the sandbox (debugging) the in-process load is checked alike."""
    import kgeval.runs._run as run_module

    from typer.testing import CliRunner

    from kgeval.cli import app
    from kgeval.holdout import load_holdout

    holdout, built = with_random
    gold = tmp_path / "gold"
    shutil.copytree(built, gold, symlinks=True)
    suites = read_suites(gold)
    damaged = suites.version / suites.kgs["mini"].neighbours[suites.suite("mini-01").neighbours[0]].files[0]
    verified = run_module._suite_checker

    def verified_then_damaged(plan):  # noqa: ANN001, ANN202 - the suites read and verified, no attempt made yet
        checker = verified(plan)
        with damaged.open("a") as fh:
            fh.write("# edited after the suites were verified\n")
        return checker

    monkeypatch.setattr(run_module, "_suite_checker", verified_then_damaged)
    questions = [q for q in load_holdout(holdout).questions() if q.id != RANDOM["id"]]
    replay = tmp_path / "replay.jsonl"  # not the reference text: executed on the neighbours
    replay.write_text("".join(json.dumps({"kg": q.kg, "question_id": q.id, "sparql": q.sparql + "\n# executed"}) + "\n" for q in questions))
    db, config = tmp_path / "r.duckdb", tmp_path / "kgeval.yaml"
    config.write_text(f"store:\n  candidates:\n    sandbox: {str(sandbox).lower()}\n")
    ran = CliRunner().invoke(app, ["run", "--system", "replay", "--replay", str(replay), "--seeds", "1", "--holdout", str(holdout),
                                   "--gold", str(gold), "--db", str(db), "--config", str(config)])  # fmt: skip
    assert ran.exit_code == 0, ran.output
    with ResultsDB(db, read_only=True) as results:
        (run_id,) = [m.run_id for m in results.runs()]
        outcomes = {q: v.details["suite"] for q, _, v in results.verdicts(run_id) if v.judge == "execution"}
    assert sorted(outcomes) == [q.id for q in questions]
    for qid, outcome in outcomes.items():
        assert not outcome["checked"], f"{qid}: passed on a neighbour whose file no manifest verified: {outcome}"
        assert outcome["why"].startswith("the store failed on") and "the KG files changed since the store opened them" in outcome["why"]
        assert not sandbox or f"{damaged} does not hash as recorded" in outcome["why"]


class SuiteSwitch:
    """Builds the suites of the run's holdout twice into its gold, with other fuzzing seeds, once,
    when called: two new suite versions, so the run's is past the two a build keeps."""

    def __init__(self, holdout: Path, gold: Path) -> None:
        self.holdout, self.gold, self.switched_to = holdout, gold, None
        self._lock = threading.Lock()  # attempts start on several threads: one switch, the others wait

    def __call__(self) -> None:
        with self._lock:
            if self.switched_to is None:
                for seed in (1, 2):
                    build(self.holdout, self.gold, KgevalConfig(suite=SuiteConfig(seed=seed)))
                self.switched_to = version_dir(self.gold / "suites")


SWITCH_POINTS = {
    "planned": lambda s, mp: gold_race._after(gold_race.run_module, "plan_run", s, mp),
    "dispatching": lambda s, mp: gold_race._before(gold_race.run_module, "run_attempt", s, mp),
}


@pytest.mark.parametrize("point", list(SWITCH_POINTS))
def test_suites_rebuilt_during_a_run_are_not_those_it_checks_on(with_random, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    """A `suite build` that switches `<gold>/suites/current` while a run plans or dispatches
    changes nothing its accepts are checked on: the run checks on the suite version it resolved
    and recorded, and the builds' garbage collection leaves that version in place while the run
    holds it (as the gold's: tests/runs/test_gold_race.py). The accepts are executed on the
    neighbours (not the reference text), so the neighbours' files are read from that version."""
    from typer.testing import CliRunner

    from kgeval.cli import app
    from kgeval.holdout import load_holdout

    holdout, built = with_random
    gold = tmp_path / "gold"
    shutil.copytree(built, gold, symlinks=True)
    held = version_dir(gold / "suites")
    switch = SuiteSwitch(holdout, gold)
    SWITCH_POINTS[point](switch, monkeypatch)
    questions = [q for q in load_holdout(holdout).questions() if q.id != RANDOM["id"]]
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps({"kg": q.kg, "question_id": q.id, "sparql": q.sparql + "\n# executed"}) + "\n" for q in questions))
    db = tmp_path / "r.duckdb"
    ran = CliRunner().invoke(app, ["run", "--system", "replay", "--replay", str(replay), "--seeds", "1", "--concurrency", "2",
                                   "--holdout", str(holdout), "--gold", str(gold), "--db", str(db)])  # fmt: skip
    shown = ran.output + ("".join(traceback.format_exception(ran.exception)) if ran.exception and not isinstance(ran.exception, SystemExit) else "")
    assert switch.switched_to is not None and switch.switched_to != held, f"the hook never switched the suites: {shown}"
    assert ran.exit_code == 0, shown
    with ResultsDB(db, read_only=True) as results:
        (meta,) = results.runs()
        outcomes = {q: v.details["suite"] for q, _, v in results.verdicts(meta.run_id) if v.judge == "execution"}
    assert held.name == version_name(meta.suite_manifest_sha256), "the run recorded other suites than those it held"
    assert sorted(outcomes) == [q.id for q in questions]
    assert all(o["checked"] and o["passed"] for o in outcomes.values()), outcomes
    assert held.is_dir(), "a suite build's garbage collection removed the suites the run checks on"


def test_a_held_suite_version_is_collected_once_released(with_random, tmp_path: Path) -> None:
    """The hold ends with the run: a later build collects the version as before."""
    from kgeval.gold import hold_version

    holdout, built = with_random
    gold = tmp_path / "gold"
    shutil.copytree(built, gold, symlinks=True)
    held = version_dir(gold / "suites")
    switch = SuiteSwitch(holdout, gold)
    with hold_version(held):
        switch()
    assert held.is_dir()
    build(holdout, gold, KgevalConfig(suite=SuiteConfig(seed=3)))
    assert not held.exists()


def _edited(with_random, tmp_path: Path, edit) -> tuple[Path, Path]:  # noqa: ANN001
    """A copy of the holdout edited by `edit(holdout)` and sealed again, its gold rebuilt, its
    suites (those of the holdout before the edit) left as they were."""
    from kgeval.gold import rebuild_gold
    from kgeval.holdout import load_holdout, seal_holdout
    from tests.suites.conftest import store_for

    holdout, gold = tmp_path / "holdout", tmp_path / "gold"
    shutil.copytree(with_random[0], holdout)
    shutil.copytree(with_random[1], gold, symlinks=True)
    edit(holdout)
    seal_holdout(holdout)
    cfg = KgevalConfig()
    assert rebuild_gold(load_holdout(holdout), store_for(cfg), cfg.gold, gold).ok
    return holdout, gold


def test_suites_built_from_another_holdout_refuse_the_run(with_random, tmp_path: Path) -> None:
    """suite.required off (the default): suites the run would check accepts on, built from
    another holdout manifest, are not used silently: the run is refused, naming both hashes."""
    from kgeval.holdout import read_manifest

    def reword(holdout: Path) -> None:
        questions = holdout / "mini" / "questions.yaml"
        questions.write_text(questions.read_text().replace("Where does Alice work?", "In which department does Alice work?"))

    holdout, gold = _edited(with_random, tmp_path, reword)
    refused = run(holdout, gold, tmp_path / "r.duckdb")
    shown = refused.stdout + refused.stderr
    assert refused.returncode == 1, shown
    built_from, now = read_suites(gold).holdout_manifest_sha256, read_manifest(holdout)["sha256"]
    assert f"built from another holdout (holdout manifest {built_from[:12]}, the holdout's is {now[:12]})" in shown
    assert "its suites were built for other data" not in shown  # the KG's data is unchanged
    assert "suite.check_accepts: false" in shown
    config = tmp_path / "kgeval.yaml"
    config.write_text("suite:\n  check_accepts: false\n")  # judged without suites, on record: the run goes on
    assert run(holdout, gold, tmp_path / "r.duckdb", "--config", str(config)).returncode == 0


def test_suites_built_for_other_kg_data_refuse_the_run_and_its_dispatch(with_random, tmp_path: Path) -> None:
    """A KG's data changed since its suites were built: the checklist refuses the run, naming
    the KG and both data hashes; with a checklist that leaves the suites item out, the run
    refuses to dispatch for the same reason, judging nothing on those suites."""
    from kgeval.gold._fuzz import kg_sha256
    from tests.suites.conftest import REPO

    def add_a_person(holdout: Path) -> None:
        with (holdout / "mini" / "kg.ttl").open("a") as fh:
            fh.write('e:dave a ex:Person ; rdfs:label "Dave"@en ; ex:worksIn e:it .\n')

    holdout, gold = _edited(with_random, tmp_path, add_a_person)
    before, after = read_suites(gold).kgs["mini"].kg_sha256, kg_sha256([holdout / "mini" / "kg.ttl"])
    named = f"KG mini: its suites were built for other data (kg_sha256 {before[:12]}, its files now {after[:12]})"
    refused = run(holdout, gold, tmp_path / "a.duckdb")
    assert refused.returncode == 1 and named in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    checklist = tmp_path / "checklist.yaml"
    shutil.copy(REPO / "checklists" / "caught.yaml", tmp_path / "caught.yaml")
    shipped = (REPO / "checklists" / "pre_eval.yaml").read_text()
    checklist.write_text("\n".join(line for line in shipped.splitlines() if not line.strip().startswith("- suites")) + "\n")
    undispatched = run(holdout, gold, tmp_path / "b.duckdb", "--checklist", str(checklist))
    shown = undispatched.stdout + undispatched.stderr
    assert undispatched.returncode == 1 and named in shown and "suites built for other data do not judge" in shown, shown
    with ResultsDB(tmp_path / "b.duckdb", read_only=True) as db:
        assert all(not db.verdicts(m.run_id) for m in db.runs(status=None))
