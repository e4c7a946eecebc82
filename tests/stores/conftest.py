"""Session-scoped real servers (see servers.py) loaded with the test holdouts."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgeval.holdout import Holdout, load_holdout
from tests.conftest import REPO, write_holdout
from tests.stores.sigv4_verify import ACCESS_KEY, SECRET_KEY

T = "http://example.org/types/"
TYPES_TTL = f"""\
@prefix t: <{T}> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
t:a t:date "2024-01-31"^^xsd:date ; t:when "2024-01-31T10:15:00Z"^^xsd:dateTime ;
    t:flag true ; t:ratio "0.25"^^xsd:double ; t:n 7 ; t:big "12345678901234567890"^^xsd:integer ;
    t:name "Haus"@de, "house"@en-GB, "plain" ; t:str "typed"^^xsd:string ;
    t:addr [ t:city "Berlin" ; t:zip "10115" ] .
t:b t:addr [ t:city "Paris" ] .
"""
TP = f"PREFIX t: <{T}>\n"
TYPES_QUESTIONS = [
    {"id": "types-01", "question": "Typed values of a", "sparql": TP + "SELECT ?p ?o WHERE { t:a ?p ?o FILTER(isLiteral(?o)) }", "domain": "test", "tags": ["typed-literal"]},
    {"id": "types-02", "question": "Cities and zips", "sparql": TP + "SELECT ?s ?c ?z WHERE { ?s t:addr ?x . ?x t:city ?c OPTIONAL { ?x t:zip ?z } }", "domain": "test", "tags": ["list"]},
    {"id": "types-03", "question": "Address nodes", "sparql": TP + "SELECT ?x WHERE { ?s t:addr ?x }", "domain": "test", "tags": ["list"]},
    {"id": "types-04", "question": "English names", "sparql": TP + 'SELECT ?n WHERE { t:a t:name ?n FILTER(langMatches(lang(?n), "en")) }', "domain": "test", "tags": ["lang-literal"]},
    {"id": "types-05", "question": "Is the flag set?", "sparql": TP + "ASK { t:a t:flag true }", "domain": "test", "tags": ["ask"]},
    {"id": "types-06", "question": "Sum", "sparql": TP + "SELECT (SUM(?n) AS ?s) (COUNT(?x) AS ?c) WHERE { ?x t:n ?n }", "domain": "test", "tags": ["aggregate"]},
]
# Wikidata-style, with WDQS's label service in the reference queries (emulated by the guard as
# plain SPARQL: the same gold on every engine)
WIKIDATA_TTL = """\
@prefix wd: <http://www.wikidata.org/entity/> . @prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . @prefix schema: <http://schema.org/> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
wd:Q25188 rdfs:label "Inception"@en ; wdt:P57 wd:Q25191 ; wdt:P161 wd:Q38111, wd:Q99, wd:Q103 .
wd:Q25191 rdfs:label "Christopher Nolan"@en, "Christophe Nolan"@fr ; schema:description "British-American filmmaker"@en ;
    skos:altLabel "Chris Nolan"@en ; wdt:P19 wd:Q84 .
wd:Q38111 rdfs:label "Leonardo DiCaprio"@en .
wd:Q103 rdfs:label "Elliot Page"@en-gb .
wd:Q84 rdfs:label "London"@en, "Londres"@fr .
"""
WD = (
    "PREFIX wd: <http://www.wikidata.org/entity/>\nPREFIX wdt: <http://www.wikidata.org/prop/direct/>\n"
    "PREFIX wikibase: <http://wikiba.se/ontology#>\nPREFIX bd: <http://www.bigdata.com/rdf#>\nPREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"
)
LABELS = 'SERVICE wikibase:label { bd:serviceParam wikibase:language "[AUTO_LANGUAGE],en". }'
WIKIDATA_QUESTIONS = [
    {"id": "wd-01", "question": "Cast of Inception, named", "sparql": WD + f"SELECT ?a ?aLabel WHERE {{ wd:Q25188 wdt:P161 ?a . {LABELS} }}", "domain": "film", "tags": ["list"]},
    {"id": "wd-02", "question": "Director, in French", "sparql": WD + 'SELECT ?d ?dLabel ?dDescription WHERE { SERVICE wikibase:label { bd:serviceParam wikibase:language "fr,en" } wd:Q25188 wdt:P57 ?d }', "domain": "film", "tags": ["lookup"]},
    {"id": "wd-03", "question": "People and birthplaces", "sparql": WD + f"SELECT ?p ?placeLabel WHERE {{ wd:Q25188 wdt:P161|wdt:P57 ?p OPTIONAL {{ ?p wdt:P19 ?place }} {LABELS} }}", "domain": "film", "tags": ["list"]},
    {"id": "wd-04", "question": "Director's other names", "sparql": WD + f"SELECT ?d ?dAltLabel WHERE {{ wd:Q25188 wdt:P57 ?d . {LABELS} }}", "domain": "film", "tags": ["lookup"]},
    {"id": "wd-05", "question": "Cast by name", "sparql": WD + 'SELECT ?name WHERE { wd:Q25188 wdt:P161 ?a . SERVICE wikibase:label { bd:serviceParam wikibase:language "en" . ?a rdfs:label ?name } } ORDER BY ?name', "domain": "film", "tags": ["list"]},
]
AP = "http://example.org/approx/"
APPROX_RATINGS = [("6.1", "7.3", "8.2", "5.5", "7.8", "9.1", "6.6", "4.9")[(i * 5 + i // 8) % 8] for i in range(200)]
APPROX_MEAN = sum(float(r) for r in APPROX_RATINGS) / len(APPROX_RATINGS)
APPROX_TTL = f"@prefix ap: <{AP}> .\n@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n" + "".join(
    f'ap:item{i} ap:rating "{r}"^^xsd:float .\n' for i, r in enumerate(APPROX_RATINGS)
) + 'ap:japan ap:area "618832.9"^^xsd:double .\n'
APX = f"PREFIX ap: <{AP}> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
APPROX_QUESTIONS = [
    {"id": "approx-01", "question": "Average rating", "sparql": APX + "SELECT (AVG(?r) AS ?avg) WHERE { ?i ap:rating ?r }", "domain": "test", "tags": ["aggregate"]},
    {"id": "approx-02", "question": "Area of Japan", "sparql": APX + "SELECT ?a WHERE { ap:japan ap:area ?a }", "domain": "test", "tags": ["lookup"]},
    {"id": "approx-03", "question": "How many ratings?", "sparql": APX + "SELECT (COUNT(?r) AS ?n) WHERE { ?i ap:rating ?r }", "domain": "test", "tags": ["count"]},
]
from tests.stores.servers import RunningServer, start_fuseki, start_oxigraph, start_virtuoso, stop

CK25 = Path(os.environ.get("KGEVAL_CK25", "/nonexistent"))


@pytest.fixture(scope="session")
def server_holdouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Holdout]:
    """The holdouts every server is loaded with: the mini test holdout, one of typed literals
    and blank nodes, one of Wikidata's label service, one of approximate numbers (xsd:float, xsd:double), and the shipped sample
    holdout when the checkout has one."""
    holdouts = {
        "mini": load_holdout(write_holdout(tmp_path_factory.mktemp("mini") / "holdout")),
        "types": load_holdout(write_holdout(tmp_path_factory.mktemp("types") / "holdout", TYPES_QUESTIONS, TYPES_TTL, kg="types")),
        "wikidata": load_holdout(write_holdout(tmp_path_factory.mktemp("wikidata") / "holdout", WIKIDATA_QUESTIONS, WIKIDATA_TTL, kg="wikidata")),
        "approx": load_holdout(write_holdout(tmp_path_factory.mktemp("approx") / "holdout", APPROX_QUESTIONS, APPROX_TTL, kg="approx")),
    }
    if (REPO / "holdout" / "MANIFEST.json").is_file():
        holdouts["sample"] = load_holdout(REPO / "holdout")
    return holdouts


@pytest.fixture(scope="session")
def oxigraph_server(tmp_path_factory: pytest.TempPathFactory, server_holdouts) -> Iterator[RunningServer]:
    server = start_oxigraph(tmp_path_factory.mktemp("oxigraph"), server_holdouts)
    yield server
    stop(server.process)


@pytest.fixture(scope="session")
def virtuoso_server(tmp_path_factory: pytest.TempPathFactory, server_holdouts) -> Iterator[RunningServer]:
    server = start_virtuoso(tmp_path_factory.mktemp("virtuoso"), server_holdouts)
    yield server
    stop(server.process)


@pytest.fixture(scope="session")
def ck25_holdout(tmp_path_factory: pytest.TempPathFactory) -> Holdout | None:
    """CK25 ($KGEVAL_CK25) imported as a holdout (its files keep their `.graph` IRIs); None without it."""
    if not (CK25 / "questions.yml").is_file():
        return None
    from kgeval.interop import import_text2sparql

    out = tmp_path_factory.mktemp("ck25") / "holdout"
    import_text2sparql(CK25, "ck25", out)
    return load_holdout(out)


@pytest.fixture(scope="session")
def fuseki_server(tmp_path_factory: pytest.TempPathFactory, server_holdouts, ck25_holdout) -> Iterator[RunningServer]:
    """One Fuseki for the session, started from infra/fuseki/config.ttl with the test holdouts
    (and CK25 when $KGEVAL_CK25 is set, each file in the named graph its `.graph` names)."""
    holdouts = server_holdouts | ({"ck25": ck25_holdout} if ck25_holdout is not None else {})
    server = start_fuseki(tmp_path_factory.mktemp("fuseki"), holdouts)
    yield server
    stop(server.process)


@pytest.fixture(params=["oxigraph", "virtuoso", pytest.param("fuseki", marks=pytest.mark.fuseki)])
def sparql_server(request: pytest.FixtureRequest) -> RunningServer:
    """Each real SPARQL server in turn."""
    return request.getfixturevalue(f"{request.param}_server")


@pytest.fixture
def aws_test_credentials(monkeypatch, tmp_path):
    """Known keys in the environment, nothing else in boto3's chain (no files, no metadata service)."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
