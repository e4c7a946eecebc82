"""The README's recipes, run in order on a fresh copy of the repository, as a newcomer pastes
them (issue 44): every line of every ```bash block, in bash, in one shell state (its exports and
`. .venv/bin/activate` carry over). The placeholders a reader fills in from what an earlier
command printed (RUN, RUN_BEFORE, QID, H, T) are filled in the same way; the files a reader
brings (training data, a training KG, a candidate KG, access.yaml) are written first. The model
endpoint of the release recipe is a loopback server on the port the README names.

What cannot run here is said, not skipped silently: `pip install` installs nothing (the
packages are those of this interpreter, the copy first on PYTHONPATH: no network), `python3 -m
venv .venv` makes a .venv whose python, pip and kgeval are this interpreter's; command 2 (the
whole test suite, inside a test) and the Spark line are not run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import REPO

NOT_RUN = ("pytest -q -n auto", "--engine spark")
"""Lines not run: the whole suite (command 2) and the Spark check (needs Java and pyspark)."""


def _bash_lines(readme: str) -> list[str]:
    """Every command line of the README's ```bash blocks, in order (comments and blanks dropped)."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", readme, re.S):
        for line in block.splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                lines.append(line)
    return lines


def _fake_python3(shims: Path) -> None:
    """`python3 -m venv .venv` makes a .venv of this interpreter (its packages already there);
    anything else is this interpreter."""
    venv = f"""#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  ln -sf {sys.executable} "$3/bin/python"
  printf '#!/bin/sh\\nexit 0\\n' > "$3/bin/pip"
  printf '#!/bin/sh\\nexec {sys.executable} -m kgeval "$@"\\n' > "$3/bin/kgeval"
  printf 'export PATH="%s:$PATH"\\n' "$(cd "$3/bin" && pwd)" > "$3/bin/activate"
  chmod +x "$3/bin/pip" "$3/bin/kgeval"
  exit 0
fi
exec {sys.executable} "$@"
"""
    (shims / "python3").write_text(venv, encoding="utf-8")
    (shims / "python3").chmod(0o755)
    (shims / "pip").write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")  # before activate: a pip on PATH that installs nothing
    (shims / "pip").chmod(0o755)


class _Model(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint answering each question with its reference query."""

    reference: dict[str, str] = {}

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        question = re.search(r"Question: (.*)\s*$", body["messages"][-1]["content"]).group(1).strip()
        content = f"```sparql\n{self.reference.get(question, 'ASK {}')}\n```"
        reply = {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


class _Shell:
    """One bash state across lines: each line runs after the state is restored, and the
    state (exports, PATH) is saved after it."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd, self.env, self.state = cwd, env, cwd.parent / "state.sh"
        self.state.write_text("", encoding="utf-8")

    def run(self, line: str, timeout: int = 600) -> subprocess.CompletedProcess:
        script = f"set -e\nsource {self.state}\ncd {self.cwd}\n{line}\nexport -p > {self.state}\n"
        return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=self.env, timeout=timeout)

    def start(self, line: str) -> subprocess.Popen:
        script = f"source {self.state}\ncd {self.cwd}\nexec {line}\n"
        return subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self.env)


def _copy(root: Path) -> Path:
    """The repository's tracked files, as a fresh clone has them."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():  # the gold's `current` version link
            os.symlink(os.readlink(source), root / name)
        elif source.is_file():
            shutil.copy2(source, root / name)
    return root


def _users_files(clone: Path, home: Path) -> dict[str, str]:
    """What a reader brings: training data, a training KG, a candidate holdout KG, access.yaml."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (clone / "train.jsonl").write_text(json.dumps({"prompt": "How do I bake bread?", "completion": "Knead it."}) + "\n", encoding="utf-8")
    pq.write_table(pa.table({"prompt": ["What is a triple?"], "completion": ["Subject, predicate, object."]}), clone / "extra.parquet")
    (clone / "kg").mkdir()
    (clone / "kg" / "a.ttl").write_text("@prefix t: <http://training.example/> .\nt:a t:knows t:b .\nt:b a t:Person .\n", encoding="utf-8")
    kg_dir = clone / "new_holdout" / "kg_dir"
    kg_dir.mkdir(parents=True)
    (kg_dir / "kg.ttl").write_text("@prefix n: <http://new.example/> .\nn:x n:grows n:y .\nn:y a n:Plant .\n", encoding="utf-8")
    (kg_dir / "questions.yaml").write_text(yaml.safe_dump({"kg": "kg_dir", "title": "new", "questions": [
        {"id": "new-01", "question": "What does x grow?", "sparql": "PREFIX n: <http://new.example/>\nSELECT ?y WHERE { n:x n:grows ?y }", "domain": "botany", "tags": ["lookup"]},
    ]}), encoding="utf-8")  # fmt: skip
    domains = sorted({q["domain"] for f in (clone / "holdout").glob("*/questions.yaml") for q in yaml.safe_load(f.read_text())["questions"]})
    token = "r" * 40
    (clone / "access.yaml").write_text(yaml.safe_dump({"tokens": [{"name": "rita", "roles": ["reviewer"], "domains": domains, "token_env": "RITA_TOKEN"}]}), encoding="utf-8")
    return {"RITA_TOKEN": token}


def _fill(line: str, values: dict[str, str]) -> str:
    for name in ("RUN_BEFORE", "RUN", "QID", "H", "T"):  # RUN_BEFORE before RUN
        if name in values:
            line = re.sub(rf"(?<![\w/-]){name}(?![\w-])", values[name], line)
    return line


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the service recipe makes its key with openssl")
def test_the_readme_recipes_work_as_written_on_a_fresh_copy(tmp_path):
    clone, home, shims = tmp_path / "kgeval", tmp_path / "home", tmp_path / "shims"
    for d in (clone, home, shims):
        d.mkdir()
    _copy(clone)
    _fake_python3(shims)
    env = {"PATH": f"{shims}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(clone), "LANG": "C.UTF-8", "COLUMNS": "200"}
    env.update(_users_files(clone, home))
    shell = _Shell(clone, env)
    from kgeval.holdout import load_holdout

    _Model.reference = {q.question: q.sparql for q in load_holdout(clone / "holdout").questions()}
    values: dict[str, str] = {"T": env["RITA_TOKEN"]}
    model = ThreadingHTTPServer(("127.0.0.1", 8000), _Model)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    ran = []
    try:
        for raw in _bash_lines((clone / "README.md").read_text(encoding="utf-8")):
            if any(skip in raw for skip in NOT_RUN):
                continue
            line = _fill(raw, values)
            if " serve " in line:
                model.shutdown(); model.server_close()  # its port is the service's now
                _serve(shell, line)
                ran.append(raw)
                continue
            done = shell.run(line)
            allowed = (0, 1) if raw.startswith("kgeval compare") else (0,)  # compare may refuse incomparable runs (exit 1), saying why
            assert done.returncode in allowed, f"{raw}\n-> {line}\nexit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            ran.append(raw)
            _learn(raw, done, values)
    finally:
        model.server_close()
    assert len(ran) >= 25, ran
    assert (clone / "report.html").stat().st_size > 1000


def _learn(raw: str, done: subprocess.CompletedProcess, values: dict[str, str]) -> None:
    """What a reader copies from a command's output into the next ones."""
    if raw.startswith("kgeval run --system oracle"):
        values["RUN_BEFORE"] = done.stdout.strip().splitlines()[-1]
    elif raw.startswith("kgeval run --system openai"):
        values["RUN"] = done.stdout.strip().splitlines()[-1]
        assert "accuracy: 100.0%" in done.stdout, done.stdout
    elif raw.startswith("kgeval audit sample"):
        # the README records `--seed 0`, so a reader takes the first item of seed 0 (id, seed, ..., its hash);
        # the sample's order is seeded by the run id, so the very first item may be another seed's
        items = [line.split("\t") for line in done.stdout.splitlines() if line.count("\t") == 3]
        qid, _, _, sha = next(item for item in items if item[1] == "seed 0")
        values["QID"], values["H"] = qid, sha
    elif raw.startswith("kgeval gold show --empty"):
        first = next(line for line in done.stdout.splitlines() if "\t" in line and not line.startswith(" "))
        values["QID"], values["H"] = first.split("\t")[0], first.split("sha256 ")[1].strip()


def _serve(shell: _Shell, line: str) -> None:
    server = shell.start(line)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get("http://127.0.0.1:8000/health", timeout=10).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, server.stdout.read() if server.poll() is not None else "no /health"
            time.sleep(0.2)
        token = subprocess.run(["bash", "-c", f"source {shell.state}; printf %s \"$KGEVAL_ADMIN_TOKEN\""], capture_output=True, text=True).stdout
        me = httpx.get("http://127.0.0.1:8000/me", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert me.status_code == 200 and "admin" in me.json()["roles"], me.text
    finally:
        server.terminate()
        server.wait(30)
