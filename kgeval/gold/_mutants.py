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

Edits that would not parse are not made: a grouped SELECT may use outside its aggregates only
its group keys (and its projection's aliases), so another variable is projected there only when
it is a key, and a key is dropped only when nothing the SELECT projects, filters (HAVING) or
orders by still uses it; GROUP_CONCAT's `SEPARATOR=` is not a comparison.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation
from typing import Literal, NamedTuple

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


MUTANTS_VERSION = 2
"""Version of this generator: a suite whose mutants another version made is built again.
2: no edit that leaves a grouped SELECT using an ungrouped variable; no `SEPARATOR=` flip."""
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
        if token.kind == "punct" and token.text in _COMPARISONS and not (i and tokens[i - 1].keyword == "SEPARATOR"):  # GROUP_CONCAT's option
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
    """Another variable in place of a bare projected one of the outer SELECT; in a grouped
    SELECT only a group key not projected yet (any other variable does not parse there)."""
    select = next(_selects(tokens), None)
    if select is None:
        return
    i, where = select.projection
    # bare projected variables only: `( expr AS ?v )` is inside parentheses
    depth, projected = 0, []
    for j in range(i, where):
        depth += _is(tokens[j], "(") - _is(tokens[j], ")")
        if depth == 0 and tokens[j].kind == "var":
            projected.append(j)
    names = {tokens[j].text for j in range(i, where) if tokens[j].kind == "var"}
    if _grouped(tokens, select, select.keys):
        others = [k for k in _key_names(tokens, select.keys) if k not in names]
    else:
        others = list(dict.fromkeys(t.text for t in tokens[where:] if t.kind == "var" and t.text not in names))
    for j in projected:
        for other in others[:2]:
            yield "project_other", j, j + 1, [Token("var", other)]


def _group_keys(tokens: list[Token], _: Alternatives | None) -> Iterator[Edit]:
    """A GROUP BY key dropped (the whole clause when it is the only one), where what the
    SELECT uses outside its aggregates stays grouped (else the mutant would not parse)."""
    for select in _selects(tokens):
        if select.group is None:
            continue
        for a, b in select.keys:
            left = [k for k in select.keys if k != (a, b)]
            if _grouped(tokens, select, left) and not _bare_uses(tokens, select) <= _key_names(tokens, left) | _aliases(tokens, select):
                continue
            yield ("drop_group_key", select.group[0], select.group[1], []) if not left else ("drop_group_key", a, b, [])


class _Select(NamedTuple):
    """Where one SELECT's parts are (token spans, end excluded)."""

    projection: tuple[int, int]
    """What it projects (after SELECT, before WHERE or its group)."""
    modifiers: tuple[int, int]
    """From the end of its group to its end: GROUP BY, HAVING, ORDER BY, LIMIT, OFFSET."""
    group: tuple[int, int] | None
    """`GROUP BY` and its keys, when it has one."""
    keys: list[tuple[int, int]]
    """Each group key: a variable, `( expr [AS ?v] )` or a function call."""


_AGGREGATES = {"COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT"}
_CLAUSES = {"HAVING", "ORDER", "LIMIT", "OFFSET", "VALUES", "GROUP"}


def _selects(tokens: list[Token]) -> Iterator[_Select]:
    """Each SELECT of the query (the outer one first, then its sub-selects in text order)."""
    for i in _select_positions(tokens):
        depth, where = 0, len(tokens)
        for j in range(i + 1, len(tokens)):
            depth += _is(tokens[j], "(") - _is(tokens[j], ")")
            if depth == 0 and (_is(tokens[j], "WHERE") or _is(tokens[j], "{")):
                where = j
                break
        brace = where + (where < len(tokens) and _is(tokens[where], "WHERE"))
        body_end = _matching(tokens, brace) if brace < len(tokens) else len(tokens)
        end, depth = body_end, 0
        while end < len(tokens) and not (depth == 0 and (_is(tokens[end], "}") or tokens[end].keyword == "VALUES")):
            depth += _opens(tokens[end]) - _is(tokens[end], ")")
            end += 1
        group, keys = _group_by(tokens, body_end, end)
        yield _Select((i + 1, where), (body_end, end), group, keys)


def _opens(token: Token) -> bool:
    return _is(token, "(") or token.kind == "word" and token.text.endswith("(")


def _group_by(tokens: list[Token], start: int, end: int) -> tuple[tuple[int, int] | None, list[tuple[int, int]]]:
    """The `GROUP BY` clause among a SELECT's modifiers and its keys."""
    i = next((k for k in range(start, end - 1) if _is(tokens[k], "GROUP") and _is(tokens[k + 1], "BY")), None)
    if i is None:
        return None, []
    keys, j = [], i + 2
    while j < end:
        t = tokens[j]
        if t.kind == "var":
            key_end = j + 1
        elif _is(t, "(") or t.kind == "word" and t.text.endswith("("):
            key_end = _matching(tokens, j)
        elif t.kind in ("word", "iri", "pname") and t.keyword not in _CLAUSES and j + 1 < end and _is(tokens[j + 1], "("):
            key_end = _matching(tokens, j + 1)  # a function call: YEAR (?d), <f>(?x)
        else:
            break
        keys.append((j, key_end))
        j = key_end
    return (i, j), keys


def _key_names(tokens: list[Token], keys: list[tuple[int, int]]) -> set[str]:
    """The variables group keys bind: a bare key's, and the `AS ?v` of `( expr AS ?v )`."""
    names = set()
    for a, b in keys:
        if b - a == 1 and tokens[a].kind == "var":
            names.add(tokens[a].text)
        elif b - a >= 4 and _is(tokens[b - 3], "AS") and tokens[b - 2].kind == "var":
            names.add(tokens[b - 2].text)
    return names


def _aliases(tokens: list[Token], select: _Select) -> set[str]:
    """The variables the projection binds (`AS ?v`)."""
    a, b = select.projection
    return {tokens[j + 1].text for j in range(a, b - 1) if _is(tokens[j], "AS") and tokens[j + 1].kind == "var"}


def _grouped(tokens: list[Token], select: _Select, keys: list[tuple[int, int]]) -> bool:
    """Whether the SELECT aggregates with these group keys: it has some, or an aggregate."""
    spans = [select.projection, select.modifiers]
    return bool(keys) or any(_aggregate_end(tokens, j) for a, b in spans for j in range(a, b))


def _aggregate_end(tokens: list[Token], j: int) -> int | None:
    """Just past the aggregate call starting at token `j`, or None when none starts there."""
    t = tokens[j]
    if t.kind != "word" or t.text.upper().rstrip("(") not in _AGGREGATES:
        return None
    if t.text.endswith("("):
        return _matching(tokens, j)
    return _matching(tokens, j + 1) if j + 1 < len(tokens) and _is(tokens[j + 1], "(") else None


def _bare_uses(tokens: list[Token], select: _Select) -> set[str]:
    """The variables the SELECT's projection, HAVING and ORDER BY use outside an aggregate
    (in a grouped SELECT each must be a group key or a projected alias)."""
    group = select.group or (0, 0)
    used: set[str] = set()
    for a, b in (select.projection, select.modifiers):
        j = a
        while j < b:
            if group[0] <= j < group[1]:
                j = group[1]
                continue
            end = _aggregate_end(tokens, j)
            if end is not None:
                j = end
                continue
            if tokens[j].kind == "var" and not (j and _is(tokens[j - 1], "AS")):
                used.add(tokens[j].text)
            j += 1
    return used
