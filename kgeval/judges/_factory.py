"""Judges are built one way only: from configuration (DESIGN invariant 3)."""

from __future__ import annotations

from collections.abc import Callable

from kgeval.config import JudgesConfig
from kgeval.errors import InputError
from kgeval.judges._execution import ExecutionJudge
from kgeval.judges._model import Judge
from kgeval.judges._seed import SeedJudge

_FACTORIES: dict[str, Callable[[JudgesConfig], Judge]] = {
    "seed": lambda cfg: SeedJudge(cfg.seed),
    "execution": lambda cfg: ExecutionJudge(cfg.execution),
}


def judge_from_config(name: str, config: JudgesConfig) -> Judge:
    try:
        return _FACTORIES[name](config)
    except KeyError:
        raise InputError(f"unknown judge {name!r}; known judges: {', '.join(sorted(_FACTORIES))}") from None


def judges_from_config(config: JudgesConfig) -> dict[str, Judge]:
    """Every enabled judge by name; the primary must be among them."""
    if config.primary not in config.enabled:
        raise InputError(f"primary judge {config.primary!r} is not in enabled judges {list(config.enabled)}")
    return {name: judge_from_config(name, config) for name in config.enabled}
