"""`kgeval init`: a model system that works the first time. The REAL openai and google-genai
clients (in the `kgeval` subprocess) talk to a loopback server in this test; the starter
configuration `kgeval init` writes is used as written, and the pre-eval checklist passes."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.cli.test_anywhere import _home, kgeval_in
from tests.conftest import MINI_QUESTIONS
from tests.servers import LoopbackServer, Reply, generate_content
from tests.systems.test_openai import chat_completion

REFERENCE = {q["question"]: q["sparql"] for q in MINI_QUESTIONS}


def _answer_reference(prompt: str) -> str:
    """What a good model answers: the reference query of the question the prompt ends with."""
    question = re.search(r"Question: (.*)\s*$", prompt).group(1).strip()
    return f"```sparql\n{REFERENCE[question]}\n```"


def _openai_reply(path: str, body: dict, n: int) -> Reply:
    return Reply(body=chat_completion(_answer_reference(body["messages"][-1]["content"])))


def _gemini_reply(path: str, body: dict, n: int) -> Reply:
    return Reply(body=generate_content(_answer_reference(body["contents"][0]["parts"][0]["text"])))


@pytest.mark.parametrize(
    ("system", "reply", "options", "env"),
    [
        # a local endpoint needs no key: init writes api_key_env: null (issue 44 item 8: the run stopped)
        ("openai", _openai_reply, ["--model", "qwen2.5-coder-7b", "--base-url", "{url}/v1"], {}),
        ("gemini", _gemini_reply, ["--base-url", "{url}"], {"GEMINI_API_KEY": "loopback"}),
    ],
)
def test_init_then_run_works_with_no_hand_edits(tmp_path, mini_holdout, mini_gold, system, reply, options, env):
    work = _home(tmp_path, mini_holdout, mini_gold)
    with LoopbackServer(reply) as server:
        init = kgeval_in(work, "init", "--system", system, *(o.format(url=server.url) for o in options))
        assert init.returncode == 0, init.stderr
        assert f"kgeval run --system {system}" in init.stdout and (work / "kgeval.yaml").exists() and (work / "examples.jsonl").exists()
        oracle = kgeval_in(work, "run", "--system", "oracle", "--seeds", "1", **env)
        assert oracle.returncode == 0, oracle.stderr
        ran = kgeval_in(work, "run", "--system", system, "--seeds", "1", **env)
        assert ran.returncode == 0, ran.stderr + ran.stdout
        assert "accuracy: 100.0%" in ran.stdout, ran.stdout
    evaluated = [q for q in MINI_QUESTIONS if not q.get("expect_empty")] or MINI_QUESTIONS
    assert len(server.requests) >= len(evaluated)
    prompt = str(server.requests[0][1])
    assert "Example question:" in prompt  # the example bank the starter wrote was retrieved from


@pytest.mark.parametrize(
    ("options", "written"),
    [
        (["--base-url", "http://127.0.0.1:8000/v1"], None),
        (["--base-url", "http://localhost:11434/v1"], None),
        (["--api-key-env", "null"], None),  # once written as the string "null"
        (["--api-key-env", "none", "--base-url", "https://proxy.example/v1"], None),
        (["--base-url", "https://proxy.example/v1"], "OPENAI_API_KEY"),
        (["--base-url", "http://127.0.0.1:8000/v1", "--api-key-env", "VLLM_KEY"], "VLLM_KEY"),
    ],
)
def test_init_writes_no_key_for_a_local_endpoint_or_null(tmp_path, options, written):
    init = kgeval_in(tmp_path, "init", "--system", "openai", *options)
    assert init.returncode == 0, init.stderr
    assert yaml.safe_load((tmp_path / "kgeval.yaml").read_text())["systems"]["openai"]["api_key_env"] == written
    assert ("export OPENAI_API_KEY" in init.stdout) == (written is not None)


def test_init_refuses_no_key_for_gemini(tmp_path):
    init = kgeval_in(tmp_path, "init", "--system", "gemini", "--api-key-env", "null")
    assert init.returncode == 2 and "gemini always needs a key" in init.stderr


def test_init_refuses_to_replace_files_without_force(tmp_path):
    first = kgeval_in(tmp_path, "init", "--system", "http", "--url", "http://127.0.0.1:9/answer")
    assert first.returncode == 0, first.stderr
    config = yaml.safe_load((tmp_path / "kgeval.yaml").read_text())
    assert config["systems"]["http"]["pipeline"]["default"] == {"few_shot_retrieval": True, "few_shot_k": 5, "schema_in_prompt": True}
    again = kgeval_in(tmp_path, "init", "--system", "http")
    assert again.returncode == 2 and "kgeval.yaml: already exists; give --force" in again.stderr
    forced = kgeval_in(tmp_path, "init", "--system", "openai", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "openai" in yaml.safe_load((tmp_path / "kgeval.yaml").read_text())["systems"]


def test_a_zero_shot_model_is_refused_with_the_fix_named(tmp_path, mini_holdout, mini_gold):
    """A model configuration without an example bank differs from production's retrieval: the
    refusal names the keys to set and the command that writes them."""
    work = _home(tmp_path, mini_holdout, mini_gold)
    (work / "kgeval.yaml").write_text("systems:\n  openai:\n    model: m\n    base_url: http://127.0.0.1:9/v1\n    api_key_env: null\n")
    oracle = kgeval_in(work, "run", "--system", "oracle", "--seeds", "1")
    assert oracle.returncode == 0, oracle.stderr
    refused = kgeval_in(work, "run", "--system", "openai", "--seeds", "1")
    assert refused.returncode == 1, refused.stderr
    assert "pipeline_parity" in refused.stderr and "systems.openai.examples" in refused.stderr and "kgeval init --system openai" in refused.stderr, refused.stderr
