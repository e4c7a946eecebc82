"""Normalization of answer items and gold cells: the one place where typed terms become
comparable strings.

Rules, applied in this order to a value's text:
1. IRI -> its path tail: trailing slashes dropped, the part after the last '/' or '#',
   percent-decoded (`http://x/entities/ConsumerComplaint/12345` -> `12345`).
2. Whitespace folded to single spaces and trimmed; case folded.
3. Numbers in canonical decimal form (`1.50` -> `1.5`, `+2` -> `2`, `-0.0` -> `0`, `1e3` -> `1000`).
Literals lose their datatype and language tag: `"1"^^xsd:integer`, `1` and `"1"` compare equal.
A blank node normalizes to `_:`, which matches only another blank node.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from functools import lru_cache
from urllib.parse import unquote

from kgeval.stores import Term

_IRI_SCHEMES = ("http://", "https://", "urn:", "mailto:", "file://")


def iri_tail(iri: str) -> str:
    """The last path segment or fragment of an IRI, percent-decoded."""
    stripped = iri.rstrip("/")
    cut = max(stripped.rfind("/"), stripped.rfind("#"))
    if stripped.startswith("urn:") and cut < 0:
        cut = stripped.rfind(":")
    return unquote(stripped[cut + 1 :]) if cut >= 0 else unquote(stripped)


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


@lru_cache(maxsize=1 << 18)
def normalize_value(text: str) -> str:
    """Normalize one answer item given as text (rules 1-3 of the module docstring)."""
    value = text.strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1]
    if value.lower().startswith(_IRI_SCHEMES):
        value = iri_tail(value)
    value = " ".join(value.split()).casefold()
    number = _canonical_number(value) if value[:1] in "+-.0123456789" else None
    return number if number is not None else value


def normalize_term(term: Term | None) -> str | None:
    """Normalize one typed gold or result cell; None stays None (unbound)."""
    if term is None:
        return None
    if term.type == "bnode":
        return "_:"
    return normalize_value(term.value)


def normalize_item(item: object) -> str:
    """Normalize one item of a system's answer list (JSON string, number or boolean)."""
    if isinstance(item, bool):
        return "true" if item else "false"
    return normalize_value(str(item))
