"""Session-scoped real servers (see servers.py) loaded with the test holdouts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kgeval.holdout import Holdout, load_holdout
from tests.conftest import REPO, write_holdout
from tests.stores.servers import RunningServer, start_oxigraph, start_virtuoso, stop


@pytest.fixture(scope="session")
def server_holdouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Holdout]:
    """The holdouts every server is loaded with: the mini test holdout, and the shipped sample
    holdout when the checkout has one."""
    holdouts = {"mini": load_holdout(write_holdout(tmp_path_factory.mktemp("mini") / "holdout"))}
    if (REPO / "holdout" / "MANIFEST.json").is_file():
        holdouts["sample"] = load_holdout(REPO / "holdout")
    return holdouts


@pytest.fixture(scope="session")
def oxigraph_server(tmp_path_factory: pytest.TempPathFactory, server_holdouts) -> Iterator[RunningServer]:
    server = start_oxigraph(tmp_path_factory.mktemp("oxigraph"), server_holdouts)
    yield server
    stop(server.process)


@pytest.fixture(scope="session")
def virtuoso_server(tmp_path_factory: pytest.TempPathFactory, server_holdouts) -> Iterator[RunningServer]:
    server = start_virtuoso(tmp_path_factory.mktemp("virtuoso"), server_holdouts)
    yield server
    stop(server.process)


@pytest.fixture(params=["oxigraph", "virtuoso"])
def sparql_server(request: pytest.FixtureRequest) -> RunningServer:
    """Each real SPARQL server in turn."""
    return request.getfixturevalue(f"{request.param}_server")
