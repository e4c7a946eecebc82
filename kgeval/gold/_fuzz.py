"""Neighbour KGs: a holdout KG with its values and links fuzzed, its schema kept.

Test-suite accuracy (Zhong, Yu & Klein, EMNLP 2020) checks an accepted answer again on
databases fuzzed from the original: a query that agrees with the gold only by accident (a filter
every row passes, hard-coded answer IRIs, a count of another class of the same size) disagrees
on a neighbour. This module makes the neighbours; `_suite` distils them per question.

What a neighbour keeps (so every reference query still means what it meant): every class,
predicate and datatype; every `rdf:type` triple of a kept entity; per subject and predicate,
the number of values (a predicate with one value per subject keeps one). What it fuzzes:
- literals: replaced by a value of the same predicate and datatype on a subject of the same
  class (another subject's value,
  or a near value of a number or date: +-1, +-10%, +-1 day), so the set of values a question
  names (a label, a city) stays in the KG and lands on other entities;
- links: an object that is an entity of class C is rewired to another entity of class C;
- entities: some are dropped (their triples go; links to them are rewired within their class)
  and some duplicated under fresh IRIs (`<iri>--<neighbour>-dup<k>`), never more triples in
  all than the original holds.
Numbers the KG's reference queries compare against (`constants`) join their predicates' pools
with their near values, as the paper's fuzzer seeds a database with the query's own values:
a comparison flipped or loosened at that constant is then told apart (an integer constant
joins a decimal predicate's pool too: `FILTER(?price < 25)` over decimal prices).
Entities the reference queries name (`named`: by IRI, or by a string that is one of their
values, `?o rdfs:label "Berlin"`) have every other value and link changed, and the links to
them rewired to another entity of their class, in half the neighbours (which half: from the
entity's IRI, so that two named entities are, but for one pair in 16, changed apart in some
neighbour: the answer that hard-codes one of them, or drops the pattern that reaches one,
then differs); a literal of theirs changed so is a near value of its own (the string a query names also joins its pools with its near value, as a number it
compares against does): an answer that copies a named entity's facts (its status, its
country, its links) or matches them loosely (`CONTAINS` for `=`) agrees with the gold only
while those facts stay as they are, and a rate spread over the whole KG rarely touches the
few facts one question reads. The value that names an entity named only by it keeps the
ordinary rate (a question whose entity is gone tells no mutant apart).

Smaller neighbours (`scale` < 1, `suite.scale`): before fuzzing, each class keeps only that
share of its entities, as the paper's fuzzer fills small tables (a few rows tell a near miss
apart); the rest go as dropped entities go (their triples, and links to them rewired to a kept
entity of their class). Always kept: the entities the reference queries name (by IRI, or by a
string few subjects carry), the classes and predicates themselves (anything that is an
`rdf:type` object or a predicate), and per class at least as many entities as the queries'
largest LIMIT + OFFSET asks for and as one subject links to through one predicate (so its
number of values is kept). At `scale` 1 nothing is drawn: the bytes are those without it.

Deterministic: the same KG bytes, seed and neighbour index give the same bytes (blank nodes
are renamed in the order met, output lines sorted).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pyoxigraph as ox

from kgeval._files import sha256_file
from kgeval.errors import InputError, KgevalError
from kgeval.stores import rdf_format
from kgeval.stores._lexer import canonical_tokens, declared_prefixes, iri_of, string_value

RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
XSD = "http://www.w3.org/2001/XMLSchema#"
_INTEGERS = {f"{XSD}{t}" for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger", "unsignedInt", "gYear")}
_DECIMALS = {f"{XSD}{t}" for t in ("decimal", "double", "float")}
_QUAD_FORMATS = {ox.RdfFormat.TRIG, ox.RdfFormat.N_QUADS}
_CONSTANT_WEIGHT = 4
"""Copies of each query constant in its pools: drawn often enough that a comparison loosened
at the constant meets a value equal to it in some neighbour."""
_VALUE_RATE = 0.7
"""Share of literal values (at the heaviest level) a neighbour draws anew."""
_VALUE_DROP = 0.03
"""Share of values (at the heaviest level) a neighbour drops."""
_SPREAD = 2
"""Values (per literal predicate, at the heaviest level) given to an entity of another class."""
_DROP_SHARE = 0.15
"""Share of each class's entities (at the heaviest level) a neighbour drops."""
_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
FUZZ_VERSION = 4
"""Version of this fuzzer: a suite built by another version is built again."""


@dataclass(frozen=True)
class Neighbour:
    """One neighbour KG, as files to write."""

    id: str
    """`<kg>~n<index>`: the name its gold file and directory carry."""
    files: dict[str, str]
    """File name -> its N-Triples (or N-Quads) text, one per file of the original KG."""
    graphs: dict[str, str]
    """File name -> the named graph IRI the original file came from (as `KnowledgeGraph.graphs`)."""
    triples: int
    """Triples it holds (never more than the original)."""


@dataclass
class _Kg:
    """The original KG as N-Triples terms (plain strings: hashing them is what fuzzing does
    most), with its schema."""

    statements: list[tuple[str, str, str, int, str | None]]
    """(subject, predicate, object, file index, graph name or None), each term in N-Triples."""
    classes: dict[str, tuple[str, ...]]
    """Entity -> its sorted rdf:type classes (every typed subject)."""
    literals: dict[str, tuple[str, str, str]]
    """Each literal met -> (lexical value, datatype IRI, language)."""


def read_kg(files: Sequence[Path]) -> _Kg:
    """Every statement of the KG's files, blank nodes renamed in the order met."""
    statements, blanks, literals = [], {}, {}

    def term(t: object) -> str:
        if isinstance(t, ox.BlankNode):
            return blanks.setdefault(t, f"_:b{len(blanks)}")
        text = str(t)
        if isinstance(t, ox.Literal) and text not in literals:
            literals[text] = (t.value, t.datatype.value, t.language or "")
        return text

    for index, path in enumerate(files):
        try:
            for quad in ox.parse(path=str(path), format=rdf_format(path)):
                graph = str(quad.graph_name) if isinstance(quad.graph_name, ox.NamedNode) else None
                statements.append((term(quad.subject), str(quad.predicate), term(quad.object), index, graph))
        except (SyntaxError, ValueError, OSError) as exc:
            raise InputError(f"{path}: cannot read KG for its neighbours: {exc}") from None
    statements = list(dict.fromkeys(statements))
    classes: dict[str, list] = defaultdict(list)
    for s, p, o, _, _ in statements:
        if p == RDF_TYPE:
            classes[s].append(o)
    return _Kg(statements, {s: tuple(sorted(set(c))) for s, c in classes.items()}, literals)


def kg_sha256(files: Sequence[Path]) -> str:
    """The KG's data hash as the fuzzer reads it (file names and bytes, in order)."""
    return kg_sha256_of((os.path.basename(path), sha256_file(path)) for path in files)


def kg_sha256_of(files: Iterable[tuple[str, str]]) -> str:
    """`kg_sha256` from each file's name and sha256 (hex) in order, as a holdout manifest
    records them: no file read again."""
    digest = hashlib.sha256()
    for name, sha256 in files:
        digest.update(name.encode() + b"\0" + bytes.fromhex(sha256))
    return digest.hexdigest()


def make_neighbours(
    kg_id: str, files: Sequence[Path], graphs: dict[str, str], count: int, seed: int,
    constants: Sequence[tuple[str | None, ox.Literal]] = (), named: Collection[str] = (), read: tuple[_Kg, str] | None = None,
    scale: float = 1.0, rows: int = 0,
) -> list[Neighbour]:
    """`count` neighbours of the KG made of `files`, deterministic from `seed` and the data.
    `constants`: (predicate IRI or None, literal) the KG's reference queries name; `named`: the
    IRIs and strings they name, as N-Triples terms (`named_terms`); `read`: the files as the
    caller has already read them (`read_kg`, `kg_sha256`), not parsed and hashed again;
    `scale`: share of each class's entities a neighbour keeps, `rows`: the fewest it keeps per
    class (`row_floor` of the queries; see the module docstring)."""
    kg, data = read if read is not None else (read_kg(files), kg_sha256(files))
    strings = {t for t in named if t.startswith('"')}
    pools = _pools(kg, constants, strings)
    by_string = frozenset({s for s, _, o, _, _ in kg.statements if o in strings} - set(named))  # named only by a value
    entities = frozenset({t for t in named if t.startswith("<")}) | by_string
    queried = {f"<{p}>": [str(c) for q, c in constants if q == p] for p, _ in constants if p}
    floors, keep = (_floors(kg, rows), _kept(kg, named, strings, scale)) if scale < 1 else ({}, frozenset())
    out = []
    for index in range(count):
        rng = random.Random(hashlib.sha256(f"{seed}:{data}:{index}:{FUZZ_VERSION}".encode()).digest())
        name = f"{kg_id}~n{index:02d}"
        changed = frozenset(e for e in entities if _changed(e, index))
        draw = random.Random(hashlib.sha256(f"{seed}:{data}:{index}:scale:{scale!r}".encode()).digest())  # apart: the fuzzing draws stay as without it
        shed = _shed(kg, scale, floors, keep, draw) if scale < 1 else frozenset()
        kept = _fuzzed(kg, pools, rng, _level(index), name, queried, (by_string, changed, frozenset(strings)), shed)
        out.append(_write(name, kept, files, graphs))
    return out


def row_floor(queries: Iterable[str]) -> int:
    """The most rows a query of `queries` reads past: its LIMIT plus its OFFSET, plus one (so a
    LIMIT still cuts, and a changed LIMIT or OFFSET still shows), the largest; 0 when none has
    either. A query the lexer refuses counts for none."""
    most = 0
    for sparql in queries:
        try:
            tokens = canonical_tokens(sparql)
        except KgevalError:
            continue
        cut = {t.keyword: int(after.text) for t, after in zip(tokens, tokens[1:]) if t.keyword in ("LIMIT", "OFFSET") and after.text.isdigit()}
        if cut:
            most = max(most, sum(cut.values()) + 1)
    return most


def _floors(kg: _Kg, rows: int) -> dict[tuple, int]:
    """Class -> the fewest entities a smaller neighbour keeps of it, so that as many are left
    after the fuzzer's own drop as `rows` and as the most distinct entities of the class one
    subject links to through one predicate (its values are rewired among the kept ones, and
    keep their number only if there are as many)."""
    linked: dict[tuple, int] = defaultdict(int)
    for s, p, o, _, graph in kg.statements:
        if (cls := kg.classes.get(o)) is not None:
            linked[(s, p, graph, cls)] += 1
    floors = dict.fromkeys(set(kg.classes.values()), rows)
    for (_, _, _, cls), n in linked.items():
        floors[cls] = max(floors[cls], n)
    return {cls: math.ceil(n / (1 - _DROP_SHARE)) + 1 if n else 0 for cls, n in floors.items()}  # as many after the fuzzer's own drop


def _kept(kg: _Kg, named: Collection[str], strings: Collection[str], scale: float) -> frozenset[str]:
    """The entities every smaller neighbour keeps: those the queries name by IRI, and those
    carrying a string they name that fewer than 2 / `scale` subjects carry (a name, a rare
    value: drawn, it would often be gone, and the question with it); a string many carry (a
    status, a phase) is a category, its subjects drawn as any (about `scale` of them stay)."""
    carriers: dict[str, set] = defaultdict(set)
    for s, _, o, _, _ in kg.statements:
        if o in strings:
            carriers[o].add(s)
    rare = {e for subjects in carriers.values() if len(subjects) < 2 / scale for e in subjects}
    return frozenset({t for t in named if t.startswith("<")} | rare)


def _shed(kg: _Kg, scale: float, floors: dict[tuple, int], named: frozenset[str], rng: random.Random) -> frozenset[str]:
    """The entities a smaller neighbour leaves out: per class, all but `scale` of them (and
    never below its floor), never a named entity nor a class or predicate of the KG."""
    schema = {o for _, p, o, _, _ in kg.statements if p == RDF_TYPE} | {p for _, p, _, _, _ in kg.statements}
    members: dict[tuple, list] = defaultdict(list)
    for entity, cls in kg.classes.items():
        members[cls].append(entity)
    shed: set[str] = set()
    for cls, entities in members.items():
        keep = min(len(entities), max(math.ceil(len(entities) * scale), floors[cls], 1))
        fixed = [e for e in entities if e in named or e in schema]
        free = [e for e in entities if e not in named and e not in schema]
        shed.update(set(free) - set(rng.sample(free, max(0, min(len(free), keep - len(fixed))))))
    return frozenset(shed)


def named_terms(queries: Iterable[str]) -> set[str]:
    """The IRIs (full or prefixed; predicates too: only the KG's subjects are fuzzed as named)
    and the plain or language-tagged strings written in `queries`, as N-Triples terms. A query
    the lexer refuses names none."""
    out: set[str] = set()
    for sparql in queries:
        try:
            tokens = canonical_tokens(sparql)
        except KgevalError:
            continue
        prefixes = declared_prefixes(tokens)
        for t, after in zip(tokens, [*tokens[1:], None]):
            if t.kind in ("iri", "pname") and (iri := iri_of(t, prefixes)):
                out.add(f"<{iri}>")
            elif t.kind == "string" and (after is None or after.text != "^^"):
                language = after.text[1:] if after is not None and after.kind == "langtag" else None
                out.add(str(ox.Literal(string_value(t.text), language=language)))
    return out


def _changed(entity: str, index: int) -> bool:
    """Whether neighbour `index` changes named `entity`: bit `index % 4` of the IRI's hash,
    inverted for the next four neighbours (each entity in half of every eight)."""
    bit = int(hashlib.sha256(entity.encode()).hexdigest()[:8], 16) >> (index % 4) & 1
    return bool(bit ^ (index // 4 % 2))


def _level(index: int) -> float:
    """How much neighbour `index` is fuzzed: light to heavy in turn (a light neighbour tells
    apart a mutant that a heavy one blurs, and the reverse)."""
    return (0.15, 0.35, 0.6, 0.9)[index % 4]


def _pools(kg: _Kg, constants: Sequence[tuple[str | None, ox.Literal]], strings: Collection[str] = ()) -> dict[tuple, list[str]]:
    """(subject's classes, predicate, datatype, language) -> the values it takes there, and the
    values beside them; a constant of the reference queries and the values beside it join the
    pools of its predicate often (about a fifth of the pool in all), or, when the query does not
    say which predicate it is compared with, every pool of its datatype a few times; a string
    the queries name joins the pools it is in with its near value a few times."""
    pools: dict[tuple, list] = defaultdict(list)
    for s, p, o, _, _ in kg.statements:
        if o in kg.literals:
            _, datatype, language = kg.literals[o]
            pools[(kg.classes.get(s, ()), p, datatype, language)].append(o)
    lexical = {text: literal[0] for text, literal in kg.literals.items()}
    for key, values in pools.items():
        near = [n for v in dict.fromkeys(values) for n in _near(lexical[v], key[2], key[3])]
        pools[key] = values + near  # repeats kept: a frequent value stays frequent
        for named in sorted(set(strings).intersection(values)):  # sorted: the pool order is drawn from, and str hashes vary per process
            pools[key] += _near(*kg.literals[named]) * _CONSTANT_WEIGHT
    for predicate, constant in constants:
        if constant.datatype.value == f"{XSD}boolean":
            continue  # a flag the query names is one of two values already: drawing it more only floods the class
        for key in [k for k in pools if _joins(constant, k[2]) and (predicate is None or k[1] == f"<{predicate}>")]:
            same = key[2] == constant.datatype.value
            values = [str(constant) if same else f'"{constant.value}"^^<{key[2]}>', *_near(constant.value, key[2], "")[:2]]  # the constant and the values just beside it
            weight = _CONSTANT_WEIGHT if predicate is None else max(_CONSTANT_WEIGHT, len(pools[key]) // (5 * len(values)))
            pools[key] += values * weight
    return dict(pools)


def _joins(constant: ox.Literal, datatype: str) -> bool:
    """Whether `constant` joins a pool of `datatype`: its own, or another numeric one its
    lexical value is valid in (a query writes `25` for a decimal price)."""
    own = constant.datatype.value
    if own == datatype:
        return True
    numeric = _INTEGERS | _DECIMALS
    if own not in numeric or datatype not in numeric or datatype.endswith("gYear"):
        return False
    return datatype in _DECIMALS or constant.value.lstrip("+-").isdigit()


def _near(value: str, datatype: str, language: str) -> list[str]:
    """Values beside a number, a date or a short string (its lexical `value`), of its datatype
    and language, as N-Triples literals: +-1 and +-10% for numbers (never far beyond the
    KG's own range: a threshold just above the largest value is then still told apart); +-1 day, +-30 days, +-1
    year for dates; the string with " 2" appended (another name that contains this one)."""
    try:
        if datatype in _INTEGERS:
            n = int(value)
            step = max(1, abs(n) // 10)
            near = [str(v) for v in (n - 1, n + 1, n - step, n + step)]
        elif datatype in _DECIMALS:
            d = Decimal(value)
            tenth = (d / 10).quantize(d) if d.as_tuple().exponent < 0 else d / 10
            near = [str(v) for v in (d - 1, d + 1, d - tenth, d + tenth)]
        elif datatype == f"{XSD}date":
            day = date.fromisoformat(value)
            near = [(day + timedelta(days=k)).isoformat() for k in (-1, 1, -30, 30, -365, 365)]
        elif datatype in (f"{XSD}string", _LANG_STRING) and len(value) <= 60:
            suffix = f"@{language}" if language else ""
            return [json.dumps(f"{value} 2", ensure_ascii=False) + suffix]
        else:
            return []
    except (ValueError, InvalidOperation, OverflowError, TypeError):
        return []
    return [f'"{v}"^^<{datatype}>' for v in near]


def _fuzzed(
    kg: _Kg, pools: dict, rng: random.Random, level: float, name: str, queried: dict[str, list[str]],
    named: tuple[frozenset[str], frozenset[str], frozenset[str]], shed: frozenset[str] = frozenset(),
) -> list[tuple]:
    """The statements of one neighbour (see the module docstring for what changes); `shed`:
    the entities a smaller neighbour leaves out, gone as a dropped entity goes."""
    members: dict[tuple, list] = defaultdict(list)
    for entity, cls in kg.classes.items():
        if entity not in shed:
            members[cls].append(entity)
    dropped = _dropped(members, rng, level) | shed
    survivors = {cls: [e for e in ents if e not in dropped] for cls, ents in members.items()}
    statements = [st for st in kg.statements if st[0] not in dropped]
    duplicates = _duplicates(survivors, rng, level, name)
    for cls, pairs in duplicates.items():
        survivors[cls] = survivors[cls] + [fresh for fresh, _ in pairs]
    fuzzed = _fuzz_groups(statements, kg.classes, kg.literals, survivors, dropped, pools, rng, level, named)
    out = _loosened(fuzzed, kg, dropped, rng, level, queried)
    budget = len(kg.statements) - len(out)
    for entity_statements in _copies(statements, duplicates):  # whole entities, while they fit
        if len(entity_statements) <= budget:
            out += _fuzz_groups(entity_statements, kg.classes, kg.literals, survivors, dropped, pools, rng, level)
            budget -= len(entity_statements)
    return out


def _fuzz_groups(
    statements: list, classes: dict, literals: dict, survivors: dict, dropped: set, pools: dict, rng: random.Random, level: float,
    named: tuple[frozenset[str], frozenset[str], frozenset[str]] = (frozenset(), frozenset(), frozenset()),
) -> list[tuple]:
    """Each statement with its object fuzzed, the values of one subject and predicate kept
    distinct (so their number is kept); `named`: the entities named only by a value, those this
    neighbour changes, and the named strings (see the module docstring)."""
    by_string, changed, strings = named
    groups: dict[tuple, list] = defaultdict(list)
    for st in statements:
        groups[(st[0], st[1], st[4])].append(st)
    out = []
    for (s, p, graph), group in groups.items():
        used: set = set()
        for _, _, o, index, _ in group:
            boost = s in changed and not (s in by_string and o in strings) or o in changed and o not in by_string
            rate = 2 / _VALUE_RATE if boost else level  # a literal always drawn anew, a link always rewired
            avoid = used | {o} if boost else used  # drawn anew, a named entity's fact (or link to it) changes
            new = _new_object(s, p, o, classes, literals, survivors, dropped, pools, rng, rate, avoid, near=boost)
            used.add(new)
            out.append((s, p, new, index, graph))
    return out


def _loosened(out: list[tuple], kg: _Kg, dropped: set, rng: random.Random, level: float, queried: dict[str, list[str]]) -> list[tuple]:
    """Some values dropped (a predicate every subject had may then be missing on one: its
    values per subject never grow), and some literal values given to an entity of another class
    that lacks the predicate (a predicate only one class had reaches another; the predicates
    the reference queries name most often, with the values they name): the corners a query
    leans on when it adds a pattern every subject happens to satisfy, or drops a type only one
    class happens to need. Never more statements than the original."""
    kept = [st for st in out if st[1] == RDF_TYPE or rng.random() >= _VALUE_DROP * level]
    have = {(st[0], st[1]) for st in kept}
    members: dict[tuple, list] = defaultdict(list)
    for entity in sorted(set(kg.classes) - dropped):
        members[kg.classes[entity]].append(entity)
    classes = sorted(members)
    by_predicate: dict[str, list[tuple]] = defaultdict(list)
    for st in kept:
        if st[2].startswith('"'):
            by_predicate[st[1]].append(st)
    predicates = sorted(by_predicate) + [p for p in sorted(queried) if p in by_predicate] * 2
    spread = []
    for _ in range(max(1, int(len(by_predicate) * level * _SPREAD)) if predicates and len(classes) > 1 else 0):
        p = rng.choice(predicates)
        s, _, o, index, graph = rng.choice(by_predicate[p])
        if queried.get(p) and rng.random() < 0.5:
            o = rng.choice(queried[p])
        e = rng.choice(members[rng.choice([c for c in classes if c != kg.classes.get(s)])])
        if (e, p) not in have:
            spread.append((e, p, o, index, graph))
            have.add((e, p))
    return kept + spread[: max(len(kg.statements) - len(kept), 0)]


def _dropped(members: dict[tuple, list], rng: random.Random, level: float) -> set:
    """Entities dropped: a share of each class that has more than one (one always stays)."""
    dropped = set()
    for cls, entities in members.items():
        if not cls or len(entities) < 2:
            continue
        k = min(len(entities) - 1, int(len(entities) * _DROP_SHARE * level + rng.random()))
        dropped.update(rng.sample(entities, k))
    return dropped


def _duplicates(survivors: dict, rng: random.Random, level: float, name: str) -> dict[tuple, list]:
    """Fresh entities copying a surviving entity of their class: class -> [(fresh, original)]."""
    out: dict[tuple, list] = defaultdict(list)
    for cls, entities in survivors.items():
        named = [e for e in entities if e.startswith("<")]
        if not cls or not named:
            continue
        k = int(len(named) * 0.1 * level + rng.random())
        for j, original in enumerate(rng.sample(named, min(k, len(named)))):
            out[cls].append((f"{original[:-1]}--{name.split('~')[-1]}-dup{j}>", original))
    return out


def _copies(statements: list, duplicates: dict[tuple, list]) -> list[list[tuple]]:
    """The statements of each fresh entity (its original's, as subject), entity by entity."""
    by_subject: dict[object, list] = defaultdict(list)
    for st in statements:
        by_subject[st[0]].append(st)
    return [
        [(fresh, p, o, index, graph) for _, p, o, index, graph in by_subject[original]]
        for pairs in duplicates.values() for fresh, original in pairs
    ]  # fmt: skip


def _new_object(
    s, p, o, classes: dict, literals: dict, survivors: dict, dropped: set, pools: dict, rng: random.Random, level: float, used: set, near: bool = False
):
    """The object of one statement in the neighbour: fuzzed, rewired, or kept; never one in
    `used` (the values this subject already has for the predicate) when another can be found.
    `near`: a literal drawn anew is a value beside its own when it has one (a named entity's)."""
    if p == RDF_TYPE:
        return o
    literal = literals.get(o)
    if literal is not None:
        pool = pools.get((classes.get(s, ()), p, literal[1], literal[2]), ()) if rng.random() < _VALUE_RATE * level else ()
        if pool and near:
            pool = _near(*literal) or pool
    else:
        cls = classes.get(o)
        pool = survivors.get(cls) or () if cls is not None and (o in dropped or rng.random() < 0.5 * level) else ()
    for new in [rng.choice(pool) for _ in range(3)] if pool else []:
        if new not in used:
            return new
    if o not in used and o not in dropped:
        return o
    spare = [v for v in pool if v not in used]  # rare: every draw was taken
    return spare[0] if spare else o


def _write(name: str, statements: list[tuple], files: Sequence[Path], graphs: dict[str, str]) -> Neighbour:
    """One neighbour's files: each original file's statements, N-Triples (N-Quads for quad
    files), lines sorted."""
    lines: dict[int, list[str]] = defaultdict(list)
    for s, p, o, index, graph in statements:
        g = f" {graph}" if graph is not None else ""  # N-Quads for quad files
        lines[index].append(f"{s} {p} {o}{g} .")
    texts, out_graphs = {}, {}
    for index, path in enumerate(files):
        quads = rdf_format(path) in _QUAD_FORMATS
        file_name = f"{Path(path).stem}.{'nq' if quads else 'nt'}"
        texts[file_name] = "".join(line + "\n" for line in sorted(lines.get(index, [])))
        if Path(path).name in graphs:
            out_graphs[file_name] = graphs[Path(path).name]
    return Neighbour(name, texts, out_graphs, len(statements))
