"""The contamination check: planted leaks of each kind are caught, clean data passes, bad files fail."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from kgeval.config import ContaminationConfig, GuardsConfig
from kgeval.errors import InputError
from kgeval.guards import ContaminationError, ShardScanner, assert_clean, build_index, canonical_sparql, check_contamination
from kgeval.holdout import load_holdout
from tests.conftest import CK25_MISSING, REPO

CK25 = Path(os.environ.get("KGEVAL_CK25", REPO.parent / "shared" / "datasets" / "ck25"))

# hr-02 with prefix and variables renamed, keywords lower-cased and the layout folded.
HR02_RENAMED = (
    "prefix h: <http://example.org/hr/vocab/> prefix l: <http://www.w3.org/2000/01/rdf-schema#> "
    'select ?who where { ?who a h:Employee ; h:worksIn ?d . ?d l:label "Engineering" . }'
)
PLANTED = {
    "question-exact": ("hr/hr-01", {"prompt": "Q:   which DEPARTMENT does karen novak WORK in ??!", "completion": "..."}),
    "question-near": ("hr/hr-03", {"prompt": "Tell me: how many employees are located at the Toronto office.", "completion": "ok"}),
    "sparql": ("hr/hr-02", {"prompt": "Write the query.", "completion": f"```sparql\n{HR02_RENAMED}\n```"}),
    "iri": ("kg hr", {"messages": [{"role": "user", "content": "Who is <http://example.org/hr/entities/Employee/E1015>?"}]}),
    "kg-identifier": ("trials/trials-03", {"prompt": "copied from trials-03 of the holdout", "completion": "x"}),
}


@pytest.fixture(scope="module")
def index():
    return build_index(load_holdout(REPO / "holdout"), GuardsConfig())


def _ck25_records() -> list[dict]:
    if not (CK25 / "questions.yml").is_file():
        pytest.skip(CK25_MISSING)
    doc = yaml.safe_load((CK25 / "questions.yml").read_text(encoding="utf-8"))
    return [{"prompt": q["question"]["en"], "completion": q["query"]["sparql"]} for q in doc["questions"]]


@pytest.fixture(scope="module")
def ck25_holdout(tmp_path_factory):
    """CK25 as a holdout KG (imported into a temporary directory; its 50 reference queries
    declare `pv:` and write the instance IRIs in full)."""
    if not (CK25 / "questions.yml").is_file():
        pytest.skip(CK25_MISSING)
    from kgeval.interop import import_text2sparql

    root = tmp_path_factory.mktemp("ck25-holdout") / "holdout"
    import_text2sparql(CK25, "ck25", root)
    return load_holdout(root)


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_renamed_reference_query_has_the_same_canonical_form():
    hr02 = load_holdout(REPO / "holdout").kg("hr").questions[1]
    assert hr02.id == "hr-02"
    assert canonical_sparql(HR02_RENAMED) == canonical_sparql(hr02.sparql)
    assert canonical_sparql(HR02_RENAMED.replace("Engineering", "Legal")) != canonical_sparql(hr02.sparql)


def test_each_planted_leak_kind_is_caught_in_its_record(index, tmp_path):
    clean = _ck25_records()
    records, expected = list(clean), {}
    for kind, (item, record) in PLANTED.items():
        expected[len(records)] = (kind, item)
        records.append(record)
    records += clean
    report = check_contamination([_jsonl(tmp_path / "train.jsonl", records)], index, GuardsConfig())
    found = {(h.record, h.kind, h.holdout_item) for h in report.hits}
    for record, (kind, item) in expected.items():
        assert (record, kind, item) in found, (kind, sorted(found))
    assert {h.record for h in report.hits} == set(expected), "a clean CK25 record was flagged"
    near = next(h for h in report.hits if h.kind == "question-near")
    assert 0.6 <= near.score < 1 and near.field == "prompt"
    assert next(h for h in report.hits if h.kind == "iri").field == "messages[].content"
    assert report.records == len(records) and not report.clean


def test_clean_file_passes_with_a_summary(index, tmp_path):
    path = _jsonl(tmp_path / "ck25.jsonl", _ck25_records())
    report = assert_clean([path], index, GuardsConfig())
    assert report.clean and report.records == 50 and report.bytes == path.stat().st_size
    assert report.summary().startswith("clean: 1 files, 50 records")


def test_assert_clean_raises_with_the_report(index, tmp_path):
    path = _jsonl(tmp_path / "t.jsonl", [PLANTED["sparql"][1]])
    with pytest.raises(ContaminationError) as caught:
        assert_clean([path], index, GuardsConfig())
    assert caught.value.exit_code == 3 and caught.value.report.hit_count >= 1
    assert "record 1:" in str(caught.value)  # the first record, numbered from 1 as an editor numbers lines


@pytest.mark.parametrize(
    "tail, message",
    [
        ('{"prompt": "trunc', "line 3: not valid JSON"),
        ("not json at all\n", "line 3: not valid JSON"),
        ("[1, 2]\n", "line 3: a record must be a JSON object"),
        ('{"prompt": 5}\n', "line 3: field 'prompt' is not a string"),
        ('{"messages": [{"content": ["a"]}]}\n', "line 3: field 'messages[].content' is not a string"),
    ],
)
def test_truncated_or_malformed_file_fails_loudly(index, tmp_path, tail, message):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "a"}\n{"prompt": "b"}\n' + tail, encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(message)) as caught:
        check_contamination([path], index, GuardsConfig())
    assert str(path) in str(caught.value)


def test_file_without_any_configured_field_is_not_a_pass(index, tmp_path):
    path = _jsonl(tmp_path / "other.jsonl", [{"input": "Which department does Karen Novak work in?"}])
    with pytest.raises(InputError, match="nothing would be checked"):
        check_contamination([path], index, GuardsConfig())
    fields = GuardsConfig(contamination=ContaminationConfig(fields=("input",)))
    assert check_contamination([path], build_index(load_holdout(REPO / "holdout"), fields), fields).hit_count == 1
    # a file mixing formats (a TRL preference record beside prompt records): the record whose text
    # is in `chosen` is not checked, and the summary says so where it had said only "clean"
    mixed = _jsonl(tmp_path / "mixed.jsonl", [{"prompt": "hello"}, {"chosen": "Which department does Karen Novak work in?"}])
    report = check_contamination([mixed], index, GuardsConfig())
    assert report.clean and "NOT CHECKED: 1 records have no text in the fields prompt, completion, messages[].content" in report.summary()


def _empty_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """An empty training file of each kind, with what the refusal says it holds."""
    zero, blank, rows = tmp_path / "zero.jsonl", tmp_path / "blank.jsonl", tmp_path / "none.parquet"
    zero.write_bytes(b"")
    blank.write_text("\n  \n\n", encoding="utf-8")
    pq.write_table(pa.table({"prompt": pa.array([], pa.string())}), rows)
    return {"0 bytes": (zero, "(0 bytes)"), "blank lines": (blank, "(5 bytes, blank lines only)"), "0 rows": (rows, f"({rows.stat().st_size} bytes)")}


@pytest.mark.parametrize("kind", ["0 bytes", "blank lines", "0 rows"])
def test_an_empty_training_file_is_refused_unless_allowed(index, tmp_path, kind):
    """A 0-byte JSONL (a failed export), one of blank lines only, or a Parquet file of 0 rows
    passed as 'clean: 1 files, 0 records': a check certified data nobody checked. It is an
    error naming the file, beside a good file too; contamination.allow_empty accepts it."""
    path, held = _empty_files(tmp_path)[kind]
    good = _jsonl(tmp_path / "good.jsonl", [{"prompt": "hello"}])
    for files in ([path], [good, path]):
        with pytest.raises(InputError) as caught:
            check_contamination(files, index, GuardsConfig())
        assert str(caught.value).startswith(f"{path}: contains no records {held}: an empty training file is usually a failed export")
        assert "--allow-empty" in str(caught.value)
    allowed = GuardsConfig(contamination=ContaminationConfig(allow_empty=True))
    report = check_contamination([good, path], index, allowed)
    assert report.clean and [f.records for f in report.files] == [1, 0]


def test_cli_refuses_an_empty_file_unless_allow_empty(tmp_path):
    empty = tmp_path / "train.jsonl"
    empty.write_bytes(b"")
    refused = kgeval("contamination", "check", str(empty))
    assert refused.returncode == 2 and f"{empty}: contains no records (0 bytes)" in " ".join(refused.stderr.split()), refused.stderr
    assert "Traceback" not in refused.stderr and "clean" not in refused.stdout
    allowed = kgeval("contamination", "check", "--allow-empty", str(empty))
    assert allowed.returncode == 0 and "clean: 1 files, 0 records" in allowed.stdout, allowed.stderr


@pytest.mark.parametrize("value_type", [pa.string(), pa.large_string()], ids=["string", "large_string"])
def test_dictionary_encoded_text_columns_are_read(index, tmp_path, value_type):
    """A Parquet file whose text columns are dictionary-encoded (pandas categoricals, or any
    writer keeping its Arrow schema) was refused: "field 'prompt' is dictionary<values=string,
    indices=int32, ordered=0>, not a string". Its values are read as any text column's."""
    leak, question = PLANTED["question-exact"][1]["prompt"], PLANTED["iri"][1]["messages"][0]["content"]
    prompts = pa.array(["hello", None, "hello", leak], value_type).dictionary_encode()
    content = pa.array(["hi", question, "hi"], value_type).dictionary_encode()
    messages = pa.ListArray.from_arrays([0, 1, 2, 2, 3], pa.StructArray.from_arrays([content], ["content"]))
    path = tmp_path / "categorical.parquet"
    pq.write_table(pa.table({"prompt": prompts, "messages": messages}), path, row_group_size=2)
    assert pa.types.is_dictionary(pq.read_schema(path).field("prompt").type)  # as written, as read
    report = check_contamination([path], index, GuardsConfig())
    assert report.records == 4 and report.files[0].records_without_text == 0
    assert {(h.record, h.field, h.kind) for h in report.hits} == {(3, "prompt", "question-exact"), (1, "messages[].content", "iri")}
    # a table whose chunks hold different dictionaries (as the Spark adapter or a caller may give)
    chunked = pa.chunked_array([pa.array(["hello"], value_type).dictionary_encode(), pa.array([leak], value_type).dictionary_encode()])
    partial = ShardScanner(index, ("prompt",)).scan_batch(pa.table({"prompt": chunked}), "<table>")
    assert partial.records == 2 and [(h.record, h.kind) for h in partial.hits] == [(1, "question-exact")]


def test_record_indices_are_global_across_chunks_and_workers(index, tmp_path):
    filler = [{"prompt": "lorem ipsum " * 40 + str(i), "completion": "dolor"} for i in range(6000)]  # ~3 MB
    leak = PLANTED["question-exact"][1]
    records = filler[:4500] + [leak] + filler[4500:] + [leak]
    path = _jsonl(tmp_path / "big.jsonl", records)
    cfg = GuardsConfig(contamination=ContaminationConfig(chunk_mb=1, workers=2))
    report = check_contamination([path], index, cfg)
    assert report.workers == 2
    assert [h.record for h in report.hits] == [4500, 6001]
    assert report.records == 6002 and report.bytes == path.stat().st_size


def test_a_leak_split_between_two_records_is_in_neither_and_hits_keep_their_record(index, tmp_path):
    """The prefilter scans a field's texts back to back (lines joined by line breaks): a
    holdout question or IRI whose halves end one record and start the next is no record's
    leak, nor one split between two fields of a record; a leak after them is reported at its
    own record and field."""
    records = [
        {"prompt": "Notes. Q: which DEPARTMENT does karen", "completion": "see <http://example.org/hr/entities/Emplo"},
        {"prompt": "novak WORK in ??! was asked", "completion": "yee/E1015> for that"},
        {"prompt": "which department does karen", "completion": "novak work in"},
        {"prompt": "unrelated", "completion": PLANTED["question-exact"][1]["prompt"]},
        {"prompt": "Who is <http://example.org/hr/entities/Employee/E1015>?", "completion": "ok"},
    ]
    report = check_contamination([_jsonl(tmp_path / "split.jsonl", records)], index, GuardsConfig())
    assert [(h.record, h.field, h.kind, h.holdout_item) for h in report.hits] == [
        (3, "completion", "question-exact", "hr/hr-01"),
        (4, "prompt", "iri", "kg hr"),
    ]


def test_parquet_is_read_in_batches_and_checked(index, tmp_path):
    rows = _ck25_records() + [{"prompt": None, "completion": None, "messages": [{"role": "user", "content": HR02_RENAMED}]}]
    table = pa.Table.from_pylist(
        [{"prompt": r.get("prompt"), "completion": r.get("completion"), "messages": r.get("messages", [])} for r in rows]
    )
    path = tmp_path / "train.parquet"
    pq.write_table(table, path, row_group_size=16)
    report = check_contamination([path], index, GuardsConfig())
    assert report.files[0].format == "parquet" and report.records == 51
    assert {(h.record, h.kind) for h in report.hits} >= {(50, "sparql")}
    assert {h.record for h in report.hits} == {50}

    truncated = tmp_path / "cut.parquet"
    truncated.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(InputError, match="cut.parquet: not a readable Parquet file"):
        check_contamination([truncated], index, GuardsConfig())


def kgeval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgeval", *args], capture_output=True, text=True, cwd=REPO, timeout=300)


def test_cli_contamination_check_exit_codes(tmp_path):
    clean = _jsonl(tmp_path / "clean.jsonl", _ck25_records())
    leaky = _jsonl(tmp_path / "leaky.jsonl", _ck25_records() + [record for _, record in PLANTED.values()])
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(leaky.read_bytes()[:-7])

    ok = kgeval("contamination", "check", str(clean))
    assert ok.returncode == 0, ok.stderr
    assert "clean: 1 files, 50 records" in ok.stdout

    hit = kgeval("contamination", "check", str(clean), str(leaky), "--report-json", str(tmp_path / "r.json"))
    assert hit.returncode == 3, hit.stderr
    assert f"{leaky}: record 53: completion: sparql:" in hit.stdout and "-> hr/hr-02" in hit.stdout
    assert "CONTAMINATED" in hit.stdout
    assert json.loads((tmp_path / "r.json").read_text())["hit_count"] >= 5

    bad = kgeval("contamination", "check", str(broken))
    assert bad.returncode == 2 and "line 55: not valid JSON" in bad.stderr

    missing = kgeval("contamination", "check", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "no such file" in missing.stderr


def _renamed(sparql: str) -> str:
    """Variables renamed (reversed order of appearance), prefixes renamed, layout and keyword
    case changed (comments dropped: a comment ends at its line's end)."""
    out = re.sub(r"(?m)(^|\s)#[^\n]*$", r"\1", sparql)
    variables = list(dict.fromkeys(re.findall(r"\?(\w+)", sparql)))
    for i, var in enumerate(sorted(variables, key=len, reverse=True)):
        out = re.sub(rf"\?{var}\b", f"?zz{len(variables) - i}", out)
    for i, prefix in enumerate(set(re.findall(r"PREFIX\s+(\w*):", sparql))):
        out = re.sub(rf"(?<![\w:#]){prefix}:", f"ns{i}x:", out)
    out = re.sub(r"\b(PREFIX|SELECT|WHERE|DISTINCT|FILTER|ASK)\b", lambda m: m.group(1).lower(), out)
    return " ".join(out.split())


def test_every_reference_query_renamed_keeps_its_canonical_form():
    # Regression: rdflib orders BGP triples by variable name and fills an ASK's projection from
    # a set, so before canonicalization handled both, renamed variants of some queries were missed.
    for q in load_holdout(REPO / "holdout").questions():
        assert canonical_sparql(_renamed(q.sparql)) == canonical_sparql(q.sparql), q.id


def test_every_ck25_reference_query_renamed_keeps_its_canonical_form(ck25_holdout):
    """rdflib names a blank node (`[]`) at random on each parse: ck25-27 (`FILTER NOT EXISTS
    { [] pv:hasManager ?empl }`) and ck25-40 (`pv:hasProductManager/pv:name []`) had canonical
    forms no other text shared, so no copy of them was ever found, even with the declarations
    kept. Blank nodes are named in order of appearance now, as variables are."""
    for q in ck25_holdout.questions():
        assert canonical_sparql(_renamed(q.sparql)) == canonical_sparql(q.sparql), q.id


def _escaped_json(record: dict) -> str:
    """One JSONL line with every `/` written `\\/`, every `a`, quote and non-ASCII character as
    a `\\u` escape: the raw bytes hold no needle, only the parsed text does."""
    line = json.dumps(record, ensure_ascii=True).replace("/", "\\/").replace("a", "\\u0061")
    return re.sub(r'(?<!\\)\\"', lambda m: "\\u0022", line)


def test_needles_hidden_behind_json_escapes_are_caught(index, tmp_path):
    """The matchers see parsed text, never raw JSON: an IRI written with `\\/`, a question
    and an identifier with `\\u` escapes (quotes too) are all found."""
    records = [
        {"prompt": 'Who is "<http://example.org/hr/entities/Employee/E1015>"?', "completion": "x"},
        {"prompt": "Q: which DEPARTMENT does karen novak WORK in?", "completion": "caf\u00e9"},
        {"prompt": 'copied from "trials-03" of the holdout', "completion": "x"},
        {"prompt": "clean caf\u00e9 line", "completion": HR02_RENAMED},
    ]
    path = tmp_path / "escaped.jsonl"
    raw = "".join(_escaped_json(r) + "\n" for r in records)
    assert not any(n in raw for n in ("http://", "example.org", "karen", "trials-03"))
    path.write_text(raw, encoding="ascii")
    found = {(h.record, h.kind) for h in check_contamination([path], index, GuardsConfig()).hits}
    assert {(0, "iri"), (1, "question-exact"), (2, "kg-identifier"), (3, "sparql")} <= found, sorted(found)


def test_a_line_repeated_in_many_records_is_reported_in_each(index, tmp_path):
    """Distinct prefiltered lines are matched once per batch; every record holding one still gets its hit."""
    leak = "Context line.\ncopied from trials-03 of the holdout\nmore context"
    records = [{"prompt": leak if i % 3 == 0 else "Context line.\nnothing here", "completion": "ok"} for i in range(300)]
    report = check_contamination([_jsonl(tmp_path / "repeated.jsonl", records)], index, GuardsConfig())
    assert [h.record for h in report.hits] == list(range(0, 300, 3))
    assert {h.kind for h in report.hits} == {"kg-identifier"}


def test_command_line_options_override_the_configuration():
    from kgeval.cli._guards import with_options

    configured = ContaminationConfig(workers=4, fields=("prompt",))
    assert with_options(configured, None, None) == configured
    assert with_options(configured, [], 0).workers == 0  # 0 (one per core) overrides, it is not "no option"
    overridden = with_options(configured, ["text", "meta.note"], 2)
    assert (overridden.workers, overridden.fields) == (2, ("text", "meta.note"))


def test_a_query_is_found_whether_the_prefilter_covers_its_key_or_not(index, tmp_path):
    """A text is parsed as SPARQL only when it holds a query's key. Keys holding a prefilter
    literal (a holdout namespace) are looked for in the text's kept lines, the others in the
    whole text: a query spread over lines, its key on a line of its own, is found either way."""
    spread = "Here:\n" + HR02_RENAMED.replace(" select", "\nselect").replace(" ?d l:label", "\n?d l:label")
    path = _jsonl(tmp_path / "t.jsonl", [{"prompt": "Write the query.", "completion": spread}, {"prompt": "clean", "completion": "x"}])
    off = GuardsConfig(contamination=ContaminationConfig(sample_mb=0, workers=1))  # keeps the index's keys
    assert index.text_query_prefilter is None  # every key of the shipped holdout is a covered one
    local_names = replace(index, query_keys=frozenset(min(n, key=lambda x: ("/" in x, -len(x))) for n in index.needles if n))
    assert "Engineering" in local_names.text_query_prefilter.literals  # hr-02's key: a literal of its query
    for idx in (index, local_names):
        report = check_contamination([path], idx, off)
        assert [(h.record, h.kind, h.holdout_item) for h in report.hits] == [(0, "namespace", "kg hr"), (0, "sparql", "hr/hr-02")]


def test_a_lone_surrogate_in_a_text_is_read_not_a_crash():
    """"\\ud800" is legal JSON (a training file, an example-bank line, a service request) but
    not UTF-8: the matcher crashed (UnicodeEncodeError; the service answered 500). It is read as
    U+FFFD, and the holdout question beside it is still found."""
    from tests.conftest import REPO

    index = build_index(load_holdout(REPO / "holdout"), GuardsConfig())
    found = index.match_text("\ud800 Which department does Karen Novak work in?\nand \udfff more")
    assert [m.holdout_item for m in found] == ["hr/hr-01"]
    assert index.match_text("nothing of the holdout \ud800") == []


# --- Copies the check must see through: declarations removed (the holdout's own prefixes) ---

_DECLARATION = re.compile(r"(?i)\b(?:PREFIX\s+[^\s:]*:\s*<[^>]*>|BASE\s*<[^>]*>)")

COMMON_VOCABULARY = [
    "SELECT ?label WHERE { ?x rdfs:label ?label }",
    "?p a foaf:Person ; foaf:name ?name ; schema:worksFor ?org .",
    'FILTER(datatype(?v) = xsd:integer) # cast with xsd:decimal, xsd:dateTime, xsd:string',
    "?c a owl:Class ; rdfs:subClassOf skos:Concept ; skos:prefLabel ?l .",
    "SELECT ?city WHERE { dbr:Berlin dbo:country ?c . ?c rdfs:label ?city } LIMIT 10",
    "SELECT (COUNT(?s) AS ?n) WHERE { ?s rdf:type ?t }",
]


def _without_declarations(sparql: str) -> str:
    """A reference query with its PREFIX and BASE declarations removed (a copy whose names
    are all written with the holdout's own prefixes, which it no longer declares)."""
    return _DECLARATION.sub("", sparql).strip()


@pytest.fixture(scope="module")
def holdouts(ck25_holdout):
    """(holdout, another holdout whose material is clean training data for it): the sample
    holdout (four KGs) against CK25 and the other way round."""
    sample = load_holdout(REPO / "holdout")
    return {"sample": (sample, ck25_holdout), "ck25": (ck25_holdout, sample)}


def _same_query(holdout) -> dict[str, set[str]]:
    """Each question's item -> the items whose reference query has the same canonical form
    (a copy of one is a copy of all of them)."""
    by_form: dict[str, set[str]] = {}
    for q in holdout.questions():
        by_form.setdefault(canonical_sparql(q.sparql), set()).add(f"{q.kg}/{q.id}")
    return {item: by_form[canonical_sparql(q.sparql)] for q in holdout.questions() for item in [f"{q.kg}/{q.id}"]}


def _leaks_among_clean(tmp_path: Path, holdout, clean, disguise) -> tuple[Path, dict[int, str], set[int]]:
    """A JSONL file of the clean holdout's questions and queries (as given and without their
    declarations) and common-vocabulary lines, with one record per reference query of
    `holdout` disguised by `disguise`; the leaks' records -> item, and the clean records."""
    records: list[dict] = []
    leaks: dict[int, str] = {}
    for q in clean.questions():
        records += [{"prompt": q.question, "completion": q.sparql}, {"prompt": q.question, "completion": _without_declarations(q.sparql)}]
    records += [{"prompt": "Common vocabularies.", "completion": line} for line in COMMON_VOCABULARY]
    clean_records = set(range(len(records)))
    for i, q in enumerate(holdout.questions()):
        leaks[len(records)] = f"{q.kg}/{q.id}"
        records.append({"prompt": "Write the SPARQL query.", "completion": disguise(q.sparql, i)})
    return _jsonl(tmp_path / "train.jsonl", records), leaks, clean_records


def _caught(report, leaks: dict[int, str], same: dict[str, set[str]], kind: str) -> list[str]:
    """The leaks' items reported as `kind` with their own item (or one of the same query)."""
    hits = {(h.record, h.holdout_item) for h in report.hits if h.kind == kind}
    return [item for record, item in leaks.items() if any((record, other) in hits for other in same[item])]


@pytest.mark.parametrize("which", ["sample", "ck25"])
@pytest.mark.parametrize("layout", ["as written", "renamed"])
def test_a_reference_query_copied_without_its_declarations_is_caught(holdouts, tmp_path, which, layout):
    """Acceptance found 53 of the 66 sample reference queries uncaught when copied without
    their PREFIX lines (`SELECT ?p WHERE { ?p hr:worksIn hr:Sales }`): the SPARQL matcher's
    needles were namespaces, which such a copy does not hold. Every one of the sample's 66 and
    CK25's 50 is caught as its query (layout kept, or variables renamed and keywords and layout
    changed), while the other holdout's queries, with and without their declarations, and lines
    of common vocabularies (rdfs:label, foaf:name, xsd:integer, dbo:country ...) stay clean."""
    holdout, clean = holdouts[which]

    def disguise(sparql: str, i: int) -> str:
        bare = _without_declarations(sparql)
        return bare if layout == "as written" else _renamed(bare)  # no declaration left: variables renamed, layout folded

    path, leaks, clean_records = _leaks_among_clean(tmp_path, holdout, clean, disguise)
    report = check_contamination([path], build_index(holdout, GuardsConfig()), GuardsConfig())
    caught = _caught(report, leaks, _same_query(holdout), "sparql")
    assert len(caught) == len(leaks), sorted(set(leaks.values()) - set(caught))
    assert not {h.record for h in report.hits} & clean_records, [h for h in report.hits if h.record in clean_records][:5]


def test_a_query_without_declarations_that_differs_from_the_reference_is_not_flagged():
    """The prefixed-name path is the same canonical comparison: hr-02 with another department,
    or with one triple pattern left out, is not hr-02; nor is a line naming holdout terms."""
    index = build_index(load_holdout(REPO / "holdout"), GuardsConfig())
    hr02 = _without_declarations(load_holdout(REPO / "holdout").kg("hr").questions[1].sparql)
    assert [m.holdout_item for m in index.match_text(hr02) if m.kind == "sparql"] == ["hr/hr-02"]
    assert not [m for m in index.match_text(hr02.replace("Engineering", "Legal")) if m.kind == "sparql"]
    assert not [m for m in index.match_text(hr02.replace("?employee a hr:Employee ;", "?employee")) if m.kind == "sparql"]
    assert index.match_text("SELECT ?x WHERE { ?x rdfs:label ?l }") == []


# --- Copies the check must see through: hidden characters and look-alike letters ---

LOOKALIKE = {"a": "\u0430", "c": "\u0441", "e": "\u0435", "o": "\u043e", "p": "\u0440", "x": "\u0445", "y": "\u0443",
             "i": "\u0456", "j": "\u0458", "s": "\u0455", "A": "\u0410", "B": "\u0412", "C": "\u0421", "E": "\u0415",
             "H": "\u041d", "I": "\u0406", "K": "\u039a", "M": "\u041c", "O": "\u039f", "P": "\u03a1", "T": "\u0422",
             "X": "\u03a7", "Y": "\u03a5", "N": "\u039d", "Z": "\u0396", "v": "\u03bd"}
"""Latin letters -> a Cyrillic or Greek letter drawn alike (Cyrillic where both have one, Greek for K, O, P, X, Y, N, Z, v)."""

DISGUISES = {
    "full-width": lambda s, i: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" if c == " " else c for c in s),
    "zero-width spaces": lambda s, i: re.sub(r"(?<=\w)(?=\w)", "\u200b", s),
    "look-alike letters": lambda s, i: "".join(LOOKALIKE.get(c, c) for c in s),
    "soft hyphens": lambda s, i: re.sub(r"(\w{3})(?=\w{2})", "\\1\u00ad", s),
    "format characters": lambda s, i: "\ufeff" + re.sub(r"(?<=\w)(?=\w)", lambda m: "\u200c\u200d\u2060\u200e\u202a\u202c"[m.start() % 6], s),
    "no declarations, full-width": lambda s, i: DISGUISES["full-width"](_without_declarations(s), i),
}


@pytest.mark.parametrize("which", ["sample", "ck25"])
@pytest.mark.parametrize("disguise", sorted(DISGUISES))
def test_a_copy_in_hidden_characters_or_look_alike_letters_is_caught(holdouts, tmp_path, which, disguise):
    """Acceptance found none of the 66 questions or queries caught when written in full-width
    forms, with zero-width spaces, or with Cyrillic/Greek letters drawn like Latin ones, and 15
    of 66 with soft hyphens: the prefilter folds only case, so the matchers' NFKC never saw those
    lines. Texts are folded (NFKC, format characters dropped, look-alikes read as Latin) before the
    prefilter now: every question is found as itself (exact or near) and every query as its
    query, while the other holdout's material, disguised the same way, and passages in Russian,
    Greek, Chinese and German stay clean."""
    holdout, clean = holdouts[which]
    change = DISGUISES[disguise]
    records, questions, queries = [], {}, {}
    for q in clean.questions():
        records.append({"prompt": change(q.question, 0), "completion": change(q.sparql, 0)})
    records += [{"prompt": text, "completion": "ok"} for text in FOREIGN_PASSAGES]
    clean_records = set(range(len(records)))
    for i, q in enumerate(holdout.questions()):
        if not disguise.startswith("no declarations"):
            questions[len(records)] = f"{q.kg}/{q.id}"
            records.append({"prompt": "Question: " + change(q.question, i), "completion": "ok"})
        queries[len(records)] = f"{q.kg}/{q.id}"
        records.append({"prompt": "Write the SPARQL query.", "completion": change(q.sparql, i)})
    report = check_contamination([_jsonl(tmp_path / "train.jsonl", records)], build_index(holdout, GuardsConfig()), GuardsConfig())
    asked = {(h.record, h.holdout_item) for h in report.hits if h.kind in ("question-exact", "question-near")}
    missed = [item for record, item in questions.items() if (record, item) not in asked]
    assert not missed, missed
    found = _caught(report, queries, _same_query(holdout), "sparql")
    assert len(found) == len(queries), sorted(set(queries.values()) - set(found))
    assert not {h.record for h in report.hits} & clean_records, [h for h in report.hits if h.record in clean_records][:5]


FOREIGN_PASSAGES = [
    (
        "\u0421\u043e\u0442\u0440\u0443\u0434\u043d\u0438\u043a \u043e\u0442\u0434\u0435\u043b\u0430 \u043f\u0440\u043e\u0434\u0430\u0436 "
        "\u0440\u0430\u0431\u043e\u0442\u0430\u0435\u0442 \u0432 \u043e\u0444\u0438\u0441\u0435 \u0432 \u0422\u043e\u0440\u043e\u043d\u0442\u043e."
    ),
    (
        "\u039f \u03c5\u03c0\u03ac\u03bb\u03bb\u03b7\u03bb\u03bf\u03c2 \u03b5\u03c1\u03b3\u03ac\u03b6\u03b5\u03c4\u03b1\u03b9 "
        "\u03c3\u03c4\u03bf \u03c4\u03bc\u03ae\u03bc\u03b1 \u039c\u03b7\u03c7\u03b1\u03bd\u03b9\u03ba\u03ae\u03c2."
    ),
    "\u54ea\u4e2a\u90e8\u95e8\uff1f\u5458\u5de5\u5728\u591a\u4f26\u591a\u529e\u516c\u5ba4\u5de5\u4f5c\u3002",
    "Welche Abteilung? Die Mitarbeiterin arbeitet im B\u00fcro in Stra\u00dfburg, Gr\u00f6\u00dfe egal.",
    "\ud83d\udc69\u200d\ud83d\udcbb Team update\u2026 caf\u00e9 na\u00efve \ufb01nance \u00bd price",
]
"""Clean text with Cyrillic and Greek letters (some drawn like Latin ones), full-width
punctuation, a zero-width joiner in an emoji, an ellipsis, ligature and fraction NFKC changes."""

# --- Short generic questions: not near-duplicates of a short holdout question ---

SHORT_REWORDINGS = {
    "hr/hr-08": ["How many employees are in each department?", "how many employees does every department have"],
    "trials/trials-10": ["How many trials are there per phase?", "how many trials are in each phase"],
    "catalogue/catalogue-05": ["How many discontinued products are there?", "How many products were discontinued?"],
    "catalogue/catalogue-09": ["How many units are in stock in each warehouse?", "how many units in stock per warehouse"],
    "catalogue/catalogue-07": ["Is any discontinued product still in stock at all?"],
    "catalogue/catalogue-08": ["Which products launched before 2016?", "What products were launched before 2016?"],
    "complaints/complaints-04": ["Number of complaints received in 2023?", "How many complaints were received during 2023?"],
    "complaints/complaints-09": ["List the complaints about payday loans.", "Show all complaints about payday loans"],
    "complaints/complaints-17": ["How many complaints did the consumers dispute?"],
    "complaints/complaints-05": ["How many complaints has every financial product received?"],
    "complaints/complaints-08": ["Which five states did most complaints come from?"],
    "complaints/complaints-02": ["What date was complaint 3517884 received on?"],
    "hr/hr-01": ["In which department does Karen Novak work?"],
    "hr/hr-03": ["Tell me how many employees are located at the Toronto office."],
    "hr/hr-04": ["Is Karen Duarte working remotely?"],
    "hr/hr-09": ["What's the average salary in the Finance department?"],
    "trials/trials-01": ["Who is the sponsor of trial NCT05937709?"],
    "trials/trials-05": ["How many phase 3 trials does the registry have?"],
    "trials/trials-06": ["Is trial NCT05964932 recruiting currently?"],
    "catalogue/catalogue-04": ["What are the 5 most expensive products and what do they cost?"],
    "catalogue/catalogue-11": ["Which three brands have most products in the catalogue and how many each?"],
    "catalogue/catalogue-01": ["How much does the Falkwerk Dumbbell Set Z476 cost, i.e. its price?"],
    "trials/trials-03": ["Give me all the trials studying type 2 diabetes"],
    "ck25/ck25-5": ["Who has got expertise in transistors?"],
    "ck25/ck25-6": ["Who's our sensor expert?"],
    "ck25/ck25-13": ["How many suppliers are there in France?"],
    "ck25/ck25-16": ["Do we have any suppliers in Toulouse?"],
    "ck25/ck25-18": ["Which is the cheapest oscillator we have?"],
    "ck25/ck25-1": ["Which department is Ms. Brant in?"],
    "ck25/ck25-3": ["Who's Heinrich Hoch's manager?"],
    "ck25/ck25-19": ["Which is the most expensive service that we offer?"],
    "ck25/ck25-25": ["What coil has the highest density?"],
    "ck25/ck25-33": ["Are there any departments with no manager assigned?"],
}
"""Light rewordings of holdout questions with two to four content words (and two longer ones),
as a data builder would leave a copied question: each is caught."""

GENERIC_SHORT_QUESTIONS = [
    'employees per department', 'number of employees', 'list all departments', 'average salary per department',
    'salary by department', 'departments and their managers', 'employees hired in 2020', 'who works remotely',
    'list remote employees', 'offices by city', 'employee count per office', 'stock per warehouse',
    'products per brand', 'discontinued products', 'products in stock', 'cheapest product', 'most expensive products',
    'products launched in 2019', 'brands by country', 'warehouse cities', 'complaints per state',
    'complaints by product', 'complaints received', 'complaints about mortgages', 'disputed complaints',
    'companies with the most complaints', 'trials per phase', 'trials by sponsor', 'recruiting trials',
    'phase 2 trials', 'trial enrollment', 'conditions studied', 'suppliers per country', 'suppliers in Germany',
    'experts in sensors', 'department managers', 'product prices', 'How many employees are there?',
    'Which departments exist?', 'What does each product cost?', 'List products by price',
    'How many offices are there?', 'Who manages the Sales department?', 'What is the budget of each department?',
    'Employees with a salary above 100000', 'Average price per category', 'Count of products per category',
    'Number of complaints per company', 'Number of trials per condition', 'Which sponsors run the most trials?',
    'Employees in the Marketing department', 'Who is the manager of the IT department?', 'Products out of stock',
    'Products supplied from Germany', 'Complaints submitted by phone', 'Complaints with monetary relief',
    'Trials started in 2021', 'Trials with more than 100 patients', 'Suppliers of capacitors',
    'Average enrollment per phase', 'Top five brands by revenue', 'Total stock of each product',
    'Employees per office', 'Units per warehouse', 'Departments per office', 'Complaints per year',
    'Trials per sponsor', 'Products per supplier', 'Managers per department', 'Employees by hire year',
    'phase of each trial', 'price of each product', 'state of each complaint', 'department of each employee',
    'salary of each employee', 'stock of each product', 'sponsor of each trial', 'How many products are there?',
    'How many complaints are there?', 'How many trials are there?', 'How many departments are there?',
    'List all employees', 'List all products', 'List all trials', 'List all complaints', 'Show the warehouses',
    'Show all brands', 'Which employees work in Sales?', 'Which products cost more than 50 euros?',
    'Which trials are completed?', 'Which complaints were closed?', 'What is the email of the HR manager?',
    'Who sponsors the most trials?', 'Which country has the most suppliers?',
    'Which department has the highest budget?', 'Which warehouse holds the most units?',
    'Which state has the most complaints?', 'Which phase has the most trials?',
]
"""Short questions a text-to-SPARQL training set over HR, catalogue, complaint, trial and
supplier KGs holds, written without looking at how the holdout words its questions: many share
all content words of a short holdout question ("employees per department", "trials per phase")."""


def test_short_generic_questions_are_not_near_duplicates_but_rewordings_are(holdouts, tmp_path):
    """Acceptance found "employees per department" flagged as hr-08 ("How many employees does
    each department have?") at score 1.00: content-word Jaccard on two words is 1 for any phrase
    with both. Of the generic questions above, 14 of 148 were flagged against the sample holdout
    and 5 of 164 against CK25. A near-duplicate of a question with fewer than 5 content words must
    now also hold 55% of its words, function words included, around the match: none is flagged,
    and every rewording still is (as its own item); the CK25 questions stay clean too."""
    for holdout, clean in holdouts.values():
        items = {f"{q.kg}/{q.id}" for q in holdout.questions()}
        rewordings = [(item, text) for item, texts in SHORT_REWORDINGS.items() if item in items for text in texts]
        generic = GENERIC_SHORT_QUESTIONS + [q.question for q in clean.questions()]
        records = [{"prompt": text} for _, text in rewordings] + [{"prompt": text} for text in generic]
        report = check_contamination([_jsonl(tmp_path / "short.jsonl", records)], build_index(holdout, GuardsConfig()), GuardsConfig())
        found = {(h.record, h.holdout_item) for h in report.hits}
        assert [r for i, r in enumerate(rewordings) if (i, r[0]) not in found] == []
        flagged = sorted({(records[h.record]["prompt"], h.holdout_item) for h in report.hits if h.record >= len(rewordings)})
        assert flagged == [], flagged


def test_a_wikidata_query_with_the_label_service_is_caught_and_wdqs_vocabulary_is_no_leak(tmp_path):
    """Reference queries using WDQS's label service (importable since the guard emulates it):
    a copy without its PREFIX lines was missed, since the matcher read the emulated query (its
    needles held rdfs:label, which the copy does not), and a training query of any Wikidata
    topic was flagged as a leak of the KG's "namespace" `http://www.bigdata.com/rdf#` (bd:)."""
    from typer.testing import CliRunner

    from kgeval.cli import app
    from tests.interop.test_wikidata_label_service import LABELS, QUESTIONS, TTL

    (tmp_path / "kgs").mkdir()
    (tmp_path / "kgs" / "films.ttl").write_text(TTL, encoding="utf-8")
    questions = [*QUESTIONS, ("4", "Which films did Nolan direct?", f"SELECT ?film ?filmLabel WHERE {{ ?film wdt:P57 wd:Q25191 . {LABELS} }}")]
    doc = {"questions": [{"id": i, "kg": "films", "question": [{"language": "en", "string": t}], "query": {"sparql": s}} for i, t, s in questions]}
    (tmp_path / "q.json").write_text(json.dumps(doc), encoding="utf-8")
    done = CliRunner().invoke(app, ["holdout", "import", "qald", str(tmp_path / "q.json"), "--kg-dir", str(tmp_path / "kgs"),
                                    "--out", str(tmp_path / "h"), "--prefixes", "wikidata"])  # fmt: skip
    assert done.exit_code == 0, done.output
    holdout = load_holdout(tmp_path / "h")
    leaks = [text for q in holdout.questions() if "wikibase" in q.sparql for text in (q.sparql, _without_declarations(q.sparql))]
    generic = [
        "SELECT ?c ?cLabel WHERE { ?c wdt:P31 wd:Q6256 . " + LABELS + " }",
        "PREFIX bd: <http://www.bigdata.com/rdf#>\nPREFIX wikibase: <http://wikiba.se/ontology#>\nSELECT ?c ?cLabel WHERE { ?c wdt:P31 wd:Q515 . " + LABELS + " }",
    ]
    path = _jsonl(tmp_path / "train.jsonl", [{"prompt": "Write the query.", "completion": text} for text in [*leaks, *generic]])
    report = check_contamination([path], build_index(holdout, GuardsConfig()), GuardsConfig())
    sparql_hits = {h.record for h in report.hits if h.kind == "sparql"}
    assert len(leaks) == 4 and sparql_hits == set(range(len(leaks))), [(h.record, h.kind) for h in report.hits]
    assert not {h.record for h in report.hits} & {len(leaks), len(leaks) + 1}, [(h.record, h.kind, h.matched) for h in report.hits]


# --- Short paraphrases (issue 32, item 5) ---


def test_a_short_question_with_a_lead_in_and_its_function_words_swapped_is_found(ck25_holdout, tmp_path):
    """Regression: "Please tell me: Which was telephone for Baldwin Dirksen?" holds 3 of the 7
    words of ck25-2 ("What is the telephone of Baldwin Dirksen?"), below the 55% a short
    question's copy had to hold, so it passed as clean. Any function word now stands for any
    other when every content word is there; a question that replaced the content word (another
    attribute of the same person) is not the question."""
    records = [{"prompt": "Please tell me: Which was telephone for Baldwin Dirksen?"}, {"prompt": "What is the email of Baldwin Dirksen?"},
               {"prompt": "Do you know the telephone of Heinrich Hoch?"}, {"prompt": "In which department is Ms. Yilmaz?"}]
    report = check_contamination([_jsonl(tmp_path / "t.jsonl", records)], build_index(ck25_holdout, GuardsConfig()), GuardsConfig())
    assert sorted((h.record, h.holdout_item) for h in report.hits) == [(0, "ck25/ck25-2")]


def test_short_paraphrases_are_all_found_and_unrelated_questions_never(holdouts, tmp_path):
    """Every question of both holdouts with function words swapped, dropped or added, the
    auxiliaries' tense changed, contracted, and behind ten lead-ins (bench/paraphrases.py: about
    3,500 texts) is found as its own question; several hundred unrelated questions of the same
    domains (other people's telephones, CK25's people's other attributes, other departments,
    products and cities, other KGs) and the other holdout's paraphrases are not flagged. Before
    the fix: CK25 recall 95.9% (91.1% on questions of <= 8 words), 51 unrelated flagged."""
    from bench.paraphrases import measure, paraphrases, unrelated_questions

    for which, (holdout, other) in holdouts.items():
        unrelated = (unrelated_questions() if which == "ck25" else []) + [t for q in other.questions() for _, t in paraphrases(q.question)]
        figures = measure(holdout, unrelated, GuardsConfig(), tmp_path)
        assert figures.short > 500 and len(unrelated) > 1500
        assert (figures.missed, figures.flagged) == ([], []), "\n".join(figures.lines(which))
