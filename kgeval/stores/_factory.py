"""One construction path for stores: from configuration."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kgeval.config import StoreConfig
from kgeval.errors import InputError
from kgeval.stores._base import Store
from kgeval.stores._embedded import EmbeddedStore


def open_store(config: StoreConfig, files: Sequence[Path]) -> Store:
    """The store named by `config`, serving the KG made of `files`."""
    if config.kind == "embedded":
        return EmbeddedStore(files)
    raise InputError(f"unknown store kind {config.kind!r}")
