"""Schema fingerprints: classes, predicates and domain -> range pairs, read by SPARQL.

A fingerprint is computed on any `Store` through `Store.execute`, so it works on the embedded
store and on any endpoint alike. It holds schema IRIs only, never instance data: it is what
`kgeval schema-gate add` stores for a training KG. Common vocabulary is kept in the file and
left out when fingerprints are compared, so changing the common list needs no re-fingerprinting.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from kgeval._files import present, write_json_atomic
from kgeval.config import SchemaGateConfig
from kgeval.errors import InputError
from kgeval.guards._vocab import in_namespaces, normalize_name
from kgeval.stores import Store

FORMAT_VERSION = 1

_CLASSES = """
SELECT DISTINCT ?c WHERE {
  { ?s a ?c } UNION
  { ?c a <http://www.w3.org/2002/07/owl#Class> } UNION
  { ?c a <http://www.w3.org/2000/01/rdf-schema#Class> }
  FILTER(isIRI(?c))
}"""
_PREDICATES = "SELECT DISTINCT ?p WHERE { ?s ?p ?o }"
_OBJECT_PAIRS = """
SELECT DISTINCT ?d ?p ?r WHERE {
  ?s ?p ?o . ?s a ?d . ?o a ?r .
  FILTER(isIRI(?d) && isIRI(?r) && ?p != <http://www.w3.org/1999/02/22-rdf-syntax-ns#type>)
}"""
_LITERAL_PAIRS = """
SELECT DISTINCT ?d ?p ?r WHERE {
  ?s ?p ?o . ?s a ?d .
  FILTER(isLiteral(?o) && isIRI(?d))
  BIND(DATATYPE(?o) AS ?r)
}"""


class DomainRange(BaseModel, frozen=True):
    """A predicate seen linking an instance of one class to an instance of another (or a literal)."""

    domain: str
    """Class IRI of the subject."""
    predicate: str
    """Predicate IRI."""
    range: str
    """Class IRI of the object, or the literal's datatype IRI when `literal`."""
    literal: bool = False
    """The object is a literal and `range` is its datatype."""


class SchemaFingerprint(BaseModel):
    """The schema of one KG, as stored under `schema_gate/fingerprints/<name>.json`."""

    name: str = Field(min_length=1)
    """The KG's name (the training KG id, or the holdout KG id)."""
    classes: list[str]
    """Class IRIs: types of instances, and declared owl:Class / rdfs:Class, sorted."""
    predicates: list[str]
    """Every predicate IRI used, sorted."""
    pairs: list[DomainRange]
    """Domain -> range pairs the data shows, sorted."""
    engine: str
    """Store that answered the fingerprint queries."""
    engine_version: str
    data_sha256: str
    """Hash of the data as reported by the store (never the data itself)."""
    created: str
    """UTC time of computation, ISO 8601."""
    format_version: int = FORMAT_VERSION

    def signature(self, common: tuple[str, ...]) -> Signature:
        """Normalized names with common vocabulary left out (see `_vocab` for the rules)."""
        classes = {normalize_name(c) for c in self.classes if not in_namespaces(c, common)}
        predicates = {normalize_name(p) for p in self.predicates if not in_namespaces(p, common)}
        pairs = {
            f"{normalize_name(p.domain)}|{normalize_name(p.predicate)}|{'^' if p.literal else ''}{normalize_name(p.range)}"
            for p in self.pairs
            if not in_namespaces(p.domain, common) and not in_namespaces(p.predicate, common)
        }
        return Signature(classes=frozenset(classes), predicates=frozenset(predicates), pairs=frozenset(pairs))


class Signature(BaseModel, frozen=True):
    """The comparable form of a fingerprint: sets of normalized names."""

    classes: frozenset[str]
    predicates: frozenset[str]
    pairs: frozenset[str]

    def elements(self) -> frozenset[str]:
        """One set for Jaccard similarity: classes, predicates and pairs, each tagged by kind."""
        return frozenset(
            [f"c:{c}" for c in self.classes] + [f"p:{p}" for p in self.predicates] + [f"d:{d}" for d in self.pairs]
        )


def fingerprint_store(store: Store, name: str, config: SchemaGateConfig) -> SchemaFingerprint:
    """Compute the schema fingerprint of the KG `store` serves, by four SPARQL queries."""
    classes = [row[0].value for row in _rows(store, _CLASSES, "classes", config)]
    predicates = [row[0].value for row in _rows(store, _PREDICATES, "predicates", config)]
    pairs = [
        DomainRange(domain=d.value, predicate=p.value, range=r.value, literal=literal)
        for query, literal in ((_OBJECT_PAIRS, False), (_LITERAL_PAIRS, True))
        for d, p, r in _rows(store, query, "domain/range pairs", config)
    ]
    return SchemaFingerprint(
        name=name,
        classes=sorted(set(classes)),
        predicates=sorted(set(predicates)),
        pairs=sorted(set(pairs), key=lambda x: (x.domain, x.predicate, x.range, x.literal)),
        engine=store.name,
        engine_version=store.version,
        data_sha256=store.data_sha256,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def _rows(store: Store, query: str, what: str, config: SchemaGateConfig) -> list[list]:
    result = store.execute(query, timeout_s=config.timeout_s, row_cap=config.row_cap)
    if result.truncated:
        raise InputError(
            f"schema has {result.total} {what}, over the fingerprint cap of {config.row_cap} "
            "(schema_gate/config.yaml: row_cap)"
        )
    return [row for row in result.rows if all(cell is not None for cell in row)]


def save_fingerprint(fingerprint: SchemaFingerprint, gate_dir: Path) -> Path:
    path = Path(gate_dir) / "fingerprints" / f"{fingerprint.name}.json"
    write_json_atomic(path, fingerprint.model_dump(mode="json"))
    return path


def load_fingerprints(gate_dir: Path) -> list[SchemaFingerprint]:
    """Every fingerprint under `gate_dir/fingerprints/`, by name."""
    folder = Path(gate_dir) / "fingerprints"
    if not folder.is_dir() and present(folder):  # damaged, never "no training KGs"
        raise InputError(f"{folder}: not a directory of fingerprints: {RESTORE_FINGERPRINTS}")
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            found.append(SchemaFingerprint.model_validate(json.loads(path.read_bytes())))
        except OSError as exc:
            raise InputError(f"{path}: schema fingerprint is damaged or unreadable ({exc.strerror or exc}): {RESTORE_FINGERPRINTS}") from None
        except (ValueError, ValidationError) as exc:  # ValueError: bad JSON, bytes that are not UTF-8
            raise InputError(f"{path}: damaged or not a schema fingerprint ({exc}): {RESTORE_FINGERPRINTS}") from None
    return found


RESTORE_FINGERPRINTS = "restore it from a backup, or fingerprint the training KG again with `kgeval schema-gate add NAME FILES`"
