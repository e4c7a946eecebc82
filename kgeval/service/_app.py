"""The kgeval service (FastAPI): contamination check, judging one answer, run status and
reports, audit of accepts, gold review, and the auditor/reviewer page.

Every route but /health needs a token: `Authorization: Bearer <token>`, or the page's session
cookie (a random session id set by POST /session; the token never leaves the sign-in request).
A cookie-authenticated request that changes anything must also carry the `X-Kgeval-Page: 1`
header, which a cross-site form cannot send. Swagger UI at /docs (after signing in).

Under abuse: the token is checked before the body is read; a body over `service.max_body_bytes`
is refused (413); heavy requests (every route that executes queries: `kgeval.service._heavy`)
work in a small thread pool under `service.request_timeout_s` (503 after it), so /health keeps
answering, and at most `service.heavy_per_caller` of them per caller (429 with Retry-After
beyond), so one caller cannot starve another; the results database is opened per request, never
held between them (503 with Retry-After while another process holds it).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import asynccontextmanager
from functools import lru_cache
from importlib import resources
from typing import Annotated, Any, Literal
from urllib.parse import parse_qs

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from starlette.middleware.body_limit import RequestBodyLimitMiddleware

from kgeval import __version__
from kgeval.audit import AuditSample, accepted_items, audit_decisions, audit_states, draw_sample, record_decision
from kgeval.errors import CheckFailed, DatabaseBusy, KgevalError
from kgeval.gold import display_text
from kgeval.reports import build_report, render_html, render_json, render_markdown
from kgeval.review import current_hashes, record_review, review_states
from kgeval.runs import judge_output
from kgeval.service._access import Principal, Role
from kgeval.service._middleware import DOCS_ASSET_TYPES, DOCS_ASSETS, SESSION_COOKIE, AuthError, AuthFirst, RequestLog, principal_from_headers
from kgeval.service._heavy import bounded, http_error, query_time_s
from kgeval.service._state import Database, ServiceSettings, ServiceState
from kgeval.service._ui import router as ui_router
from kgeval.systems import SystemOutput


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

_bearer = HTTPBearer(auto_error=False, description="A token from the access file (or KGEVAL_ADMIN_TOKEN).")


def _state(request: Request) -> ServiceState:
    return request.app.state.kgeval


def authenticated(request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)] = None) -> Principal:
    """The caller, as the AuthFirst middleware found it (before the body was read). The bearer
    dependency declares the scheme in the OpenAPI schema; the middleware does the checking."""
    principal = getattr(request.state, "principal", None)
    if principal is None:
        raise HTTPException(401, "a valid token is required", headers={"WWW-Authenticate": "Bearer"})
    return principal


def page_principal(request: Request) -> Principal | None:
    """The caller of a page route (pages are public paths: they ask for a sign-in instead)."""
    try:
        return principal_from_headers(request.headers, request.method, _state(request).authenticate)
    except AuthError:
        return None


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


def _known_run(state: ServiceState, db: Database, run_id: str) -> None:
    if run_id not in db.results.run_ids():
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
        version=__version__,
        description=__doc__,
        lifespan=lifespan,
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    state = ServiceState.open(settings)
    app.state.kgeval = state
    # the last added is the outermost: log, then authenticate, then limit the body
    app.add_middleware(RequestBodyLimitMiddleware, max_body_size=settings.service.max_body_bytes)
    app.add_middleware(AuthFirst, authenticate=state.authenticate)
    app.add_middleware(RequestLog)

    @app.exception_handler(DatabaseBusy)
    async def busy(request: Request, exc: DatabaseBusy) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": "1"})

    @app.exception_handler(KgevalError)
    async def named_error(request: Request, exc: KgevalError) -> JSONResponse:  # noqa: ARG001
        """A store problem met outside a route's own handling (e.g. a broken audit log while
        showing a sample) is its named status and message, never a 500."""
        http = http_error(exc)
        return JSONResponse({"detail": http.detail}, status_code=http.status_code)

    _routes(app)
    return app


def _routes(app: FastAPI) -> None:  # noqa: C901 - the route table, read top to bottom
    @app.get("/health", tags=["service"])
    async def health() -> dict[str, str]:
        """Liveness; the only route without a token. Answered on the event loop itself."""
        return {"status": "ok"}

    @app.get("/openapi.json", tags=["service"], include_in_schema=False)
    def openapi(_: Anyone) -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", tags=["service"], include_in_schema=False)
    def docs(request: Request) -> Response:
        """Swagger UI over /openapi.json; without a session it asks for a sign-in first."""
        if page_principal(request) is None:
            return _login(status=401, next_page="/docs")
        assets = {name: f"{DOCS_ASSETS}/{name}" for name in DOCS_ASSET_TYPES}
        return get_swagger_ui_html(
            openapi_url="/openapi.json", title="kgeval API", swagger_js_url=assets["swagger-ui-bundle.js"],
            swagger_css_url=assets["swagger-ui.css"], swagger_favicon_url=assets["favicon.png"],
        )  # fmt: skip

    @app.get(DOCS_ASSETS + "/{name}", tags=["service"], include_in_schema=False)
    def docs_asset(name: str) -> Response:
        """Swagger UI's script, style and icon, from the package that ships them
        (fastapi-offline): /docs loads nothing from another host, so it works offline."""
        if name not in DOCS_ASSET_TYPES:
            raise HTTPException(404, f"no asset {name!r}")
        headers = {"Cache-Control": "public, max-age=86400"}
        return Response(_docs_asset(name), media_type=DOCS_ASSET_TYPES[name], headers=headers)

    @app.get("/me", tags=["service"])
    def me(principal: Anyone) -> Principal:
        return principal

    @app.post("/contamination/check", tags=["guards"])
    async def contamination(body: ContaminationRequest, state: State, caller: Builder) -> ContaminationResponse:
        """Holdout material in the given texts; `clean` is false on any hit."""
        if len(body.texts) > state.settings.service.max_texts:
            raise HTTPException(413, f"at most {state.settings.service.max_texts} texts per request (service.max_texts)")

        def check(in_time: Callable[[], None]) -> list[ContaminationHit]:
            hits = []
            for i, text in enumerate(body.texts):
                in_time()
                fields = ("kind", "matched", "holdout_item", "score")
                hits += [ContaminationHit(text_index=i, **m.model_dump(include=set(fields))) for m in state.matcher.match_text(text)]
            return hits

        hits = await bounded(state, caller, check)
        return ContaminationResponse(clean=not hits, texts=len(body.texts), hits=hits)

    @app.post("/judge", tags=["judges"])
    async def judge(body: JudgeRequest, state: State, caller: Auditor) -> dict[str, Any]:
        """Every enabled judge's verdict on one answer to one holdout question."""
        question = state.question(body.question_id)
        if question.id not in state.gold:
            raise HTTPException(404, f"no gold for holdout question {body.question_id!r}: run `kgeval gold rebuild`")
        if body.answer is None and not body.sparql:
            raise HTTPException(400, "give an answer list, SPARQL, or both")
        return await bounded(state, caller, lambda _: _judge_one(state, question, body), at_least_s=query_time_s(state))

    @app.get("/runs", tags=["runs"])
    def runs(state: State, _: Reader) -> list[dict[str, Any]]:
        with state.database() as db:
            out = []
            for m in db.results.runs(status=None):
                try:
                    status, problem = db.results.status(m.run_id), None
                except CheckFailed as exc:  # listed, as changed: its own routes refuse it (409)
                    status, problem = "changed", str(exc)
                out.append({"run_id": m.run_id, "system": m.system, "status": status, "started_at": m.started_at, "problem": problem,
                            "derived_from": m.derived_from.source_run_id if m.derived_from else None})
            return out

    @app.get("/runs/{run_id}", tags=["runs"])
    def run_status(run_id: str, state: State, _: Reader) -> dict[str, Any]:
        with state.database() as db:
            _known_run(state, db, run_id)
            try:
                metadata = db.results.metadata(run_id)
                status = db.results.status(run_id)
                attempts = db.results.attempts(run_id)
                expected = len(db.results.questions(run_id)) * len(metadata.seeds)
            except KgevalError as exc:
                raise http_error(exc) from None
        errors = sum(1 for a in attempts if a.state == "error")
        return {"run_id": run_id, "status": status, "attempts": len(attempts), "expected_attempts": expected, "errors": errors, "metadata": metadata.model_dump()}

    @app.get("/runs/{run_id}/report", tags=["reports"])
    async def report(run_id: str, state: State, caller: Reader, format: Literal["json", "md", "html"] = "json") -> Response:
        def build(_: Callable[[], None]):  # noqa: ANN202
            with state.database() as db:
                _known_run(state, db, run_id)
                return build_report(db.results, run_id, gold_dir=state.settings.gold, holdout_dir=state.settings.holdout, config=state.settings.config)

        built = await bounded(state, caller, build)
        if format == "html":
            return HTMLResponse(render_html(built))
        if format == "md":
            return PlainTextResponse(render_markdown(built), media_type="text/markdown")
        return Response(render_json(built), media_type="application/json")

    app.include_router(ui_router, dependencies=[Depends(role("admin", "auditor", "reviewer"))])
    _audit_routes(app)
    _review_routes(app)
    _page_routes(app)


def _judge_one(state: ServiceState, question: Any, body: JudgeRequest) -> dict[str, Any]:
    """Judge one output exactly as a run judges it (`judge_output`): the same execution, failure
    sides (a model's failed query is judged wrong, DESIGN invariant 5), ties and KG rules."""
    entry = state.gold[question.id]
    output = SystemOutput(sparql=body.sparql, answer=body.answer)
    store = state.store(question.kg)
    attempt, verdicts = judge_output(
        question, 0, output, store, state.judges, entry.result, state.settings.config, ties=entry.ties, lookup=state.lookup(question.kg)
    )
    if attempt.state == "error":  # the harness failed (e.g. the store is down): no verdict to give
        raise HTTPException(503, f"question {question.id}: not judged ({attempt.error_kind}): {attempt.error}")
    return {
        "question_id": question.id,
        "primary": state.settings.config.judges.primary,
        "verdicts": [v.model_dump() for v in verdicts],
        "sparql_error": attempt.extra.get("sparql_error"),
        "failure": attempt.extra.get("failure"),
        "result_total": attempt.result_total,
    }


def _audit_routes(app: FastAPI) -> None:
    def items(state: ServiceState, db: Database, run_id: str):  # noqa: ANN202
        return accepted_items(db.results, run_id, state.gold, state.settings.config.gold.display_items)

    def shown(state: ServiceState, db: Database, sample: AuditSample) -> dict[str, Any]:
        current = items(state, db, sample.run_id)
        records = db.audits.records(sample.run_id)
        states, decisions = audit_states(current, records), audit_decisions(current, records)
        out = sample.model_dump()
        for item, data in zip(sample.items, out["items"]):
            now = current.get(item.key)
            data["item_sha256"] = item.sha256()
            data["current"] = now is not None and now.sha256() == item.sha256()
            data["state"] = states.get(item.key, "unaudited") if data["current"] else "stale"
            data["decisions"] = decisions.get(item.key, {}) if data["current"] else {}
        return out

    @app.post("/runs/{run_id}/audit/samples", tags=["audit"])
    async def new_sample(run_id: str, body: SampleRequest, state: State, caller: Auditor) -> dict[str, Any]:
        """Draw (or redraw: the same seed draws the same) a stratified sample of accepts."""
        cfg = state.settings.config.audit

        def draw(_: Callable[[], None]) -> dict[str, Any]:
            with state.database(write=True) as db:
                _known_run(state, db, run_id)
                sample = draw_sample(run_id, items(state, db, run_id), body.accepts or cfg.default_accepts, cfg.sample_seed if body.seed is None else body.seed)
                db.audits.save_sample(sample)
                return shown(state, db, db.audits.sample(sample.sample_id) or sample)

        return await bounded(state, caller, draw)

    @app.get("/runs/{run_id}/audit/samples", tags=["audit"])
    def list_samples(run_id: str, state: State, _: Reader) -> list[str]:
        with state.database() as db:
            return db.audits.sample_ids(run_id)

    @app.get("/runs/{run_id}/audit/samples/{sample_id}", tags=["audit"])
    def get_sample(run_id: str, sample_id: str, state: State, _: Reader) -> dict[str, Any]:
        with state.database() as db:
            sample = db.audits.sample(sample_id)
            if sample is None or sample.run_id != run_id:
                raise HTTPException(404, f"run {run_id}: no audit sample {sample_id!r}")
            return shown(state, db, sample)

    @app.post("/runs/{run_id}/audit/records", tags=["audit"])
    def record(run_id: str, body: AuditRecordRequest, state: State, principal: Auditor) -> dict[str, Any]:
        """Append an audit decision bound to the item hash the auditor saw (409 if it changed)."""
        with state.database(write=True) as db:
            _known_run(state, db, run_id)
            try:
                rec = record_decision(db.audits, items(state, db, run_id), (body.question_id, body.seed), body.item_sha256, principal.name, body.decision, body.note)
            except KgevalError as exc:
                raise http_error(exc) from None
            return rec.model_dump()


def _review_routes(app: FastAPI) -> None:
    def listing(state: ServiceState, db: Database, principal: Principal, domain: str | None) -> list[dict[str, Any]]:
        questions = state.holdout.questions()
        hashes = current_hashes(questions, state.gold)
        states = review_states(hashes, db.reviews.records())
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
                "excluded": q.id in state.holdout.exclusions,
            }
            for q in questions
            if domain is None or q.domain == domain
        ]

    @app.get("/review/questions", tags=["review"])
    def questions(state: State, principal: Reader, domain: str | None = None, all: bool = False) -> dict[str, Any]:  # noqa: A002 - the query parameter's name
        """The questions runs ask, with their review state; questions excluded from evaluation
        on record are listed apart (with `all=true`, also among the questions)."""
        with state.database() as db:
            rows, problem = listing(state, db, principal, domain), db.reviews.problem
        excluded = [{"question_id": r["question_id"], "why": state.holdout.exclusions[r["question_id"]].why} for r in rows if r["excluded"]]
        return {"store_problem": problem, "questions": [r for r in rows if all or not r["excluded"]], "excluded_on_record": excluded}

    @app.get("/review/questions/{question_id:path}", tags=["review"])
    def question(question_id: str, state: State, principal: Reader) -> dict[str, Any]:
        q = state.question(question_id)
        entry = state.gold.get(q.id)
        with state.database() as db:
            row = next(r for r in listing(state, db, principal, None) if r["question_id"] == q.id)
            history = [r.model_dump() for r in db.reviews.records() if r.question_id == q.id]
        gold = display_text(entry.result, state.settings.config.gold.display_items) if entry else "(no gold)"
        return {**row, "sparql": q.sparql, "gold": gold, "gold_total": entry.result.total if entry else None, "history": history}

    @app.post("/review/questions/{question_id:path}", tags=["review"])
    def review(question_id: str, body: ReviewRequest, state: State, principal: Reader) -> dict[str, Any]:
        """Approve or request changes; only a reviewer of the question's domain may (403)."""
        q = state.question(question_id)
        with state.database(write=True) as db:
            try:
                rec = record_review(db.reviews, q, state.gold.get(q.id), principal.reviewer(), body.decision, body.content_sha256, body.note)
            except KgevalError as exc:
                raise http_error(exc) from None
        return rec.model_dump()


@lru_cache(maxsize=len(DOCS_ASSET_TYPES))
def _docs_asset(name: str) -> bytes:
    return resources.files("fastapi_offline").joinpath("static", name).read_bytes()


_LOGIN = resources.files("kgeval.service").joinpath("static/login.html").read_text(encoding="utf-8")
"""The styled sign-in page; `_login` fills in where the sign-in leads and any problem."""
_PAGES = ("/ui", "/docs")
"""Where a sign-in may lead (never an address from the form: no open redirect)."""
_SIGN_IN_BYTES = 4096


def _login(status: int, next_page: str = "/ui", problem: str = "") -> HTMLResponse:
    hidden = f'<input type="hidden" name="next" value="{next_page if next_page in _PAGES else "/ui"}">'
    text = _LOGIN.replace("</form>", hidden + "\n</form>", 1)
    if problem:
        text = text.replace("<form", f'<p class="error">{problem}</p><form', 1)
    return HTMLResponse(text, status_code=status)


def _page_routes(app: FastAPI) -> None:
    @app.post("/session", tags=["page"], include_in_schema=False, max_body_size=_SIGN_IN_BYTES)
    async def session(request: Request) -> Response:
        """Exchange a token (the sign-in form's field) for a session; the cookie holds the
        session's random id, never the token."""
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        token = (form.get("token") or [""])[0]
        next_page = (form.get("next") or ["/ui"])[0]
        state = _state(request)
        principal = state.settings.access.authenticate(token)
        if principal is None:
            return _login(status=401, next_page=next_page, problem="Unknown token.")
        response = RedirectResponse(next_page if next_page in _PAGES else "/ui", status_code=303)
        secure = request.url.scheme == "https"
        max_age = int(state.settings.service.session_hours * 3600)
        response.set_cookie(SESSION_COOKIE, state.sessions.start(principal), httponly=True, samesite="strict", secure=secure, max_age=max_age)
        return response

    @app.delete("/session", tags=["page"], include_in_schema=False)
    def sign_out(request: Request) -> Response:
        """End the page's session (the id stops working at once)."""
        _state(request).sessions.end(request.cookies.get(SESSION_COOKIE))
        response = Response(status_code=204)
        response.delete_cookie(SESSION_COOKIE)
        return response

    @app.get("/ui", tags=["page"], include_in_schema=False)
    def page(request: Request) -> Response:
        """The auditor/reviewer page; without a valid session it answers 401 with a sign-in form."""
        if page_principal(request) is None:
            return _login(status=401)
        text = resources.files("kgeval.service").joinpath("static/page.html").read_text(encoding="utf-8")
        return HTMLResponse(text)
