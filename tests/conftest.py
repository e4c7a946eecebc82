"""Shared fixtures: a small sealed holdout built in a temporary directory, and its gold."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from kgeval.config import GoldConfig
from kgeval.gold import rebuild_gold
from kgeval.holdout import load_holdout, seal_holdout
from kgeval.stores import EmbeddedStore

CK25_MISSING = "CK25 not found: set KGEVAL_CK25 to the ck25 dataset directory (.ci/run sets it to ../shared/datasets/ck25)"
"""The one skip reason of every test that needs CK25 (the README's skip table names it)."""

REPO = Path(__file__).resolve().parent.parent
EX = "http://example.org/mini/"

MINI_TTL = textwrap.dedent(
    f"""\
    @prefix ex: <{EX}vocab/> .
    @prefix e: <{EX}entities/> .
    @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
    @prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
    e:alice a ex:Person ; rdfs:label "Alice"@en ; ex:age "34"^^xsd:integer ; ex:worksIn e:sales .
    e:bob a ex:Person ; rdfs:label "Bob"@en ; ex:age "41"^^xsd:integer ; ex:worksIn e:sales .
    e:carol a ex:Person ; rdfs:label "Carol"@en ; ex:age "29"^^xsd:integer ; ex:worksIn e:it .
    e:sales a ex:Dept ; rdfs:label "Sales"@en, "Vertrieb"@de .
    e:it a ex:Dept ; rdfs:label "IT"@en .
    """
) + "".join(f"e:item{i} a ex:Item ; ex:price \"{i}.50\"^^xsd:decimal .\n" for i in range(30))

# A query whose running time is unbounded on any KG: a cross product of 24 triple patterns
# (N^24 solutions: 10^24 rows for a KG of ten triples), read row by row. Every test that needs a
# query to outlive its deadline uses it, so no test depends on how fast the machine is: a bounded
# "slow" query (a cross product of 4 or 5 patterns) finished in 0.9 s on a loaded 2-core machine
# and failed a test expecting it to time out at 1 s. Rows stream, so a trusted in-process query
# stops reading at its deadline; a sandboxed one has its worker killed.
UNENDING = "SELECT * WHERE { " + " . ".join(f"?s{i} ?p{i} ?o{i}" for i in range(24)) + " }"

PREFIX = f"PREFIX ex: <{EX}vocab/> PREFIX e: <{EX}entities/> PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"

MINI_QUESTIONS = [
    {"id": "mini-01", "question": "Where does Alice work?", "sparql": PREFIX + "SELECT ?d WHERE { e:alice ex:worksIn ?d }", "domain": "hr", "tags": ["lookup"]},
    {"id": "mini-02", "question": "Who works in sales?", "sparql": PREFIX + "SELECT ?p WHERE { ?p ex:worksIn e:sales }", "domain": "hr", "tags": ["list"]},
    {"id": "mini-03", "question": "How many people are there?", "sparql": PREFIX + "SELECT (COUNT(?p) AS ?n) WHERE { ?p a ex:Person }", "domain": "hr", "tags": ["count"]},
    {"id": "mini-04", "question": "Is Carol in IT?", "sparql": PREFIX + "ASK { e:carol ex:worksIn e:it }", "domain": "hr", "tags": ["ask"]},
    {"id": "mini-05", "question": "Is Carol in sales?", "sparql": PREFIX + "ASK { e:carol ex:worksIn e:sales }", "domain": "hr", "tags": ["ask"]},
    {"id": "mini-06", "question": "List all items.", "sparql": PREFIX + "SELECT ?i WHERE { ?i a ex:Item }", "domain": "retail", "tags": ["list"]},
    {"id": "mini-07", "question": "Who is older than 100?", "sparql": PREFIX + "SELECT ?p WHERE { ?p ex:age ?a FILTER(?a > 100) }", "domain": "hr", "tags": ["empty"], "expect_empty": True},
    {"id": "mini-08", "question": "What is the German name of the sales department?", "sparql": PREFIX + 'SELECT ?l WHERE { e:sales rdfs:label ?l FILTER(lang(?l) = "de") }', "domain": "hr", "tags": ["lookup", "lang-literal"]},
]


def write_holdout(root: Path, questions: list[dict] | None = None, ttl: str = MINI_TTL, kg: str = "mini") -> Path:
    """Write a one-KG holdout under `root` and seal it."""
    kg_dir = root / kg
    kg_dir.mkdir(parents=True, exist_ok=True)
    (kg_dir / "kg.ttl").write_text(ttl, encoding="utf-8")
    doc = {"kg": kg, "title": "mini test KG", "questions": questions if questions is not None else MINI_QUESTIONS}
    (kg_dir / "questions.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    seal_holdout(root)
    return root


@pytest.fixture
def mini_holdout(tmp_path: Path) -> Path:
    return write_holdout(tmp_path / "holdout")


@pytest.fixture
def mini_gold(mini_holdout: Path, tmp_path: Path) -> Path:
    gold_dir = tmp_path / "gold"
    report = rebuild_gold(load_holdout(mini_holdout), lambda kg: EmbeddedStore(kg.files), GoldConfig(), gold_dir)
    assert report.ok, report.failures
    return gold_dir


def pytest_configure(config):  # noqa: ANN001
    """Compile kgeval's modules once, before the tests start some 700 `kgeval` processes: where
    PYTHONDONTWRITEBYTECODE is set (as on the project's machines) none of them writes the
    bytecode it compiles, so each compiled every module it imports again (0.2 CPU-s a process).
    Python reads bytecode files whatever that variable says. Workers of `-n auto` leave it to
    the process that starts them."""
    if sys.dont_write_bytecode and not hasattr(config, "workerinput"):
        import compileall

        compileall.compile_dir(REPO / "kgeval", quiet=1, workers=1)


def pytest_sessionfinish(session, exitstatus):  # noqa: ANN001, ARG001
    """gremlinpython leaks an aiohttp session when a websocket handshake is refused (the Neptune
    signature tests do that on purpose); collect it now so aiohttp's "Unclosed client session"
    lines print before pytest's summary, which then stays the last line of the run."""
    import gc

    gc.collect()


SHARED_SESSIONS = {"spark": "spark", "fuseki_server": "fuseki", "gremlin_server": "gremlin-server", "virtuoso_server": "virtuoso"}
"""Session fixtures that start a JVM or a database server, by the xdist group of their tests."""


def pytest_collection_modifyitems(config, items):  # noqa: ANN001, ARG001
    """Under `pytest -n auto` (pytest-xdist, `--dist loadgroup` in pyproject.toml) the tests of
    one Spark session or one server run on one worker, which starts it once, rather than on
    every worker (a Spark session or a JVM server costs 10-30 s to start on a 2-core machine)."""
    for item in items:
        params = getattr(item, "callspec", None)
        wanted = [*item.fixturenames, f"{params.params['sparql_server']}_server" if params and "sparql_server" in params.params else ""]
        group = next((SHARED_SESSIONS[name] for name in wanted if name in SHARED_SESSIONS), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
