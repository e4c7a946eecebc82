"""Systems under test: controls, replay, and (later) production endpoints and models."""

from pathlib import Path

from kgeval.errors import InputError
from kgeval.systems._controls import OracleSystem, WeakSystem
from kgeval.systems._model import System, SystemOutput
from kgeval.systems._replay import ReplaySystem

SYSTEM_NAMES = ("oracle", "weak", "replay")


def system_from_name(name: str, *, replay: Path | None = None) -> System:
    """Build a system by its CLI name."""
    if name == "oracle":
        return OracleSystem()
    if name == "weak":
        return WeakSystem()
    if name == "replay":
        if replay is None:
            raise InputError("system 'replay' needs --replay FILE")
        return ReplaySystem(replay)
    raise InputError(f"unknown system {name!r}; known systems: {', '.join(SYSTEM_NAMES)}")


__all__ = ["SYSTEM_NAMES", "OracleSystem", "ReplaySystem", "System", "SystemOutput", "WeakSystem", "system_from_name"]
