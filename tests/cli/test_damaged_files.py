"""No damaged file of kgeval's is ever read as empty or absent (DESIGN invariant 9), beyond the
results database (tests/runs/test_damaged_db.py): the holdout (questions, KG data, manifest,
exclusions, confirmed empty answers), the gold (manifest, KG files, display files, `current`),
the configuration, the checklists, the access file, the schema gate's thresholds and
fingerprints, and the example bank. Each file is damaged the ways a disk, a copy or a hand
does it (cut to its first 4 KB, or its first half when smaller: mid-record; zeroed; one
garbage byte in the middle; emptied to 0 bytes; a directory in its place; unreadable), and
every command that reads it must exit 1 or 2 naming the file, saying it is damaged and what to
do, and change nothing already stored. A file that was never written stays absent: read as
absent, not damaged."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kgeval.cli import app
from kgeval.gold import load_gold
from kgeval.holdout import confirm_empty, exclude_questions, load_holdout
from kgeval.review import Reviewer, ReviewLog, question_content_sha256, record_review
from tests.conftest import MINI_QUESTIONS, REPO, write_holdout
from tests.oversight import TOKENS, run_system, write_access

SECOND_KG = [{**q, "id": q["id"].replace("mini", "two")} for q in MINI_QUESTIONS[:3]]


@pytest.fixture(scope="module")
def intact(tmp_path_factory) -> tuple[Path, str]:
    """A kgeval directory, every file intact: a sealed two-KG holdout with an exclusion and a
    confirmed empty answer, its gold, an oracle run, an approval, a configuration, checklists,
    an access file, a schema gate and an example bank. Returns (directory, run id)."""
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.stores import EmbeddedStore

    base = tmp_path_factory.mktemp("intact")
    holdout = write_holdout(base / "holdout")
    write_holdout(holdout, SECOND_KG, kg="two")  # with two KGs, one that vanished would go unnoticed
    exclude_questions(holdout, ["mini-08"], "ambiguous")
    confirm_empty(holdout, ["mini-05"], "carol is not in sales")
    assert rebuild_gold(load_holdout(holdout), lambda kg: EmbeddedStore(kg.files), GoldConfig(), base / "gold").ok
    run_id = run_system(holdout, base / "gold", base / "r.duckdb", "oracle", seeds=1)
    question = next(q for q in load_holdout(holdout).questions() if q.id == "mini-01")
    gold = load_gold(base / "gold")["mini-01"]
    with ReviewLog(base / "r.duckdb") as log:
        record_review(log, question, gold, Reviewer(name="hana", domains=("hr",)), "approve", question_content_sha256(question, gold))
    write_access(base / "access.yaml")
    (base / "kgeval.yaml").write_text(yaml.safe_dump({"run": {"seeds": 1, "concurrency": 1}}))
    shutil.copytree(REPO / "checklists", base / "checklists")
    shutil.copytree(REPO / "schema_gate", base / "schema_gate")
    (base / "examples.jsonl").write_text('{"kg": "train", "question": "Who works in sales?", "sparql": "SELECT ?p WHERE { ?p ?q ?o }"}\n')
    return base, run_id


def _version(base: Path) -> str:
    return os.readlink(base / "gold" / "current")


def _commands(base: Path, run_id: str) -> dict[str, list[str]]:
    h, g, db = str(base / "holdout"), str(base / "gold"), str(base / "r.duckdb")
    return {
        "holdout verify": ["holdout", "verify", "--holdout", h],
        "holdout seal": ["holdout", "seal", "--holdout", h],
        "holdout exclude": ["holdout", "exclude", "mini-07", "--why", "x", "--holdout", h],
        "holdout confirm-empty": ["holdout", "confirm-empty", "mini-07", "--why", "x", "--holdout", h],
        "gold verify": ["gold", "verify", "--gold", g, "--holdout", h],
        "gold show": ["gold", "show", "--empty", "--gold", g, "--holdout", h],
        "gold export": ["gold", "export", "--gold", g, "--holdout", h],
        "gold rebuild": ["gold", "rebuild", "--gold", g, "--holdout", h],
        "report": ["report", run_id, "--db", db, "--gold", g, "--holdout", h],
        "review status": ["review", "status", "--db", db, "--holdout", h, "--gold", g],
        "show": ["show", run_id, "mini-01", "--db", db, "--gold", g, "--holdout", h],
        "audit sample": ["audit", "sample", run_id, "--db", db, "--gold", g],
        "run": ["run", "--system", "oracle", "--db", str(base / "new.duckdb"), "--gold", g, "--holdout", h,
                "--checklist", str(base / "checklists" / "pre_eval.yaml"), "--config", str(base / "kgeval.yaml")],
        "contamination check": ["contamination", "check", str(base / "examples.jsonl"), "--holdout", h, "--gate-dir", str(base / "schema_gate")],
        "schema-gate list": ["schema-gate", "list", "--gate-dir", str(base / "schema_gate")],
        "holdout admit": ["holdout", "admit", str(base / "holdout" / "mini"), "--gate-dir", str(base / "schema_gate")],
    }  # fmt: skip


HOLDOUT_READERS = ["holdout verify", "gold verify", "gold show", "gold rebuild", "report", "review status", "show", "run", "contamination check"]
GOLD_READERS = ["gold verify", "gold show", "gold export", "report", "review status", "show", "audit sample", "run"]
READERS = {
    "holdout/mini/questions.yaml": HOLDOUT_READERS,
    "holdout/mini/kg.ttl": ["holdout verify", "gold rebuild", "show", "run"],
    "holdout/MANIFEST.json": [*HOLDOUT_READERS, "holdout exclude", "holdout seal"],  # seal: it cannot tell a hand-edited decision
    "holdout/EXCLUDED.yaml": [*HOLDOUT_READERS, "holdout exclude", "holdout seal"],
    "holdout/CONFIRMED_EMPTY.yaml": [*HOLDOUT_READERS, "holdout confirm-empty", "holdout seal"],
    "gold/VERSION/MANIFEST.json": GOLD_READERS,
    "gold/VERSION/mini.json": GOLD_READERS,
    "gold/VERSION/display/mini.json": GOLD_READERS,
    "gold/current": GOLD_READERS,
    "kgeval.yaml": ["run"],
    "checklists/pre_eval.yaml": ["run"],
    "checklists/caught.yaml": ["run"],
    "schema_gate/config.yaml": ["holdout admit"],
    "schema_gate/fingerprints/ck25.json": ["schema-gate list", "holdout admit", "contamination check"],
    "schema_gate/fingerprints": ["schema-gate list", "holdout admit", "contamination check"],
}
"""Each file kgeval reads as state, and every command that reads it (the results database:
tests/runs/test_damaged_db.py; the access file: `test_serve_refuses_a_damaged_access_file`)."""


def _cut(data: bytes) -> bytes:
    return data[:4096] if len(data) > 4096 else data[: len(data) // 2]


def _garbage_byte(data: bytes) -> bytes:
    changed = bytearray(data)
    changed[len(changed) // 2] = 0xFF
    return bytes(changed)


DAMAGES = {
    "first 4 KB": _cut,
    "zeroed": lambda data: b"\0" * len(data),
    "a garbage byte": _garbage_byte,
    "emptied": lambda data: b"",
    "a directory": None,
    "unreadable": None,
}


def damage(path: Path, how: str) -> None:
    """Damage the file (or symlink, or directory) at `path` in place."""
    if how == "unreadable":
        if os.geteuid() != 0:
            path.chmod(0)
            return
        # root reads a file of mode 000: a link to itself is unreadable to every user (ELOOP)
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        path.symlink_to(path.name)
        return
    if path.is_dir() and not path.is_symlink():  # a directory of files: a file in its place
        shutil.rmtree(path)
        path.write_bytes(b"" if how == "emptied" else b"\0" * 64)
        return
    data = b"" if path.is_symlink() else path.read_bytes()
    path.unlink()
    if how == "a directory":
        path.mkdir()
    else:
        path.write_bytes(DAMAGES[how](data))


def _applies(file: str, how: str) -> bool:
    if file in ("gold/current", "schema_gate/fingerprints"):  # a link or a directory: replaced, not cut
        return how in ("emptied", "zeroed")
    return True


def _snapshot(base: Path) -> dict[str, bytes | str]:
    """Every file's bytes and every link's target: what "nothing was changed" compares."""
    found: dict[str, bytes | str] = {}
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(base).as_posix()
        if rel.startswith("new.duckdb") or rel.endswith(".lock"):
            continue  # `run`'s own new database (a refused run's receipt), the gold's lock file
        if path.is_symlink():
            found[rel] = os.readlink(path)
        elif path.is_file():
            try:
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest().encode()
            except PermissionError:
                found[rel] = b"unreadable"
        else:
            found[rel] = "dir"
    return found


SEALED = ("holdout/", "gold/", "schema_gate/fingerprints")
"""Files kept by hash (the holdout's manifest, the gold's), or written by kgeval only."""
DAMAGE_WORDS = ("damaged", "unreadable", "sha256 differs", "does not match", "not valid", "not UTF-8", "is empty", "not a symlink", "not a directory")
REMEDY_WORDS = ("restore", "rebuild", "holdout seal", "schema-gate add")

CASES = [(file, how, command) for file, commands in READERS.items() for how in DAMAGES if _applies(file, how) for command in commands]


@pytest.mark.parametrize(("file", "how", "command"), CASES, ids=[f"{f}-{h}-{c}" for f, h, c in CASES])
def test_every_reader_names_a_damaged_file(intact, tmp_path, file, how, command):
    base = tmp_path / "k"
    shutil.copytree(intact[0], base, symlinks=True)
    target = base / file.replace("VERSION", _version(base))
    damage(target, how)
    before = _snapshot(base)
    result = CliRunner().invoke(app, _commands(base, intact[1])[command])
    shown = result.output
    assert result.exit_code in (1, 2), (result.exit_code, shown[-3000:], result.exception)
    assert "Traceback" not in shown, shown
    assert target.name in shown, (shown[-3000:], repr(result.exception))
    if file.startswith(SEALED) or how != "first 4 KB":  # a configuration cut short may still parse: its error then names what is missing
        assert any(w in shown for w in DAMAGE_WORDS) and any(w in shown for w in REMEDY_WORDS), shown[-3000:]
    assert "never_reviewed" not in shown and "answer: 0 rows" not in shown  # never read as no reviews, an empty KG
    assert _snapshot(base) == before, "a file already stored was changed"


@pytest.mark.parametrize("file", ["holdout/EXCLUDED.yaml", "holdout/CONFIRMED_EMPTY.yaml", "holdout/MANIFEST.json"])
def test_a_file_never_written_is_absent_not_damaged(intact, tmp_path, file):
    """A holdout with no exclusions, no confirmations, or never sealed: read as such."""
    base = tmp_path / "k"
    holdout = write_holdout(base / "holdout")
    (holdout / file.split("/")[1]).unlink(missing_ok=True)
    loaded = load_holdout(holdout)
    assert len(loaded.questions()) == len(MINI_QUESTIONS) and not loaded.exclusions and not loaded.confirmed_empty


def test_review_status_names_an_emptied_exclusions_file_in_a_real_process(intact, tmp_path):
    """Before: `review status` exited 0 and listed the excluded question (its exclusion gone
    with the file's bytes) as never reviewed."""
    base = tmp_path / "k"
    shutil.copytree(intact[0], base, symlinks=True)
    args = ["review", "status", "--questions", "--all", "--db", str(base / "r.duckdb"), "--holdout", str(base / "holdout"), "--gold", str(base / "gold")]
    intact_run = subprocess.run([sys.executable, "-m", "kgeval", *args], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert intact_run.returncode == 0 and "mini-08" in intact_run.stdout and "excluded" in intact_run.stdout, intact_run.stderr
    (base / "holdout" / "EXCLUDED.yaml").write_bytes(b"")
    done = subprocess.run([sys.executable, "-m", "kgeval", *args], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and done.stdout == "", (done.returncode, done.stdout, done.stderr)
    assert f"{base / 'holdout' / 'EXCLUDED.yaml'}: sha256 differs from MANIFEST.json: damaged" in done.stderr, done.stderr


@pytest.mark.parametrize("how", sorted(DAMAGES))
def test_serve_refuses_a_damaged_access_file(intact, tmp_path, how):
    """An access file emptied to 0 bytes was read as no tokens (a service that refuses every
    caller but starts); each damage is named, and `serve` does not start."""
    base = tmp_path / "k"
    shutil.copytree(intact[0], base, symlinks=True)
    damage(base / "access.yaml", how)
    args = ["serve", "--port", "9", "--db", str(base / "r.duckdb"), "--holdout", str(base / "holdout"), "--gold", str(base / "gold"), "--access", str(base / "access.yaml")]
    try:
        done = subprocess.run([sys.executable, "-m", "kgeval", *args], cwd=REPO, capture_output=True, text=True, timeout=120, env={**os.environ, "KGEVAL_ADMIN_TOKEN": "a" * 32})
    except subprocess.TimeoutExpired:
        pytest.fail(f"serve started on a damaged access file ({how})")
    assert done.returncode == 2 and "access.yaml" in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("how", ["emptied", "zeroed", "a garbage byte", "a directory"])
def test_a_damaged_example_bank_is_named(intact, tmp_path, how):
    from kgeval.errors import InputError
    from kgeval.systems import load_examples

    bank = tmp_path / "examples.jsonl"
    shutil.copy(intact[0] / "examples.jsonl", bank)
    damage(bank, how)
    with pytest.raises(InputError, match=r"examples.jsonl[:0-9]*: .*(damaged|cannot read|not an example)"):
        load_examples(bank)


def test_the_service_names_a_damaged_kg_file(intact, tmp_path):
    """A sample page re-executes the answer on the KG: on a KG file emptied after the service
    started it showed the gold's row as missing; now 409 naming the file."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from kgeval.config import KgevalConfig
    from kgeval.service import ServiceSettings, create_app, load_access

    base = tmp_path / "k"
    shutil.copytree(intact[0], base, symlinks=True)
    settings = ServiceSettings(db=base / "r.duckdb", holdout=base / "holdout", gold=base / "gold", config=KgevalConfig(), access=load_access(base / "access.yaml", env={}))
    headers = {"Authorization": f"Bearer {TOKENS['admin']['token']}"}
    with TestClient(create_app(settings)) as client:
        (base / "holdout" / "mini" / "kg.ttl").write_bytes(b"")
        answer = client.get(f"/runs/{intact[1]}/samples/mini-01?seed=0", headers=headers)
    assert answer.status_code == 409, answer.text[:500]
    assert "mini/kg.ttl: sha256 differs" in answer.json()["detail"]


@pytest.mark.parametrize("file", ["holdout/EXCLUDED.yaml", "holdout/MANIFEST.json"])
def test_serve_refuses_a_damaged_holdout(intact, tmp_path, file):
    """Before: `serve` started on an emptied exclusions file (no exclusions) or manifest."""
    base = tmp_path / "k"
    shutil.copytree(intact[0], base, symlinks=True)
    damage(base / file, "emptied")
    args = ["serve", "--port", "9", "--db", str(base / "r.duckdb"), "--holdout", str(base / "holdout"), "--gold", str(base / "gold"), "--access", str(base / "access.yaml")]
    try:
        done = subprocess.run([sys.executable, "-m", "kgeval", *args], cwd=REPO, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"serve started on a damaged {file}")
    assert done.returncode == 1 and f"{base / file}: " in done.stderr and "damaged" in done.stderr and "Traceback" not in done.stderr, done.stderr
