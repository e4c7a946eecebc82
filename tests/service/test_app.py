"""The service's routes driven over HTTP (FastAPI TestClient) with a real access file."""

import re
from urllib.parse import urlsplit

from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from kgeval.config import GoldConfig, KgevalConfig
from kgeval.gold import rebuild_gold
from kgeval.holdout import exclude_questions, load_holdout
from kgeval.service import ServiceSettings, create_app, load_access
from kgeval.stores import EmbeddedStore
from tests.conftest import PREFIX
from tests.service.conftest import auth


def test_every_route_but_health_needs_a_token(client):
    assert client.get("/health").json() == {"status": "ok"}
    checked = 0
    for route in client.app.routes:
        if not isinstance(route, APIRoute) or route.path in ("/health", "/ui", "/session"):
            continue
        path = route.path_format.replace("{run_id}", "x").replace("{sample_id}", "x").replace("{question_id}", "x")
        for method in route.methods:
            response = client.request(method, path, json={})
            assert response.status_code == 401, (method, route.path, response.status_code)
            bad = client.request(method, path, json={}, headers={"Authorization": "Bearer wrong"})
            assert bad.status_code == 401, (method, route.path)
            checked += 1
    assert checked >= 12
    page = client.get("/ui")
    assert page.status_code == 401 and 'name="token"' in page.text  # the page asks for a token


def test_openapi_is_served_to_a_caller_with_a_token(client):
    spec = client.get("/openapi.json", headers=auth("ann")).json()
    assert {"/contamination/check", "/judge", "/runs/{run_id}/report", "/review/questions/{question_id}"} <= spec["paths"].keys()


def test_reviewer_of_domain_a_cannot_approve_domain_b(client, served):
    listing = client.get("/review/questions", headers=auth("hana")).json()["questions"]
    retail = next(q for q in listing if q["domain"] == "retail")
    hr = next(q for q in listing if q["domain"] == "hr")
    assert not retail["may_review"] and hr["may_review"]
    body = {"decision": "approve", "content_sha256": retail["content_sha256"]}
    denied = client.post(f"/review/questions/{retail['question_id']}", json=body, headers=auth("hana"))
    assert denied.status_code == 403 and "retail" in denied.json()["detail"]
    ok = client.post(f"/review/questions/{hr['question_id']}", json={"decision": "approve", "content_sha256": hr["content_sha256"]}, headers=auth("hana"))
    assert ok.status_code == 200
    assert client.post(f"/review/questions/{retail['question_id']}", json=body, headers=auth("rita")).status_code == 200
    # admin rights are not review rights
    assert client.post(f"/review/questions/{hr['question_id']}", json={"decision": "approve", "content_sha256": hr["content_sha256"]}, headers=auth("admin")).status_code == 403
    stale_view = client.post(f"/review/questions/{hr['question_id']}", json={"decision": "approve", "content_sha256": "0" * 64}, headers=auth("hana"))
    assert stale_view.status_code == 409
    states = {q["question_id"]: q["state"] for q in client.get("/review/questions", headers=auth("ann")).json()["questions"]}
    assert states[hr["question_id"]] == states[retail["question_id"]] == "approved"
    report = client.get(f"/runs/{served.run_id}/report", headers=auth("ann")).json()
    assert report["review"]["approved"] == 2


def test_audit_flow_over_http(client, served):
    run = served.run_id
    assert client.post(f"/runs/{run}/audit/samples", json={"accepts": 3}, headers=auth("hana")).status_code == 403
    sample = client.post(f"/runs/{run}/audit/samples", json={"accepts": 3, "seed": 4}, headers=auth("ann")).json()
    assert len(sample["items"]) == 3 and all(i["state"] == "unaudited" for i in sample["items"])
    item = sample["items"][0]
    body = {"question_id": item["question_id"], "seed": item["seed"], "decision": "disagree", "note": "wrong dept", "item_sha256": item["item_sha256"]}
    recorded = client.post(f"/runs/{run}/audit/records", json=body, headers=auth("ann"))
    assert recorded.status_code == 200 and recorded.json()["auditor"] == "ann"
    assert client.post(f"/runs/{run}/audit/records", json={**body, "item_sha256": "1" * 64}, headers=auth("ann")).status_code == 409
    again = client.get(f"/runs/{run}/audit/samples/{sample['sample_id']}", headers=auth("hana")).json()
    assert again["items"][0]["state"] == "disagree"
    report = client.get(f"/runs/{run}/report?format=json", headers=auth("ann")).json()
    assert report["audit"]["counts"]["audited"] == 1 and report["audit"]["false_accept_rate"]["events"] == 1
    html = client.get(f"/runs/{run}/report?format=html", headers=auth("ann"))
    assert html.headers["content-type"].startswith("text/html") and "<svg" in html.text
    status = client.get(f"/runs/{run}", headers=auth("ann")).json()
    assert status["status"] == "finished" and status["attempts"] == status["expected_attempts"]
    assert client.get("/runs/nope", headers=auth("ann")).status_code == 404


def test_contamination_endpoint(client):
    texts = ["Q: Where does Alice work?\nA: sales", "an unrelated sentence", "see holdout/mini and mini-03"]
    assert client.post("/contamination/check", json={"texts": texts}, headers=auth("ann")).status_code == 403
    result = client.post("/contamination/check", json={"texts": texts}, headers=auth("bob")).json()
    assert not result["clean"] and result["texts"] == 3
    assert {(h["text_index"], h["kind"]) for h in result["hits"]} == {(0, "question-exact"), (2, "kg-identifier")}
    assert {h["holdout_item"] for h in result["hits"] if h["text_index"] == 2} == {"kg mini", "mini/mini-03"}
    assert client.post("/contamination/check", json={"texts": ["nothing here"]}, headers=auth("bob")).json()["clean"]


def test_judge_one_answer(client):
    right = client.post("/judge", json={"question_id": "mini-02", "answer": ["alice", "bob"]}, headers=auth("ann")).json()
    assert right["verdicts"][0]["correct"] is True and right["verdicts"][0]["judge"] == "seed"
    wrong = client.post("/judge", json={"question_id": "mini-02", "sparql": "PREFIX e: <http://example.org/mini/entities/> SELECT ?p WHERE { ?p ?r e:it }"}, headers=auth("ann")).json()
    assert wrong["verdicts"][0]["correct"] is False
    assert client.post("/judge", json={"question_id": "nope", "answer": []}, headers=auth("ann")).status_code == 404
    assert client.post("/judge", json={"question_id": "mini-02"}, headers=auth("ann")).status_code == 400


def test_judge_route_scores_a_failed_query_wrong_as_a_run_does(client):
    """DESIGN invariant 5: a refused or unparseable query is the model's failure, judged wrong
    with the failure named, never an error of the request."""
    for sparql, failure in (("DELETE WHERE { ?s ?p ?o }", "refused"), ("SELEKT ?p WHERE { ?p ?q ?r }", "invalid_sparql")):
        body = client.post("/judge", json={"question_id": "mini-02", "sparql": sparql}, headers=auth("ann"))
        assert body.status_code == 200, body.text
        judged = body.json()
        assert judged["failure"] == failure and judged["sparql_error"]
        assert judged["verdicts"] and all(v["correct"] is False for v in judged["verdicts"])


def test_judge_route_applies_the_label_rules_with_the_kg_as_a_run_does(client):
    """The gold of mini-01 is the IRI e:sales; a query naming it by its label is what the
    label-for-entity rule alone accepts (off by default, issue 32), which needs the KG's labels
    (the run's lookup)."""
    by_label = PREFIX + 'SELECT ?name WHERE { e:alice ex:worksIn ?d . ?d rdfs:label ?name FILTER(lang(?name) = "en") }'
    judged = client.post("/judge", json={"question_id": "mini-01", "sparql": by_label}, headers=auth("ann")).json()
    execution = next(v for v in judged["verdicts"] if v["judge"] == "execution")
    assert execution["correct"] is False and execution["details"]["leniency"]["alone"] == ["label_for_entity"], execution


def test_cookie_session_needs_the_page_header_to_change_anything(client, served):
    login = client.post("/session", data={"token": "auditor-token"}, follow_redirects=False)
    assert login.status_code == 303 and login.headers["location"] == "/ui"
    session_id = login.cookies["kgeval_session"]
    assert "auditor-token" not in login.headers["set-cookie"] and len(session_id) >= 40  # an id, not the token
    assert client.get("/ui").status_code == 200 and "Audit of accepts" in client.get("/ui").text
    body = {"accepts": 2}
    assert client.post(f"/runs/{served.run_id}/audit/samples", json=body).status_code == 403
    assert client.post(f"/runs/{served.run_id}/audit/samples", json=body, headers={"X-Kgeval-Page": "1"}).status_code == 200
    assert client.post("/session", data={"token": "nope"}).status_code == 401
    assert client.delete("/session").status_code == 204  # sign out: the id stops working at once
    client.cookies.set("kgeval_session", session_id)
    assert client.get("/me").status_code == 401 and client.get("/ui").status_code == 401


def test_swagger_ui_and_bearer_scheme_in_the_schema(client):
    assert client.get("/docs").status_code == 401 and 'value="/docs"' in client.get("/docs").text  # sign in first, then back here
    spec = client.get("/openapi.json", headers=auth("ann")).json()
    assert spec["components"]["securitySchemes"]["HTTPBearer"] == {"type": "http", "scheme": "bearer", "description": spec["components"]["securitySchemes"]["HTTPBearer"]["description"]}
    assert {"HTTPBearer": []} in spec["paths"]["/contamination/check"]["post"]["security"]
    assert "security" not in spec["paths"]["/health"]["get"]
    login = client.post("/session", data={"token": "auditor-token", "next": "/docs"}, follow_redirects=False)
    assert login.headers["location"] == "/docs"
    docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger-ui" in docs.text and "/openapi.json" in docs.text
    assert client.get("/openapi.json").status_code == 200  # Swagger UI's fetch carries the session
    elsewhere = client.post("/session", data={"token": "auditor-token", "next": "https://evil.example/"}, follow_redirects=False)
    assert elsewhere.headers["location"] == "/ui"  # no open redirect


def test_docs_loads_no_asset_from_another_host(client):
    """/docs works offline: every script, style and icon its page references is served by
    kgeval itself (it was Swagger UI from a CDN: a blank page with no network)."""
    client.post("/session", data={"token": "auditor-token", "next": "/docs"}, follow_redirects=False)
    page = client.get("/docs")
    assert page.status_code == 200
    referenced = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", page.text) + re.findall(r"""url\s*:\s*['"]([^'"]+)['"]""", page.text)
    assert len(referenced) >= 4, referenced  # script, style, icon, the OpenAPI document
    for address in referenced:
        parts = urlsplit(address)
        assert not parts.scheme and not parts.netloc and address.startswith("/"), f"/docs loads {address} from another host"
        asset = client.get(address)
        assert asset.status_code == 200 and asset.content, (address, asset.status_code)
    script = client.get(next(a for a in referenced if a.endswith(".js")))
    assert "SwaggerUIBundle" in script.text and script.headers["content-type"].startswith("text/javascript")
    assert client.get("/docs/assets/../../etc/passwd").status_code in (401, 404)


def test_review_listing_sets_questions_excluded_on_record_apart(served):
    """Reviewers see the questions runs ask (what review coverage counts); an excluded question
    is named apart with its reason, and listed (marked) only when asked for."""
    exclude_questions(served.holdout, ["mini-03"], "reference query is ambiguous; ticket 7")
    assert rebuild_gold(load_holdout(served.holdout), lambda kg: EmbeddedStore(kg.files), GoldConfig(), served.gold).ok
    settings = ServiceSettings(db=served.db, holdout=served.holdout, gold=served.gold, config=KgevalConfig(), access=load_access(served.access, env={}))
    with TestClient(create_app(settings)) as client:
        body = client.get("/review/questions", headers=auth("ann")).json()
        assert "mini-03" not in [q["question_id"] for q in body["questions"]] and len(body["questions"]) == 7
        assert body["excluded_on_record"] == [{"question_id": "mini-03", "why": "reference query is ambiguous; ticket 7"}]
        every = client.get("/review/questions", params={"all": "true"}, headers=auth("ann")).json()["questions"]
        assert [q["question_id"] for q in every if q["excluded"]] == ["mini-03"] and len(every) == 8
        assert client.get("/review/questions/mini-03", headers=auth("ann")).json()["excluded"] is True


def test_every_question_route_takes_the_ids_kgeval_prints(client, served):
    """Gold and checklist messages print `kg/id`; the routes that name a question take it as
    they take `id` (issue 34 item 6), and an unknown one is a 404 naming it."""
    printed = "mini/mini-02"
    view = client.get(f"/review/questions/{printed}", headers=auth("ann"))
    assert view.status_code == 200 and view.json()["question_id"] == "mini-02", view.text
    gold = client.get(f"/review/questions/{printed}/gold", headers=auth("rita")).json()
    assert gold["table"]["total"] == 2 and gold == client.get("/review/questions/mini-02/gold", headers=auth("rita")).json()
    judged = client.post("/judge", json={"question_id": printed, "answer": ["alice", "bob"]}, headers=auth("ann"))
    assert judged.status_code == 200 and judged.json()["verdicts"][0]["correct"] is True, judged.text
    sample = client.get(f"/runs/{served.run_id}/samples/{printed}", headers=auth("admin"))
    assert sample.status_code == 200 and sample.json()["sample"]["question_id"] == "mini-02", sample.text
    hr = next(q for q in client.get("/review/questions", headers=auth("hana")).json()["questions"] if q["domain"] == "hr")
    body = {"decision": "approve", "content_sha256": hr["content_sha256"]}
    assert client.post(f"/review/questions/mini/{hr['question_id']}", json=body, headers=auth("hana")).status_code == 200
    for unknown in ("other/mini-02", "mini/nope", "nope"):
        missing = client.get(f"/review/questions/{unknown}", headers=auth("ann"))
        assert missing.status_code == 404 and repr(unknown) in missing.json()["detail"], missing.text
    assert "it is mini/mini-02" in client.get("/review/questions/other/mini-02", headers=auth("ann")).json()["detail"]
