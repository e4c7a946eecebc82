"""Bringing a benchmark's RDF data files into a holdout so that every store loads them.

A file Oxigraph parses strictly is copied as it is. Benchmarks also ship files it refuses:
IRIs with spaces or braces, and `\\#`-style escapes written inside `<...>` (legal only in a
prefixed name's local part). Such a file is read leniently with rdflib, with its warnings
("... does not look like a valid URI", thousands on a real benchmark) counted instead of
printed, then written as N-Triples beside the others with each IRI repaired: reserved-character
escapes unescaped (rdflib keeps the backslash: `a\\#b` must mean `a#b`), characters an IRI may
not hold percent-encoded. The import prints one line per file with the counts.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pyoxigraph as ox

from kgeval.errors import InputError
from kgeval.stores import rdf_format

_RESERVED_ESCAPE = re.compile(r"\\([_~.\-!$&'()*+,;=/?#@%])")
_NOT_IN_IRI = re.compile(r'[\x00-\x20<>"{}|^`\\]')
_RDFLIB_FORMATS = {".ttl": "turtle", ".nt": "nt", ".nq": "nquads", ".trig": "trig", ".rdf": "xml", ".owl": "xml"}


@dataclass
class DataFileNote:
    """How one data file entered the holdout."""

    source: Path
    written: str
    """The file name in the KG directory (a repaired file is written as N-Triples)."""
    triples: int
    repairs: Counter = field(default_factory=Counter)
    """What was repaired or summarized, with counts (empty: copied as it is)."""

    def summary(self) -> str:
        """One line: the file, its triples, and every kind of repair with its count."""
        line = f"data {self.written}" + (f" (from {self.source.name})" if self.written != self.source.name else "")
        line += f": {self.triples:,} triples"
        if self.repairs:
            line += "; " + "; ".join(f"{n:,} {what}" for what, n in sorted(self.repairs.items()))
        return line


def strict_triples(path: Path) -> Iterator[ox.Triple | ox.Quad]:
    """Oxigraph's own strict reading of the file; SyntaxError when it refuses it."""
    return ox.parse(path=str(path), format=rdf_format(path))


def import_data_file(path: Path, kg_dir: Path) -> DataFileNote:
    """Copy `path` into `kg_dir`, or write its repaired N-Triples there (module docstring)."""
    path = Path(path)
    try:
        count = sum(1 for _ in strict_triples(path))
    except (SyntaxError, ValueError) as strict_error:
        return _repaired_copy(path, kg_dir, strict_error)
    except OSError as exc:
        raise InputError(f"{path}: cannot read RDF data: {exc}") from None
    shutil.copyfile(path, kg_dir / path.name)
    return DataFileNote(path, path.name, count)


def repaired_triples(path: Path) -> tuple[list[ox.Triple], Counter]:
    """Every triple of a file Oxigraph refuses, read by rdflib and repaired, with the counts."""
    import rdflib  # local: only a file Oxigraph refuses needs it

    repairs: Counter = Counter()
    capture = _CountWarnings(repairs)
    logger = logging.getLogger("rdflib")
    logger.addHandler(capture)
    propagate, logger.propagate = logger.propagate, False
    try:
        graph = rdflib.Dataset() if path.suffix.lower() in (".nq", ".trig") else rdflib.Graph()
        graph.parse(str(path), format=_RDFLIB_FORMATS.get(path.suffix.lower(), "turtle"))
    except Exception as exc:  # noqa: BLE001 - rdflib raises many kinds for bad syntax
        raise InputError(f"{path}: not readable as RDF, even leniently: {exc}") from None
    finally:
        logger.removeHandler(capture)
        logger.propagate = propagate
    iris: dict[str, ox.NamedNode] = {}
    rows = graph.quads((None, None, None, None)) if isinstance(graph, rdflib.Dataset) else iter(graph)
    triples = [ox.Triple(*(_term(t, iris, repairs, path) for t in row[:3])) for row in rows]
    return triples, repairs


def _repaired_copy(path: Path, kg_dir: Path, strict_error: Exception) -> DataFileNote:
    triples, repairs = repaired_triples(path)
    if not repairs:  # rdflib read it without a complaint or a repair: Oxigraph's error stands
        raise InputError(f"{path}: cannot load KG: {strict_error}")
    written = path.stem + ".nt" if path.suffix.lower() != ".nt" else path.stem + ".repaired.nt"
    ox.serialize(triples, output=str(kg_dir / written), format=ox.RdfFormat.N_TRIPLES)
    return DataFileNote(path, written, len(triples), repairs)


def _term(term, iris: dict[str, ox.NamedNode], repairs: Counter, path: Path):  # noqa: ANN001, ANN202
    import rdflib

    if isinstance(term, rdflib.URIRef):
        value = str(term)
        if value not in iris:
            iris[value] = ox.NamedNode(_repaired_iri(value, repairs, path))
        return iris[value]
    if isinstance(term, rdflib.BNode):
        return ox.BlankNode(_bnode_label(str(term)))
    if term.language:
        return ox.Literal(str(term), language=term.language)
    datatype = term.datatype
    return ox.Literal(str(term), datatype=ox.NamedNode(str(datatype))) if datatype else ox.Literal(str(term))


def _repaired_iri(value: str, repairs: Counter, path: Path) -> str:
    fixed = _RESERVED_ESCAPE.sub(r"\1", value)
    if fixed != value:
        repairs["IRIs with backslash escapes unescaped (\\# -> #)"] += 1
    encoded = _NOT_IN_IRI.sub(lambda m: quote(m.group(0), safe=""), fixed)
    if encoded.count("#") > 1:  # a fragment may not hold another '#'
        base, fragment = encoded.split("#", 1)
        encoded = base + "#" + fragment.replace("#", "%23")
    if encoded != fixed:
        repairs["IRIs with characters an IRI may not hold percent-encoded"] += 1
    try:
        ox.NamedNode(encoded)
    except ValueError as exc:
        raise InputError(f"{path}: IRI <{value}> cannot be repaired: {exc}") from None
    return encoded


def _bnode_label(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", label) or "b"


class _CountWarnings(logging.Handler):
    """Counts rdflib's warnings by kind instead of printing each one."""

    def __init__(self, counts: Counter) -> None:
        super().__init__(logging.WARNING)
        self.counts = counts

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        kind = "does not look like a valid URI" if "does not look like a valid URI" in message else message[:80]
        self.counts[f"rdflib warnings '{kind}'"] += 1
