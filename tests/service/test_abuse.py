"""The service under abuse, on a real `kgeval serve` (uvicorn) process over raw sockets: the
token is checked before a body is read, bodies over the limit are refused (declared or
chunked), heavy requests are bounded in time, and /health answers throughout."""

from __future__ import annotations

import json
import random
import select
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.conftest import UNENDING
from tests.oversight import TOKENS
from tests.service.conftest import auth, running_server

LIMIT = 256 * 1024
"""The body limit the abuse server runs with (service.max_body_bytes)."""


def _status_of(sock: socket.socket) -> int:
    """The status code of the response on `sock` (reads the status line)."""
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1])


def raw_post(base: str, path: str, headers: dict[str, str], chunks: list[bytes] = (), timeout: float = 60) -> tuple[int, int]:
    """POST with the given headers, then send `chunks` until the server answers; (status, body
    bytes sent before the answer). A server that waited for the whole body would time out
    (after `timeout`: a stall, not a margin, since the body it waits for never comes)."""
    url = urlsplit(base)
    with socket.create_connection((url.hostname, url.port), timeout=timeout) as sock:
        head = f"POST {path} HTTP/1.1\r\nHost: {url.netloc}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        sock.sendall(head.encode())
        sent = 0
        for chunk in chunks:
            if select.select([sock], [], [], 0)[0]:
                break  # the server answered already
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                break
            sent += len(chunk)
        return _status_of(sock), sent


def _chunked(total: int, size: int = 64 * 1024) -> list[bytes]:
    piece = b"x" * size
    return [f"{size:x}\r\n".encode() + piece + b"\r\n" for _ in range(total // size)]


def _abuse_server(served, tmp_path, request_timeout_s: float):  # noqa: ANN001, ANN202
    config = tmp_path / "kgeval.yaml"
    # one caller may fill the heavy pool here: these tests saturate it from one token
    config.write_text(f"service:\n  max_body_bytes: {LIMIT}\n  request_timeout_s: {request_timeout_s}\n  heavy_workers: 2\n  heavy_per_caller: 4\n", encoding="utf-8")
    return running_server(served, tmp_path, "--config", str(config))


@pytest.fixture
def abuse_server(served, tmp_path):
    """Requests that must be answered get 60 s: no loaded machine takes that long."""
    with _abuse_server(served, tmp_path, 60) as base:
        yield base, tmp_path / "serve.log"


@pytest.fixture
def heavy_server(served, tmp_path):
    """Heavy requests time out at 2 s here (whichever do: any of 200, 429 and 503 may come)."""
    with _abuse_server(served, tmp_path, 2) as base:
        yield base, tmp_path / "serve.log"


def test_unauthenticated_body_is_refused_before_it_is_read(abuse_server):
    base, _ = abuse_server
    hundred_mb = str(100 * 1024 * 1024)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Cookie": "kgeval_session=forged"}):
        status, _ = raw_post(base, "/contamination/check", {"Content-Type": "application/json", "Content-Length": hundred_mb, **headers})
        assert status == 401, headers
    # under the size limit, too: the body is never sent, so a server that read it first would time out
    status, _ = raw_post(base, "/contamination/check", {"Content-Type": "application/json", "Content-Length": str(LIMIT - 1)})
    assert status == 401
    # a session cookie alone may not change anything: 403 before the body, too
    status, _ = raw_post(base, "/runs/x/audit/records", {"Content-Length": hundred_mb, "Cookie": "kgeval_session=forged"})
    assert status in (401, 403)
    assert httpx.get(f"{base}/health").status_code == 200


def test_bodies_over_the_limit_are_refused_declared_or_chunked(abuse_server):
    base, _ = abuse_server
    bob = {"Authorization": f"Bearer {TOKENS['bob']['token']}", "Content-Type": "application/json"}
    status, sent = raw_post(base, "/contamination/check", {**bob, "Content-Length": str(100 * 1024 * 1024)})
    assert (status, sent) == (413, 0)
    status, sent = raw_post(base, "/contamination/check", {**bob, "Transfer-Encoding": "chunked"}, _chunked(20 * 1024 * 1024))
    assert status == 413 and sent < 20 * 1024 * 1024  # refused while streaming, not after 20 MB
    status, _ = raw_post(base, "/session", {"Content-Type": "application/x-www-form-urlencoded", "Content-Length": str(64 * 1024)})
    assert status == 413  # the sign-in form is small: 4 KiB
    under = httpx.post(f"{base}/contamination/check", json={"texts": ["a" * (LIMIT // 2)]}, headers=auth("bob"), timeout=60)
    assert under.status_code == 200


def _words(n: int, rng: random.Random) -> str:
    vocab = ["employees", "department", "sales", "revenue", "which", "how", "many", "customers", "order", "the", "of", "alice"]
    return " ".join(rng.choice(vocab) for _ in range(n))


def test_heavy_requests_time_out_and_health_keeps_answering(heavy_server):
    """Under a storm of heavy requests the service answers each (in time, or 503 or 429) and
    /health all along (the bound of 60 s is a stall's; that /health never waits for heavy work
    is proven without timing by test_health_answers_while_heavy_work_is_held)."""
    base, log = heavy_server
    rng = random.Random(7)
    many = {"texts": [_words(25, rng) for _ in range(1000)] * 1}  # ~170 KB, many units of work
    statuses: list[int] = []
    health_ms: list[float] = []
    stop = threading.Event()

    def heavy() -> None:
        with httpx.Client(headers=auth("bob"), timeout=60) as http:
            for _ in range(3):
                statuses.append(http.post(f"{base}/contamination/check", json=many).status_code)

    def ping() -> None:
        with httpx.Client(timeout=60) as http:
            while not stop.is_set():
                t0 = time.perf_counter()
                assert http.get(f"{base}/health").json() == {"status": "ok"}
                health_ms.append((time.perf_counter() - t0) * 1000)
                time.sleep(0.05)

    pinger = threading.Thread(target=ping)
    pinger.start()
    workers = [threading.Thread(target=heavy) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    pinger.join()
    # 429: a timed-out request's work runs on to its next deadline check and keeps its caller's turn
    assert len(statuses) == 12 and set(statuses) <= {200, 429, 503}, statuses
    assert len(health_ms) >= 5  # /health answered all along
    print(f"\n[abuse] heavy statuses {sorted(statuses)}; /health p50 {sorted(health_ms)[len(health_ms) // 2]:.0f} ms, max {max(health_ms):.0f} ms")
    records = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    checks = [r for r in records if r.get("path") == "/contamination/check"]
    assert checks and {r["principal"] for r in checks} == {"bob"} and all(r["ms"] >= 0 for r in checks)
    assert TOKENS["bob"]["token"] not in log.read_text()  # the log names the caller, never the token


def _service_app(served, config):  # noqa: ANN001, ANN202
    from kgeval.service import ServiceSettings, create_app, load_access

    return create_app(ServiceSettings(db=served.db, holdout=served.holdout, gold=served.gold, config=config, access=load_access(served.access, env={})))


def _until(condition, what: str) -> None:  # noqa: ANN001
    """Wait for `condition()`; 60 s is a stall (what the test proves does not turn on the time)."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_request_past_its_time_limit_gets_503_and_its_work_stops(served):
    from fastapi.testclient import TestClient

    from kgeval.config import KgevalConfig, ServiceConfig

    config = KgevalConfig(service=ServiceConfig(request_timeout_s=0.05))
    rng = random.Random(3)
    texts = [_words(30, rng) for _ in range(1000)]
    answered = threading.Event()  # the 503 is out: the work held on its first text may go on

    def match_text(_self, text):  # noqa: ANN001, ANN202 - counts, and holds the first text until the 503 is out
        matched.append(text)
        if len(matched) == 1:
            answered.wait(60)
        return matcher.match_text(text)

    with TestClient(_service_app(served, config)) as client:
        matched = []
        state = client.app.state.kgeval
        matcher = state.matcher
        state.matcher = type("Counting", (), {"match_text": match_text})()
        slow = client.post("/contamination/check", json={"texts": texts}, headers=auth("bob"))
        answered.set()
        assert slow.status_code == 503 and "service.request_timeout_s" in slow.json()["detail"]
        _until(lambda: not state._in_flight, "the timed-out work never ended")  # noqa: SLF001 - its turn is given back when it ends
        assert 0 < len(matched) < len(texts)  # the work stopped at a deadline check
        assert client.get("/health").status_code == 200
        state.settings.config = KgevalConfig(service=ServiceConfig(request_timeout_s=60))  # a request that must be answered
        assert client.post("/contamination/check", json={"texts": texts[:1]}, headers=auth("bob")).status_code == 200


def test_health_answers_while_heavy_work_is_held(served):
    """A heavy request's work runs off the event loop: /health is answered while that work is
    held (on its first text, until the test releases it). No time is measured: were the work
    on the event loop, /health could not answer before the release."""
    from fastapi.testclient import TestClient

    from kgeval.config import KgevalConfig

    held, release, health = threading.Event(), threading.Event(), threading.Event()

    def match_text(_self, text):  # noqa: ANN001, ANN202
        held.set()
        release.wait(120)
        return matcher.match_text(text)

    with TestClient(_service_app(served, KgevalConfig())) as client:
        state = client.app.state.kgeval
        matcher = state.matcher
        state.matcher = type("Held", (), {"match_text": match_text})()
        statuses: list[int] = []
        heavy = threading.Thread(target=lambda: statuses.append(client.post("/contamination/check", json={"texts": ["which employees work in sales"]}, headers=auth("bob")).status_code), daemon=True)
        heavy.start()
        try:
            assert held.wait(60), "the heavy request's work never started"
            threading.Thread(target=lambda: client.get("/health").status_code == 200 and health.set(), daemon=True).start()
            answered_while_held = health.wait(60)
        finally:
            release.set()
        heavy.join(60)
        assert answered_while_held, "/health waited for a heavy request's work"
        assert statuses == [200]


def test_judging_a_query_that_runs_past_the_candidate_timeout_gives_its_verdict_not_a_503(served):
    """A candidate query past `run.candidate_timeout_s` is the model's failure: /judge answers
    its verdict (candidate_timeout, wrong). With both limits equal (30 s by default) the request
    limit ran out first and the caller got 503 'send less per request' (third acceptance test)."""
    from fastapi.testclient import TestClient

    from kgeval.config import KgevalConfig, RunConfig, ServiceConfig

    config = KgevalConfig(service=ServiceConfig(request_timeout_s=1), run=RunConfig(candidate_timeout_s=1))
    with TestClient(_service_app(served, config)) as client:
        judged = client.post("/judge", json={"question_id": "mini-02", "sparql": UNENDING}, headers=auth("ann"))
        assert judged.status_code == 200, judged.text
        verdicts = judged.json()["verdicts"]
        assert verdicts and all(not v["correct"] and v["path"] == "candidate_timeout" for v in verdicts), verdicts


def test_credentials_in_query_strings_and_headers_never_reach_the_log(served, tmp_path):
    """A token sent in the query string is refused, and neither it nor an Authorization
    header's token is written to any log line (uvicorn's access log, kgeval's JSON records)."""
    secrets = {"token": "SECRET-q1", "access_token": "SECRET-q2", "api_key": "SECRET-q3", "X-Amz-Signature": "SECRET-q4"}
    with running_server(served, tmp_path) as base:
        for name, value in secrets.items():
            assert httpx.get(f"{base}/runs?{name}={value}&page=2", timeout=60).status_code == 401
        assert httpx.get(f"{base}/runs?token=SECRET-q5", headers=auth("admin"), timeout=60).status_code == 200
        assert httpx.get(f"{base}/runs", headers={"Authorization": "Bearer SECRET-h1"}, timeout=60).status_code == 401
    logged = (tmp_path / "serve.log").read_text(encoding="utf-8")
    assert "/runs?token=REDACTED&page=REDACTED" in logged  # the access log still names the request
    assert "SECRET" not in logged and TOKENS["admin"]["token"] not in logged


def test_a_token_in_any_parameter_of_any_shape_never_reaches_the_log(served, tmp_path):
    """Tokens that passed the redaction by name on main: `?bearer=`, `?jwt=`, `?t=`, a
    percent-encoded `token`, a `Bearer ...` value under any name, and a path parameter
    (`/runs;token=T`, whose token stayed in the JSON record's `path`). None is written to any
    log line; the API's own parameters keep their plain values (`format=md`)."""
    sent = [
        "/runs?bearer=SECRET-1", "/runs?jwt=SECRET-2", "/runs?t=SECRET-3", "/runs?%74oken=SECRET-4", "/runs?%2574oken=SECRET-5",
        "/runs?q=Bearer%20SECRET-6", "/runs?q=Bearer+SECRET-7", "/runs?format=Bearer%20SECRET-8", "/runs;token=SECRET-9",
        "/runs/x;jwt=SECRET-10/report", "/runs%3Btoken%3DSECRET-11",
    ]
    with running_server(served, tmp_path) as base, httpx.Client(timeout=60) as http:
        for path in sent:
            assert http.get(base + path).status_code in (401, 404), path
            assert http.get(base + path, headers=auth("admin")).status_code < 500, path
        assert http.get(f"{base}/runs/{served.run_id}/report?format=md", headers=auth("admin")).status_code == 200
    logged = (tmp_path / "serve.log").read_text(encoding="utf-8")
    assert "SECRET" not in logged, [line for line in logged.splitlines() if "SECRET" in line]
    records = [json.loads(line) for line in logged.splitlines() if line.startswith("{")]
    paths = {r["path"] for r in records if "path" in r}
    assert "/runs;token=REDACTED" in paths and f"/runs/{served.run_id}/report" in paths, paths
    assert f"/runs/{served.run_id}/report?format=md" in logged  # the access log keeps the API's own parameters


def _descendants(pid: int) -> list[int]:
    """Every process under `pid` (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
    found, pending = [], [pid]
    while pending:
        kids = children.get(pending.pop(), [])
        found += kids
        pending += kids
    return found


def _server_pid(base: str) -> int:
    """The `kgeval serve` process listening at `base` (by its command line)."""
    wanted = f"--port\0{urlsplit(base).port}\0".encode()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"serve" in (cmdline := (entry / "cmdline").read_bytes()) and wanted in cmdline:
                return int(entry.name)
        except OSError:
            continue
    raise AssertionError(f"no kgeval serve process at {base}")


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])  # utime + stime


def test_one_caller_cannot_starve_another_of_heavy_workers(served, tmp_path):
    """One caller at its quota of heavy calls (`service.heavy_per_caller`) gets 429 with
    Retry-After for one more, and another caller's /judge is answered while the first caller's
    unbounded query still runs (on main, its two hostile calls held both workers)."""
    config = tmp_path / "kgeval.yaml"
    config.write_text("run:\n  candidate_timeout_s: 600\nservice:\n  heavy_workers: 2\n  heavy_per_caller: 1\n", encoding="utf-8")
    cross = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?n2 ?o . ?p ?q ?r }"
    honest = {"question_id": "mini-02", "sparql": "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1"}
    events: list[str] = []
    with running_server(served, tmp_path, "--config", str(config)) as base:
        server_pid = _server_pid(base)

        def hostile() -> None:
            try:
                httpx.post(f"{base}/judge", json={"question_id": "mini-02", "sparql": cross}, headers=auth("admin"), timeout=900)
                events.append("hostile answered")
            except httpx.TransportError:
                events.append("hostile cut")  # the server stopped under it

        first = threading.Thread(target=hostile, daemon=True)
        first.start()
        while not any(_cpu_ticks(pid) > 100 for pid in _descendants(server_pid)):  # its query burns a worker's CPU
            assert first.is_alive(), events
            time.sleep(0.1)
        second = httpx.post(f"{base}/judge", json={"question_id": "mini-02", "sparql": cross}, headers=auth("admin"), timeout=60)
        assert second.status_code == 429, second.text
        assert second.headers["Retry-After"] and "service.heavy_per_caller" in second.json()["detail"]
        answered = httpx.post(f"{base}/judge", json=honest, headers=auth("ann"), timeout=60)
        events.append("honest answered")
        assert answered.status_code == 200, answered.text
        assert first.is_alive() and events == ["honest answered"]  # the hostile query still runs
    first.join(timeout=60)


def test_a_token_given_to_two_entries_is_refused_at_start(served, tmp_path):
    """A builder entry followed by an admin entry with the same token gave that token admin
    (the last entry won, silently): `kgeval serve` now refuses to start, naming the file and
    both entries, and never prints the token. The environment's admin token is one more entry."""
    import os
    import subprocess
    import sys

    import yaml

    from tests.conftest import REPO
    from tests.service.conftest import free_port

    access = tmp_path / "dup.yaml"
    shared = {"name": "bob", "roles": ["builder"], "token": "shared-token-1"}
    entries = [{"name": "ann", "roles": ["auditor"], "token": "auditor-token"}, shared, {**shared, "name": "mallory", "roles": ["admin"]}]
    access.write_text(yaml.safe_dump({"tokens": entries}), encoding="utf-8")
    for path, admin_token in ((access, ""), (served.access, TOKENS["ann"]["token"])):
        args = ["serve", "--port", str(free_port()), "--db", str(served.db), "--holdout", str(served.holdout), "--gold", str(served.gold), "--access", str(path)]
        try:
            done = subprocess.run([sys.executable, "-m", "kgeval", *args], cwd=REPO, capture_output=True, text=True, timeout=120, env={**os.environ, "KGEVAL_ADMIN_TOKEN": admin_token})
        except subprocess.TimeoutExpired:
            pytest.fail(f"serve started with one token given to two entries ({path.name})")
        said = " ".join(done.stderr.split())
        assert done.returncode == 2 and "Traceback" not in said, done.stderr
        assert f"{path}: one token is given to more than one entry" in said and "give each entry its own token" in said, said
        assert "shared-token-1" not in said and TOKENS["ann"]["token"] not in said
        assert "entry 2 ('bob', roles builder) and entry 3 ('mallory', roles admin)" in said or path != access, said
        assert "entry 2 ('ann', roles auditor) and KGEVAL_ADMIN_TOKEN (admin)" in said or path == access, said


class _HeldStore:
    """A real store whose candidate queries, but for `passes`, wait until `release` is set
    (each entry put on `entered`): a stored CPU bomb, held as long as the test needs."""

    def __init__(self, store, passes: str, release: threading.Event, entered) -> None:  # noqa: ANN001
        self._store, self._passes, self._release, self._entered = store, passes, release, entered

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._store, name)

    def execute_candidate(self, query: str, **kwargs):  # noqa: ANN003, ANN201
        if query != self._passes:
            self._entered.put("a held query started")
            self._release.wait(120)
        return self._store.execute_candidate(query, **kwargs)


def test_the_sample_view_counts_against_the_callers_heavy_share(served):
    """The sample view runs a stored candidate again: on main it ran outside the heavy-request
    share, so a reviewer opening stored CPU-bomb samples held the KG's sandbox workers while an
    honest auditor's /judge waited. Now a reviewer with one sample view in flight gets 429 for
    a second one (and for a report), and another caller's /judge is answered meanwhile."""
    import queue

    from fastapi.testclient import TestClient

    from kgeval.config import KgevalConfig, ServiceConfig

    honest = {"question_id": "mini-02", "sparql": "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1"}
    release, entered, answers = threading.Event(), queue.Queue(), queue.Queue()
    config = KgevalConfig(service=ServiceConfig(heavy_workers=2, heavy_per_caller=1))
    with TestClient(_service_app(served, config)) as client:
        state = client.app.state.kgeval
        opened = state.store
        state.store = lambda kg: _HeldStore(opened(kg), honest["sparql"], release, entered)

        def open_sample(question_id: str) -> None:
            answers.put(client.get(f"/runs/{served.run_id}/samples/{question_id}", headers=auth("hana")).status_code)

        try:
            threading.Thread(target=open_sample, args=("mini-02",), daemon=True).start()
            assert entered.get(timeout=60) == "a held query started"
            threading.Thread(target=open_sample, args=("mini-03",), daemon=True).start()
            second = _first_of(answers, entered)
            report = client.get(f"/runs/{served.run_id}/report", headers=auth("hana"))
            judged = client.post("/judge", json=honest, headers=auth("ann"))
        finally:
            release.set()
        assert second == 429, "a second sample view of the same caller ran its stored query (outside the heavy share)"
        assert report.status_code == 429 and "service.heavy_per_caller" in report.json()["detail"]
        assert judged.status_code == 200, judged.text
        assert answers.get(timeout=60) == 200  # the held view is answered once released
        assert client.get(f"/runs/{served.run_id}/samples/mini-03", headers=auth("hana")).status_code == 200


def _first_of(answers, entered):  # noqa: ANN001, ANN202
    """The next status on `answers`, or the entry a held query put on `entered` first (60 s:
    a stall, one of them comes at once)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for source in (answers, entered):
            try:
                return source.get(timeout=0.05)
            except Exception:  # noqa: BLE001 - queue.Empty: look at the other one
                continue
    raise AssertionError("neither an answer nor a held query in 60 s")


SLOW_CLIENTS = 300
"""Slow unauthenticated connections of the attack, against a server with 256 open files."""


def test_slow_connections_are_closed_and_health_answers_meanwhile(served, tmp_path):
    """300 unauthenticated connections that send nothing, or half a request's headers, and then
    wait: on main uvicorn held each for ever, and under a 256 file-descriptor limit /health (and
    every route) timed out. Now the server closes each at its idle or header timeout (here 1 s,
    to keep the test short: what it proves does not turn on the time), /health answers while
    the clients still hold their sockets, and each slow one sees its connection closed (after a
    408 for a started request). 60 s is a stall's bound, not a margin."""
    config = tmp_path / "kgeval.yaml"
    config.write_text("service:\n  idle_timeout_s: 1\n  header_timeout_s: 1\n", encoding="utf-8")
    with running_server(served, tmp_path, "--config", str(config), fd_limit=256) as base:
        url = urlsplit(base)
        slow = []
        try:
            for i in range(SLOW_CLIENTS):
                sock = socket.create_connection((url.hostname, url.port), timeout=60)
                slow.append(sock)
                if i % 2:  # half a request: its headers never end
                    sock.sendall(f"GET /runs HTTP/1.1\r\nHost: {url.netloc}\r\nX-Slow: ".encode())
            assert _health_answers(base), "/health did not answer in 60 s while slow connections were held"
            said = [_until_closed(sock) for sock in slow]
        finally:
            for sock in slow:
                sock.close()
        assert len(said) == SLOW_CLIENTS and all(closed for closed, _ in said), "a slow connection was not closed by the server"
        started = [answer for i, (_, answer) in enumerate(said) if i % 2]
        assert all(a.startswith(b"HTTP/1.1 408") and b"service.header_timeout_s" in a for a in started), started[:3]
        assert httpx.get(f"{base}/health", timeout=60).status_code == 200
    logged = (tmp_path / "serve.log").read_text(encoding="utf-8")
    assert "closed (the request's headers took longer than 1 s (service.header_timeout_s)" in logged
    assert "warning: open-file limit 256 is below service.max_connections (200)" in " ".join(logged.split())


def _health_answers(base: str) -> bool:
    """Whether /health answers 200 within 60 s (a stall's bound): while the connections are
    over `service.max_connections` it answers 503 at once, and is asked again."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/health", timeout=max(deadline - time.monotonic(), 0.1)).status_code == 200:
                return True
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    return False


def _until_closed(sock: socket.socket) -> tuple[bool, bytes]:
    """(whether the server closed the connection, what it sent first), reading until it does;
    a read that waits 60 s is a stall: the server kept it open."""
    received = b""
    try:
        for _ in range(1000):  # bounded: a 408 is a few hundred bytes
            chunk = sock.recv(4096)
            if not chunk:
                return True, received
            received += chunk
    except ConnectionResetError:
        return True, received
    except TimeoutError:
        return False, received
    return False, received


def test_a_body_sent_too_slowly_gets_408_and_the_connection_is_closed(served, tmp_path):
    """An authenticated request whose body stops half-way held its connection (and a route
    waiting for the body) for ever on main; now it gets 408 naming `service.body_timeout_s`
    and the connection is closed, while a whole request on another connection is answered."""
    config = tmp_path / "kgeval.yaml"
    config.write_text("service:\n  body_timeout_s: 1\n", encoding="utf-8")
    with running_server(served, tmp_path, "--config", str(config)) as base:
        url = urlsplit(base)
        with socket.create_connection((url.hostname, url.port), timeout=60) as sock:
            head = f"POST /contamination/check HTTP/1.1\r\nHost: {url.netloc}\r\nAuthorization: Bearer {TOKENS['bob']['token']}\r\n"
            sock.sendall((head + "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n" + '{"texts": ["which').encode())
            whole = httpx.post(f"{base}/contamination/check", json={"texts": ["which employees"]}, headers=auth("bob"), timeout=60)
            closed, answer = _until_closed(sock)
        assert whole.status_code == 200
        assert closed and answer.startswith(b"HTTP/1.1 408") and b"service.body_timeout_s" in answer, answer
