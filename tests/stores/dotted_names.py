"""DBpedia names whose local part holds dots (`dbr:A.C._Milan`, `dbr:J._R._R._Tolkien`), on a
small sports KG, in queries written as QALD references and models write them: keywords in any
case, comments, another name for the prefix, names with one and several dots, dots next to
underscores and digits, a name ending in an escaped dot.

SPARQL 1.1 allows dots anywhere inside a local name (PN_LOCAL). Oxigraph 0.5.13 reads a local
name only up to its second run of dots: `dbr:A.C._Milan` is `dbr:A.C` followed by `._Milan`,
a syntax error ("expected OPTIONAL"); `dbr:Linux_2.6.32` in VALUES is `dbr:Linux_2.6` and
the number `.32`, two values and no error. The guard writes every such name as its full IRI.
"""

from __future__ import annotations

R = "http://dbpedia.org/resource/"
O = "http://dbpedia.org/ontology/"

_TRIPLES = [
    ("Paolo_Maldini", "team", "A.C._Milan"),
    ("Zlatan_Ibrahimović", "team", "A.C._Milan"),
    ("Zlatan_Ibrahimović", "team", "Paris_Saint-Germain_F.C."),
    ("Kylian_Mbappé", "team", "Paris_Saint-Germain_F.C."),
    ("Jonas_Hector", "team", "1._FC_Köln"),
    ("Wayne_Rooney", "team", "D.C._United"),
    ("Dominic_Solanke", "team", "A.F.C._Bournemouth"),
    ("Eduard_Löwen", "team", "St._Louis_City_SC"),
    ("D.C._United", "ground", "Washington,_D.C."),
    ("St._Louis_City_SC", "ground", "St._Louis"),
    ("J._R._R._Tolkien", "birthPlace", "Bloemfontein"),
    ("Linux_2.6.32", "developer", "Linus_Torvalds"),
]
SPORTS_TTL = "".join(f"<{R}{s}> <{O}{p}> <{R}{o}> .\n" for s, p, o in _TRIPLES)

_HEAD = f"PREFIX dbo: <{O}>\nprefix dbr: <{R}>\n"


def rows(*names: str) -> set[tuple[str, ...]]:
    """Expected one-column rows: resource names as full IRIs."""
    return {(R + name,) for name in names}


# id -> (query, its answer: the set of rows, or the ASK's boolean)
CASES: dict[str, tuple[str, set[tuple[str, ...]] | bool]] = {
    "milan": (
        _HEAD + "# TODO recheck\nSelect Distinct ?player Where { ?player dbo:team dbr:A.C._Milan . }",
        rows("Paolo_Maldini", "Zlatan_Ibrahimović"),
    ),
    "tolkien-as-subject": (
        f"PREFIX dbo: <{O}> PREFIX res: <{R}>\nselect ?place where {{\n  res:J._R._R._Tolkien dbo:birthPlace ?place # born\n}}",
        rows("Bloemfontein"),
    ),
    "filter-one-and-several-dots": (
        _HEAD + "SELECT DISTINCT ?player WHERE {\n  ?player dbo:team ?club .\n"
        "  FILTER(?club = dbr:D.C._United || ?club = dbr:A.F.C._Bournemouth || ?club = dbr:St._Louis_City_SC)\n}",
        rows("Wayne_Rooney", "Dominic_Solanke", "Eduard_Löwen"),
    ),
    "values-version-number": (  # Oxigraph read two values here, <Linux_2.6> and 0.32: an empty answer, no error
        _HEAD + "SELECT ?developer WHERE { VALUES ?release { dbr:Linux_2.6.32 } ?release dbo:developer ?developer }",
        rows("Linus_Torvalds"),
    ),
    "escaped-final-dot": (
        _HEAD + "SELECT ?player WHERE { ?player dbo:team dbr:Paris_Saint-Germain_F.C\\. ; dbo:team dbr:A.C._Milan . }",
        rows("Zlatan_Ibrahimović"),
    ),
    "ask-digits-and-escapes": (
        _HEAD + "ask { dbr:Jonas_Hector dbo:team dbr:1._FC_Köln . # one dot after a digit\n"
        "  dbr:D.C._United dbo:ground dbr:Washington\\,_D.C\\. }",
        True,
    ),
}

TIED = (
    _HEAD + "# the first club's players, one of them\n"
    "SELECT ?player ?club WHERE { ?player dbo:team ?club FILTER(?club IN (dbr:A.C._Milan, dbr:A.F.C._Bournemouth)) }\n"
    "order by ?club limit 1"
)
"""Two A.C._Milan players tie on the ORDER BY key at LIMIT 1 (A.C._Milan sorts before A.F.C._Bournemouth)."""

REJECTED = _HEAD + "# a model binds a variable already in scope\nSELECT ?player WHERE { ?player dbo:team dbr:A.C._Milan . bind(1 AS ?player) }"
"""The guard approves it; Oxigraph rejects it (BIND of an in-scope variable): the engine's
error position counts in the approved text, not in this one."""
