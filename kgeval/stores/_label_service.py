"""The Wikidata label service, emulated in plain SPARQL.

Queries written for the Wikidata Query Service name their labels with
`SERVICE wikibase:label { bd:serviceParam wikibase:language "en". }`: a service only WDQS has.
Models trained on Wikidata write it in most queries that return entities, and the reference
queries of Wikidata benchmarks (QALD-10, LC-QuAD 2.0) use it too. kgeval refuses every SERVICE
(a query may read only the store it is sent to), so such a query, right on Wikidata, was scored
wrong, and its reference could not be imported. The guard now rewrites this one service into
patterns on the store's own labels before anything reads the query (`emulate`), the same on
every store, and then checks the result like any query: no request leaves the store.

What WDQS documents, kept here (https://www.mediawiki.org/wiki/Wikidata_Query_Service/User_Manual#Label_service):
- automatic mode: each variable `?xLabel`, `?xDescription`, `?xAltLabel` the query names, whose
  `?x` is bound in the service's group and which nothing else there binds, gets `?x`'s
  `rdfs:label`, `schema:description`, or its `skos:altLabel`s joined by ", ";
- manual mode: triples inside the service (`?x rdfs:label ?name`) name the variables instead;
- languages in the order given (`"fr,en"`); `[AUTO_LANGUAGE]` is English; a label missing in
  every language is the entity's id (`Q42`; another IRI as its text, a literal as itself);
- the labels are added after the rest of the service's group matched, wherever the clause is
  written in it.
- two clauses naming one variable: the first binds it (`_bind_once`);
- query hints (`hint:Query hint:optimizer "None"`) steer WDQS's optimizer and match nothing:
  they are left out (`_without_hints`).
Beyond WDQS: a label without a language tag is taken after the languages asked (KGs other than
Wikidata often have no tags). Variables the emulation adds start with `_ls`; a `SELECT *`
shows them as extra columns, which the execution judge reads as any extra column (accepted by
default when they hold the labels of an entity column it compares: rule `label_columns`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from kgeval.errors import QueryRefused
from kgeval.stores._lexer import MAX_EXPANSION, Token, canonical_text_and_spans, canonical_tokens, declared_prefixes, iri_of

_WIKIBASE = "http://wikiba.se/ontology#"
LABEL_SERVICE = _WIKIBASE + "label"
_SERVICE_PARAM = "http://www.bigdata.com/rdf#serviceParam"
_LANGUAGE = _WIKIBASE + "language"
_ENTITY = "http://www.wikidata.org/entity/"
UNBOUND = "urn:kgeval:label-service:unbound"
"""What the lookups read for a variable left unbound (an OPTIONAL that did not match): an IRI
with no labels, so they never join it with every labelled entity."""

Kind = Literal["Label", "Description", "AltLabel"]
_PREDICATE: dict[Kind, str] = {
    "Label": "http://www.w3.org/2000/01/rdf-schema#label",
    "Description": "http://schema.org/description",
    "AltLabel": "http://www.w3.org/2004/02/skos/core#altLabel",
}
_KIND_OF = {iri: kind for kind, iri in _PREDICATE.items()}
_SERVICE = Token("word", "SERVICE")


@dataclass(frozen=True)
class _Target:
    """One variable the service binds: `kind` of `subject`'s value, into `name`."""

    subject: str
    kind: Kind
    name: str


def named(text: str) -> bool:
    """Whether `text` may hold a label service or a query hint (a cheap test before reading it)."""
    return "wikibase" in text or "wikiba.se" in text or "queryHints" in text


@dataclass(frozen=True)
class _Service:
    """One label service clause: its tokens `start`..`end`, the index of its group's closing
    `}`, the variables it binds and the languages asked."""

    start: int
    end: int
    closing: int
    targets: list[_Target]
    languages: list[str]


def emulate(tokens: tuple[Token, ...]) -> tuple[Token, ...]:
    """`tokens` with every `SERVICE wikibase:label { ... }` written as plain SPARQL (see the
    module docstring) and WDQS's query hints left out (`_without_hints`); `tokens` themselves
    when there is neither. QueryRefused for a label service whose body asks for more than the
    emulation knows."""
    tokens = _without_hints(tokens)
    found = _services(tokens)
    if not found:
        return tokens
    services, names = found
    fresh = _fresh_prefix(names)
    replaced: dict[int, int] = {}
    grown = 0
    added: dict[int, list[Token]] = {}
    for n, service in enumerate(services):
        replaced[service.start] = service.end
        lookups = _lookups(service.targets, service.languages, f"{fresh}{n}_")
        grown += len(lookups)
        if grown > MAX_EXPANSION:
            raise QueryRefused(
                f"SERVICE wikibase:label would add over {MAX_EXPANSION} bytes of patterns ({len(service.targets)} variables "
                f"in {len(service.languages)} languages): ask for fewer labels or languages"
            )
        added.setdefault(service.closing, []).extend(canonical_tokens(lookups))
    return tuple(_edited(tokens, replaced, added))


def _without_hints(tokens: tuple[Token, ...]) -> tuple[Token, ...]:
    """`tokens` without WDQS's query hints: a triple whose subject and predicate are in
    Blazegraph's hint namespace (`hint:Query hint:optimizer "None" .`, `hint:Prior hint:runFirst
    true .`) tells WDQS's optimizer how to evaluate the query, never what it matches. Read as a
    triple pattern it matches nothing, so a query right on Wikidata returned no row. Only a
    whole triple at the start of a pattern (after `{`, `.` or `}`) with a one-term object is
    left out, with its `.`; anything else in that namespace stays, and matches nothing."""
    if not any(t.kind == "iri" and t.text.startswith("<" + _HINTS) for t in tokens):  # a PREFIX line or a full IRI
        return tokens
    prefixes = declared_prefixes(tokens)
    kept: list[Token] = []
    k, in_values, opening = 0, 0, False  # a VALUES block holds data, never a hint
    while k < len(tokens):
        token = tokens[k]
        if not in_values and _is_hint(tokens, k, prefixes) and (not kept or kept[-1].text in ("{", ".", "}")):
            k += 3 + (k + 3 < len(tokens) and tokens[k + 3].text == ".")
            continue
        if token.keyword == "VALUES":
            opening = True
        elif token.text == "{" and (opening or in_values):
            in_values, opening = in_values + 1, False
        elif token.text == "}" and in_values:
            in_values -= 1
        kept.append(token)
        k += 1
    return tuple(kept) if len(kept) < len(tokens) else tokens


_HINTS = "http://www.bigdata.com/queryHints#"


def _is_hint(tokens: Sequence[Token], k: int, prefixes: dict[str, str]) -> bool:
    if k + 2 >= len(tokens):
        return False
    subject, predicate, value = tokens[k : k + 3]
    return (
        all((iri_of(t, prefixes) or "").startswith(_HINTS) for t in (subject, predicate))
        and (value.kind in ("string", "number", "iri", "pname") or value.text.lower() in ("true", "false"))
        and (k + 3 >= len(tokens) or tokens[k + 3].text in (".", "}"))
    )


def _services(tokens: tuple[Token, ...]) -> tuple[list[_Service], set[str]] | None:
    """The label services of the query and the names of its variables outside them; None when
    it has none (or the grammar cannot place one: it will say why the text does not parse)."""
    if _SERVICE not in tokens:  # the lexer writes every keyword in upper case
        return None
    prefixes = declared_prefixes(tokens)
    spans_of = [(i, end) for i in range(len(tokens)) if tokens[i] == _SERVICE and (end := _label_service_end(tokens, i, prefixes))]
    if not spans_of:
        return None
    from kgeval.stores._query import _in_scope, parsed_tree  # the guard imports this module

    text, spans = canonical_text_and_spans(tokens)
    root = parsed_tree(text).root_node
    starts = [start for start, _ in spans]
    inside = {k for start, end in spans_of for k in range(start, end + 1)}
    names = {t.text[1:] for k, t in enumerate(tokens) if t.kind == "var" and k not in inside}
    services, groups = [], []
    for start, end in spans_of:
        group = _enclosing_group(root, spans[start][0])
        if group is None:
            return None
        statements = _statements(tokens, start, end)
        targets = _targets(statements, prefixes, names, set(_in_scope(group)))
        closing = bisect.bisect_left(starts, group.end_byte - 1)
        services.append(_Service(start, end, closing, targets, _languages(statements, prefixes)))
        groups.append((group.start_byte, group.end_byte))
    _bind_once(services, groups)
    return services, names


def _bind_once(services: list[_Service], groups: list[tuple[int, int]]) -> None:
    """Drop the targets another service already binds where this one's lookups run: two
    clauses in one group (or one in a group nested in the other's) naming `?xLabel` would
    otherwise BIND it twice, an error on every engine. The lookups written first in the query
    (those of the innermost group, then the first clause of a group) bind it, as WDQS's first
    service does; later ones see it bound and leave it."""
    done: list[tuple[tuple[int, int], set[str]]] = []
    for n in sorted(range(len(services)), key=lambda n: (services[n].closing, services[n].start)):
        start, end = groups[n]
        seen = set().union(*(names for (s, e), names in done if start <= s and e <= end))
        services[n].targets[:] = [t for t in services[n].targets if t.name not in seen]
        done.append((groups[n], {t.name for t in services[n].targets}))


def _label_service_end(tokens: Sequence[Token], i: int, prefixes: dict[str, str]) -> int | None:
    """The index of the `}` closing the label service at `i`; None for any other service."""
    j = i + 1 + (i + 1 < len(tokens) and tokens[i + 1].keyword == "SILENT")
    if j + 1 >= len(tokens) or iri_of(tokens[j], prefixes) != LABEL_SERVICE or tokens[j + 1].text != "{":
        return None
    for k in range(j + 2, len(tokens)):
        if tokens[k].text == "{":
            raise QueryRefused(_refusal("a nested group"))
        if tokens[k].text == "}":
            return k
    return None


def _refusal(what: str) -> str:
    return (
        f"SERVICE wikibase:label holds {what}: the label service is emulated for bd:serviceParam wikibase:language \"...\" "
        "and ?x rdfs:label|schema:description|skos:altLabel ?name only; any other SERVICE is refused"
    )


def _statements(tokens: Sequence[Token], start: int, end: int) -> list[tuple[Token, Token, Token]]:
    """The (subject, predicate, object) triples of the service's body (`;` and `,` lists)."""
    body = list(tokens[_body_start(tokens, start) : end])
    triples: list[tuple[Token, Token, Token]] = []
    k = 0
    while k < len(body):
        if k + 2 >= len(body):
            raise QueryRefused(_refusal(f"an incomplete triple ({' '.join(t.text for t in body[k:])})"))
        subject, k = body[k], k + 1
        while True:
            predicate, k = body[k], k + 1
            while True:
                if k >= len(body):
                    raise QueryRefused(_refusal(f"an incomplete triple ({subject.text} {predicate.text})"))
                triples.append((subject, predicate, body[k]))
                k += 1
                if k < len(body) and body[k].text == ",":
                    k += 1
                    continue
                break
            if k < len(body) and body[k].text == ";":
                while k < len(body) and body[k].text == ";":
                    k += 1
                if k < len(body) and body[k].text != ".":
                    continue
            break
        if k < len(body) and body[k].text == ".":
            k += 1
        elif k < len(body):
            raise QueryRefused(_refusal(f"{body[k].text!r} where a triple should end"))
    return triples


def _body_start(tokens: Sequence[Token], start: int) -> int:
    return start + 3 + (tokens[start + 1].keyword == "SILENT")


def _languages(statements: list[tuple[Token, Token, Token]], prefixes: dict[str, str]) -> list[str]:
    languages: list[str] = []
    for subject, predicate, value in statements:
        if iri_of(subject, prefixes) != _SERVICE_PARAM:
            continue
        if iri_of(predicate, prefixes) != _LANGUAGE or value.kind != "string" or "\\" in value.text:
            raise QueryRefused(_refusal(f"the parameter {predicate.text} {value.text}"))
        for code in value.text.strip("\"'").split(","):
            code = code.strip().lower()
            code = "en" if code == "[auto_language]" else code
            if code and code not in languages:
                languages.append(code)
    if not languages:
        raise QueryRefused('SERVICE wikibase:label names no language: add bd:serviceParam wikibase:language "en" (WDQS refuses it too)')
    return languages


def _targets(statements: list[tuple[Token, Token, Token]], prefixes: dict[str, str], names: set[str], bound: set[str]) -> list[_Target]:
    """The variables this service binds: the triples in its body (manual mode), else every
    `?xLabel` / `?xDescription` / `?xAltLabel` the query names (automatic mode). Only those
    whose subject is bound in the service's group and which nothing there binds already."""
    manual = []
    for subject, predicate, value in statements:
        if iri_of(subject, prefixes) == _SERVICE_PARAM:
            continue
        kind = _KIND_OF.get(iri_of(predicate, prefixes) or "")
        if subject.kind != "var" or value.kind != "var" or kind is None:
            raise QueryRefused(_refusal(f"the triple {subject.text} {predicate.text} {value.text}"))
        manual.append(_Target(subject.text[1:], kind, value.text[1:]))
    if not manual:
        manual = [_Target(base, kind, name) for name in sorted(names) for kind in ("AltLabel", "Label", "Description") if (base := _base(name, kind, names))]
    return [t for t in manual if t.subject in bound and t.name not in bound]


def _base(name: str, kind: str, names: set[str]) -> str | None:
    base = name[: -len(kind)] if name.endswith(kind) else ""
    if not base or base not in names or (kind == "Label" and name.endswith("AltLabel") and name[: -len("AltLabel")] in names):
        return None
    return base


def _fresh_prefix(names: set[str]) -> str:
    """A variable-name prefix no variable of the query starts with."""
    prefix = "_ls"
    while any(name.startswith(prefix) for name in names):
        prefix = "_" + prefix
    return prefix


def _enclosing_group(root, position: int):  # type: ignore[no-untyped-def]  # tree_sitter nodes
    node = root.descendant_for_byte_range(position, position)
    while node is not None and node.type != "service_graph_pattern":
        node = node.parent
    return node.parent if node is not None and node.parent is not None and node.parent.type == "group_graph_pattern" else None


def _lookups(targets: list[_Target], languages: list[str], prefix: str) -> str:
    """The patterns binding `targets`, added at the end of the service's group."""
    parts = []
    for n, target in enumerate(targets):
        held = f"?{prefix}{n}"
        parts.append(f"BIND(COALESCE(?{target.subject}, <{UNBOUND}>) AS {held})")
        found = []
        for k, language in enumerate([*languages, ""]):
            value = f"{held}_{k}"
            found.append(value)
            if target.kind == "AltLabel":
                # GROUP_CONCAT's tag is the engine's choice (Oxigraph keeps a shared one, Virtuoso
                # drops it): set it as WDQS gives it, the language asked
                joined = f"GROUP_CONCAT({value}a; SEPARATOR=\", \")"
                tagged = f"STRLANG(STR({joined}), {_string(language)})" if language else f"STR({joined})"
                parts.append(
                    f"OPTIONAL {{ SELECT {held} ({tagged} AS {value}) WHERE {{ "
                    f"{held} <{_PREDICATE['AltLabel']}> {value}a FILTER(LCASE(LANG({value}a)) = {_string(language)}) }} GROUP BY {held} }}"
                )
            else:
                parts.append(f"OPTIONAL {{ {held} <{_PREDICATE[target.kind]}> {value} FILTER(LCASE(LANG({value})) = {_string(language)}) }}")
        if target.kind == "Label":
            subject = f"?{target.subject}"
            found.append(
                f"IF(isLITERAL({subject}), {subject}, IF(STRSTARTS(STR({subject}), \"{_ENTITY}\"), "
                f"STRAFTER(STR({subject}), \"{_ENTITY}\"), STR({subject})))"
            )
        parts.append(f"BIND(COALESCE({', '.join(found)}) AS ?{target.name})")
    return " ".join(parts)


def _string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _edited(tokens: Sequence[Token], replaced: dict[int, int], added: dict[int, list[Token]]):  # type: ignore[no-untyped-def]
    """`tokens` with each service (`replaced`: first -> last index) written as `{}` (an empty
    group: valid wherever the clause was) and the lookups added before their group's `}`."""
    k = 0
    while k < len(tokens):
        yield from added.get(k, ())
        if k in replaced:
            yield Token("punct", "{")
            yield Token("punct", "}")
            k = replaced[k] + 1
            continue
        yield tokens[k]
        k += 1
