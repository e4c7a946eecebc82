"""Sandbox workers forked from a per-KG template process (`_sandbox._Template`): the template
is a fresh sandboxed interpreter holding only the KG; each worker it forks has its own stderr
and dies with it; a worker's crash or memory bomb leaves the template serving; a template
killed from outside is replaced; ended workers are reaped, never left as zombies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kgeval.config import CandidateQueryConfig
from kgeval.errors import QueryOverBudget, QueryTimeout
from kgeval.stores import EmbeddedStore
from kgeval.stores import _sandbox
from tests.conftest import MINI_TTL
from tests.stores.test_sandbox import CROSS3, _alive

pytestmark = pytest.mark.skipif(not _sandbox._CAN_FORK, reason="workers are forked from a template on Linux only")

DOUBLINGS = " ".join(f"BIND(CONCAT(?a{i}, ?a{i}) AS ?a{i + 1})" for i in range(40))
MEMORY_BOMB = f'SELECT ?a40 WHERE {{ BIND("0123456789abcdef" AS ?a0) {DOUBLINGS} }}'


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _zombie_children(pid: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and _parent(int(proc.name)) == pid and "zombie" in (proc / "status").read_text().lower():
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "kg.ttl"
    path.write_text(MINI_TTL, encoding="utf-8")
    opened = EmbeddedStore([path], candidates=CandidateQueryConfig(memory_mb=256, max_value_bytes=1 << 62))
    yield opened
    opened.close()


def _template_pid(store: EmbeddedStore) -> int:
    template = store.sandbox._template
    assert template is not None
    return template.process.pid


def test_workers_are_forked_from_a_fresh_interpreter_that_holds_only_the_kg(store):
    store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    [worker] = store.sandbox.worker_pids()
    template = _template_pid(store)
    assert _parent(worker) == template and _parent(template) == os.getpid()
    # a fork of this process would map what this process loaded (DuckDB, pydantic's core):
    # the template is a new `python -I -S` interpreter, with the engine and nothing else
    maps = Path(f"/proc/{template}/maps").read_text()
    assert "pyoxigraph" in maps and "duckdb" not in maps and "pydantic_core" not in maps
    assert b"-I\x00-S\x00" in Path(f"/proc/{template}/cmdline").read_bytes()


def test_a_memory_bomb_ends_its_worker_not_the_template(store):
    store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    template = _template_pid(store)
    with pytest.raises(QueryOverBudget, match="memory budget"):
        store.execute_candidate(MEMORY_BOMB, timeout_s=60, row_cap=10)
    assert _alive(template) and _template_pid(store) == template
    result, _ = store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    assert result.boolean is True
    [worker] = store.sandbox.worker_pids()
    assert _parent(worker) == template  # the next worker forked from the same template
    assert _zombie_children(template) == []  # the bombed worker was reaped


def test_timed_out_workers_are_killed_and_reaped(store):
    store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    template = _template_pid(store)
    killed = []
    for _ in range(3):
        store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)  # a worker forked, idle
        [pid] = store.sandbox.worker_pids()
        killed.append(pid)
        with pytest.raises(QueryTimeout):
            store.execute_candidate(CROSS3, timeout_s=0.5, row_cap=10)
    assert not any(_alive(pid) for pid in killed)
    assert _zombie_children(template) == []
    result, _ = store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    assert result.boolean is True


def test_a_template_killed_from_outside_is_replaced_and_takes_its_workers_with_it(store):
    store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    [worker] = store.sandbox.worker_pids()
    template = _template_pid(store)
    os.kill(template, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:  # PR_SET_PDEATHSIG
        time.sleep(0.05)
    assert not _alive(worker), "a worker outlived its template"
    result, _ = store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)  # died idle: not blamed on a query
    assert result.boolean is True
    assert _template_pid(store) != template


def test_close_stops_the_template_and_its_workers(store):
    store.start_ahead(2)
    deadline = time.monotonic() + 30
    while len(store.sandbox.worker_pids()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    workers, template = store.sandbox.worker_pids(), _template_pid(store)
    assert len(workers) == 2 and all(_parent(pid) == template for pid in workers)
    store.close()
    assert not _alive(template) and not any(_alive(pid) for pid in workers)


def test_template_and_workers_die_with_the_process_that_started_them(tmp_path):
    """The run process killed (SIGKILL: no cleanup runs): its template dies (PR_SET_PDEATHSIG),
    and the workers forked from it die with the template."""
    kg = tmp_path / "kg.ttl"
    kg.write_text(MINI_TTL, encoding="utf-8")
    script = textwrap.dedent(f"""
        import sys, time
        from kgeval.config import CandidateQueryConfig
        from kgeval.stores import EmbeddedStore
        store = EmbeddedStore([{str(kg)!r}], candidates=CandidateQueryConfig(memory_mb=256))
        store.execute_candidate("ASK {{ ?s ?p ?o }}", timeout_s=30, row_cap=1)
        print(store.sandbox._template.process.pid, *store.sandbox.worker_pids(), flush=True)
        time.sleep(600)
    """)
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=root)
    try:
        pids = [int(p) for p in child.stdout.readline().split()]  # type: ignore[union-attr]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
    finally:
        child.kill()
        child.wait()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids), "the template or its worker outlived the process that started them"
