"""A loopback HTTP server for store tests: records every request it receives and answers with
a handler the test chooses. Requests go to 127.0.0.1 only."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Reply = tuple[int, dict[str, str], bytes]
Handler = Callable[[Recorded], Reply]

ASK_TRUE: Reply = (200, {"Content-Type": "application/sparql-results+json"}, json.dumps({"head": {}, "boolean": True}).encode())


def answer(_: Recorded) -> Reply:
    return ASK_TRUE


@contextmanager
def loopback(handler: Handler = answer) -> Iterator[tuple[str, list[Recorded]]]:
    """Yield (base URL, recorded requests) while the server runs."""
    recorded: list[Recorded] = []

    class _Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = Recorded(self.command, self.path, dict(self.headers.items()), self.rfile.read(length))
            recorded.append(request)
            status, headers, body = handler(request)
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test): nothing to answer

        do_GET = do_POST = _serve

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", recorded
    finally:
        server.shutdown()
        server.server_close()


def timeout_on_a_silent_server(execute: Callable[[str, float], object], first_budget_s: float = 0.4) -> tuple[float, str, list[Recorded]]:
    """Call `execute(base URL, budget)` against a server that answers nothing until the call has
    given up, and return (budget, the QueryTimeout's message, the requests the server received).

    No wall-clock margin: on a loaded machine a short budget can run out before the request has
    even reached the server (a client's start, a websocket handshake). Then the budget doubles,
    on a fresh server, until the request arrived before the timeout; each try must time out and
    send at most one request (a resent request would be a second one)."""
    from kgeval.errors import QueryTimeout

    budget = first_budget_s
    while True:
        release = threading.Event()

        def silent(_: Recorded, release: threading.Event = release) -> Reply:
            release.wait(120)
            return ASK_TRUE

        with loopback(silent) as (url, recorded):
            try:
                execute(url, budget)
            except QueryTimeout as exc:
                message = str(exc)
            else:
                raise AssertionError(f"no QueryTimeout from a server that never answered (budget {budget:g} s)")
            finally:
                release.set()
            arrived = list(recorded)
        assert len(arrived) <= 1, f"{len(arrived)} requests for one query: {[r.path for r in arrived]}"
        if arrived:
            return budget, message, arrived
        budget *= 2
        assert budget <= 60, "the request never reached the loopback server"
