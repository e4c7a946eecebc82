"""Writing an imported KG into a holdout directory in our format, then sealing the holdout."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import ValidationError

from kgeval.errors import InputError, QueryError
from kgeval.holdout import MANIFEST, QUESTIONS_FILE, Question, holdout_problems, load_holdout, seal_holdout
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


def check_question(source: Path, raw: dict, original_id: object) -> Question:
    """Validate one imported question: the model, and that its reference SPARQL parses as a
    read-only SELECT/ASK. Errors name the source file and the question's original id."""
    try:
        question = Question.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(f"{source}: question {original_id}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    try:
        guard_query(question.sparql)
    except QueryError as exc:
        raise InputError(f"{source}: question {original_id}: reference SPARQL: {exc}") from None
    return question


def write_kg(
    out: Path, name: str, title: str, questions: list[Question], files: dict[Path, str], source: dict
) -> ImportReport:
    """Write `out/name/` (questions.yaml + the data files copied as they are) and seal `out`.

    Refuses to overwrite an existing KG, and to reseal a holdout that no longer matches its
    manifest (sealing would bless whatever changed it).
    """
    out = Path(out)
    kg_dir = out / name
    if kg_dir.exists():
        raise InputError(f"{kg_dir}: already exists; remove it or import under another --name")
    if (out / MANIFEST).is_file():
        problems = holdout_problems(out)
        if problems:
            raise InputError(f"{out}: does not match its {MANIFEST}, refusing to reseal it:\n  " + "\n  ".join(problems))
    names = [p.name for p in files]
    if len(set(names)) != len(names) or QUESTIONS_FILE in names:
        raise InputError(f"data file names collide: {', '.join(sorted(names))}")
    kg_dir.mkdir(parents=True)
    try:
        for path in files:
            shutil.copyfile(path, kg_dir / path.name)
        doc = {
            "kg": name,
            "title": title,
            "graphs": {p.name: iri for p, iri in files.items() if iri},
            "source": source,
            "questions": [q.model_dump(mode="json", exclude={"kg"}, exclude_defaults=True) for q in questions],
        }
        (kg_dir / QUESTIONS_FILE).write_text(yaml.dump(doc, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
        load_holdout(out)  # the written KG must load (and its ids not clash with other KGs)
    except BaseException:
        shutil.rmtree(kg_dir, ignore_errors=True)
        raise
    digest = seal_holdout(out)
    return ImportReport(kg_dir=kg_dir, questions=len(questions), files={p.name: iri for p, iri in files.items()}, manifest_sha256=digest)
