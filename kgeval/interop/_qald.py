"""QALD JSON (QALD-9-plus style) in and out.

In: `{"dataset": {"id"}, "questions": [{"id", "question": [{"language", "string"}],
"query": {"sparql"}, "answers": [...]}]}` plus the KG files it is asked over becomes one KG
of our holdout. The file's answers are not copied: our gold is executed, not written (DESIGN
invariant 2); `kgeval gold export --format qald` gives them back, computed, for comparison.

Out: the gold, or one seed of a run, as QALD JSON with SPARQL 1.1 JSON result bindings, the
format GERBIL's QALD adapters read. A run's question with no answer to give (its query fails
when executed again, or its attempt was a harness error) keeps no `answers`, never an empty one. Question ids are the source's own when the KG was imported,
beside the field that named the question's KG when it came from a benchmark over several KGs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kgeval._files import check_input_file, parse_json, sha256_file
from kgeval.config import KgevalConfig
from kgeval.errors import InputError
from kgeval.gold import GoldEntry
from kgeval.holdout import Holdout, KnowledgeGraph, Question, Tag
from kgeval.interop._write import (
    ImportReport, KgImport, QuestionProblems, QuestionRules, check_question, kg_name, read_questions, refuse_case_twins, write_kgs,
)
from kgeval.judges import item_term
from kgeval.runs import Attempt, ResultsDB, execute_candidate, run_config
from kgeval.stores import QueryResult, Store, Term, rdf_format


def import_qald(
    path: Path, name: str, out: Path, kg_files: list[Path], *, lang: str = "en",
    domain: str | None = None, id_prefix: str | None = None, replace: bool = False, rules: QuestionRules = QuestionRules(),
) -> ImportReport:
    """Import the QALD JSON file at `path`, asked over `kg_files`, as KG `name` of `out`; seal.
    Question ids are `<id_prefix or name>-<source id>`, the domain `domain or name`."""
    doc = _read_qald(path)
    if not kg_files:
        raise InputError(f"{path}: QALD files carry no KG: give its data files with --kg (or a directory of KGs with --kg-dir)")
    for kg_file in kg_files:
        if not Path(kg_file).is_file():
            raise InputError(f"{kg_file}: KG file does not exist")
    kg = _kg_import(Path(path), doc, doc["questions"], name, [Path(f) for f in kg_files], lang, domain, id_prefix, rules)
    return write_kgs(out, [kg], replace=name if replace else None)[0]


def import_qald_benchmark(
    path: Path, out: Path, kg_dir: Path, kg_field: str, *, lang: str = "en", domain: str | None = None,
    id_prefix: str | None = None, replace: str | None = None, rules: QuestionRules = QuestionRules(),
) -> list[ImportReport]:
    """Import a QALD JSON file whose questions are asked over several KGs: each question names
    its KG in the field `kg_field`; the KG's data is `kg_dir/<value>` (a directory of RDF
    files) or `kg_dir/<value>.<ttl|nt|...>` (one file). One holdout KG per value, named after
    it; question ids `<id_prefix or KG>-<source id>`, domain `domain or KG`. With `replace`,
    only that KG is imported, over the one in the holdout. Sealed once, at the end."""
    path = Path(path)
    doc = _read_qald(path)
    groups: dict[str, list] = {}
    for i, raw in enumerate(doc["questions"], 1):
        value = raw.get(kg_field) if isinstance(raw, dict) else None
        if not isinstance(value, str | int) or not str(value).strip():
            where = raw.get("id", f"#{i}") if isinstance(raw, dict) else f"#{i}"
            raise InputError(f"{path}: question {where}: no {kg_field!r} field naming its KG (--kg-field)")
        groups.setdefault(str(value).strip(), []).append(raw)
    names = {value: _kg_name(path, value) for value in groups}
    refuse_case_twins(list(dict.fromkeys(names.values())), str(path))
    if replace is not None and replace not in names.values():
        raise InputError(f"{path}: --replace {replace}: no question is asked over that KG (KGs: {', '.join(sorted(names.values()))})")
    kgs, problems = [], []
    for value, raws in sorted(groups.items()):
        if replace is not None and names[value] != replace:
            continue
        try:
            kgs.append(_kg_import(path, doc, raws, names[value], _kg_data_files(Path(kg_dir), value), lang, domain, id_prefix,
                                  rules, extra={"kg_field": kg_field, "kg_value": value}))
        except QuestionProblems as exc:  # every KG's bad questions in one message
            problems.append(exc)
    if problems:
        raise QuestionProblems.combined(problems, sum(len(groups[v]) for v in groups if replace is None or names[v] == replace))
    return write_kgs(out, kgs, replace=replace)


def _read_qald(path: Path) -> dict:
    check_input_file(path, "QALD file")
    try:
        doc = parse_json(Path(path).read_bytes(), str(path), "QALD JSON")
    except OSError as exc:
        raise InputError(f"{path}: cannot read QALD JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("questions"), list):
        raise InputError(f"{path}: expected an object with a 'questions' list")
    return doc


def _kg_import(
    path: Path, doc: dict, raws: list, name: str, files: list[Path], lang: str, domain: str | None,
    id_prefix: str | None, rules: QuestionRules, extra: dict | None = None,
) -> KgImport:
    dataset = doc.get("dataset") if isinstance(doc.get("dataset"), dict) else {}
    prefix = id_prefix or name
    # several KGs of one file (--kg-dir) repeat source ids: their messages name the KG too
    source = Path(f"{path} (KG {name})") if extra and "kg_value" in extra else path
    questions = read_questions(raws, lambda raw, i: _question(source, raw, i, prefix, lang, domain or name, rules))
    provenance = {
        "format": "qald",
        "dataset": str(dataset.get("id", "")),
        "lang": lang,
        **({"declared_prefixes": dict(rules.prefixes)} if rules.prefixes else {}),
        "sha256": sha256_file(path),
        **(extra or {}),
        "ids": {q.id: str(raw["id"]) for q, raw in zip(questions, raws)},
    }
    return KgImport(name, str(dataset.get("id") or name), questions, {f: "" for f in files}, provenance)


def _kg_name(path: Path, value: str) -> str:
    """A KG directory name from the question's KG field, as the benchmark writes it (`kg_name`)."""
    name = kg_name(Path(value).stem)
    if not name:
        raise InputError(f"{path}: KG {value!r} gives no usable directory name")
    return name


def _kg_data_files(kg_dir: Path, value: str) -> list[Path]:
    """The RDF files of KG `value` under `kg_dir`: its directory, or the one file named so."""
    if not kg_dir.is_dir():
        raise InputError(f"{kg_dir}: --kg-dir is not a directory")
    candidates = [kg_dir / value, kg_dir / Path(value).stem]
    for directory in (c for c in candidates if c.is_dir()):
        _inside(kg_dir, value, directory)
        files = sorted(p for p in directory.iterdir() if _is_rdf(p))
        if not files:
            raise InputError(f"{directory}: KG {value!r} has no RDF file (.ttl, .nt, .nq, .trig, .rdf, .owl)")
        return [_inside(kg_dir, value, p) for p in files]
    files = [p for p in sorted(kg_dir.iterdir()) if _is_rdf(p) and p.stem in (value, Path(value).stem)]
    if len(files) == 1:
        return [_inside(kg_dir, value, files[0])]
    if len(files) > 1:
        raise InputError(f"{kg_dir}: KG {value!r} matches {', '.join(p.name for p in files)}: keep one, or put them in {kg_dir / value}/")
    raise InputError(f"{kg_dir}: no data for KG {value!r} (a directory {value}/ or a file {value}.ttl, .nt, ...)")


def _inside(kg_dir: Path, value: str, path: Path) -> Path:
    """`path`, when it lies within `kg_dir` once `..` and symbolic links are followed. The KG
    field is the benchmark file's text: `"kg": "../../other"`, an absolute path or a link out of
    the directory would copy RDF from anywhere on the machine into the holdout."""
    root, target = kg_dir.resolve(), path.resolve()
    if target == root or not target.is_relative_to(root):
        raise InputError(f"{kg_dir}: KG {value!r}: {path} lies outside --kg-dir (it is {target}); a KG's data is a directory or file in --kg-dir")
    return path


def _is_rdf(path: Path) -> bool:
    try:
        return path.is_file() and rdf_format(path) is not None
    except InputError:
        return False


def _question(source: Path, raw: object, index: int, prefix: str, lang: str, domain: str, rules: QuestionRules) -> Question:
    if not isinstance(raw, dict) or "id" not in raw:
        raise InputError(f"{source}: question #{index}: expected an object with an 'id'")
    qid = raw["id"]
    texts = {t.get("language"): t.get("string") for t in raw.get("question") or [] if isinstance(t, dict)}
    if not texts.get(lang):
        raise InputError(f"{source}: question {qid}: no {lang!r} text (languages given: {', '.join(map(str, texts)) or 'none'}); choose one with --lang")
    query = raw.get("query")
    sparql = query.get("sparql") if isinstance(query, dict) else None
    if not isinstance(sparql, str) or not sparql.strip():
        raise InputError(f"{source}: question {qid}: no query.sparql")
    tags = []
    if raw.get("answertype") == "boolean":
        tags.append(Tag.ASK.value)
    if raw.get("aggregation") in (True, "true"):
        tags.append(Tag.AGGREGATE.value)
    fields = {"id": f"{prefix}-{qid}", "question": texts[lang].strip(), "sparql": sparql, "domain": domain, "tags": tags}
    return check_question(source, fields, qid, rules)


def term_binding(term: Term) -> dict[str, str]:
    """A result cell in the SPARQL 1.1 JSON results format."""
    binding = {"type": term.type, "value": term.value}
    if term.lang:
        binding["xml:lang"] = term.lang
    elif term.datatype:
        binding["datatype"] = term.datatype
    return binding


def binding_term(binding: dict[str, str]) -> Term:
    """The inverse of `term_binding`; also reads Virtuoso's "typed-literal"."""
    kind = binding.get("type")
    if kind == "uri":
        return Term.iri(binding["value"])
    if kind == "bnode":
        return Term.bnode(binding["value"])
    return Term.literal(binding["value"], binding.get("datatype"), binding.get("xml:lang"))


def result_answers(result: QueryResult) -> list[dict[str, Any]]:
    """A QALD `answers` list holding one SPARQL JSON result."""
    if result.form == "ask":
        return [{"head": {}, "boolean": bool(result.boolean)}]
    bindings = [
        {var: term_binding(cell) for var, cell in zip(result.vars, row) if cell is not None}
        for row in result.rows
    ]
    return [{"head": {"vars": list(result.vars)}, "results": {"bindings": bindings}}]


def _qald_question(kg: KnowledgeGraph | None, qid: str, text: str, lang: str, sparql: str | None, answers: list | None) -> dict:
    """One QALD question. A KG imported from a benchmark over several KGs gets back the field
    that named it there (--kg-field): QALD-9-plus numbers its DBpedia and Wikidata versions
    alike, and a source id two KGs share is matched to its question by that field (the replay
    reads it so)."""
    source = kg.source if kg else {}
    record: dict[str, Any] = {"id": source.get("ids", {}).get(qid, qid)}
    if source.get("kg_field"):
        record[source["kg_field"]] = source["kg_value"]
    record["question"] = [{"language": lang, "string": text}]
    if sparql:
        record["query"] = {"sparql": sparql}
    if answers is not None:  # None: no answer to give (`QaldRunExport.unanswered` says why)
        record["answers"] = answers
    return record


def gold_to_qald(holdout: Holdout, gold: dict[str, GoldEntry]) -> dict[str, Any]:
    """The holdout's questions with their gold answers as QALD JSON.

    A truncated gold exports its kept rows only, and a tied one one acceptable answer: the
    caller should warn about entries whose `flags` say so (the CLI does). A question excluded
    on record without a gold entry (its reference query failed) is left out: the caller should
    name it (`excluded_without_gold`).
    """
    questions = []
    for kg in holdout.kgs:
        lang = kg.source.get("lang", "en")
        for q in kg.questions:
            if q.id not in gold and q.id in holdout.exclusions:
                continue
            if q.id not in gold:
                raise InputError(f"{kg.id}/{q.id}: no gold entry; run `kgeval gold rebuild` (a failing reference query: fix it, or exclude it on record)")
            questions.append(_qald_question(kg, q.id, q.question, lang, q.sparql, result_answers(gold[q.id].result)))
    return {"dataset": {"id": _dataset_id(holdout)}, "questions": questions}


def excluded_without_gold(holdout: Holdout, gold: dict[str, GoldEntry]) -> list[str]:
    """Questions excluded on record that have no gold entry, "QID (excluded on record: why)":
    what `gold_to_qald` leaves out."""
    return [f"{q} (excluded on record: {e.why})" for q, e in sorted(holdout.exclusions.items()) if q not in gold]


def _dataset_id(holdout: Holdout) -> str:
    ids = {kg.source.get("dataset") or kg.id for kg in holdout.kgs}
    return ids.pop() if len(ids) == 1 else holdout.root.name


UnansweredKind = Literal["query_failed", "harness_error", "not_executed"]


@dataclass(frozen=True)
class Unanswered:
    """A question of a run's QALD export written with no `answers`, and why."""

    question_id: str
    kind: UnansweredKind
    """query_failed: its SPARQL failed when executed again (as the run executed it);
    harness_error: the attempt ended in a harness error; not_executed: no holdout was given to
    execute its SPARQL on."""
    why: str


@dataclass(frozen=True)
class QaldRunExport:
    """One seed of a run as QALD JSON, and the questions written without answers."""

    doc: dict[str, Any]
    """The QALD JSON document."""
    unanswered: list[Unanswered] = field(default_factory=list)
    """Questions written with no `answers`: QALD has no failed state, and an empty answer would
    be scored as an answer (right where the gold is empty), so none is written and the question
    is named here. A failed query whose attempt also gave an answer list is here too, though
    that list is exported."""


def run_to_qald(
    db: ResultsDB, run_id: str, seed: int, *, lang: str = "en",
    holdout: Holdout | None = None, store_for: Callable[[KnowledgeGraph], Store] | None = None,
    config: KgevalConfig | None = None,
) -> QaldRunExport:
    """One seed of a run as QALD JSON. With `holdout` and `store_for`, a system's SPARQL is
    executed again as the run executed it (`kgeval.runs.execute_candidate`: guarded, sandboxed,
    bounded, with the predeclared prefixes; `config` defaults to the one the run recorded) for
    typed answers, and ids are mapped back to the source's; otherwise the answer items the
    system gave are exported, typed as the judges read them (an IRI, bracketed or not, as uri;
    the rest as literals). A question with no answer to give keeps no `answers` and is named in
    `unanswered`."""
    asked = {q.question_id: q for q in db.questions(run_id)}
    attempts = [a for a in db.attempts(run_id) if a.seed == seed]
    if not attempts:
        raise InputError(f"{db.path}: run {run_id} has no attempts with seed {seed}")
    cfg = config or run_config(db.metadata(run_id))
    kgs = {kg.id: kg for kg in holdout.kgs} if holdout else {}
    if holdout is not None:  # the holdout's order, not the database's sort by id
        position = {q.id: i for i, q in enumerate(holdout.questions())}
        attempts.sort(key=lambda a: position.get(a.question_id, len(position)))
    stores: dict[str, Store] = {}
    questions, unanswered = [], []
    for attempt in attempts:
        kg = kgs.get(attempt.kg)
        store = stores.setdefault(kg.id, store_for(kg)) if kg is not None and store_for is not None and attempt.sparql else None
        answers, problem = _attempt_answers(attempt, store, cfg)
        if problem is not None:
            unanswered.append(Unanswered(attempt.question_id, *problem))
        text = asked[attempt.question_id].question if attempt.question_id in asked else ""
        questions.append(_qald_question(kg, attempt.question_id, text, lang, attempt.sparql, answers))
    return QaldRunExport({"dataset": {"id": run_id}, "questions": questions}, unanswered)


def _attempt_answers(attempt: Attempt, store: Store | None, cfg: KgevalConfig) -> tuple[list | None, tuple[UnansweredKind, str] | None]:
    """(QALD answers or None, (kind, why) when there are none). A judged attempt's SPARQL is
    executed again on `store` as the run executed it; its answer list is exported when it has no
    SPARQL, or when its SPARQL fails again (the failure is still named)."""
    if attempt.state not in ("answered", "incomplete"):
        return None, ("harness_error", f"the attempt ended in a harness error ({attempt.error_kind})")
    if not attempt.sparql:
        return _item_answers(attempt.answer or []), None
    if store is None:
        if attempt.answer is not None:
            return _item_answers(attempt.answer), None
        return None, ("not_executed", "its SPARQL was not executed (no holdout given)")
    execution = execute_candidate(attempt.sparql, store, cfg)
    if execution.result is not None:
        return result_answers(execution.result), None
    why = f"its SPARQL failed when executed as the run executed it ({execution.error})"
    if attempt.answer is not None:
        return _item_answers(attempt.answer), ("query_failed", why + "; its answer list is exported")
    return None, ("query_failed", why)


def _item_answers(items: list[Any]) -> list[dict[str, Any]]:
    if len(items) == 1 and isinstance(items[0], bool):
        return [{"head": {}, "boolean": items[0]}]
    return [{"head": {"vars": ["answer"]}, "results": {"bindings": [{"answer": term_binding(_item_term(i))} for i in items]}}]


def _item_term(item: Any) -> Term:
    """A JSON boolean or number as its XSD literal; a text as the judges read it (`item_term`:
    `<http://x/a>` is the IRI, as it was judged), so the export says what was scored."""
    if isinstance(item, bool):
        return Term.literal(str(item).lower(), "http://www.w3.org/2001/XMLSchema#boolean")
    if isinstance(item, int):
        return Term.literal(str(item), "http://www.w3.org/2001/XMLSchema#integer")
    if isinstance(item, float):
        return Term.literal(repr(item), "http://www.w3.org/2001/XMLSchema#double")
    return item_term(str(item))
