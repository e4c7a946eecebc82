"""Real SPARQL servers on 127.0.0.1 for the store tests: Oxigraph server, Virtuoso and Apache
Jena Fuseki (the jar infra/servers/install.sh puts in $KGEVAL_SERVERS_DIR, run on Java 17).

Each server gets a free port and a temporary data directory, is loaded with every KG of the
given holdouts (each KG in its own named graph, selected per KG with default-graph-uri), waits
a bounded time for its endpoint, and is stopped by the fixture that started it.
A missing server binary (or Fuseki's jar, or java) skips the tests that need it, unless KGEVAL_REQUIRE_SERVERS=1 (CI):
then it fails them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import pyoxigraph as ox
import pytest

from kgeval.config import StoreConfig
from kgeval.holdout import Holdout

START_TIMEOUT_S = 180
"""Generous: a JVM starting on this shared 2-core machine under load takes 20-60 s."""
VIRTUOSO_MAX_ROWS = 10_000


@dataclass
class RunningServer:
    """A started server: its SPARQL endpoint and the graph holding each loaded KG."""

    product: str
    endpoint: str
    process: subprocess.Popen
    graphs: dict[str, str] = field(default_factory=dict)
    """`<holdout label>/<kg id>` -> graph IRI."""
    union_graphs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """`<holdout label>` -> the named graphs its files' `.graph` IRIs name (CK25), read together
    as the default graph (one default-graph-uri each)."""

    def config(self, label: str, **extra: object) -> StoreConfig:
        """The store configuration that reads holdout `label`'s KGs from this server."""
        if label in self.union_graphs:
            return StoreConfig(kind="sparql", endpoint=self.endpoint, default_graphs=self.union_graphs[label],
                               data_version=f"test:{label}", **extra)
        kg_graphs = {key.split("/", 1)[1]: iri for key, iri in self.graphs.items() if key.startswith(f"{label}/")}
        return StoreConfig(kind="sparql", endpoint=self.endpoint, kg_graphs=kg_graphs, data_version=f"test:{label}", **extra)


def graph_iri(label: str, kg_id: str) -> str:
    return f"urn:kgeval:test:{label}:{kg_id}"


def require_binary(name: str, how: str) -> str:
    """The binary's path; skip (or fail under KGEVAL_REQUIRE_SERVERS=1) when it is absent."""
    path = shutil.which(name) or (str(Path(sys.executable).parent / name) if (Path(sys.executable).parent / name).exists() else None)
    if path:
        return path
    unavailable(f"{name} is not installed ({how})")


def unavailable(reason: str) -> NoReturn:
    """Skip the test for `reason`; fail it instead under KGEVAL_REQUIRE_SERVERS=1 (CI)."""
    if os.environ.get("KGEVAL_REQUIRE_SERVERS") == "1":
        pytest.fail(f"{reason}; KGEVAL_REQUIRE_SERVERS=1 requires it", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_endpoint(endpoint: str, process: subprocess.Popen, log: Path) -> None:
    """Poll `ASK {}` until the endpoint answers 200; fail after START_TIMEOUT_S."""
    deadline = time.monotonic() + START_TIMEOUT_S
    url = endpoint + "?" + urllib.parse.urlencode({"query": "ASK {}"})
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{endpoint}: server exited with {process.returncode}: {_tail(log)}", pytrace=False)
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    stop(process)
    pytest.fail(f"{endpoint}: not up after {START_TIMEOUT_S} s: {_tail(log)}", pytrace=False)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def cpu_seconds(pid: int) -> float:
    """CPU time the process (all its threads) has used so far: utime + stime from /proc, in
    clock ticks of 1/100 s. A resource measure: a busy machine slows it, never inflates it."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100


def cpu_seconds_over(pid: int, window_s: float) -> float:
    """CPU-seconds the process uses during the next `window_s` seconds."""
    start = cpu_seconds(pid)
    time.sleep(window_s)
    return cpu_seconds(pid) - start


def cpu_rates_until_idle(pid: int, idle_rate: float, *, within_s: float, window_s: float = 4.0, slack: float = 0.12) -> list[float]:
    """Cores the process used over successive `window_s` windows, until one is within `slack`
    of its idle baseline or `within_s` has passed; the caller asserts on the last. A server's
    wind-down after a query it stopped costs the same CPU-seconds on a loaded machine, only
    later: waiting for an idle window (where a single window came after a fixed pause) keeps
    that from failing a test, while a query left running never gives one."""
    deadline = time.monotonic() + within_s
    rates = [cpu_seconds_over(pid, window_s) / window_s]
    while rates[-1] > idle_rate + slack and time.monotonic() < deadline:
        rates.append(cpu_seconds_over(pid, window_s) / window_s)
    return rates


def _tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace")[-1500:]
    except OSError:
        return "(no log)"


def _kg_files(holdouts: dict[str, Holdout]) -> list[tuple[str, Path]]:
    """(graph IRI, file) of every KG file: the IRI its `.graph` file named, else one per KG."""
    return [(kg.graphs.get(path.name) or graph_iri(label, kg.id), path)
            for label, h in holdouts.items() for kg in h.kgs for path in kg.files]


def _graph_map(holdouts: dict[str, Holdout]) -> dict[str, str]:
    return {f"{label}/{kg.id}": graph_iri(label, kg.id) for label, h in holdouts.items() for kg in h.kgs if not kg.graphs}


def _union_graphs(holdouts: dict[str, Holdout]) -> dict[str, tuple[str, ...]]:
    return {label: tuple(sorted({iri for kg in h.kgs for iri in kg.graphs.values()}))
            for label, h in holdouts.items() if any(kg.graphs for kg in h.kgs)}


def running(product: str, endpoint: str, process: subprocess.Popen, holdouts: dict[str, Holdout]) -> RunningServer:
    return RunningServer(product, endpoint, process, _graph_map(holdouts), _union_graphs(holdouts))


def start_oxigraph(workdir: Path, holdouts: dict[str, Holdout]) -> RunningServer:
    endpoint, process = launch_oxigraph(workdir, _kg_files(holdouts))
    return running("oxigraph", endpoint, process, holdouts)


def launch_oxigraph(
    workdir: Path, graph_files: list[tuple[str, Path]], extra_args: tuple[str, ...] = ()
) -> tuple[str, subprocess.Popen]:
    """Load each (graph IRI, file) and serve read-only (with `extra_args`, e.g. a server-side
    `--timeout-s`); return the endpoint and the process."""
    binary = require_binary("oxigraph", "pip install oxigraph")
    location = workdir / "db"
    for graph, path in graph_files:
        subprocess.run(
            [binary, "load", "--location", str(location), "--file", str(path), "--graph", graph],
            check=True, capture_output=True, timeout=300,
        )
    port = free_port()
    log = workdir / "server.log"
    process = subprocess.Popen(
        [binary, "serve-read-only", "--location", str(location), "--bind", f"127.0.0.1:{port}", *extra_args],
        stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )
    endpoint = f"http://127.0.0.1:{port}/query"
    wait_for_endpoint(endpoint, process, log)
    return endpoint, process


VIRTUOSO_INI = """\
[Database]
DatabaseFile = {dir}/virtuoso.db
ErrorLogFile = {dir}/virtuoso.log
LockFile = {dir}/virtuoso.lck
TransactionFile = {dir}/virtuoso.trx
xa_persistent_file = {dir}/virtuoso.pxa
ErrorLogLevel = 7
FileExtend = 200
MaxCheckpointRemap = 2000
Striping = 0
TempStorage = TempDatabase

[TempDatabase]
DatabaseFile = {dir}/virtuoso-temp.db
TransactionFile = {dir}/virtuoso-temp.trx
MaxCheckpointRemap = 2000
Striping = 0

[Parameters]
ServerPort = 127.0.0.1:{sql_port}
NumberOfBuffers = 20000
MaxDirtyBuffers = 15000
DirsAllowed = {dirs}
CheckpointInterval = 0
MaxClientConnections = 8
ThreadsPerQuery = 2
MaxQueryMem = {max_query_mem}

[HTTPServer]
ServerPort = 127.0.0.1:{http_port}
ServerThreads = 8
MaxClientConnections = 8

[SPARQL]
ResultSetMaxRows = {max_rows}
MaxQueryExecutionTime = {max_query_s}
MaxQueryCostEstimationTime = {max_query_s}
"""


def start_virtuoso(workdir: Path, holdouts: dict[str, Holdout]) -> RunningServer:
    endpoint, process = launch_virtuoso(workdir, _kg_files(holdouts))
    return running("virtuoso", endpoint, process, holdouts)


def launch_virtuoso(
    workdir: Path, graph_files: list[tuple[str, Path]], max_query_s: int = 0, max_query_mem: str = "2G"
) -> tuple[str, subprocess.Popen]:
    """Start Virtuoso with HTTP and SQL ports on 127.0.0.1, load each (graph IRI, file) with
    TTLP_MT, checkpoint; return the SPARQL endpoint and the process. `max_query_s`: the
    server's own limits on a query's time and estimated cost (0: none); `max_query_mem` its
    memory per query (without a bound, one CONCAT bomb wedges the whole server)."""
    binary = require_binary("virtuoso-t", "apt-get install virtuoso-opensource-7-bin")
    isql = require_binary("isql-vt", "apt-get install virtuoso-opensource-7-bin")
    sql_port, http_port = free_port(), free_port()
    dirs = sorted({str(workdir)} | {str(path.parent.resolve()) for _, path in graph_files})
    ini = workdir / "virtuoso.ini"
    ini.write_text(VIRTUOSO_INI.format(dir=workdir, sql_port=sql_port, http_port=http_port,
                                       dirs=", ".join(dirs), max_rows=VIRTUOSO_MAX_ROWS, max_query_s=max_query_s,
                                       max_query_mem=max_query_mem))
    log = workdir / "server.log"
    process = subprocess.Popen([binary, "+configfile", str(ini), "+foreground"], cwd=workdir,
                               stdout=log.open("wb"), stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{http_port}/sparql"
    wait_for_endpoint(endpoint, process, log)
    statements = [
        f"DB.DBA.TTLP_MT(file_to_string_output('{path.resolve()}'), '', '{graph}', 0);" for graph, path in graph_files
    ] + ["checkpoint;"]
    done = subprocess.run([isql, f"127.0.0.1:{sql_port}", "dba", "dba", "exec=" + " ".join(statements)],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or "Error" in done.stdout + done.stderr:
        stop(process)
        pytest.fail(f"virtuoso: loading the KGs failed: {done.stdout[-800:]} {done.stderr[-800:]}", pytrace=False)
    return endpoint, process


GREMLIN_SERVER_VERSION = os.environ.get("KGEVAL_GREMLIN_SERVER_VERSION", "3.8.1")
GREMLIN_CONFIG = Path(__file__).resolve().parents[2] / "infra" / "gremlin-server"


def gremlin_server_lib() -> Path:
    """The jars infra/servers/install-gremlin-server.sh installed; skip (or fail under
    KGEVAL_REQUIRE_SERVERS=1) when they are not there."""
    servers = Path(os.environ.get("KGEVAL_SERVERS_DIR", Path.home() / ".cache" / "kgeval" / "servers"))
    home = servers / "gremlin-server" / GREMLIN_SERVER_VERSION
    if (home / "INSTALLED").is_file():
        return home / "lib"
    reason = f"Gremlin Server {GREMLIN_SERVER_VERSION} is not installed in {home} (bash infra/servers/install-gremlin-server.sh)"
    if os.environ.get("KGEVAL_REQUIRE_SERVERS") == "1":
        pytest.fail(f"{reason}; KGEVAL_REQUIRE_SERVERS=1 requires it", pytrace=False)
    pytest.skip(reason)


def launch_gremlin_server(workdir: Path, evaluation_timeout_ms: int) -> tuple[str, subprocess.Popen]:
    """Start Gremlin Server with infra/gremlin-server's configuration (an empty TinkerGraph, `g`)
    on a free port of 127.0.0.1, its own `evaluationTimeout`; return the websocket endpoint and
    the process once a traversal answers."""
    java = require_binary("java", "apt-get install openjdk-17-jre-headless")
    lib = gremlin_server_lib()
    shutil.copytree(GREMLIN_CONFIG, workdir, dirs_exist_ok=True)
    port = free_port()
    config = workdir / "gremlin-server.yaml"
    text = config.read_text()
    for old, new in (("port: 8182", f"port: {port}"), ("evaluationTimeout: 60000", f"evaluationTimeout: {evaluation_timeout_ms}")):
        assert old in text, f"{config}: expected a line {old!r}"
        text = text.replace(old, new)
    config.write_text(text)
    log = workdir / "server.log"
    process = subprocess.Popen(
        [java, "-Xms64m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", f"-Dlogback.configurationFile={workdir / 'logback.xml'}",
         "-cp", f"{lib}/*", "org.apache.tinkerpop.gremlin.server.GremlinServer", str(config)],
        cwd=workdir, stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )
    endpoint = f"ws://127.0.0.1:{port}/gremlin"
    _wait_for_gremlin(endpoint, process, log)
    return endpoint, process


def _wait_for_gremlin(endpoint: str, process: subprocess.Popen, log: Path) -> None:
    """Poll until the port accepts and `g.inject(1)` answers; fail after START_TIMEOUT_S."""
    from gremlin_python.driver.driver_remote_connection import DriverRemoteConnection
    from gremlin_python.process.anonymous_traversal import traversal

    port = int(endpoint.rsplit(":", 1)[1].split("/")[0])
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{endpoint}: server exited with {process.returncode}: {_tail(log)}", pytrace=False)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        except OSError:
            time.sleep(0.25)
            continue
        connection = DriverRemoteConnection(endpoint, "g")
        try:
            if traversal().with_(connection).inject(1).to_list() == [1]:
                return
        except Exception:  # noqa: BLE001 - not ready yet (the init script is still compiling)
            time.sleep(0.25)
        finally:
            connection.close()
    stop(process)
    pytest.fail(f"{endpoint}: not up after {START_TIMEOUT_S} s: {_tail(log)}", pytrace=False)

FUSEKI_VERSION = "5.6.0"
"""The version infra/servers/install-fuseki.sh installs (the newest Fuseki that runs on Java 17)."""
FUSEKI_CONFIG = Path(__file__).resolve().parents[2] / "infra" / "fuseki" / "config.ttl"
FUSEKI_HEAP = "512m"
"""The JVM's heap: the test KGs take a few MB; a bound, so a value-building query ends in an
OutOfMemoryError (HTTP 500) rather than growing the server."""
FUSEKI_JVM_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
"""On a shared 2-core machine: a collector and a JIT compiler without background threads that
keep a core busy for seconds after a burst of new queries (measured: C2 compiling after the
hostile corpus used 0.3 core for 10 s), which would hide whether a query itself stopped."""
_FUSEKI = "http://jena.apache.org/fuseki#"
_JA = "http://jena.hpl.hp.com/2005/11/Assembler#"
_RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")


def fuseki_jar() -> tuple[str, Path]:
    """java and Fuseki's server jar as infra/servers/install.sh installs it; skip (or fail
    under KGEVAL_REQUIRE_SERVERS=1) when either is missing."""
    java = require_binary("java", "apt-get install openjdk-17-jre-headless")
    root = Path(os.environ.get("KGEVAL_SERVERS_DIR") or Path.home() / ".cache" / "kgeval" / "servers")
    jar = root / "fuseki" / FUSEKI_VERSION / "fuseki-server.jar"
    if not jar.is_file():
        unavailable(f"Apache Jena Fuseki {FUSEKI_VERSION} is not installed: {jar} is missing (run bash infra/servers/install.sh)")
    return java, jar


def start_fuseki(workdir: Path, holdouts: dict[str, Holdout], query_timeout_ms: int | None = None) -> RunningServer:
    endpoint, process = launch_fuseki(workdir, _kg_files(holdouts), query_timeout_ms)
    return running("fuseki", endpoint, process, holdouts)


def launch_fuseki(
    workdir: Path, graph_files: list[tuple[str, Path]], query_timeout_ms: int | None = None
) -> tuple[str, subprocess.Popen]:
    """Serve each (graph IRI, file) from memory with infra/fuseki/config.ttl's server and
    service (see `fuseki_config`) on 127.0.0.1; return the SPARQL endpoint and the process."""
    config = workdir / "config.ttl"
    config.write_text(fuseki_config(graph_files, query_timeout_ms), encoding="utf-8")
    return serve_fuseki(workdir, config)


def serve_fuseki(workdir: Path, config: Path) -> tuple[str, subprocess.Popen]:
    """Start Fuseki with the configuration file `config` (its run files under `workdir`) on a
    free port of 127.0.0.1; wait for its endpoint; return the endpoint and the process."""
    java, jar = fuseki_jar()
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}/{fuseki_service_name()}/sparql"
    log = workdir / "server.log"
    process = subprocess.Popen(
        [java, f"-Xmx{FUSEKI_HEAP}", *FUSEKI_JVM_FLAGS, "-jar", str(jar), "--localhost", "--port", str(port), f"--config={config}"],
        cwd=workdir, env={**os.environ, "FUSEKI_BASE": str(workdir / "run")},
        stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )
    wait_for_endpoint(endpoint, process, log)
    return endpoint, process


def fuseki_service_name() -> str:
    """The name config.ttl gives the service (the path of its endpoints)."""
    quads = _fuseki_config_quads()
    service = next(q.subject for q in quads if q.predicate.value == _FUSEKI + "dataset")
    return next(q.object.value for q in quads if q.subject == service and q.predicate.value == _FUSEKI + "name")


def _fuseki_config_quads() -> list[ox.Quad]:
    return list(ox.parse(path=FUSEKI_CONFIG, format=ox.RdfFormat.TURTLE, base_iri=FUSEKI_CONFIG.as_uri()))


def fuseki_config(graph_files: list[tuple[str, Path]], query_timeout_ms: int | None = None) -> str:
    """infra/fuseki/config.ttl as is (its server, its query-only service, its arq:queryTimeout
    unless `query_timeout_ms` replaces it), with the dataset's graphs replaced: each (graph IRI,
    file) in its named graph, the default graph their union, as the shipped file does for the
    sample holdout."""
    quads = _fuseki_config_quads()
    dataset = next(q.object for q in quads if q.predicate.value == _FUSEKI + "dataset")
    replaced = {_JA + "namedGraph", _JA + "defaultGraph"}
    kept = [q for q in quads if not (q.subject == dataset and q.predicate.value in replaced)]
    if query_timeout_ms is not None:
        kept = [ox.Quad(q.subject, q.predicate, ox.Literal(str(query_timeout_ms)), q.graph_name)
                if q.predicate.value == _JA + "cxtValue" else q for q in kept]
    return ox.serialize(kept + _fuseki_graphs(dataset, graph_files), format=ox.RdfFormat.N_QUADS).decode()


def _fuseki_graphs(dataset: ox.NamedNode | ox.BlankNode, graph_files: list[tuple[str, Path]]) -> list[ox.Quad]:
    def ja(name: str) -> ox.NamedNode:
        return ox.NamedNode(_JA + name)

    union = ox.BlankNode()
    quads = [ox.Quad(dataset, ja("defaultGraph"), union), ox.Quad(union, _RDF_TYPE, ja("UnionModel"))]
    models: dict[str, ox.BlankNode] = {}
    for iri, path in graph_files:
        if iri not in models:
            model = models[iri] = ox.BlankNode()
            entry = ox.BlankNode()
            quads += [ox.Quad(model, _RDF_TYPE, ja("MemoryModel")), ox.Quad(union, ja("subModel"), model),
                      ox.Quad(dataset, ja("namedGraph"), entry), ox.Quad(entry, ja("graphName"), ox.NamedNode(iri)),
                      ox.Quad(entry, ja("graph"), model)]
        content = ox.BlankNode()
        quads += [ox.Quad(models[iri], ja("content"), content),
                  ox.Quad(content, ja("externalContent"), ox.NamedNode(path.resolve().as_uri()))]
    return quads
