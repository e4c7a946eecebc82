"""Load test of the contamination endpoint: concurrent clients on loopback against a real
`kgeval serve` (uvicorn) process; prints requests/s, latency percentiles and failures, and
/health's latency while the load runs as a ratio to /health's latency at idle (same process,
same run: the machine is noisy).

    python bench/service.py [--clients 16] [--requests 2000] [--texts 20] [--holdout holdout --gold gold]
                            [--fairness-calls 3] [--fairness-timeout 10] [--only-fairness]

Bounded: a fixed number of requests split across the clients; each request checks `--texts`
texts (half of them holdout questions, so the matcher finds hits). Then the large-body case:
a body just under the limit (service.max_body_bytes, 2 MiB), one over it (10 MB: refused with
413 before it is read), and an unauthenticated 100 MB declaration (401 before any byte), each
timed with /health polled meanwhile. Exit 1 on any failed request or wrong refusal.

Fairness (issue 35): an honest caller's /judge latency alone and while a hostile caller sends
unbounded cross joins to /judge on the same KG from two threads, as a ratio, once with
`service.heavy_per_caller: 1` (the default: the hostile caller holds one worker, its other call
gets 429) and once with 2 (no bound with two heavy workers: the hostile calls hold both, and the
honest call waits for a candidate timeout).
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


@dataclass
class LoadResult:
    requests: int
    failures: int
    seconds: float
    latencies_ms: list[float] = field(repr=False)
    errors: list[str] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        lat = sorted(self.latencies_ms) or [0.0]
        p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
        return (
            f"{self.requests} requests in {self.seconds:.2f} s: {self.per_second:.0f} requests/s; "
            f"latency p50 {statistics.median(lat):.1f} ms, p95 {p(0.95):.1f} ms, max {lat[-1]:.1f} ms; "
            f"failed requests: {self.failures}"
        )


def run_load(base: str, tokens: str | list[str], texts: list[str], clients: int, requests: int) -> LoadResult:
    """`requests` POSTs of `texts` to /contamination/check from `clients` concurrent threads,
    client i calling with `tokens[i % len(tokens)]` (one caller may have only
    `service.heavy_per_caller` heavy requests in flight: concurrent callers need tokens of their own)."""
    tokens = [tokens] if isinstance(tokens, str) else tokens
    per_client = [requests // clients + (1 if i < requests % clients else 0) for i in range(clients)]
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)

    def client(n: int, token: str) -> None:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            start.wait()
            for _ in range(n):
                t0 = time.perf_counter()
                try:
                    r = http.post("/contamination/check", json={"texts": texts})
                    ok = r.status_code == 200 and r.json()["texts"] == len(texts)
                    problem = None if ok else f"HTTP {r.status_code}: {r.text[:200]}"
                except httpx.HTTPError as exc:
                    problem = f"{type(exc).__name__}: {exc}"
                with lock:
                    latencies.append((time.perf_counter() - t0) * 1000)
                    if problem:
                        errors.append(problem)

    threads = [threading.Thread(target=client, args=(n, tokens[i % len(tokens)])) for i, n in enumerate(per_client)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    return LoadResult(requests=len(latencies), failures=len(errors), seconds=seconds, latencies_ms=latencies, errors=errors[:5])


class HealthProbe:
    """Polls /health every 20 ms on its own connection while work runs; collects latencies."""

    def __init__(self, base: str) -> None:
        self.base, self.latencies_ms, self.failures = base, [], 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll)

    def _poll(self) -> None:
        with httpx.Client(base_url=self.base, timeout=10) as http:  # a starved /health counts as failed
            while not self._stop.is_set():
                t0 = time.perf_counter()
                try:
                    ok = http.get("/health").status_code == 200
                except httpx.HTTPError:
                    ok = False
                self.latencies_ms.append((time.perf_counter() - t0) * 1000)
                self.failures += not ok
                time.sleep(0.02)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def percentile(self, q: float) -> float:
        lat = sorted(self.latencies_ms) or [0.0]
        return lat[min(len(lat) - 1, int(q * len(lat)))]


def large_bodies(base: str, token: str) -> list[str]:
    """The large-body case: (label, status, expected, seconds) lines, and problems."""
    import socket
    from urllib.parse import urlsplit

    lines, problems = [], []
    rng = random.Random(0)
    vocabulary = ["employees", "department", "sales", "revenue", "which", "how", "many", "customers", "order", "the", "of", "in"]
    near_limit = {"texts": [" ".join(rng.choice(vocabulary) for _ in range(300_000))[: 2 * 1024 * 1024 - 64]]}
    over_limit = b'{"texts": ["' + b"x" * (10 * 1024 * 1024) + b'"]}'
    cases = [("2 MiB text, just under the limit", near_limit, None, 200), ("10 MB body, over the limit", None, over_limit, 413)]
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=90) as http:
        for label, as_json, raw, expected in cases:
            t0 = time.perf_counter()
            try:
                status = http.post("/contamination/check", json=as_json, content=raw, headers={"Content-Type": "application/json"}).status_code
            except httpx.HTTPError as exc:  # the server may close before the client has sent it all
                status = getattr(getattr(exc, "response", None), "status_code", type(exc).__name__)
            lines.append(f"{label}: HTTP {status} in {time.perf_counter() - t0:.2f} s")
            print(f"  {lines[-1]}", flush=True)
            if status != expected and not (expected == 413 and status in ("WriteError", "RemoteProtocolError")):
                problems.append(f"{label}: HTTP {status}, expected {expected}")
    url = urlsplit(base)
    t0 = time.perf_counter()
    with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
        sock.sendall(f"POST /contamination/check HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Length: {100 * 1024 * 1024}\r\n\r\n".encode())
        status = int(sock.recv(4096).split(b" ", 2)[1])
    lines.append(f"unauthenticated 100 MB declared, nothing sent: HTTP {status} in {time.perf_counter() - t0:.3f} s")
    if status != 401:
        problems.append(f"unauthenticated 100 MB: HTTP {status}, expected 401")
    return lines + [f"PROBLEM: {p}" for p in problems]


def sample_texts(holdout: Path, count: int) -> list[str]:
    from kgeval.holdout import load_holdout

    questions = [q.question for q in load_holdout(holdout).questions()]
    clean = "Q: how many rows does this table have? A: it depends on the filter applied to it."
    return [f"Q: {questions[i % len(questions)]}\nA: ..." if i % 2 == 0 else clean for i in range(count)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


BUILDERS = [f"bench-token-{n}" for n in range(64)]
"""The load's callers: one builder token per client."""


def serve(holdout: Path, gold: Path, workdir: Path, config: str = "") -> tuple[subprocess.Popen, str]:
    """Start `kgeval serve` on a free loopback port (with the configuration YAML `config`) and
    wait until /health answers. Tokens: BUILDERS, "hostile-token" and "honest-token" (auditors,
    for the fairness case)."""
    access = workdir / "access.yaml"
    access.write_text(
        "tokens:\n" + "".join(f"  - name: {token}\n    roles: [builder]\n    token: {token}\n" for token in BUILDERS)
        + "".join(f"  - name: {who}\n    roles: [auditor]\n    token: {who}-token\n" for who in ("hostile", "honest")),
        encoding="utf-8",
    )
    (workdir / "kgeval.yaml").write_text(config or "{}\n", encoding="utf-8")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgeval", "serve", "--host", "127.0.0.1", "--port", str(port), "--db", str(workdir / "r.duckdb"),
         "--holdout", str(holdout), "--gold", str(gold), "--access", str(access), "--log-level", "warning", "--config", str(workdir / "kgeval.yaml")],
        # a log file, not a pipe: a pipe nobody reads fills up and stalls the server
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=open(workdir / "serve.log", "w"), env={**os.environ, "KGEVAL_ADMIN_TOKEN": ""},
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"kgeval serve exited: {(workdir / 'serve.log').read_text()}")
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return proc, base
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("kgeval serve did not answer /health within 60 s")


CROSS_JOIN = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?n2 ?o . ?p ?q ?r }"
"""A hostile candidate: runs until its candidate timeout on any KG."""


def honest_latency_ms(base: str, question_id: str, sparql: str, calls: int) -> list[float]:
    """Latencies of `calls` honest /judge calls, one after another."""
    latencies = []
    with httpx.Client(headers={"Authorization": "Bearer honest-token"}, timeout=300) as http:
        for _ in range(calls):
            t0 = time.perf_counter()
            http.post(f"{base}/judge", json={"question_id": question_id, "sparql": sparql}).raise_for_status()
            latencies.append((time.perf_counter() - t0) * 1000)
    return latencies


def hostile_caller(base: str, question_id: str, stop: threading.Event, statuses: list[int]) -> None:
    """Sends the cross join to /judge again and again, never waiting (a hostile caller ignores Retry-After)."""
    with httpx.Client(headers={"Authorization": "Bearer hostile-token"}, timeout=300) as http:
        while not stop.is_set():
            try:
                statuses.append(http.post(f"{base}/judge", json={"question_id": question_id, "sparql": CROSS_JOIN}).status_code)
            except httpx.TransportError:
                return
            if statuses[-1] == 429:
                time.sleep(0.05)


def fairness(holdout: Path, gold: Path, per_caller: int, calls: int, timeout_s: float) -> tuple[float, float, list[int]]:
    """Median honest /judge latency (ms) alone and beside two hostile threads of one other
    caller (`service.heavy_per_caller` = `per_caller`, candidate queries cut at `timeout_s`)."""
    from kgeval.holdout import load_holdout

    question = load_holdout(holdout).questions()[0]
    config = f"run:\n  candidate_timeout_s: {timeout_s}\nservice:\n  heavy_per_caller: {per_caller}\n"
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = serve(holdout, gold, Path(tmp), config)
        stop, statuses = threading.Event(), []
        try:
            honest_latency_ms(base, question.id, question.sparql, 2)  # warm-up: the KG's workers start
            alone = statistics.median(honest_latency_ms(base, question.id, question.sparql, calls))
            hostile = [threading.Thread(target=hostile_caller, args=(base, question.id, stop, statuses), daemon=True) for _ in range(2)]
            for thread in hostile:
                thread.start()
            time.sleep(1)  # the hostile calls take their workers
            beside = statistics.median(honest_latency_ms(base, question.id, question.sparql, calls))
        finally:
            stop.set()
            proc.kill()  # uvicorn would wait for the hostile calls in flight
            proc.wait(timeout=10)
    return alone, beside, statuses


def fairness_lines(holdout: Path, gold: Path, calls: int, timeout_s: float) -> list[str]:
    lines = [f"fairness: honest /judge beside a hostile caller sending cross joins from 2 threads (candidate timeout {timeout_s:g} s, {calls} honest calls)"]
    for per_caller, what in ((1, "bounded (heavy_per_caller 1, the default)"), (2, "unbounded (heavy_per_caller 2 = heavy_workers)")):
        alone, beside, statuses = fairness(holdout, gold, per_caller, calls, timeout_s)
        refused = sum(1 for s in statuses if s == 429)
        lines.append(f"  {what}: median {alone:.0f} ms alone, {beside:.0f} ms beside it: {beside / alone:.1f}x; hostile calls refused with 429: {refused}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holdout", type=Path, default=REPO / "holdout")
    parser.add_argument("--gold", type=Path, default=REPO / "gold")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--texts", type=int, default=20)
    parser.add_argument("--fairness-calls", type=int, default=3)
    parser.add_argument("--fairness-timeout", type=float, default=10.0, help="run.candidate_timeout_s of the fairness case")
    parser.add_argument("--only-fairness", action="store_true")
    args = parser.parse_args()
    if args.only_fairness:
        print("\n".join(fairness_lines(args.holdout, args.gold, args.fairness_calls, args.fairness_timeout)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = serve(args.holdout, args.gold, Path(tmp))
        try:
            texts = sample_texts(args.holdout, args.texts)
            run_load(base, BUILDERS, texts, min(4, args.clients), 50)  # warm-up
            with HealthProbe(base) as idle:
                time.sleep(2)
            with HealthProbe(base) as busy:
                result = run_load(base, BUILDERS, texts, args.clients, args.requests)
            with HealthProbe(base) as during_large:
                large = large_bodies(base, BUILDERS[0])
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print(f"contamination endpoint, {args.clients} concurrent clients on loopback, {args.texts} texts per request")
    print(result.summary())
    for e in result.errors:
        print(f"  failure: {e}")
    print(_health_line("under load", idle, busy))
    print("large bodies:")
    for line in large:
        print(f"  {line}")
    print(_health_line("during the large bodies", idle, during_large))
    print("\n".join(fairness_lines(args.holdout, args.gold, args.fairness_calls, args.fairness_timeout)))
    failed = result.failures or busy.failures or during_large.failures or any(line.startswith("PROBLEM") for line in large)
    return 1 if failed else 0


def _health_line(when: str, idle: HealthProbe, probe: HealthProbe) -> str:
    base = idle.percentile(0.99) or 1e-9
    return (
        f"/health {when}: p50 {probe.percentile(0.5):.1f} ms, p99 {probe.percentile(0.99):.1f} ms "
        f"({probe.percentile(0.99) / base:.1f}x its idle p99 of {idle.percentile(0.99):.1f} ms); "
        f"{len(probe.latencies_ms)} probes, failed: {probe.failures}"
    )

if __name__ == "__main__":
    sys.exit(main())
