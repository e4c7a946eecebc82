"""`kgeval init`: a system's starter configuration (and example bank) that runs as written."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from kgeval.cli._common import err, out, user_errors
from kgeval.errors import InputError


class StarterChoice(StrEnum):
    gemini = "gemini"
    openai = "openai"
    http = "http"


@user_errors
def init(
    system: Annotated[StarterChoice, typer.Option("--system", help="The system to configure: gemini, openai or http.")],
    directory: Annotated[Path, typer.Argument(help="Where to write kgeval.yaml (and examples.jsonl for a model).")] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Replace files that exist.")] = False,
    model: Annotated[str | None, typer.Option("--model", help="gemini, openai: the model name (default: gemini-2.5-flash, gpt-4o-mini).")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="gemini, openai: the API base URL (e.g. http://127.0.0.1:8000/v1 for vLLM).")] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option("--api-key-env", help="gemini, openai: the environment variable holding the API key; openai: 'null' (or 'none') for an endpoint without keys"
                     " (the default when --base-url is on this machine: 127.0.0.1, localhost, ::1)."),
    ] = None,
    url: Annotated[str | None, typer.Option("--url", help="http: the production endpoint's URL.")] = None,
    checklist: Annotated[Path | None, typer.Option("--checklist", help="The pre-eval checklist whose production profile to match (default: the shipped one).")] = None,
) -> None:
    """Write a configuration for a system under test that the pre-eval checklist's pipeline
    parity accepts as written: for gemini and openai the model settings, the prompt's
    retrieval (few_shot_k as production's) and an example-bank template (examples.jsonl); for
    http the endpoint with production's pipeline profile. Refuses to replace a file unless --force."""
    from kgeval.checklists import DEFAULT_CHECKLIST, load_checklist
    from kgeval.systems import starter_files

    production = load_checklist(checklist or DEFAULT_CHECKLIST).production_profile
    keyless = _keyless(system.value, base_url, api_key_env)
    settings = {"model": model, "base_url": base_url, "api_key_env": None if keyless else api_key_env, "url": url}
    files = starter_files(system.value, production, settings, keyless=keyless)
    existing = [str(directory / name) for name in files if (directory / name).exists()]
    if existing and not force:
        raise InputError(f"{', '.join(existing)}: already exists; give --force to replace it, or another directory")
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
        err.print(f"wrote {directory / name}", markup=False)
    out.print(_next_steps(system.value, directory, keyless), markup=False)


_NO_KEY = ("null", "none", "")
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def _keyless(system: str, base_url: str | None, api_key_env: str | None) -> bool:
    """Whether the starter sends no API key: `--api-key-env null` (or none), or an openai
    endpoint on this machine (vLLM, Ollama) with no --api-key-env given."""
    from urllib.parse import urlsplit

    if api_key_env is not None and api_key_env.strip().lower() in _NO_KEY:
        if system != "openai":
            raise InputError(f"--api-key-env {api_key_env!r}: {system} always needs a key (only openai-compatible endpoints may have none)")
        return True
    return api_key_env is None and system == "openai" and base_url is not None and urlsplit(base_url).hostname in _LOCAL_HOSTS


def _next_steps(system: str, directory: Path, keyless: bool) -> str:
    here = "" if directory.resolve() == Path.cwd().resolve() else f"cd {directory}  # the configuration is found there as ./kgeval.yaml\n"
    key = {"gemini": "export GEMINI_API_KEY=...  # or the variable api_key_env names\n", "openai": "export OPENAI_API_KEY=...  # or set api_key_env: null for a keyless endpoint\n"}
    return (
        "next:\n"
        + here
        + ("" if keyless else key.get(system, ""))
        + "kgeval run --system oracle   # the control every model or endpoint run needs first (checklist item caught:oracle_below_99)\n"
        + f"kgeval run --system {system}"
    )


__all__ = ["init"]
