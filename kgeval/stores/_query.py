"""Query analysis and the read-only guard: one reading of the query, and the engine runs it.

Every query a store executes, reference or candidate, goes through `guard_query` first
(DESIGN invariant 12): updates, SERVICE clauses, CONSTRUCT/DESCRIBE and over-long or
over-deep queries are refused before any store sees them (Wikidata's label service is first
written as plain SPARQL on the store's own labels: `_label_service`). What the guard approved is exactly
what the engine runs: `_lexer` splits the text into SPARQL terminals by the specification and
writes them back in one canonical form (no comments, no escapes two parsers could read
differently); the grammar (tree-sitter-sparql, a C parser with no recursion limit) then reads
that canonical text, a check proves it split the text into the same terminals, and the shape
comes from that tree. Stores send `QueryShape.text`, never the original text.

Each distinct text is analysed once per process (a thread-safe cache keyed by the text), whether
it is approved or refused; texts the lexer reads as the same terminals meet the grammar once
while they are recent.
"""

from __future__ import annotations

import bisect
import itertools
import re
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, TypeVar

import tree_sitter
import tree_sitter_sparql

from kgeval.errors import EngineFunctionRefused, QueryRefused, QuerySyntaxError
from kgeval.stores import _label_service
from kgeval.stores._lexer import _SCHEME, Token, canonical_text_and_spans, canonical_tokens, declared_prefixes, iri_of

if TYPE_CHECKING:  # rdflib's SPARQL grammar is imported on first use: a quarter of a second
    # that commands which never read a query's algebra (gold rebuild, verify, the guard) skip
    from rdflib.plugins.sparql.parserutils import CompValue

DEFAULT_MAX_QUERY_BYTES = 20_000
MAX_NESTING = 64
"""Deepest nesting of ( [ { a query may have: engines parse and evaluate recursively, and
real queries stay far below it (a deeper one is refused, never a crash)."""

_UPDATE_WORDS = {"INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH", "USING"}
_REFUSED_FORMS = {"CONSTRUCT", "DESCRIBE"}
with warnings.catch_warnings():  # the grammar package still hands over its language as an int
    warnings.simplefilter("ignore", DeprecationWarning)
    LANGUAGE = tree_sitter.Language(tree_sitter_sparql.language())
_TERMINALS = tree_sitter.Query(LANGUAGE, "(comment) @comment (string) @string (iri_reference) @iri")
_SUB_SELECTS = tree_sitter.Query(LANGUAGE, "(sub_select) @select")
_AGGREGATES = tree_sitter.Query(LANGUAGE, "(aggregate) @aggregate")
_PROJECTION_WORDS = frozenset("GROUP AS COUNT SUM MIN MAX AVG SAMPLE GROUP_CONCAT".split())
"""Keywords without which `_check_projection` has nothing to check (no GROUP BY, no aggregate,
no `AS`): each of its rules needs one of them in the query, as a bare word (tree-sitter reads
the lexer's terminals, `_check_same_terminals`)."""
_PARSERS = threading.local()  # a tree-sitter parser is not shared between threads
E = TypeVar("E", QueryRefused, QuerySyntaxError)


@dataclass(frozen=True)
class QueryShape:
    """What the guard read in a query, and the text it approved."""

    form: Literal["select", "ask"]
    ordered: bool
    """The solution sequence is ordered (ORDER BY at the top level)."""
    limit: int | None
    """LIMIT, when there is one."""
    offset: int
    """OFFSET, 0 when there is none."""
    variables: tuple[str, ...]
    """Projected variables in order (SELECT only; for SELECT * the variables in scope)."""
    text: str
    """The approved query, re-written in canonical form: the only text a store may send."""


def guard_query(text: str, *, max_bytes: int = DEFAULT_MAX_QUERY_BYTES) -> QueryShape:
    """Analyse `text` and refuse anything that is not a read-only SELECT or ASK."""
    size = len(text.encode("utf-8", "surrogatepass"))  # a lone surrogate is refused by the lexer
    if size > max_bytes:
        raise QueryRefused(f"query is {size} bytes, over the {max_bytes}-byte limit")
    shape = _analyse(text)
    if isinstance(shape, QueryShape):
        return shape
    raise _fresh(shape)  # a caller attaches what the query cost to the error it gets


@lru_cache(maxsize=16384)
def _analyse(text: str) -> QueryShape | QueryRefused | QuerySyntaxError:
    """`text`'s shape, or the error that refuses it: a refusal is kept too (`_fresh`, without
    traceback), since a refused text comes back as often as an approved one (a run's seeds
    repeat a model's texts, and each judge asks about the candidate again): bench/run.py's
    replay analysed 110 refused texts 286 times."""
    try:
        return _shape_of(terminals(text))
    except (QueryRefused, QuerySyntaxError) as exc:
        return _fresh(exc)


def _fresh(error: E) -> E:
    """A new error equal to `error` (its message and attributes), with no traceback or context."""
    copied = type(error)(*error.args)
    copied.__dict__.update(error.__dict__)
    return copied


@lru_cache(maxsize=128)
def _shape_of(tokens: tuple[Token, ...]) -> QueryShape:
    """The shape of a query read as `tokens`: texts that differ only in what the lexer writes
    away (spacing, comments, keyword case, escapes) are one query to the grammar, read once.
    bench/run.py's replay (reformatted variants of its queries) gave 419 texts that lex, 347
    distinct terminal sequences. Few are kept, as by `terminals` (the key is the terminals)."""
    words = _refuse_unsafe(tokens)
    canonical, spans = canonical_text_and_spans(tokens)
    root = parsed_tree(canonical).root_node
    _check_same_terminals(root, tokens, canonical, spans)
    _refuse_engine_functions(root, tokens)
    query = next((c for c in root.named_children if c.type.endswith("_query")), None)
    if query is None or query.type not in ("select_query", "ask_query"):
        raise QuerySyntaxError("SPARQL does not parse: not a SELECT or ASK query")
    if words & _PROJECTION_WORDS:  # without them no projection rule can be broken
        for select in [query, *tree_sitter.QueryCursor(_SUB_SELECTS).captures(root).get("select", [])]:
            if select.type != "ask_query":
                _check_projection(select)
    if query.type == "ask_query":
        return QueryShape("ask", False, None, 0, (), canonical)
    return _select_shape(query, canonical)


@lru_cache(maxsize=128)
def terminals(text: str) -> tuple[Token, ...]:
    """The lexer's canonical terminals of `text` (QuerySyntaxError when it does not lex), kept a
    short while: the guard reads a candidate, and the judges read the same text's IRIs right
    after (`mentioned_iris`, once per judge): one lexing serves them all. Few are kept (a 20 KB
    text has thousands of terminals), enough for the candidates of a run's threads in flight.
    A Wikidata label service is already written as plain SPARQL (`_label_service`): every
    reader of the query, the engine and the judges alike, reads the query that runs."""
    return _label_service.emulate(tuple(canonical_tokens(text)))


def parsed_tree(canonical: str) -> tree_sitter.Tree:
    """The tree-sitter tree of a canonical text (this thread's parser)."""
    parser = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = _PARSERS.parser = tree_sitter.Parser(LANGUAGE)
    return parser.parse(canonical.encode("utf-8"))


def _refuse_unsafe(tokens: tuple[Token, ...]) -> set[str]:
    """Refuse by keyword before any grammar runs: a bare word is always a keyword in SPARQL.
    The keywords of the query come back."""
    words = {t.keyword for t in tokens if t.kind == "word"}
    if words & _UPDATE_WORDS:
        _refuse_prose(tokens)
        raise QueryRefused("updates (INSERT, DELETE, LOAD, CLEAR, DROP, CREATE, ADD, MOVE, COPY) are refused")
    if "SERVICE" in words:
        _refuse_prose(tokens)
        raise QueryRefused("SERVICE clauses are refused: a query may only read the store it is sent to")
    form = next((t.keyword for t in tokens if t.keyword in ("SELECT", "ASK", *_REFUSED_FORMS)), "")
    if form in _REFUSED_FORMS:
        raise QueryRefused(f"{form} queries are not supported: only SELECT and ASK")
    depth = deepest = 0
    for token in tokens:
        if token.text in ("{", "[", "("):
            depth += 1
            deepest = max(deepest, depth)
        elif token.text in ("}", "]", ")"):
            depth -= 1
    if deepest > MAX_NESTING:
        raise QueryRefused(f"query is nested {deepest} levels deep, over the limit of {MAX_NESTING}")
    return words


_UNSAFE_NODES = tree_sitter.Query(
    LANGUAGE,
    " ".join(f"({kind}) @unsafe" for kind in (
        "insert_data", "delete_data", "delete_where", "modify", "load", "clear", "drop", "create", "add", "move", "copy",
        "service_graph_pattern",
    )),
)


def _refuse_prose(tokens: tuple[Token, ...]) -> None:
    """Before a refusal by keyword: when the grammar cannot read the text and finds no update
    or SERVICE clause in it, the word was prose, not a keyword ("... } This query finds the
    singers with ..."): invalid SPARQL (QuerySyntaxError), not a refused update. Either way
    nothing reaches a store; only the name of the failure differs."""
    canonical, spans = canonical_text_and_spans(tokens)
    root = parsed_tree(canonical).root_node
    if root.has_error and not tree_sitter.QueryCursor(_UNSAFE_NODES).captures(root):
        _check_same_terminals(root, tokens, canonical, spans)


_CALLABLE = (
    "http://www.w3.org/2001/XMLSchema#",  # casts: xsd:integer(?x)
    "http://www.opengis.net/def/function/geosparql/",  # geof:
    "http://jena.apache.org/ARQ/function#",  # afn: (string and IRI functions)
)
"""Namespaces whose functions a query may call: casts and standard read-only functions. Not
XPath's fn: (`http://www.w3.org/2005/xpath-functions#`): Virtuoso 7.2 hands an fn: call to its
XPath engine, and `fn:document("x")`, `fn:tokenize("x", 1, 2)` or `fn:adjust-dateTime-to-timezone("x")`
ended the whole server (every later query failed, as the harness's); some fn: functions read
documents, URLs or the environment. Oxigraph implements none of them, and every one has a SPARQL
built-in (UCASE, CONTAINS, REGEX, YEAR ...)."""
_ENGINE_SCHEMES = ("bif:", "sql:", "java:")
"""IRI schemes that name an engine's own procedures (Virtuoso's `bif:` and `sql:`, Jena's
`java:`): `bif:http_get` makes the server fetch a URL, `bif:sequence_next` writes."""
_ENGINE_PREDICATES = frozenset({"bif:contains"})
"""Such IRIs a query may still write, as a predicate or a call: Virtuoso's full-text search
(`?l bif:contains "x"`, `FILTER(bif:contains(?l, "x"))`), which reads its text index."""
_CALLS = tree_sitter.Query(LANGUAGE, "(function_call identifier: (_) @function)")


def _refuse_engine_functions(root: tree_sitter.Node, tokens: tuple[Token, ...]) -> None:
    """Refuse a call of a function outside `_CALLABLE` and any IRI of an engine's procedures
    (`_ENGINE_SCHEMES`): SPARQL lets an engine run any function an IRI names, and Virtuoso's
    include HTTP requests and writes, which no guard of SERVICE or updates sees."""
    prefixes = declared_prefixes(tokens)
    for i, token in enumerate(tokens):
        if (i >= 1 and tokens[i - 1].keyword == "PREFIX") or (i >= 2 and tokens[i - 2].keyword == "PREFIX"):
            continue  # `PREFIX bif: <bif:>` declares a name; using it is what counts
        iri = iri_of(token, prefixes)
        if iri is not None and iri.lower().startswith(_ENGINE_SCHEMES) and iri.lower() not in _ENGINE_PREDICATES:
            raise EngineFunctionRefused(f"<{iri}> names an engine's own procedure ({iri.split(':')[0]}:): refused, a query may only read the store")
    for node in tree_sitter.QueryCursor(_CALLS).captures(root).get("function", []):
        name = node.text.decode("utf-8") if node.text else ""
        iri = iri_of(Token("iri" if node.type == "iri_reference" else "pname", name), prefixes) or name
        if not iri.startswith(_CALLABLE) and iri.lower() not in _ENGINE_PREDICATES:
            raise EngineFunctionRefused(f"calling <{iri}> is refused: a query may call the SPARQL built-ins, XSD casts, the geof: and afn: functions and bif:contains only")


def _check_same_terminals(root: tree_sitter.Node, tokens: tuple[Token, ...], canonical: str, spans: list[tuple[int, int]] | None = None) -> None:
    """Refuse unless the grammar parsed the whole text with the lexer's terminals: no error,
    no comment, and each string and IRI exactly where the lexer put one (every other terminal
    is a run of characters between spaces, which no reader can join or split differently)."""
    if root.has_error:
        error = next((n for n in _walk(root) if n.type == "ERROR" or n.is_missing), root)
        raise QuerySyntaxError(f"SPARQL does not parse near {_near(canonical, error)}")
    captured = tree_sitter.QueryCursor(_TERMINALS).captures(root)
    spans = spans if spans is not None else canonical_text_and_spans(tokens)[1]
    expected: dict[str, list[tuple[int, int]]] = {"comment": [], "string": [], "iri": []}
    for span, token in zip(spans, tokens):
        if token.kind in expected:
            expected[token.kind].append(span)
    for kind in ("comment", "string", "iri"):
        found = sorted((n.start_byte, n.end_byte) for n in captured.get(kind, []))
        if found != expected[kind]:
            raise QuerySyntaxError(f"SPARQL does not parse: the grammar read the {kind}s of the query differently from the lexer")


def _near(canonical: str, node: tree_sitter.Node) -> str:
    """Where the grammar stopped: whole terms around it, the place marked, said to be in the
    canonical text (one space between terms, no comments), which is what was parsed."""
    data = canonical.encode("utf-8")
    start = data.rfind(b" ", 0, max(0, node.start_byte - 40)) + 1
    stop = data.find(b" ", min(len(data), node.end_byte + 40))
    stop = len(data) if stop < 0 else stop
    before, after = data[start : node.start_byte].decode("utf-8", "replace"), data[node.start_byte : stop].decode("utf-8", "replace")
    text = ("... " if start else "") + f"{before.rstrip()} ⟨here⟩ {after.lstrip()}".strip() + (" ..." if stop < len(data) else "")
    return f"{text!r} (terms as the guard reads them: one space between terms, comments dropped)"


def _walk(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """Every node below `node` in document order, without recursion (trees can be deep)."""
    stack = [node]
    while stack:
        item = stack.pop()
        yield item
        stack.extend(reversed(item.children))


def _check_projection(select_query: tree_sitter.Node) -> None:
    """The rules on projection that SPARQL states beside its grammar (section 18.2.4.1), which
    Oxigraph enforces when it runs the query: a model's query that breaks them is its error."""
    select, modifier = _child(select_query, "select_clause"), _child(select_query, "solution_modifier")
    group = _child(modifier, "group_clause")
    if select is None:
        return
    items = select.children
    types = [c.type for c in items]  # one pass: a 20 KB projection has thousands of items
    plain = [_var_name(c) for c, kind, before in zip(items, types, ["", *types]) if kind == "var" and before != "AS"]
    named = [_var_name(c) for c, kind, before in zip(items, types, ["", *types]) if kind == "var" and before == "AS"]
    if group is not None and "*" in types:
        raise QuerySyntaxError("SPARQL does not parse: SELECT * cannot be used with GROUP BY (name the projected variables)")
    clauses = [c for c in (select, _child(modifier, "having_clause"), _child(modifier, "order_clause")) if c is not None]
    if group is None and not any(tree_sitter.QueryCursor(_AGGREGATES).captures(c) for c in clauses):
        taken = set(_in_scope(_child(select_query, "where_clause"))) if _child(select_query, "where_clause") else set()
    else:
        taken = {key for c in _children(group, "group_condition") if (key := _group_key(c))}
        loose = [v for v in plain if v not in taken]
        if loose:
            raise QuerySyntaxError(f"SPARQL does not parse: ?{loose[0]} is projected but neither grouped nor aggregated (add it to GROUP BY or use SAMPLE(?{loose[0]}))")
    for name in named:
        if name in taken or name in plain:
            raise QuerySyntaxError(f"SPARQL does not parse: SELECT (... AS ?{name}) binds ?{name}, which is already bound (use another name)")
        taken.add(name)


def _group_key(condition: tree_sitter.Node) -> str | None:
    """The variable a GROUP BY condition binds: `?v`, `(?v)` or `(expression AS ?v)`."""
    items = condition.children
    if any(c.type == "AS" for c in items):
        return _var_name(items[[c.type for c in items].index("AS") + 1])
    node = condition
    while node.type in ("group_condition", "bracketted_expression") and len(node.named_children) == 1:
        node = node.named_children[0]
    return _var_name(node) if node.type == "var" else None


def _children(node: tree_sitter.Node | None, kind: str) -> list[tree_sitter.Node]:
    return [c for c in node.children if c.type == kind] if node is not None else []


def _select_shape(query: tree_sitter.Node, canonical: str) -> QueryShape:
    modifier = _child(query, "solution_modifier")
    limits = _child(modifier, "limit_offset_clauses")
    limit = _child(limits, "limit_clause")
    offset = _child(limits, "offset_clause")
    select = _child(query, "select_clause")
    return QueryShape(
        "select",
        _child(modifier, "order_clause") is not None,
        _integer(limit) if limit is not None else None,
        _integer(offset) if offset is not None else 0,
        projected_variables(select) if select is not None else (),
        canonical,
    )


def projected_variables(select_clause: tree_sitter.Node) -> tuple[str, ...]:
    """The variables a SELECT clause projects, in order; for `SELECT *` those in scope."""
    if not any(c.type == "*" for c in select_clause.children):
        return tuple(_var_name(c) for c in select_clause.children if c.type == "var")
    where = _child(select_clause.parent, "where_clause")
    return tuple(dict.fromkeys(_in_scope(where))) if where is not None else ()


@lru_cache(maxsize=64)  # the projection check and the shape both ask, for the same node
def _in_scope(where: tree_sitter.Node) -> tuple[str, ...]:
    """Variables a group pattern binds, in document order (SPARQL 1.1 section 18.2.1): not
    those only inside FILTER, MINUS or EXISTS; of a sub-select only what it projects; of a
    BIND only its target.

    One tree-sitter query finds every variable and every region that hides or replaces them;
    a sweep over byte ranges then keeps the visible ones. No Python walk over every node: a
    20 KB VALUES block or BGP has tens of thousands of nodes and only the variables matter."""
    captured = tree_sitter.QueryCursor(_SCOPE).captures(where)
    selects = _outermost(captured.get("select", []))
    hidden = _ranges(_outermost(captured.get("hidden", []) + selects))
    binds = _ranges(_outermost(captured.get("bind", [])))
    targets = {[c for c in b.children if c.type == "var"][-1].start_byte for b in captured.get("bind", [])}
    found = [(s.start_byte, name) for s in selects for name in projected_variables(_child(s, "select_clause"))]  # type: ignore[arg-type]
    for var in captured.get("var", []):
        if not _inside(var, hidden) and (var.start_byte in targets or not _inside(var, binds)):
            found.append((var.start_byte, _var_name(var)))
    return tuple(name for _, name in sorted(found, key=lambda item: item[0]))


_SCOPE = tree_sitter.Query(
    LANGUAGE,
    "(var) @var (sub_select) @select (bind) @bind "
    + " ".join(f"({kind}) @hidden" for kind in ("filter", "minus_graph_pattern", "exists_func", "not_exists_func", "service_graph_pattern")),
)


def _outermost(nodes: list[tree_sitter.Node]) -> list[tree_sitter.Node]:
    """`nodes` without those nested in another of them, in document order."""
    kept: list[tree_sitter.Node] = []
    for node in sorted(nodes, key=lambda n: (n.start_byte, -n.end_byte)):
        if not kept or node.start_byte >= kept[-1].end_byte:
            kept.append(node)
    return kept


def _ranges(nodes: list[tree_sitter.Node]) -> list[tuple[int, int]]:
    return [(n.start_byte, n.end_byte) for n in nodes]


def _inside(node: tree_sitter.Node, ranges: list[tuple[int, int]]) -> bool:
    """Whether `node` lies within one of the sorted, disjoint `ranges`."""
    at = bisect.bisect_right(ranges, (node.start_byte, float("inf"))) - 1
    return at >= 0 and node.start_byte < ranges[at][1]


def _child(node: tree_sitter.Node | None, kind: str) -> tree_sitter.Node | None:
    if node is None:
        return None
    return next((c for c in node.children if c.type == kind), None)


def _integer(clause: tree_sitter.Node) -> int:
    number = _child(clause, "integer")
    if number is None or number.text is None or not number.text.isdigit():
        raise QuerySyntaxError("SPARQL does not parse: LIMIT and OFFSET take a whole number without a sign")
    return int(number.text.decode())


def _var_name(node: tree_sitter.Node) -> str:
    return (node.text or b"?").decode("utf-8")[1:]


_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


@lru_cache(maxsize=1024)  # each judge asks about the same candidate
def mentioned_iris(text: str) -> frozenset[str] | None:
    """Every IRI `text` writes outside its PREFIX declarations (prefixed names expanded, `a` as
    rdf:type), read by the guard's lexer in a few microseconds; None when the lexer's reading
    could differ from rdflib's (see `_rdflib_tokens`), a relative IRI or a percent escape in a
    prefixed name. A judge rule that reads IRIs of the algebra can skip parsing when every IRI
    the text mentions passes its test."""
    tokens = _rdflib_tokens(text)
    if tokens is None:
        return None
    prefixes: dict[str, str] = {}
    iris: set[str] = set()
    for i, token in enumerate(tokens):
        if i >= 1 and tokens[i - 1].keyword == "PREFIX":
            continue  # the declared prefix name
        if token.kind == "iri":
            if i >= 2 and tokens[i - 2].keyword == "PREFIX":
                prefixes[tokens[i - 1].text[:-1]] = token.text[1:-1]
                continue
            if not _SCHEME.match(token.text, 1):
                return None
            iris.add(token.text[1:-1])
        elif token.kind == "pname":
            prefix, _, local = token.text.partition(":")
            if "%" in local:  # a percent escape in a local name: left to rdflib's reading
                return None
            iris.add(prefixes[prefix] + local)
        elif token.kind == "word" and token.text == "a":
            iris.add(_RDF_TYPE)
    return frozenset(iris - {_label_service.UNBOUND})


_RDF_NAMESPACE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_WRITTEN_IRI = re.compile(r"<([^<>\s]*)>")


def may_name_any(text: str, iris: frozenset[str] | set[str]) -> bool:
    """False only when the algebra `query_algebra(text)` reads (it parsed or not) surely holds
    none of `iris`, told from the text without parsing it: a text that lexes not (so
    `mentioned_iris` cannot say) costs rdflib a slow failed parse. Every IRI rdflib reads is
    written whole (`<iri>`) or as a namespace (declared in the text, or one rdflib binds by
    default: `schema:` parses undeclared) and a local name written in the text. Unsure (True):
    a backslash (escapes), a carriage return, BASE (relative IRIs resolved), the label service
    (its emulation writes IRIs), or an IRI in the RDF namespace (`a`, collections)."""
    if "\\" in text or "\r" in text or "base" in text.lower() or _label_service.named(text):
        return True
    if any(iri.startswith(_RDF_NAMESPACE) or iri in text for iri in iris):
        return True
    # IRIs in a namespace are found by bisection of the sorted IRIs (those starting with it are
    # one run), not by testing each IRI against each namespace: a large gold's answer times
    # rdflib's thirty-odd namespaces was 400k tests a run
    ordered = sorted(iris)
    for ns in {*_WRITTEN_IRI.findall(text), *_rdflib_namespaces()}:
        for iri in itertools.islice(ordered, bisect.bisect_left(ordered, ns), None):
            if not iri.startswith(ns):
                break
            if iri[len(ns) :] in text:
                return True
    return False


@lru_cache(maxsize=1)
def _rdflib_namespaces() -> tuple[str, ...]:
    """The namespaces rdflib's SPARQL parser binds before reading a query's prologue."""
    from rdflib.plugins.sparql.sparql import Prologue

    return tuple(str(namespace) for _, namespace in Prologue().namespace_manager.namespaces())


def compares_by_order(text: str) -> bool | None:
    """Whether `text` holds an order comparison (<, >, <=, >=) anywhere, read by the guard's
    lexer (which tells `<` from an IRI as rdflib does); None when unsure (see `_rdflib_tokens`)."""
    tokens = _rdflib_tokens(text)
    if tokens is None:
        return None
    return any(token.kind == "punct" and token.text in ("<", ">", "<=", ">=") for token in tokens)


def _rdflib_tokens(text: str) -> tuple[Token, ...] | None:
    """The lexer's terminals of `text`, or None where rdflib could read it otherwise: a backslash
    (escapes), a carriage return (where a comment ends), BASE, or a text that does not lex."""
    if "\\" in text or "\r" in text:
        return None
    try:
        tokens = terminals(text)
    except QuerySyntaxError:
        return None
    return None if any(token.keyword == "BASE" for token in tokens) else tokens


# rdflib's SPARQL algebra, for the judges' rules that read a query's algebra (kgeval.judges).
# Its grammar (pyparsing) keeps parse state in shared objects: two threads parsing at once
# corrupt each other, so parses are serialized; each distinct text is parsed once.
_PARSE_LOCK = threading.Lock()


def query_algebra(text: str, *, as_written: bool = False) -> CompValue:
    """The SPARQL algebra of a query that parses (rdflib), under the parse lock that every
    parse in a run shares; raises QuerySyntaxError when it does not parse.

    A text with a backslash is read through the guard's canonical text first: rdflib keeps
    the backslash of a local-name escape inside the IRI (`res:Springfield_\\(Illinois\\)`
    gives an IRI with `\\(`, not the one the engine queries); the canonical text writes such
    names as full IRIs. So is a text with a carriage return, which ends a `#` comment for the
    guard and the engine but not for rdflib: `# note\r ?x ex:p ?y` hid a pattern from the judges
    that the engine ran. (Not every text: rdflib refuses some of the canonical spacing, such
    as `cat:p *`.) So is a text with the Wikidata label service, which the engine runs as plain
    SPARQL (`_label_service`), unless `as_written` (the contamination check compares queries as
    people write them: a copy holds the SERVICE clause, not its emulation). Text the guard
    refuses or rdflib cannot read so is read as given. A text rdflib cannot read as given but
    the guard approves (keywords glued as Oxigraph reads them: `LIMIT10`, `PREFIXex:`) is read
    as the canonical text the engine runs."""
    with _PARSE_LOCK:
        if "\\" in text or "\r" in text or (not as_written and _label_service.named(text)):
            try:
                return _algebra(guard_query(text).text)
            except (QuerySyntaxError, QueryRefused):
                pass
        try:
            return _algebra(text)
        except QuerySyntaxError as unread:
            try:
                canonical = guard_query(text).text
            except (QuerySyntaxError, QueryRefused):
                raise unread from None
            return _algebra(canonical)


@lru_cache(maxsize=1024)
def _algebra(text: str) -> CompValue:
    from rdflib.plugins.sparql.algebra import translateQuery
    from rdflib.plugins.sparql.parser import parseQuery

    try:
        return translateQuery(parseQuery(text)).algebra
    except Exception as exc:  # noqa: BLE001 - rdflib raises bare Exceptions (unknown prefix, RecursionError ...)
        raise QuerySyntaxError(f"SPARQL does not parse: {exc}") from None
