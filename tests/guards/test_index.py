"""The holdout index's matchers on hostile texts: linear-time prefilter, windows that are not cubic."""

from __future__ import annotations

import random
import re
import string
import subprocess
import sys

import pytest

from kgeval.config import GuardsConfig
from kgeval.guards import build_index
from kgeval.guards._index import _best_window
from kgeval.guards._text import NOT_A_QUERY, STOPWORDS, canonical_sparql, declarations, feature, folded, jaccard, query_key, tokens
from kgeval.holdout import load_holdout
from tests.conftest import REPO


@pytest.fixture(scope="module")
def index():
    return build_index(load_holdout(REPO / "holdout"), GuardsConfig())


TEN_MB_SCRIPT = """
import random, string, sys
from pathlib import Path
from kgeval.config import GuardsConfig
from kgeval.guards import build_index
from kgeval.holdout import load_holdout
index = build_index(load_holdout(Path(sys.argv[1])), GuardsConfig())
rng = random.Random(5)
noise = "".join(rng.choice(string.ascii_lowercase + "     ") for _ in range(1_000_000))
text = noise * 5 + " Which department does Karen Novak work in? " + noise * 5
print(len(text), sorted((m.kind, m.holdout_item) for m in index.match_text(text)))
"""


def test_a_ten_megabyte_text_without_line_breaks_is_matched_in_linear_time():
    """Regression: the prefilter ran in Python's `re`, which tries each of its hundreds of
    alternatives at every position: about 20 s per MB of text without a line break, so this
    10 MB text took minutes (the service's `/contamination/check` with one big text). In RE2
    it takes seconds; the 120 s limit only tells 'linear' from 'stuck', it is no benchmark."""
    done = subprocess.run(
        [sys.executable, "-c", TEN_MB_SCRIPT, str(REPO / "holdout")], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    size, found = done.stdout.split(" ", 1)
    assert int(size) > 10_000_000
    assert "('question-exact', 'hr/hr-01')" in found


def _brute_best_window(words, feats, hits, q):
    """The definition: every window starting and ending on a question feature, within span."""
    best, best_start, best_end = 0.0, 0, -1
    for a, start in enumerate(hits):
        for end in hits[a:]:
            if end - start >= q.length + 3:
                break
            score = jaccard(q.features, frozenset(f for f in feats[start : end + 1] if f))
            if score > best:
                best, best_start, best_end = score, start, end
    return best, best_start, best_end


def test_incremental_best_window_equals_the_definition(index):
    rng = random.Random(11)
    for q in index.questions:
        vocabulary = sorted(q.features) + ["zebra", "quartz", "the", "of", "lamp"]
        for _ in range(20):
            words = tokens(" ".join(rng.choice(vocabulary) for _ in range(rng.randrange(1, 60))))
            feats = [None if w in STOPWORDS else feature(w) for w in words]
            hits = [i for i, f in enumerate(feats) if f in q.features]
            assert _best_window(words, feats, hits, q) == _brute_best_window(words, feats, hits, q), (q.id, words)


def test_prefilter_mask_agrees_with_may_match(index):
    texts = ["nothing here", "see trials-03 please", "http://example.org/hr/entities/Employee/E1015", "", "KAREN NOVAK"]
    mask = index.prefilter_mask(texts)
    assert list(mask) == [index.may_match(t) for t in texts]
    assert not mask[0] and mask[1] and mask[2]


def test_line_mask_keeps_every_line_a_question_matches_in(index):
    """The Arrow word count in front of the Python matchers is sound: every random line in
    which `match_line` finds a question (exact or near) is kept; most lines with a single
    question word are not (that is what it is for)."""
    rng = random.Random(4)
    lines, found = [], []
    for q in index.questions:
        vocabulary = sorted(q.features) + [w + "s" for w in sorted(q.features)] + ["zebra", "the", "Of", "lamp", "ING"]
        for _ in range(30):
            line = " ".join(rng.choice(vocabulary) for _ in range(rng.randrange(1, 25)))
            lines.append(line.upper() if rng.random() < 0.2 else line)
    lines += ["In which department does Karen Novak work?", "karen", "departments, only", "Caf\u00e9 Novak Karen department"]
    import pyarrow as pa

    mask = index.line_mask(pa.array(lines))
    _, only, literal = index.line_candidates(pa.array(lines))
    for i, (line, kept) in enumerate(zip(lines, mask)):
        matched = [m for m in index.match_line(line) if m.kind.startswith("question")]
        found.append(bool(matched))
        assert kept or not matched, (line, matched)
        # The questions the count leaves a kept line are the only ones it can match.
        assert not kept or index.match_line(line, only.get(i), literal[i]) == index.match_line(line), line
    assert sum(found) > 100 and not mask[-3] and not mask[-2] and mask[-1] and mask[-4]


# DBpedia names many resources with brackets; QALD-style queries write them as prefixed names
# with SPARQL's local-name escapes (`res:Springfield_\(Illinois\)`). rdflib's parser keeps the
# backslashes inside the IRI: building the index raised ("does not look like a valid URI, I
# cannot serialize this"), so `kgeval serve` died at start, and the IRI indexed was not the
# one the query means, so training data writing it out in full would not be matched.
ESCAPED = (
    "PREFIX dbo: <http://dbpedia.org/ontology/>\nPREFIX res: <http://dbpedia.org/resource/>\n"
    "select distinct ?uri where { res:Springfield_\\(Illinois\\) dbo:country ?uri }"
)
SPELLED_OUT = "SELECT DISTINCT ?x WHERE { <http://dbpedia.org/resource/Springfield_(Illinois)> <http://dbpedia.org/ontology/country> ?x }"


def test_a_reference_query_with_escaped_local_names_is_indexed_as_the_engine_reads_it(tmp_path):
    from tests.conftest import write_holdout

    question = {"id": "geo-1", "question": "Which country is Springfield in?", "sparql": ESCAPED, "domain": "geo"}
    holdout = write_holdout(tmp_path / "h", [question], kg="geo")
    index = build_index(load_holdout(holdout), GuardsConfig())
    found = {(m.kind, m.holdout_item) for m in index.match_text("training example:\n" + SPELLED_OUT)}
    assert ("sparql", "geo/geo-1") in found, found


def test_the_byte_table_splits_an_ascii_line_into_exactly_its_tokens():
    """`line_mask` splits ASCII lines with a byte table, not `tokens`: the two must agree on
    every ASCII line (case, digits, `_` and punctuation as separators), also on a slice of a
    larger array (Arrow offsets not at 0) and around nulls."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kgeval.guards._index import _ascii_words

    rng = random.Random(9)
    alphabet = string.ascii_letters + string.digits + string.punctuation + " \t_"
    lines = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 80))) for _ in range(2000)]
    lines += ["Karen_Novak's DEPARTMENT(hr-01)", "x\u00a0y", "E1015.\tPV:Employee"]
    for array in (pa.array(lines), pa.array(lines, pa.large_string()), pa.array(["pad", *lines])[1:]):
        split = pc.ascii_split_whitespace(_ascii_words(array)).to_pylist()
        for line, words in zip(lines, split):
            if line.isascii():  # Arrow gives an empty word for leading blanks: in no vocabulary
                assert [w for w in words if w] == tokens(line), line
    with_null = pc.ascii_split_whitespace(_ascii_words(pa.array(["A b", None, "C_d"])[1:])).to_pylist()
    assert with_null == [None, ["c", "d"]]
    assert pc.ascii_split_whitespace(_ascii_words(pa.array(["Caf\u00e9"]))).to_pylist() != [tokens("Caf\u00e9")]


CATALOGUE_02_RENAMED = (
    "prefix s: <http://www.w3.org/2000/01/rdf-schema#>\nselect ?n where { ?p s:label \"Eskara Coffee Grinder X448\"@en ;"
    " s:label ?n . filter (lang(?n) = \"de\") }"
)


def test_a_query_without_a_distinctive_iri_is_prefiltered_by_its_rarest_needle(index):
    """catalogue-02 uses only rdfs: its prefilter needle was its longest, the rdfs namespace,
    which half the SPARQL in training data declares: every such line went to the Python line
    matchers, which cannot match a query. Now the needle is its rarest (the product's label),
    a line that only declares rdfs is no longer sent to them, and the query is still found."""
    import pyarrow as pa

    assert index.undistinctive_queries == ["catalogue/catalogue-02"]
    # one needle of each needle set without a literal: catalogue-02's, and those of the queries
    # without their declarations (names, labels, prefixed names: no namespace among them)
    assert "Eskara Coffee Grinder X448" in index.query_literals
    assert not any("://" in x for x in index.query_literals)
    assert not index.line_mask(pa.array(["PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>"]))[0]
    found = {(m.kind, m.holdout_item) for m in index.match_text("Translate.\n" + CATALOGUE_02_RENAMED)}
    assert ("sparql", "catalogue/catalogue-02") in found
    sampled = index.with_anchors_from(["ordinary text", "Eskara Coffee Grinder X448 is sold out"] * 50)
    assert sampled.query_literals & {"label", "de", "Eskara Coffee Grinder X448"}
    assert not any("rdf-schema" in x for x in sampled.prefilter.literals | sampled.prefilter.words)
    found = {(m.kind, m.holdout_item) for m in sampled.match_text("Translate.\n" + CATALOGUE_02_RENAMED)}
    assert ("sparql", "catalogue/catalogue-02") in found


def _fullwidth(word: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalnum() else c for c in word)


HOSTILE_SPELLINGS = (
    str.upper,
    _fullwidth,
    lambda w: w.replace("fi", "\ufb01"),  # the ligature NFKC spells 'fi'
    lambda w: w.replace("k", "\u212a"),  # KELVIN SIGN, NFKC 'K'
    lambda w: w.replace("s", "\u017f"),  # LONG S, NFKC 's'
    lambda w: w.replace("ss", "\u00df"),  # case folding spells it 'ss'
    lambda w: __import__("unicodedata").normalize("NFD", w),  # 'o' + U+0308, composed by NFKC into 'ö'
    lambda w: w.replace("1", "\u00b9").replace("2", "\u2082"),  # superscript / subscript digits
    lambda w: w + "\u00bd",  # one half: NFKC '1⁄2', two words
)


def test_line_mask_keeps_every_non_ascii_line_a_question_matches_in(index):
    """Lines with characters outside ASCII are split by the byte table too, and their count
    raised by what such characters can spell after NFKC and case folding: every random line
    of question words in full-width forms, ligatures, KELVIN SIGN, long s, decomposed accents,
    between Cyrillic, CJK, dashes and ideographic spaces, in which `match_line` finds a question,
    is kept; lines of foreign words with at most one question word are not."""
    import pyarrow as pa

    rng = random.Random(12)
    noise = ["\u041f\u0440\u0438\u0432\u0435\u0442", "\u516c\u53f8", "caf\u00e9", "the", "\u2014", "stra\u00dfe"]
    lines = []
    for q in index.questions:
        words = sorted(q.features) + ["universit\u00e9", "gartenm\u00f6bel"]
        for _ in range(25):
            picked = [rng.choice(HOSTILE_SPELLINGS)(w) if rng.random() < 0.4 else w for w in rng.sample(words, min(len(words), rng.randrange(1, 9)))]
            picked += rng.sample(noise, 2)
            rng.shuffle(picked)
            lines.append("".join(w + rng.choice([" ", "\u3000", "\u2014", " \u00b7 ", ", "]) for w in picked))
    foreign = [f"{rng.choice(noise)} {rng.choice(noise)} {w} \u516c\u53f8" for w in sorted({f for q in index.questions for f in q.features})]
    mask = index.line_mask(pa.array(lines + foreign))
    _, only, literal = index.line_candidates(pa.array(lines + foreign))
    found = 0
    for i, (line, kept) in enumerate(zip(lines, mask)):
        matched = [m for m in index.match_line(line) if m.kind.startswith("question")]
        found += bool(matched)
        assert kept or not matched, (line, matched)
        assert not kept or index.match_line(line, only.get(i), literal[i]) == index.match_line(line), line
    assert found > 100, found
    assert sum(mask[len(lines):]) < len(foreign) / 4, "most lines with one question word among foreign words pass"
    # Exactly catalogue-13's three words, one decomposed: the byte table sees two.
    decomposed = "english category gartenmo\u0308bel"
    assert [m.holdout_item for m in index.match_line(decomposed)] == ["catalogue/catalogue-13"]
    assert index.line_mask(pa.array([decomposed]))[0]
    # A question written all in full-width forms has no word the byte table sees: a line with it
    # and another question in ASCII keeps every question (not only the one it counted).
    wide = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in "In which department does Karen Novak work?")
    both = wide + " \u2014 " + next(q.normalized for q in index.questions if q.id == "hr-03")
    only = index.line_candidates(pa.array([both])).only
    assert {"hr/hr-01", "hr/hr-03"} <= {m.holdout_item for m in index.match_line(both, only.get(0))}


def test_anchors_chosen_from_a_sample_cover_every_question_and_are_shared(index):
    """Prefix filtering's rule holds for the anchors chosen on data: each question keeps
    |F| - ceil(t|F|) + 1 of its features in the prefilter (fewer would let a near-duplicate
    through unseen); anchors already chosen for another question are preferred (they cost
    the prefilter nothing), so fewer words are anchors than when each question picks alone."""
    import math

    from kgeval.guards._index import _anchors

    rng = random.Random(3)
    words = sorted({f for q in index.questions for f in q.features})
    sample = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(400)]
    sampled = index.with_anchors_from(sample)
    anchors = set(sampled.prefilter.words)
    for q in index.questions:
        need = len(q.features) - math.ceil(q.threshold * len(q.features)) + 1 if q.near else 1
        assert len(q.features & anchors) >= need, (q.id, sorted(q.features & anchors))
    alone = set().union(*(_anchors([q], lambda f, q: (0, f)) for q in index.questions))
    assert len(_anchors(index.questions, lambda f, q: (0, f))) < len(alone)


def test_sample_word_counts_in_arrow_equal_the_python_count(index):
    """Anchors are chosen by how many sample lines hold each question feature: counted in Arrow
    for ASCII lines, in Python for the others, the same as `tokens` counts every line."""
    from collections import Counter

    from kgeval.guards._text import feature, tokens

    rng = random.Random(9)
    words = sorted({f for q in index.questions for f in q.features}) + ["employees", "working", "the", "x-ray", "Caf\u00e9"]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randrange(0, 12))) for _ in range(400)]
    lines += ["\uff2b\uff41\uff52\uff45\uff4e department", "de\u0301partement Karen", "DEPARTMENTS; karen_novak"]
    expected: Counter = Counter()
    for line in lines:
        expected.update(set(map(feature, tokens(line))))
    counted = index._words.lines_with_feature(lines)
    features = {f for q in index.questions for f in q.features}
    assert {f: counted[f] for f in features} == {f: expected[f] for f in features}
    assert counted["karen"] >= 2 and counted["department"] >= 3


def _renamed(sparql: str, prefixes: bool = True) -> str:
    """A copy as a training set holds one: variables (and `prefixes`' names) renamed, keywords
    in lower case, one line."""
    out = sparql
    for n, var in enumerate(sorted(set(re.findall(r"\?(\w+)", sparql)), key=len, reverse=True)):
        out = re.sub(rf"\?{var}\b", f"?copy{n}", out)
    for n, prefix in enumerate(set(re.findall(r"PREFIX\s+(\w*):", sparql)) if prefixes else ()):
        out = re.sub(rf"(?<![\w:#]){prefix}:", f"p{n}:", out)
    return " ".join(re.sub(r"\b(PREFIX|SELECT|WHERE|DISTINCT|ORDER BY|LIMIT|FILTER|ASK)\b", lambda m: m[1].lower(), out).split())


def _without_declarations(sparql: str) -> str:
    return " ".join(re.sub(r"(?i)PREFIX\s+\w*:\s*<[^>]*>", " ", sparql).split())


def test_a_copied_reference_query_is_found_by_its_terminals_without_parsing(index):
    """Issue 43: each query candidate cost rdflib's parse (~10 ms; 0.3 CPU-s of a 0.1 GB
    check whose planted queries were copies). A copy whose terminals are the reference's up
    to names (renamed variables and prefixes, other spacing and keyword case), or a copy
    without its declarations read after the reference's, is found with no parse at all: the
    parse cache's misses do not grow. Reverted to `canonical_sparql` for every piece, they do."""
    from kgeval.stores._query import _algebra

    for q in load_holdout(REPO / "holdout").questions():
        item = f"{q.kg}/{q.id}"
        for copy in (_renamed(q.sparql), _without_declarations(_renamed(q.sparql, prefixes=False))):
            before = _algebra.cache_info().misses
            found = [m.holdout_item for m in index.match_query(copy)]
            assert item in found, (copy, found)
            assert _algebra.cache_info().misses == before, copy


def test_query_keys_tell_exactly_what_parsing_tells(index):
    """Whatever the key says (this reference query; no query at all) is what rdflib's
    canonical form says, for copies and for near misses that must not match: another IRI,
    literal or variable pattern, an extra pattern, a broken or foreign prologue, a prefix
    rdflib declares by default, a BASE, an escape, a carriage return."""
    texts = []
    for q in load_holdout(REPO / "holdout").questions():
        copy, bare = _renamed(q.sparql), _without_declarations(_renamed(q.sparql, prefixes=False))
        texts += [q.sparql, copy, bare, f"{declarations(folded(q.sparql))}\n{bare}"]
        texts += [
            copy.replace("?copy0", "?copy1", 1),
            re.sub(r'"[^"]*"', '"Someone Else"', copy, count=1),
            copy.replace("{", "{ ?extra ?p ?o .", 1),
            re.sub(r"<http://example\.org/(\w+)/", r"<http://example.org/\1x/", copy, count=1),
            "PREFIX junk: ?x " + copy,
            "BASE <http://example.org/> " + copy,
            copy.replace("p0:", "rdfs:").replace("p1:", "rdfs:"),
            _without_declarations(copy).replace("{", "{ # note\r", 1),
            copy.replace('"', "'", 2).replace("'", "\\'", 1),
        ]
    told = 0
    for text in texts:
        key = query_key(text)
        told += key is not None and (key == NOT_A_QUERY or key in index.sparql_keys)
        assert index._canonical(text) == canonical_sparql(text), text
    assert told > len(texts) // 3  # the keys do the work: most copies are told without parsing


def test_identifiers_and_iris_are_looked_for_only_in_lines_holding_a_literal(index):
    """Issue 43: the identifier and IRI matchers (Python regular expressions) ran on every
    kept line, most kept for question words alone. They now run only on lines the literal
    prefilter marks, which is sound: every identifier is a literal and every IRI found holds
    its namespace or itself as one. Lines with identifiers, IRIs and namespaces written every
    way (in angle brackets, with trailing punctuation, in upper case, glued to words) and
    lines without: each gets the same matches as with both matchers always run."""
    import pyarrow as pa

    rng = random.Random(9)
    pieces = sorted(index.identifiers) + rng.sample(sorted(index.iris), 40) + sorted(index.namespaces)
    pieces += [ns + "SomethingNew" for ns in sorted(index.namespaces)] + ["http://example.org/unrelated/x", "hr", "trials"]
    words = ["department", "Karen", "Novak", "the", "of", "work", "price", "sponsor", "x1", "NCT05937709"]
    lines = []
    for _ in range(600):
        line = [rng.choice(words) for _ in range(rng.randrange(0, 8))]
        for _ in range(rng.randrange(0, 3)):
            piece = rng.choice(pieces)
            piece = piece.upper() if rng.random() < 0.1 else piece
            line.insert(rng.randrange(len(line) + 1), rng.choice(["<{}>", "{}.", "({})", "see:{}", "{}_x", "{}"]).format(piece))
        lines.append(" ".join(line))
    kept, only, literal = index.line_candidates(pa.array(lines))
    found = 0
    for i, line in enumerate(lines):
        everything = index.match_line(line)
        found += any(m.kind in ("kg-identifier", "iri", "namespace") for m in everything)
        assert kept[i] or not everything, (line, everything)
        assert not kept[i] or index.match_line(line, only.get(i), bool(literal[i])) == everything, line
    assert found > 200, found
