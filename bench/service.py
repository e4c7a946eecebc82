"""Load test of the contamination endpoint: concurrent clients on loopback against a real
`kgeval serve` (uvicorn) process; prints requests/s, latency percentiles and failures.

    python bench/service.py [--clients 16] [--requests 2000] [--texts 20] [--holdout holdout --gold gold]

Bounded: a fixed number of requests split across the clients; each request checks `--texts`
texts (half of them holdout questions, so the matcher finds hits). Exit 1 on any failed request.
"""

from __future__ import annotations

import argparse
import os
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


def run_load(base: str, token: str, texts: list[str], clients: int, requests: int) -> LoadResult:
    """`requests` POSTs of `texts` to /contamination/check from `clients` concurrent threads."""
    per_client = [requests // clients + (1 if i < requests % clients else 0) for i in range(clients)]
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)

    def client(n: int) -> None:
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

    threads = [threading.Thread(target=client, args=(n,)) for n in per_client]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    return LoadResult(requests=len(latencies), failures=len(errors), seconds=seconds, latencies_ms=latencies, errors=errors[:5])


def sample_texts(holdout: Path, count: int) -> list[str]:
    from kgeval.holdout import load_holdout

    questions = [q.question for q in load_holdout(holdout).questions()]
    clean = "Q: how many rows does this table have? A: it depends on the filter applied to it."
    return [f"Q: {questions[i % len(questions)]}\nA: ..." if i % 2 == 0 else clean for i in range(count)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(holdout: Path, gold: Path, workdir: Path, token: str) -> tuple[subprocess.Popen, str]:
    """Start `kgeval serve` on a free loopback port and wait until /health answers."""
    access = workdir / "access.yaml"
    access.write_text(f"tokens:\n  - name: bench\n    roles: [builder]\n    token: {token}\n", encoding="utf-8")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgeval", "serve", "--host", "127.0.0.1", "--port", str(port), "--db", str(workdir / "r.duckdb"),
         "--holdout", str(holdout), "--gold", str(gold), "--access", str(access)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "KGEVAL_ADMIN_TOKEN": ""},
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"kgeval serve exited: {proc.stderr.read().decode()}")
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return proc, base
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("kgeval serve did not answer /health within 60 s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holdout", type=Path, default=REPO / "holdout")
    parser.add_argument("--gold", type=Path, default=REPO / "gold")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--texts", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = serve(args.holdout, args.gold, Path(tmp), "bench-token")
        try:
            texts = sample_texts(args.holdout, args.texts)
            run_load(base, "bench-token", texts, min(4, args.clients), 50)  # warm-up
            result = run_load(base, "bench-token", texts, args.clients, args.requests)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print(f"contamination endpoint, {args.clients} concurrent clients on loopback, {args.texts} texts per request")
    print(result.summary())
    for e in result.errors:
        print(f"  failure: {e}")
    return 1 if result.failures else 0


if __name__ == "__main__":
    sys.exit(main())
