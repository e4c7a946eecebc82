"""Starter files for a system under test (`kgeval init`): a configuration that passes the
pre-eval checklist's pipeline parity as written, and, for a model, an example-bank template.

A model system matches production's pipeline only with an example bank to retrieve from
(`few_shot_retrieval`, `few_shot_k`), so a zero-shot configuration is refused; the starter
writes the bank beside the configuration and names it, and takes `few_shot_k` from the
checklist's production profile rather than from a second copy of it.
"""

from __future__ import annotations

import json
import textwrap
from typing import Literal

from kgeval.config import PipelineConfig
from kgeval.systems._prompt import INSTRUCTION

StarterSystem = Literal["gemini", "openai", "http"]
CONFIG_NAME = "kgeval.yaml"
EXAMPLES_NAME = "examples.jsonl"

_LIBRARY = "http://example.com/starter-library/"
STARTER_EXAMPLES: tuple[dict[str, str], ...] = tuple(
    {"kg": "starter-library", "question": question, "sparql": f"PREFIX lib: <{_LIBRARY}> " + sparql}
    for question, sparql in (
        ("Which books did Ursula K. Le Guin write?", 'SELECT ?book WHERE { ?book lib:author ?a . ?a lib:name "Ursula K. Le Guin" }'),
        ("How many books were published before 1950?", "SELECT (COUNT(?book) AS ?n) WHERE { ?book a lib:Book ; lib:published ?y . FILTER(?y < 1950) }"),
        ("Is there a book titled Dune?", 'ASK { ?book a lib:Book ; lib:title "Dune" }'),
        ("Which three authors wrote the most books?", "SELECT ?a (COUNT(?book) AS ?n) WHERE { ?book lib:author ?a } GROUP BY ?a ORDER BY DESC(?n) LIMIT 3"),
        ("List the libraries that lend a book by Tolstoy.", 'SELECT DISTINCT ?lib WHERE { ?lib lib:lends ?book . ?book lib:author/lib:name "Leo Tolstoy" }'),
    )
)
"""The example-bank template: questions with their SPARQL over a made-up KG, to be replaced by
the training side's own examples (never holdout material: the bank's guards refuse it)."""

_MODEL_DEFAULTS: dict[str, dict[str, object]] = {
    "gemini": {"model": "gemini-2.5-flash", "base_url": None, "api_key_env": "GEMINI_API_KEY"},
    "openai": {"model": "gpt-4o-mini", "base_url": None, "api_key_env": "OPENAI_API_KEY"},
}
_MODEL_NOTES = {
    "model": "the model name the endpoint serves",
    "base_url": "null: the provider's API; else a proxy, or for openai a local server, e.g. http://127.0.0.1:8000/v1 (vLLM)",
    "api_key_env": "the environment variable holding the API key (null: an endpoint without keys)",
}


def _yaml(value: object) -> str:
    """A scalar or flow mapping as YAML (JSON is YAML)."""
    return json.dumps(value, ensure_ascii=False)


def starter_files(system: StarterSystem, production: PipelineConfig, settings: dict[str, object], *, keyless: bool = False) -> dict[str, str]:
    """File name -> text of the starter for `system`: `kgeval.yaml` (and `examples.jsonl` for a
    model). `settings` override the system's defaults (model, base_url, api_key_env; url for http);
    `keyless` writes `api_key_env: null` (an endpoint without keys)."""
    if system == "http":
        return {CONFIG_NAME: _http_config(production, settings)}
    bank = "".join(json.dumps(example, ensure_ascii=False) + "\n" for example in STARTER_EXAMPLES)
    return {CONFIG_NAME: _model_config(system, production, settings, keyless), EXAMPLES_NAME: bank}


def _model_config(system: str, production: PipelineConfig, settings: dict[str, object], keyless: bool = False) -> str:
    values = {**_MODEL_DEFAULTS[system], **{k: v for k, v in settings.items() if v is not None}}
    if keyless:
        values["api_key_env"] = None
    k = int(production.default.get("few_shot_k", 5) or 0)
    lines = [
        f"# kgeval configuration for `kgeval run --system {system}`, written by `kgeval init` (docs/systems.md).",
        "# Keys not written here keep their defaults (each is documented in kgeval/config.py).",
        "systems:",
        f"  {system}:",
        *(f"    {key}: {_yaml(values[key])}  # {_MODEL_NOTES[key]}" for key in ("model", "base_url", "api_key_env")),
        "    # The example bank: one {\"kg\", \"question\", \"sparql\"} per line, relative to this file.",
        f"    # {EXAMPLES_NAME} is a template over a made-up KG: replace it with your training side's",
        "    # examples (holdout KGs and questions are refused by the bank's guards).",
        f"    examples: {_yaml(EXAMPLES_NAME)}",
        f"    # Examples retrieved per question: production's profile says {k} (pipeline_parity checks it).",
        f"    few_shot_k: {k}",
        "# The prompt every model system sends (kgeval/systems/_prompt.py): this instruction as the",
        "# system message, then the KG's schema summary, the retrieved examples and the question:",
        *(f"#   {line}" for line in textwrap.wrap(INSTRUCTION, 90)),
    ]
    return "\n".join(lines) + "\n"


def _http_config(production: PipelineConfig, settings: dict[str, object]) -> str:
    url = str(settings.get("url") or "http://127.0.0.1:8080/answer")
    guards_url = str(settings.get("guards_url") or url.rsplit("/", 1)[0] + "/guards")
    lines = [
        "# kgeval configuration for `kgeval run --system http`, written by `kgeval init` (docs/systems.md).",
        "# Keys not written here keep their defaults (each is documented in kgeval/config.py).",
        "systems:",
        "  http:",
        f"    url: {_yaml(url)}  # POST {{question, kg, seed}} -> {{sparql, answer, stop_reason}}",
        '    declared_version: "unknown"  # the version this deployment ships, recorded with the run',
        "    token_env: null  # the environment variable holding a bearer token, if the endpoint needs one",
        "    # GET returns the endpoint's example-bank guards as a JSON list of {name, active, details}",
        "    # (the checklist's `guards` item reads it when few-shot retrieval is on).",
        f"    guards_url: {_yaml(guards_url)}",
        "    # The pipeline the endpoint runs, as production's profile declares it (pipeline_parity):",
        "    pipeline:",
        f"      default: {_yaml(production.default)}",
        f"      per_kg: {_yaml(production.per_kg)}",
    ]
    return "\n".join(lines) + "\n"

