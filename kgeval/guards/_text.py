"""Text and query normal forms shared by the contamination check and the example-bank guards.

Folding (`folded`), on both sides of every comparison (the holdout's questions, IRIs and
queries when indexed; training text before the prefilter): Unicode NFKC (full-width forms,
ligatures, KELVIN SIGN, composed accents), invisible characters dropped (`HIDDEN`: format
characters such as zero-width spaces and joiners, soft hyphens, BOMs and bidi marks, and the
other default-ignorable code points; `CONTROLS`: the C0 and C1 control characters, NUL, ESC,
DEL, but for the ones that lay text out), and Cyrillic and Greek letters drawn like Latin ones
read as those (`LOOKALIKES`), case kept. So a copy written in full-width forms, with zero-width
spaces or a control character inside a word, or with `а` (Cyrillic) for `a` is the text it
looks like: what renders as nothing cannot split a match.

Questions: folded, case folded, split into runs of letters and digits (so case, spacing
and punctuation never matter). The *features* of a text are its tokens minus a short list of
function words, lightly stemmed (`departments` -> `department`, `working` -> `work`). Similarity is the
Jaccard similarity of feature sets: exact on short texts, no sampling, so no MinHash is needed
(holdout questions number in the hundreds and are a dozen words long).

SPARQL: parsed by rdflib and translated to algebra, which expands prefixes and folds
whitespace; variables are then renamed ?v0, ?v1, ... and blank nodes (which rdflib names at
random) _:b0, _:b1, ... in order of first appearance and the algebra serialized, so two
queries that differ only in prefixes, variable names, layout or keyword case have the same
canonical form.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rdflib import BNode, Literal, URIRef, Variable
from rdflib.plugins.sparql.parserutils import CompValue

from kgeval.errors import QueryRefused, QuerySyntaxError
from kgeval.guards._needles import rows_with_bytes
from kgeval.guards._vocab import namespace
from kgeval.stores import query_algebra
from kgeval.stores._lexer import Token, canonical_tokens

TOKEN = re.compile(r"[^\W_]+")
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

STOPWORDS = frozenset(
    """a an the of in on at to for from by with about as into over under between and or not no
    is are was were be been being do does did has have had will would can could should shall may
    might must what which who whom whose where when why how that this these those there here it
    its their them they he she his her we our you your i me my all any each every some give list
    show tell find name please many much more most less least than also only very just such
    other per get s t re ve ll m d""".split()
)
"""Function words; the last are the clitics `tokens` splits off (`what's`, `don't`, `we're`,
`I'd`): `What's the telephone` is `What is the telephone`."""


HIDDEN = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F),
    (0x0890, 0x0891), (0x08E2, 0x08E2), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F),
    (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)
"""Code points `folded` drops (ranges): every format character (category Cf: zero-width space,
non-joiner and joiner, soft hyphen, word joiner, BOM, bidi marks and isolates, tags) and the
other default-ignorable ones (variation selectors, the combining grapheme joiner, Hangul
fillers): nothing a reader sees, so nothing that tells a copy from its holdout text."""

LOOKALIKES = {
    # Cyrillic
    "\u0410": "A", "\u0412": "B", "\u0405": "S", "\u0406": "I", "\u0408": "J", "\u0415": "E", "\u041a": "K",
    "\u041c": "M", "\u041d": "H", "\u041e": "O", "\u0420": "P", "\u0421": "C", "\u0422": "T", "\u0423": "Y",
    "\u0425": "X", "\u04ae": "Y", "\u04c0": "I", "\u051a": "Q", "\u051c": "W", "\u0474": "V",
    "\u0430": "a", "\u0435": "e", "\u043e": "o", "\u0440": "p", "\u0441": "c", "\u0443": "y", "\u0445": "x",
    "\u0455": "s", "\u0456": "i", "\u0458": "j", "\u04bb": "h", "\u04af": "y", "\u04cf": "l", "\u0501": "d",
    "\u051b": "q", "\u051d": "w", "\u0475": "v",
    # Greek
    "\u0391": "A", "\u0392": "B", "\u0395": "E", "\u0396": "Z", "\u0397": "H", "\u0399": "I", "\u039a": "K",
    "\u039c": "M", "\u039d": "N", "\u039f": "O", "\u03a1": "P", "\u03a4": "T", "\u03a5": "Y", "\u03a7": "X",
    "\u037f": "J",
    "\u03b1": "a", "\u03b3": "y", "\u03b9": "i", "\u03ba": "k", "\u03bd": "v", "\u03bf": "o", "\u03c1": "p",
    "\u03c5": "u", "\u03c7": "x", "\u03f3": "j",
}
"""Cyrillic and Greek letters drawn like a Latin letter in common fonts (Unicode's confusables
for them, the letters a homoglyph swap uses), read as that letter by `folded`. An explicit
table, not a confusables library: these few letters are what such swaps use, a table of them
costs nothing to load or ship to workers, and Unicode's full skeleton mapping also merges
Latin with Latin (`rn` with `m`, `l` with `I`), which would make distinct holdout words equal.
None has a decomposition, so NFKC neither makes one nor changes it (the lunate sigmas,
which NFKC reads as sigmas, are not here)."""

CONTROLS = ((0x0000, 0x0008), (0x000E, 0x001F), (0x007F, 0x0084), (0x0086, 0x009F))
"""Control characters `folded` drops (ranges): every C0 and C1 control (category Cc) but those
that lay text out, which read as white space and so still part words: tab, line feed, vertical
tab, form feed, carriage return (U+0009-U+000D) and NEXT LINE (U+0085). A NUL, a backspace or
an ESC inside a word shows nothing, so it hides nothing either."""

_DROPPED_RANGES = HIDDEN + CONTROLS
_UNMASK = str.maketrans({**{chr(c): None for lo, hi in _DROPPED_RANGES for c in range(lo, hi + 1)}, **LOOKALIKES})
_MASKED = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _DROPPED_RANGES) + "".join(LOOKALIKES) + "]")
_MASKED_RE2 = "[" + "".join(f"\\x{{{lo:x}}}-\\x{{{hi:x}}}" for lo, hi in _DROPPED_RANGES) + "".join(f"\\x{{{ord(c):x}}}" for c in LOOKALIKES) + "]"
"""The characters `_UNMASK` changes: a Python expression, and the same in RE2 (for Arrow)."""
_ASCII_CONTROLS = (*((lo, hi) for lo, hi in CONTROLS if hi < 0x80), (0x7F, 0x7F))
"""The ASCII bytes of `CONTROLS` (C0 but layout, and DEL)."""
_ASCII_CONTROL = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _ASCII_CONTROLS) + "]")
"""`_ASCII_CONTROLS` as a Python expression: what `folded` drops from an ASCII text."""
_FOLDABLE: dict = {}
"""This process's `foldable_characters` and `_unmask_table`, made on first use."""


def folded(text: str) -> str:
    """`text` as every matcher reads it (module docstring): NFKC, hidden characters dropped,
    look-alike letters as Latin ones, case kept. NFKC again after that, so a mark that a
    dropped character kept from its letter composes with it (`e`, U+200B, U+0301 is `é`)."""
    if text.isascii():  # NFKC leaves ASCII alone: only a control character to drop
        return text if text.isprintable() or _ASCII_CONTROL.search(text) is None else text.translate(_UNMASK)
    text = unicodedata.normalize("NFKC", text)
    if _MASKED.search(text) is None:
        return text
    return unicodedata.normalize("NFKC", text.translate(_UNMASK))


def folded_rows(texts: pa.Array) -> tuple[np.ndarray, list[str]]:
    """The rows of a string column that `folded` changes (their indexes, ascending) and what
    it makes of them. Only the rows holding an ASCII control character (`rows_with_bytes`: one
    Hyperscan pass over the column's bytes) and the rows with a character outside ASCII are
    looked at, and of the latter only the ones holding a character `folded` may change
    (`foldable_characters`, RE2 in Arrow) meet Python."""
    other = np.flatnonzero(~pc.fill_null(pc.string_is_ascii(texts), True).to_numpy(zero_copy_only=False))
    controlled = rows_with_bytes(texts, _ASCII_CONTROLS)
    if not len(other) and not len(controlled):
        return other, []
    maybe = pc.fill_null(pc.match_substring_regex(texts.take(pa.array(other, pa.int64())), pattern=foldable_characters()), False)
    rows = np.union1d(other[maybe.to_numpy(zero_copy_only=False)], controlled)
    before = texts.take(pa.array(rows, pa.int64())).to_pylist()
    after = [unicodedata.normalize("NFKC", t) for t in before]
    masked = np.flatnonzero(pc.match_substring_regex(pa.array(after, pa.large_string()), pattern=_MASKED_RE2)).tolist()
    for i, t in zip(masked, _unmasked([after[i] for i in masked])):
        after[i] = unicodedata.normalize("NFKC", t)  # as `folded` does, for many texts at once
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    return rows[changed], [after[i] for i in changed]


def _unmasked(texts: list[str]) -> list[str]:
    """`text.translate(_UNMASK)` of each text, at once: the texts' code points mapped through a
    numpy table (str.translate looks each character up in a dict: ~8 MB/s on Cyrillic text,
    this ~50)."""
    if not texts:
        return []
    points = _unmask_table()[np.frombuffer("".join(texts).encode("utf-32-le"), np.uint32)]
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    kept = points != _DROPPED
    if not kept.all():
        ends = np.concatenate([[0], np.cumsum(kept)])[np.cumsum(lengths)]
        lengths = np.diff(ends, prepend=0)
        points = points[kept]
    out = points.tobytes().decode("utf-32-le")
    ends = np.cumsum(lengths).tolist()
    return [out[a:b] for a, b in zip([0, *ends[:-1]], ends)]


_DROPPED = np.uint32(0xFFFFFFFF)


def _unmask_table() -> np.ndarray:
    """Code point -> `_UNMASK`'s code point for it (`_DROPPED`: none); built once (4 MB)."""
    if "table" not in _FOLDABLE:
        table = np.arange(0x110000, dtype=np.uint32)
        for point, to in _UNMASK.items():
            table[point] = _DROPPED if to is None else ord(to)
        _FOLDABLE["table"] = table
    return _FOLDABLE["table"]


FOLDABLE_FILE = Path(__file__).with_name("foldable.txt")
"""`foldable_characters` as computed for one Unicode version (first line: the version): read
where this Python's is the same, computed (~0.3 s) otherwise. `write_foldable_file` writes
it; tests/guards/test_text.py checks it."""


def write_foldable_file() -> None:
    """Write `FOLDABLE_FILE` for this Python's Unicode version."""
    FOLDABLE_FILE.write_text(f"{unicodedata.unidata_version}\n{_foldable()}\n", encoding="ascii")


def foldable_characters() -> str:
    """An RE2 class of every character that can make `folded` change a text: those NFKC
    changes, hidden ones and control characters, look-alikes, and those NFKC may compose with or reorder after the
    character before them (marks, and the Hangul vowel and final jamo). Once per process:
    from `FOLDABLE_FILE`, or computed."""
    if "class" not in _FOLDABLE:
        version, _, expression = FOLDABLE_FILE.read_text(encoding="ascii").partition("\n") if FOLDABLE_FILE.is_file() else ("", "", "")
        _FOLDABLE["class"] = expression.strip() if version == unicodedata.unidata_version else _foldable()
    return _FOLDABLE["class"]


def _foldable() -> str:
    """`foldable_characters`, computed: each character is normalized in a block of 4096 at once
    (NFKC: does it change; NFD: does it decompose, and into which marks, which may compose
    with a letter before them; NFD after U+093C and before U+0334, combining classes 7 and 1:
    is it reordered, so a mark, unless it only decomposes). `\\p{M}` would do for the marks but
    makes RE2 twice as slow. ~0.3 s."""
    points = {ord(c) for c in LOOKALIKES} | {c for lo, hi in _DROPPED_RANGES for c in range(lo, hi + 1)}
    decomposing, tails = _decompositions()
    marks = (_changed("NFD", (0x093C,)) | _changed("NFD", (), (0x0334,))) - decomposing
    points |= _changed("NFKC", ()) | tails | marks
    ranges, ordered = [], sorted(points)  # the ASCII ones: control characters only
    start = ordered[0]
    for a, b in zip(ordered, ordered[1:] + [-1]):
        if b != a + 1:
            ranges.append(f"\\x{{{start:x}}}" + (f"-\\x{{{a:x}}}" if a != start else ""))
            start = b
    return "[" + "".join(ranges) + "]"


def _blocks(before: tuple[int, ...] = (), after: tuple[int, ...] = ()) -> Iterator[tuple[str, str]]:
    """Every character from U+0080 on (surrogates left out), 4096 at a time: (the block as one
    text, each character between `before` and `after` and ended by a NUL, which composes with
    nothing; the characters alone)."""
    for start in range(0x80, 0x110000, 4096):
        block = np.arange(start, min(start + 4096, 0x110000), dtype=np.uint32)
        block = block[(block < 0xD800) | (block > 0xDFFF)]
        if len(block):
            columns = [np.full_like(block, p) for p in before] + [block] + [np.full_like(block, p) for p in (*after, 0)]
            yield np.stack(columns, axis=1).tobytes().decode("utf-32-le"), block.tobytes().decode("utf-32-le")


def _changed(form: str, before: tuple[int, ...], after: tuple[int, ...] = ()) -> set[int]:
    """Characters c that `form` changes between `before` and `after`."""
    changed = set()
    for text, chars in _blocks(before, after):
        normal = unicodedata.normalize(form, text)
        if normal != text:
            pieces = normal.split("\0")
            wrapped = "".join(map(chr, before)) + "{}" + "".join(map(chr, after))
            changed.update(ord(c) for c, n in zip(chars, pieces) if n != wrapped.format(c))
    return changed


def _decompositions() -> tuple[set[int], set[int]]:
    """The characters NFD decomposes, and those after the first of some decomposition: NFKC
    may compose them with the character before them (marks, Hangul vowel and final jamo,
    vowel signs)."""
    decomposing, tails = set(), set()
    for text, chars in _blocks():
        normal = unicodedata.normalize("NFD", text)
        if normal != text:
            for c, piece in zip(chars, normal.split("\0")):
                if piece != c:
                    decomposing.add(ord(c))
                    tails.update(ord(x) for x in piece[1:])
    return decomposing, tails


def tokens(text: str) -> list[str]:
    """Normalized words: folded, case folded, runs of letters and digits."""
    return TOKEN.findall(folded(text).casefold())


def normalize_question(text: str) -> str:
    """The normalized form used for exact matching: tokens joined by single spaces."""
    return " ".join(tokens(text))


def feature(token: str) -> str:
    """A word's feature: a plural `s` and an `ing` dropped (`departments` -> `department`,
    `working` -> `work`); light on purpose, the same on both sides of every comparison."""
    if len(token) > 5 and token.endswith("ing"):
        return token[:-3]
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def features(words: Iterable[str]) -> frozenset[str]:
    """Content-word features of normalized tokens (module docstring)."""
    return frozenset(feature(t) for t in words if t not in STOPWORDS)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def question_similarity(a: str, b: str) -> float:
    """Content-word Jaccard similarity of two questions, in [0, 1]."""
    return jaccard(features(tokens(a)), features(tokens(b)))


def _anycase(*words: str) -> str:
    """Case-insensitive alternation by character classes: much faster than re.IGNORECASE."""
    return "|".join("".join(f"[{c}{c.lower()}]" for c in w) for w in words)


_QUERY_START = re.compile(rf"\b(?:{_anycase('PREFIX', 'BASE', 'SELECT', 'ASK', 'CONSTRUCT', 'DESCRIBE')})\b")
QUERY_KEYWORD = re.compile(rf"\b(?:{_anycase('SELECT', 'ASK')})\b")
_FENCE = re.compile(r"```[a-zA-Z]*\n(.*?)```", re.DOTALL)


def _algebra(text: str) -> CompValue | None:
    """The query's algebra as kgeval.stores reads it (escaped local names resolved, parses
    serialized and cached), as written (a label service as its SERVICE clause, which a copy
    holds), or None when it does not parse."""
    try:
        return query_algebra(text, as_written=True)
    except QuerySyntaxError:
        return None


def canonical_sparql(text: str) -> str | None:
    """The canonical form of a SPARQL query (module docstring), or None when it does not parse."""
    algebra = _algebra(text)
    return None if algebra is None else "".join(_serialize(algebra, {}))


QueryKey = tuple[tuple[str, str], ...]

NOT_A_QUERY: QueryKey = ()
"""`query_key` of a text that `canonical_sparql` reads as no query."""


def query_key(text: str) -> QueryKey | None:
    """The query as the guard's lexer reads its terminals (kgeval.stores: comments, spacing,
    keyword case and string quoting written away), without its declarations, prefixed names
    written as full IRIs, variables and blank nodes renamed in order of first appearance. Two
    texts with one key are one query up to the names of its variables, so one
    `canonical_sparql`: told in microseconds where rdflib's parse takes ~10 ms.

    A prefix the text uses without declaring it is read as rdflib reads it: one it binds by
    default (`rdfs:`) as its namespace, any other makes the text `NOT_A_QUERY` (rdflib refuses
    it: `canonical_sparql` is None). None where unsure: a backslash or a carriage return
    (rdflib reads escapes and comments otherwise), BASE (relative IRIs), a percent escape in a
    prefixed name, or any other text the lexer refuses."""
    if "\\" in text or "\r" in text:
        return None
    tokens = _terminals_as_rdflib_reads(text)
    if not tokens:
        return tokens
    prefixes: dict[str, str] = {}
    names: dict[str, str] = {}
    key: list[tuple[str, str]] = []
    for i, (kind, spelled) in enumerate(tokens):
        before = tokens[i - 1].keyword if i else ""
        if kind == "word" and spelled == "BASE" or kind == "pname" and "%" in spelled:
            return None
        if kind == "word" and spelled == "PREFIX" or before == "PREFIX":
            if before == "PREFIX" and kind != "pname":
                return None
            continue
        if i >= 2 and tokens[i - 2].keyword == "PREFIX":
            if kind != "iri":
                return None
            prefixes[tokens[i - 1].text[:-1]] = spelled[1:-1]
        elif kind == "pname":
            prefix, _, local = spelled.partition(":")
            key.append(("iri", prefixes[prefix] + local))
        elif kind in ("var", "bnode"):
            key.append((kind, names.setdefault(spelled, f"{kind}{len(names)}")))
        else:
            key.append((kind, spelled if kind != "iri" else spelled[1:-1]))
    return tuple(key)


def _terminals_as_rdflib_reads(text: str) -> list[Token] | QueryKey | None:
    """The lexer's terminals of `text` after a declaration of each prefix it uses undeclared
    that rdflib binds by default; `NOT_A_QUERY` when it uses another; None when it does not lex."""
    declared = ""
    for _ in range(len(_rdflib_prefixes()) + 1):  # each round declares one more
        try:
            return canonical_tokens(declared + text)
        except QuerySyntaxError as exc:
            if exc.undeclared_prefix is None:
                return None
            if (namespace := _rdflib_prefixes().get(exc.undeclared_prefix)) is None:
                return NOT_A_QUERY
            declared += f"PREFIX {exc.undeclared_prefix}: <{namespace}>\n"
        except QueryRefused:
            return None
    return None


@cache
def _rdflib_prefixes() -> dict[str, str]:
    """The prefixes rdflib's SPARQL parser binds before reading a query's prologue."""
    from rdflib.plugins.sparql.sparql import Prologue

    return {prefix: str(namespace) for prefix, namespace in Prologue().namespace_manager.namespaces()}


def query_needles(text: str) -> frozenset[str]:
    """Strings any query with the same canonical form must contain: for each IRI (rdf:type
    excepted, it may be written `a`) its namespace (declared in a PREFIX or written out; rdflib
    knows no undeclared prefix) and its local name, and each string literal. A cheap test that
    spares parsing text that cannot match. (A prefix declared for a shorter namespace, with
    escaped slashes in local names, or a BASE with relative IRIs, escapes it.)"""
    algebra = _algebra(text)
    if algebra is None:
        return frozenset()
    found = set()
    for term in _terms(algebra):
        if isinstance(term, URIRef) and str(term) != RDF_TYPE:
            iri = str(term)
            ns = namespace(iri)
            found.update((ns, iri[len(ns):]))
        elif isinstance(term, Literal) and term.datatype is None:
            found.add(str(term))
    return frozenset(n for n in found if n)


_DECLARATION = re.compile(r"(?i)\bPREFIX\s+([^\s:<>]*):\s*<([^<>\s]*)>|\bBASE\s*<[^<>\s]*>")


def declarations(text: str) -> str:
    """A query's PREFIX and BASE declarations, one a line ("" when it has none)."""
    return "\n".join(m.group(0) for m in _DECLARATION.finditer(text))


def written_names(text: str) -> dict[str, str]:
    """IRI -> the prefixed name a query writes it as (`hr:worksIn`), for each IRI it writes
    with a prefix it declares: what a copy of the query without its declarations still holds."""
    body = _DECLARATION.sub(" ", text)
    declared = sorted(((m.group(1), m.group(2)) for m in _DECLARATION.finditer(text) if m.group(2)), key=lambda d: -len(d[1]))
    names = {}
    for iri in iris_in_query(text):
        for prefix, ns in declared:
            if iri.startswith(ns) and f"{prefix}:{iri[len(ns):]}" in body:
                names[iri] = f"{prefix}:{iri[len(ns):]}"
                break
    return names


def bare_query_needles(text: str, named: set[str] | dict) -> frozenset[str]:
    """Strings a copy of the query without its declarations must contain: `query_needles`,
    less the namespaces it writes only in declarations, plus the prefixed names of the IRIs
    in `named` (the holdout's distinctive ones) as it writes them."""
    body = _DECLARATION.sub(" ", text)
    kept = {n for n in query_needles(text) if "://" not in n or n in body}
    return frozenset(kept | {name for iri, name in written_names(text).items() if iri in named})


def sparql_candidates(text: str) -> Iterator[str]:
    """Pieces of free text that may be a SPARQL query: the whole text, fenced code blocks, and
    the text from the first query keyword on."""
    yield text
    yield from (m.group(1) for m in _FENCE.finditer(text))
    start = _QUERY_START.search(text)
    if start and start.start() > 0:
        yield text[start.start():]


def iris_in_query(text: str) -> set[str]:
    """The IRIs a query mentions, prefixes expanded (empty when it does not parse)."""
    algebra = _algebra(text)
    return set() if algebra is None else {str(t) for t in _terms(algebra) if isinstance(t, URIRef)}


def _terms(algebra: CompValue) -> Iterator[URIRef | Literal]:
    stack: list[Any] = [algebra]
    while stack:
        node = stack.pop()
        if isinstance(node, (URIRef, Literal)):
            yield node
        elif isinstance(node, dict):
            stack.extend(v for k, v in node.items() if not str(k).startswith("_"))
        elif isinstance(node, (list, tuple, set, frozenset)):
            stack.extend(node)


def _shape(triple: tuple) -> tuple[str, ...]:
    """A triple's spelling with its variables and blank nodes blanked: an order independent of
    their names."""
    return tuple("?" if isinstance(t, (Variable, BNode)) else t.n3() for t in triple)


def _serialize(node: Any, names: dict[str, str]) -> Iterator[str]:
    if isinstance(node, Variable):
        yield "?" + names.setdefault(str(node), f"v{len(names)}")
    elif isinstance(node, BNode):  # rdflib names `[]` and paths' blank nodes at random: named in order too
        yield "_:" + names.setdefault(node.n3(), f"b{len(names)}")
    elif isinstance(node, (URIRef, Literal)):
        yield node.n3()
    elif isinstance(node, CompValue):
        yield node.name + "("
        for key, value in node.items():
            if key.startswith("_"):  # rdflib bookkeeping (_vars), derived from the rest
                continue
            yield key + "="
            # rdflib fills PV from a set for ASK and SELECT *: its order is arbitrary, so
            # projections compare as sets (the body, serialized first, has named them all).
            if key == "PV":
                value = frozenset(value)
            elif node.name == "BGP" and key == "triples":
                value = sorted(value, key=_shape)  # rdflib orders triples by variable names
            yield from _serialize(value, names)
            yield ","
        yield ")"
    elif isinstance(node, dict):
        yield "{"
        for key, value in node.items():
            yield from _serialize(key, names)
            yield ":"
            yield from _serialize(value, names)
            yield ","
        yield "}"
    elif isinstance(node, (list, tuple)):
        yield "["
        for item in node:
            yield from _serialize(item, names)
            yield ","
        yield "]"
    elif isinstance(node, (set, frozenset)):
        yield "{" + ",".join(sorted("".join(_serialize(item, names)) for item in node)) + "}"
    else:
        yield repr(node)
