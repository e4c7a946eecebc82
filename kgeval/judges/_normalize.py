"""Normalization of answer items and result cells: the one place where typed terms become
comparable keys. Every judge normalizes through a `Normalizer` built from its
`NormalizationConfig`; each rule below can be switched off there, and the active rules are part
of the judge's configuration hash (so of its version).

Rules (the config field is named in brackets), applied in this order:

1. IRIs [iri_tail, trailing_slash, percent_decode]. An IRI is a result cell of type IRI, or an
   untyped value (an answer item; a literal when term kinds are ignored) that starts with
   `http://`, `https://`, `urn:`, `mailto:`, `tel:` or `file://`, optionally inside `<...>`.
   - iri_tail: the IRI compares by its last path segment or fragment
     (`http://x/entities/ConsumerComplaint/12345` -> `12345`; `urn:a:b` -> `b`; an address
     IRI by its address: `mailto:karen@x.org` -> `karen@x.org`, `tel:+49-30-1234` ->
     `+49-30-1234`); trailing slashes are always ignored when finding the tail, so a tail is
     never empty.
   - trailing_slash: a full IRI (iri_tail off) loses its trailing slashes.
   - percent_decode: `%40` -> `@` (after taking the tail, so `%2F` cannot move the cut).
2. Whitespace [whitespace]: runs of whitespace fold to one space; ends are trimmed.
3. Case [casefold]: Unicode case folding (`Straße` = `STRASSE`), applied to IRIs too.
4. Numbers [numbers]: a value that parses as a finite decimal number takes its canonical
   decimal form (`1.50` -> `1.5`, `+2` -> `2`, `-0.0` -> `0`, `1e3` -> `1000`, `-0.20` = `-.2`),
   except a text whose digits start with a zero (`00118`, `0471234`): an identifier (a postal
   code, a registry number), not the number 118, unless its datatype is numeric (`"007"^^xsd:integer` = 7).
   Thousands separators are read (`2,872,800` = `2872800`; only groups of three digits).
   A number with a fractional part keeps 12 significant digits (rounded half to even): a
   computed value is then the same as the engine's xsd:decimal (oxigraph keeps 18 fractional
   digits of an average), as a double (`AVG(xsd:double(?x))`) and as a JSON number
   (`629558.333333333333333333` = `629558.3333333334`). Integers keep every digit: they are
   often identifiers (ISBN-13, population counts).
5. Booleans [booleans]: JSON `true`/`false` and xsd:boolean literals (`1`/`0` too) become
   `true`/`false`. Off, a JSON boolean is spelt `True`/`False` (so case folding still equates
   it with the text `true`) and xsd:boolean `1` stays `1`.
5b. Dates [dates]: a date-time at midnight UTC or with no zone compares as its date
   (`1871-07-01T00:00:00Z` = `"1871-07-01"^^xsd:date` = `1871-07-01`): Wikidata writes every
   date as such a date-time, and a system may give the date alone. Another time stays apart.
6. Language tags [drop_language_tags]: on, `"Sales"@en` = `"Sales"`; off, the key keeps `@en`
   (an untyped answer item has no tag, so it then never equals a tagged literal).
7. Datatypes [drop_datatypes]: on, `"1"^^xsd:integer` = `"1"` = `1`; off, the key keeps the
   datatype IRI (`"1"^^xsd:integer` != `"1"^^xsd:decimal`, numbers rule aside).
8. Term kinds [ignore_term_kinds]: on, an IRI, a literal and a blank node may give the same
   key (an IRI's tail equals a label of the same text); off, keys of IRIs and blank nodes
   carry a kind marker, so a label never equals an IRI. A blank node's key is `_:` (labels are
   engine-local), so it equals any other blank node.

An untyped value always loses its surrounding whitespace and one pair of angle brackets
(`<http://x/a>` is the IRI `http://x/a`), as the seed judge first specified.

Presets (kgeval/config.py): SEED_NORMALIZATION (all on but booleans: the seed judge as first
specified), EXECUTION_NORMALIZATION (full IRIs, kinds kept), ANSWER_LIST_NORMALIZATION (all on).
Unbound cells stay None.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from itertools import compress, repeat
from operator import eq, itemgetter, is_
from urllib.parse import unquote

from kgeval.config import SEED_NORMALIZATION, NormalizationConfig
from kgeval.stores import Term, term_cell

_IRI_SCHEMES = ("http://", "https://", "urn:", "mailto:", "tel:", "file://")
_NUMBER_START = frozenset("+-.0123456789")
_XSD_BOOLEAN = "http://www.w3.org/2001/XMLSchema#boolean"
XSD_NUMBERS = frozenset(
    "http://www.w3.org/2001/XMLSchema#" + t
    for t in ("integer", "decimal", "double", "float", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger",
              "negativeInteger", "nonPositiveInteger", "unsignedInt", "unsignedLong", "unsignedShort", "unsignedByte")
)  # fmt: skip
_GROUPED = re.compile(r"\s*[+-]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?\s*$")
"""A number written with thousands separators (`2,872,800`, `1,234.5`)."""
_MIDNIGHT = re.compile(r"\s*(\d{4}-\d\d-\d\d)[tT]00:00:00(?:\.0+)?(?:[zZ]|[+-]00:00)?\s*$")
"""A date-time at midnight UTC or with no zone (rule 5b: it compares as its date)."""
_LEADING_ZEROS = re.compile(r"^\s*([+-]?)0+(?=\d)")
"""The zeros a typed number's text may start with (they are not part of its value)."""
_BOOLEAN_FORMS = {"1": "true", "0": "false", "true": "true", "false": "false"}
_IRI_MARK = "\x01"
_BNODE_KEY = "_:"
_CACHE_LIMIT = 1 << 18
_AFTER = itemgetter(2)
"""What `str.rpartition` found after the separator (all of the text when it is absent)."""
_FIRST_CHARACTER = itemgetter(slice(0, 1))


def unbracketed(text: str) -> str:
    """An untyped value without its surrounding whitespace and one pair of angle brackets."""
    stripped = text.strip()
    return stripped[1:-1] if stripped.startswith("<") and stripped.endswith(">") else stripped


def spells_iri(stripped: str) -> bool:
    """Rule 1's test of an untyped value (unbracketed): it starts with an IRI scheme."""
    return stripped[:8].lower().startswith(_IRI_SCHEMES)


def item_term(item: str | int | float) -> Term:
    """The typed cell an answer-list item stands for, as the rules above read it: the IRI it
    spells (bracketed or not), else a plain literal of its text."""
    text = unbracketed(item if isinstance(item, str) else str(item))
    return Term.iri(text) if spells_iri(text) else Term.literal(text)


def item_iri(item: str) -> str | None:
    """The IRI an answer-list text spells (`item_term`'s reading), or None."""
    text = unbracketed(item)
    return text if spells_iri(text) else None


def iri_tail(iri: str) -> str:
    """The last path segment or fragment of an IRI, percent-decoded."""
    return unquote(_tail(iri))


def iri_tails(iris: list[str]) -> list[str]:
    """`iri_tail` of each IRI (`_tails`: in C over the list)."""
    return [unquote(tail) if "%" in tail else tail for tail in _tails(iris)]  # unquote returns a text without % unchanged


_ADDRESS_SCHEMES = ("mailto:", "tel:")
"""IRIs that are an address after their scheme (`mailto:karen@example.org`, `tel:+49-30-1234`):
their tail is the address, which is how a system writes it."""


def _tail(iri: str) -> str:
    """What follows the last `/` or `#` once trailing slashes are dropped (the last `:` of a URN
    with neither; the address of a `mailto:` or `tel:` IRI); `_tails` of one IRI."""
    return _tails([iri])[0]


def _tails(iris: list[str]) -> list[str]:
    """`_tail` of each IRI, step by step over the whole list in C: a run normalizes thousands of
    IRIs it has not met before, and the per-IRI Python of `_tail` was a third of their cost."""
    stripped = list(map(str.rstrip, iris, repeat("/")))
    tails = list(map(_AFTER, map(str.rpartition, map(_AFTER, map(str.rpartition, stripped, repeat("/"))), repeat("#"))))
    for i in compress(range(len(tails)), map(eq, map(len, tails), map(len, stripped))):  # nothing cut
        if stripped[i].startswith("urn:"):
            tails[i] = stripped[i].rpartition(":")[2]
        elif stripped[i].lower().startswith(_ADDRESS_SCHEMES):
            tails[i] = stripped[i].partition(":")[2]
    return tails


_SIGNIFICANT = 12
"""Significant digits a number with a fractional part keeps (rule 4)."""


def _canonical_number(text: str) -> str | None:
    """The canonical decimal form of a number's text, or None: not a finite number, or an
    identifier spelt with leading zeros (`00118`, `0471234`: a postal code or a registry
    number is not the number 118; a typed numeric literal is canonicalized before, `_typed`)."""
    digits = text.lstrip("+-")
    if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
        return None
    if "," in text:  # thousands separators: 2,872,800 (groups of three digits only)
        if not _GROUPED.match(text):
            return None
        text = text.replace(",", "")
    try:
        number = Decimal(text)
    except InvalidOperation:
        return None
    if not number.is_finite():
        return None
    if number == 0:
        return "0"
    number = number.normalize()
    digits, exponent = number.as_tuple()[1:]
    if exponent < 0 and len(digits) > _SIGNIFICANT:  # type: ignore[operator] - finite: an int
        number = number.quantize(Decimal(1).scaleb(number.adjusted() - _SIGNIFICANT + 1), rounding=ROUND_HALF_EVEN).normalize()
    return format(number, "f")


class Normalizer:
    """Turns answer items and result cells into comparable keys under one set of rules.

    Keys are memoized per normalizer (bounded), so a value seen before costs one dict lookup,
    and interned, so a gold's key and an answer's equal key are one object (dict lookups then
    compare by identity, without reading the strings).
    """

    def __init__(self, config: NormalizationConfig) -> None:
        self.config = config
        # the rules as plain attributes: a cell met for the first time reads several of them
        self._iri_tail, self._trailing_slash, self._percent_decode = config.iri_tail, config.trailing_slash, config.percent_decode
        self._whitespace, self._casefold, self._numbers = config.whitespace, config.casefold, config.numbers
        self._booleans, self._kinds_ignored, self._dates = config.booleans, config.ignore_term_kinds, config.dates
        self._datatypes_kept, self._tags_kept = not config.drop_datatypes, not config.drop_language_tags
        self._texts: dict[str, str] = {}
        self._terms: dict[tuple[str, str, str | None, str | None], str] = {}

    def items(self, items: list) -> list[str]:
        """Keys of a whole answer list; the hot path of membership judging (one dict lookup
        per item seen before)."""
        get, item = self._texts.get, self.item
        return [(get(i) if type(i) is str else None) or item(i) for i in items]

    def item(self, item: object) -> str:
        """Key of one item of a system's answer list (JSON string, number or boolean)."""
        if isinstance(item, bool):
            if self.config.booleans:
                return "true" if item else "false"
            return self.text(str(item))
        return self.text(item if isinstance(item, str) else str(item))

    def text(self, text: str) -> str:
        """Key of an untyped value: IRI rules when it looks like an IRI, else literal rules."""
        key = self._texts.get(text)
        if key is None:
            if len(self._texts) >= _CACHE_LIMIT:
                self._texts.clear()
            key = self._texts[text] = sys.intern(self._untyped(text))
        return key

    def texts(self, texts: list[str]) -> list[str]:
        """`text` of each, in order: the texts not memoized yet normalized as one batch (IRIs
        by `_iris`, the others by `_literals`, each rule over the whole list in C), as
        `cells` does for result cells."""
        memo = self._texts
        new = [text for text in dict.fromkeys(texts) if text not in memo]
        if new:
            if len(memo) + len(new) > _CACHE_LIMIT:  # start over with these texts, so each has its key afterwards
                memo.clear()
                new = list(dict.fromkeys(texts))
            stripped = list(map(unbracketed, new))
            spelt = list(map(spells_iri, stripped))
            iris = self._iris(list(compress(stripped, spelt)))
            literals = self._literals([text for text, is_iri in zip(stripped, spelt) if not is_iri])
            iri_keys, literal_keys = iter(iris), iter(literals)
            memo.update((text, sys.intern(next(iri_keys) if is_iri else next(literal_keys))) for text, is_iri in zip(new, spelt))
        return list(map(memo.__getitem__, texts))

    def term(self, term: Term | None) -> str | None:
        """Key of one typed result cell; None (unbound) stays None."""
        if term is None:
            return None
        spec = (term.type, term.value, term.datatype, term.lang)
        key = self._terms.get(spec)
        return self._new_term_key(spec) if key is None else key

    def _new_term_key(self, spec: tuple[str, str, str | None, str | None]) -> str:
        """Key of a cell not memoized yet, memoized."""
        if len(self._terms) >= _CACHE_LIMIT:
            self._terms.clear()
        key = self._terms[spec] = sys.intern(self._iri(spec[1]) if spec[0] == "uri" else self._typed(*spec))
        return key

    def cells(self, cells: Sequence[Term | None]) -> list[str | None]:
        """Keys of many result cells, in order: `term` of each, with the cells seen before
        looked up in C (a result's cells are read by the thousand, most of them seen before)."""
        try:
            specs = list(map(term_cell, cells))
        except AttributeError:  # an unbound cell (None): the general path
            return list(map(self.term, cells))
        keys = list(map(self._terms.get, specs))
        if None in keys:  # cells not seen yet: normalize those, then read every key again
            self._learn(list(dict.fromkeys(compress(specs, map(is_, keys, repeat(None))))), specs)
            return list(map(self._terms.__getitem__, specs))
        return keys

    def _learn(self, new: list[tuple[str, str, str | None, str | None]], specs: list[tuple[str, str, str | None, str | None]]) -> None:
        """Memoize the keys of the distinct cells `new` (not memoized yet) among `specs`: IRIs
        as one batch (`_iris`), other cells one by one. When the memo would outgrow its bound it
        starts over with every cell of `specs`, so each of them has its key afterwards."""
        terms = self._terms
        if len(terms) + len(new) > _CACHE_LIMIT:
            terms.clear()
            new = list(dict.fromkeys(specs))
        iris = [spec for spec in new if spec[0] == "uri"]
        terms.update(zip(iris, map(sys.intern, self._iris([spec[1] for spec in iris]))))
        for spec in new:
            if spec[0] != "uri":
                terms[spec] = sys.intern(self._typed(*spec))

    def rows(self, rows: Sequence[Sequence[Term | None]], width: int) -> list[tuple[str | None, ...]]:
        """Keys of a result's rows of `width` cells each: one tuple per row, as `term` maps them."""
        if width == 0 or set(map(len, rows)) != {width}:
            return [tuple(map(self.term, row)) for row in rows]
        keys = self.cells([cell for row in rows for cell in row])
        return list(zip(*[iter(keys)] * width))

    def _untyped(self, text: str) -> str:
        stripped = unbracketed(text)
        return self._iri(stripped) if spells_iri(stripped) else self._literal(stripped)

    def _typed(self, kind: str, value: str, datatype: str | None, lang: str | None) -> str:
        if kind == "bnode":
            return _BNODE_KEY if self._kinds_ignored else _IRI_MARK + _BNODE_KEY
        if kind == "uri":
            return self._iri(value)
        if self._booleans and datatype == _XSD_BOOLEAN:
            value = _BOOLEAN_FORMS.get(value.strip(), value)
        elif self._numbers and datatype in XSD_NUMBERS:  # "007"^^xsd:integer is the number 7
            value = _LEADING_ZEROS.sub(r"\1", value)
        key = self._untyped(value) if self._kinds_ignored else self._literal(value)
        if self._datatypes_kept and datatype:
            key += "^^" + datatype
        if self._tags_kept and lang:
            key += "@" + lang
        return key

    def _iri(self, iri: str) -> str:
        return self._iris([iri])[0]

    def _iris(self, iris: list[str]) -> list[str]:
        """Keys of IRIs (rule 1, then the literal rules), each rule applied to the whole list."""
        if self._iri_tail:
            iris = _tails(iris)
        elif self._trailing_slash:
            iris = [iri.rstrip("/") or iri for iri in iris]
        if self._percent_decode:  # unquote returns a text without % unchanged
            iris = [unquote(iri) if "%" in iri else iri for iri in iris]
        keys = self._literals(iris)
        return keys if self._kinds_ignored else list(map(_IRI_MARK.__add__, keys))

    def _literal(self, value: str) -> str:
        return self._literals([value])[0]

    def _literals(self, values: list[str]) -> list[str]:
        """Keys of literal values (rules 2 to 4), each rule applied to the whole list in C."""
        folded = map(" ".join, map(str.split, values)) if self._whitespace else values
        keys = list(map(str.casefold, folded) if self._casefold else folded)
        if self._numbers or self._dates:
            for i in compress(range(len(keys)), map(_NUMBER_START.__contains__, map(_FIRST_CHARACTER, map(str.strip, keys)))):
                number = _canonical_number(keys[i]) if self._numbers else None
                if number is not None:
                    keys[i] = number
                elif self._dates and (midnight := _MIDNIGHT.match(keys[i])):
                    keys[i] = midnight[1]
        return keys


_SEED = Normalizer(SEED_NORMALIZATION)


def normalize_value(text: str) -> str:
    """Key of an untyped value under the seed judge's rules."""
    return _SEED.text(text)


def normalize_term(term: Term | None) -> str | None:
    """Key of a typed cell under the seed judge's rules; None stays None."""
    return _SEED.term(term)


def normalize_item(item: object) -> str:
    """Key of an answer-list item under the seed judge's rules."""
    return _SEED.item(item)
