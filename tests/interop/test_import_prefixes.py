"""Reference queries written for an endpoint with predefined prefixes (QALD over DBpedia's
Virtuoso: `dbo:`, `res:`, `dbp:` used undeclared): without `--prefix` the import names every
such question and the option that fixes it; with `--prefix`/`--prefixes` the stored query
declares what it used, and its gold equals pyoxigraph's own answer to the original text with
those prefixes predefined (`Store.query(prefixes=...)`, the engine emulating the endpoint)."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest
from typer.testing import CliRunner

from kgeval.cli import app
from kgeval.config import GoldConfig
from kgeval.errors import InputError
from kgeval.gold import load_gold, rebuild_gold
from kgeval.holdout import load_holdout
from kgeval.interop import declare_prefixes, prefix_table
from kgeval.stores import EmbeddedStore

DBPEDIA = {
    "dbo": "http://dbpedia.org/ontology/",
    "res": "http://dbpedia.org/resource/",
    "dbp": "http://dbpedia.org/property/",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
}
CITIES = [("Berlin", "Germany", 3645000), ("Hamburg", "Germany", 1841000), ("Paris", "France", 2161000),
          ("Lyon", "France", 513000), ("Springfield_(Illinois)", "United_States", 114000), ("Rome", "Italy", 2873000)]  # fmt: skip

# QALD-style: undeclared prefixes, mixed case, comments and strings that mention a prefix
# (not uses), one query declaring one prefix itself, one with a different IRI for `dbp:`
QUERIES = [
    "SELECT DISTINCT ?uri WHERE { ?uri dbo:country res:Germany . } # all German cities, dbo:City",
    "select (COUNT(?c) as ?n) where {\n  ?c dbo:country res:France . # count\n}",
    "ASK WHERE { res:Rome dbo:country res:Italy }",
    "PREFIX dbo: <http://dbpedia.org/ontology/>\nSELECT ?pop WHERE { res:Berlin dbo:populationTotal ?pop }",
    'select ?c where { ?c rdfs:label ?l . FILTER(CONTAINS(?l, "res:")) }',
    "SELECT ?c WHERE { ?c dbo:populationTotal ?p } ORDER BY DESC(?p) LIMIT 2",
    "select ?l where { res:Springfield_\\(Illinois\\) rdfs:label ?l }",
    "PREFIX dbp: <http://other.example/p/>\nASK { res:Lyon dbp:x ?y }",
]


def _kg_ttl() -> str:
    lines = [f"@prefix {p}: <{iri}> ." for p, iri in DBPEDIA.items()]
    for city, country, pop in CITIES:
        iri = f"<{DBPEDIA['res']}{city}>"
        lines.append(f'{iri} dbo:country res:{country} ; dbo:populationTotal {pop} ; rdfs:label "{city} res:{city}"@en .')
    return "\n".join(lines) + "\n"


@pytest.fixture
def qald(tmp_path: Path) -> tuple[Path, Path]:
    kg = tmp_path / "dbpedia.ttl"
    kg.write_text(_kg_ttl(), encoding="utf-8")
    questions = [
        {"id": str(i), "question": [{"language": "en", "string": f"question {i}"}], "query": {"sparql": q}}
        for i, q in enumerate(QUERIES, 1)
    ]
    path = tmp_path / "qald.json"
    path.write_text(json.dumps({"dataset": {"id": "qald-dbpedia"}, "questions": questions}), encoding="utf-8")
    return path, kg


def _import(path: Path, kg: Path, out: Path, *extra: str):
    return CliRunner().invoke(app, ["holdout", "import", "qald", str(path), "--name", "dbpedia", "--kg", str(kg), "--out", str(out), *extra])


def test_undeclared_prefixes_are_named_with_the_option_that_declares_them(qald, tmp_path):
    path, kg = qald
    result = _import(path, kg, tmp_path / "holdout")
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "8 of 8 questions cannot be imported" in text  # each uses res: undeclared (4 declares dbo: only)
    for prefix in ("dbo", "res", "rdfs"):
        assert f"--prefix {prefix}=<namespace IRI>" in text
    assert not (tmp_path / "holdout" / "dbpedia").exists()


def test_a_query_that_really_does_not_parse_is_not_lost_among_undeclared_prefixes(tmp_path):
    """Thirty questions over DBpedia's predefined prefixes and one broken query that declares
    its own: the error counts the undeclared prefixes on one line and lists the broken query
    first, where 25 lines of `dbo:` used to hide it."""
    kg = tmp_path / "dbpedia.ttl"
    kg.write_text(_kg_ttl(), encoding="utf-8")
    sparqls = [QUERIES[i % 3] for i in range(30)]
    sparqls.insert(17, "PREFIX dbo: <http://dbpedia.org/ontology/>\nSELECT ?c WHERE { ?c dbo:country ?x   # unclosed")
    questions = [{"id": str(i), "question": [{"language": "en", "string": f"q {i}"}], "query": {"sparql": q}} for i, q in enumerate(sparqls, 1)]
    path = tmp_path / "qald.json"
    path.write_text(json.dumps({"questions": questions}), encoding="utf-8")
    result = _import(path, kg, tmp_path / "holdout")
    assert result.exit_code == 2, result.output
    lines = [" ".join(line.split()) for line in result.output.splitlines()]
    assert "31 of 31 questions cannot be imported" in lines[0]
    assert lines[1].startswith("30 use prefixes they do not declare (the first one each: dbo: in 20, res: in 10)") and "--prefixes FILE" in lines[1], lines[1]
    assert "question 18: reference SPARQL: SPARQL does not parse near" in lines[2] and "dbo:country ?x ⟨here⟩" in lines[2], lines[2]
    assert "one space between terms" in lines[2]


def test_declared_prefixes_give_the_endpoints_answers(qald, tmp_path):
    path, kg = qald
    table = tmp_path / "dbpedia.prefixes"
    table.write_text("# DBpedia's predefined prefixes\nPREFIX dbo: <http://dbpedia.org/ontology/>\n\n"
                     "@prefix res: <http://dbpedia.org/resource/> .\n", encoding="utf-8")  # fmt: skip
    out = tmp_path / "holdout"
    result = _import(path, kg, out, "--prefixes", str(table), "--prefix", "dbp=http://dbpedia.org/property/",
                     "--prefix", f"rdfs={DBPEDIA['rdfs']}")  # fmt: skip
    assert result.exit_code == 0, result.output
    holdout = load_holdout(out)
    stored = {q.id: q.sparql for q in holdout.kg("dbpedia").questions}
    for i, original in enumerate(QUERIES, 1):
        assert stored[f"dbpedia-{i}"].endswith(original)  # declarations put before, the text kept
    assert "PREFIX dbp: <http://other.example/p/>" in stored["dbpedia-8"]  # its own IRI kept
    assert "dbpedia.org/property" not in stored["dbpedia-8"]

    gold_dir = tmp_path / "gold"
    assert rebuild_gold(holdout, lambda kg_: EmbeddedStore(kg_.files), GoldConfig(), gold_dir).ok
    gold = load_gold(gold_dir)
    engine = ox.Store()
    engine.bulk_load(path=str(kg), format=ox.RdfFormat.TURTLE)
    for i, original in enumerate(QUERIES, 1):
        answer = engine.query(original, prefixes=DBPEDIA)  # the endpoint's own predefined prefixes
        ask = isinstance(answer, ox.QueryBoolean)
        expected = bool(answer) if ask else sorted(s[0].value for s in answer)
        result = gold[f"dbpedia-{i}"].result
        got = result.boolean if ask else sorted(row[0].value for row in result.rows)
        assert got == expected, (i, original)
    assert gold["dbpedia-1"].result.rows and gold["dbpedia-7"].result.rows  # not vacuous: the KG answers them


def test_a_prefix_used_only_in_strings_and_comments_is_not_declared():
    query = 'SELECT ?c WHERE { ?c ?p "dbo:City" } # dbo:City'
    assert declare_prefixes(query, DBPEDIA) == query


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["dbo"], "expected NAME=IRI"),
        (["dbo=not an iri"], "not a prefix name and an absolute IRI"),
        (["1x=http://a.example/"], "not a prefix name"),
        (["dbo=http://a.example/", "dbo=http://b.example/"], "prefix dbo: is already <http://a.example/>"),
    ],
)
def test_bad_prefix_options_are_named(pairs, message):
    with pytest.raises(InputError, match=message):
        prefix_table(pairs, [])


def test_a_bad_prefix_file_line_is_named(tmp_path):
    table = tmp_path / "p.ttl"
    table.write_text("PREFIX dbo: <http://dbpedia.org/ontology/>\ndbo http://x\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"p\.ttl:2: expected 'PREFIX name: <iri>'"):
        prefix_table([], [table])
