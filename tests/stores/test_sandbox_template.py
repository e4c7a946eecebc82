"""Sandbox workers forked from a per-KG template process (`_sandbox._Template`): the template
is a fork of the process's zygote (a fresh sandboxed interpreter that loaded nothing) holding
only its KG; each worker it forks has its own stderr and dies with it; a worker's crash or
memory bomb leaves the template serving; a template or zygote killed from outside is replaced;
ended workers are reaped, never left as zombies."""

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
from tests.conftest import MINI_TTL, UNENDING
from tests.stores.test_sandbox import _alive

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


def _zygote_pid() -> int:
    assert _sandbox._ZYGOTE is not None
    return _sandbox._ZYGOTE.process.pid


def test_workers_are_forked_from_a_fresh_interpreter_that_holds_only_the_kg(store):
    store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    [worker] = store.sandbox.worker_pids()
    template, zygote = _template_pid(store), _zygote_pid()
    assert _parent(worker) == template and _parent(template) == zygote and _parent(zygote) == os.getpid()
    # a fork of this process would map what this process loaded (DuckDB, pydantic's core): the
    # zygote is a new `python -I -S` interpreter with the engine and nothing else, the template
    # its fork that loaded the KG
    for pid in (zygote, template):
        maps = Path(f"/proc/{pid}/maps").read_text()
        assert "pyoxigraph" in maps and "duckdb" not in maps and "pydantic_core" not in maps
        assert b"-I\x00-S\x00" in Path(f"/proc/{pid}/cmdline").read_bytes()


def test_workers_inherit_a_frozen_heap_from_their_template(store):
    """The template freezes what it holds before it forks: a collection in a worker then never
    writes to the inherited objects' headers, which would copy every page holding one."""
    store.sandbox.start_ahead(2)
    store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    deadline = time.monotonic() + 60
    while len(store.sandbox.worker_pids()) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    workers = list(store.sandbox._all)
    assert len(workers) == 2
    # the engine's module, the KG's store and every module imported: thousands of objects
    assert all(worker.gc_frozen > 1000 for worker in workers), [w.gc_frozen for w in workers]
    # a fresh interpreter (the zygote's own start) holds nothing frozen
    fresh = _sandbox._Worker.start([], store.candidate_limits, "fresh", kind="zygote")
    try:
        assert fresh.gc_frozen == 0
    finally:
        fresh.kill()


def test_the_templates_of_every_kg_are_forked_from_one_zygote_that_holds_no_kg(tmp_path):
    """One interpreter start per process, not per KG: each KG's template is a fork of the
    zygote that then loaded its own KG, answers from it alone, and limits its own memory."""
    big = tmp_path / "big.ttl"
    big.write_text("".join(f"<http://x/s{i}> <http://x/p> <http://x/o{i}> .\n" for i in range(20000)), encoding="utf-8")
    small = tmp_path / "small.ttl"
    small.write_text(MINI_TTL, encoding="utf-8")
    stores = [EmbeddedStore([path], candidates=CandidateQueryConfig(memory_mb=256)) for path in (big, small)]
    try:
        totals = [s.execute_candidate("SELECT ?s WHERE { ?s ?p ?o }", timeout_s=30, row_cap=1)[0].total for s in stores]
        assert totals[0] == 20000 and totals[1] < 100
        zygote = _zygote_pid()
        templates = [_template_pid(s) for s in stores]
        assert len(set(templates)) == 2 and all(_parent(t) == zygote for t in templates)
        rss = {pid: int(next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS")).split()[1]) for pid in (zygote, *templates)}
        assert rss[templates[0]] > rss[zygote]  # the zygote holds no KG: the big KG's template does
        for pid in templates:
            limit = next(line for line in Path(f"/proc/{pid}/limits").read_text().splitlines() if line.startswith("Max address space"))
            assert limit.split()[3] != "unlimited"
    finally:
        for s in stores:
            s.close()
    assert _alive(zygote) and not any(_alive(t) for t in templates)
    assert _zombie_children(zygote) == []  # the closed stores' templates were reaped


def test_a_zygote_killed_from_outside_is_replaced_and_takes_templates_and_workers_with_it(store):
    store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    [worker] = store.sandbox.worker_pids()
    template, zygote = _template_pid(store), _zygote_pid()
    os.kill(zygote, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while (_alive(template) or _alive(worker)) and time.monotonic() < deadline:  # PR_SET_PDEATHSIG, in a chain
        time.sleep(0.05)
    assert not _alive(template) and not _alive(worker), "a template or worker outlived the zygote"
    result, _ = store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)  # died idle: not blamed on a query
    assert result.boolean is True
    assert _zygote_pid() != zygote and _parent(_template_pid(store)) == _zygote_pid()


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
            store.execute_candidate(UNENDING, timeout_s=0.5, row_cap=10)
    assert not any(_alive(pid) for pid in killed)
    assert _zombie_children(template) == []
    result, _ = store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    assert result.boolean is True


def test_a_template_killed_from_outside_is_replaced_and_takes_its_workers_with_it(store):
    store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    [worker] = store.sandbox.worker_pids()
    template = _template_pid(store)
    os.kill(template, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while _alive(worker) and time.monotonic() < deadline:  # PR_SET_PDEATHSIG
        time.sleep(0.05)
    assert not _alive(worker), "a worker outlived its template"
    result, _ = store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)  # died idle: not blamed on a query
    assert result.boolean is True
    assert _template_pid(store) != template


def test_close_stops_the_template_and_its_workers(store):
    store.start_ahead(2)
    deadline = time.monotonic() + 60
    while len(store.sandbox.worker_pids()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    workers, template = store.sandbox.worker_pids(), _template_pid(store)
    assert len(workers) == 2 and all(_parent(pid) == template for pid in workers)
    store.close()
    assert not _alive(template) and not any(_alive(pid) for pid in workers)


def test_template_and_workers_die_with_the_process_that_started_them(tmp_path):
    """The run process killed (SIGKILL: no cleanup runs): its zygote dies (PR_SET_PDEATHSIG),
    the template forked from it dies with it, and the workers forked from that with the template."""
    kg = tmp_path / "kg.ttl"
    kg.write_text(MINI_TTL, encoding="utf-8")
    script = textwrap.dedent(f"""
        import sys, time
        from kgeval.config import CandidateQueryConfig
        from kgeval.stores import EmbeddedStore
        store = EmbeddedStore([{str(kg)!r}], candidates=CandidateQueryConfig(memory_mb=256))
        store.execute_candidate("ASK {{ ?s ?p ?o }}", timeout_s=30, row_cap=1)
        from kgeval.stores import _sandbox
        print(_sandbox._ZYGOTE.process.pid, store.sandbox._template.process.pid, *store.sandbox.worker_pids(), flush=True)
        time.sleep(600)
    """)
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=root)
    try:
        pids = [int(p) for p in child.stdout.readline().split()]  # type: ignore[union-attr]
        assert len(pids) == 3 and all(_alive(p) for p in pids)
    finally:
        child.kill()
        child.wait()
    deadline = time.monotonic() + 60
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids), "the zygote, template or worker outlived the process that started them"
