"""Systems under test: controls, replay, the production HTTP endpoint, Gemini, and any
OpenAI-compatible chat-completions endpoint.

The endpoint and model systems (`HttpSystem`, `GeminiSystem`, `OpenAISystem`) and the guarded
example bank are imported when first named: their clients (urllib3, httpx) and kgeval.guards (the
contamination check's pyarrow and numpy) took a third of a replay run's imports, which a run of
a recorded or control system never uses.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgeval.config import KgevalConfig
from kgeval.errors import InputError
from kgeval.holdout import Holdout
from kgeval.systems._controls import OracleSystem, WeakSystem
from kgeval.systems._examples import FewShotBank, load_examples
from kgeval.systems._model import (
    TRANSIENT_ERRORS,
    ErrorKind,
    OutputCut,
    StopReason,
    System,
    SystemOutput,
    Usage,
    bounded_output,
    head_of,
)
from kgeval.systems._replay import ReplaySystem
from kgeval.systems._schema import schema_summary
from kgeval.systems._starter import STARTER_EXAMPLES, starter_files

if TYPE_CHECKING:
    from kgeval.guards import ExampleBank
    from kgeval.systems._gemini import GeminiSystem
    from kgeval.systems._http import HttpSystem
    from kgeval.systems._openai import OpenAISystem

_LAZY = {"GeminiSystem": "kgeval.systems._gemini", "HttpSystem": "kgeval.systems._http", "OpenAISystem": "kgeval.systems._openai"}


def __getattr__(name: str) -> Any:  # noqa: ANN401 - PEP 562: the systems imported when first named
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


SYSTEM_NAMES = ("oracle", "weak", "replay", "http", "gemini", "openai")


def guarded_bank(examples: list, holdout: Holdout | None, config: KgevalConfig) -> ExampleBank:
    """kgeval.guards' ExampleBank over `examples`, guarded by the holdout's index; holdout
    material is refused at ingest (and counted in the guards' status)."""
    from kgeval.guards import BankGuards, ExampleBank, build_index

    guards = BankGuards(build_index(holdout, config.guards), config.guards.example_bank) if holdout is not None else None
    bank = ExampleBank(guards)
    bank.add_many(examples)
    return bank


def system_from_name(
    name: str,
    *,
    replay: Path | None = None,
    config: KgevalConfig | None = None,
    bank: FewShotBank | None = None,
    holdout: Holdout | None = None,
) -> System:
    """Build a system by its CLI name; endpoint and model systems read `config.systems`.
    A model's bank, when read from `systems.<name>.examples`, is kgeval.guards' ExampleBank
    guarded by the index of `holdout` (without a holdout its guards report inactive)."""
    config = config or KgevalConfig()
    if name == "oracle":
        return OracleSystem()
    if name == "weak":
        return WeakSystem()
    if name == "replay":
        if replay is None:
            raise InputError("system 'replay' needs --replay FILE")
        return ReplaySystem(replay, holdout, max_output_bytes=config.run.max_output_bytes)
    if name == "http":
        from kgeval.systems._http import HttpSystem

        return HttpSystem(config.systems.http, concurrency=config.run.concurrency, max_output_bytes=config.run.max_output_bytes)
    if name in ("gemini", "openai"):
        model_config = getattr(config.systems, name)
        if bank is None and model_config.examples is not None:
            bank = guarded_bank(load_examples(model_config.examples), holdout, config)
        from kgeval.systems._gemini import GeminiSystem
        from kgeval.systems._openai import OpenAISystem

        return GeminiSystem(model_config, bank=bank) if name == "gemini" else OpenAISystem(model_config, bank=bank)
    raise InputError(f"unknown system {name!r}; known systems: {', '.join(SYSTEM_NAMES)}")


__all__ = [
    "STARTER_EXAMPLES",
    "SYSTEM_NAMES",
    "TRANSIENT_ERRORS",
    "ErrorKind",
    "FewShotBank",
    "GeminiSystem",
    "HttpSystem",
    "OpenAISystem",
    "OracleSystem",
    "OutputCut",
    "ReplaySystem",
    "StopReason",
    "System",
    "SystemOutput",
    "Usage",
    "WeakSystem",
    "bounded_output",
    "guarded_bank",
    "head_of",
    "load_examples",
    "schema_summary",
    "starter_files",
    "system_from_name",
]
