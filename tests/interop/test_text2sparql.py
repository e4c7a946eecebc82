import os
from pathlib import Path

import pyoxigraph as ox
import pytest
import yaml
from typer.testing import CliRunner

from kgeval.cli import app
from kgeval.config import GoldConfig
from kgeval.errors import InputError
from kgeval.gold import rebuild_gold
from kgeval.holdout import load_holdout, verify_holdout
from kgeval.interop import import_text2sparql
from kgeval.stores import EmbeddedStore, QueryResult, rdf_format
from tests.conftest import CK25_MISSING

CK25 = Path(os.environ.get("KGEVAL_CK25", "/nonexistent"))
needs_ck25 = pytest.mark.skipif(
    not (CK25 / "questions.yml").is_file(),
    reason=CK25_MISSING,
)


def _dataset(root: Path, questions: list[dict], *, with_key_graph: bool = True) -> Path:
    (root / "graphs").mkdir(parents=True)
    (root / "graphs" / "kg.ttl").write_text("<http://x/a> <http://x/p> <http://x/b> .\n<http://x/b> <http://x/p> <http://x/c> .\n")
    (root / "graphs" / "kg.ttl.graph").write_text("http://x/graph/kg\n")
    if with_key_graph:
        literal = questions[0]["query"]["sparql"].replace("\n", "\\n")
        (root / "graphs" / "q.ttl").write_text(f'<http://x/q1> <http://x/text> "{literal}" .\n')
        (root / "graphs" / "q.ttl.graph").write_text("http://x/graph/queries")
    doc = {"dataset": {"id": "https://example.org/2025/toys/", "prefix": "toy"}, "questions": questions}
    (root / "questions.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


TOY = [
    {"id": 1, "question": {"en": "What does a point to?", "de": "Worauf zeigt a?"}, "features": ["SELECT"],
     "query": {"sparql": "SELECT ?o WHERE {\n  <http://x/a> <http://x/p> ?o\n}"}},
    {"id": 2, "question": {"en": "Does b point to c?", "de": "Zeigt b auf c?"}, "features": ["ASK"],
     "query": {"sparql": "ASK { <http://x/b> <http://x/p> <http://x/c> }"}},
    {"id": 3, "question": {"en": "How many links?", "de": "Wie viele Links?"}, "features": ["SELECT", "COUNT", "ORDER", "LIMIT", "RESULT_ORDER_MATTERS"],
     "query": {"sparql": "SELECT ?s (COUNT(?o) AS ?n) WHERE { ?s <http://x/p> ?o } GROUP BY ?s ORDER BY DESC(?n) LIMIT 1"}},
]


def test_import_keeps_graph_iris_leaves_out_the_answer_key_and_seals(tmp_path):
    report = import_text2sparql(_dataset(tmp_path / "src", TOY), "toys", tmp_path / "holdout", lang="de")
    assert report.files == {"kg.ttl": "http://x/graph/kg"}
    assert list(report.excluded) == ["q.ttl"] and "reference queries" in report.excluded["q.ttl"]
    verify_holdout(tmp_path / "holdout")
    kg = load_holdout(tmp_path / "holdout").kg("toys")
    assert [f.name for f in kg.files] == ["kg.ttl"] and kg.graphs == {"kg.ttl": "http://x/graph/kg"}
    assert kg.source["excluded_graphs"].keys() == {"q.ttl"} and kg.source["ids"]["toy-2"] == "2"
    q1, q2, q3 = kg.questions
    assert (q1.id, q1.question, q1.domain) == ("toy-1", "Worauf zeigt a?", "toys")
    assert [t.value for t in q2.tags] == ["ask"]
    # COUNT from the features; aggregate read from the query (a COUNT per group)
    assert [t.value for t in q3.tags] == ["aggregate", "count", "order-limit"] and q3.order_sensitive


def test_import_into_an_existing_holdout_adds_a_kg_and_reseals(tmp_path, mini_holdout):
    import_text2sparql(_dataset(tmp_path / "src", TOY), "toys", mini_holdout)
    assert {kg.id for kg in load_holdout(mini_holdout).kgs} == {"mini", "toys"}
    verify_holdout(mini_holdout)
    with pytest.raises(InputError, match="already exists"):
        import_text2sparql(tmp_path / "src", "toys", mini_holdout)


def test_refuses_to_reseal_a_tampered_holdout(tmp_path, mini_holdout):
    (mini_holdout / "mini" / "kg.ttl").write_text("<http://x/tampered> <http://x/p> 1 .\n")
    with pytest.raises(InputError, match="refusing to reseal"):
        import_text2sparql(_dataset(tmp_path / "src", TOY), "toys", mini_holdout)
    assert not (mini_holdout / "toys").exists()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda qs: qs[1]["question"].pop("en"), r"questions.yml: question 2: no 'en' text \(languages given: de\)"),
        (lambda qs: qs[2]["query"].update(sparql="SELECT ?x WHERE { ?x"), r"questions.yml: question 3: reference SPARQL: SPARQL does not parse"),
        (lambda qs: qs[0].pop("query"), r"questions.yml: question 1: no query.sparql"),
        (lambda qs: qs[2]["query"].update(sparql="DELETE WHERE { ?s ?p ?o }"), r"questions.yml: question 3: reference SPARQL: updates .* are refused"),
    ],
)
def test_errors_name_the_file_and_the_question(tmp_path, edit, message):
    questions = [dict(q, question=dict(q["question"]), query=dict(q["query"])) for q in TOY]
    edit(questions)
    src = _dataset(tmp_path / "src", questions, with_key_graph=False)
    with pytest.raises(InputError, match=message):
        import_text2sparql(src, "toys", tmp_path / "holdout")
    assert not (tmp_path / "holdout" / "toys").exists()


@needs_ck25
def test_ck25_imports_all_50_and_the_gold_rebuilds_with_a_named_report(tmp_path):
    report = import_text2sparql(CK25, "ck25", tmp_path / "holdout")
    assert report.questions == 50 and list(report.excluded) == ["queries.ttl"]
    holdout = load_holdout(tmp_path / "holdout")
    assert [q.id for q in holdout.questions()] == [f"ck25-{i}" for i in range(1, 51)]
    assert holdout.kg("ck25").graphs["prod-inst.ttl"] == "http://ld.company.org/prod-inst/"
    rebuilt = rebuild_gold(holdout, lambda kg: EmbeddedStore(kg.files), GoldConfig(), tmp_path / "gold")
    assert rebuilt.ok, rebuilt.failures
    flagged = rebuilt.flagged
    assert flagged["empty"] == [] and flagged["nondeterministic"] == [] and flagged["unchecked"] == []
    assert flagged["tied"] == ["ck25/ck25-29", "ck25/ck25-46", "ck25/ck25-50"]
    assert flagged["engine-dependent"] == ["ck25/ck25-37", "ck25/ck25-42"]  # xsd:int casts
    by_id = {e.question_id: e for e in rebuilt.entries}
    tie = by_id["ck25-50"].ties  # two departments are responsible for 12 products each; LIMIT 1
    assert [(len(g.candidates), g.choose, g.key[0].value) for g in tie.groups] == [(2, 1, "12")]


@needs_ck25
def test_ck25_default_graph_loading_answers_as_the_named_graphs_do(tmp_path):
    """Our layout (every kept file in the default graph and in its named graph) against the
    dataset's own: each file in its named graph, queried with the union of the graphs as default
    graph."""
    import_text2sparql(CK25, "ck25", tmp_path / "holdout")
    kg = load_holdout(tmp_path / "holdout").kg("ck25")
    ours = EmbeddedStore(kg.files, graphs=kg.graphs)
    named = ox.Store()
    for path in kg.files:
        named.bulk_load(path=str(path), format=rdf_format(path), to_graph=ox.NamedNode(kg.graphs[path.name]))
    for q in kg.questions:
        union = named.query(q.sparql, use_default_graph_as_union=True, custom_functions=_casts())
        expected = _as_result(union, ordered=ours.execute(q.sparql, timeout_s=60, row_cap=2000).ordered)
        assert ours.execute(q.sparql, timeout_s=60, row_cap=2000).sha256() == expected.sha256(), q.id


GRAPH_QUERIES = {  # a dataset whose reference queries name its graphs: FROM, GRAPH ?g, GRAPH <g>
    1: ("ASK FROM <http://x/graph/kg> { <http://x/a> <http://x/p> <http://x/b> }", True),
    2: ("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }", "3"),
    3: ("select (count(*) as ?n)\nFROM <http://x/graph/extra> # the second file only\nwhere { ?s ?p ?o }", "1"),
    4: ("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "3"),
    5: ("SELECT ?g WHERE { GRAPH ?g { <http://x/d> ?p ?o } }", "http://x/graph/extra"),
    6: ("ASK FROM <http://x/graph/extra> { <http://x/a> ?p ?o }", False),
}


def test_reference_and_candidate_queries_read_the_named_graphs_the_files_came_from(tmp_path):
    """Each file is in its named graph as well as in the default graph (an endpoint with a union
    default graph): FROM and GRAPH read the graphs, a plain query all the data. Before, every
    file was in the default graph only: the ASK FROM was false and the counts 0, silently."""
    src = _dataset(tmp_path / "src", [{"id": i, "question": {"en": f"q{i}"}, "query": {"sparql": q}} for i, (q, _) in GRAPH_QUERIES.items()],
                   with_key_graph=False)  # fmt: skip
    (src / "graphs" / "extra.ttl").write_text("<http://x/d> <http://x/p> <http://x/e> .\n")
    (src / "graphs" / "extra.ttl.graph").write_text("http://x/graph/extra\n")
    import_text2sparql(src, "toys", tmp_path / "holdout")
    holdout = load_holdout(tmp_path / "holdout")
    kg = holdout.kg("toys")
    report = rebuild_gold(holdout, lambda k: EmbeddedStore(k.files, graphs=k.graphs), GoldConfig(), tmp_path / "gold")
    assert report.ok, report.failures
    from kgeval.gold import load_gold

    gold = load_gold(tmp_path / "gold")
    got = {int(qid.split("-")[1]): (e.result.boolean if e.result.form == "ask" else e.result.rows[0][0].value) for qid, e in gold.items()}
    assert got == {i: expected for i, (_, expected) in GRAPH_QUERIES.items()}
    store = EmbeddedStore(kg.files, graphs=kg.graphs)  # a candidate's query runs in a sandbox worker: the same data
    result, resources = store.execute_candidate(GRAPH_QUERIES[3][0], timeout_s=30, row_cap=100)
    assert resources.sandboxed and result.rows[0][0].value == "1"
    assert store.data_sha256 != EmbeddedStore(kg.files).data_sha256  # the graphs are part of the data version
    store.close()


def _casts():
    from kgeval.stores._functions import DERIVED_INTEGER_CASTS

    return DERIVED_INTEGER_CASTS


def _as_result(solutions, ordered: bool) -> QueryResult:
    from kgeval.stores._embedded import term_from_oxigraph
    from kgeval.stores import collect_rows

    if isinstance(solutions, ox.QueryBoolean):
        return QueryResult(form="ask", boolean=bool(solutions), total=1)
    variables = solutions.variables
    rows, total = collect_rows(([term_from_oxigraph(s[v]) for v in variables] for s in solutions), row_cap=2000, ordered=ordered)
    return QueryResult(form="select", vars=[v.value for v in variables], rows=rows, total=total, truncated=total > len(rows), ordered=ordered)


@needs_ck25
def test_cli_imports_ck25_and_rebuild_names_the_tied_questions(tmp_path):
    runner = CliRunner()
    imported = runner.invoke(app, ["holdout", "import", "text2sparql", str(CK25), "--name", "ck25", "--out", str(tmp_path / "h")])
    assert imported.exit_code == 0, imported.output
    assert "imported 50 questions" in imported.output and "left out queries.ttl" in imported.output
    rebuilt = runner.invoke(app, ["gold", "rebuild", "--holdout", str(tmp_path / "h"), "--gold", str(tmp_path / "g")])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "tied (3): ck25/ck25-29, ck25/ck25-46, ck25/ck25-50" in rebuilt.output
    assert "empty (0): -" in rebuilt.output


@pytest.mark.parametrize("linked", ["extra.nt", "kg.ttl.graph"])
def test_a_symbolic_link_out_of_the_dataset_is_refused(tmp_path, linked):
    """A dataset's graphs/ linking out of it copied any RDF file on the machine into the holdout
    (or any file's text into questions.yaml as a graph IRI)."""
    src = _dataset(tmp_path / "src", TOY)
    private = tmp_path / "private.nt"
    private.write_text('<http://p.example/s> <http://p.example/p> "secret" .\n')
    link = src / "graphs" / linked
    link.unlink(missing_ok=True)
    link.symlink_to(private)
    with pytest.raises(InputError, match="a symbolic link out of"):
        import_text2sparql(src, "toys", tmp_path / "holdout")
    assert not (tmp_path / "holdout").exists() or "secret" not in "".join(p.read_text() for p in (tmp_path / "holdout").rglob("*") if p.is_file())
