import json
import re

import pytest

from kgeval.errors import InputError
from kgeval.holdout import Question, load_holdout
from kgeval.systems import OracleSystem, ReplaySystem, WeakSystem, system_from_name
from tests.conftest import REPO

Q = Question(id="hr-01", question="?", sparql="SELECT ?x WHERE {?x ?p ?o}", domain="hr", kg="hr")


def test_oracle_answers_with_reference():
    assert OracleSystem().respond(Q, 0).sparql == Q.sparql


def test_controls_answer_a_property_graph_question_in_gremlin():
    """A Gremlin question has no SPARQL: the oracle gave an empty query (0% correct, so every
    run on a Gremlin store was refused by the checklist's oracle item)."""
    pg = Q.model_copy(update={"sparql": "", "gremlin": "g.V().hasLabel('person').count()"})
    assert OracleSystem().respond(pg, 0).sparql == pg.gremlin
    outputs = {WeakSystem().respond(pg.model_copy(update={"id": f"g{i}"}), 0).sparql for i in range(30)}
    assert outputs == {pg.gremlin, "g.V().label().dedup().order().limit(7)"}


def test_weak_is_deterministic_and_mostly_wrong():
    weak = WeakSystem()
    qs = [Q.model_copy(update={"id": f"q{i}"}) for i in range(300)]
    outputs = [weak.respond(q, s).sparql for q in qs for s in range(3)]
    assert outputs == [weak.respond(q, s).sparql for q in qs for s in range(3)]
    share = sum(o == Q.sparql for o in outputs) / len(outputs)
    assert 0.2 < share < 0.45


def test_replay_reads_attempts_by_kg_question_seed(tmp_path):
    path = tmp_path / "r.jsonl"
    records = [
        {"kg": "hr", "question_id": "hr-01", "answer": ["a"]},
        {"kg": "hr", "question_id": "hr-01", "seed": 1, "sparql": "ASK {}", "stop_reason": "length"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    replay = ReplaySystem(path)
    assert replay.respond(Q, 0).answer == ["a"]
    assert replay.respond(Q, 1).stop_reason == "length"
    missing = replay.respond(Q, 2)
    assert missing.error and missing.stop_reason == "missing"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"kg": "hr", "question_id": "hr-01", "answer": []}\n{not json\n', r"r.jsonl:2: not valid JSON"),
        ('{"kg": "hr", "answer": []}\n', r"r.jsonl:1: question_id: Field required"),
        ('{"kg": "hr", "question_id": "hr-01"}\n', r"r.jsonl:1: record has none of 'sparql', 'answer', 'text'"),
        ('{"kg": "hr", "question_id": "hr-01", "text": "x", "sparql": "ASK {}"}\n', r"r.jsonl:1: record has both 'text' and 'sparql'"),
        ('{"kg": "hr", "question_id": "hr-01", "answer": []}\n' * 2, r"r.jsonl:2: a second record"),
    ],
)
def test_replay_errors_name_the_line(tmp_path, content, message):
    path = tmp_path / "r.jsonl"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        ReplaySystem(path)


@pytest.mark.parametrize(
    ("content", "held"),
    [("", "0 bytes"), ("\n\n   \n", "blank lines only"), ("[]\n", "3 bytes, no answer for a question of the holdout")],
    ids=["0 bytes", "blank lines", "an empty TEXT2SPARQL list"],
)
def test_a_replay_file_without_records_is_refused(tmp_path, content, held):
    """A predictions file with no record ran: every attempt a missing answer, accuracy withheld,
    a run stored for nothing. It is an error naming the file, before anything is dispatched."""
    from tests.cli.test_cli import kgeval

    path = tmp_path / "answers.jsonl"
    path.write_text(content)
    with pytest.raises(InputError, match=re.escape(f"{path}: contains no replay records ({held}): nothing to replay")):
        ReplaySystem(path, load_holdout(REPO / "holdout"))
    if not content:
        db = tmp_path / "r.duckdb"
        ran = kgeval("run", "--system", "replay", "--replay", str(path), "--seeds", "1", "--db", str(db))
        assert ran.returncode == 2 and f"{path}: contains no replay records (0 bytes)" in " ".join(ran.stderr.split()), ran.stderr
        assert "Traceback" not in ran.stderr and not db.exists()


def test_replayed_model_output_is_read_as_a_live_model_reads_it(tmp_path):
    """Pipeline parity: recorded raw output (a public benchmark's predictions are often the
    model's whole response) gives the query a live prompted system would have run."""
    from kgeval.systems._prompt import output_from_text

    query = "PREFIX ex: <http://x/>\nselect ?p where { ?p ex:dept ex:d1 } # staff"
    texts = [
        f"Here is the query:\n```sparql\n{query}\n```\nIt lists the staff.",
        f"```\n{query}\n```",
        "I cannot answer that from the schema.",  # no query at a natural stop: the model's failure
        "",
    ]
    records = [{"kg": "hr", "question_id": "hr-01", "seed": i, "text": t} for i, t in enumerate(texts)]
    records.append({"kg": "hr", "question_id": "hr-01", "seed": 9, "sparql": f"```sparql\n{query}\n```"})
    records.append({"kg": "hr", "question_id": "hr-01", "seed": 10, "sparql": "# a comment first\n" + query})
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    replay = ReplaySystem(path)
    for i, text in enumerate(texts):
        live = output_from_text(text, "stop")
        got = replay.respond(Q, i)
        assert (got.sparql, got.error_kind, got.raw_text) == (live.sparql, live.error_kind, live.raw_text), text
    assert replay.respond(Q, 0).sparql == replay.respond(Q, 1).sparql == query
    assert replay.respond(Q, 2).error_kind == "invalid_sparql"
    assert replay.respond(Q, 9).sparql == query  # a code block in the sparql field
    assert replay.respond(Q, 10).sparql == "# a comment first\n" + query  # no block: verbatim


def test_system_names():
    with pytest.raises(InputError, match="--replay"):
        system_from_name("replay")
    with pytest.raises(InputError, match="unknown system"):
        system_from_name("gpt")


def test_a_missing_replay_file_is_named_not_a_traceback(tmp_path):
    """`kgeval run --system replay --replay answers.json` with the file not there (a typo, the
    wrong directory) gave a FileNotFoundError traceback, exit 1."""
    from tests.cli.test_cli import kgeval

    missing = tmp_path / "answers.json"
    with pytest.raises(InputError, match="answers.json: replay file does not exist"):
        ReplaySystem(missing)
    ran = kgeval("run", "--system", "replay", "--replay", str(missing), "--seeds", "1", "--db", str(tmp_path / "r.duckdb"))
    assert ran.returncode == 2 and "replay file does not exist" in ran.stderr and "Traceback" not in ran.stderr, ran.stderr


@pytest.mark.parametrize(
    "text",
    [
        "```sql\nSELECT ?x WHERE { ?x ?p ?o }\n```",
        "```rq\nSELECT ?x WHERE { ?x ?p ?o }\n```",
        "``` sparql\nSELECT ?x WHERE { ?x ?p ?o }\n```",
        "```SPARQL\r\nSELECT ?x WHERE { ?x ?p ?o }\r\n```",
        "Here it is:\n```sparql SELECT ?x WHERE { ?x ?p ?o }```",
        "```SELECT ?x WHERE { ?x ?p ?o }```",
        "The query:\n```\nSELECT ?x WHERE { ?x ?p ?o }\n```\nIt lists everything.",
    ],
)
def test_a_code_blocks_language_tag_is_not_part_of_the_query(text):
    """```sql, ```rq, ``` sparql (a word alone on the fence's line) is the block's info string:
    it was kept as the query's first line ('sql\\nSELECT ...'), and a right query did not parse."""
    from kgeval.systems._prompt import extract_sparql

    assert " ".join(extract_sparql(text).split()) == "SELECT ?x WHERE { ?x ?p ?o }"


def test_a_query_opening_the_block_is_not_taken_for_its_language_tag():
    from kgeval.systems._prompt import extract_sparql

    assert extract_sparql("```SELECT\n  ?x WHERE { ?x ?p ?o }\n```") == "SELECT\n  ?x WHERE { ?x ?p ?o }"
    assert extract_sparql("```PREFIX a: <http://a/>\nASK { ?s a:p ?o }```") == "PREFIX a: <http://a/>\nASK { ?s a:p ?o }"


def test_a_run_imports_no_model_client_and_no_contamination_check(mini_holdout, mini_gold, tmp_path):
    """`kgeval run` of a control (or recorded) system imports neither the model and endpoint
    systems and their clients nor kgeval.guards (the contamination check's pyarrow and numpy),
    nor scipy for its closing summary: they were a third of a run's imports (issue 43)."""
    import subprocess
    import sys

    ran = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kgeval", "run", "--system", "oracle", "--seeds", "1",
         "--holdout", str(mini_holdout), "--gold", str(mini_gold), "--db", str(tmp_path / "r.duckdb")],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    imported = {line.split("|")[-1].strip() for line in ran.stderr.splitlines() if line.startswith("import time:")}
    assert {"kgeval.runs", "kgeval.systems._replay", "kgeval.reports"} <= imported  # the log is read
    unused = {"kgeval.guards", "kgeval.systems._gemini", "kgeval.systems._openai", "kgeval.systems._http", "httpx", "pyarrow", "numpy", "scipy"}
    assert not imported & unused
