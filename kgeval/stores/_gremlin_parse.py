"""Gremlin query text -> gremlinpython bytecode, and the read-only guard for Gremlin.

Reference and candidate queries arrive as text (`g.V().hasLabel('person').values('name')`).
They are parsed here by a small recursive-descent parser over Python's tokenizer (never by
regular expression, never by `eval`), into the Bytecode gremlinpython sends to a server. The
accepted language is Gremlin's method-chain syntax: `g.` then steps whose arguments are
string/number/boolean/null literals, lists, anonymous traversals (`__.out()` or bare `out()`),
predicates (`P.gt(3)`, `gt(3)`, `TextP.containing('a')`) and enum values (`T.id`,
`Order.desc`, `desc`, `keys`, `local` ...). Closures (`{ it -> ... }`), variables and
multiple statements do not parse, so nothing outside the step vocabulary can run.

The guard allows only the read-only steps in `READ_ONLY_STEPS`, anywhere in the query,
including inside anonymous traversals: addV, addE, property, drop, mergeV, mergeE,
sideEffect, io, call and any step not listed are refused before a request leaves.
"""

from __future__ import annotations

import ast
import io
import keyword
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from gremlin_python.process import traversal as gt
from gremlin_python.process.graph_traversal import GraphTraversal, __
from gremlin_python.process.traversal import Bytecode
from gremlin_python.statics import SingleByte, bigdecimal, bigint, long, short

from kgeval.errors import QueryRefused, QuerySyntaxError
from kgeval.stores._query import DEFAULT_MAX_QUERY_BYTES

SOURCE_STEPS = frozenset({"V", "E", "inject"})
READ_ONLY_STEPS = frozenset(
    """
    V E inject out in both outE inE bothE outV inV bothV otherV
    has hasLabel hasId hasKey hasValue hasNot is where and or not filter none
    values valueMap elementMap propertyMap properties key value id label
    select project by as count sum max min mean fold unfold group groupCount order
    limit range skip tail dedup path simplePath cyclicPath repeat times until emit loops
    union coalesce choose option optional constant local map flatMap identity math
    aggregate store cap barrier index with both
    toLower toUpper concat asString length trim lTrim rTrim substring split replace
    format asDate dateAdd dateDiff
    """.split()
)
MAX_NESTING = 64
"""Deepest nesting of arguments (anonymous traversals, lists) a query may have: deeper ones
would exhaust the parser's and gremlinpython's recursion, not describe a question."""
_ENUMS = {
    "T": gt.T, "Order": gt.Order, "Column": gt.Column, "Scope": gt.Scope, "Pop": gt.Pop,
    "Direction": gt.Direction, "Operator": gt.Operator, "Pick": gt.Pick, "DT": gt.DT,
}
_BARE_ENUMS = {
    "asc": gt.Order.asc, "desc": gt.Order.desc, "shuffle": gt.Order.shuffle,
    "incr": gt.Order.asc, "decr": gt.Order.desc,
    "id": gt.T.id, "label": gt.T.label, "key": gt.T.key, "value": gt.T.value,
    "keys": gt.Column.keys, "values": gt.Column.values,
    "local": gt.Scope.local, "global": gt.Scope.global_,
    "first": gt.Pop.first, "last": gt.Pop.last, "mixed": gt.Pop.mixed, "all": gt.Pop.all_,
    "OUT": gt.Direction.OUT, "IN": gt.Direction.IN, "BOTH": gt.Direction.BOTH,
}
_PREDICATES = {
    "eq", "neq", "lt", "lte", "gt", "gte", "inside", "outside", "between", "within", "without",
    "containing", "notContaining", "startingWith", "notStartingWith", "endingWith",
    "notEndingWith", "regex", "notRegex",
}
_TEXT_PREDICATES = {"containing", "notContaining", "startingWith", "notStartingWith", "endingWith", "notEndingWith", "regex", "notRegex"}
_NUMBER_SUFFIXES: dict[str, Callable[[Decimal], Any]] = {
    "b": lambda d: SingleByte(int(d)), "s": lambda d: short(int(d)), "i": int, "l": lambda d: long(int(d)),
    "n": lambda d: bigint(int(d)), "f": float, "d": float, "m": bigdecimal,
}
"""Gremlin's typed number suffixes (byte, short, int, long, BigInteger, float, double,
BigDecimal, either case) -> the gremlinpython value that is sent as that Java type (a float
goes as a double: gremlinpython has no separate float)."""


@dataclass(frozen=True)
class GremlinQuery:
    """A parsed Gremlin traversal."""

    bytecode: Bytecode
    """The traversal's bytecode, as gremlinpython sends it."""
    steps: tuple[str, ...]
    """Every step name in the query, anonymous traversals included (for the guard)."""
    ordered: bool
    """The top-level traversal has an order() step: row order is part of the answer."""


def parse_gremlin(text: str, *, max_bytes: int = DEFAULT_MAX_QUERY_BYTES) -> GremlinQuery:
    """Parse and guard `text`; raise QuerySyntaxError or QueryRefused."""
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise QueryRefused(f"query is {size} bytes, over the {max_bytes}-byte limit")
    parser = _Parser(text)
    bytecode, top_steps = parser.query()
    refused = sorted({s for s in parser.steps if s not in READ_ONLY_STEPS})
    if refused:
        raise QueryRefused(
            f"Gremlin step(s) {', '.join(refused)} refused: only read-only traversal steps may run"
        )
    if top_steps[0] not in SOURCE_STEPS:
        raise QuerySyntaxError(f"Gremlin does not parse: a traversal starts with g.V(), g.E() or g.inject(), not g.{top_steps[0]}()")
    return GremlinQuery(bytecode, tuple(parser.steps), "order" in top_steps)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.pos = 0
        self.steps: list[str] = []
        self.depth = 0

    # -- token helpers --------------------------------------------------------------------

    def peek(self, ahead: int = 0) -> tokenize.TokenInfo:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def take(self, string: str | None = None, kind: int | None = None) -> tokenize.TokenInfo:
        tok = self.peek()
        if (string is not None and tok.string != string) or (kind is not None and tok.type != kind):
            wanted = repr(string) if string is not None else tokenize.tok_name[kind or 0]
            self.fail(f"expected {wanted}, found {tok.string or 'end of query'!r}")
        self.pos += 1
        return tok

    def at(self, string: str) -> bool:
        return self.peek().string == string

    def fail(self, message: str) -> None:
        line, col = self.peek().start
        raise QuerySyntaxError(f"Gremlin does not parse: line {line} column {col + 1}: {message}")

    # -- grammar --------------------------------------------------------------------------

    def query(self) -> tuple[Bytecode, list[str]]:
        self.take("g", tokenize.NAME)
        bytecode = Bytecode()
        top: list[str] = []
        first = True
        while self.at("."):
            self.take(".")
            name, args = self.step()
            first = False
            bytecode.add_step(name, *args)
            top.append(name)
        if first:
            self.fail("expected a traversal such as g.V()")
        if self.peek().type != tokenize.ENDMARKER:
            self.fail(f"unexpected {self.peek().string!r} after the traversal")
        return bytecode, top

    def step(self) -> tuple[str, list[Any]]:
        name = self.take(kind=tokenize.NAME).string
        self.steps.append(name)
        return name, self.call_args()

    def call_args(self) -> list[Any]:
        self.take("(")
        args: list[Any] = []
        while not self.at(")"):
            args.append(self.arg())
            if not self.at(")"):
                self.take(",")
        self.take(")")
        return args

    def arg(self) -> Any:
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                line, col = self.peek().start
                raise QueryRefused(f"Gremlin query nests arguments deeper than {MAX_NESTING} levels (line {line} column {col + 1})")
            return self._arg()
        finally:
            self.depth -= 1

    def _arg(self) -> Any:
        tok = self.peek()
        if tok.type == tokenize.STRING:
            return self.string()
        if tok.type == tokenize.NUMBER or tok.string == "-":
            return self.number()
        if tok.string == "[":
            self.take("[")
            items: list[Any] = []
            while not self.at("]"):
                items.append(self.arg())
                if not self.at("]"):
                    self.take(",")
            self.take("]")
            return items
        if tok.type != tokenize.NAME:
            self.fail(f"unexpected {tok.string or 'end of query'!r}")
        if tok.string in ("true", "false", "null"):
            self.pos += 1
            return {"true": True, "false": False, "null": None}[tok.string]
        if tok.string == "__":
            self.take("__")
            self.take(".")
            return self.anonymous()
        if tok.string in ("P", "TextP") and self.peek(1).string == ".":
            self.pos += 2
            return self.predicate()
        if tok.string in _ENUMS and self.peek(1).string == ".":
            self.pos += 2
            return self.enum_value(tok.string, self.take(kind=tokenize.NAME).string)
        if self.peek(1).string == "(":
            return self.predicate() if tok.string in _PREDICATES else self.anonymous()
        self.pos += 1
        if tok.string not in _BARE_ENUMS:
            self.fail(f"unknown name {tok.string!r} (variables are not allowed)")
        return _BARE_ENUMS[tok.string]

    def anonymous(self) -> GraphTraversal:
        traversal = __.start()
        name, args = self.step()
        traversal.bytecode.add_step(name, *args)
        while self.at(".") and self.peek(1).type == tokenize.NAME and self.peek(2).string == "(":
            self.take(".")
            name, args = self.step()
            traversal.bytecode.add_step(name, *args)
        return traversal

    def predicate(self) -> gt.P:
        name = self.take(kind=tokenize.NAME).string
        if name not in _PREDICATES and name not in ("not",):
            self.fail(f"unknown predicate {name!r}")
        owner = gt.TextP if name in _TEXT_PREDICATES else gt.P
        pred = getattr(owner, _python_name(name))(*self.call_args())
        while self.at(".") and self.peek(1).string in ("and", "or"):
            self.take(".")
            joiner = self.take(kind=tokenize.NAME).string
            self.take("(")
            other = self.arg()
            self.take(")")
            pred = getattr(pred, joiner + "_")(other)
        return pred

    def enum_value(self, enum_name: str, member: str) -> Any:
        enum = _ENUMS[enum_name]
        for candidate in (member, member + "_", _python_name(member)):
            if candidate in enum.__members__:
                return enum[candidate]
        self.fail(f"{enum_name}.{member} is not a Gremlin enum value")

    def string(self) -> str:
        tok = self.take(kind=tokenize.STRING)
        if tok.string[:1] not in ("'", '"') or tok.string.startswith(("'''", '"""')):
            self.fail(f"unsupported string literal {tok.string[:20]!r}")
        return ast.literal_eval(tok.string)

    def number(self) -> Any:
        negative = self.at("-")
        if negative:
            self.take("-")
        tok = self.take(kind=tokenize.NUMBER)
        try:
            value = Decimal(tok.string)
        except InvalidOperation:  # Python's 0x10, 0o7, 1j are no Gremlin numbers
            line, col = tok.start
            raise QuerySyntaxError(f"Gremlin does not parse: line {line} column {col + 1}: unsupported number literal {tok.string!r}") from None
        nxt = self.peek()
        convert: Callable[[Decimal], Any] = float if any(c in tok.string for c in ".eE") else int
        if nxt.type == tokenize.NAME and nxt.start == tok.end and nxt.string.lower() in _NUMBER_SUFFIXES:
            convert = _NUMBER_SUFFIXES[nxt.string.lower()]
            self.pos += 1
        return convert(-value if negative else value)


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    skip = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT}
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text.strip()).readline) if t.type not in skip]
    except (tokenize.TokenError, IndentationError, SyntaxError) as exc:
        raise QuerySyntaxError(f"Gremlin does not parse: {exc}") from None
    for tok in tokens:
        if tok.type == tokenize.ERRORTOKEN and not tok.string.isspace():
            raise QuerySyntaxError(f"Gremlin does not parse: line {tok.start[0]} column {tok.start[1] + 1}: unexpected {tok.string!r}")
        if tok.type == tokenize.OP and tok.string not in (".", "(", ")", ",", "[", "]", "-"):
            raise QuerySyntaxError(f"Gremlin does not parse: line {tok.start[0]} column {tok.start[1] + 1}: unexpected {tok.string!r}")
    return tokens


def _python_name(name: str) -> str:
    """gremlinpython's spelling of a Gremlin name: snake_case, a trailing _ for keywords."""
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
    return snake + "_" if keyword.iskeyword(snake) or snake in ("not", "and", "or", "is", "in", "as") else snake
