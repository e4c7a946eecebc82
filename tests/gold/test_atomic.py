"""Atomic gold: a rebuild killed with SIGKILL at random points leaves the old gold intact or the
new one complete, never a mix (issue 16)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from kgeval.gold import read_gold, verify_gold
from kgeval.holdout import load_holdout, read_manifest
from tests.conftest import REPO, write_holdout

_REBUILD = textwrap.dedent(
    """\
    import sys
    from pathlib import Path
    from kgeval.config import GoldConfig
    from kgeval.gold import rebuild_gold
    from kgeval.holdout import load_holdout
    from kgeval.stores import EmbeddedStore
    holdout = load_holdout(Path(sys.argv[1]))
    print("ready", flush=True)
    rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(executions=1), Path(sys.argv[2]), force=True)
    print("done", flush=True)
    """
)


def _holdout(root: Path, variant: int) -> Path:
    """Three KGs of 1,500 entities; `variant` changes one question of each KG, so every KG
    file of the gold differs between the two variants."""
    for kg in ("alpha", "beta", "gamma"):
        ttl = "".join(f"<http://x/{kg}/e{i}> a <http://x/T> ; <http://x/n> {i} .\n" for i in range(1500))
        questions = [
            {"id": f"{kg}-all", "question": "All?", "sparql": "SELECT ?e ?n WHERE { ?e <http://x/n> ?n }", "domain": "d"},
            {"id": f"{kg}-some", "question": "Some?", "sparql": f"SELECT ?e WHERE {{ ?e <http://x/n> ?n FILTER(?n < {100 + variant}) }}", "domain": "d"},
            {"id": f"{kg}-count", "question": "How many?", "sparql": "SELECT (COUNT(*) AS ?c) WHERE { ?e a <http://x/T> }", "domain": "d"},
        ]
        write_holdout(root, questions, ttl=ttl, kg=kg)
    return root


def _check_one_whole_gold(gold: Path, holdouts: dict[str, Path]) -> str:
    """The gold in force verifies against the holdout it says it was built from (A or B), and
    its version directory holds exactly the files its manifest names."""
    state = read_gold(gold)  # raises on any missing, altered or half-written file
    built_from = state.manifest.holdout_manifest_sha256
    assert built_from in holdouts, f"gold built from an unknown holdout {built_from[:12]}"
    verify_gold(gold, load_holdout(holdouts[built_from]))
    on_disk = {p.relative_to(state.version).as_posix() for p in state.version.rglob("*") if p.is_file()}
    assert on_disk == set(state.manifest.files) | {"MANIFEST.json"}, on_disk
    assert not state.manifest.partial
    return state.manifest_sha256


def test_kill_9_during_rebuild_leaves_old_intact_or_new_complete(tmp_path):
    a, b = _holdout(tmp_path / "a", 0), _holdout(tmp_path / "b", 1)
    holdouts = {read_manifest(a)["sha256"]: a, read_manifest(b)["sha256"]: b}
    gold = tmp_path / "gold"
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def start(holdout: Path) -> tuple[subprocess.Popen, float]:
        proc = subprocess.Popen([sys.executable, "-c", _REBUILD, str(holdout), str(gold)], stdout=subprocess.PIPE, text=True, env=env)
        assert proc.stdout.readline().strip() == "ready"
        return proc, time.perf_counter()

    proc, t0 = start(a)  # a complete gold first, and the length of one rebuild
    assert proc.stdout.readline().strip() == "done" and proc.wait() == 0
    duration = time.perf_counter() - t0
    seen, outcomes = {_check_one_whole_gold(gold, holdouts)}, {"old": 0, "new": 0}
    rng = random.Random(16)

    def kill_one(holdout: Path, when: str) -> None:
        before = read_gold(gold).manifest_sha256
        proc, _ = start(holdout)
        if when == "random":
            time.sleep(rng.uniform(0, duration * 1.1))
        elif when == "done":
            assert proc.stdout.readline().strip() == "done"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        after = _check_one_whole_gold(gold, holdouts)
        outcomes["old" if after == before else "new"] += 1
        seen.add(after)

    for i in range(24):
        kill_one(b if i % 2 == 0 else a, "random")
    # whatever the machine's load did to the random kills' timing, one lands on each side of the switch
    other = lambda: a if read_gold(gold).manifest.holdout_manifest_sha256 == read_manifest(b)["sha256"] else b  # noqa: E731
    if not outcomes["new"]:
        kill_one(other(), "done")  # after the switch: the other holdout's gold is in force
    if not outcomes["old"]:
        kill_one(other(), "ready")  # before it: the rebuild has not written anything yet
    print(f"{sum(outcomes.values())} kills over a {duration:.2f} s rebuild: {outcomes['old']} left the old gold, {outcomes['new']} the new one, 0 half-written")
    assert len(seen) <= 2  # A's and B's gold (content-addressed), never a third mixture
    assert outcomes["old"] and outcomes["new"], outcomes  # the kills landed on both sides of the switch
    verified = subprocess.run(
        [sys.executable, "-m", "kgeval", "gold", "verify", "--holdout", str(holdouts[read_gold(gold).manifest.holdout_manifest_sha256]), "--gold", str(gold)],
        capture_output=True, text=True, env=env, check=False,
    )
    assert verified.returncode == 0, verified.stderr
    json.loads((gold / "MANIFEST.json").read_text())  # the compatibility link resolves to a whole manifest
