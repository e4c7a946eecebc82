"""Systems under test: controls, replay, the production HTTP endpoint and Gemini."""

from pathlib import Path

from kgeval.config import KgevalConfig
from kgeval.errors import InputError
from kgeval.holdout import Holdout
from kgeval.systems._controls import OracleSystem, WeakSystem
from kgeval.systems._examples import Example, ExampleBank, InMemoryExampleBank, load_examples
from kgeval.systems._gemini import GeminiSystem
from kgeval.systems._http import HttpSystem
from kgeval.systems._model import TRANSIENT_ERRORS, ErrorKind, StopReason, System, SystemOutput, Usage
from kgeval.systems._replay import ReplaySystem
from kgeval.systems._schema import schema_summary

SYSTEM_NAMES = ("oracle", "weak", "replay", "http", "gemini")


def system_from_name(
    name: str,
    *,
    replay: Path | None = None,
    config: KgevalConfig | None = None,
    bank: ExampleBank | None = None,
    holdout: Holdout | None = None,
) -> System:
    """Build a system by its CLI name; endpoint and model systems read `config.systems`.
    Gemini's bank, when read from `systems.gemini.examples`, blocks the holdout's KGs and
    question texts."""
    config = config or KgevalConfig()
    if name == "oracle":
        return OracleSystem()
    if name == "weak":
        return WeakSystem()
    if name == "replay":
        if replay is None:
            raise InputError("system 'replay' needs --replay FILE")
        return ReplaySystem(replay)
    if name == "http":
        return HttpSystem(config.systems.http, concurrency=config.run.concurrency)
    if name == "gemini":
        gemini = config.systems.gemini
        if bank is None and gemini.examples is not None:
            blocked_kgs = [kg.id for kg in holdout.kgs] if holdout else []
            blocked_questions = [q.question for q in holdout.questions()] if holdout else []
            bank = InMemoryExampleBank(load_examples(gemini.examples), blocked_kgs=blocked_kgs, blocked_questions=blocked_questions)
        return GeminiSystem(gemini, bank=bank)
    raise InputError(f"unknown system {name!r}; known systems: {', '.join(SYSTEM_NAMES)}")


__all__ = [
    "SYSTEM_NAMES",
    "TRANSIENT_ERRORS",
    "ErrorKind",
    "Example",
    "ExampleBank",
    "GeminiSystem",
    "HttpSystem",
    "InMemoryExampleBank",
    "OracleSystem",
    "ReplaySystem",
    "StopReason",
    "System",
    "SystemOutput",
    "Usage",
    "WeakSystem",
    "load_examples",
    "schema_summary",
    "system_from_name",
]
