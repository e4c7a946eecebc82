"""Configuration: every threshold and default in one place, each documented.

A YAML file given with `--config` overrides any of these; fields it does not name keep their
defaults. Unknown keys are an error, so a misspelt threshold cannot silently fall back.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator, model_validator

from kgeval._files import present, read_yaml
from kgeval.errors import InputError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StoreAuthConfig(_Strict):
    username: str = Field(min_length=1)
    """HTTP basic-auth user name."""
    password_env: str = Field(min_length=1)
    """Name of the environment variable holding the password (never the password itself)."""


class CandidateQueryConfig(_Strict):
    """Bounds on executing a candidate's SPARQL, which is untrusted input (DESIGN invariant 12).
    Reference queries (gold rebuild, tie probes, schema summaries) are trusted: they run in
    process without these bounds, as fast as the engine allows. The timeout and row cap of a
    candidate query are `run.query_timeout_s` and `run.row_cap`."""

    sandbox: bool = True
    """Embedded store: run candidate queries in worker processes that hold the KG, have no
    network, have a memory limit, and are killed at the query's deadline and replaced. False:
    in process, on a thread that keeps running after its deadline (debugging only)."""
    workers: int = Field(2, ge=1)
    """Embedded store: worker processes per KG at most, each started when first needed and
    reused; a query waits for a free worker (the wait is not counted in its timeout)."""
    memory_mb: int = Field(1024, ge=16)
    """Embedded store: memory a worker may allocate beyond the loaded KG (its address-space
    limit); a query needing more ends its worker and fails as over budget (QueryOverBudget)."""
    max_value_bytes: int = Field(1 << 20, ge=1)
    """Largest single value (IRI, literal text) in a candidate's result, UTF-8 bytes; also the
    largest value a candidate may build, estimated before it is sent (`assumed_value_bytes`)."""
    assumed_value_bytes: int = Field(4096, ge=1)
    """Size a data value is taken to have when kgeval estimates, before sending a candidate
    query, the largest value it can build (CONCAT and REPLACE chains that double a string at
    every step): over `max_value_bytes`, the query is refused as over budget on every store,
    since no server's own time or memory limit stops such a value being built."""
    max_sorted_rows: int = Field(1_000_000, ge=1)
    """Oxigraph server and Fuseki only: most solutions an ordered (ORDER BY) candidate may sort.
    Neither stops a sort at its timeout, so an ordered candidate is counted first and refused as
    over budget beyond this (docs/engines.md)."""
    max_result_bytes: int = Field(32 << 20, ge=1)
    """Largest candidate result: UTF-8 bytes of every value of the rows kept."""
    max_response_bytes: int = Field(256 << 20, ge=1)
    """Remote stores: largest HTTP answer read for a candidate query (a server sends every row,
    not only the rows kept)."""
    worker_start_timeout_s: float = Field(300.0, gt=0)
    """Embedded store: time a new worker may take to start and load the KG."""


_CORE_PREFIXES = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "owl": "http://www.w3.org/2002/07/owl#",
}
PREDECLARED_PREFIXES: dict[str, dict[str, str]] = {
    # Virtuoso 7.2 (Debian's virtuoso-opensource-7): checked against a fresh server by
    # tests/stores/test_candidate_failures.py; it does NOT predeclare dcterms, schema or prov
    "virtuoso": {
        **_CORE_PREFIXES,
        "foaf": "http://xmlns.com/foaf/0.1/",
        "skos": "http://www.w3.org/2004/02/skos/core#",
        "dc": "http://purl.org/dc/elements/1.1/",
        "geo": "http://www.w3.org/2003/01/geo/wgs84_pos#",
        "sioc": "http://rdfs.org/sioc/ns#",
        "void": "http://rdfs.org/ns/void#",
        "vcard": "http://www.w3.org/2001/vcard-rdf/3.0#",
    },
    # GraphDB: a new repository's default namespaces (from its documentation; not run here)
    "graphdb": {**_CORE_PREFIXES, "wgs": "http://www.w3.org/2003/01/geo/wgs84_pos#", "fn": "http://www.w3.org/2005/xpath-functions#"},
    # Blazegraph: the declarations it adds to every query (from its documentation; not run here)
    "blazegraph": {
        **_CORE_PREFIXES,
        "foaf": "http://xmlns.com/foaf/0.1/",
        "dc": "http://purl.org/dc/elements/1.1/",
        "skos": "http://www.w3.org/2004/02/skos/core#",
    },
    # DBpedia's public endpoint (a Virtuoso): the namespaces of its `/sparql?help=nsdecl` list
    # that QALD, LC-QuAD 1.0 and TEXT2SPARQL DBpedia queries use (not run here; no network).
    # Not `res:`, which QALD's queries declare themselves.
    "dbpedia": {
        **_CORE_PREFIXES,
        "dbo": "http://dbpedia.org/ontology/",
        "dbp": "http://dbpedia.org/property/",
        "dbr": "http://dbpedia.org/resource/",
        "dbc": "http://dbpedia.org/resource/Category:",
        "dbt": "http://dbpedia.org/resource/Template:",
        "dbpedia": "http://dbpedia.org/resource/",
        "dbpedia-owl": "http://dbpedia.org/ontology/",
        "dbpprop": "http://dbpedia.org/property/",
        "category": "http://dbpedia.org/resource/Category:",
        "yago": "http://dbpedia.org/class/yago/",
        "wikidata": "http://www.wikidata.org/entity/",
        "foaf": "http://xmlns.com/foaf/0.1/",
        "dc": "http://purl.org/dc/elements/1.1/",
        "dct": "http://purl.org/dc/terms/",
        "dcterms": "http://purl.org/dc/terms/",
        "skos": "http://www.w3.org/2004/02/skos/core#",
        "geo": "http://www.w3.org/2003/01/geo/wgs84_pos#",
        "georss": "http://www.georss.org/georss/",
        "prov": "http://www.w3.org/ns/prov#",
        "schema": "http://schema.org/",
        "sioc": "http://rdfs.org/sioc/ns#",
        "void": "http://rdfs.org/ns/void#",
        "vcard": "http://www.w3.org/2001/vcard-rdf/3.0#",
    },
    # The Wikidata Query Service: the prefixes of its user manual ("Prefixes used ... are
    # declared for every query"; not run here). Its label service is emulated by the guard
    # (kgeval/stores/_label_service.py).
    "wikidata": {
        **_CORE_PREFIXES,
        "wd": "http://www.wikidata.org/entity/",
        "wds": "http://www.wikidata.org/entity/statement/",
        "wdv": "http://www.wikidata.org/value/",
        "wdref": "http://www.wikidata.org/reference/",
        "wdt": "http://www.wikidata.org/prop/direct/",
        "wdtn": "http://www.wikidata.org/prop/direct-normalized/",
        "wdno": "http://www.wikidata.org/prop/novalue/",
        "p": "http://www.wikidata.org/prop/",
        "ps": "http://www.wikidata.org/prop/statement/",
        "psv": "http://www.wikidata.org/prop/statement/value/",
        "psn": "http://www.wikidata.org/prop/statement/value-normalized/",
        "pq": "http://www.wikidata.org/prop/qualifier/",
        "pqv": "http://www.wikidata.org/prop/qualifier/value/",
        "pqn": "http://www.wikidata.org/prop/qualifier/value-normalized/",
        "pr": "http://www.wikidata.org/prop/reference/",
        "prv": "http://www.wikidata.org/prop/reference/value/",
        "prn": "http://www.wikidata.org/prop/reference/value-normalized/",
        "wikibase": "http://wikiba.se/ontology#",
        "bd": "http://www.bigdata.com/rdf#",
        "schema": "http://schema.org/",
        "skos": "http://www.w3.org/2004/02/skos/core#",
        "prov": "http://www.w3.org/ns/prov#",
        "geo": "http://www.opengis.net/ont/geosparql#",
        "hint": "http://www.bigdata.com/queryHints#",
    },
}
"""Prefixes known engines declare for every query (`store.predeclared_prefixes: virtuoso`)."""


SUGGEST_MIN_RATIO = 0.8
"""How alike (difflib's ratio, 0-1, case ignored) a question id or KG name that names nothing
must be to one that exists for a message to ask "did you mean" it (kgeval.holdout.likely_meant):
a one- or two-letter slip in a name of ten or more. Ids whose numbers differ are never offered."""

PROPERTY_GRAPH_KINDS = frozenset({"neptune-gremlin", "gremlin"})
"""Store kinds that hold property graphs queried in Gremlin (no SPARQL, so no judge lookups)."""


class StoreConfig(_Strict):
    kind: Literal["embedded", "sparql", "neptune-sparql", "neptune-gremlin", "gremlin"] = "embedded"
    """Which graph store executes queries: "embedded" (pyoxigraph in process, loads the KG
    files), "sparql" (any SPARQL 1.1 Protocol endpoint), "neptune-sparql" (Amazon Neptune,
    SigV4-signed), "neptune-gremlin" (Amazon Neptune property graph, Gremlin queries),
    "gremlin" (an Apache TinkerPop Gremlin Server's websocket, unsigned)."""
    endpoint: str | None = None
    """Remote stores: the query URL, e.g. http://127.0.0.1:7878/query, for a Gremlin Server
    ws://127.0.0.1:8182/gremlin, or for Neptune https://HOST:8182/sparql and
    wss://HOST:8182/gremlin. Required for every kind but embedded."""
    auth: StoreAuthConfig | None = None
    """"sparql" only: optional HTTP basic auth."""
    default_graphs: tuple[str, ...] = ()
    """SPARQL stores: default-graph-uri parameters sent with every query (empty: the server's
    default graph)."""
    named_graphs: tuple[str, ...] = ()
    """SPARQL stores: named-graph-uri parameters sent with every query."""
    kg_graphs: dict[str, str] = Field(default_factory=dict)
    """SPARQL stores: per-KG default graph (KG id -> graph IRI), used instead of
    `default_graphs` when a holdout's KGs live in separate graphs of one endpoint."""
    data_version: str | None = None
    """Remote stores: the declared version of the data the endpoint serves, recorded in the gold
    where the embedded store records the sha256 of the KG files (a remote store cannot hash
    files it does not hold). Required for every kind but embedded."""
    region: str | None = None
    """Neptune: the AWS region used in the SigV4 signature (e.g. eu-west-1)."""
    product: str | None = None
    """Remote stores: the server product recorded as the engine name when the server does not
    say (its Server header is used otherwise)."""
    product_version: str | None = None
    """Remote stores: the engine version recorded when the server does not say."""
    predeclared_prefixes: dict[str, str] = Field(default_factory=dict)
    """Prefixes the production endpoint declares for every query (name -> namespace IRI), or the
    name of a known engine's list: "virtuoso", "graphdb", "blazegraph", "wikidata", "dbpedia" (see
    PREDECLARED_PREFIXES).
    A candidate query that fails only for lacking one of these PREFIX lines is run with them, as it
    would run in production; its verdict records which it needed. Default: none (Oxigraph and
    Fuseki predeclare none)."""
    allow_insecure_http: bool = False
    """Neptune: accept an http:// endpoint. For the loopback signature tests only; Neptune
    serves HTTPS."""
    candidates: CandidateQueryConfig = CandidateQueryConfig()
    """Bounds on executing candidate (untrusted) queries: sandbox, memory, value and result size."""

    @field_validator("predeclared_prefixes", mode="before")
    @classmethod
    def _known_engine_prefixes(cls, value: object) -> object:
        if isinstance(value, str):
            if value not in PREDECLARED_PREFIXES:
                raise ValueError(f"unknown engine {value!r} for predeclared_prefixes; known: {', '.join(sorted(PREDECLARED_PREFIXES))}, or give a mapping")
            return dict(PREDECLARED_PREFIXES[value])
        return value

    @model_validator(mode="after")
    def _remote_needs_endpoint(self) -> StoreConfig:
        if self.kind != "embedded":
            missing = [name for name in ("endpoint", "data_version") if not getattr(self, name)]
            if self.kind.startswith("neptune") and not self.region:
                missing.append("region")
            if missing:
                raise ValueError(f"store kind {self.kind!r} needs {', '.join(missing)}")
        return self


class GoldConfig(_Strict):
    row_cap: int = Field(2000, ge=1)
    """Rows of a reference result kept in the gold (the true total is always kept)."""
    timeout_s: float = Field(120.0, gt=0)
    """Timeout for one reference query during a gold rebuild."""
    display_items: int = Field(10, ge=1)
    """Items shown in a gold's display version ("first 10 ... (N total)")."""
    executions: int = Field(2, ge=1)
    """Times each reference query is executed; differing result hashes flag it nondeterministic."""
    tie_probe_rows: int = Field(10000, ge=1)
    """Row cap of the tie probe (the query re-run without LIMIT/OFFSET to find ties at the cut)."""
    concurrency: int = Field(2, ge=1)
    """Questions of one KG built at once (their reference queries, repeated executions and tie
    probes; an embedded store runs at most `candidate.workers` of them at once, one per sandbox
    worker). Each question's executions still run one after another, in one worker, and the gold
    is written in question order: the same gold whatever the value. 1: one question at a time
    (on a machine too loaded for a reference query to keep its timeout beside another)."""


class SuiteConfig(_Strict):
    """Test suites: neighbour KGs fuzzed from each holdout KG, with their golds (DESIGN
    invariant 14; docs/scoring.md "Test-suite accuracy")."""

    neighbours: int = Field(8, ge=1, le=64)
    """Neighbour KGs made per holdout KG (each question's suite is a subset of them, distilled
    greedily). 8: four fuzzing levels twice over; on the sample holdout and CK25 more neighbours
    kill no further mutant (docs/benchmarks.md), and each neighbour costs a sandbox worker and
    a gold entry per question that keeps it."""
    min_neighbours: int = Field(4, ge=0)
    """Neighbours every question's suite keeps even when the original KG already tells every
    mutant apart (those where its gold changes most first): an answer that hard-codes the gold's
    rows is caught only where the gold differs."""
    seed: int = 0
    """Seed of the fuzzer (with the KG's data hash: the same seed and data give the same bytes)."""
    scale: float = Field(1.0, gt=0, le=1)
    """Share of each class's entities a neighbour keeps (drawn from the seed and the KG's hash;
    the entities the reference queries name, enough for their LIMIT/OFFSET and for each
    predicate's number of values always kept). 1: neighbours as large as the KG (minus the
    fuzzer's own drops); smaller neighbours load and run faster during a run, at the kill rates
    and stress-set figures docs/benchmarks.md gives for each value."""
    mutants: int = Field(40, ge=1)
    """Most near-miss mutants generated per reference query."""
    mutant_timeout_s: float = Field(5.0, gt=0)
    """Timeout of one mutant on one KG (a dropped join pattern can be a cross product); a mutant
    that runs out is recorded as undecided, never as told apart."""
    with_gold: bool = False
    """`kgeval gold rebuild` also builds the suites (into `<gold>/suites`)."""
    check_accepts: bool = True
    """A run checks every accepted attempt again on its question's suite, when the suites exist
    (`<gold>/suites`): the report's test_suite_accuracy."""
    required: bool = False
    """The pre-eval checklist refuses a run unless the suites exist and verify for this holdout."""


class NormalizationConfig(_Strict):
    """Which normalization rules a judge applies before comparing values (each True = on).

    The rules are documented in `kgeval/judges/_normalize.py` and the README; the active rules
    are part of the judge's configuration hash, hence of its version.
    """

    iri_tail: bool = True
    """An IRI compares by its last path segment or fragment (`.../Complaint/12345` = `12345`)."""
    percent_decode: bool = True
    """IRIs are percent-decoded (`B%40c` = `B@c`)."""
    trailing_slash: bool = True
    """Trailing slashes of IRIs are dropped (`http://x/a/` = `http://x/a`)."""
    whitespace: bool = True
    """Runs of whitespace fold to one space; leading and trailing whitespace is dropped."""
    casefold: bool = True
    """Text compares case-insensitively (Unicode case folding)."""
    numbers: bool = True
    """Numbers compare in canonical decimal form (`1.50` = `1.5`, `1e3` = `1000`, `-0.0` = `0`)."""
    booleans: bool = True
    """Booleans compare as `true`/`false` (JSON booleans, and xsd:boolean `1`/`0`)."""
    dates: bool = True
    """A date-time at midnight UTC (or with no zone) compares as its date (`1871-07-01T00:00:00Z`
    = `1871-07-01`): Wikidata writes every date so."""
    drop_language_tags: bool = True
    """A literal's language tag is ignored (`"Sales"@en` = `"Sales"`)."""
    drop_datatypes: bool = True
    """A literal's datatype is ignored (`"1"^^xsd:integer` = `"1"`)."""
    ignore_term_kinds: bool = True
    """IRIs, literals and blank nodes may equal each other (an IRI's tail equals a label)."""


SEED_NORMALIZATION = NormalizationConfig(booleans=False)
"""The seed judge's rules as first specified (xsd:boolean `1` stays `1`), kept so its numbers
stay comparable."""
EXECUTION_NORMALIZATION = NormalizationConfig(iri_tail=False, ignore_term_kinds=False)
"""Executed results come from the same store as the gold, so they compare as typed terms: full
IRIs, and an IRI never equals a literal (a label instead of the IRI is wrong)."""
ANSWER_LIST_NORMALIZATION = NormalizationConfig()
"""An answer list carries no types (JSON strings, numbers, booleans): IRIs compare by tail."""


class ReadingsConfig(_Strict):
    """How an answer list (no SPARQL) is read against its question before it is compared
    (`kgeval/judges/_reading.py`). Each reading is a named rule (docs/scoring.md): on by default
    only when it reads what the item states without guessing (DESIGN invariant 13)."""

    yes_no: bool = True
    """`yes` / `no` / `true` / `false` (or `Yes, it is.`) answer a yes/no question as that boolean."""
    answer_phrases: bool = True
    """`The answer is X.` / `Answer: X` is X; `None` / `There is no such line.` is the empty list
    where the gold is empty."""
    sparql_notation: bool = True
    """An item written as a SPARQL JSON term is its value; a prefixed name the reference query or
    the store declares (`wd:Q42`) is its IRI."""
    name_with_id: bool = True
    """`Name (ID)` is the ID when the ID is the tail of a gold IRI."""
    written_dates: bool = True
    """A date written out (`January 1, 1985`) or numeric with a plain order of day and month
    (`05/15/1915`) is that date, where the gold holds dates."""
    year_for_date: bool = False
    """A year alone (`1994`) is the gold's 1 January of that year. Off: a year does not state the
    date; taking it for 1 January is a guess."""
    units: bool = True
    """A number with a unit, a currency, `%` or a scale word (`169 minutes`, `$1,200`, `2.5
    million`) is that number where every gold value is a number (a unit the question rules out
    is not read)."""
    number_words: bool = True
    """A whole number in words (`three`, `one hundred and sixty`, `a dozen`) is that number."""
    hedged_numbers: bool = False
    """`about 150` / `approximately 150` / `~150` is 150. Off: a hedged number is not the number."""
    sentence_values: bool = False
    """The one number or date of a plain sentence (`There are 40 stations in Bremsfeld.`) is the
    answer. Off: which part of a sentence answers the question is a guess."""
    other_languages: bool = True
    """German and Spanish forms: yes/no (`Ja`, `Sí`), month names (`15. Mai 1915`), number words
    (`drei`), "none" (`Keine`), decimal commas and dot-grouped thousands (`4.250.000,50`)."""


class SeedJudgeConfig(_Strict):
    exact_below: int = Field(20, ge=1)
    """Gold sets with fewer items than this are judged by exact set match."""
    min_precision: float = Field(0.7, ge=0, le=1)
    """Membership path: share of the answer's items that must be in the full gold set."""
    min_items: int = Field(5, ge=1)
    """Membership path: the answer must list at least this many items."""
    normalize: NormalizationConfig = SEED_NORMALIZATION
    """Normalization rules (see NormalizationConfig)."""
    vacuous: bool = True
    """Reject (path `vacuous`) an empty / false / zero result that comes from a predicate or
    class the KG lacks (README: Judging rules)."""
    readings: ReadingsConfig = ReadingsConfig()
    """How an answer list is read before it is compared (see ReadingsConfig)."""


LABEL_PREDICATES: tuple[str, ...] = (
    "http://www.w3.org/2000/01/rdf-schema#label",
    "http://www.w3.org/2004/02/skos/core#prefLabel",
    "http://schema.org/name",
    "https://schema.org/name",
    "http://xmlns.com/foaf/0.1/name",
)
"""Predicates whose literal names an entity, for the label rules of the execution judge."""
DESCRIPTION_PREDICATES: tuple[str, ...] = (
    "http://schema.org/description",
    "https://schema.org/description",
    "http://www.w3.org/2000/01/rdf-schema#comment",
    "http://www.w3.org/2004/02/skos/core#definition",
    "http://purl.org/dc/terms/description",
    "http://purl.org/dc/elements/1.1/description",
)
"""Predicates whose literal describes an entity (Wikidata's `?xDescription` is schema:description),
for the `label_columns` rule of the execution judge."""


class LabelRulesConfig(_Strict):
    """The execution judge's label rules: an answer naming the same entities as the gold, one
    by its IRI and the other by its name, where the KG itself links the two (README: Judging
    rules). Labels are read from the store holding the gold, read-only, once per run and KG."""

    entity_for_label: bool = True
    """Accept the entity's IRI where the gold gives its name: the IRI's label (or IRI tail) equals
    the gold's text. On by default: an IRI identifies at least what its label does."""
    label_for_entity: bool = False
    """Accept a name where the gold gives the entity's IRI: the name is that entity's label (or
    IRI tail) and no other entity of the gold bears it (see `shared_names`). Off by default
    (DESIGN invariant 13): a name is not the entity; names are shared, IRIs are not."""
    shared_names: bool = False
    """With `label_for_entity`: a name that entities outside the gold bear too still names the one
    gold entity bearing it ("Luxembourg" for the country though a city bears the name; the verdict
    names such names). Off by default: taking it so is a guess. Off, a name any other labelled
    entity of the KG bears is not enough alone."""
    predicates: tuple[str, ...] = LABEL_PREDICATES
    """Label predicates read for every KG."""
    kg_predicates: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """KG id -> further label predicates of that KG (e.g. a domain vocabulary's own name)."""
    local_names: tuple[Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_-]*$")], ...] = ("name", "label")
    """A KG's own predicates whose IRI ends in one of these local names (case-insensitive) are
    label predicates too, found in the KG when its labels are first read: CK25's `pv:name`, a
    vocabulary's `ex:label`. Not `firstName` or `title` (a person's title is not their name)."""
    iri_tail: bool = True
    """An IRI's last path segment (percent-decoded) counts as one of its names."""
    max_labels: int = Field(500_000, ge=1)
    """Labels read per KG at most; beyond it ambiguity may be undercounted (and the verdict says so)."""
    description_predicates: tuple[str, ...] = DESCRIPTION_PREDICATES
    """Predicates whose literal describes an entity: an extra answer column of an entity's
    descriptions is a label column too (`label_columns`). Asked of the store for the answer's
    entities only, when a column holds values that are not their names."""

    def predicates_for(self, kg: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.predicates, *self.kg_predicates.get(kg, ()))))


class ExecutionJudgeConfig(_Strict):
    min_precision: float = Field(1.0, ge=0, le=1)
    """Share of the answer's distinct rows that must be gold rows (1.0: no extra row)."""
    min_recall: float = Field(1.0, ge=0, le=1)
    """Share of the gold's distinct rows the answer must give (1.0: no missing row)."""
    check_order: bool = True
    """Check row order (accepting ties) when the question is marked order-sensitive."""
    max_column_mappings: int = Field(50_000, ge=1)
    """Column alignment tries every mapping of gold to answer columns up to this many, then
    falls back to a greedy mapping (a wide answer with many candidate columns)."""
    normalize: NormalizationConfig = EXECUTION_NORMALIZATION
    """Rules for comparing an executed result with the gold (typed terms)."""
    list_normalize: NormalizationConfig = ANSWER_LIST_NORMALIZATION
    """Rules for comparing an answer list (no SPARQL) with the gold (untyped values)."""
    labels: LabelRulesConfig = LabelRulesConfig()
    """The entity-for-label and label-for-entity rules."""
    symmetric_pairs: Literal["off", "declared", "declared_or_detected"] = "declared_or_detected"
    """Accept both orientations of unordered pairs (reason `symmetric pairs`): on questions that
    declare `answer_form: unordered_pairs`, and ("declared_or_detected") on those whose reference
    query lists each pair once by ordering its two projected variables (FILTER(STR(?a) < STR(?b)))."""
    vacuous: bool = True
    """Reject (path `vacuous`) an empty / false / zero result that comes from a predicate or class
    the KG lacks."""
    label_columns: bool = True
    """An extra answer column beside the gold's columns is accepted when every value in it is a
    KG label (`labels.predicates`, `labels.kg_predicates`, a KG predicate named `name`/`label`,
    an IRI's tail) or description (`labels.description_predicates`) of the IRI in the same row of
    an aligned answer column: the `?xLabel` / `?xDescription` a KGQA answer adds beside `?x`; or
    an extra column of the entities an aligned column of names names, row by row. On: the same
    entities, named; nothing guessed (the KG says each value is that entity's name). Without a
    KG lookup at hand it never applies."""
    extra_columns: bool = False
    """Any other extra answer column is ignored (the answer is compared on its columns aligned
    with the gold's). Off: an extra column states values the gold does not (a grouped count's
    key, a template beside its type code), and which column answers is a guess."""
    duplicates: bool = True
    """Rows compared as sets: an answer's repeated rows, or repeats the gold has and the answer
    lacks, are accepted (the field's comparator compares bags). On: repeated rows state no entity
    or value the gold lacks and omit none; how often an engine finds a row is a trait of the
    query's joins (a second label, a missing DISTINCT), and QALD and TEXT2SPARQL compare answer
    sets. A number of things asked for is a COUNT, compared as a value."""
    approximate_numbers: bool = True
    """A single value that is an approximate number (xsd:float, xsd:double, a decimal with more
    digits than the other side writes) compares at the precision it has (`_same_number`): the
    same AVG differs in its last digits from engine to engine. On: the same value, no guess."""
    readings: ReadingsConfig = ReadingsConfig()
    """How an answer list is read before it is compared (see ReadingsConfig)."""
    split_listing: bool = True
    """One text listing several things where the gold has more rows: an answer list of one text
    (`Christopher Nolan and Emma Thomas`, `A, B, C`) read split at `,`, `;` and `and` (reason
    `one item listing several`), and an executed result's one GROUP_CONCAT column read as the
    values it joined, split at the query's own separator (reason `GROUP_CONCAT read as the values
    it joined`). Tried only when the answer as it is is wrong; accepted only when the reading is
    right."""


class JudgesConfig(_Strict):
    primary: str = "execution"
    """The pre-registered judge whose verdict counts for accuracy. "execution" (equal sets,
    recall visible); set "seed" to reproduce the seed judge's numbers (README: Judging)."""
    enabled: tuple[str, ...] = ("seed", "execution")
    """Every judge run on each attempt; verdicts are stored side by side."""
    seed: SeedJudgeConfig = SeedJudgeConfig()
    execution: ExecutionJudgeConfig = ExecutionJudgeConfig()


class RunConfig(_Strict):
    seeds: int = Field(3, ge=1)
    """Attempts per question (seeds 0..N-1)."""
    candidate_timeout_s: float = Field(30.0, gt=0, validation_alias=AliasChoices("candidate_timeout_s", "query_timeout_s"))
    """Timeout for executing a candidate's SPARQL (`query_timeout_s` is read as this name too)."""
    candidate_timeout_counts_as: Literal["wrong", "error"] = "wrong"
    """A candidate query that runs past `candidate_timeout_s`: "wrong" (a model failure, judged
    wrong with path `candidate_timeout`: the query is too costly) or "error" (a harness failure,
    excluded and counted: for a remote endpoint whose own load may be the cause). The report
    states the rule in force."""
    row_cap: int = Field(2000, ge=1)
    """Row cap for executing a candidate's SPARQL (the same as the gold's by default)."""
    concurrency: int = Field(8, ge=1)
    """Attempts in flight at once (threads); database writes stay on one thread."""
    rate_limit_per_s: float | None = Field(None, gt=0)
    """Calls to the system per second at most, across all threads (None: no limit)."""
    persist_within_s: float = Field(0.05, ge=0)
    """Longest a completed attempt waits to be written; attempts completing together share one
    transaction (each still atomic with its verdicts). Bounds what a kill can lose: each group
    is fsync'd to the run's journal (`kgeval/runs/_journal.py`) before the next is taken."""
    db_flush_s: float = Field(1.0, ge=0)
    """How often a run moves its journaled attempts into the results database, opening the file
    for that one transaction only: other commands, the service and other runs read and write the
    file in between, and see a running run's attempts up to this much later (later still while
    another process holds the file: the run tries again at the next flush, never waiting)."""
    max_output_bytes: int = Field(1 << 20, ge=1)
    """Largest output of a system accepted for one attempt (1 MiB): its SPARQL, its whole text or
    its answer list (as JSON), in bytes. A larger one is the model's failure, judged wrong as over
    budget (kept in accuracy's denominator), and stored cut to this size with the size and sha256
    of the whole. Replay files and HTTP endpoints are read no further than needed, so memory stays
    bounded whatever a line or a reply holds."""
    max_tries: int = Field(3, ge=1)
    """Tries per attempt when the call fails transiently (timeout, transport, 429); every try
    is recorded with the attempt."""
    retry_backoff_s: float = Field(1.0, ge=0)
    """Wait before the second try; doubled before each further one, each wait jittered (half to
    all of it) so that threads retrying together do not retry in step."""
    max_retry_after_s: float = Field(60.0, ge=0)
    """A system's Retry-After is honoured (the wait is at least it) up to this long."""
    max_error_share: float = Field(0.10, ge=0, le=1)
    """When error attempts plus cut-off (incomplete) ones exceed this share of all attempts,
    the report publishes no accuracy, only a harness report naming the causes."""
    checklist: Path | None = None
    """The pre-eval checklist every run must pass before anything is sent to a system (None:
    the one shipped in the package, `kgeval/checklists/defaults/pre_eval.yaml`)."""

    @property
    def query_timeout_s(self) -> float:
        """The former name of `candidate_timeout_s`."""
        return self.candidate_timeout_s


class PipelineConfig(_Strict):
    """Pipeline features a system declares (or the production profile): defaults, and per-KG
    overrides. The pre-eval checklist compares a system's features with production's, KG by KG."""

    default: dict[str, Any] = Field(default_factory=dict)
    """Feature -> value for every KG (e.g. few_shot_retrieval: true, few_shot_k: 5)."""
    per_kg: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """KG id -> features overriding the defaults for that KG."""

    def for_kg(self, kg: str) -> dict[str, Any]:
        return {**self.default, **self.per_kg.get(kg, {})}


class HttpSystemConfig(_Strict):
    """The production endpoint: POST {"question", "kg", "seed"} -> {"sparql", "answer", "stop_reason"}."""

    url: str | None = None
    """Endpoint URL; required for `--system http`."""
    declared_version: str = "unknown"
    """The version of the system this configuration deploys, recorded with the run."""
    version_header: str = "X-System-Version"
    """Response header carrying the version actually served, recorded per attempt."""
    timeout_s: float = Field(60.0, gt=0)
    """Deadline for one call: connecting, sending, the headers and the whole body (a reply
    trickled a byte at a time, or one that never ends, times out at it)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra request headers (no secrets in files: use `token_env`)."""
    token_env: str | None = None
    """Environment variable holding a bearer token, when the endpoint needs one."""
    pipeline: PipelineConfig = PipelineConfig()
    """Pipeline features the deployed system declares; compared with the production profile."""
    guards_url: str | None = None
    """Where the endpoint reports its example-bank guards: GET returns a JSON list of
    {"name", "active", "details"} (kgeval.guards.ExampleBank.status(), serialized). Read by the
    pre-eval checklist; required when the pipeline turns few-shot retrieval on."""


class PromptConfig(_Strict):
    """The schema-summary + few-shot prompt every model system sends (kgeval/systems/_prompt.py)."""

    few_shot_k: int = Field(5, ge=0)
    """Examples retrieved from the example bank per question (0: no retrieval)."""
    examples: Path | None = None
    """JSONL example bank ({"kg", "question", "sparql"} per line) for the in-memory bank; a
    relative path is read from the configuration file's directory. None: no bank, so no
    retrieval, and pipeline parity with a production that retrieves examples fails
    (`kgeval init` writes a template)."""
    schema_classes: int = Field(40, ge=1)
    """Classes listed in the prompt's schema summary (most instances first)."""
    schema_predicates: int = Field(60, ge=1)
    """Predicates listed in the prompt's schema summary (most used first)."""


class GeminiSystemConfig(PromptConfig):
    """Gemini through google-genai: SPARQL from the question, the KG schema and retrieved examples."""

    model: str = "gemini-2.5-flash"
    api_key_env: str = "GEMINI_API_KEY"
    """Environment variable holding the API key."""
    base_url: str | None = None
    """Override the API base URL (a proxy, or a loopback server in tests)."""
    temperature: float = Field(0.0, ge=0)
    max_output_tokens: int = Field(4096, ge=1)
    """Output token limit; thinking tokens count against it on thinking models."""
    thinking_budget: int | None = 1024
    """Thinking tokens allowed (None: the model's default; 0: thinking off where allowed)."""
    include_thoughts: bool = False
    """Ask for thought summaries (they are recorded apart, never read as the answer)."""
    timeout_s: float = Field(120.0, gt=0)
    """Deadline for one call, headers and whole body (a trickled or endless reply times out)."""


class OpenAISystemConfig(PromptConfig):
    """Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, TGI, LiteLLM ...)
    through the official `openai` client, with the same prompt as the gemini system."""

    model: str | None = None
    """The model name the endpoint serves (required for `--system openai`)."""
    base_url: str | None = None
    """The endpoint's base URL, e.g. http://127.0.0.1:8000/v1 for vLLM, http://127.0.0.1:11434/v1
    for Ollama (None: api.openai.com)."""
    api_key_env: str | None = "OPENAI_API_KEY"
    """Environment variable holding the API key; None for a local endpoint without keys."""
    temperature: float = Field(0.0, ge=0)
    max_tokens: int = Field(4096, ge=1)
    """Output token limit (sent as max_completion_tokens)."""
    reasoning_effort: str | None = None
    """Sent as `reasoning_effort` when set (reasoning models: low, medium, high)."""
    timeout_s: float = Field(120.0, gt=0)
    """Deadline for one call, headers and whole body (a trickled or endless reply times out)."""


class SystemsConfig(_Strict):
    http: HttpSystemConfig = HttpSystemConfig()
    gemini: GeminiSystemConfig = GeminiSystemConfig()
    openai: OpenAISystemConfig = OpenAISystemConfig()


COMMON_NAMESPACES: tuple[str, ...] = (
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "http://www.w3.org/2000/01/rdf-schema#",
    "http://www.w3.org/2002/07/owl#",
    "http://www.w3.org/2001/XMLSchema#",
    "http://www.w3.org/2004/02/skos/core#",
    "http://www.w3.org/2008/05/skos-xl#",
    "http://www.w3.org/ns/shacl#",
    "http://www.w3.org/XML/1998/namespace",
    "http://purl.org/dc/elements/1.1/",
    "http://purl.org/dc/terms/",
    "http://purl.org/vocab/vann/",
    "http://rdfs.org/ns/void#",
)
SHARED_NAMESPACES: tuple[str, ...] = (
    "http://schema.org/",
    "https://schema.org/",
    "http://xmlns.com/foaf/0.1/",
    "http://www.w3.org/ns/prov#",
    "http://www.w3.org/ns/dcat#",
    "http://www.w3.org/2006/time#",
    "http://www.w3.org/2003/01/geo/wgs84_pos#",
    "http://www.wikidata.org/",
    "http://wikiba.se/ontology",  # the Wikibase ontology (wikibase:label, wikibase:language)
    "http://www.bigdata.com/",  # Blazegraph's, in every WDQS label service (bd:serviceParam)
    "http://dbpedia.org/",
    "http://qudt.org/",
)


class ContaminationConfig(_Strict):
    fields: tuple[str, ...] = ("prompt", "completion", "messages[].content")
    """Fields of a training record holding text to check: a dotted path, `[]` after a list
    (e.g. "messages[].content"). Every leaf must be a string; other fields are parsed, not read."""
    near_duplicate: float = Field(0.6, gt=0, le=1)
    """A passage whose content-word Jaccard similarity with a holdout question is at least this
    is a near-duplicate (calibrated: light paraphrases >= 0.6, unrelated CK25 questions < 0.5)."""
    min_question_words: int = Field(3, ge=2)
    """Questions with fewer content words than this are near-duplicates only of a passage with
    exactly their content words (Jaccard 1); with fewer than 2, exact (normalized) matches only."""
    short_question_words: int = Field(5, ge=0)
    """Questions with fewer content words than this are near-duplicates only of a passage that
    also holds `min_question_coverage` of their words (0: no question is short)."""
    min_question_coverage: float = Field(0.55, ge=0, le=1)
    """Share of a short question's distinct words, function words included, that a near-
    duplicate must hold within about the question's length of its content words. Content-word
    Jaccard is too coarse on two to four words: "employees per department" has both content words
    of "How many employees does each department have?" (Jaccard 1) but 2 of its 7 words, and is a
    generic phrase, not a copy. Calibrated on light rewordings of the short sample and CK25
    questions (0.57-1.0) and generic short questions with their content words (0-0.50):
    tests/guards/test_contamination.py."""
    workers: int = Field(0, ge=0)
    """Worker processes; 0 means one per CPU core."""
    sample_mb: int = Field(2, ge=0)
    """The first MB of the first JSONL file are read once to choose, for each question, the
    anchor words rarest in this data (the prefilter stays exact: any choice is sound); 0: off."""
    chunk_mb: int = Field(32, ge=1)
    """Size of the unit of work (a byte range of a JSONL file); bounds memory per worker."""
    max_decompressed_mb: int = Field(512, ge=1)
    """The Parquet decompressed-size bound: the most one column chunk of a row group that the
    check reads may decompress to (from the file's metadata, before it is read), and the most
    text one batch of a dictionary-encoded field may decode to. A 33 KB file can hold a 1 GiB
    string (a decompression bomb); over the bound the file is refused (exit 2) naming the row
    group and column, so a worker's memory stays a few times this. Raise it for data written
    with larger row groups."""
    allow_empty: bool = False
    """Accept a training file with no records (0 bytes, blank lines only, a Parquet file of 0
    rows) as clean. Off: such a file is an error, since an empty file is almost always a failed
    export, and passing it would certify data nobody checked."""


class ExampleBankConfig(_Strict):
    max_similarity: float = Field(0.8, gt=0, le=1)
    """A retrieved example whose question is more similar than this (content-word Jaccard) to
    the question asked is dropped."""


class SchemaGateConfig(_Strict):
    """Thresholds of the schema-adjacency gate, read from `schema_gate/config.yaml`."""

    type_overlap_pct: float = Field(50.0, ge=0, le=100)
    """Refuse when the candidate shares at least this % of its classes ..."""
    relation_overlap_pct: float = Field(50.0, ge=0, le=100)
    """... AND at least this % of its predicates with one training KG (both ">=")."""
    jaccard_cap: float = Field(0.3, ge=0, le=1)
    """Refuse when the Jaccard similarity of the schema signatures exceeds this (">")."""
    timeout_s: float = Field(300.0, gt=0)
    """Timeout for each fingerprint query."""
    row_cap: int = Field(200_000, ge=1)
    """Most classes, predicates or domain/range pairs a fingerprint may hold; more is an error."""


class GuardsConfig(_Strict):
    common_namespaces: tuple[str, ...] = COMMON_NAMESPACES
    """Vocabulary every KG shares (rdf, rdfs, owl, xsd, skos, ...): left out of schema
    fingerprints comparisons and never distinctive of a holdout KG."""
    shared_namespaces: tuple[str, ...] = SHARED_NAMESPACES
    """Public vocabularies and KGs: compared by the schema gate, but an IRI in them does not
    identify a holdout KG, so the contamination check does not flag it."""
    contamination: ContaminationConfig = ContaminationConfig()
    example_bank: ExampleBankConfig = ExampleBankConfig()


class AuditConfig(_Strict):
    default_accepts: int = Field(30, ge=1)
    """Accepted answers drawn by `kgeval audit sample` when `--accepts` is not given."""
    sample_seed: int = 0
    """Seed of the stratified audit sample (the same seed draws the same sample)."""


class ReviewConfig(_Strict):
    coverage_target: float = Field(0.2, ge=0, le=1)
    """Share of holdout questions whose reference SPARQL and gold a domain reviewer has
    approved at the current content hash; the report shows coverage against it."""


class ServiceConfig(_Strict):
    """`kgeval serve`: limits that keep the service answering under abuse, and its sessions."""

    max_body_bytes: int = Field(2 * 1024 * 1024, ge=1024)
    """Largest request body accepted (2 MiB): a longer one is refused with 413 before it is
    read, or as soon as a chunked body passes the limit."""
    max_texts: int = Field(1000, ge=1)
    """Texts accepted by one contamination request."""
    request_timeout_s: float = Field(30.0, gt=0)
    """Longest a heavy request (contamination check, judging, a report, an audit sample) may
    work; after it the caller gets 503 and the work stops at its next check."""
    heavy_workers: int = Field(2, ge=1)
    """Heavy requests worked on at once (threads); more wait their turn within their time limit,
    so /health and light routes keep answering."""
    heavy_per_caller: int = Field(1, ge=1)
    """Heavy requests one caller (one token, or one signed-in page user) may have in flight at
    once; another gets 429 with Retry-After until one of them ends. One caller's slow requests
    (a candidate query that runs its whole timeout) then hold at most this many of the
    `heavy_workers` and of a KG's sandbox workers, so another caller's request is not starved."""
    db_wait_s: float = Field(2.0, ge=0)
    """Longest a request waits for another process (a running `kgeval run`) to release the
    results database; then 503 with Retry-After."""
    session_hours: float = Field(8.0, gt=0)
    """Lifetime of a page sign-in session."""
    idle_timeout_s: float = Field(5.0, gt=0)
    """A connection with no request in progress is closed after this long without a byte: one
    just opened that sends nothing, or one kept alive between requests (uvicorn's
    `timeout_keep_alive`, here from the connection's start too)."""
    header_timeout_s: float = Field(10.0, gt=0)
    """From a request's first byte, its request line and headers must all be in within this;
    else 408 and the connection is closed (a client sending a byte at a time holds nothing)."""
    body_timeout_s: float = Field(60.0, gt=0)
    """From the end of a request's headers, its whole body must be in within this; else 408
    and the connection is closed."""
    max_connections: int = Field(200, ge=1)
    """Connections open at once (uvicorn's `limit_concurrency`): a request beyond gets 503 at
    once. Slow connections hold a place only until the timeouts above close them."""
    max_header_bytes: int = Field(16 * 1024, ge=1024)
    """Largest request line and headers (h11's `max_incomplete_event_size`): beyond, 400 and
    the connection closed."""


class ProgressConfig(_Strict):
    """How often a long-running step (a gold rebuild's reference query running to its timeout,
    a run's attempt waiting on its system) says what it is doing, naming what runs and for how
    long, even when nothing finished in between."""

    terminal_every_s: float = Field(10.0, gt=0)
    """On a terminal: seconds between two such lines at most."""
    log_every_s: float = Field(30.0, gt=0)
    """Elsewhere (output to a file or a pipe, CI logs): seconds between two such lines at most."""


YAML_ALIAS_BOUND = 1_000_000
"""Default of the YAML alias bound: a YAML document (a holdout's questions file, a
configuration, a checklist, an access file, an imported benchmark) may stand for at most this
many nodes more than its text has characters. Only aliases make a document stand for more
nodes than it writes: this many is far beyond any honest use of anchors and far below what a
YAML bomb expands to (a 7.5 KB file: hundreds of millions). Read before any configuration file
is (a configuration is YAML too), so it is set in the environment: `YAML_ALIAS_BOUND_VARIABLE`."""
YAML_ALIAS_BOUND_VARIABLE = "KGEVAL_YAML_ALIAS_BOUND"


def yaml_alias_bound() -> int:
    """The YAML alias bound in force: `KGEVAL_YAML_ALIAS_BOUND` when set (a whole number of
    nodes), else `YAML_ALIAS_BOUND`."""
    raw = os.environ.get(YAML_ALIAS_BOUND_VARIABLE, "").strip()
    if not raw:
        return YAML_ALIAS_BOUND
    try:
        bound = int(raw)
    except ValueError:
        bound = -1
    if bound < 0:
        raise InputError(f"{YAML_ALIAS_BOUND_VARIABLE}={raw!r}: not a whole number of nodes (default {YAML_ALIAS_BOUND:,})")
    return bound


class KgevalConfig(_Strict):
    store: StoreConfig = StoreConfig()
    gold: GoldConfig = GoldConfig()
    suite: SuiteConfig = SuiteConfig()
    judges: JudgesConfig = JudgesConfig()
    run: RunConfig = RunConfig()
    systems: SystemsConfig = SystemsConfig()
    guards: GuardsConfig = GuardsConfig()
    audit: AuditConfig = AuditConfig()
    review: ReviewConfig = ReviewConfig()
    service: ServiceConfig = ServiceConfig()
    progress: ProgressConfig = ProgressConfig()


def load_config(path: Path | None) -> KgevalConfig:
    """The defaults, overridden by the YAML file at `path` when one is given."""
    if path is None:
        return KgevalConfig()
    return _examples_beside(_load_yaml_model(Path(path), KgevalConfig, "configuration"), Path(path).parent)


def _examples_beside(config: KgevalConfig, base: Path) -> KgevalConfig:
    """A model's relative `examples` path read from beside the configuration file, as `kgeval
    init` writes them, so a run works from any directory (the run records the absolute path)."""
    systems = {}
    for name in ("gemini", "openai"):
        model = getattr(config.systems, name)
        if model.examples is not None and not model.examples.is_absolute():
            systems[name] = model.model_copy(update={"examples": (base / model.examples).absolute()})
    if not systems:
        return config
    return config.model_copy(update={"systems": config.systems.model_copy(update=systems)})


def load_gate_config(path: Path) -> SchemaGateConfig:
    """The gate thresholds in `path` (schema_gate/config.yaml); the defaults when it is absent."""
    path = Path(path)
    if not present(path):
        return SchemaGateConfig()
    return _load_yaml_model(path, SchemaGateConfig, "gate configuration")


M = TypeVar("M", bound=BaseModel)


def _load_yaml_model(path: Path, model: type[M], what: str) -> M:
    data = read_yaml(path, what)
    if data is None:  # only comments: what a file cut after its header reads as; never "all defaults" unasked
        raise InputError(f"{path}: {what} holds no settings (only comments): damaged or cut short? restore it from a backup; `{{}}` reads as all defaults")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = [_problem(model, error) for error in exc.errors()]
        raise InputError(f"{path}: invalid {what}: " + "; ".join(problems)) from None


def _problem(model: type[BaseModel], error: Any) -> str:
    """One validation error as `key.path: message`; an unknown key with the known keys closest
    to it (a misspelt threshold is an error, never a silent default)."""
    where = ".".join(str(p) for p in error["loc"])
    if error["type"] != "extra_forbidden":
        return f"{where}: {error['msg']}" if where else error["msg"]
    known = _known_keys(model, error["loc"][:-1])
    close = difflib.get_close_matches(str(error["loc"][-1]), known, n=2, cutoff=0.6)
    prefix = ".".join(str(p) for p in error["loc"][:-1])
    spelled = [f"{prefix}.{name}" if prefix else name for name in close]
    hint = f"did you mean {' or '.join(spelled)}?" if spelled else f"known keys{' of ' + prefix if prefix else ''}: {', '.join(known)}"
    return f"{where}: unknown key; {hint}"


def _known_keys(model: type[BaseModel], loc: tuple) -> list[str]:
    """The field names of the model at `loc` inside `model` (none where `loc` leaves the models)."""
    for part in loc:
        field = model.model_fields.get(str(part))
        annotation = getattr(field, "annotation", None)
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return sorted(model.model_fields)
