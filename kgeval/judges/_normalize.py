"""Normalization of answer items and result cells: the one place where typed terms become
comparable keys. Every judge normalizes through a `Normalizer` built from its
`NormalizationConfig`; each rule below can be switched off there, and the active rules are part
of the judge's configuration hash (so of its version).

Rules (the config field is named in brackets), applied in this order:

1. IRIs [iri_tail, trailing_slash, percent_decode]. An IRI is a result cell of type IRI, or an
   untyped value (an answer item; a literal when term kinds are ignored) that starts with
   `http://`, `https://`, `urn:`, `mailto:` or `file://`, optionally inside `<...>`.
   - iri_tail: the IRI compares by its last path segment or fragment
     (`http://x/entities/ConsumerComplaint/12345` -> `12345`; `urn:a:b` -> `b`); trailing
     slashes are always ignored when finding the tail, so a tail is never empty.
   - trailing_slash: a full IRI (iri_tail off) loses its trailing slashes.
   - percent_decode: `%40` -> `@` (after taking the tail, so `%2F` cannot move the cut).
2. Whitespace [whitespace]: runs of whitespace fold to one space; ends are trimmed.
3. Case [casefold]: Unicode case folding (`Straße` = `STRASSE`), applied to IRIs too.
4. Numbers [numbers]: a value that parses as a finite decimal number takes its canonical
   decimal form (`1.50` -> `1.5`, `+2` -> `2`, `-0.0` -> `0`, `1e3` -> `1000`, `-0.20` = `-.2`).
5. Booleans [booleans]: JSON `true`/`false` and xsd:boolean literals (`1`/`0` too) become
   `true`/`false`. Off, a JSON boolean is spelt `True`/`False` (so case folding still equates
   it with the text `true`) and xsd:boolean `1` stays `1`.
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

import sys
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from operator import attrgetter
from urllib.parse import unquote

from kgeval.config import SEED_NORMALIZATION, NormalizationConfig
from kgeval.stores import Term

_IRI_SCHEMES = ("http://", "https://", "urn:", "mailto:", "file://")
_NUMBER_START = frozenset("+-.0123456789")
_XSD_BOOLEAN = "http://www.w3.org/2001/XMLSchema#boolean"
_BOOLEAN_FORMS = {"1": "true", "0": "false", "true": "true", "false": "false"}
_IRI_MARK = "\x01"
_BNODE_KEY = "_:"
_CACHE_LIMIT = 1 << 18
_SPEC = attrgetter("type", "value", "datatype", "lang")
"""A term's identity as one tuple, read in C (the key of `Normalizer._terms`)."""


def iri_tail(iri: str) -> str:
    """The last path segment or fragment of an IRI, percent-decoded."""
    return unquote(_tail(iri))


def _tail(iri: str) -> str:
    stripped = iri.rstrip("/")
    cut = max(stripped.rfind("/"), stripped.rfind("#"))
    if stripped.startswith("urn:") and cut < 0:
        cut = stripped.rfind(":")
    return stripped[cut + 1 :] if cut >= 0 else stripped


def _canonical_number(text: str) -> str | None:
    try:
        number = Decimal(text)
    except InvalidOperation:
        return None
    if not number.is_finite():
        return None
    if number == 0:
        return "0"
    return format(number.normalize(), "f")


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
        self._booleans, self._kinds_ignored = config.booleans, config.ignore_term_kinds
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
            specs = list(map(_SPEC, cells))
        except AttributeError:  # an unbound cell (None): the general path
            return list(map(self.term, cells))
        keys = list(map(self._terms.get, specs))
        if None in keys:  # cells not seen yet: normalize those
            known, new = self._terms.get, self._new_term_key
            return [key if key is not None else known(spec) or new(spec) for key, spec in zip(keys, specs)]
        return keys

    def rows(self, rows: Sequence[Sequence[Term | None]], width: int) -> list[tuple[str | None, ...]]:
        """Keys of a result's rows of `width` cells each: one tuple per row, as `term` maps them."""
        if width == 0 or set(map(len, rows)) != {width}:
            return [tuple(map(self.term, row)) for row in rows]
        keys = self.cells([cell for row in rows for cell in row])
        return list(zip(*[iter(keys)] * width))

    def _untyped(self, text: str) -> str:
        stripped = text.strip()
        if stripped.startswith("<") and stripped.endswith(">"):
            stripped = stripped[1:-1]
        if stripped[:8].lower().startswith(_IRI_SCHEMES):
            return self._iri(stripped)
        return self._literal(stripped)

    def _typed(self, kind: str, value: str, datatype: str | None, lang: str | None) -> str:
        if kind == "bnode":
            return _BNODE_KEY if self._kinds_ignored else _IRI_MARK + _BNODE_KEY
        if kind == "uri":
            return self._iri(value)
        if self._booleans and datatype == _XSD_BOOLEAN:
            value = _BOOLEAN_FORMS.get(value.strip(), value)
        key = self._untyped(value) if self._kinds_ignored else self._literal(value)
        if self._datatypes_kept and datatype:
            key += "^^" + datatype
        if self._tags_kept and lang:
            key += "@" + lang
        return key

    def _iri(self, iri: str) -> str:
        if self._iri_tail:
            iri = _tail(iri)
        elif self._trailing_slash:
            iri = iri.rstrip("/") or iri
        if self._percent_decode and "%" in iri:  # unquote returns a text without % unchanged
            iri = unquote(iri)
        key = self._literal(iri)
        return key if self._kinds_ignored else _IRI_MARK + key

    def _literal(self, value: str) -> str:
        if self._whitespace:
            value = " ".join(value.split())
        if self._casefold:
            value = value.casefold()
        if self._numbers and value.strip()[:1] in _NUMBER_START:
            number = _canonical_number(value)
            if number is not None:
                return number
        return value


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
