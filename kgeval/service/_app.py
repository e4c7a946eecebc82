"""The kgeval service (FastAPI): contamination check, judging one answer, run status and
reports, audit of accepts, gold review, and the auditor/reviewer page.

Every route but /health needs a token: `Authorization: Bearer <token>`, or the page's session
cookie (set by POST /session). A cookie-authenticated request that changes anything must also
carry the `X-Kgeval-Page: 1` header, which a cross-site form cannot send.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from importlib import resources
from typing import Annotated, Any, Literal
from urllib.parse import parse_qs

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from pydantic import BaseModel, Field

from kgeval.audit import AuditSample, accepted_items, audit_states, draw_sample, record_decision
from kgeval.errors import CheckFailed, InputError, KgevalError, QueryError
from kgeval.gold import display_text
from kgeval.judges import Candidate
from kgeval.reports import build_report, render_html, render_json, render_markdown
from kgeval.review import NotPermitted, current_hashes, record_review, review_states
from kgeval.runs import judge_candidate
from kgeval.service._access import Principal, Role
from kgeval.service._state import ServiceSettings, ServiceState

COOKIE = "kgeval_token"
PAGE_HEADER = "X-Kgeval-Page"


# ---- request and response bodies -------------------------------------------------------


class ContaminationRequest(BaseModel):
    texts: list[str] = Field(description="Texts to check (e.g. the fields of training records).")


class ContaminationHit(BaseModel):
    text_index: int
    kind: str
    matched: str
    holdout_item: str
    score: float | None = None


class ContaminationResponse(BaseModel):
    clean: bool
    texts: int
    hits: list[ContaminationHit]


class JudgeRequest(BaseModel):
    question_id: str
    answer: list[Any] | None = Field(None, description="Answer items, as a system gives them.")
    sparql: str | None = Field(None, description="SPARQL to execute read-only on the question's KG.")


class SampleRequest(BaseModel):
    accepts: int | None = Field(None, ge=1, le=10000)
    seed: int | None = None


class AuditRecordRequest(BaseModel):
    question_id: str
    seed: int
    decision: Literal["agree", "disagree"]
    note: str = ""
    item_sha256: str = Field(description="sha256 of the item as it was shown (from the sample).")


class ReviewRequest(BaseModel):
    decision: Literal["approve", "changes_requested"]
    note: str = ""
    content_sha256: str = Field(description="sha256 of the question and gold as shown.")


# ---- auth --------------------------------------------------------------------------------


def _state(request: Request) -> ServiceState:
    return request.app.state.kgeval


def authenticated(request: Request) -> Principal:
    auth = request.headers.get("authorization", "")
    token = auth[7:].strip() if auth.lower().startswith("bearer ") else None
    via_cookie = token is None and COOKIE in request.cookies
    if via_cookie:
        token = request.cookies[COOKIE]
        if request.method not in ("GET", "HEAD") and request.headers.get(PAGE_HEADER) != "1":
            raise HTTPException(403, f"cookie-authenticated changes need the {PAGE_HEADER} header")
    principal = _state(request).settings.access.authenticate(token)
    if principal is None:
        raise HTTPException(401, "a valid token is required", headers={"WWW-Authenticate": "Bearer"})
    return principal


def role(*roles: Role):  # noqa: ANN201 - a FastAPI dependency
    def check(principal: Annotated[Principal, Depends(authenticated)]) -> Principal:
        if not principal.has(*roles):
            raise HTTPException(403, f"{principal.name} lacks the role for this ({' or '.join(roles)})")
        return principal

    return check


Anyone = Annotated[Principal, Depends(authenticated)]
Auditor = Annotated[Principal, Depends(role("admin", "auditor"))]
Builder = Annotated[Principal, Depends(role("admin", "builder"))]
Reader = Annotated[Principal, Depends(role("admin", "auditor", "reviewer"))]
State = Annotated[ServiceState, Depends(_state)]


def _http(exc: KgevalError) -> HTTPException:
    if isinstance(exc, NotPermitted):
        return HTTPException(403, str(exc))
    if isinstance(exc, CheckFailed):
        return HTTPException(409, str(exc))
    return HTTPException(400, str(exc))


def _known_run(state: ServiceState, run_id: str) -> None:
    if run_id not in state.results.run_ids():
        raise HTTPException(404, f"no run {run_id!r} in {state.settings.db}")


# ---- the app -----------------------------------------------------------------------------


def create_app(settings: ServiceSettings) -> FastAPI:
    """The service over one results database, holdout and gold."""

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        yield
        app.state.kgeval.close()

    app = FastAPI(
        title="kgeval",
        version="0.1.0",
        description=__doc__,
        lifespan=lifespan,
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    app.state.kgeval = ServiceState.open(settings)
    _routes(app)
    return app


def _routes(app: FastAPI) -> None:  # noqa: C901 - the route table, read top to bottom
    @app.get("/health", tags=["service"])
    def health() -> dict[str, str]:
        """Liveness; the only route without a token."""
        return {"status": "ok"}

    @app.get("/openapi.json", tags=["service"], include_in_schema=False)
    def openapi(_: Anyone) -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/me", tags=["service"])
    def me(principal: Anyone) -> Principal:
        return principal

    @app.post("/contamination/check", tags=["guards"])
    def contamination(body: ContaminationRequest, state: State, _: Builder) -> ContaminationResponse:
        """Holdout material in the given texts; `clean` is false on any hit."""
        if len(body.texts) > state.settings.max_texts:
            raise HTTPException(413, f"at most {state.settings.max_texts} texts per request")
        hits = [
            ContaminationHit(text_index=i, **m.model_dump(include={"kind", "matched", "holdout_item", "score"}))
            for i, text in enumerate(body.texts)
            for m in state.matcher.match_text(text)
        ]
        return ContaminationResponse(clean=not hits, texts=len(body.texts), hits=hits)

    @app.post("/judge", tags=["judges"])
    def judge(body: JudgeRequest, state: State, _: Auditor) -> dict[str, Any]:
        """Every enabled judge's verdict on one answer to one holdout question."""
        question = state.question(body.question_id)
        if question is None or body.question_id not in state.gold:
            raise HTTPException(404, f"no holdout question {body.question_id!r} with gold")
        if body.answer is None and not body.sparql:
            raise HTTPException(400, "give an answer list, SPARQL, or both")
        result, sparql_error = None, None
        if body.sparql:
            try:
                cfg = state.settings.config.run
                result, _ = state.store(question.kg).execute_candidate(body.sparql, timeout_s=cfg.query_timeout_s, row_cap=cfg.row_cap)
            except QueryError as exc:
                sparql_error = f"{type(exc).__name__}: {exc}"
        if sparql_error and body.answer is None:
            raise HTTPException(400, f"question {question.id}: {sparql_error}")
        candidate = Candidate(items=body.answer, result=result, sparql_error=sparql_error)
        entry = state.gold[question.id]
        judged, _ = judge_candidate(question, state.judges, entry.result, candidate, entry.ties)
        verdicts = [v.model_dump() for v in judged]
        return {"question_id": question.id, "primary": state.settings.config.judges.primary, "verdicts": verdicts, "sparql_error": sparql_error}

    @app.get("/runs", tags=["runs"])
    def runs(state: State, _: Reader) -> list[dict[str, Any]]:
        with state.lock:
            out = []
            for run_id in state.results.run_ids():
                m = state.results.metadata(run_id)
                out.append({"run_id": run_id, "system": m.system, "status": state.results.status(run_id), "started_at": m.started_at})
            return out

    @app.get("/runs/{run_id}", tags=["runs"])
    def run_status(run_id: str, state: State, _: Reader) -> dict[str, Any]:
        with state.lock:
            _known_run(state, run_id)
            try:
                metadata = state.results.metadata(run_id)
                status = state.results.status(run_id)
                attempts = state.results.attempts(run_id)
            except KgevalError as exc:
                raise _http(exc) from None
        expected = len(state.results.questions(run_id)) * len(metadata.seeds)
        errors = sum(1 for a in attempts if a.state == "error")
        return {"run_id": run_id, "status": status, "attempts": len(attempts), "expected_attempts": expected, "errors": errors, "metadata": metadata.model_dump()}

    @app.get("/runs/{run_id}/report", tags=["reports"])
    def report(run_id: str, state: State, _: Reader, format: Literal["json", "md", "html"] = "json") -> Response:
        with state.lock:
            _known_run(state, run_id)
            try:
                built = build_report(state.results, run_id, gold_dir=state.settings.gold, holdout_dir=state.settings.holdout, config=state.settings.config)
            except KgevalError as exc:
                raise _http(exc) from None
        if format == "html":
            return HTMLResponse(render_html(built))
        if format == "md":
            return PlainTextResponse(render_markdown(built), media_type="text/markdown")
        return Response(render_json(built), media_type="application/json")

    _audit_routes(app)
    _review_routes(app)
    _page_routes(app)


def _audit_routes(app: FastAPI) -> None:
    def items(state: ServiceState, run_id: str):  # noqa: ANN202
        return accepted_items(state.results, run_id, state.gold, state.settings.config.gold.display_items)

    def shown(state: ServiceState, sample: AuditSample) -> dict[str, Any]:
        current = items(state, sample.run_id)
        states = audit_states(current, state.audits.records(sample.run_id))
        out = sample.model_dump()
        for item, data in zip(sample.items, out["items"]):
            now = current.get(item.key)
            data["item_sha256"] = item.sha256()
            data["current"] = now is not None and now.sha256() == item.sha256()
            data["state"] = states.get(item.key, "unaudited") if data["current"] else "stale"
        return out

    @app.post("/runs/{run_id}/audit/samples", tags=["audit"])
    def new_sample(run_id: str, body: SampleRequest, state: State, _: Auditor) -> dict[str, Any]:
        """Draw (or redraw: the same seed draws the same) a stratified sample of accepts."""
        cfg = state.settings.config.audit
        with state.lock:
            _known_run(state, run_id)
            try:
                sample = draw_sample(run_id, items(state, run_id), body.accepts or cfg.default_accepts, cfg.sample_seed if body.seed is None else body.seed)
            except KgevalError as exc:
                raise _http(exc) from None
            state.audits.save_sample(sample)
            return shown(state, state.audits.sample(sample.sample_id) or sample)

    @app.get("/runs/{run_id}/audit/samples", tags=["audit"])
    def list_samples(run_id: str, state: State, _: Reader) -> list[str]:
        with state.lock:
            return state.audits.sample_ids(run_id)

    @app.get("/runs/{run_id}/audit/samples/{sample_id}", tags=["audit"])
    def get_sample(run_id: str, sample_id: str, state: State, _: Reader) -> dict[str, Any]:
        with state.lock:
            sample = state.audits.sample(sample_id)
            if sample is None or sample.run_id != run_id:
                raise HTTPException(404, f"run {run_id}: no audit sample {sample_id!r}")
            return shown(state, sample)

    @app.post("/runs/{run_id}/audit/records", tags=["audit"])
    def record(run_id: str, body: AuditRecordRequest, state: State, principal: Auditor) -> dict[str, Any]:
        """Append an audit decision bound to the item hash the auditor saw (409 if it changed)."""
        with state.lock:
            _known_run(state, run_id)
            try:
                rec = record_decision(state.audits, items(state, run_id), (body.question_id, body.seed), body.item_sha256, principal.name, body.decision, body.note)
            except KgevalError as exc:
                raise _http(exc) from None
            return rec.model_dump()


def _review_routes(app: FastAPI) -> None:
    def listing(state: ServiceState, principal: Principal, domain: str | None) -> list[dict[str, Any]]:
        questions = state.holdout.questions()
        hashes = current_hashes(questions, state.gold)
        states = review_states(hashes, state.reviews.records())
        reviewer = principal.reviewer()
        return [
            {
                "kg": q.kg,
                "question_id": q.id,
                "domain": q.domain,
                "question": q.question,
                "content_sha256": hashes[q.id],
                "state": states[q.id],
                "may_review": reviewer.may_review(q.domain),
            }
            for q in questions
            if domain is None or q.domain == domain
        ]

    @app.get("/review/questions", tags=["review"])
    def questions(state: State, principal: Reader, domain: str | None = None) -> dict[str, Any]:
        with state.lock:
            rows = listing(state, principal, domain)
        return {"store_problem": state.reviews.problem, "questions": rows}

    @app.get("/review/questions/{question_id}", tags=["review"])
    def question(question_id: str, state: State, principal: Reader) -> dict[str, Any]:
        q = state.question(question_id)
        if q is None:
            raise HTTPException(404, f"no holdout question {question_id!r}")
        entry = state.gold.get(q.id)
        with state.lock:
            row = next(r for r in listing(state, principal, None) if r["question_id"] == q.id)
            history = [r.model_dump() for r in state.reviews.records() if r.question_id == q.id]
        gold = display_text(entry.result, state.settings.config.gold.display_items) if entry else "(no gold)"
        return {**row, "sparql": q.sparql, "gold": gold, "gold_total": entry.result.total if entry else None, "history": history}

    @app.post("/review/questions/{question_id}", tags=["review"])
    def review(question_id: str, body: ReviewRequest, state: State, principal: Reader) -> dict[str, Any]:
        """Approve or request changes; only a reviewer of the question's domain may (403)."""
        q = state.question(question_id)
        if q is None:
            raise HTTPException(404, f"no holdout question {question_id!r}")
        with state.lock:
            try:
                rec = record_review(state.reviews, q, state.gold.get(q.id), principal.reviewer(), body.decision, body.content_sha256, body.note)
            except KgevalError as exc:
                raise _http(exc) from None
        return rec.model_dump()


_LOGIN = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>kgeval: sign in</title></head>
<body style="font-family:sans-serif;max-width:30rem;margin:3rem auto"><h1>kgeval</h1>
<form method="post" action="/session"><label>Token <input id="token" name="token" type="password" autocomplete="off"></label>
<button id="signin" type="submit">Sign in</button></form></body></html>"""


def _page_routes(app: FastAPI) -> None:
    @app.post("/session", tags=["page"], include_in_schema=False)
    async def session(request: Request) -> Response:
        """Exchange a token (the sign-in form's field) for the page's session cookie."""
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        token = (form.get("token") or [""])[0]
        if _state(request).settings.access.authenticate(token) is None:
            return HTMLResponse(_LOGIN.replace("<form", "<p>Unknown token.</p><form"), status_code=401)
        response = RedirectResponse("/ui", status_code=303)
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return response

    @app.get("/ui", tags=["page"], include_in_schema=False)
    def page(request: Request) -> Response:
        """The auditor/reviewer page; without a valid session it answers 401 with a sign-in form."""
        try:
            authenticated(request)
        except HTTPException:
            return HTMLResponse(_LOGIN, status_code=401)
        text = resources.files("kgeval.service").joinpath("static/page.html").read_text(encoding="utf-8")
        return HTMLResponse(text)
