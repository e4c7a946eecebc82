"""One construction path for stores: from configuration."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from kgeval.config import StoreConfig
from kgeval.errors import InputError
from kgeval.stores._base import Store
from kgeval.stores._embedded import EmbeddedStore

if TYPE_CHECKING:
    from kgeval.holdout import KnowledgeGraph


def open_store(
    config: StoreConfig, files: Sequence[Path], kg: str | None = None, *, graphs: Mapping[str, str] | None = None, local_copy: bool = True
) -> Store:
    """The store named by `config`, serving the KG `kg` made of `files`.

    The embedded store loads `files` (each also into the named graph `graphs` gives for it:
    `KnowledgeGraph.graphs`; with `local_copy=False`, only in its sandbox workers,
    which then run its trusted queries too: see `EmbeddedStore`); a remote store already holds
    the data, and `kg` selects its graph through `config.kg_graphs`.
    """
    if config.kind == "embedded":
        return EmbeddedStore(files, graphs=graphs, candidates=config.candidates, local_copy=local_copy)
    store = _remote_store(config, kg)
    store.candidate_limits = config.candidates
    return store


def open_kg_stores(kgs: Iterable[KnowledgeGraph], config: StoreConfig, start_ahead: int = 0) -> dict[str, Store]:
    """Every KG's store as a run opens it, by KG id in the order given, opened a few at a time
    (hashing the KG files is outside the interpreter lock). An embedded store loads its KG in
    its sandbox workers only, which run the run's trusted queries too (`EmbeddedStore`): the run
    process holds no copy. Each store calls `start_ahead(start_ahead)` as soon as it is open, so
    its workers load the KG while the caller goes on. When one cannot open, those opened are
    closed and its error raised."""
    kgs = list(kgs)

    def open_one(kg: KnowledgeGraph) -> Store:
        store = open_store(config, kg.files, kg.id, graphs=kg.graphs, local_copy=False)
        if start_ahead:
            store.start_ahead(start_ahead)
        return store

    with ThreadPoolExecutor(max_workers=max(1, min(len(kgs), os.cpu_count() or 1)), thread_name_prefix="kgeval-open-store") as pool:
        futures = {kg.id: pool.submit(open_one, kg) for kg in kgs}
    opened = {kg: f.result() for kg, f in futures.items() if f.exception() is None}
    failed = next((f.exception() for f in futures.values() if f.exception() is not None), None)
    if failed is not None:
        for store in opened.values():
            close = getattr(store, "close", None)  # a remote store may hold nothing to close
            if close is not None:
                close()
        raise failed
    return opened


def _remote_store(config: StoreConfig, kg: str | None) -> Store:
    assert config.endpoint and config.data_version  # enforced by StoreConfig's validator
    default_graphs = (config.kg_graphs[kg],) if kg in config.kg_graphs else config.default_graphs
    if config.kind == "sparql":
        from kgeval.stores._sparql import SparqlEndpointStore

        username, password = _basic_auth(config)
        return SparqlEndpointStore(
            config.endpoint,
            data_version=config.data_version,
            default_graphs=default_graphs,
            named_graphs=config.named_graphs,
            username=username,
            password=password,
            product=config.product,
            product_version=config.product_version,
        )
    if config.kind == "gremlin":
        from kgeval.stores._gremlin import GremlinStore, server_connection

        return GremlinStore(
            server_connection(config.endpoint),
            data_version=config.data_version,
            name="gremlin-server",
            version=config.product_version or "unknown",
            server_timeout=True,
            naive_utc=True,
        )
    assert config.region
    if config.kind == "neptune-sparql":
        from kgeval.stores._neptune import NeptuneSparqlStore

        return NeptuneSparqlStore(
            config.endpoint,
            region=config.region,
            data_version=config.data_version,
            default_graphs=default_graphs,
            named_graphs=config.named_graphs,
            product_version=config.product_version,
            allow_insecure_http=config.allow_insecure_http,
        )
    if config.kind == "neptune-gremlin":
        from kgeval.stores._gremlin import GremlinStore, neptune_connection

        return GremlinStore(
            neptune_connection(config.endpoint, config.region, config.allow_insecure_http),
            data_version=config.data_version,
            name="neptune-gremlin",
            version=config.product_version or "unknown",
            server_timeout=True,
            naive_utc=True,
        )
    raise InputError(f"unknown store kind {config.kind!r}")


def _basic_auth(config: StoreConfig) -> tuple[str | None, str | None]:
    if config.auth is None:
        return None, None
    password = os.environ.get(config.auth.password_env)
    if password is None:
        raise InputError(
            f"store.auth: environment variable {config.auth.password_env} (the password for "
            f"{config.auth.username!r}) is not set"
        )
    return config.auth.username, password
