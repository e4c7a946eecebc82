"""Loading a holdout directory, with errors that name the file and the question."""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from kgeval._files import check_input_file, parse_yaml, present, sha256_bytes
from kgeval.errors import InputError, KgevalError, first_validation_error
from kgeval.holdout._confirmed import CONFIRMED_EMPTY_FILE, load_empty_confirmations
from kgeval.holdout._exclusions import EXCLUSIONS_FILE, load_exclusions
from kgeval.holdout._manifest import MANIFEST, RDF_SUFFIXES, outside_manifest, sealed_manifest
from kgeval.holdout._model import Holdout, KnowledgeGraph, Question

QUESTIONS_FILE = "questions.yaml"


class _QuestionsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kg: str
    title: str = ""
    graphs: dict[str, str] = {}
    source: dict = {}
    questions: list[dict]


def load_holdout(root: Path) -> Holdout:
    """Every subdirectory of `root` holding a questions.yaml is one KG."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"{root}: holdout directory does not exist ({_where_holdouts_are_found(root)})")
    # read exactly what the manifest covers (`_holdout_files`): no hidden or `__pycache__`
    # directory, and no symbolic link to a directory, whose files a manifest would not hold
    # a questions.yaml that is there but is not a file (a directory in its place) is a damaged
    # KG, named by `_load_kg`, never a directory that holds no KG
    kgs = [_load_kg(d) for d in sorted(root.iterdir()) if not outside_manifest(d.name) and _holds_questions(d)]
    if not kgs:
        raise InputError(f"{root}: no KG directories with a {QUESTIONS_FILE}")
    seen: dict[str, str] = {}
    for kg in kgs:
        for q in kg.questions:
            if q.id in seen:
                raise InputError(f"{root}/{kg.id}/{QUESTIONS_FILE}: question id {q.id!r} is also used in KG {seen[q.id]!r}")
            seen[q.id] = kg.id
    exclusions = load_exclusions(root)
    unknown = sorted(set(exclusions) - set(seen))
    if unknown:
        raise InputError(f"{root / EXCLUSIONS_FILE}: excludes {', '.join(unknown)}, not a question of this holdout")
    confirmed = load_empty_confirmations(root)
    unknown = sorted(set(confirmed) - set(seen))
    if unknown:
        raise InputError(f"{root / CONFIRMED_EMPTY_FILE}: confirms {', '.join(unknown)}, not a question of this holdout")
    return Holdout(root=root, kgs=tuple(kgs), exclusions=exclusions, confirmed_empty=confirmed)


def _load_kg(kg_dir: Path) -> KnowledgeGraph:
    if kg_dir.is_symlink():
        raise InputError(f"{kg_dir}: a KG directory may not be a symbolic link (the holdout's manifest does not cover what it points to)")
    path = kg_dir / QUESTIONS_FILE
    check_input_file(path, "questions file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: questions file is damaged or unreadable ({exc.strerror or exc}); {RESTORE_QUESTIONS}") from None
    if not data.strip():
        raise InputError(f"{path}: questions file is empty ({len(data)} bytes): damaged; {RESTORE_QUESTIONS}")
    try:
        raw = parse_yaml(data.decode("utf-8"), f"{path}: questions file")
        parsed = _QuestionsFile.model_validate(raw)
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}{_damage_hint(path, data)}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text: {exc}{_damage_hint(path, data)}") from None
    except ValidationError as exc:
        raise InputError(f"{path}: {first_validation_error(exc)}{_damage_hint(path, data)}") from None
    if parsed.kg != kg_dir.name:
        raise InputError(f"{path}: kg is {parsed.kg!r} but the directory is {kg_dir.name!r}")
    files = tuple(sorted(p for p in kg_dir.iterdir() if p.suffix.lower() in RDF_SUFFIXES and not outside_manifest(p.name)))
    for file in files:
        if not file.is_file():  # a directory in a data file's place: never a KG with one file fewer
            raise InputError(f"{file}: KG data file is damaged (not a file); {RESTORE_QUESTIONS}")
    if not files:
        raise InputError(f"{kg_dir}: no RDF file ({', '.join(RDF_SUFFIXES)})")
    unknown = sorted(set(parsed.graphs) - {f.name for f in files})
    if unknown:
        raise InputError(f"{path}: graphs names {', '.join(unknown)}, not an RDF file of {kg_dir}")
    questions = tuple(_load_question(path, i, raw_q, kg_dir.name) for i, raw_q in enumerate(parsed.questions, 1))
    return KnowledgeGraph(
        id=kg_dir.name, title=parsed.title or kg_dir.name, files=files, questions=questions,
        graphs=parsed.graphs, source=parsed.source,
    )


def _damage_hint(path: Path, data: bytes) -> str:
    """Whether a questions file that does not load differs from the sealed manifest: then it
    may be damaged (cut, zeroed, a byte changed) rather than mistyped."""
    try:
        manifest = sealed_manifest(path.parent.parent)
    except KgevalError:
        return f"\n{path.parent.parent / MANIFEST} is damaged too"
    sealed = manifest["files"].get(f"{path.parent.name}/{path.name}") if manifest else None
    if sealed is None or sealed == sha256_bytes(data):
        return ""
    return f"\nIt differs from {path.parent.parent / MANIFEST} (sha256 differs): damaged or edited since the holdout was sealed; {RESTORE_QUESTIONS}"


def _holds_questions(directory: Path) -> bool:
    path = directory / QUESTIONS_FILE
    return directory.is_dir() and present(path)


RESTORE_QUESTIONS = "restore it from a backup (e.g. `git checkout -- holdout/`), then run `kgeval holdout verify`"


def _load_question(path: Path, index: int, raw: dict, kg_id: str) -> Question:
    label = f"question {raw.get('id', f'#{index}')}" if isinstance(raw, dict) else f"question #{index}"
    try:
        return Question.model_validate({**raw, "kg": kg_id})
    except (ValidationError, TypeError) as exc:
        detail = first_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
        raise InputError(f"{path}: {label}: {detail}") from None



def _where_holdouts_are_found(root: Path) -> str:
    """How the CLI finds a holdout not given with --holdout, and where it looked."""
    home = os.environ.get("KGEVAL_HOME")
    looked = f"KGEVAL_HOME={home} holds none either" if home else "KGEVAL_HOME is not set"
    return f"give --holdout DIR, or set KGEVAL_HOME to a directory holding holdout/; without --holdout, ./holdout is used, else $KGEVAL_HOME/holdout: {looked}"
