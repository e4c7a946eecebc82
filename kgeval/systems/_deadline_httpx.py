"""httpx's transport under a `CallDeadline` per request (`kgeval.systems._deadline`), for the
SDKs that read through httpx (gemini) or its fork httpx2 (openai): their `timeout_s`, like
httpx's, bounds each read only; with this transport it is a deadline for the whole call,
headers and body, and a call past it raises the library's ReadTimeout, which the SDKs report
as their timeout."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from kgeval.systems._deadline import CallDeadline


def deadline_transport(timeout_s: float, http: ModuleType | None = None) -> Any:
    """A transport of `http` (httpx, or a module with its API: httpx2) whose every request is
    under a `timeout_s` deadline, headers and body."""
    if http is None:
        import httpx as http
    return _transport_class(http)(timeout_s)


def http_module_of(client_class: type) -> ModuleType:
    """The httpx-like library a client class (an SDK's default client) is built on."""
    import importlib

    base = next(c for c in client_class.__mro__ if c.__name__ == "Client")
    return importlib.import_module(base.__module__.split(".")[0])


@functools.cache
def _transport_class(http: ModuleType) -> type:
    class DeadlineStream(http.SyncByteStream):
        def __init__(self, inner: Any, call: CallDeadline, request: Any) -> None:
            self._inner, self._call, self._request = inner, call, request

        def __iter__(self) -> Iterator[bytes]:
            try:
                yield from self._inner
            except http.TransportError:
                if self._call.expired:
                    raise past(self._call, self._request) from None
                raise
            if self._call.expired:  # the body ended at the shut socket: cut, never a whole reply
                raise past(self._call, self._request)

        def close(self) -> None:
            self._call.end()
            self._inner.close()

    def past(call: CallDeadline, request: Any) -> Exception:
        return http.ReadTimeout(f"no whole reply within {call.timeout_s:g} s (timeout_s, a deadline for the call: headers and body)", request=request)

    class DeadlineTransport(http.HTTPTransport):
        """The library's transport; the connection names its socket when it is made (the
        trace extension; connections are not kept alive, so every request makes one); a
        failure or an end past the deadline is a ReadTimeout."""

        def __init__(self, timeout_s: float) -> None:
            super().__init__(limits=http.Limits(max_keepalive_connections=0))
            self._timeout_s = timeout_s

        def handle_request(self, request: Any) -> Any:
            call = CallDeadline(self._timeout_s)

            def trace(event: str, info: dict) -> None:
                if event == "connection.connect_tcp.complete":
                    call.uses(info["return_value"].get_extra_info("socket"))

            request.extensions = {**request.extensions, "trace": trace}
            try:
                response = super().handle_request(request)
            except http.TransportError:
                call.end()
                if call.expired:
                    raise past(call, request) from None
                raise
            response.stream = DeadlineStream(response.stream, call, request)
            return response

    return DeadlineTransport
