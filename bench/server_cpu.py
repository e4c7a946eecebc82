"""CPU a SPARQL server spends on a candidate after kgeval's deadline: Fuseki and Virtuoso.

    python bench/server_cpu.py [--timeout S] [--after S] [--server fuseki|virtuoso ...]

Each server is started on 127.0.0.1 as the tests start it (tests/stores/servers.py), loaded
with the sample holdout and the mini test KG, without any server-side limit that would stop
the bombs soon (Virtuoso: no MaxQueryExecutionTime; Fuseki: config.ttl's 120 s). Each bomb of
tests/stores/hostile_corpus.py's CPU_BOMBS goes through `store.execute_candidate` with the
candidate timeout; the server process's CPU-seconds (utime + stime from /proc/PID/stat) are
printed for the query and from its answer to `--after` seconds after its deadline (Virtuoso,
sent two seconds less than the budget, answers before the deadline). Last, the controls: the
cross-join bomb again without the per-request `timeout` kgeval sends (what an engine without
one, or a store that did not send it, leaves running), and on Virtuoso each bomb sent the whole
budget as its `timeout` (before Virtuoso was sent two seconds less). The bound tested by
tests/stores/test_server_cpu.py: under 1 CPU-second in the 10 s after the deadline.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kgeval.config import CandidateQueryConfig  # noqa: E402
from kgeval.errors import QueryError  # noqa: E402
from kgeval.holdout import load_holdout  # noqa: E402
from kgeval.stores import Store, open_store  # noqa: E402
from tests.conftest import write_holdout  # noqa: E402
from tests.stores.hostile_corpus import CPU_BOMBS  # noqa: E402
from tests.stores.servers import (  # noqa: E402
    RunningServer,
    cpu_seconds,
    cpu_seconds_over,
    start_fuseki,
    start_virtuoso,
    stop,
)
from tests.stores.test_server_cpu import KGS  # noqa: E402

LIMITS = CandidateQueryConfig(max_sorted_rows=100_000)
STARTERS = {"fuseki": start_fuseki, "virtuoso": start_virtuoso}


def measure(server: RunningServer, store: Store, bomb: str, timeout_s: float, after_s: float) -> str:
    assert store.name  # as a run records the engine before its first candidate: the product is known
    pid = server.process.pid
    started, wall = cpu_seconds(pid), time.monotonic()
    deadline = wall + timeout_s
    try:
        store.execute_candidate(CPU_BOMBS[bomb], timeout_s=timeout_s, row_cap=100)
        outcome = "answered"
    except QueryError as exc:
        outcome = type(exc).__name__
    during, elapsed = cpu_seconds(pid) - started, time.monotonic() - wall
    after = cpu_seconds_over(pid, max(after_s, deadline + after_s - time.monotonic()))
    verdict = "ok" if after < 1.0 else "OVER 1 CPU-s"
    return f"{bomb:<20}{outcome:<17}{elapsed:>7.1f}{during:>11.2f}{after:>14.2f}  {verdict}"


def bench(name: str, server: RunningServer, timeout_s: float, after_s: float) -> None:
    print(f"\n{name} (pid {server.process.pid}); candidate timeout {timeout_s:g} s, CPU-seconds read from /proc")
    print(f"{'bomb':<20}{'outcome':<17}{'wall s':>7}{'CPU during':>11}{f'CPU to +{after_s:g} s':>14}")
    for bomb in sorted(CPU_BOMBS):
        label, kg = KGS.get(bomb, ("sample", "hr"))
        store = open_store(server.config(label, candidates=LIMITS), [], kg=kg)
        print(measure(server, store, bomb, timeout_s, after_s), flush=True)
    control = open_store(server.config("sample", candidates=LIMITS), [], kg="hr")
    control.timeout_parameters = lambda _: {}  # type: ignore[method-assign]
    print(measure(server, control, "cross-join", timeout_s, after_s) + "   <- control: no per-request timeout sent", flush=True)
    if name != "virtuoso":
        return
    for bomb in sorted(CPU_BOMBS):
        label, kg = KGS.get(bomb, ("sample", "hr"))
        whole = open_store(server.config(label, candidates=LIMITS), [], kg=kg)
        whole.timeout_parameters = lambda t: {"timeout": str(round(t * 1000))}  # type: ignore[method-assign]
        print(measure(server, whole, bomb, timeout_s, after_s) + "   <- control: the whole budget sent", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=3.0, help="candidate timeout in seconds (default 3)")
    parser.add_argument("--after", type=float, default=10.0, help="seconds measured after the deadline (default 10)")
    parser.add_argument("--server", action="append", choices=sorted(STARTERS), help="the server to measure (repeatable; default: both)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kgeval-cpu-") as tmp:
        workdir = Path(tmp)
        holdouts = {"sample": load_holdout(REPO / "holdout"), "mini": load_holdout(write_holdout(workdir / "mini"))}
        for name in args.server or sorted(STARTERS):
            start = STARTERS[name]
            (workdir / name).mkdir()
            try:
                server = start(workdir / name, holdouts)
            except BaseException as exc:  # pytest's skip/fail outcomes when a server is not installed
                print(f"{name}: not run ({str(exc)[:200]})")
                continue
            try:
                bench(name, server, args.timeout, args.after)
            finally:
                stop(server.process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
