"""Candidate queries of the embedded store run in sandbox worker processes: same results as the
trusted in-process path, no network, bounded memory, killed at the deadline, every failure named."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pyoxigraph as ox
import pytest

from kgeval.config import CandidateQueryConfig, StoreConfig
from kgeval.errors import QueryOverBudget, QueryRejected, QueryTimeout, StoreError
from kgeval.stores import EmbeddedStore, Store, open_store, row_key
from kgeval.stores._cells import cells_key
from kgeval.stores._engine import _Describer, cell_from_term
from tests.conftest import MINI_QUESTIONS, MINI_TTL, UNENDING
from tests.stores.conftest import TYPES_QUESTIONS, TYPES_TTL
from tests.stores.loopback import loopback

TRICKY_TTL = TYPES_TTL + """
t:c t:note "tab\\there", "bell\\u0007 and nul-ish \\u0001", "back\\\\slash", "quote \\" in", "line\\nbreak\\r\\n",
    "caf\\u00e9 \\U0001F600", "Mixed"@EN-us, "x"^^<http://www.w3.org/2001/XMLSchema#string>, "1e3"^^<http://www.w3.org/2001/XMLSchema#double> .
"""


def _kg(tmp_path: Path, ttl: str = MINI_TTL, name: str = "kg.ttl") -> Path:
    path = tmp_path / name
    path.write_text(ttl, encoding="utf-8")
    return path


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


@pytest.fixture
def mini_store(tmp_path):
    store = EmbeddedStore([_kg(tmp_path)], candidates=CandidateQueryConfig(memory_mb=256))
    yield store
    store.close()


def test_candidate_results_equal_the_trusted_path_byte_for_byte(tmp_path):
    """Every shape of result (typed literals, languages, blank nodes, tabs and control
    characters, caps that cut) reads the same through a worker as in process."""
    store = EmbeddedStore([_kg(tmp_path, TRICKY_TTL)])
    queries = [q["sparql"] for q in TYPES_QUESTIONS] + [
        "SELECT ?s ?p ?o WHERE { ?s ?p ?o }",
        "SELECT ?o WHERE { ?s ?p ?o } ORDER BY DESC(STR(?o))",
        "SELECT ?o (STRLEN(?o) AS ?n) WHERE { ?s ?p ?o FILTER isLiteral(?o) }",
    ]
    try:
        for query in queries:
            for cap in (2000, 3, 0):
                trusted = store.execute(query, timeout_s=30, row_cap=cap)
                candidate, resources = store.execute_candidate(query, timeout_s=30, row_cap=cap)
                assert candidate.sha256() == trusted.sha256(), query
                blank = {"value": "_"}  # blank node labels are engine-local: compared without them
                dump = lambda r: [[blank if t and t.type == "bnode" else t and t.model_dump() for t in row] for row in r.rows]  # noqa: E731
                assert dump(candidate) == dump(trusted) and candidate.total == trusted.total
                assert resources.sandboxed and resources.wall_ms > 0 and resources.peak_memory_bytes
    finally:
        store.close()


def test_row_keys_from_engine_strings_equal_the_canonical_keys(tmp_path):
    """The hot path ranks rows on the engine's own spellings; they must be exactly the
    canonical keys of the Terms the judges see, or a cut result would keep other rows."""
    ox_store = ox.Store()
    ox_store.bulk_load(path=str(_kg(tmp_path, TRICKY_TTL)), format=ox.RdfFormat.TURTLE)
    describer = _Describer(None)
    store = EmbeddedStore([tmp_path / "kg.ttl"])
    terms_rows = store.execute("SELECT ?s ?p ?o WHERE { ?s ?p ?o }", timeout_s=30, row_cap=10_000).rows
    keys = sorted(describer.key(s) for s in ox_store.query("SELECT ?s ?p ?o WHERE { ?s ?p ?o }"))
    cells = sorted(cells_key([cell_from_term(t) for t in s]) for s in ox_store.query("SELECT ?s ?p ?o WHERE { ?s ?p ?o }"))
    assert keys == cells == sorted(row_key(r) for r in terms_rows)
    assert any("\\t" in k or "\t" in k.split("\t", 2)[-1] for k in keys)  # the tricky literals are there


def test_a_query_past_its_deadline_has_its_worker_killed_and_replaced(mini_store):
    mini_store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    [pid] = mini_store.sandbox.worker_pids()
    with pytest.raises(QueryTimeout) as caught:
        mini_store.execute_candidate(UNENDING, timeout_s=1, row_cap=10)
    assert not _alive(pid), "the timed-out worker still runs (and burns a core)"
    assert caught.value.resources.sandboxed and caught.value.resources.wall_ms >= 1000
    result, _ = mini_store.execute_candidate(MINI_QUESTIONS[2]["sparql"], timeout_s=30, row_cap=10)
    assert result.rows[0][0].value == "3"
    assert mini_store.sandbox.worker_pids() and pid not in mini_store.sandbox.worker_pids()


def test_memory_bomb_ends_its_worker_not_the_run(tmp_path):
    """The worker's memory limit, behind the value-size estimate (which refuses this bomb before
    any store sees it by default): with the estimate's cap lifted, the limit ends the worker."""
    limits = CandidateQueryConfig(memory_mb=256, max_value_bytes=1 << 62)
    store = EmbeddedStore([_kg(tmp_path)], candidates=limits)
    doublings = " ".join(f"BIND(CONCAT(?a{i}, ?a{i}) AS ?a{i + 1})" for i in range(40))
    try:
        with pytest.raises(QueryOverBudget, match="memory budget"):
            store.execute_candidate(f'SELECT ?a40 WHERE {{ BIND("0123456789abcdef" AS ?a0) {doublings} }}', timeout_s=60, row_cap=10)
        result, _ = store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
        assert result.boolean is True
    finally:
        store.close()


def test_value_and_result_size_caps(tmp_path):
    # data values taken as 1 byte: the estimate (983 bytes) lets the query reach the worker,
    # whose cap on the real value (38-byte IRI + 980) is what this test checks
    caps = CandidateQueryConfig(max_value_bytes=1000, max_result_bytes=5000, assumed_value_bytes=1)
    store = EmbeddedStore([_kg(tmp_path)], candidates=caps)
    try:
        big_value = 'SELECT ?v WHERE { ?s ?p ?o FILTER(?s = <http://example.org/mini/entities/alice>) BIND(CONCAT(STR(?s), "' + "x" * 980 + '") AS ?v) } LIMIT 1'
        with pytest.raises(QueryOverBudget, match="a value of the result is 1,018 bytes, over the 1,000-byte limit"):
            store.execute_candidate(big_value, timeout_s=30, row_cap=10)
        [pid] = store.sandbox.worker_pids()  # a query the worker refused leaves the worker serving
        many = 'SELECT ?s ?v WHERE { ?s ?p ?o BIND("' + "z" * 100 + '" AS ?v) }'
        with pytest.raises(QueryOverBudget, match="over the 5,000-byte limit") as caught:
            store.execute_candidate(many, timeout_s=30, row_cap=2000)
        assert caught.value.resources.sandboxed
        result, resources = store.execute_candidate(many, timeout_s=30, row_cap=10)  # cut to 10 rows: fits
        assert len(result.rows) == 10 and 1000 < resources.result_bytes <= 5000
        assert store.sandbox.worker_pids() == [pid]
        assert store.execute(big_value, timeout_s=30, row_cap=10).total == 1  # trusted queries are not capped
    finally:
        store.close()


def test_service_reaching_the_engine_makes_no_request(mini_store):
    """Defence in depth: even a SERVICE the guard failed to see cannot leave a sandbox worker
    (it has its own, empty network namespace). The guard is bypassed here on purpose."""
    probe = EmbeddedStore([mini_store._files[0]])  # noqa: SLF001 - the same KG file
    try:
        with loopback() as (url, recorded):
            query = f"SELECT * WHERE {{ SERVICE <{url}/sparql> {{ ?s ?p ?o }} }}"
            request = (query, False, False, 10, 1000, 100_000, 10, False, None, 1)
            with pytest.raises(QueryRejected, match="outside the store"):
                mini_store.sandbox.run(request, timeout_s=60)
            assert recorded == [], "a sandbox worker reached the network"
            assert mini_store.sandbox.network_isolated is True
            with pytest.raises(QueryRejected):  # in process, the engine does call out: the reason for the sandbox
                from kgeval.stores._engine import evaluate

                evaluate(probe._store, query, ask=False, ordered=False, row_cap=10, caps=None)  # noqa: SLF001
            assert len(recorded) == 1
    finally:
        probe.close()


def test_unbound_service_variable_is_a_named_error_in_process(tmp_path):
    """`SERVICE ?var` with ?var unbound raised a bare RuntimeError while iterating rows."""
    from kgeval.stores._engine import evaluate

    store = EmbeddedStore([_kg(tmp_path)])
    with pytest.raises(QueryRejected, match="service name is unbound"):
        evaluate(store._store, "SELECT * WHERE { SERVICE ?u { ?s ?p ?o } }", ask=False, ordered=False, row_cap=5, caps=None)  # noqa: SLF001


def test_concurrent_candidates_share_a_bounded_pool(mini_store):
    holdout_queries = [q["sparql"] for q in MINI_QUESTIONS]
    expected = {q: mini_store.execute(q, timeout_s=30, row_cap=2000).sha256() for q in holdout_queries}
    failures: list[str] = []

    def worker(n: int) -> None:
        for query in holdout_queries[n % 3:] * 3:
            result, _ = mini_store.execute_candidate(query, timeout_s=30, row_cap=2000)
            if result.sha256() != expected[query]:
                failures.append(query)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert 1 <= len(mini_store.sandbox.worker_pids()) <= mini_store.candidate_limits.workers


def test_changed_kg_files_refuse_to_start_a_worker(tmp_path):
    path = _kg(tmp_path)
    store = EmbeddedStore([path])
    path.write_text(MINI_TTL + "<http://x/a> <http://x/b> <http://x/c> .\n", encoding="utf-8")
    with pytest.raises(StoreError, match="KG files changed"):
        store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    assert store.sandbox.worker_pids() == []


def test_close_stops_every_worker_and_configuration_reaches_the_pool(tmp_path):
    config = StoreConfig(candidates=CandidateQueryConfig(workers=1, memory_mb=128))
    store = open_store(config, [_kg(tmp_path)])
    store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    assert store.candidate_limits.memory_mb == 128
    [pid] = store.sandbox.worker_pids()
    limit = next(line for line in Path(f"/proc/{pid}/limits").read_text().splitlines() if line.startswith("Max address space"))
    assert limit.split()[3] != "unlimited"
    store.close()
    assert not _alive(pid)


def test_in_process_candidates_when_the_sandbox_is_off(tmp_path):
    store = EmbeddedStore([_kg(tmp_path)], candidates=CandidateQueryConfig(sandbox=False, max_value_bytes=10))
    with pytest.raises(QueryOverBudget):
        store.execute_candidate('SELECT ?v WHERE { BIND("0123456789abc" AS ?v) }', timeout_s=30, row_cap=1)
    result, resources = store.execute_candidate("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1)
    assert result.boolean and not resources.sandboxed and store.sandbox.worker_pids() == []


def test_workers_started_ahead_serve_the_first_queries(mini_store):
    """A run starts its stores' workers while it loads its gold: they load the KG without any
    query, at most `workers` of them, and the first candidate queries run on them."""
    mini_store.start_ahead(8)  # more than the pool's 2
    deadline = time.monotonic() + 60
    while len(mini_store.sandbox.worker_pids()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    started = mini_store.sandbox.worker_pids()
    assert len(started) == 2
    mini_store.start_ahead(8)  # enough are running: none more
    results = []
    threads = [threading.Thread(target=lambda: results.append(mini_store.execute_candidate(MINI_QUESTIONS[1]["sparql"], timeout_s=30, row_cap=10))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [result.total for result, _ in results] == [2] * 4 and all(resources.sandboxed for _, resources in results)
    assert mini_store.sandbox.worker_pids() == started


def test_the_start_gate_lets_starts_through_in_turn_and_a_waiting_query_past_it():
    """Workers started ahead load a slot at a time, first come first served, blocked without
    polling; a start whose pool has a query waiting goes at once (`wake`), slot or not."""
    from kgeval.stores._sandbox import _StartGate

    gate = _StartGate(1)
    assert gate.enter(lambda: False)  # the one slot taken
    order: list[int] = []
    urgent = threading.Event()

    def start(n: int, when=lambda: False) -> None:  # noqa: ANN001
        gated = gate.enter(when)
        order.append(n if gated else -n)
        if gated:
            time.sleep(0.02)
            gate.leave()

    def queued(n: int) -> None:  # wait until n starts are in line (however slowly their threads run)
        deadline = time.monotonic() + 60
        while len(gate._queue) < n and time.monotonic() < deadline:  # noqa: SLF001
            time.sleep(0.005)
        assert len(gate._queue) == n  # noqa: SLF001

    threads = []
    for n in (1, 2, 3):
        threads.append(threading.Thread(target=start, args=(n,), daemon=True))
        threads[-1].start()
        queued(n)  # queued in this order
    threads.append(threading.Thread(target=start, args=(4, urgent.is_set), daemon=True))
    threads[-1].start()
    queued(4)
    assert order == []  # all blocked behind the slot taken
    urgent.set()
    gate.wake()  # a query of start 4's pool waits: it goes without a slot
    threads[-1].join(60)  # a liveness bound: the thread goes at once, however slowly it runs
    assert order == [-4]
    gate.leave()
    for thread in threads:
        thread.join(60)
    assert order == [-4, 1, 2, 3]


def test_workers_still_loading_when_the_store_closes_are_stopped(tmp_path):
    store = EmbeddedStore([_kg(tmp_path)])
    before = {t.ident for t in threading.enumerate()}
    # workers of other tests' stores in this process (idle until their store is collected) are not this one's
    others = {p.name for p in Path("/proc").iterdir() if p.name.isdigit() and _is_worker_child(p)}
    store.start_ahead(2)
    starters = [t for t in threading.enumerate() if t.name == "kgeval-sandbox-start" and t.ident not in before]
    store.close()  # before they are ready
    for thread in starters:
        thread.join(60)
    assert starters and not any(t.is_alive() for t in starters)
    assert store.sandbox.worker_pids() == []
    children = [p for p in Path("/proc").iterdir() if p.name.isdigit() and p.name not in others and _is_worker_child(p)]
    assert children == []


def _is_worker_child(proc: Path) -> bool:
    """A live sandbox process started by this process: a worker, a template or what a template
    forked (their parent chain leads here), but not the process's zygote itself: shared by every
    store, it holds no KG and stays."""
    import os

    from kgeval.stores import _sandbox

    zygote = _sandbox._ZYGOTE.process.pid if _sandbox._ZYGOTE is not None else None
    pid = int(proc.name)
    if pid == zygote:
        return False
    try:
        if b"_worker import main" not in (proc / "cmdline").read_bytes() or not _alive(pid):
            return False
        for _ in range(3):  # worker <- template <- zygote <- this process
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if pid == os.getpid():
                return True
    except (OSError, ValueError):
        return False
    return False


def test_a_store_without_a_local_copy_answers_trusted_queries_from_its_workers(tmp_path):
    """A run's embedded store loads its KG in its sandbox workers only: its trusted queries (the
    judges' label and vocabulary lookups, a system's schema summary) go to a worker and read
    exactly as in process, without the candidate size caps, within their deadline."""
    files = [_kg(tmp_path, TRICKY_TTL)]
    caps = CandidateQueryConfig(max_value_bytes=1000, max_result_bytes=2000, assumed_value_bytes=1)
    local, remote = EmbeddedStore(files, candidates=caps), EmbeddedStore(files, candidates=caps, local_copy=False)
    queries = [q["sparql"] for q in TYPES_QUESTIONS] + [
        "SELECT ?s ?l WHERE { VALUES ?p { <http://www.w3.org/2000/01/rdf-schema#label> } ?s ?p ?l . FILTER(isIRI(?s) && isLiteral(?l)) }",
        "sElEcT ?o WHERE { ?s ?p ?o } ORDER BY DESC(STR(?o)) # a comment",
        "ASK { ?s ?p ?o }",
        "ASK { <http://example.org/nowhere> ?p ?o }",
        'SELECT ?s ?v WHERE { ?s ?p ?o BIND("' + "z" * 100 + '" AS ?v) }',  # over the candidate result cap: not a trusted query's
    ]
    # blank node labels are engine-local (two loads differ): cells compared without them
    cells = lambda r: r._replace(rows=[tuple(("bnode",) if c and c[0] == "bnode" else c for c in row) for row in r.rows])  # noqa: E731
    try:
        assert remote._store is None and local._store is not None  # noqa: SLF001 - no copy of the KG in this process
        for query in queries:
            for cap in (2000, 3):
                assert remote.execute(query, timeout_s=30, row_cap=cap).sha256() == local.execute(query, timeout_s=30, row_cap=cap).sha256(), query
                assert cells(remote.execute_cells(query, timeout_s=30, row_cap=cap)) == cells(local.execute_cells(query, timeout_s=30, row_cap=cap)), query
        assert remote.sandbox.worker_pids() and not local.sandbox.worker_pids()
        with pytest.raises(QueryOverBudget):  # the same text as a candidate is capped
            remote.execute_candidate(queries[-1], timeout_s=30, row_cap=2000)
        with pytest.raises(QueryTimeout):
            remote.execute(UNENDING, timeout_s=1, row_cap=10)
        assert remote.execute("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1).boolean is True  # the store answers after its timed-out worker was killed
    finally:
        local.close()
        remote.close()


def test_a_store_without_a_local_copy_loads_one_when_the_sandbox_is_off(tmp_path):
    """With the sandbox off there is no worker to hold the KG: the store loads it in process."""
    store = EmbeddedStore([_kg(tmp_path)], candidates=CandidateQueryConfig(sandbox=False), local_copy=False)
    assert store._store is not None  # noqa: SLF001
    assert store.execute("ASK { ?s ?p ?o }", timeout_s=30, row_cap=1).boolean is True
    assert store.sandbox.worker_pids() == []


def test_a_worker_killed_from_two_threads_at_once_closes_its_channel_once(tmp_path):
    """A pool closing while a start-ahead thread drops the same worker kills it twice at once:
    the second close of its descriptor raised EBADF, a traceback out of a run that stopped on a
    damaged results file (seen once in CI). Kill is once, whichever thread comes first."""
    import threading

    from kgeval._files import sha256_file
    from kgeval.config import CandidateQueryConfig
    from kgeval.stores._sandbox import WorkerPool

    kg = tmp_path / "kg.ttl"
    kg.write_text("<http://x/a> <http://x/p> <http://x/b> .\n")
    for _ in range(5):
        pool = WorkerPool([kg], [sha256_file(kg)], CandidateQueryConfig(), "kg")
        worker = pool._new_worker()
        pool._started += 1
        errors: list[BaseException] = []
        start = threading.Barrier(3)

        def kill() -> None:
            start.wait()
            try:
                worker.kill()
            except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

        threads = [threading.Thread(target=kill) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        pool.close()
        assert errors == [] and worker.conn.closed


@pytest.mark.parametrize("size", [0, 10, 65_531, 65_532, 300_000])
def test_a_reply_is_read_whole_in_pieces_or_at_once(size):
    """`_read_reply` reads the frames `_worker._Channel` writes, whether the reply fits in one
    read or arrives in pieces; a reply followed by more bytes, or cut short, is refused."""
    import socket
    import struct

    from kgeval.stores._sandbox import _read_reply

    ours, theirs = socket.socketpair()
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    frame = struct.pack("!i", size) + payload
    sender = threading.Thread(target=lambda: [theirs.sendall(frame[i : i + 7_000]) or time.sleep(0.001) for i in range(0, len(frame), 7_000)])
    sender.start()
    assert bytes(_read_reply(ours.fileno(), 1 << 20)) == payload
    sender.join()
    if size + 5 <= 65_536:  # read at once with the byte after it
        theirs.sendall(frame + b"x")
        time.sleep(0.05)
        with pytest.raises(OSError, match="more than one reply"):
            _read_reply(ours.fileno(), 1 << 20)
    ours.close()
    ours, theirs = socket.socketpair()
    theirs.sendall(frame[: len(frame) // 2])
    theirs.close()
    with pytest.raises(EOFError):
        _read_reply(ours.fileno(), 1 << 20)
    ours.close()


@pytest.mark.parametrize("header", ["!i", "!iQ"])
def test_a_reply_over_the_workers_memory_budget_is_refused_unread(header):
    """A reply can never be larger than the worker's memory budget, which held it: a length
    over it (a worker whose engine a query subverted could announce any) is refused before
    anything is allocated for it, as is a negative one."""
    import socket
    import struct

    from kgeval.stores._sandbox import _read_reply, _ReplyTooLarge

    for claimed in ((1 << 20) + 1, 1 << 62, -5):
        ours, theirs = socket.socketpair()
        fields = (claimed,) if header == "!i" else (-1, claimed)
        if header == "!i" and claimed > 0x7FFFFFFF or header == "!iQ" and claimed < 0:
            continue
        theirs.sendall(struct.pack(header, *fields) + b"x" * 64)
        with pytest.raises(_ReplyTooLarge, match="over the 1,048,576 bytes of its memory budget"):
            _read_reply(ours.fileno(), 1 << 20)
        ours.close()
        theirs.close()


class _BuiltByACall:
    """Pickles as a call (`tuple([...])`) that builds a well-shaped answer: unpickled, the call
    is made and the reply passes; never unpickled, it is refused."""

    def __reduce__(self):  # noqa: ANN204 - what unpickling it would call
        return (tuple, ([("x",), [], 1, None, 0],))


def test_a_reply_off_the_protocol_is_refused():
    """A worker's reply is unmarshalled, never unpickled (unpickling calls what the bytes name),
    and must have one of the protocol's shapes: anything else is a StoreError."""
    import marshal
    import pickle

    from kgeval.stores._sandbox import _decoded_reply

    answer = (("x",), [(("uri", "http://a", None, None),)], 1, None, 0)
    assert _decoded_reply(marshal.dumps(("ok", answer, 123)), 5) == ("ok", answer, 123)
    assert _decoded_reply(marshal.dumps(("error", "QueryRejected", "no", None, False)), 5)[1] == "QueryRejected"
    for bad in (
        pickle.dumps(("ok", _BuiltByACall(), 1)),  # a pickle: never read as one
        marshal.dumps(("ok", answer[:3], 1)),  # an answer of other fields
        marshal.dumps(["ok", answer, 1]),
        marshal.dumps(("ok", compile("1", "x", "eval"), 1)),
        marshal.dumps(("error", 1, 2, 3, 4)),
        b"",
    ):
        with pytest.raises(StoreError, match="reply the protocol does not have"):
            _decoded_reply(bad, 5)


@pytest.mark.parametrize("row_cap", [10_000, 7, 1, 0])
def test_bare_values_are_the_values_of_the_rows_the_cells_keep(tmp_path, row_cap):
    """`execute_values` keeps the rows `execute_cells` keeps (the same rows past a cap, the same
    order when ordered), in a sandbox worker, in process, and by the stores' default."""
    path = _kg(tmp_path, TRICKY_TTL + "_:b <http://example.org/t/p> 1 .\n")
    queries = [
        "SELECT ?s ?p ?o WHERE { ?s ?p ?o }",
        "SELECT ?s ?o ?none WHERE { ?s ?p ?o OPTIONAL { ?s <http://example.org/none> ?none } }",
        "SELECT ?s ?o WHERE { ?s ?p ?o } ORDER BY DESC(STR(?o)) ?s",
        "SELECT ?x WHERE { ?s <http://example.org/none> ?x }",
    ]
    for local_copy in (False, True):
        store = EmbeddedStore([path], local_copy=local_copy)
        try:
            for query in queries:
                cells = store.execute_cells(query, timeout_s=30, row_cap=row_cap)
                rows = [tuple(None if cell is None else cell[1] for cell in row) for row in cells.rows]
                for values in (store.execute_values(query, timeout_s=30, row_cap=row_cap), Store._values(store, query, store._guard(query), 30, row_cap)):  # noqa: SLF001
                    assert values.variables == cells.variables and values.total == cells.total
                    assert len(values.columns) == len(cells.variables)
                    kept = list(zip(*values.columns))
                    if "ORDER BY" in query:
                        assert kept == rows
                    else:
                        assert sorted(kept, key=repr) == sorted(rows, key=repr)
        finally:
            store.close()
