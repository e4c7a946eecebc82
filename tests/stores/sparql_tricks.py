"""A parser-level corpus of SPARQL texts built to make two parsers read one text differently.

Each text names `{url}`, the address of a recording loopback listener: a text that is
approved must run exactly as guarded (the engine never calls `{url}`), a text whose SERVICE
some parser can see must be refused. `REFUSED` maps an id to (text, error class name);
`ACCEPTED` maps an id to (text, the projected variables the guard must read).
"""

from __future__ import annotations

P = "PREFIX ex: <http://x/>\n"
S = "SERVICE <{url}/sparql> { ?s ?p ?o }"

REFUSED: dict[str, tuple[str, str]] = {
    # comments: SPARQL ends a comment at CR or LF (Oxigraph does; rdflib's grammar did not at CR)
    "cr-ends-comment": ("SELECT * WHERE { ?s ?p ?o # note\r " + S + " }", "QueryRefused"),
    "lf-ends-comment": ("SELECT * WHERE { ?s ?p ?o # note\n " + S + " }", "QueryRefused"),
    "crlf-ends-comment": ("SELECT * WHERE { ?s ?p ?o # note\r\n" + S + " }", "QueryRefused"),
    "escaped-cr-ends-comment": ("SELECT * WHERE { ?s ?p ?o # note\\u000D " + S + " }", "QueryRefused"),
    "escaped-lf-ends-comment": ("SELECT * WHERE { ?s ?p ?o # note\\U0000000A " + S + " }", "QueryRefused"),
    # codepoint escapes are expanded before parsing (SPARQL 1.1 section 19.2)
    "escaped-keyword": ("SELECT * WHERE { ?s ?p ?o \\u0053ERVICE <{url}/sparql> { ?s ?p ?o } }", "QueryRefused"),
    "escaped-quote-ends-string": ('SELECT * WHERE { ?s ?p "a\\u0022 . ' + S + ' #" }', "QueryRefused"),
    "escaped-gt-ends-iri": ("SELECT * WHERE { ?s ?p <http://x/\\u003E . " + S + " # > }", "QueryRefused"),
    "escaped-load": ("L\\u004FAD <{url}/data.ttl>", "QueryRefused"),
    # keywords in any case, SILENT, a variable endpoint, nested
    "lower-service": ("select * where { ?s ?p ?o service <{url}/sparql> { ?s ?p ?o } }", "QueryRefused"),
    "mixed-service": ("SELECT * WHERE { SeRvIcE <{url}/sparql> { ?s ?p ?o } }", "QueryRefused"),
    "service-silent": ("SELECT * WHERE { SERVICE SILENT <{url}/sparql> { ?s ?p ?o } }", "QueryRefused"),
    "service-variable": ("SELECT * WHERE { BIND(<{url}/sparql> AS ?e) SERVICE ?e { ?s ?p ?o } }", "QueryRefused"),
    "service-in-subselect": ("SELECT * WHERE { { SELECT ?s WHERE { OPTIONAL { " + S + " } } } }", "QueryRefused"),
    "service-in-exists": ("SELECT * WHERE { ?s ?p ?o FILTER EXISTS { " + S + " } }", "QueryRefused"),
    "service-after-long-string": ('SELECT * WHERE { ?s ?p """a "" b""" . ' + S + " }", "QueryRefused"),
    "service-after-escaped-quote": ('SELECT * WHERE { ?s ?p "a\\\\" . ' + S + " }", "QueryRefused"),
    "service-after-pname-escape": (P + "SELECT * WHERE { ?s ex:p\\# ?o . " + S + " }", "QueryRefused"),
    "service-on-a-line-after-bom": ("\ufeffSELECT * WHERE {\n" + S + "\n}", "QueryRefused"),
    # updates and other forms in any spelling
    "lower-insert": ("insert data { <http://a> <http://b> <http://c> }", "QueryRefused"),
    "select-then-update": ("SELECT * WHERE { ?s ?p ?o } ; DELETE WHERE { ?s ?p ?o }", "QueryRefused"),
    "lower-load": ("load <{url}/data.ttl> into graph <http://g>", "QueryRefused"),
    "lower-construct": ("construct { ?s ?p ?o } where { ?s ?p ?o }", "QueryRefused"),
    "describe": ("DESCRIBE <{url}/thing>", "QueryRefused"),
    # characters no SPARQL text holds, and escapes that name none
    "nul": ("SELECT * WHERE { ?s ?p ?o }\x00 " + S, "QuerySyntaxError"),
    "escaped-nul": ('SELECT * WHERE { ?s ?p "\\u0000" }', "QuerySyntaxError"),
    "escaped-form-feed-in-comment": ("SELECT ?s WHERE { ?s ?p ?o # note \\u000C " + S + "\n}", "QuerySyntaxError"),
    "vertical-tab": ("SELECT * WHERE {\x0b?s ?p ?o }", "QuerySyntaxError"),
    "surrogate-escape": ('SELECT * WHERE { ?s ?p "\\uD800" }', "QuerySyntaxError"),
    "codepoint-too-large": ('SELECT * WHERE { ?s ?p "\\U00110000" }', "QuerySyntaxError"),
    "bom-inside": ("SELECT * WHERE { ?s ?p ?o \ufeff}", "QuerySyntaxError"),
    "line-separator-outside-comment": ("SELECT * WHERE { ?s ?p ?o \u2028}", "QuerySyntaxError"),
    "c-comment": ("SELECT * WHERE { ?s ?p ?o /* " + S + " */ }", "QueryRefused"),
    "c-comment-alone": ("SELECT * WHERE { ?s ?p ?o /* a comment */ }", "QuerySyntaxError"),
    "space-in-iri": ("SELECT * WHERE { ?s ?p <http://x/a b> }", "QuerySyntaxError"),
    "nested-iri": ("SELECT * WHERE { ?s ?p <http://x/<a>> }", "QuerySyntaxError"),
    "line-break-in-short-string": ('SELECT * WHERE { ?s ?p "a\nb" }', "QuerySyntaxError"),
    "escaped-line-break-in-short-string": ('SELECT * WHERE { ?s ?p "a\\u000Ab" }', "QuerySyntaxError"),
    "backslash-u-in-string": ('SELECT * WHERE { ?s ?p "\\\\u0041" }', "QuerySyntaxError"),
    "undeclared-prefix": ("SELECT * WHERE { ?s bif:contains ?o }", "QuerySyntaxError"),
    "unterminated-long-string": ('SELECT * WHERE { ?s ?p """a } ', "QuerySyntaxError"),
    "two-limits": ("SELECT * WHERE { ?s ?p ?o } LIMIT 1 LIMIT 2", "QuerySyntaxError"),
    "double-negation": ("SELECT * WHERE { FILTER(!!true) }", "QuerySyntaxError"),
    # deep input: refused before any parser runs
    "braces-400": ("SELECT * WHERE " + "{" * 400 + " ?s ?p ?o " + "}" * 400, "QueryRefused"),
    "parens-3000": ("SELECT * WHERE { FILTER(" + "(" * 3000 + "true" + ")" * 3000 + ") }", "QueryRefused"),
    "brackets-200": ("SELECT * WHERE { ?s ?p " + "[ ?p " * 200 + "?o" + " ]" * 200 + " }", "QueryRefused"),
}

ACCEPTED: dict[str, tuple[str, tuple[str, ...]]] = {
    # what SPARQL reads as a comment, a string or an IRI stays one: the engine gets no SERVICE
    "line-separator-in-comment": ("SELECT ?s WHERE { ?s ?p ?o # note\u2028 " + S + "\n}", ("s",)),
    "next-line-in-comment": ("SELECT ?s WHERE { ?s ?p ?o # note\u0085 " + S + "\n}", ("s",)),
    "service-in-string": ('SELECT ?s WHERE { ?s ?p ?o FILTER(?o != "} ' + S + ' {") }', ("s",)),
    "service-in-long-string": ("SELECT ?s WHERE { ?s ?p ?o FILTER(?o != '''it''s\r\n} " + S + " {''') }", ("s",)),
    "service-in-long-string2": ('SELECT ?s WHERE { ?s ?p ?o FILTER(?o != """a"b""c\n' + S + '""") }', ("s",)),
    "escaped-quote-in-string": ('SELECT ?s WHERE { ?s ?p ?o FILTER(?o != "a\\" } ' + S + ' { \\"") }', ("s",)),
    "escaped-quote-single": ("SELECT ?s WHERE { ?s ?p ?o FILTER(?o != 'a\\' } " + S + " { ') }", ("s",)),
    "hash-in-string": ('SELECT ?s WHERE { ?s ?p ?o FILTER(?o != "# } ' + S + '") }', ("s",)),
    "hash-in-iri": ("SELECT ?s WHERE { ?s ?p <http://x/#frag> }", ("s",)),
    "escaped-hash-in-iri": ("SELECT ?s WHERE { ?s ?p <http://x/\\u0023frag> }", ("s",)),
    "escaped-hash-in-pname": (P + "SELECT ?s WHERE { ?s ex:p\\#q ?o }", ("s",)),
    "service-in-iri": ("SELECT ?s WHERE { ?s ?p <{url}/SERVICE> }", ("s",)),
    "service-as-pname": (P + "PREFIX : <http://y/>\nSELECT ?s WHERE { ?s ex:SERVICE :service }", ("s",)),
    "keyword-variables": ("SELECT ?service ?SELECT $limit WHERE { ?service ?SELECT $limit } ORDER BY ?limit LIMIT 3", ("service", "SELECT", "limit")),
    "mixed-case": ("sElEcT DiStInCt ?s wHeRe { ?s ?p ?o . fIlTeR(iSiRi(?s) && sAmEtErM(?s, ?s)) } oRdEr By ?s lImIt 2", ("s",)),
    "bom-at-start": ("\ufeffSELECT ?s WHERE { ?s ?p ?o }", ("s",)),
    "crlf-lines": ("SELECT ?s\r\nWHERE {\r\n  ?s ?p ?o # a comment\r\n}\r\nLIMIT 1", ("s",)),
    "escaped-keyword-spelled": ("SELECT ?s WHERE { ?s ?p ?o } \\u004CIMIT 1", ("s",)),
    "emoji-escape": ('SELECT ?s WHERE { ?s ?p ?o FILTER(?o != "\\U0001F600") }', ("s",)),
    "unicode-string": ('SELECT ?s WHERE { ?s ?p ?o FILTER(?o != "Ærø\u2028ß"@de) }', ("s",)),
    "compact-comparison": ("SELECT ?s WHERE { ?s ?p ?o FILTER(?o<10&&?o>5||?o<=?s) }", ("s",)),
    "ask-lowercase": ("ask { ?s ?p ?o }", ()),
    "dollar-and-question": ("SELECT $s WHERE { ?s ?p ?o }", ("s",)),
    "deep-but-within-limit": ("SELECT ?s WHERE " + "{" * 30 + " ?s ?p ?o " + "}" * 30, ("s",)),
}
