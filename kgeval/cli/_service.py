"""`kgeval compare`, `kgeval audit ...`, `kgeval review ...` and `kgeval serve`."""

from __future__ import annotations

import json
import tempfile
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kgeval.cli._common import ConfigOpt, DbOpt, GateDirOpt, GoldOpt, HoldoutOpt, announce_db, err, out, user_errors
from kgeval.config import load_config
from kgeval.errors import CheckFailed, InputError
from kgeval.gold import load_gold
from kgeval.holdout import load_holdout

if TYPE_CHECKING:
    from kgeval.reports import RunComparison

audit_app = typer.Typer(help="Audit what the judge accepted: sample accepts, record decisions.", no_args_is_help=True)
review_app = typer.Typer(help="Review gold: approve or request changes on a question's SPARQL and gold.", no_args_is_help=True)

RunArg = Annotated[str, typer.Argument(help="Run id printed by `kgeval run`.")]
AccessOpt = Annotated[Path | None, typer.Option("--access", help="Access file (YAML) with tokens, roles and reviewer domains.")]
TokenOpt = Annotated[str, typer.Option("--token", envvar="KGEVAL_TOKEN", help="Your token (or KGEVAL_TOKEN).")]


class PageFormat(StrEnum):
    md = "md"
    json = "json"
    html = "html"


@user_errors
def compare(
    run_a: Annotated[str, typer.Argument(help="Baseline run (A).")],
    run_b: Annotated[str, typer.Argument(help="Candidate run (B).")],
    db: DbOpt = Path("kgeval.duckdb"),
    force: Annotated[bool, typer.Option("--force", help="Compare incomparable runs anyway; every page says so.")] = False,
    rejudge: Annotated[bool, typer.Option("--rejudge", help="Judge both runs' stored answers again with B's configuration and gold first, on the fly (nothing stored, no system called).")] = False,
    format: Annotated[PageFormat, typer.Option("--format", help="md, json or html.")] = PageFormat.md,
) -> None:
    """Paired per-question comparison: flips, exact McNemar test, difference with its interval.
    Runs whose judges, rules or gold differ are not comparable: the refusal names the command
    that makes them so (`kgeval rejudge`, or `--rejudge` here)."""
    from kgeval.reports import render_comparison_html, render_comparison_json, render_comparison_markdown

    if rejudge:
        comparison = _rejudged_comparison(db, run_a, run_b, force)
    else:
        comparison = _comparison(db, run_a, run_b, force)
    renderers = {PageFormat.md: render_comparison_markdown, PageFormat.json: render_comparison_json, PageFormat.html: render_comparison_html}
    out.print(renderers[format](comparison), markup=False, end="")


def _comparison(db: Path, run_a: str, run_b: str, force: bool, *, rejudged: bool = False) -> RunComparison:
    """The comparison of two runs of `db`; CheckFailed naming what differs (and the command that
    makes them comparable, when re-judging can) unless they are comparable or `force`."""
    from kgeval.reports import comparability_of, compare_runs, withheld_accuracy
    from kgeval.runs import ResultsDB

    with ResultsDB(db, read_only=True) as results:
        withheld = {run: withheld_accuracy(results, run) for run in (run_a, run_b)}
        check = comparability_of(results.metadata(run_a), results.metadata(run_b), withheld)
        if not check.comparable and not force:
            remedy = f"; to make them comparable: `{check.remedy} --db {db}`" if check.remedy and not rejudged else ""
            raise CheckFailed(f"runs {run_a} and {run_b} are not comparable: " + "; ".join(check.blocking) + remedy + " (use --force to compare anyway)")
        return compare_runs(results, run_a, run_b, check, forced=force, rejudged=rejudged)


def _rejudged_comparison(db: Path, run_a: str, run_b: str, force: bool) -> RunComparison:
    """Both runs judged again with B's configuration, gold and holdout into a scratch database
    (removed after), then compared there."""
    from kgeval.cli._rejudge import rejudged
    from kgeval.runs import ResultsDB, run_config

    with tempfile.TemporaryDirectory(prefix="kgeval-compare-") as scratch_dir:
        scratch = Path(scratch_dir) / "rejudged.duckdb"
        with ResultsDB(db, read_only=True) as results, ResultsDB(scratch) as target:
            meta_b = results.metadata(run_b)
            cfg, holdout, gold = run_config(meta_b), Path(meta_b.holdout), Path(meta_b.gold)
            derived = [rejudged(results, target, results.metadata(run), cfg, holdout, gold, None).run_id for run in (run_a, run_b)]
        return _comparison(scratch, *derived, force, rejudged=True)


# ---- audit -------------------------------------------------------------------------------


@audit_app.command("sample")
@user_errors
def audit_sample(
    run_id: RunArg,
    accepts: Annotated[int | None, typer.Option("--accepts", min=1, help="Accepted answers to draw (default from config).")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Sample seed (default from config).")] = None,
    db: DbOpt = Path("kgeval.duckdb"),
    gold: GoldOpt = Path("gold"),
    config: ConfigOpt = None,
) -> None:
    """Draw a stratified, seeded sample of accepts (judge disagreements first) and store it."""
    from kgeval.audit import AuditLog, accepted_items, draw_sample
    from kgeval.runs import ResultsDB

    cfg = load_config(config)
    entries = load_gold(gold)
    with ResultsDB(db) as results:
        items = accepted_items(results, run_id, entries, cfg.gold.display_items)
    sample = draw_sample(run_id, items, accepts or cfg.audit.default_accepts, cfg.audit.sample_seed if seed is None else seed)
    with AuditLog(db) as log:
        log.save_sample(sample)
    for item in sample.items:
        print(f"{item.question_id}\tseed {item.seed}\t{item.stratum}\t{item.sha256()}")
    out.print(f"sample {sample.sample_id}: {len(sample.items)} of {len(items)} accepts", markup=False)


@audit_app.command("show")
@user_errors
def audit_show(
    run_id: RunArg,
    sample_id: Annotated[str, typer.Argument(help="Sample id printed by `kgeval audit sample`.")],
    db: DbOpt = Path("kgeval.duckdb"),
    gold: GoldOpt = Path("gold"),
    config: ConfigOpt = None,
) -> None:
    """Print a sample's items as JSON lines, each with its hash, its current audit state and
    each auditor's decision at that hash; a conflict is named on stderr."""
    from kgeval.audit import AuditLog, accepted_items, audit_decisions, audit_states, conflict_text
    from kgeval.runs import ResultsDB

    cfg = load_config(config)
    with ResultsDB(db, read_only=True) as results, AuditLog(db, read_only=True) as log:
        sample = log.sample(sample_id)
        if sample is None or sample.run_id != run_id:
            raise InputError(f"{db}: run {run_id} has no audit sample {sample_id!r}")
        current = accepted_items(results, run_id, load_gold(gold), cfg.gold.display_items)
        records = log.records(run_id)
        states, decisions = audit_states(current, records), audit_decisions(current, records)
    for position, item in enumerate(sample.items):
        now = current.get(item.key)
        is_current = now is not None and now.sha256() == item.sha256()
        state = states.get(item.key, "unaudited") if is_current else "stale"
        decided = decisions.get(item.key, {}) if is_current else {}
        print(json.dumps({**item.model_dump(), "item_sha256": item.sha256(), "state": state, "decisions": decided}, ensure_ascii=False))
        where = f"{db}: audit sample {sample_id} item {position} (question {item.question_id} seed {item.seed})"
        if state == "conflict":
            err.print(f"{where}: conflict: {conflict_text(decided)}; counted as a false accept until resolved (each auditor's new decision replaces their own)", markup=False)
        if state == "stale":  # what changed, not only that a hash did
            why = f"{', '.join(item.changed_fields(now))} differ from the run's attempt now" if now else "no longer an accepted answer of the run"
            err.print(f"{where}: stale: {why}", markup=False)


class DecisionChoice(StrEnum):
    agree = "agree"
    disagree = "disagree"


@audit_app.command("record")
@user_errors
def audit_record(
    run_id: RunArg,
    question_id: Annotated[str, typer.Argument(help="Question id of the audited attempt.")],
    seed: Annotated[int, typer.Option("--seed", help="Seed of the audited attempt.")],
    decision: Annotated[DecisionChoice, typer.Option("--decision", help="agree (the accept stands) or disagree (a false accept).")],
    item_sha256: Annotated[str, typer.Option("--sha256", help="The item hash you saw (from `audit sample` / `audit show`).")],
    auditor: Annotated[str, typer.Option("--auditor", help="Your name.")],
    note: Annotated[str, typer.Option("--note", help="Why.")] = "",
    db: DbOpt = Path("kgeval.duckdb"),
    gold: GoldOpt = Path("gold"),
    config: ConfigOpt = None,
) -> None:
    """Append an audit decision bound to the item hash you saw (exit 1 if the item changed)."""
    from kgeval.audit import AuditLog, accepted_items, record_decision
    from kgeval.holdout import resolve_question_id
    from kgeval.runs import ResultsDB

    cfg = load_config(config)
    with ResultsDB(db) as results, AuditLog(db) as log:
        question_id = resolve_question_id(question_id, ((q.kg, q.question_id) for q in results.questions(run_id)), f"run {run_id}")
        items = accepted_items(results, run_id, load_gold(gold), cfg.gold.display_items)
        record = record_decision(log, items, (question_id, seed), item_sha256, auditor, decision.value, note)
    out.print(f"recorded {record.decision} on {question_id} seed {seed} at {record.item_sha256[:12]}", markup=False)


# ---- review ------------------------------------------------------------------------------


@review_app.command("status")
@user_errors
def review_status(
    holdout: HoldoutOpt = Path("holdout"), gold: GoldOpt = Path("gold"), db: DbOpt = Path("kgeval.duckdb"),
    domain: Annotated[str | None, typer.Option("--domain", help="Only this domain, question by question.")] = None,
    all_questions: Annotated[bool, typer.Option("--all", help="Also the questions excluded from evaluation on record (marked 'excluded').")] = False,
    per_question: Annotated[bool, typer.Option("--questions", help="Each question: id, domain, state, content hash (tab-separated), not the coverage per domain.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Gold review coverage per domain of the questions runs ask (approved, changes requested,
    stale, never reviewed, against review.coverage_target); with --questions or --domain, each
    question's review state and the content hash a reviewer approves."""
    from kgeval.review import ReviewLog, current_hashes, review_states

    loaded = load_holdout(holdout)
    questions = [q for q in loaded.questions() if domain is None or q.domain == domain]
    excluded = [q.id for q in questions if q.id in loaded.exclusions]
    if not all_questions:
        questions = [q for q in questions if q.id not in loaded.exclusions]
    hashes = current_hashes(questions, load_gold(gold))
    with ReviewLog(db, read_only=True) as log:  # damaged or broken: named (exit 2 or 1), never read as empty
        states = review_states(hashes, log.records())
        if log.problem:  # a missing store approves nothing
            err.print(f"note: {log.problem}: no question is approved", markup=False)
    if per_question or domain is not None:
        for q in questions:
            print(f"{q.id}\t{q.domain}\t{states[q.id]}\t{hashes[q.id]}" + ("\texcluded" if q.id in loaded.exclusions else ""))
    else:
        _print_coverage(questions, states, load_config(config).review.coverage_target)
    if excluded and not all_questions:
        err.print(f"{len(excluded)} question(s) excluded from evaluation on record, not listed ({', '.join(excluded)}): --all lists them", markup=False)


def _print_coverage(questions: list, states: dict[str, str], target: float) -> None:
    """One line per domain (and the whole): approved of questions, its share against the target,
    and the other states counted; then how to list the questions."""
    from collections import Counter

    by_domain: dict[str, Counter] = {}
    for q in questions:
        by_domain.setdefault(q.domain, Counter())[states[q.id]] += 1
    print(f"domain\tapproved\tcoverage\tchanges requested\tstale\tnever reviewed\t(target {target:.0%})")
    for name, counts in [*sorted(by_domain.items()), ("all", sum(by_domain.values(), Counter()))]:
        n = sum(counts.values())
        share = counts["approved"] / n if n else 0.0
        mark = "" if share >= target else "  below target"
        print(f"{name}\t{counts['approved']}/{n}\t{share:.0%}{mark}\t{counts['changes_requested']}\t{counts['stale']}\t{counts['never_reviewed']}")
    err.print("each question with its content hash (to approve): --questions, or --domain D", markup=False)


def _review(question_id: str, decision: str, content_sha256: str, note: str, token: str, access: Path | None, holdout: Path, gold: Path, db: Path) -> None:
    from kgeval.review import ReviewLog, record_review
    from kgeval.service import load_access

    principal = load_access(access).authenticate(token)
    if principal is None:
        raise InputError("unknown token: give --token (or KGEVAL_TOKEN) listed in the access file")
    loaded = load_holdout(holdout)
    question_id = loaded.question_ids([question_id])[0]
    question = next(q for q in loaded.questions() if q.id == question_id)
    with ReviewLog(db) as log:
        record = record_review(log, question, load_gold(gold).get(question_id), principal.reviewer(), decision, content_sha256, note)
    out.print(f"{record.reviewer}: {record.decision} on {question_id} at {record.content_sha256[:12]}", markup=False)


@review_app.command("approve")
@user_errors
def review_approve(
    question_id: Annotated[str, typer.Argument(help="Holdout question id.")],
    content_sha256: Annotated[str, typer.Option("--sha256", help="The content hash you reviewed (from `review status`).")],
    token: TokenOpt,
    access: AccessOpt = None,
    note: Annotated[str, typer.Option("--note")] = "",
    holdout: HoldoutOpt = Path("holdout"), gold: GoldOpt = Path("gold"), db: DbOpt = Path("kgeval.duckdb"),
) -> None:
    """Approve a question's reference SPARQL and gold (reviewers of its domain only)."""
    _review(question_id, "approve", content_sha256, note, token, access, holdout, gold, db)


@review_app.command("request-changes")
@user_errors
def review_request_changes(
    question_id: Annotated[str, typer.Argument(help="Holdout question id.")],
    content_sha256: Annotated[str, typer.Option("--sha256", help="The content hash you reviewed (from `review status`).")],
    note: Annotated[str, typer.Option("--note", help="What must change.")],
    token: TokenOpt,
    access: AccessOpt = None,
    holdout: HoldoutOpt = Path("holdout"), gold: GoldOpt = Path("gold"), db: DbOpt = Path("kgeval.duckdb"),
) -> None:
    """Request changes on a question (never counts as approval)."""
    _review(question_id, "changes_requested", content_sha256, note, token, access, holdout, gold, db)


# ---- serve -------------------------------------------------------------------------------


class LogLevel(StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


@user_errors
def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
    db: DbOpt = Path("kgeval.duckdb"),
    holdout: HoldoutOpt = Path("holdout"),
    gold: GoldOpt = Path("gold"),
    gate_dir: GateDirOpt = Path("schema_gate"),
    access: AccessOpt = None,
    config: ConfigOpt = None,
    log_level: Annotated[LogLevel, typer.Option("--log-level", help="info logs every request (uvicorn's access log and kgeval's JSON record).")] = LogLevel.info,
    access_log: Annotated[bool, typer.Option("--access-log/--no-access-log", help="uvicorn's access log.")] = True,
) -> None:
    """Serve the API and the auditor/reviewer page (/ui); Swagger UI at /docs, OpenAPI at /openapi.json."""
    try:
        import uvicorn

        from kgeval.service import ServiceSettings, create_app, load_access, raise_open_files, server_options, service_log_config
    except ModuleNotFoundError as exc:  # the service extra is not installed
        raise InputError(
            f"kgeval serve needs the service extra ({exc.name} is not installed): pip install -e '.[service]' in a clone, "
            "or pip install 'kgeval[service]'"
        ) from None

    tokens = load_access(access)
    if not len(tokens):
        raise InputError("no tokens: give --access FILE or set KGEVAL_ADMIN_TOKEN (every route but /health needs one)")
    settings = ServiceSettings(db=db, holdout=holdout, gold=gold, config=load_config(config), access=tokens, gate_dir=gate_dir)
    app = create_app(settings)
    refuse_port_in_use(host, port)
    announce_db(db)
    err.print(f"kgeval serving {db} on http://{host}:{port} (page /ui, Swagger UI /docs, OpenAPI /openapi.json)", markup=False)
    log_config = service_log_config(log_level.value, app)
    options = server_options(settings.service)  # idle, header and body timeouts; the connection bound
    if (few_files := raise_open_files(settings.service)) is not None:
        err.print(f"warning: {few_files}", markup=False)
    uvicorn.run(app, host=host, port=port, log_level=log_level.value, access_log=access_log, log_config=log_config, **options)


def refuse_port_in_use(host: str, port: int) -> None:
    """InputError (exit 2) when `port` on `host` cannot be bound, said before "serving" (uvicorn
    said it after, and exited 3, the code of a leak)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise InputError(f"--host {host}: cannot be resolved ({exc.strerror})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a closing socket is no obstacle
        try:
            probe.bind(address)
        except OSError as exc:
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror} (another server holds the port?); give --port N with a free port") from None
