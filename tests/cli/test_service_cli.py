"""`kgeval audit`, `kgeval review`, `kgeval compare`, `kgeval serve` driven as a user would."""

import json

import pytest

from tests.cli.test_cli import kgeval
from tests.oversight import TOKENS, run_system, write_access


@pytest.mark.parametrize("command", [["compare"], ["audit"], ["audit", "sample"], ["audit", "record"], ["review"], ["review", "approve"], ["serve"]])
def test_new_commands_have_help(command):
    result = kgeval(*command, "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout


def test_audit_sample_show_record_and_report(mini_holdout, mini_gold, tmp_path):
    db = tmp_path / "r.duckdb"
    run_id = run_system(mini_holdout, mini_gold, db, "oracle", seeds=2)
    sampled = kgeval("audit", "sample", run_id, "--accepts", "3", "--db", str(db), "--gold", str(mini_gold))
    assert sampled.returncode == 0, sampled.stderr
    *rows, last = sampled.stdout.strip().splitlines()
    assert len(rows) == 3 and last.startswith("sample ")
    qid, seed, _stratum, sha = rows[0].split("\t")
    recorded = kgeval("audit", "record", run_id, qid, "--seed", seed.split()[1], "--decision", "disagree", "--sha256", sha,
                      "--auditor", "ann", "--note", "strict subset", "--db", str(db), "--gold", str(mini_gold))
    assert recorded.returncode == 0, recorded.stderr
    shown = [json.loads(line) for line in kgeval("audit", "show", run_id, last.split()[1].rstrip(":"), "--db", str(db), "--gold", str(mini_gold)).stdout.splitlines()]
    assert [s["state"] for s in shown] == ["disagree", "unaudited", "unaudited"]
    report = json.loads(kgeval("report", run_id, "--db", str(db), "--gold", str(mini_gold), "--format", "json").stdout)
    assert report["audit"]["false_accept_rate"]["events"] == 1 and report["audit"]["false_accept_rate"]["n"] == 1


def test_review_rights_per_domain_on_the_command_line(mini_holdout, mini_gold, tmp_path):
    db, access = tmp_path / "r.duckdb", write_access(tmp_path / "access.yaml")
    common = ["--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(db)]
    status = {line.split("\t")[0]: line.split("\t") for line in kgeval("review", "status", "--questions", *common).stdout.splitlines()}
    assert status["mini-06"][1:3] == ["retail", "never_reviewed"]
    denied = kgeval("review", "approve", "mini-06", "--sha256", status["mini-06"][3], "--access", str(access), "--token", TOKENS["hana"]["token"], *common)
    assert denied.returncode == 2 and "not 'retail'" in denied.stderr
    ok = kgeval("review", "approve", "mini-06", "--sha256", status["mini-06"][3], "--access", str(access), "--token", TOKENS["rita"]["token"], *common)
    assert ok.returncode == 0, ok.stderr
    after = {line.split("\t")[0]: line.split("\t")[2] for line in kgeval("review", "status", "--questions", *common).stdout.splitlines()}
    assert after["mini-06"] == "approved" and after["mini-01"] == "never_reviewed"
    # issue 44 item 10: by default, the coverage per domain the README promises (not one line a question)
    coverage = kgeval("review", "status", *common)
    assert coverage.returncode == 0, coverage.stderr
    rows = {line.split("\t")[0]: line.split("\t")[1:] for line in coverage.stdout.splitlines()[1:]}
    assert set(rows) == {"hr", "retail", "all"}, coverage.stdout
    assert rows["retail"][:2] == ["1/1", "100%"] and rows["hr"][0] == "0/7" and rows["hr"][1].endswith("below target"), rows
    assert rows["all"][:2] == ["1/8", "12%  below target"] and rows["hr"][4] == "7" and "--questions" in coverage.stderr


def test_serve_refuses_to_start_without_tokens(tmp_path):
    result = kgeval("serve", "--db", str(tmp_path / "r.duckdb"), "--port", "1")
    assert result.returncode == 2 and "no tokens" in result.stderr


def test_serve_without_the_service_extra_says_what_to_install(tmp_path):
    """Issue 44 item 9: it ended in a ModuleNotFoundError traceback. The extra's absence is
    made real in the child: its modules are marked missing before kgeval runs."""
    import subprocess
    import sys

    from tests.conftest import REPO

    code = "import sys; sys.modules['uvicorn'] = None; sys.argv = ['kgeval', 'serve']; from kgeval.cli import main; main()"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={**__import__("os").environ, "KGEVAL_ADMIN_TOKEN": "t" * 32, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2, done.stderr
    assert "kgeval serve needs the service extra (uvicorn is not installed): pip install -e '.[service]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_unsigned_gold_with_a_key_names_the_command_that_signs_it(mini_holdout, mini_gold, tmp_path, monkeypatch):
    """Issue 44 item 9: with a key made, the shipped gold was refused with "written without the
    key?" and nothing on what to do. The message names the command; following it works."""
    import shutil

    holdout, gold = tmp_path / "h", tmp_path / "g"
    shutil.copytree(mini_holdout, holdout)
    shutil.copytree(mini_gold, gold, symlinks=True)
    key = tmp_path / "key"
    key.write_text("k" * 64, encoding="utf-8")
    monkeypatch.setenv("KGEVAL_INTEGRITY_KEY_FILE", str(key))
    at = ["--holdout", str(holdout), "--gold", str(gold)]
    unsigned = kgeval("holdout", "verify", "--holdout", str(holdout))
    assert unsigned.returncode == 1 and "`kgeval holdout seal` with the key signs it" in unsigned.stderr, unsigned.stderr
    sealed = kgeval("holdout", "seal", "--holdout", str(holdout))
    assert sealed.returncode == 0 and "(signed with the integrity key)" in sealed.stdout, sealed.stderr
    refused = kgeval("gold", "verify", "--no-store-check", *at)
    assert refused.returncode == 1
    assert "no integrity tag, but an integrity key is configured" in refused.stderr
    assert f"sign this gold with the key set: `kgeval gold seal --gold {gold}`" in refused.stderr, refused.stderr
    assert kgeval("gold", "seal", "--gold", str(gold)).returncode == 0
    assert kgeval("gold", "verify", "--no-store-check", *at).returncode == 0


def _tree(root) -> dict:  # noqa: ANN001
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink() and p.name != ".lock"}


def test_gold_seal_signs_a_gold_as_it_is_and_serve_names_it(mini_holdout, mini_gold, tmp_path, monkeypatch):
    """Issue 44 item 9: signing a gold written without the key took a rebuild, which made a new
    version with another manifest hash: earlier runs then named a gold no longer in force.
    `gold seal` leaves every file and the manifest hash as they were; `serve` names it."""
    import shutil
    import subprocess
    import sys

    from kgeval.gold import gold_manifest_sha256
    from tests.conftest import REPO

    holdout, gold = tmp_path / "h", tmp_path / "g"
    shutil.copytree(mini_holdout, holdout)
    shutil.copytree(mini_gold, gold, symlinks=True)
    before, files = gold_manifest_sha256(gold), _tree(gold)
    key = tmp_path / "key"
    key.write_text("k" * 64, encoding="utf-8")
    monkeypatch.setenv("KGEVAL_INTEGRITY_KEY_FILE", str(key))
    monkeypatch.setenv("KGEVAL_ADMIN_TOKEN", "t" * 32)
    assert kgeval("holdout", "seal", "--holdout", str(holdout)).returncode == 0
    serve = ["serve", "--port", "9", "--holdout", str(holdout), "--gold", str(gold), "--db", str(tmp_path / "r.duckdb")]
    done = subprocess.run([sys.executable, "-m", "kgeval", *serve], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "no integrity tag, but an integrity key is configured" in done.stderr, done.stderr
    assert f"`kgeval gold seal --gold {gold}`" in done.stderr and "Traceback" not in done.stderr, done.stderr
    sealed = kgeval("gold", "seal", "--gold", str(gold), "--key-file", str(key))
    assert sealed.returncode == 0 and f"gold manifest {before[:12]}, unchanged" in sealed.stdout, sealed.stderr
    assert gold_manifest_sha256(gold) == before
    after = _tree(gold)
    assert [name for name in after if name not in files] == [f"{gold.joinpath('current').readlink()}/MANIFEST.tag"]
    assert {name: data for name, data in after.items() if name in files} == files  # nothing else written
    assert kgeval("gold", "verify", "--no-store-check", "--holdout", str(holdout), "--gold", str(gold)).returncode == 0
    again = kgeval("gold", "seal", "--gold", str(gold))
    assert again.returncode == 0 and "already signed with this integrity key" in again.stdout, again.stderr
    other = tmp_path / "other-key"
    other.write_text("o" * 64, encoding="utf-8")
    wrong = kgeval("gold", "seal", "--gold", str(gold), "--key-file", str(other))
    assert wrong.returncode == 2 and "integrity tag does not match" in wrong.stderr, wrong.stderr


def test_gold_seal_refuses_a_damaged_gold_and_writes_nothing(mini_gold, tmp_path):
    import shutil

    gold = tmp_path / "g"
    shutil.copytree(mini_gold, gold, symlinks=True)
    kg_file = gold / "current" / "mini.json"
    kg_file.write_text(kg_file.read_text(encoding="utf-8") + " ", encoding="utf-8")  # one byte more
    files = _tree(gold)
    key = tmp_path / "key"
    key.write_text("k" * 64, encoding="utf-8")
    done = kgeval("gold", "seal", "--gold", str(gold), "--key-file", str(key))
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert f"{gold}: not sealed: mini.json: sha256 differs from MANIFEST.json" in " ".join(done.stderr.split()), done.stderr
    assert _tree(gold) == files
    unkeyed = kgeval("gold", "seal", "--gold", str(gold))
    assert unkeyed.returncode == 2 and "no integrity key: give --key-file FILE" in unkeyed.stderr, unkeyed.stderr
