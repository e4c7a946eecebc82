"""SPARQL 1.1 terminals exactly as the specification defines them, and the canonical text.

The read-only guard must read the same query the engine runs (DESIGN invariant 12). Parsers
disagree on the edges of terminals: where a `#` comment ends (Oxigraph ends it at a carriage
return, pyparsing- and tree-sitter-based parsers at a line feed), whether `\\u` escapes are
expanded before parsing, long strings, escaped `#` in prefixed names. So the guard never lets
an engine read the original text: this module splits it into terminals by the specification
(section 19.8; codepoint escapes expanded first, section 19.2), and writes them back in one
plain form that every parser reads the same way: no comments, single spaces, strings in
double quotes with escapes only for `\\ " \\n \\r \\t \\b \\f`, keywords upper-case, `$x` as
`?x`, and prefixed names with escapes or dots in their local part written out as full IRIs
(Oxigraph 0.5 ends a local name at its second run of dots: `dbr:A.C._Milan` does not parse,
`dbr:Linux_2.6.32` in VALUES is two values). Every prefix must be declared in the query. Stores
send that text only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, NamedTuple

from kgeval.errors import QueryRefused, QuerySyntaxError, undeclared_prefix

TokenKind = Literal["iri", "pname", "bnode", "var", "langtag", "number", "string", "nil", "anon", "word", "punct"]

_BASE = (
    "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d"
    "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff"
)
_U = _BASE + "_"
_CHARS = _U + r"\-0-9\u00b7\u0300-\u036f\u203f-\u2040"
_PLX = r"%[0-9A-Fa-f]{2}|\\[_~.\-!$&'()*+,;=/?#@%]"
_PREFIX = f"[{_BASE}](?:[{_CHARS}.]*[{_CHARS}])?"
_LOCAL = f"(?:[{_U}:0-9]|{_PLX})(?:(?:[{_CHARS}.:]|{_PLX})*(?:[{_CHARS}:]|{_PLX}))?"
_VARNAME = f"[{_U}0-9][{_U}0-9\u00b7\u0300-\u036f\u203f-\u2040]*"
_EXP = r"[eE][+-]?[0-9]+"
_ECHAR = r"""\\[tbnrf\\"']"""
_IRI = r"<[^<>\"{}|^`\\\x00-\x20]*>"
_TERMINALS = [
    ("iri", _IRI),
    ("pname", f"(?:{_PREFIX})?:(?:{_LOCAL})?"),
    ("bnode", f"_:[{_U}0-9](?:[{_CHARS}.]*[{_CHARS}])?"),
    ("var", f"[?$]{_VARNAME}"),
    ("langtag", r"@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*"),
    ("number", rf"[+-]?(?:[0-9]+\.[0-9]*{_EXP}|\.[0-9]+{_EXP}|[0-9]+{_EXP}|[0-9]*\.[0-9]+|[0-9]+)"),
    ("string", rf"""'''(?:(?:'|'')?(?:[^'\\]|{_ECHAR}))*'''|\"\"\"(?:(?:"|"")?(?:[^"\\]|{_ECHAR}))*\"\"\""""),
    ("string", rf"""'(?:[^'\\\n\r]|{_ECHAR})*'|"(?:[^"\\\n\r]|{_ECHAR})*\""""),
    ("nil", r"\([ \t\r\n]*\)"),
    ("anon", r"\[[ \t\r\n]*\]"),
    ("word", r"[A-Za-z_][A-Za-z0-9_]*"),
    ("punct", r"\^\^|<=|>=|!=|&&|\|\||[{}()\[\];,.*+\-/=<>!|^?]"),
]
_SKIPPED = r"(?:[ \t\r\n]+|#[^\r\n]*)*"
"""White space and comments; a comment ends at a line feed or a carriage return."""
_LEXER = re.compile(_SKIPPED + "(?:" + "|".join(f"(?P<{kind}{i}>{rx})" for i, (kind, rx) in enumerate(_TERMINALS)) + r"|(?P<end>\Z))")
_KIND = {f"{kind}{i}": kind for i, (kind, _) in enumerate(_TERMINALS)} | {"end": "end"}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


def _is_operand(token: Token) -> bool:
    return token.kind in ("var", "number", "string", "langtag", "iri", "pname", "nil") or token.text in (")", "true", "false")


_CODEPOINT = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_UNESCAPE = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_ESCAPE = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_ESCAPE_TABLE = str.maketrans(_ESCAPE)
_SPELLING = {w.upper(): w for w in ("isIRI", "isURI", "isBLANK", "isLITERAL", "isNUMERIC", "sameTerm", "true", "false")}
"""Keywords written as the grammar spells them rather than in upper case (SPARQL matches
keywords in any case; tree-sitter-sparql only in these spellings)."""


class Token(NamedTuple):
    """One SPARQL terminal in its canonical form (a tuple: the lexer makes one per terminal)."""

    kind: TokenKind
    text: str
    """The canonical text of the terminal (see the module docstring)."""

    @property
    def keyword(self) -> str:
        """The upper-case keyword when this is a bare word, else ''."""
        return self.text.upper() if self.kind == "word" else ""


MAX_EXPANSION = 200_000
"""Most bytes a query's prefixed names may add when written as full IRIs: a long PREFIX IRI
used by a thousand dotted names would otherwise turn a 20 KB query into megabytes for the guard
and the engine to read (one 19.5 KB query became 13.5 MB, half a second in the guard). Ten
times the default size limit; real queries add a few kilobytes at most."""

_PUNCT_TOKENS = {p: Token("punct", p) for p in "^^ <= >= != && || { } ( ) [ ] ; , . * + - / = < > ! | ^ ?".split()}


def canonical_tokens(query: str) -> list[Token]:
    """The terminals of `query`, canonical; QuerySyntaxError on text no terminal matches."""
    text = _expand_codepoints(query.removeprefix("\ufeff"))
    control = _CONTROL.search(text)
    if control:
        raise QuerySyntaxError(f"query contains the control character U+{ord(control.group()):04X} at {_where(text, control.start())}")
    tokens: list[Token] = []
    prefixes: dict[str, str] = {}
    position = parens = grown = 0
    lex, kinds, append, punct = _LEXER.match, _KIND, tokens.append, _PUNCT_TOKENS  # locals: a 20 KB text has ~20,000 terminals
    while True:
        match = lex(text, position)
        group = match.lastgroup if match is not None else None
        kind = kinds.get(group, "")  # type: ignore[arg-type]
        if kind == "punct":  # most terminals of a long query: kept as written, one shared Token each
            raw = match.group(group)  # type: ignore[union-attr]
            position = match.end(group)  # type: ignore[union-attr]
            parens += (raw == "(") - (raw == ")")
            append(punct.get(raw) or Token("punct", raw))
            continue
        if kind in ("number", "bnode", "langtag"):  # kept as written
            position = match.end(group)  # type: ignore[union-attr]
            append(Token(kind, match.group(group)))  # type: ignore[union-attr, arg-type]
            continue
        if kind == "var":  # as `_canonical` writes it, without the call: the next most common
            position = match.end(group)  # type: ignore[union-attr]
            append(Token("var", "?" + match.group(group)[1:]))  # type: ignore[union-attr]
            continue
        if kind == "word":
            position = match.end(group)  # type: ignore[union-attr]
            raw = match.group(group)  # type: ignore[union-attr]
            upper = raw.upper()
            if upper not in _KEYWORDS and raw != "a" and (glued := _glued_keywords(upper)):
                tokens.extend(glued)  # `LIMIT10`, `ORDER BYDESC(?x)`: as Oxigraph reads them
                continue
            append(Token("word", raw if raw == "a" else _SPELLING.get(upper, upper)))
            continue
        if kind == "pname" and _glued_prefix(match.group(group), text, match.end(group), tokens):  # type: ignore[union-attr]
            append(Token("word", "PREFIX"))  # `PREFIX: <...>` is `PREFIX : <...>` to Oxigraph and rdflib
            start, raw = match.start(group) + len("PREFIX"), match.group(group)[len("PREFIX") :]  # type: ignore[union-attr]
            position = start + len(raw)
            append(_canonical_pname(raw, prefixes, tokens))
            continue
        if kind in ("", "iri"):  # no match, or `<` that may be less-than: the careful path
            kind, start, raw = _next_terminal(text, position, tokens, parens, match)
        else:
            start, raw = match.start(group), match.group(group)  # type: ignore[union-attr]
        if kind == "end":
            return tokens
        position = start + len(raw)
        parens += (raw == "(") - (raw == ")")  # `<` read as less-than comes back as punct here
        append(_canonical(kind, raw, prefixes, tokens))  # type: ignore[arg-type]
        if kind == "pname":  # a name written as its full IRI grows the text: bounded
            grown += len(tokens[-1].text) - len(raw)
            if grown > MAX_EXPANSION:
                raise QueryRefused(
                    f"query's prefixed names expand to over {MAX_EXPANSION} more bytes of full IRIs (names with an escape or a dot "
                    f"are sent as full IRIs) at {_where(text, start)}: write shorter names or fewer of them"
                )
        if tokens[-1].kind == "iri" and len(tokens) >= 3 and tokens[-3].keyword == "PREFIX":
            prefixes[tokens[-2].text[:-1].removeprefix(_RENAMED)] = tokens[-1].text[1:-1]


_DECLARED_NEXT = re.compile(_SKIPPED + "<")


def _glued_prefix(raw: str, text: str, end: int, before: list[Token]) -> bool:
    """Is this prefixed name (`PREFIX:`, `prefixex:`) the keyword PREFIX glued to the name it
    declares? Oxigraph and rdflib match keywords without a word boundary, so `PREFIX:` followed
    by an IRI, where a declaration may stand (at the start, or after a declaration), is
    `PREFIX :`: the name is one they read, and the canonical text writes it apart."""
    if not raw.endswith(":") or raw[:6].upper() != "PREFIX" or not _DECLARED_NEXT.match(text, end):
        return False
    if not before:
        return True
    return before[-1].kind == "iri" and len(before) >= 2 and (before[-2].keyword == "BASE" or (len(before) >= 3 and before[-3].keyword == "PREFIX"))


def _glued_keywords(word: str) -> list[Token]:
    """The keywords a word that is none is made of, as Oxigraph reads it (it matches keywords
    without a word boundary: `SELECTDISTINCT`, `ORDER BYDESC(?x)`, `LIMIT10`, `OFFSET5`); [] when
    it is not one way made of them. No other reader could take such a word for anything: a bare
    word that is no keyword is an error to all of them, so splitting it refuses nothing the
    engine runs and lets nothing through unread (the pieces are checked as every keyword is)."""
    number = re.search(r"[0-9]+$", word) if word.startswith(("LIMIT", "OFFSET")) else None
    head = word[: number.start()] if number else word
    pieces = _keyword_pieces(head)
    if pieces is None or (number and pieces[-1] not in ("LIMIT", "OFFSET")) or len(pieces) + bool(number) < 2:
        return []
    return [Token("word", _SPELLING.get(p, p)) for p in pieces] + ([Token("number", number.group())] if number else [])


def _keyword_pieces(word: str) -> list[str] | None:
    """`word` as a run of keywords when there is exactly one way to read it so, else None
    (counted from the end of the word: linear in its length)."""
    if len(word) > 64:
        return None
    ways = [0] * len(word) + [1]
    first: list[str] = [""] * len(word)
    for at in range(len(word) - 1, -1, -1):
        for k in _KEYWORDS:
            if k != "A" and word.startswith(k, at) and ways[at + len(k)]:
                ways[at] = min(2, ways[at] + ways[at + len(k)])
                first[at] = k
    if ways[0] != 1:
        return None
    pieces, at = [], 0
    while at < len(word):
        pieces.append(first[at])
        at += len(first[at])
    return pieces


def _next_terminal(text: str, position: int, before: list[Token], parens: int, match: re.Match[str] | None = None) -> tuple[str, int, str]:
    """(kind, start, raw text) of the terminal after the white space and comments at `position`.

    `<` is ambiguous: the start of an IRI or less-than. Longest match (an IRI) is the rule,
    except inside parentheses right after an operand when the would-be IRI has no scheme
    (`FILTER(?x<10&&?y>5)`): that is how Oxigraph and rdflib read it, and a relative IRI there
    is never meant. The canonical text then writes ` < ` with spaces, so no reader can doubt.
    `match`: the lexer's match at `position`, when the caller has it already.
    """
    match = match or _LEXER.match(text, position)
    if match is None:
        start = re.compile(_SKIPPED).match(text, position).end()  # type: ignore[union-attr]
        raise QuerySyntaxError(f"SPARQL does not parse at {_where(text, start)}: unexpected {text[start:start + 20]!r}")
    group = match.lastgroup or "end"
    kind, start, raw = _KIND[group], match.start(group), match.group(group)
    if kind == "iri" and parens > 0 and before and _is_operand(before[-1]) and not _SCHEME.match(raw, 1):
        return "punct", start, "<=" if raw.startswith("<=") else "<"
    return kind, start, raw


def declared_prefixes(tokens: Sequence[Token]) -> dict[str, str]:
    """The prefixes a query's PREFIX lines declare (name -> namespace IRI), from its terminals."""
    return {tokens[i + 1].text[:-1]: tokens[i + 2].text[1:-1] for i in range(len(tokens) - 2) if tokens[i].keyword == "PREFIX" and tokens[i + 2].kind == "iri"}


def iri_of(token: Token, prefixes: dict[str, str]) -> str | None:
    """The IRI a terminal writes (a full IRI, or a prefixed name of `prefixes`), else None."""
    if token.kind == "iri":
        return token.text[1:-1]
    if token.kind == "pname":
        prefix, _, local = token.text.partition(":")
        return prefixes[prefix] + local if prefix in prefixes else None
    return None


def canonical_text(tokens: Sequence[Token]) -> str:
    """The tokens joined by single spaces (none before a language tag or around `^^`)."""
    return canonical_text_and_spans(tokens)[0]


def byte_spans(tokens: Sequence[Token]) -> list[tuple[int, int]]:
    """Where each token lies in the UTF-8 bytes of `canonical_text(tokens)`."""
    return canonical_text_and_spans(tokens)[1]


def canonical_text_and_spans(tokens: Sequence[Token]) -> tuple[str, list[tuple[int, int]]]:
    """The canonical text and where each token lies in its UTF-8 bytes, in one pass."""
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    offset = 0
    for i, token in enumerate(tokens):
        if not _glued(tokens, i):
            parts.append(" ")
            offset += 1
        text = token.text
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
        parts.append(text)
        spans.append((offset, offset + size))
        offset += size
    return "".join(parts), spans


_CALLS = frozenset(
    "STR LANG LANGMATCHES LANGDIR DATATYPE BOUND IRI URI BNODE RAND ABS CEIL FLOOR ROUND CONCAT SUBSTR "
    "STRLEN REPLACE UCASE LCASE ENCODE_FOR_URI CONTAINS STRSTARTS STRENDS STRBEFORE STRAFTER YEAR MONTH "
    "DAY HOURS MINUTES SECONDS TIMEZONE TZ NOW UUID STRUUID MD5 SHA1 SHA256 SHA384 SHA512 COALESCE IF "
    "STRLANG STRLANGDIR STRDT SAMETERM ISIRI ISURI ISBLANK ISLITERAL ISNUMERIC ISTRIPLE TRIPLE SUBJECT "
    "PREDICATE OBJECT HASLANG HASLANGDIR REGEX COUNT SUM MIN MAX AVG SAMPLE GROUP_CONCAT".split()
)
"""Built-in calls and aggregates. Their argument list is written glued to the name: Oxigraph
0.5 refuses `CONCAT (...)` and `COALESCE (...)` with a space, although SPARQL allows it."""


_RESERVED_PREFIXES = _CALLS | frozenset(
    "A TRUE FALSE NOT EXISTS IN SELECT CONSTRUCT DESCRIBE ASK WHERE FILTER MINUS GRAPH VALUES BIND "
    "OPTIONAL UNION SERVICE PREFIX BASE DISTINCT REDUCED AS BY ORDER GROUP HAVING LIMIT OFFSET FROM "
    "NAMED UNDEF ASC DESC SEPARATOR SILENT LOAD CLEAR DROP CREATE ADD MOVE COPY INSERT DELETE DATA "
    "WITH INTO TO USING DEFAULT ALL LATERAL".split()
)
"""Prefix names that are also SPARQL keywords or function names (`PREFIX str: <...>`, `a:`):
legal, and Oxigraph reads them, but tree-sitter-sparql takes `true:x` or `str:x` in an
expression for the keyword. Their uses are written as full IRIs in the canonical text and
their declaration under a name no keyword has (`_RENAMED` + name), so every reader agrees."""

_RENAMED = "kgeval-reserved-"

_KEYWORDS = _RESERVED_PREFIXES
"""Every SPARQL keyword and built-in name, upper case."""


def _glued(tokens: Sequence[Token], i: int) -> bool:
    if i == 0:
        return True
    kind, text = tokens[i]
    if kind == "langtag" or text == "^^" or tokens[i - 1].text == "^^":
        return True
    return text[0] == "(" and kind in ("punct", "nil") and tokens[i - 1].keyword in _CALLS


def _canonical(kind: TokenKind, raw: str, prefixes: dict[str, str], before: list[Token]) -> Token:
    if kind == "string":
        return Token("string", _quote(string_value(raw)))
    if kind == "var":
        return Token("var", "?" + raw[1:])
    if kind == "word":
        return Token("word", raw if raw == "a" else _SPELLING.get(raw.upper(), raw.upper()))
    if kind == "nil":
        return Token("nil", "()")
    if kind == "anon":
        return Token("anon", "[]")
    if kind == "pname":
        return _canonical_pname(raw, prefixes, before)
    return Token(kind, raw)


_ESCAPED = re.compile(r"\\(.)")
_IRI_BODY = re.compile(r"[^<>\"{}|^`\\\x00-\x20]*")
_TWO_DOT_RUNS = re.compile(r"\.[^.]+\.")
"""Where Oxigraph 0.5 ends a local name: a second run of dots (`A.C._Milan`; `A..B` is one run)."""


def _canonical_pname(raw: str, prefixes: dict[str, str], before: list[Token]) -> Token:
    """A prefixed name; records PREFIX declarations; local names with an escape or a dot become
    full IRIs (see the module docstring): what an engine reads in them is then not in doubt."""
    prefix, _, local = raw.partition(":")
    if before and before[-1].keyword == "PREFIX":
        prefixes[prefix] = ""  # declared; its IRI, the next token, is recorded when read
        if prefix.upper() in _RESERVED_PREFIXES:  # every use is written as a full IRI (below)
            return Token("pname", f"{_RENAMED}{prefix}:")
        return Token("pname", raw)
    if prefix not in prefixes:
        # no engine's implicit prefixes (Virtuoso's rdfs:, bif: ...): the text names every IRI
        raise undeclared_prefix(prefix)
    namespace = prefixes[prefix]
    # a dot makes it a full IRI too, unless the namespace is empty (`PREFIX : <>`, the BASE:
    # no IRI to write) and the engine reads the name whole
    dotted = "." in local and (namespace != "" or _TWO_DOT_RUNS.search(local) is not None)
    if not dotted and "\\" not in local and prefix.upper() not in _RESERVED_PREFIXES:
        return Token("pname", raw)
    iri = namespace + (_ESCAPED.sub(r"\1", local) if "\\" in local else local)
    if not namespace or not _IRI_BODY.fullmatch(iri):
        why = " (its prefix is declared as <>: write the full IRI)" if not namespace else ""
        raise QuerySyntaxError(f"SPARQL does not parse: cannot write {raw} as an IRI{why}")
    return Token("iri", f"<{iri}>")


def string_value(raw: str) -> str:
    """The value of a string terminal. Its pattern admits only ECHAR escapes, and the text holds
    no NUL (refused as a control character), so NUL can stand in for an escaped backslash while
    the other escapes are replaced: linear C-speed replaces, no callback per escape."""
    quote = 3 if raw[:3] in ("'''", '"""') else 1
    body = raw[quote:-quote]
    if "\\" not in body:
        return body
    body = body.replace("\\\\", "\x00")
    for letter, value in _UNESCAPE.items():
        body = body.replace("\\" + letter, value)
    return body.replace("\x00", "\\")


def _quote(value: str) -> str:
    quoted = '"' + value.translate(_ESCAPE_TABLE) + '"'
    if _CODEPOINT.search(quoted):
        # "\\u0041": SPARQL expands codepoint escapes before parsing, engines differ on this one
        raise QuerySyntaxError(f"a string holds a backslash followed by a codepoint escape, which engines read differently: {quoted[:40]}")
    return quoted


def _expand_codepoints(text: str) -> str:
    def expand(match: re.Match[str]) -> str:
        code = int(match.group(1) or match.group(2), 16)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise QuerySyntaxError(f"invalid codepoint escape {match.group()!r} at {_where(text, match.start())}")
        return chr(code)

    return _CODEPOINT.sub(expand, text)


def _where(text: str, position: int) -> str:
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return f"line {line}, column {column}"
