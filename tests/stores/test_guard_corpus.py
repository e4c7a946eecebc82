"""The guard and the engine read the same query (DESIGN invariant 12, issue 16).

Every text of `sparql_tricks` is either refused with a named error or executed exactly as the
guard wrote it (`QueryShape.text`), on every store kind: the embedded store, a SPARQL endpoint
(the text each request carries), Neptune (a loopback stand-in: Neptune cannot run here), and
the real Oxigraph and Virtuoso servers. A recording loopback listener, the target of every
SERVICE in the corpus, must see zero requests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest

import kgeval.errors as errors
from kgeval.config import StoreConfig
from kgeval.stores import EmbeddedStore, QueryShape, guard_query, open_store
from kgeval.stores._sparql import SparqlEndpointStore
from kgeval.stores._rewrite import with_neptune_timeout_hint
from tests.stores.loopback import ASK_TRUE, Recorded, loopback
from tests.stores.sigv4_verify import REGION
from tests.stores.sparql_tricks import ACCEPTED, REFUSED

TTL = "<http://x/a> <http://x/p> 7 .\n<http://x/b> <http://x/p> 3 .\n<http://x/a> <http://x/p#q> <http://y/service> .\n"
EMPTY_SELECT = (200, {"Content-Type": "application/sparql-results+json"}, json.dumps({"head": {"vars": ["s"]}, "results": {"bindings": []}}).encode())


def empty_answer(request: Recorded) -> tuple[int, dict[str, str], bytes]:
    """An empty answer of the form the request asks for."""
    return ASK_TRUE if parse_qs(request.body.decode())["query"][0].startswith("ASK") else EMPTY_SELECT


@pytest.fixture(scope="module")
def module_listener() -> Iterator[tuple[str, list[Recorded]]]:
    with loopback() as served:
        yield served


@pytest.fixture
def listener(module_listener) -> tuple[str, list[Recorded]]:
    """The address every SERVICE in the corpus names, and the requests it receives (one
    listener for the module, emptied before each test)."""
    module_listener[1].clear()
    return module_listener


class _RecordingEngine:
    """The real pyoxigraph store, remembering each text it is asked to run."""

    def __init__(self, inner) -> None:  # noqa: ANN001
        self.inner, self.texts = inner, []

    def query(self, text: str, **kwargs):  # noqa: ANN003, ANN201
        self.texts.append(text)
        return self.inner.query(text, **kwargs)


@pytest.fixture
def embedded(tmp_path: Path) -> tuple[EmbeddedStore, _RecordingEngine]:
    (tmp_path / "kg.ttl").write_text(TTL)
    store = EmbeddedStore([tmp_path / "kg.ttl"])
    engine = store._local_store = _RecordingEngine(store._store)  # noqa: SLF001 - watch what the engine is sent (the KG loaded first)
    return store, engine


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_with_a_named_error_on_the_embedded_store(case, listener, embedded):
    url, recorded = listener
    text, error = REFUSED[case]
    with pytest.raises(getattr(errors, error)):
        guard_query(text.replace("{url}", url))
    store, engine = embedded
    with pytest.raises(getattr(errors, error)):
        store.execute(text.replace("{url}", url), timeout_s=60, row_cap=10)
    assert engine.texts == [] and recorded == []


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_accepted_runs_exactly_as_guarded_on_the_embedded_store(case, listener, embedded):
    url, recorded = listener
    text, variables = ACCEPTED[case]
    shape = guard_query(text.replace("{url}", url))
    assert shape.variables == variables
    assert guard_query(shape.text) == shape  # the approved text reads the same way again
    store, engine = embedded
    store.execute(text.replace("{url}", url), timeout_s=60, row_cap=10)
    assert engine.texts == [shape.text]
    assert recorded == []


def _endpoint_kinds(url: str) -> dict[str, StoreConfig]:
    return {
        "sparql": StoreConfig(kind="sparql", endpoint=url + "/sparql", data_version="v"),
        # Neptune cannot run here: a loopback server stands in for its HTTPS endpoint
        "neptune-sparql": StoreConfig(kind="neptune-sparql", endpoint=url + "/sparql", data_version="v", region=REGION, allow_insecure_http=True),
    }


@pytest.mark.usefixtures("aws_test_credentials")
@pytest.mark.parametrize("kind", ["sparql", "neptune-sparql"])
def test_endpoint_stores_send_only_the_guarded_text(kind, listener):
    service_url, service_calls = listener
    with loopback(empty_answer) as (endpoint_url, requests):
        store = open_store(_endpoint_kinds(endpoint_url)[kind], [])
        for case, (text, _) in sorted(ACCEPTED.items()):
            shape = guard_query(text.replace("{url}", service_url))
            # Neptune: the approved text with its queryTimeout hint, itself approved again
            sent = with_neptune_timeout_hint(shape.text, 60_000) if kind == "neptune-sparql" else shape.text
            requests.clear()
            store.execute(text.replace("{url}", service_url), timeout_s=60, row_cap=10)
            assert [parse_qs(r.body.decode())["query"] for r in requests] == [[sent]], case
        requests.clear()
        for case, (text, error) in sorted(REFUSED.items()):
            with pytest.raises(getattr(errors, error)):
                store.execute(text.replace("{url}", service_url), timeout_s=60, row_cap=10)
        assert requests == []
    assert service_calls == []


@pytest.mark.parametrize("server", ["oxigraph_server", "virtuoso_server"])
def test_real_servers_never_call_out(server, listener, request):
    url, recorded = listener
    store = SparqlEndpointStore(request.getfixturevalue(server).endpoint, data_version="test")
    for case, (text, _) in sorted(ACCEPTED.items()):
        try:
            store.execute(text.replace("{url}", url), timeout_s=30, row_cap=10)
        except errors.StoreError:
            pass  # a server may not support a function: what matters is where it sent requests
    for case, (text, error) in sorted(REFUSED.items()):
        with pytest.raises(getattr(errors, error)):
            store.execute(text.replace("{url}", url), timeout_s=30, row_cap=10)
    assert recorded == []


def test_the_recording_listener_sees_a_service_call_when_one_is_made(listener, embedded):
    """The zero-request assertions above can fail: the embedded engine does call a SERVICE it
    is given directly (bypassing the guard), and the listener records it."""
    url, recorded = listener
    store, engine = embedded
    try:
        list(engine.inner.query(f"SELECT * WHERE {{ SERVICE <{url}/sparql> {{ ?s ?p ?o }} }}"))
    except (OSError, RuntimeError, SyntaxError):
        pass  # the listener's answer is not a SELECT result; the request was made all the same
    assert len(recorded) == 1


def test_every_failure_is_a_named_error_never_a_crash():
    """Odd input of every kind ends as QuerySyntaxError or QueryRefused, never another exception."""
    odd = ["", " ", "#", "{", "}" * 100, "SELECT", "SELECT * WHERE {", "<", "<<<<", '"', "'''", "?", "\\", "\\u",
           "\\u12", "PREFIX", "PREFIX : <", "SELECT (", "ASK {} }", "SELECT * WHERE { ?s ?p ?o } ORDER BY", "\x00",
           "\ufeff", "\ufeff\ufeff", "SELECT * WHERE { ?s ?p '\ud800' }", "SELECT * WHERE {} LIMIT -1",
           "SELECT * WHERE {} OFFSET +2", "SELECT * WHERE {} LIMIT 1.5", "SELECT * WHERE { ?s ?p ?o " + "OPTIONAL { ?s ?p ?o " * 70 + "}" * 71]
    for text in odd:
        with pytest.raises((errors.QuerySyntaxError, errors.QueryRefused)):
            guard_query(text)


def test_shape_is_a_query_shape_with_its_approved_text():
    shape = guard_query("select ?a where { ?a ?b ?c } # comment\nlimit 2")
    assert isinstance(shape, QueryShape)
    assert shape.text == "SELECT ?a WHERE { ?a ?b ?c } LIMIT 2"
