"""Vocabulary rules shared by the guards: common namespaces and local-name normalization.

Normalization rules (so that a renamed namespace or a change of naming style does not hide a
copied schema):

1. The local name is the part of the IRI after its last `#`; failing that, after its last `/`;
   failing that, after its last `:`. An IRI ending in a separator uses its last non-empty
   segment (`http://x/Person/` -> `Person`).
2. Percent-escapes are decoded (`has%20manager` -> `has manager`).
3. Unicode NFKC, then case folded, then every character that is not a letter or digit is
   dropped: `hasManager`, `has_manager`, `Has-Manager` and `HAS MANAGER` all become
   `hasmanager`. Namespaces are ignored entirely.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from urllib.parse import unquote

_NOT_ALNUM = re.compile(r"[\W_]+")


def local_name(iri: str) -> str:
    """The local part of an IRI (rule 1 of the module docstring)."""
    stripped = iri.rstrip("/#:")
    for sep in ("#", "/", ":"):
        if sep in stripped:
            return stripped.rsplit(sep, 1)[1]
    return stripped


def normalize_name(iri: str) -> str:
    """The normalized local name of an IRI (module docstring); the IRI itself if nothing is left."""
    folded = unicodedata.normalize("NFKC", unquote(local_name(iri))).casefold()
    return _NOT_ALNUM.sub("", folded) or iri


def namespace(iri: str) -> str:
    """The IRI up to and including its last `#` or `/` (the whole IRI when it has neither)."""
    cut = max(iri.rfind("#"), iri.rfind("/"))
    return iri[: cut + 1] if cut >= 0 else iri


def in_namespaces(iri: str, namespaces: Iterable[str]) -> bool:
    return any(iri.startswith(ns) for ns in namespaces)
