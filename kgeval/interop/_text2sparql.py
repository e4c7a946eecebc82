"""Import a TEXT2SPARQL dataset (`questions.yml` + `graphs/*.ttl` with `*.ttl.graph` files).

Named graphs: each file's graph IRI is kept in questions.yaml (`graphs:`), and the embedded
store loads the file into its default graph and into that graph, as the challenge's endpoint
serves the union of the dataset's graphs: a reference query without GRAPH (CK25's) reads all
the data, one with `FROM <g>` or `GRAPH ?g` reads the graphs (tests/interop check CK25 file by
file in named graphs with a union default graph, and GRAPH/FROM queries on their graphs). A graph that holds the reference queries themselves (CK25's
`queries.ttl` catalogue) is the answer key: it is left out of the KG, and recorded as left
out, so no system under test can read the gold SPARQL from the store.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pyoxigraph as ox

from kgeval._files import read_yaml
from kgeval.errors import InputError
from kgeval.holdout import Question, Tag
from kgeval.interop._rdf import repaired_triples, strict_triples
from kgeval.interop._write import ImportReport, KgImport, QuestionRules, check_question, kg_name, read_questions, refuse_case_twins, write_kgs
from kgeval.stores import rdf_format

QUESTIONS = "questions.yml"
GRAPHS = "graphs"

_FEATURE_TAGS = {"ASK": Tag.ASK, "COUNT": Tag.COUNT, "GROUP": Tag.AGGREGATE, "AVG": Tag.AGGREGATE,
                 "SUM": Tag.AGGREGATE, "MIN": Tag.AGGREGATE, "MAX": Tag.AGGREGATE}


def import_text2sparql(
    path: Path, name: str, out: Path, *, lang: str = "en", domain: str | None = None, id_prefix: str | None = None,
    replace: bool = False, rules: QuestionRules = QuestionRules(),
) -> ImportReport:
    """Import the TEXT2SPARQL dataset at `path` as KG `name` of the holdout at `out`, and seal."""
    kg = read_text2sparql(path, name, lang=lang, domain=domain, id_prefix=id_prefix, rules=rules)
    return write_kgs(out, [kg], replace=name if replace else None)[0]


def import_text2sparql_datasets(
    paths: list[Path], out: Path, *, lang: str = "en", replace: str | None = None, rules: QuestionRules = QuestionRules()
) -> list[ImportReport]:
    """Import several TEXT2SPARQL datasets at once, each as the KG named after its directory
    (ids and domains from each dataset); sealed once. With `replace`, only that KG is
    imported, over the one in the holdout."""
    names = {Path(p): kg_name(Path(p).resolve().name) for p in paths}
    if len(set(names.values())) != len(names):
        raise InputError(f"datasets share a directory name: {', '.join(map(str, paths))}; import them one by one with --name")
    refuse_case_twins(list(names.values()), "datasets")
    if replace is not None and replace not in names.values():
        raise InputError(f"--replace {replace}: none of the datasets is named so ({', '.join(sorted(names.values()))})")
    kgs = [
        read_text2sparql(p, n, lang=lang, rules=rules)
        for p, n in names.items()
        if replace is None or n == replace
    ]
    return write_kgs(out, kgs, replace=replace)


def read_text2sparql(
    path: Path, name: str, *, lang: str = "en", domain: str | None = None, id_prefix: str | None = None, rules: QuestionRules = QuestionRules()
) -> KgImport:
    """One TEXT2SPARQL dataset as a KG to write: its questions and data files, answer-key
    graphs left out (module docstring)."""
    path = Path(path)
    source = path / QUESTIONS
    doc = _read_yaml(source)
    dataset = doc.get("dataset") or {}
    if not isinstance(dataset, dict) or not isinstance(doc.get("questions"), list):
        raise InputError(f"{source}: expected a mapping with 'dataset' and a 'questions' list")
    prefix = id_prefix or str(dataset.get("prefix") or name)
    domain = domain or _domain_from(dataset.get("id")) or name
    questions = read_questions(doc["questions"], lambda raw, i: _question(source, raw, i, prefix, lang, domain, rules))
    # the source's own texts: an answer-key graph holds them as written, before any PREFIX is added
    references = {" ".join(raw["query"]["sparql"].split()) for raw in doc["questions"]}
    files, excluded = {}, {}
    for ttl, iri in _graph_files(path / GRAPHS):
        if _holds_any(ttl, references):
            excluded[ttl.name] = f"holds the reference queries (graph <{iri}>): an answer key, not KG data"
        else:
            files[ttl] = iri
    if not files:
        raise InputError(f"{path / GRAPHS}: no KG data file is left once the answer-key graphs are excluded")
    provenance = {
        "format": "text2sparql",
        "dataset": str(dataset.get("id", "")),
        "lang": lang,
        **({"declared_prefixes": dict(rules.prefixes)} if rules.prefixes else {}),
        "ids": {q.id: str(raw.get("id")) for q, raw in zip(questions, doc["questions"])},
        "excluded_graphs": excluded,
    }
    return KgImport(name, str(dataset.get("id") or name), questions, files, provenance, excluded)


def _read_yaml(path: Path) -> dict:
    doc = read_yaml(path, "questions file", "a TEXT2SPARQL dataset has questions.yml and graphs/")
    if not isinstance(doc, dict):
        raise InputError(f"{path}: expected a mapping at the top level")
    return doc


def _domain_from(dataset_id: object) -> str | None:
    """The last path segment of the dataset IRI (".../2025/corporate/" -> "corporate")."""
    if not dataset_id:
        return None
    segments = [s for s in urlsplit(str(dataset_id)).path.split("/") if s]
    return segments[-1] if segments else None


def _question(source: Path, raw: object, index: int, prefix: str, lang: str, domain: str, rules: QuestionRules) -> Question:
    if not isinstance(raw, dict) or "id" not in raw:
        raise InputError(f"{source}: question #{index}: expected a mapping with an 'id'")
    qid = raw["id"]
    texts = raw.get("question")
    if not isinstance(texts, dict) or not texts.get(lang):
        have = ", ".join(texts) if isinstance(texts, dict) else "none"
        raise InputError(f"{source}: question {qid}: no {lang!r} text (languages given: {have}); choose one with --lang")
    query = raw.get("query")
    sparql = query.get("sparql") if isinstance(query, dict) else None
    if not isinstance(sparql, str) or not sparql.strip():
        raise InputError(f"{source}: question {qid}: no query.sparql")
    features = {str(f).upper() for f in raw.get("features") or []}
    return check_question(source, {
        "id": f"{prefix}-{qid}",
        "question": str(texts[lang]).strip(),
        "sparql": sparql,
        "domain": domain,
        "tags": _tags(features),
        "order_sensitive": "RESULT_ORDER_MATTERS" in features,
    }, qid, rules)


def _tags(features: set[str]) -> list[str]:
    tags = {_FEATURE_TAGS[f] for f in features if f in _FEATURE_TAGS}
    if {"ORDER", "LIMIT"} <= features:
        tags.add(Tag.ORDER_LIMIT)
    return sorted(t.value for t in tags)


def _graph_files(graphs: Path) -> list[tuple[Path, str]]:
    """Every data file under graphs/ with the IRI its `.graph` file names."""
    if not graphs.is_dir():
        raise InputError(f"{graphs}: missing (a TEXT2SPARQL dataset keeps its KG under graphs/)")
    found = []
    for data in sorted(p for p in graphs.iterdir() if p.is_file() and not p.name.endswith(".graph")):
        rdf_format(data)  # an unknown extension is an error naming the file
        marker = data.with_name(data.name + ".graph")
        for path in (data, marker):  # a link out of the dataset copied any file's data (or text, as a graph IRI) into the holdout
            if path.exists() and not path.resolve().is_relative_to(graphs.resolve()):
                raise InputError(f"{path}: a symbolic link out of {graphs} (to {path.resolve()}); copy the file into the dataset")
        iri = marker.read_text(encoding="utf-8").strip() if marker.is_file() else ""
        if marker.is_file() and not iri:
            raise InputError(f"{marker}: empty; it should hold the named graph IRI of {data.name}")
        found.append((data, iri))
    if not found:
        raise InputError(f"{graphs}: no RDF data files")
    return found


def _holds_any(path: Path, texts: set[str]) -> bool:
    """True when a literal of the file equals one of `texts` (whitespace-normalized)."""
    try:
        triples = list(strict_triples(path))
    except (SyntaxError, ValueError):  # a file the import will repair: read it as it will be
        triples, _ = repaired_triples(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    return any(isinstance(t.object, ox.Literal) and " ".join(t.object.value.split()) in texts for t in triples)
