"""The hostile-query corpus (tests/stores/hostile_corpus.py) against every store kind that runs
here: the embedded store (sandbox workers), a real Oxigraph server, a real Virtuoso and a real
Apache Jena Fuseki.

Each run checks what DESIGN invariant 12 promises: no outbound request reaches the recording
listener, every outcome is a result or a named `QueryError` (never another exception), the
queries the guard must refuse are refused, the KG is unchanged, and memory and CPU stay bounded
(sandbox workers killed at their deadline are gone; servers are idle again afterwards).
"""

from __future__ import annotations

import json
import resource
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgeval.config import CandidateQueryConfig, StoreConfig
from kgeval.errors import QueryError, QueryRefused, QuerySyntaxError
from kgeval.stores import EmbeddedStore, Store, guard_query, open_store
from tests.conftest import MINI_TTL
from tests.stores.hostile_corpus import Hostile, hostile_queries
from tests.stores.loopback import Recorded, loopback
from tests.stores.servers import cpu_rates_until_idle, cpu_seconds_over, graph_iri, launch_oxigraph, launch_virtuoso, stop

TIMEOUT_S = 3.0
BOUNDED_BY_SIZE = {"bomb-big-value-every-row": 60.0}
"""Bombs whose outcome is asserted as over budget (a size cap ends them): they get a budget no
loaded machine runs out before the cap is reached, so a timeout cannot come first."""
IDLE_WINDOW_S = 4.0
IDLE_WITHIN_S = 12.0
IDLE_SLACK = 0.12
LIMITS = CandidateQueryConfig(memory_mb=256, max_result_bytes=1 << 20, max_response_bytes=8 << 20, max_sorted_rows=100_000)
GUARD_HOLES = {"trick-cr-in-comment"}
"""Tricks the guard on this branch approves although the engine reads a SERVICE clause in them
(a carriage return ends a `#` comment for Oxigraph, not for rdflib). The guard branch fixes
them (issue 16); until then they are sent only to the embedded store, whose sandbox has no
network, and `test_guard_refuses_what_engines_read_as_service` records them as expected failures."""
ROW = {"head": {"vars": ["s", "p", "o"]}, "results": {"bindings": [{"s": {"type": "uri", "value": "http://remote/s"},
       "p": {"type": "uri", "value": "http://remote/p"}, "o": {"type": "literal", "value": "remote row"}}]}}


def _remote_rows(_: Recorded) -> tuple[int, dict[str, str], bytes]:
    """What a federated endpoint would answer: a row that must never show up in a result."""
    return 200, {"Content-Type": "application/sparql-results+json"}, json.dumps(ROW).encode()


@pytest.fixture(scope="module")
def listener() -> Iterator[tuple[str, list[Recorded]]]:
    with loopback(_remote_rows) as (url, recorded):
        yield url, recorded


@pytest.fixture(scope="module")
def kg_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile-kg") / "kg.ttl"
    path.write_text(MINI_TTL, encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=["embedded", "oxigraph", "virtuoso", pytest.param("fuseki", marks=pytest.mark.fuseki)])
def hostile_store(request: pytest.FixtureRequest, kg_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Store, object]]:
    """(kind, store, server process or None); Oxigraph server and Virtuoso get their own time
    limit, so an abandoned bomb does not keep a core busy for the rest of the session. Fuseki
    is the session's (tests/stores/conftest.py: config.ttl's 120 s arq:queryTimeout, its `mini`
    KG is this one): only the `timeout` kgeval sends with each request stops a bomb there."""
    kind = request.param
    if kind == "fuseki":
        server = request.getfixturevalue("fuseki_server")
        yield kind, open_store(server.config("mini", candidates=LIMITS), [kg_file], kg="mini"), server.process
        return
    if kind == "embedded":
        store = EmbeddedStore([kg_file], candidates=LIMITS)
        yield kind, store, None
        store.close()
        return
    workdir = tmp_path_factory.mktemp(f"hostile-{kind}")
    graphs = [(graph_iri("hostile", "mini"), kg_file)]
    if kind == "oxigraph":
        endpoint, process = launch_oxigraph(workdir, graphs, ("--timeout-s", str(int(TIMEOUT_S))))
    else:
        endpoint, process = launch_virtuoso(workdir, graphs, max_query_s=int(TIMEOUT_S), max_query_mem="256M")
    config = StoreConfig(kind="sparql", endpoint=endpoint, data_version="test:hostile", kg_graphs={"mini": graph_iri("hostile", "mini")}, candidates=LIMITS)
    yield kind, open_store(config, [kg_file], kg="mini"), process
    stop(process)


def _kg_fingerprint(store: Store) -> tuple[int, str]:
    result = store.execute("SELECT ?s ?p ?o WHERE { ?s ?p ?o }", timeout_s=60, row_cap=100_000)
    return result.total, result.sha256()


def _outcome(store: Store, hostile: Hostile) -> str:
    """"result" or the name of the QueryError; any other exception fails the test (a crash)."""
    try:
        result, resources = store.execute_candidate(hostile.text, timeout_s=BOUNDED_BY_SIZE.get(hostile.id, TIMEOUT_S), row_cap=2000)
    except QueryError as exc:
        assert exc.resources is not None, f"{hostile.id}: the error does not say what the query cost"
        return "QueryRefused" if isinstance(exc, QueryRefused) else type(exc).__name__  # its kinds alike (EngineFunctionRefused)
    assert resources.wall_ms >= 0
    assert all("remote" not in (t.value if t else "") for row in result.rows for t in row), f"{hostile.id}: remote rows"
    return "result"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_hostile_corpus(hostile_store, listener) -> None:
    kind, store, process = hostile_store
    url, recorded = listener
    corpus = hostile_queries(url)
    assert len(corpus) >= 60
    before, peak_before = _kg_fingerprint(store), _rss_mb()
    idle_rate = _cpu_rate(process.pid) if process is not None else 0.0
    outcomes: dict[str, str] = {}
    for hostile in corpus:
        if kind != "embedded" and hostile.id in GUARD_HOLES and _guard_approves(hostile.text):
            continue  # see GUARD_HOLES
        outcomes[hostile.id] = _outcome(store, hostile)
        if hostile.must_refuse:
            assert outcomes[hostile.id] in ("QueryRefused", "QuerySyntaxError"), f"{hostile.id} reached the store: {outcomes[hostile.id]}"
        if isinstance(store, EmbeddedStore):
            assert len(store.sandbox.worker_pids()) <= LIMITS.workers
    assert recorded == [], f"{kind}: outbound requests: {[(r.method, r.path) for r in recorded]}"
    assert _kg_fingerprint(store) == before, f"{kind}: the KG changed"
    assert _rss_mb() - peak_before < 300, "the judge's own memory grew with the bombs"
    kinds = Counter(outcomes.values())
    assert kinds["result"] >= 5 and kinds["QueryRefused"] >= 30, kinds  # both sides are exercised
    if isinstance(store, EmbeddedStore):
        assert outcomes["bomb-concat-40-doublings"] == "QueryOverBudget"
        assert outcomes["bomb-count-cartesian"] == "QueryTimeout"
        assert outcomes["bomb-big-value-every-row"] == "QueryOverBudget"  # over max_result_bytes
    for bomb in ("bomb-concat-40-doublings", "bomb-concat-22-doublings", "bomb-replace-squaring", "bomb-ucase-tripling"):
        assert outcomes[bomb] == "QueryOverBudget", f"{kind}: {bomb}: {outcomes[bomb]}"  # refused before any store saw it
    if process is not None:
        _assert_server_idle(process.pid, kind, idle_rate)


def _guard_approves(text: str) -> bool:
    try:
        guard_query(text)
    except (QueryRefused, QuerySyntaxError):
        return False
    return True


def _cpu_rate(pid: int, window_s: float = IDLE_WINDOW_S) -> float:
    """Cores the process used over the window: CPU-seconds from /proc, not wall time."""
    return cpu_seconds_over(pid, window_s) / window_s


def _assert_server_idle(pid: int, kind: str, idle_rate: float) -> None:
    """Nothing the corpus sent keeps the server computing: within IDLE_WITHIN_S of the last
    answer, a window of IDLE_WINDOW_S uses no more CPU than the server's own idle baseline
    (measured before the corpus) plus IDLE_SLACK. The slack is small because a runaway query
    on this shared 2-core machine gets as little as 0.25 core (measured: a CONCAT bomb left
    running on either server used 0.25-0.5 core while other jobs ran)."""
    rates = cpu_rates_until_idle(pid, idle_rate, within_s=IDLE_WITHIN_S, window_s=IDLE_WINDOW_S, slack=IDLE_SLACK)
    print(f"{kind}: idle baseline {idle_rate:.3f} cores; after the corpus: {', '.join(f'{r:.3f}' for r in rates)}")
    assert rates[-1] <= idle_rate + IDLE_SLACK, (
        f"{kind}: the server still burns {rates[-1]:.2f} cores {IDLE_WITHIN_S:g} s after the corpus (idle: {idle_rate:.2f})"
    )


@pytest.mark.parametrize("hole", sorted(GUARD_HOLES))
def test_guard_refuses_what_engines_read_as_service(hole: str) -> None:
    text = next(h.text for h in hostile_queries("http://127.0.0.1:9") if h.id == hole)
    assert not _guard_approves(text)
