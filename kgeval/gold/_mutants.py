"""Near-miss mutants of a reference query: what a test suite must tell apart from it.

The mutation kinds of test-suite accuracy (Zhong, Yu & Klein, EMNLP 2020, section 3.2), for
SPARQL: drop a FILTER, drop one triple pattern, flip or loosen a comparison, change a constant,
add or drop DISTINCT, COUNT vs COUNT DISTINCT, reverse an ORDER BY, change LIMIT/OFFSET,
project another variable, remove a GROUP BY key.

Mutants are edits of the query's canonical terminals (`kgeval.stores._lexer`, the tokens the
read-only guard approves), so comments, escapes and prefixed names never confuse an edit; each
mutant's text is that of the edited tokens, and is guarded again when a store runs it. A mutant
that does not parse or run is recorded as invalid, not counted (a system writing it would be
judged `invalid_sparql` anyway). Mutants whose text equals the reference's are dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Literal

from pydantic import BaseModel

from kgeval.stores._lexer import Token, canonical_text, canonical_tokens, declared_prefixes, iri_of, string_value

MutantKind = Literal[
    "drop_filter", "drop_triple", "flip_comparison", "loosen_comparison", "change_constant", "toggle_distinct",
    "count_distinct", "reverse_order", "change_limit", "project_other", "drop_group_key",
]  # fmt: skip
"""The closed set of mutation kinds (see the module docstring)."""


class Mutant(BaseModel):
    """One near miss of a reference query."""

    kind: MutantKind
    """What was changed."""
    where: str
    """The terminals changed, as a reader finds them in the query (e.g. `FILTER ( ?y > 2000 )`)."""
    sparql: str
    """The mutant's text (canonical terminals)."""


_XSD_DATE = "http://www.w3.org/2001/XMLSchema#date"
_COMPARISONS = {"<": (">", "<="), ">": ("<", ">="), "<=": (">=", "<"), ">=": ("<=", ">"), "=": ("!=", None), "!=": ("=", None)}
_OPEN, _CLOSE = {"(", "{", "["}, {")", "}", "]"}
_TRIPLE_STARTS = {"var", "iri", "pname", "bnode", "string", "number", "anon"}
Alternatives = Callable[[str | None, Token], list[Token]]
"""(predicate IRI before the constant or None, the constant) -> other constants to try."""


def mutants(sparql: str, alternatives: Alternatives | None = None, limit: int = 40) -> list[Mutant]:
    """The distinct near misses of `sparql`, in a fixed order, at most `limit` (spread over the
    kinds: each kind's first mutants come first). Empty for a query the lexer refuses."""
    try:
        tokens = canonical_tokens(sparql)
    except Exception:  # noqa: BLE001 - not SPARQL (a Gremlin reference): no mutants
        return []
    original = canonical_text(tokens)
    by_kind: list[list[Mutant]] = []
    for make in (_drop_filters, _drop_triples, _comparisons, _constants, _distinct, _count_distinct, _order, _limits, _projections, _group_keys):
        found = []
        for kind, start, end, new in make(tokens, alternatives):
            text = canonical_text([*tokens[:start], *new, *tokens[end:]])
            if text != original:
                found.append(Mutant(kind=kind, where=canonical_text(tokens[start:end]) or canonical_text(new), sparql=text))
        by_kind.append(found)
    seen, out = {original}, []
    for round_ in range(max((len(k) for k in by_kind), default=0)):
        for found in by_kind:
            if round_ < len(found) and found[round_].sparql not in seen:
                seen.add(found[round_].sparql)
                out.append(found[round_])
    return out[:limit]


Edit = tuple[MutantKind, int, int, list[Token]]
"""(kind, first token replaced, end, replacement tokens)."""


def _matching(tokens: list[Token], i: int) -> int:
    """Index just past the bracket group opening at `i`."""
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].kind == "punct" and tokens[j].text in _OPEN or tokens[j].kind == "word" and tokens[j].text.endswith("("):
            depth += 1
        elif tokens[j].kind == "punct" and tokens[j].text in _CLOSE:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(tokens)


def _is(token: Token, text: str) -> bool:
    return token.text.upper() == text and token.kind in ("word", "punct")


def _drop_filters(tokens: list[Token], _: Alternatives | None) -> Iterator[Edit]:
    for i, token in enumerate(tokens):
        if not _is(token, "FILTER"):
            continue
        j = i + 1
        while j < len(tokens) and tokens[j].kind == "word" and tokens[j].text.upper() in ("NOT", "EXISTS"):
            j += 1
        if j < len(tokens) and tokens[j].kind == "word":  # FILTER regex(...), FILTER CONTAINS(...)
            j += 1
        end = _matching(tokens, j)
        if end < len(tokens) and _is(tokens[end], "."):
            end += 1
        yield "drop_filter", i, end, []


def _statements(tokens: list[Token]) -> Iterator[tuple[int, int]]:
    """(start, end) of each triples statement directly inside a `{ }` group (end excludes its
    `.`): it starts with a term, not a keyword, a filter or a nested group."""
    depth_kind: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.kind == "punct" and token.text == "{":
            depth_kind.append("{")
        elif token.kind == "punct" and token.text in ("(", "[") or token.kind == "word" and token.text.endswith("("):
            depth_kind.append("(")
        elif token.kind == "punct" and token.text in _CLOSE:
            depth_kind.pop() if depth_kind else None
        elif depth_kind and depth_kind[-1] == "{" and token.kind in _TRIPLE_STARTS and (i == 0 or _boundary(tokens[i - 1])):
            end = _statement_end(tokens, i)
            yield i, end
            i = end
            continue
        i += 1


def _boundary(token: Token) -> bool:
    return token.kind == "punct" and token.text in ("{", ".", "}") or token.kind == "word" and token.text.upper() in ("WHERE",)


def _statement_end(tokens: list[Token], i: int) -> int:
    depth = 0
    for j in range(i, len(tokens)):
        t = tokens[j]
        if t.kind == "punct" and t.text in _OPEN or t.kind == "word" and t.text.endswith("("):
            depth += 1
        elif t.kind == "punct" and t.text in _CLOSE:
            if depth == 0:
                return j
            depth -= 1
        elif depth == 0 and (t.kind == "punct" and t.text == "." or t.kind == "word" and t.text.upper() in ("FILTER", "OPTIONAL", "BIND", "VALUES", "MINUS", "GRAPH", "SERVICE")):
            return j
    return len(tokens)


def _split(tokens: list[Token], start: int, end: int, separator: str) -> list[tuple[int, int]]:
    """Spans of tokens[start:end] between top-level `separator`s."""
    spans, depth, first = [], 0, start
    for j in range(start, end):
        t = tokens[j]
        if t.kind == "punct" and t.text in _OPEN or t.kind == "word" and t.text.endswith("("):
            depth += 1
        elif t.kind == "punct" and t.text in _CLOSE:
            depth -= 1
        elif depth == 0 and t.kind == "punct" and t.text == separator:
            spans.append((first, j))
            first = j + 1
    spans.append((first, end))
    return [s for s in spans if s[0] < s[1]]


def _drop_triples(tokens: list[Token], _: Alternatives | None) -> Iterator[Edit]:
    statements = list(_statements(tokens))
    for start, end in statements:
        subject_end = start + 1
        parts = _split(tokens, subject_end, end, ";")
        for k, (a, b) in enumerate(parts):
            objects = _split(tokens, a + 1, b, ",")
            if len(objects) > 1:  # drop one object of `p o1 , o2`
                for m, (oa, ob) in enumerate(objects):
                    cut_from, cut_to = (oa - 1, ob) if m else (oa, ob + 1)
                    yield "drop_triple", cut_from, cut_to, []
            elif len(parts) > 1:  # drop one `p o` of `s p1 o1 ; p2 o2`
                yield "drop_triple", (a - 1 if k else a), (b if k else b + 1), []
        if len(parts) == 1 and len(_split(tokens, parts[0][0] + 1, parts[0][1], ",")) == 1 and len(statements) > 1:
            stop = end + 1 if end < len(tokens) and _is(tokens[end], ".") else end
            yield "drop_triple", start, stop, []


def _comparisons(tokens: list[Token], _: Alternatives | None) -> Iterator[Edit]:
    for i, token in enumerate(tokens):
        if token.kind == "punct" and token.text in _COMPARISONS:
            flipped, loosened = _COMPARISONS[token.text]
            yield "flip_comparison", i, i + 1, [Token("punct", flipped)]
            if loosened:
                yield "loosen_comparison", i, i + 1, [Token("punct", loosened)]


def _constants(tokens: list[Token], alternatives: Alternatives | None) -> Iterator[Edit]:
    prefixes = declared_prefixes(tokens)
    for i, token in enumerate(tokens):
        if i and tokens[i - 1].kind == "word" and tokens[i - 1].text.upper() in ("LIMIT", "OFFSET"):
            continue
        if token.kind == "number":
            for new in _numbers_beside(token.text):
                yield "change_constant", i, i + 1, [Token("number", new)]
        elif token.kind == "string" and i + 2 < len(tokens) and tokens[i + 1].text == "^^" and iri_of(tokens[i + 2], prefixes) == _XSD_DATE:
            for new in _dates_beside(string_value(token.text)):
                yield "change_constant", i, i + 1, [Token("string", f'"{new}"')]
        elif token.kind in ("string", "iri", "pname") and alternatives is not None and i and tokens[i - 1].kind in ("iri", "pname", "word"):
            if token.kind != "string" and (i + 1 >= len(tokens) or not _boundary_after(tokens[i + 1])):
                continue  # an IRI in predicate position, or a function name
            before = tokens[i - 1]
            predicate = iri_of(before, prefixes) if before.kind != "word" else None
            if before.kind == "word" and before.text != "a":
                continue
            named = Token("iri", f"<{iri_of(token, prefixes)}>") if token.kind == "pname" else token
            for new in alternatives(predicate if before.kind != "word" else "rdf:type", named)[:1]:
                yield "change_constant", i, i + 1, [new]


def _boundary_after(token: Token) -> bool:
    return token.kind == "punct" and token.text in (".", ";", ",", "}", ")")


def _numbers_beside(text: str) -> list[str]:
    """+-1 and +-20% (at least 2) of a number."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        return []
    if "." not in text and "e" not in text.lower():
        n = int(value)
        step = max(2, abs(n) // 5)
        return [str(n + 1), str(n - 1), str(n + step), str(n - step)]
    return [str(value + 1), str(value - 1), str(value * Decimal("1.2")), str(value * Decimal("0.8"))]


def _dates_beside(text: str) -> list[str]:
    """+-1 day and +-1 year of an xsd:date."""
    try:
        day = date.fromisoformat(text)
        return [(day + timedelta(days=k)).isoformat() for k in (1, -1, 365, -365)]
    except (ValueError, OverflowError):
        return []


def _select_positions(tokens: list[Token]) -> Iterator[int]:
    for i, token in enumerate(tokens):
        if _is(token, "SELECT"):
            yield i


def _distinct(tokens: list[Token], _: Alternatives | None) -> Iterator[Edit]:
    for i in _select_positions(tokens):
        if i + 1 < len(tokens) and tokens[i + 1].kind == "word" and tokens[i + 1].text.upper() in ("DISTINCT", "REDUCED"):
            yield "toggle_distinct", i + 1, i + 2, []
        else:
            yield "toggle_distinct", i + 1, i + 1, [Token("word", "DISTINCT")]


def _count_distinct(tokens: list[Token], _: Alternatives | None) -> Iterator[Edit]:
    for i, token in enumerate(tokens):
        if token.kind == "word" and token.text.upper().rstrip("(") in ("COUNT", "SUM", "AVG", "GROUP_CONCAT"):
            j = i + 1 if not token.text.endswith("(") else i
            if j < len(tokens) and (_is(tokens[j], "(") or j == i):
                k = j + 1
                if k < len(tokens) and _is(tokens[k], "DISTINCT"):
                    yield "count_distinct", k, k + 1, []
                elif k < len(tokens):
                    yield "count_distinct", k, k, [Token("word", "DISTINCT")]


def _order(tokens: list[Token], _: Alternatives | None) -> Iterator[Edit]:
    for i, token in enumerate(tokens):
        if not (_is(token, "ORDER") and i + 1 < len(tokens) and _is(tokens[i + 1], "BY")):
            continue
        j = i + 2
        while j < len(tokens) and not (tokens[j].kind == "word" and tokens[j].text.upper() in ("LIMIT", "OFFSET", "GROUP", "HAVING", "VALUES")) and not _is(tokens[j], "}"):
            t = tokens[j]
            if t.kind == "word" and t.text.upper().rstrip("(") in ("ASC", "DESC"):
                other = "DESC" if t.text.upper().startswith("ASC") else "ASC"
                yield "reverse_order", j, j + 1, [Token("word", other)]
                j = _matching(tokens, j + 1)
                continue
            if t.kind == "var":
                yield "reverse_order", j, j + 1, [Token("word", "DESC"), Token("punct", "("), t, Token("punct", ")")]
            j = _matching(tokens, j) if t.kind == "punct" and t.text == "(" else j + 1


def _limits(tokens: list[Token], _: Alternatives | None) -> Iterator[Edit]:
    limit_seen = False
    for i, token in enumerate(tokens):
        if token.kind == "word" and token.text.upper() in ("LIMIT", "OFFSET") and i + 1 < len(tokens) and tokens[i + 1].kind == "number":
            n = int(Decimal(tokens[i + 1].text))
            limit_seen = limit_seen or token.text.upper() == "LIMIT"
            for new in (n + 1, n - 1):
                if new >= (1 if token.text.upper() == "LIMIT" else 0):
                    yield "change_limit", i + 1, i + 2, [Token("number", str(new))]
            if token.text.upper() == "LIMIT" and not any(_is(t, "OFFSET") for t in tokens):
                yield "change_limit", i + 2, i + 2, [Token("word", "OFFSET"), Token("number", "1")]


def _projections(tokens: list[Token], _: Alternatives | None) -> Iterator[Edit]:
    selects = list(_select_positions(tokens))
    if not selects:
        return
    i = selects[0] + 1
    where = next((j for j in range(i, len(tokens)) if _is(tokens[j], "WHERE") or _is(tokens[j], "{")), len(tokens))
    # bare projected variables only: `( expr AS ?v )` is inside parentheses
    depth, projected = 0, []
    for j in range(i, where):
        depth += _is(tokens[j], "(") - _is(tokens[j], ")")
        if depth == 0 and tokens[j].kind == "var":
            projected.append(j)
    names = {tokens[j].text for j in range(i, where) if tokens[j].kind == "var"}
    others = list(dict.fromkeys(t.text for t in tokens[where:] if t.kind == "var" and t.text not in names))
    for j in projected:
        for other in others[:2]:
            yield "project_other", j, j + 1, [Token("var", other)]


def _group_keys(tokens: list[Token], _: Alternatives | None) -> Iterator[Edit]:
    for i, token in enumerate(tokens):
        if not (_is(token, "GROUP") and i + 1 < len(tokens) and _is(tokens[i + 1], "BY")):
            continue
        keys = []
        j = i + 2
        while j < len(tokens) and (tokens[j].kind == "var" or _is(tokens[j], "(")):
            end = _matching(tokens, j) if _is(tokens[j], "(") else j + 1
            keys.append((j, end))
            j = end
        if len(keys) == 1:
            yield "drop_group_key", i, keys[0][1], []
        else:
            for a, b in keys:
                yield "drop_group_key", a, b, []
