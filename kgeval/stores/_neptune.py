"""Amazon Neptune's SPARQL endpoint: the SPARQL 1.1 Protocol store with every request signed
with SigV4 (IAM database authentication)."""

from __future__ import annotations

import urllib.request
from collections.abc import Sequence
from urllib.parse import urlsplit

from typing import Any

from kgeval.errors import InputError, StoreError
from kgeval.stores._rewrite import with_neptune_timeout_hint
from kgeval.stores._sigv4 import sigv4_headers
from kgeval.stores._sparql import SparqlEndpointStore


class NeptuneSparqlStore(SparqlEndpointStore):
    """`https://HOST:8182/sparql`, each request signed for service `neptune-db` in `region`.

    Neptune sends no Server header naming its engine version, so the version recorded with gold
    is the configured `product_version` (e.g. the cluster's engine version, 1.3.2.1).

    Every query carries Neptune's `queryTimeout` hint with its timeout, so the cluster stops it
    there too; the hint must stay below the cluster's `neptune_query_timeout` parameter, which
    operators set above kgeval's largest timeout (docs/engines.md).
    """

    def __init__(
        self,
        endpoint: str,
        *,
        region: str,
        data_version: str,
        default_graphs: Sequence[str] = (),
        named_graphs: Sequence[str] = (),
        product_version: str | None = None,
        allow_insecure_http: bool = False,
    ) -> None:
        scheme = urlsplit(endpoint).scheme
        if scheme != "https" and not (scheme == "http" and allow_insecure_http):
            raise InputError(f"Neptune endpoint {endpoint!r}: must be https://HOST:8182/sparql")
        self.region = region
        super().__init__(
            endpoint,
            data_version=data_version,
            default_graphs=default_graphs,
            named_graphs=named_graphs,
            product="neptune",
            product_version=product_version or "unknown",
            signer=self._sign,
            name_prefix="neptune-sparql",
        )

    @property
    def name(self) -> str:  # type: ignore[override]
        return "neptune-sparql"

    def _request_json(self, query: str, timeout_s: float) -> dict[str, Any]:
        return super()._request_json(with_neptune_timeout_hint(query, max(1, round(timeout_s * 1000))), timeout_s)

    def _http_error(self, status: int, message: str) -> StoreError:
        if "neptune_query_timeout" in message:  # the cluster's setting, not the query, is at fault
            return StoreError(f"{message} (raise the cluster's neptune_query_timeout DB parameter above kgeval's query timeouts)", http_status=status)
        return super()._http_error(status, message)

    def _sign(self, request: urllib.request.Request) -> None:
        # Only headers the server sees unchanged are signed: Content-Type, and Host (added by
        # botocore from the URL, exactly as urllib will send it).
        signed = {"Content-Type": request.get_header("Content-type", "application/x-www-form-urlencoded")}
        body = request.data if isinstance(request.data, bytes) else None
        for header, value in sigv4_headers(request.get_method(), request.full_url, body, signed, self.region).items():
            request.add_header(header, value)
