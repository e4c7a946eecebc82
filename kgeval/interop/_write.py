"""Writing an imported KG into a holdout directory in our format, then sealing the holdout."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from kgeval.config import PREDECLARED_PREFIXES
from kgeval.errors import EngineFunctionRefused, InputError, QueryError, QuerySyntaxError
from kgeval.holdout import MANIFEST, QUESTIONS_FILE, Question, Tag, holdout_problems, load_holdout, seal_holdout
from kgeval.interop._infer import has_order_by, inferred_tags
from kgeval.interop._rdf import DataFileNote, import_data_file
from kgeval.stores import guard_query


class _BlockDumper(yaml.SafeDumper):
    """Writes multi-line strings (the reference SPARQL) as readable `|` blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    block = "\n" in value and not any(line != line.rstrip() for line in value.splitlines())
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if block else None)


_BlockDumper.add_representer(str, _str)


@dataclass
class ImportReport:
    """What an import wrote."""

    kg_dir: Path
    questions: int
    files: dict[str, str]
    """Data file name -> the named graph IRI it came from ("" for none)."""
    excluded: dict[str, str] = field(default_factory=dict)
    """Source file -> why it was left out of the KG."""
    manifest_sha256: str = ""
    data: list[DataFileNote] = field(default_factory=list)
    """How each data file came in: copied, or repaired (with counts); one line each."""
    replaced: bool = False
    """The KG existed and was replaced (--replace)."""
    refused: dict[str, str] = field(default_factory=dict)
    """Question id -> why the guard refuses its reference query (imported as written: `gold
    rebuild` records it failed, and a run waits until it is excluded on record)."""


@dataclass
class KgImport:
    """One KG an importer read, ready to write."""

    name: str
    title: str
    questions: list[Question]
    files: dict[Path, str]
    """Source data file -> the named graph IRI it came from ("" for none)."""
    source: dict
    excluded: dict[str, str] = field(default_factory=dict)


def kg_name(value: str) -> str:
    """A KG directory name from a source's name for it, as the source writes it: its case kept
    (`cre_Doc_Template_Mgt` stays so, and so do the question ids made from it: a benchmark's own
    ids are accepted by every command and join with its files), any run of characters other
    than [A-Za-z0-9_-] one `-` ("" if none)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", value).strip("-")


def refuse_case_twins(names: list[str], where: str) -> None:
    """InputError when two KG names differ only in case: on a case-insensitive file system
    (macOS, Windows) they would be one directory."""
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(name.casefold(), name)
        if other != name:
            raise InputError(f"{where}: KGs {other!r} and {name!r} differ only in case: one directory on a case-insensitive file system; import one with --replace or rename it")


class QuestionProblem(InputError):
    """One question that cannot be imported; `undeclared_prefix`: the prefix its reference query
    uses without declaring it, when that is why."""

    def __init__(self, message: str, undeclared_prefix: str | None = None) -> None:
        super().__init__(message)
        self.undeclared_prefix = undeclared_prefix


_SHOWN = 25
"""Problems an import's error lists one by one."""


class QuestionProblems(InputError):
    """Questions of an import that cannot be imported, every one named (not only the first:
    a benchmark of a thousand questions is fixed in one pass). Undeclared prefixes, the usual
    cause by far (a benchmark written for an endpoint that predefines them), are counted per
    prefix on one line, and the other problems listed first: a query that really does not
    parse is not lost among a hundred `dbo:` lines."""

    def __init__(self, problems: list[tuple[str, str | None]], total: int) -> None:
        self.problems, self.total = problems, total
        others = [message for message, prefix in problems if prefix is None]
        by_prefix = Counter(prefix for _, prefix in problems if prefix is not None)
        lines = others + [message for message, prefix in problems if prefix is not None]
        shown = lines[:_SHOWN] + ([f"... and {len(lines) - _SHOWN} more"] if len(lines) > _SHOWN else [])
        if by_prefix:
            counts = ", ".join(f"{name}: in {n}" for name, n in sorted(by_prefix.items(), key=lambda item: (-item[1], item[0])))
            rest = (
                f"the {len(others)} other problem(s) first, below" if others
                else "no other problem found yet (a query is read further once its prefixes are declared)"
            )  # fmt: skip
            shown.insert(0, (
                f"{sum(by_prefix.values())} use prefixes they do not declare (the first one each: {counts}): declare them for the whole import "
                f"with --prefix NAME=<namespace IRI> or --prefixes FILE; {rest}"
            ))  # fmt: skip
        text = "\n  ".join(shown)
        super().__init__(f"{len(problems)} of {total} questions cannot be imported (nothing was written):\n  {text}")

    @classmethod
    def combined(cls, errors: list[QuestionProblems], total: int) -> QuestionProblems:
        return cls([p for e in errors for p in e.problems], total)


def read_questions(raws: list, read: Callable[[object, int], Question]) -> list[Question]:
    """`read(raw, index)` of every raw question (index from 1); QuestionProblems naming each
    one that raised InputError."""
    questions, problems = [], []
    for i, raw in enumerate(raws, 1):
        try:
            questions.append(read(raw, i))
        except InputError as exc:
            problems.append((str(exc), getattr(exc, "undeclared_prefix", None)))
    if problems:
        raise QuestionProblems(problems, len(raws))
    return questions


class QuestionRules(BaseModel):
    """How an importer turns a source's question into ours (the CLI's import options)."""

    model_config = ConfigDict(frozen=True)

    order_by_sensitive: bool = True
    """A reference query with a top-level ORDER BY marks the question order-sensitive."""
    prefixes: dict[str, str] = {}
    """Prefix name -> namespace IRI, declared in a reference query that uses the prefix without
    declaring it (benchmarks written for an endpoint with predefined prefixes, such as QALD's
    `res:`/`dbo:` on DBpedia's Virtuoso). The stored query then declares it: self-contained."""


def check_question(source: Path, raw: dict, original_id: object, rules: QuestionRules = QuestionRules()) -> Question:
    """Validate one imported question: the model, and that its reference SPARQL parses as a
    read-only SELECT/ASK (after declaring the prefixes `rules` gives that it uses undeclared).
    Adds the type inferred from the query (kgeval.interop._infer) to the source's tags, and
    marks a query with ORDER BY order-sensitive per `rules`. Errors name the source file and
    the question's original id."""
    try:
        question = Question.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(f"{source}: question {original_id}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    try:
        sparql = declare_prefixes(question.sparql, rules.prefixes)
        tags = sorted({*(t.value for t in question.tags), *inferred_tags(sparql)})
        ordered = question.order_sensitive or (rules.order_by_sensitive and has_order_by(sparql))
    except EngineFunctionRefused:
        # the benchmark's query, valid for the engine it was written for (Virtuoso's `bif:`
        # functions), which the guard will not run: imported as it is, named in the import's
        # summary (`ImportReport.refused`); `gold rebuild` records it failed, to be excluded
        return question.model_copy(update={"sparql": sparql})
    except QueryError as exc:
        prefix = exc.undeclared_prefix if isinstance(exc, QuerySyntaxError) else None
        hint = f"; or declare it for the whole import with --prefix {prefix}=<namespace IRI>" if prefix else ""
        raise QuestionProblem(f"{source}: question {original_id}: reference SPARQL: {exc}{hint}", prefix) from None
    return question.model_copy(update={"sparql": sparql, "tags": tuple(Tag(t) for t in tags), "order_sensitive": ordered})


_PREFIX_NAME = re.compile(r"(?:[A-Za-z](?:[\w.-]*[\w-])?)?")
_NAMESPACE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^<>\"{}|^`\\\x00-\x20]*")
_DECLARATION = re.compile(r"\s*@?prefix\s+(\S*?):\s*<([^>]*)>\s*\.?\s*(?:#.*)?", re.IGNORECASE)


def prefix_table(pairs: list[str], files: list[Path]) -> dict[str, str]:
    """The prefixes to declare at import, from `NAME=IRI` pairs (`--prefix`) and from files of
    SPARQL or Turtle declarations (`--prefixes`: `PREFIX dbo: <...>` or `@prefix dbo: <...> .`
    lines; blank and `#` lines skipped), or a known endpoint's own list (`--prefixes wikidata`,
    `config.PREDECLARED_PREFIXES`). A name given twice must name one IRI."""
    table: dict[str, str] = {}
    entries = [(f"--prefix {pair}", *pair.partition("=")[::2]) for pair in pairs if "=" in pair]
    if bad := [pair for pair in pairs if "=" not in pair]:
        raise InputError(f"--prefix {bad[0]}: expected NAME=IRI, e.g. --prefix dbo=http://dbpedia.org/ontology/")
    for file in files:
        entries += _declarations(Path(file))
    for where, name, iri in entries:
        name = name.removesuffix(":")
        if not _PREFIX_NAME.fullmatch(name) or not _NAMESPACE.fullmatch(iri):
            raise InputError(f"{where}: not a prefix name and an absolute IRI ({name!r}, {iri!r})")
        if table.setdefault(name, iri) != iri:
            raise InputError(f"{where}: prefix {name}: is already <{table[name]}>")
    return table


def _declarations(path: Path) -> list[tuple[str, str, str]]:
    if str(path) in PREDECLARED_PREFIXES and not path.exists():  # a known endpoint's list: `--prefixes wikidata`
        return [(f"--prefixes {path}", name, iri) for name, iri in PREDECLARED_PREFIXES[str(path)].items()]
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the prefix file: {exc}") from None
    found = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not (match := _DECLARATION.fullmatch(line)):
            raise InputError(f"{path}:{number}: expected 'PREFIX name: <iri>' or '@prefix name: <iri> .', got {line.strip()[:80]!r}")
        found.append((f"{path}:{number}", match[1], match[2]))
    return found


def declare_prefixes(sparql: str, prefixes: dict[str, str]) -> str:
    """`sparql` with `PREFIX p: <iri>` put before it for each prefix in `prefixes` it uses
    without declaring (the guard decides what is used: a `dbo:` inside a string or an IRI is
    not a use), unchanged when it declares all it uses; raises the guard's error otherwise."""
    text = sparql
    while True:
        try:
            guard_query(text)
            return text
        except EngineFunctionRefused:
            return text  # refused after the lexer read every prefix: each one it lacked is declared
        except QuerySyntaxError as exc:
            if exc.undeclared_prefix not in prefixes:
                raise
            text = f"PREFIX {exc.undeclared_prefix}: <{prefixes[exc.undeclared_prefix]}>\n{text}"


def write_kg(
    out: Path, name: str, title: str, questions: list[Question], files: dict[Path, str], source: dict, *, replace: bool = False
) -> ImportReport:
    """Write `out/name/` (questions.yaml + the data files) and seal `out`: `write_kgs` for one."""
    return write_kgs(out, [KgImport(name, title, questions, files, source)], replace=name if replace else None)[0]


def write_kgs(out: Path, kgs: list[KgImport], *, replace: str | None = None) -> list[ImportReport]:
    """Write each KG's directory under `out` (questions.yaml + its data files, repaired where a
    store could not load them), check the holdout loads, and seal it once.

    Refuses to overwrite an existing KG unless it is the one named by `replace` (which then
    must exist), and to reseal a holdout that no longer matches its manifest (sealing would
    bless whatever changed it). All or nothing: on any error every KG written is removed and a
    replaced one put back.
    """
    out = Path(out)
    _check_target(out, kgs, replace)
    staged: list[tuple[Path, Path | None]] = []  # (kg dir written, old dir moved aside)
    reports = []
    try:
        for kg in kgs:
            report, old = _write_one(out, kg)
            staged.append((report.kg_dir, old))
            reports.append(report)
        load_holdout(out)  # the written KGs must load (and their ids not clash with other KGs)
    except BaseException:
        for kg_dir, old in reversed(staged):
            shutil.rmtree(kg_dir, ignore_errors=True)
            if old is not None:
                old.rename(kg_dir)
        raise
    for _, old in staged:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    digest = seal_holdout(out)
    for report in reports:
        report.manifest_sha256 = digest
    return reports


def _refused(questions: list[Question]) -> dict[str, str]:
    """Question id -> why the guard refuses its reference query, for those it refuses."""
    refused = {}
    for question in questions:
        try:
            guard_query(question.sparql)
        except EngineFunctionRefused as exc:
            refused[question.id] = str(exc)
    return refused


def _check_target(out: Path, kgs: list[KgImport], replace: str | None) -> None:
    if replace is not None and not (out / replace).is_dir():
        raise InputError(f"{out / replace}: --replace names a KG that is not in the holdout")
    for kg in kgs:
        if (out / kg.name).exists() and kg.name != replace:
            raise InputError(f"{out / kg.name}: already exists; remove it, import under another --name, or re-import it with --replace {kg.name}")
    held = [p.name for p in out.iterdir() if p.is_dir()] if out.is_dir() else []
    for kg in kgs:
        refuse_case_twins([name for name in held if name != kg.name] + [kg.name], str(out))
    if (out / MANIFEST).is_file():
        problems = holdout_problems(out)
        if problems:
            raise InputError(f"{out}: does not match its {MANIFEST}, refusing to reseal it:\n  " + "\n  ".join(problems))


def _write_one(out: Path, kg: KgImport) -> tuple[ImportReport, Path | None]:
    """Write one KG directory (moving an existing one aside first); (report, the old dir)."""
    names = [p.name for p in kg.files]
    if len(set(names)) != len(names) or QUESTIONS_FILE in names:
        raise InputError(f"{kg.name}: data file names collide: {', '.join(sorted(names))}")
    kg_dir, old = out / kg.name, None
    if kg_dir.exists():
        old = out.parent / f".{out.name}.{kg.name}.replaced"  # outside the holdout: it must not load
        shutil.rmtree(old, ignore_errors=True)
        kg_dir.rename(old)
    kg_dir.mkdir(parents=True)
    try:
        notes = [import_data_file(path, kg_dir) for path in kg.files]
        graphs = {note.written: kg.files[note.source] for note in notes if kg.files[note.source]}
        doc = {
            "kg": kg.name,
            "title": kg.title,
            "graphs": graphs,
            "source": kg.source,
            "questions": [q.model_dump(mode="json", exclude={"kg"}, exclude_defaults=True) for q in kg.questions],
        }
        (kg_dir / QUESTIONS_FILE).write_text(yaml.dump(doc, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
    except BaseException:
        shutil.rmtree(kg_dir, ignore_errors=True)
        if old is not None:
            old.rename(kg_dir)
        raise
    files = {note.written: kg.files[note.source] for note in notes}
    report = ImportReport(
        kg_dir=kg_dir, questions=len(kg.questions), files=files, excluded=kg.excluded, data=notes, replaced=old is not None, refused=_refused(kg.questions)
    )
    return report, old
