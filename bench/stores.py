"""Time a gold rebuild of the CK25 questions on each store, and on rdflib's own SPARQL engine.

    python bench/stores.py [--repeat N]        (KGEVAL_CK25 names the ck25 directory)

Stores: embedded (pyoxigraph in process), Oxigraph server, Virtuoso, Fuseki (when installed), each on
127.0.0.1 and loaded with graphs/*.ttl, every file in the graph its .graph file names (the
remote stores query their union with default-graph-uri; the embedded store and rdflib load all
files into one default graph). Every query goes through `Store.execute` (guard, timeout, row
cap 2,000) as in `kgeval gold rebuild`; rdflib runs the same query texts with `Graph.query` and
materializes the rows. Query time is the sum over the questions of the best of N repeats;
load time is reported apart. The questions.yml is parsed here directly (the TEXT2SPARQL
importer lives elsewhere).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kgeval.config import StoreConfig  # noqa: E402
from kgeval.errors import QueryError  # noqa: E402
from kgeval.stores import EmbeddedStore, Store, open_store  # noqa: E402

ROW_CAP = 2000
TIMEOUT_S = 120.0


def ck25_questions(root: Path) -> list[tuple[str, str]]:
    doc = yaml.safe_load((root / "questions.yml").read_text(encoding="utf-8"))
    return [(str(q["id"]), q["query"]["sparql"]) for q in doc["questions"]]


def ck25_graphs(root: Path) -> list[tuple[str, Path]]:
    return [(Path(f"{ttl}.graph").read_text(encoding="utf-8").strip(), ttl) for ttl in sorted((root / "graphs").glob("*.ttl"))]


def time_store(store: Store, questions: list[tuple[str, str]], repeat: int) -> tuple[float, dict[str, str], list[str]]:
    """(seconds, result hash per question, failures)."""
    total, hashes, failures = 0.0, {}, []
    for qid, query in questions:
        best = float("inf")
        for _ in range(repeat):
            started = time.perf_counter()
            try:
                result = store.execute(query, timeout_s=TIMEOUT_S, row_cap=ROW_CAP)
            except (QueryError, RuntimeError) as exc:  # RuntimeError: pyoxigraph before the XSD-cast fix on main
                failures.append(f"{qid}: {type(exc).__name__}: {str(exc)[:120]}")
                best = time.perf_counter() - started
                break
            best = min(best, time.perf_counter() - started)
            hashes[qid] = result.sha256()
        total += best
    return total, hashes, failures


RDFLIB_TIMEOUT_S = 60.0


def time_rdflib(files: list[Path], questions: list[tuple[str, str]], repeat: int) -> tuple[float, float, list[str]]:
    """Each query runs in a forked child (the loaded graph is shared copy-on-write), so a query
    rdflib cannot finish is killed at RDFLIB_TIMEOUT_S and counted at that time."""
    import multiprocessing

    import rdflib

    started = time.perf_counter()
    graph = rdflib.Graph()
    for path in files:
        graph.parse(path, format="turtle")
    load = time.perf_counter() - started

    def run(query: str, conn) -> None:  # in the child
        try:
            t0 = time.perf_counter()
            result = graph.query(query)
            _ = result.askAnswer if result.type == "ASK" else [tuple(row) for row in result]
            conn.send(("ok", time.perf_counter() - t0))
        except Exception as exc:  # rdflib raises many types
            conn.send(("error", f"{type(exc).__name__}: {str(exc)[:120]}"))

    context = multiprocessing.get_context("fork")
    total, failures = 0.0, []
    for qid, query in questions:
        best = float("inf")
        for _ in range(repeat):
            parent, child = context.Pipe()
            process = context.Process(target=run, args=(query, child), daemon=True)
            process.start()
            if parent.poll(RDFLIB_TIMEOUT_S):
                status, value = parent.recv()
            else:
                status, value = "timeout", f"no answer within {RDFLIB_TIMEOUT_S:g} s (counted as {RDFLIB_TIMEOUT_S:g} s)"
            process.kill()
            process.join()
            if status != "ok":
                failures.append(f"{qid}: {value}")
                best = RDFLIB_TIMEOUT_S if status == "timeout" else 0.0
                break
            best = min(best, value)
        total += best
    return load, total, failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per query; the best is kept")
    args = parser.parse_args()
    root = Path(os.environ.get("KGEVAL_CK25", REPO.parent / "shared" / "datasets" / "ck25"))
    if not (root / "questions.yml").is_file():
        print(f"{root}: no questions.yml; set KGEVAL_CK25 to the ck25 directory", file=sys.stderr)
        return 2
    questions, graph_files = ck25_questions(root), ck25_graphs(root)
    files = [path for _, path in graph_files]
    graphs = tuple(graph for graph, _ in graph_files)
    print(f"CK25: {len(questions)} questions, {len(files)} graph files, row cap {ROW_CAP}, best of {args.repeat}", flush=True)

    rows: list[tuple[str, float, float, dict[str, str], list[str]]] = []
    t0 = time.perf_counter()
    embedded = EmbeddedStore(files)
    embedded.load()
    load = time.perf_counter() - t0
    rows.append(("embedded (pyoxigraph)", load, *time_store(embedded, questions, args.repeat)))

    from tests.stores.servers import launch_fuseki, launch_oxigraph, launch_virtuoso, stop

    launchers: list[tuple[str, Callable]] = [("oxigraph server", launch_oxigraph), ("virtuoso", launch_virtuoso), ("fuseki", launch_fuseki)]
    for label, launch in launchers:
        with tempfile.TemporaryDirectory(prefix="kgeval-bench-") as workdir:
            t0 = time.perf_counter()
            try:
                endpoint, process = launch(Path(workdir), graph_files)
            except BaseException as exc:  # pytest's skip/fail outcomes when a binary is missing
                print(f"{label}: not run ({exc})")
                continue
            load = time.perf_counter() - t0
            try:
                store = open_store(StoreConfig(kind="sparql", endpoint=endpoint, default_graphs=graphs, data_version="ck25"), [])
                rows.append((f"{label} {store.version}", load, *time_store(store, questions, args.repeat)))
            finally:
                stop(process)

    rdf_load, rdf_query, rdf_failures = time_rdflib(files, questions, args.repeat)
    base = rows[0][2]
    base_hashes = rows[0][3]
    print(f"\n{'store':<32}{'load+start s':>13}{'queries s':>11}{'vs embedded':>13}{'rdflib / store':>16}{'failed':>8}{'hash != emb':>13}")
    for label, load, seconds, hashes, failures in rows:
        differ = sum(1 for q, h in hashes.items() if base_hashes.get(q) not in (None, h))
        print(f"{label:<32}{load:>13.2f}{seconds:>11.3f}{seconds / base:>12.2f}x{rdf_query / seconds:>15.1f}x{len(failures):>8}{differ:>13}")
    print(f"{'rdflib ' + __import__('rdflib').__version__ + ' (reference)':<32}{rdf_load:>13.2f}{rdf_query:>11.3f}{rdf_query / base:>12.2f}x{1.0:>15.1f}x{len(rdf_failures):>8}{'-':>13}")
    for label, _, _, _, failures in rows:
        for failure in failures:
            print(f"  {label}: {failure}")
    for failure in rdf_failures:
        print(f"  rdflib: {failure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
