"""Real HTTP servers on 127.0.0.1 for systems under test: a production-style endpoint and a
Gemini-style generateContent endpoint. Each runs in a thread, records every request, and
answers through a reply function so a test can inject any fault."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    """A dict/list is sent as JSON; a str is sent as is (malformed JSON, HTML error pages)."""
    delay_s: float = 0.0
    """Pacing only (a system that takes a moment): never what a test's outcome rests on, since
    a loaded machine stretches every delay. A reply that must come too late is `hold`."""
    headers: dict[str, str] = field(default_factory=dict)
    """Sent as given; a Content-Type here replaces the default application/json."""
    hold: bool = False
    """Sent only once the server is closed (or after HOLD_LIMIT_S): a client's timeout, however
    short, runs out first whatever the machine's load. A client whose timeout does not apply
    waits until HOLD_LIMIT_S, then gets this reply, and its test fails on it."""
    trickle: Literal["headers", "body", "endless"] | None = None
    """Sent a byte (or, "endless", a one-byte chunk) at a time, `trickle_gap_s` apart, until the
    server closes (or HOLD_LIMIT_S): "headers" trickles the headers (with a header of
    `trickle_pad` spaces), "body" the body (after `trickle_pad` bytes of JSON whitespace),
    "endless" a chunked body that never ends."""
    trickle_gap_s: float = 0.1
    trickle_pad: int = 0


HOLD_LIMIT_S = 120.0
"""How long a held reply waits for the server to close: a stuck test's bound, never a margin."""


ReplyFn = Callable[[str, dict, int], Reply]
"""(path, request JSON, request number from 1) -> Reply. A GET's request JSON is {"_method": "GET"}."""


class LoopbackServer:
    """A threaded HTTP/1.1 server on an ephemeral port; `requests` lists (path, JSON body)."""

    def __init__(self, reply: ReplyFn) -> None:
        self.reply = reply
        self.requests: list[tuple[str, dict]] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out in separate writes: without TCP_NODELAY, Nagle's
            # algorithm and the client's delayed ACK add ~40 ms to every response
            disable_nagle_algorithm = True

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._answer({"_method": "GET"})

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                try:
                    payload = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    payload = {"_raw": raw.decode("utf-8", "replace")}
                self._answer(payload)

            def _answer(self, payload: dict) -> None:
                with outer._lock:
                    outer.requests.append((self.path, payload))
                    n = len(outer.requests)
                answer = outer.reply(self.path, payload, n)
                if answer.delay_s:
                    time.sleep(answer.delay_s)
                if answer.hold:
                    outer._closed.wait(HOLD_LIMIT_S)
                body = answer.body if isinstance(answer.body, str) else json.dumps(answer.body)
                data = body.encode("utf-8")
                if answer.trickle:
                    self._trickle(answer, data)
                    return
                try:
                    self.send_response(answer.status)
                    if not any(k.lower() == "content-type" for k in answer.headers):
                        self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in answer.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout): nothing to answer

            def _trickle(self, answer: Reply, data: bytes) -> None:
                status = f"HTTP/1.1 {answer.status} OK\r\n".encode()
                if answer.trickle == "endless":
                    head, pieces = status + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", itertools.repeat(b"1\r\n \r\n")
                else:
                    pad = b" " * answer.trickle_pad
                    body = data if answer.trickle == "headers" else pad + data
                    headers = b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
                    headers += b"X-Pad: a%s\r\n\r\n" % pad if answer.trickle == "headers" else b"\r\n"
                    head, rest = (status, headers + body) if answer.trickle == "headers" else (status + headers, body)
                    pieces = (rest[i : i + 1] for i in range(len(rest)))
                started = time.monotonic()
                try:
                    self.wfile.write(head)
                    for piece in pieces:
                        self.wfile.write(piece)
                        if outer._closed.wait(answer.trickle_gap_s) or time.monotonic() - started > HOLD_LIMIT_S:
                            break
                except OSError:
                    pass  # the client gave up (its deadline): nothing more to send
                self.close_connection = True

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.request_queue_size = 128
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def await_count(self, n: int, limit_s: float = 60.0) -> int:
        """The number of requests received, once it is at least `n` (or `limit_s` passed): a
        client that gave up on a held reply may have sent its request before the server read it."""
        deadline = time.monotonic() + limit_s
        while self.count() < n and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.count()

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed.set()  # held replies go out (to clients long gone)
        self._server.shutdown()
        self._server.server_close()


def generate_content(
    text: str | None = "```sparql\nASK {}\n```",
    *,
    thought: str | None = "Let me look at the schema first.",
    finish: str = "STOP",
    model_version: str = "gemini-2.5-flash-001",
    prompt_tokens: int = 812,
    candidate_tokens: int = 41,
    thought_tokens: int = 230,
) -> dict:
    """A generateContent response body as the Gemini API returns it; the thought part comes
    first, so an adapter that takes text by position gets the thought, not the answer."""
    parts = []
    if thought is not None:
        parts.append({"text": thought, "thought": True})
    if text is not None:
        parts.append({"text": text})
    candidate: dict = {"finishReason": finish, "index": 0}
    if parts:
        candidate["content"] = {"role": "model", "parts": parts}
    return {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": candidate_tokens,
            "thoughtsTokenCount": thought_tokens,
            "totalTokenCount": prompt_tokens + candidate_tokens + thought_tokens,
        },
        "modelVersion": model_version,
        "responseId": "loopback-0001",
    }


async def _serve_fixed_latency(answers: dict[str, str], latency: float) -> None:
    """A minimal asyncio HTTP/1.1 server (keep-alive, Content-Length bodies): one thread, so
    its own overhead stays far below the latency it simulates, even with 64 calls in flight."""
    import asyncio

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = json.loads(await reader.readexactly(length) or b"{}")
                await asyncio.sleep(latency)
                data = json.dumps({"sparql": answers.get(body.get("question"))}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=256)
    host, port = server.sockets[0].getsockname()[:2]
    print(f"http://{host}:{port}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    """Serve a production-style endpoint in its own process: `python -m tests.servers
    ANSWERS.json LATENCY_S`. Answers {"sparql": ANSWERS[question]} after exactly LATENCY_S;
    prints the URL, then serves until killed. (bench/dispatch.py)"""
    import asyncio
    import sys

    answers = json.loads(open(sys.argv[1], encoding="utf-8").read())
    asyncio.run(_serve_fixed_latency(answers, float(sys.argv[2])))


if __name__ == "__main__":
    main()
