"""Same configuration, same gold: `kgeval rejudge` gives every verdict of the source again, field
for field (details included), and its seal the same verdict hash, for every kind of run made
here (issue 42): the oracle and weak controls, a replay (with harness errors, an output over the
byte budget, SPARQL that does not parse, a response with no query, an answer cut off at the
output limit), the production HTTP endpoint, an OpenAI-compatible and a Gemini model on loopback
servers (each with harness errors), a resumed run; every one with two seeds. The systems'
servers receive nothing while a run is re-judged."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from kgeval.checklists import pre_eval_checklist
from kgeval.runs import ResultsDB, resume_run
from kgeval.systems import system_from_name
from tests.checklists.test_checklist import _cli_checklist
from tests.cli.test_anywhere import _home, kgeval_in
from tests.conftest import MINI_QUESTIONS, REPO
from tests.runs.test_seal import _killed
from tests.servers import LoopbackServer, Reply, generate_content
from tests.systems.test_openai import chat_completion

BY_TEXT = {q["question"]: q for q in MINI_QUESTIONS}
WRONG = MINI_QUESTIONS[0]["sparql"]  # Alice's department: a wrong answer to every other question
KEYS = {"OPENAI_API_KEY": "loopback", "GEMINI_API_KEY": "loopback"}


def _behaviour(question: dict, seed: int) -> str:
    """What a system does for (question, seed): right, wrong, unparsable, or a harness error."""
    n = MINI_QUESTIONS.index(question)
    return {1: "wrong", 2: "unparsable", 5: "harness" if seed == 1 else "right", 6: "wrong" if seed == 0 else "right"}.get(n, "right")


def _sparql(question: dict, seed: int) -> str:
    return {"right": question["sparql"], "wrong": WRONG, "unparsable": "SELECT ?x WHERE { ?x"}.get(_behaviour(question, seed), question["sparql"])


def _http_reply(path: str, body: dict, n: int) -> Reply:
    question = BY_TEXT[body["question"]]
    if _behaviour(question, body["seed"]) == "harness":
        return Reply(status=503, body={"error": "overloaded"})
    return Reply(body={"sparql": _sparql(question, body["seed"])}, headers={"X-System-Version": "prod-7"})


def _asked(prompt: str) -> dict:
    return BY_TEXT[re.search(r"Question: (.*)\s*$", prompt).group(1).strip()]


def _openai_reply(path: str, body: dict, n: int) -> Reply:
    question, seed = _asked(body["messages"][-1]["content"]), body.get("seed", 0)
    if _behaviour(question, seed) == "harness":
        return Reply(status=503, body={"error": {"message": "overloaded"}})
    if MINI_QUESTIONS.index(question) == 3:  # text and no query: the model's failure, judged wrong
        return Reply(body=chat_completion("I cannot tell from the schema."))
    return Reply(body=chat_completion(f"```sparql\n{_sparql(question, seed)}\n```"))


def _gemini_reply(path: str, body: dict, n: int) -> Reply:
    question = _asked(body["contents"][0]["parts"][0]["text"])
    seed = body.get("generationConfig", {}).get("seed", 0)
    if _behaviour(question, seed) == "harness":
        return Reply(body=generate_content(None, finish="SAFETY"))  # withheld by a filter: a harness error
    if MINI_QUESTIONS.index(question) == 4:  # cut off at the output limit with a query: incomplete, judged
        return Reply(body=generate_content(f"```sparql\n{question['sparql']}\n```", finish="MAX_TOKENS"))
    return Reply(body=generate_content(f"```sparql\n{_sparql(question, seed)}\n```"))


def _replay_file(work) -> str:  # noqa: ANN001
    lines = []
    for q in MINI_QUESTIONS:
        for seed in range(2):
            if _behaviour(q, seed) == "harness":
                continue  # no record: a missing answer, a harness error
            record = {"kg": "mini", "question_id": q["id"], "seed": seed, "sparql": _sparql(q, seed)}
            if MINI_QUESTIONS.index(q) == 3:
                record = {"kg": "mini", "question_id": q["id"], "seed": seed, "sparql": "SELECT * WHERE { ?s ?p ?o } # " + "x" * 5000}  # over the budget
            if MINI_QUESTIONS.index(q) == 4 and seed == 1:
                record = {"kg": "mini", "question_id": q["id"], "seed": seed, "answer": ["true"], "stop_reason": "length"}
            if MINI_QUESTIONS.index(q) == 7:
                record = {"kg": "mini", "question_id": q["id"], "seed": seed, "text": "No query can answer this."}
            lines.append(json.dumps(record))
    path = work / "replay.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _configure(kind: str, work, url: str) -> list[str]:  # noqa: ANN001
    """Write the kind's configuration in `work`; the `kgeval run` options that run it."""
    run = {"seeds": 2, "retry_backoff_s": 0.0, "max_tries": 2, "max_output_bytes": 4096, "checklist": str(_cli_checklist(work))}
    if kind in ("openai", "gemini"):
        options = ["--model", "qwen2.5-coder-7b", "--base-url", f"{url}/v1"] if kind == "openai" else ["--base-url", url]
        assert kgeval_in(work, "init", "--system", kind, *options).returncode == 0
        config = yaml.safe_load((work / "kgeval.yaml").read_text())
        run["checklist"] = str(REPO / "checklists" / "pre_eval.yaml")  # a model with its example bank matches production's pipeline
    else:
        config = {"systems": {"http": {"url": url, "declared_version": "prod-7", "pipeline": {"default": {"schema_in_prompt": True}}}}}
    config["run"] = run
    (work / "kgeval.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return ["--replay", _replay_file(work)] if kind == "replay" else []


REPLIES = {"http": _http_reply, "openai": _openai_reply, "gemini": _gemini_reply}


@pytest.mark.parametrize("kind", ["oracle", "weak", "replay", "http", "openai", "gemini"])
def test_every_kind_of_run_is_reproduced_field_for_field(kind, tmp_path, mini_holdout, mini_gold):
    work = _home(tmp_path, mini_holdout, mini_gold)
    with LoopbackServer(REPLIES.get(kind, _http_reply)) as server:
        options = _configure(kind, work, server.url)
        if kind not in ("oracle", "weak"):  # the control the checklist asks for first
            assert kgeval_in(work, "run", "--system", "oracle", "--seeds", "2", **KEYS).returncode == 0
        ran = kgeval_in(work, "run", "--system", kind, *options, **KEYS)
        assert ran.returncode == 0, ran.stderr[-3000:]
        source = ran.stdout.strip().splitlines()[-1]
        called = server.count()
        done = kgeval_in(work, "rejudge", source, "--format", "json")
        assert done.returncode == 0, done.stderr[-3000:]
        assert server.count() == called  # nothing was asked of the system
    data = json.loads(done.stdout)
    assert data["changes"] == [] and data["reproduced"] is True, data["changes"][:3]
    _assert_identical(work / "kgeval.duckdb", source, data["run_id"], kind)


def _assert_identical(db, source: str, derived: str, kind: str) -> None:  # noqa: ANN001
    with ResultsDB(db, read_only=True) as results:
        was, now = results.verdicts(source), results.verdicts(derived)
        assert [(q, s, v.model_dump()) for q, s, v in now] == [(q, s, v.model_dump()) for q, s, v in was]
        assert results.sealed_verdicts_sha256(derived) == results.sealed_verdicts_sha256(source) is not None
        attempts = {(a.question_id, a.seed): a for a in results.attempts(source)}
        states = {}
        for attempt in results.attempts(derived):
            then = attempts.pop((attempt.question_id, attempt.seed))
            kept = ("state", "error_kind", "error", "sparql", "answer", "stop_reason", "finish_reason", "served_version", "usage", "tries", "latency_ms")
            assert {k: getattr(attempt, k) for k in kept} == {k: getattr(then, k) for k in kept}, (attempt.question_id, attempt.seed)
            states[attempt.state if attempt.state != "error" else attempt.error_kind] = True
        assert not attempts
    if kind in ("http", "openai", "gemini", "replay"):  # the kinds made to hold harness errors
        assert set(states) - {"answered", "incomplete"}, states


def test_a_resumed_run_is_reproduced(tmp_path, mini_holdout, mini_gold):
    db, stopped = _killed(tmp_path, mini_holdout, mini_gold)  # three seeds, interrupted after 9 attempts
    with ResultsDB(db) as results:
        resumed = resume_run(stopped, results, lambda meta, c: system_from_name("oracle"), checklist=pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml"))
        assert resumed.resumed_at and results.status(stopped) == "finished"
    done = kgeval_in(tmp_path, "rejudge", stopped, "--db", str(db), "--format", "json")
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["reproduced"] is True and data["identical"] == data["verdicts"] > 0
    _assert_identical(db, stopped, data["run_id"], "oracle")
