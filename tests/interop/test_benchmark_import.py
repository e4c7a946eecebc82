"""Importing a whole benchmark at once: a QALD file over several KGs (--kg-dir, --kg-field),
several TEXT2SPARQL datasets, --replace of one KG, question types read from the reference
queries, ORDER BY marked order-sensitive, and RDF data Oxigraph refuses repaired with one
summary line per file instead of a warning per IRI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyoxigraph as ox
import pytest
import yaml
from typer.testing import CliRunner

from kgeval.cli import app
from kgeval.config import GoldConfig
from kgeval.gold import load_gold, rebuild_gold
from kgeval.holdout import load_holdout, verify_holdout
from kgeval.stores import EmbeddedStore

NS = "http://bench.example/{kg}/"


def _people_ttl(kg: str, n: int) -> str:
    ns = NS.format(kg=kg)
    lines = [f"@prefix ex: <{ns}> .", "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> ."]
    for i in range(n):
        lines.append(f'ex:p{i} a ex:Person ; ex:name "Person {i}"@en ; ex:age "{20 + i % 40}"^^xsd:integer ; ex:dept ex:d{i % 4} .')
    return "\n".join(lines) + "\n"


# messy on purpose: mixed-case keywords, comments, a nested sub-select, aggregates with AS,
# ORDER BY with and without LIMIT, ASK, a lookup from a fixed subject
TEMPLATES = [
    ("select ?d where {{ ex:p{i} ex:dept ?d }}", ["lookup"], False),
    ("SELECT DISTINCT ?p WHERE {{\n  ?p ex:dept ex:d{m} . # staff of one department\n}}", ["list"], False),
    ("Select (COUNT(?p) AS ?n) Where {{ ?p a ex:Person ; ex:age ?a . FILTER(?a > {age}) }}", ["count"], False),
    ("ASK {{ ex:p{i} ex:dept ex:d{m} }}", ["ask"], False),
    ("select ?d (avg(?a) as ?avg) where {{ ?p ex:dept ?d ; ex:age ?a }} group by ?d", ["aggregate"], False),
    ("SELECT ?p ?a WHERE {{ ?p ex:age ?a }} ORDER BY DESC(?a) ?p LIMIT 3", ["list", "order-limit"], True),
    ("SELECT ?d ?n WHERE {{\n  {{ select ?d (count(?p) as ?n) where {{ ?p ex:dept ?d }} GROUP BY ?d }}\n  FILTER(?n > 1)\n}}", ["aggregate"], False),
    ("SELECT ?name WHERE {{ ?p ex:name ?name }} order by ?name", ["list"], True),
]


def _qald_benchmark(root: Path, kgs: dict[str, str], per_kg: int) -> Path:
    """A QALD file over `kgs` (name -> how its data is laid out), the KG in field "kg"."""
    questions, n = [], 0
    for kg in kgs:
        prefix = f"PREFIX ex: <{NS.format(kg=kg)}>\n"
        for j in range(per_kg):
            body, _, _ = TEMPLATES[j % len(TEMPLATES)]
            n += 1
            questions.append({
                "id": str(n), "kg": kgs[kg],
                "question": [{"language": "en", "string": f"{kg} question {j}"}, {"language": "de", "string": f"{kg} Frage {j}"}],
                "query": {"sparql": prefix + body.format(i=j, m=j % 4, age=25 + j)},
                "answers": [],
            })  # fmt: skip
    path = root / "bench.json"
    path.write_text(json.dumps({"dataset": {"id": "bench-qald"}, "questions": questions}), encoding="utf-8")
    return path


@pytest.fixture
def benchmark(tmp_path: Path) -> tuple[Path, Path]:
    """(QALD file, KG directory): hr as one file, retail as a directory of two files, pharma as
    a Turtle file Oxigraph refuses (a \\# escape inside <...>, an IRI with a space)."""
    kg_dir = tmp_path / "kgs"
    (kg_dir / "retail").mkdir(parents=True)
    (kg_dir / "hr.ttl").write_text(_people_ttl("hr", 12), encoding="utf-8")
    people = _people_ttl("retail", 10).splitlines()
    (kg_dir / "retail" / "a.ttl").write_text("\n".join(people[:7]) + "\n", encoding="utf-8")
    (kg_dir / "retail" / "b.ttl").write_text("\n".join(people[:2] + people[7:]) + "\n", encoding="utf-8")
    ns = NS.format(kg="pharma")
    lines = [f'<{ns}p{i}> <{ns}dept> <{ns}d{i % 4}> .\n<{ns}p{i}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{ns}Person> .' for i in range(8)]
    lines += [f'<{ns}p{i}> <{ns}age> "{30 + i}"^^<http://www.w3.org/2001/XMLSchema#integer> .' for i in range(8)]
    lines += [f'<{ns}p{i}> <{ns}name> "Person {i}"@en .' for i in range(8)]
    lines += [f"<{ns}d0> <{ns}see> <{ns}doc\\#section{i}> ." for i in range(30)]  # rdflib keeps the backslash
    lines += [f"<{ns}d1> <{ns}see> <{ns}file {i}.pdf> ." for i in range(20)]  # "does not look like a valid URI"
    (kg_dir / "pharma.ttl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return _qald_benchmark(tmp_path, {"hr": "hr", "retail": "retail", "pharma": "pharma.ttl"}, per_kg=16), kg_dir


def _import(*args: str):
    return CliRunner().invoke(app, ["holdout", "import", *args])


def test_one_call_imports_every_kg_with_types_and_order(benchmark, tmp_path):
    qald, kg_dir = benchmark
    done = _import("qald", str(qald), "--kg-dir", str(kg_dir), "--kg-field", "kg", "--out", str(tmp_path / "h"))
    assert done.exit_code == 0, done.output
    holdout = load_holdout(tmp_path / "h")
    assert [kg.id for kg in holdout.kgs] == ["hr", "pharma", "retail"]
    assert sorted(p.name for p in holdout.kg("retail").files) == ["a.ttl", "b.ttl"]
    verify_holdout(tmp_path / "h")
    for kg in holdout.kgs:
        assert len(kg.questions) == 16 and {q.domain for q in kg.questions} == {kg.id}
        for j, q in enumerate(kg.questions):
            _, tags, ordered = TEMPLATES[j % len(TEMPLATES)]
            assert [t.value for t in q.tags] == tags, (q.id, q.sparql)
            assert q.order_sensitive == ordered, q.id
    assert holdout.kg("hr").questions[0].id == "hr-1" and holdout.kg("retail").questions[0].id == "retail-17"
    # per-type figures now mean something: every type is present
    assert {q.qtype for q in holdout.questions()} == {"lookup", "list", "count", "ask", "aggregate", "order-limit"}


def test_refused_rdf_is_repaired_and_summarized_in_one_line(benchmark, tmp_path):
    qald, kg_dir = benchmark
    done = _import("qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(tmp_path / "h"))
    assert done.exit_code == 0, done.output
    assert "does not look like a valid URI" not in done.output.replace("rdflib warnings 'does not look like a valid URI'", "")
    [line] = [ln for ln in done.output.splitlines() if "pharma" in ln and "data " in ln]
    assert "(from pharma.ttl)" in line and "82 triples" in line
    assert "30 IRIs with backslash escapes unescaped" in line and "20 IRIs with characters an IRI may not hold percent-encoded" in line
    assert "50 rdflib warnings 'does not look like a valid URI'" in line  # one line, not 50
    # the repaired KG loads in every store and the IRIs are what the escapes meant
    holdout = load_holdout(tmp_path / "h")
    store = EmbeddedStore(holdout.kg("pharma").files)
    result = store.execute(f"SELECT ?o WHERE {{ <{NS.format(kg='pharma')}d0> <{NS.format(kg='pharma')}see> ?o }}", timeout_s=60, row_cap=100)
    assert {row[0].value for row in result.rows} == {f"{NS.format(kg='pharma')}doc#section{i}" for i in range(30)}
    assert rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "g").ok
    assert len(load_gold(tmp_path / "g")) == 48


def test_no_order_by_sensitive_keeps_the_sources_word(benchmark, tmp_path):
    qald, kg_dir = benchmark
    done = _import("qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(tmp_path / "h"), "--no-order-by-sensitive")
    assert done.exit_code == 0, done.output
    assert not any(q.order_sensitive for q in load_holdout(tmp_path / "h").questions())


def test_replace_reimports_one_kg_and_reseals(benchmark, tmp_path):
    qald, kg_dir = benchmark
    out = tmp_path / "h"
    assert _import("qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(out)).exit_code == 0
    untouched = {p: p.read_bytes() for kg in ("pharma", "retail") for p in (out / kg).iterdir()}
    again = _import("qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(out))
    assert again.exit_code == 2 and "--replace hr" in again.output
    # the benchmark's hr KG gains people and loses a question
    (kg_dir / "hr.ttl").write_text(_people_ttl("hr", 20), encoding="utf-8")
    doc = json.loads(qald.read_text())
    doc["questions"] = [q for q in doc["questions"] if q["id"] != "2"]
    qald.write_text(json.dumps(doc))
    replaced = _import("qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(out), "--replace", "hr")
    assert replaced.exit_code == 0, replaced.output
    assert "replaced 15 questions" in replaced.output and "1 KG(s)" in replaced.output
    # the other KGs stay, and the summary says the holdout holds them too (not a silent merge)
    assert "into a holdout that already held 2 other KG(s): it now holds 3 KGs" in replaced.output, replaced.output
    holdout = load_holdout(out)
    assert len(holdout.kg("hr").questions) == 15 and "p19" in (out / "hr" / "hr.ttl").read_text()
    assert {p: p.read_bytes() for p in untouched} == untouched  # the other KGs as they were
    verify_holdout(out)  # resealed
    assert not list(tmp_path.glob(".h.*"))  # the old KG removed
    missing = _import("qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(out), "--replace", "finance")
    assert missing.exit_code == 2 and "finance" in missing.output


def test_a_failed_replace_leaves_the_old_kg(benchmark, tmp_path):
    qald, kg_dir = benchmark
    out = tmp_path / "h"
    assert _import("qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(out)).exit_code == 0
    before = (out / "hr" / "questions.yaml").read_text()
    doc = json.loads(qald.read_text())
    doc["questions"][0]["query"]["sparql"] = "SELECT ?x WHERE { ?x undeclared:p ?y }"
    qald.write_text(json.dumps(doc))
    failed = _import("qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(out), "--replace", "hr")
    assert failed.exit_code == 2 and "question 1: reference SPARQL" in failed.output
    assert (out / "hr" / "questions.yaml").read_text() == before
    verify_holdout(out)


def test_bad_benchmark_input_is_named(benchmark, tmp_path):
    qald, kg_dir = benchmark
    doc = json.loads(qald.read_text())
    del doc["questions"][3]["kg"]
    qald.write_text(json.dumps(doc))
    done = _import("qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(tmp_path / "h"))
    assert done.exit_code == 2 and "question 4: no 'kg' field naming its KG" in done.output
    doc["questions"][3]["kg"] = "finance"
    qald.write_text(json.dumps(doc))
    done = _import("qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(tmp_path / "h"))
    assert done.exit_code == 2 and "no data for KG 'finance'" in done.output
    both = _import("qald", str(qald), "--kg-dir", str(kg_dir), "--kg", str(kg_dir / "hr.ttl"), "--out", str(tmp_path / "h"))
    assert both.exit_code == 2 and "either --kg" in both.output
    assert not (tmp_path / "h").exists() or not any((tmp_path / "h").iterdir())


def _text2sparql_dataset(root: Path, kg: str, prefix: str) -> Path:
    ns = NS.format(kg=kg)
    (root / "graphs").mkdir(parents=True)
    (root / "graphs" / "data.ttl").write_text(_people_ttl(kg, 9), encoding="utf-8")
    (root / "graphs" / "data.ttl.graph").write_text(f"{ns}graph\n", encoding="utf-8")
    questions = [
        {"id": i + 1, "question": {"en": f"{kg} q{i}"}, "query": {"sparql": f"PREFIX ex: <{ns}>\n" + body.format(i=i, m=i % 4, age=30)}}
        for i, (body, _, _) in enumerate(TEMPLATES)
    ]
    doc = {"dataset": {"id": f"https://text2sparql.example/{kg}/", "prefix": prefix}, "questions": questions}
    (root / "questions.yml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return root


def test_several_text2sparql_datasets_at_once(tmp_path):
    a = _text2sparql_dataset(tmp_path / "corporate", "corporate", "corp")
    b = _text2sparql_dataset(tmp_path / "dbpedia-mini", "dbpedia", "dbp")
    done = _import("text2sparql", str(a), str(b), "--out", str(tmp_path / "h"))
    assert done.exit_code == 0, done.output
    holdout = load_holdout(tmp_path / "h")
    assert [kg.id for kg in holdout.kgs] == ["corporate", "dbpedia-mini"]
    assert [q.id for q in holdout.kg("dbpedia-mini").questions][:2] == ["dbp-1", "dbp-2"]
    assert {q.domain for q in holdout.kg("dbpedia-mini").questions} == {"dbpedia"}
    assert [[t.value for t in q.tags] for q in holdout.kg("corporate").questions] == [tags for _, tags, _ in TEMPLATES]
    assert "2 KG(s), 16 questions" in done.output
    named = _import("text2sparql", str(a), str(b), "--name", "x", "--out", str(tmp_path / "h2"))
    assert named.exit_code == 2 and "apply to one dataset" in named.output
    assert rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "g").ok


def test_help_names_each_importers_real_defaults():
    qald = CliRunner().invoke(app, ["holdout", "import", "qald", "--help"], env={"COLUMNS": "200"}).output
    t2s = CliRunner().invoke(app, ["holdout", "import", "text2sparql", "--help"], env={"COLUMNS": "200"}).output
    assert "dataset prefix" not in qald and "dataset id" not in qald and "default: its KG id" in qald
    assert "default: the dataset's prefix, else the KG id" in t2s


def test_repaired_iri_semantics_match_turtle_escapes(tmp_path):
    """A prefixed name's \\# is legal Turtle and means #: Oxigraph reads it so, and the repair
    of an IRIREF's \\# gives the same IRI."""
    ns = NS.format(kg="t")
    (tmp_path / "legal.ttl").write_text(f"@prefix ex: <{ns}> .\nex:s ex:p ex:a\\#b .\n", encoding="utf-8")
    [triple] = list(ox.parse(path=str(tmp_path / "legal.ttl"), format=ox.RdfFormat.TURTLE))
    assert triple.object.value == f"{ns}a#b"


def test_escaped_local_names_import_quietly_with_their_type(tmp_path, caplog):
    """QALD writes DBpedia's bracketed names as escaped prefixed names. rdflib, reading them
    for the question type, warned "... does not look like a valid URI" once per query on the
    console, above the import's own lines (the IRI it built kept the backslashes)."""
    ns = "http://dbpedia.org/resource/"
    (tmp_path / "kgs").mkdir()
    (tmp_path / "kgs" / "geo.nt").write_text(
        f"<{ns}Springfield_(Illinois)> <http://dbpedia.org/ontology/country> <{ns}United_States> .\n", encoding="utf-8"
    )
    sparql = (
        "PREFIX dbo: <http://dbpedia.org/ontology/>\nPREFIX res: <http://dbpedia.org/resource/>\n"
        "select distinct ?uri where { res:Springfield_\\(Illinois\\) dbo:country ?uri }"
    )
    doc = {"questions": [{"id": "1", "kg": "geo", "question": [{"language": "en", "string": "Country of Springfield?"}], "query": {"sparql": sparql}}]}
    (tmp_path / "q.json").write_text(json.dumps(doc), encoding="utf-8")
    with caplog.at_level("WARNING"):
        done = _import("qald", str(tmp_path / "q.json"), "--kg-dir", str(tmp_path / "kgs"), "--out", str(tmp_path / "h"))
    assert done.exit_code == 0, done.output
    assert not [r for r in caplog.records if "valid URI" in r.getMessage()], [r.getMessage() for r in caplog.records]
    [question] = load_holdout(tmp_path / "h").questions()
    assert [t.value for t in question.tags] == ["lookup"]
    report = rebuild_gold(load_holdout(tmp_path / "h"), lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "g")
    assert [row[0].value for row in load_gold(tmp_path / "g")["geo-1"].result.rows] == [ns + "United_States"] and report.ok


def test_every_bad_question_is_named_in_one_pass(benchmark, tmp_path):
    """A benchmark of a thousand questions with a few bad ones must not take one import per
    bad question: the import names them all (it stopped at the first), and writes nothing."""
    qald, kg_dir = benchmark
    doc = json.loads(qald.read_text())
    doc["questions"][0]["query"]["sparql"] = "SELECT DISTINCT ?uri WHERE { res:Berlin dbo:country ?uri }"  # QALD style, no PREFIX
    doc["questions"][5]["query"]["sparql"] = "PREFIX ex: <http://x/> SELECT ?x WHERE { ?x ex:p "
    doc["questions"][20]["question"] = [{"language": "de", "string": "Nur deutsch"}]
    qald.write_text(json.dumps(doc))
    done = _import("qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(tmp_path / "h"))
    assert done.exit_code == 2
    text = " ".join(done.output.split())
    assert "3 of 48 questions cannot be imported" in text, text
    assert "question 1: reference SPARQL" in text and "prefix res: is not declared" in text
    assert re.search(r"bench.json \(KG \S+\): question 1: reference SPARQL", text), text  # ids repeat across KGs: the KG is named
    assert "question 6: reference SPARQL" in text and "question 21: no 'en' text" in text
    assert not (tmp_path / "h").exists() or not any((tmp_path / "h").iterdir())


def test_a_reference_query_the_guard_refuses_is_imported_named_and_fails_at_rebuild(benchmark, tmp_path):
    """LC-QuAD-style DBpedia references call Virtuoso's full-text and other `bif:` functions:
    valid for the engine they were written for, refused by the read-only guard. One such
    question refused the whole import ("nothing was written"); it is now imported as written,
    named in the import's summary with the guard's reason, and `gold rebuild` records it failed
    (the run then waits until it is excluded on record), the rest of the benchmark built."""
    qald, kg_dir = benchmark
    doc = json.loads(qald.read_text())
    engine_call = "SELECT ?uri WHERE { ?uri a <http://dbpedia.org/ontology/City> . FILTER(bif:st_intersects(?uri, ?uri)) }"
    doc["questions"][3]["query"]["sparql"] = "PREFIX bif: <bif:>\n" + engine_call
    label = "<http://www.w3.org/2000/01/rdf-schema#label>"
    full_text = f"PREFIX bif: <bif:>\nSELECT ?uri WHERE {{ ?uri {label} ?l . ?l bif:contains 'Berl' . FILTER(bif:contains(?l, 'Berl')) }}"
    doc["questions"][4]["query"]["sparql"] = full_text
    qald.write_text(json.dumps(doc))
    done = _import("qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(tmp_path / "h"))
    assert done.exit_code == 0, done.output
    text = " ".join(done.output.split())
    assert "1 reference query the read-only guard refuses, imported as written" in text, text
    assert re.search(r"\S+-4: <bif:st_intersects> names an engine.s own procedure", text), text
    holdout = load_holdout(tmp_path / "h")
    assert len(holdout.questions()) == len(doc["questions"])
    refused = next(q for q in holdout.questions() if q.id.endswith("-4"))
    assert "bif:st_intersects" in refused.sparql
    report = rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "g")
    # the full-text query passes the guard (bif:contains is read-only) and fails in this engine,
    # which has no text index: both recorded failed, the other 46 built
    full = next(q for q in holdout.questions() if q.id.endswith("-5") and q.kg == refused.kg)
    assert not report.ok and [f.question_id for f in report.failures] == [refused.id, full.id], report.failures
    assert "bif:st_intersects" in report.failures[0].error and "bif:contains" in report.failures[1].error
    assert len(report.built) == len(doc["questions"]) - 2


@pytest.mark.parametrize("field", ["../private", "ABSOLUTE", "linked"])
def test_a_kg_field_naming_data_outside_the_kg_dir_is_refused(benchmark, tmp_path, field):
    # the KG field is the benchmark's text: `"kg": "../private"`, an absolute path or a link in
    # --kg-dir once copied any RDF directory on the machine into the holdout
    qald, kg_dir = benchmark
    private = tmp_path / "private"
    private.mkdir()
    (private / "secret.ttl").write_text('<http://p.example/s> <http://p.example/p> "secret" .\n', encoding="utf-8")
    (kg_dir / "linked").symlink_to(private, target_is_directory=True)
    doc = json.loads(qald.read_text(encoding="utf-8"))
    doc["questions"][0]["kg"] = str(private) if field == "ABSOLUTE" else field
    qald.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "h"
    done = _import("qald", str(qald), "--kg-dir", str(kg_dir), "--out", str(out))
    assert done.exit_code == 2, done.output
    assert "lies outside --kg-dir" in " ".join(done.output.split()), done.output
    assert not out.exists() or not list(out.rglob("secret.ttl"))
