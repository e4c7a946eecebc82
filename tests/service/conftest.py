"""A service over a finished run on the mini holdout: in process (TestClient) and as a real
uvicorn server on 127.0.0.1 (`kgeval serve` in a subprocess)."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service tests need the `service` extra: pip install -e '.[test,service]'")
import httpx  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from kgeval.config import KgevalConfig  # noqa: E402
from kgeval.service import ServiceSettings, create_app, load_access
from tests.conftest import REPO
from tests.oversight import TOKENS, run_system, write_access


@dataclass
class Served:
    holdout: Path
    gold: Path
    db: Path
    access: Path
    run_id: str


@pytest.fixture
def served(mini_holdout, mini_gold, tmp_path) -> Served:
    db = tmp_path / "r.duckdb"
    run_id = run_system(mini_holdout, mini_gold, db, "oracle", seeds=2)
    return Served(mini_holdout, mini_gold, db, write_access(tmp_path / "access.yaml"), run_id)


@pytest.fixture
def client(served) -> Iterator[TestClient]:
    settings = ServiceSettings(db=served.db, holdout=served.holdout, gold=served.gold, config=KgevalConfig(), access=load_access(served.access, env={}))
    with TestClient(create_app(settings)) as c:
        yield c


def auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name]['token']}"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_server(served: Served, workdir: Path, *extra: str, fd_limit: int | None = None) -> Iterator[str]:
    """`kgeval serve` (a real uvicorn process) on a free loopback port with `extra` arguments
    (and at most `fd_limit` open files, when given); yields its base URL; stopped afterwards.
    Its log is `workdir/serve.log`."""
    port = free_port()
    log_path = workdir / "serve.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgeval", "serve", "--host", "127.0.0.1", "--port", str(port), "--db", str(served.db),
         "--holdout", str(served.holdout), "--gold", str(served.gold), "--access", str(served.access), *extra],
        cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "KGEVAL_ADMIN_TOKEN": ""},
        preexec_fn=None if fd_limit is None else lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit)),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=10).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"kgeval serve did not start: {log_path.read_text()}")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def server(served, tmp_path) -> Iterator[str]:
    """`kgeval serve` on a free loopback port; yields its base URL; stopped afterwards."""
    with running_server(served, tmp_path) as base:
        yield base
