"""The prefilters' multi-literal matcher: one scan of a column's data buffer gives, row by row,
what RE2 gives with the same needles as one expression (`Needles.pattern`)."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from kgeval.config import GuardsConfig
from kgeval.guards import build_index
from kgeval.guards import _needles
from kgeval.guards._needles import Needles, re2_mask
from kgeval.holdout import load_holdout
from tests.conftest import REPO

pytestmark = pytest.mark.skipif(_needles.hyperscan is None, reason="hyperscan has no wheel for this platform (RE2 is used)")


@pytest.fixture(scope="module")
def index():
    return build_index(load_holdout(REPO / "holdout"), GuardsConfig())


def _agree(needles: Needles, array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Needles.mask, asserted equal to RE2 with `needles.pattern` row by row."""
    found = needles.mask(array)
    expected = re2_mask(array, needles.pattern, ignore_case=needles.ignore_case)
    assert found.tolist() == expected.tolist(), [
        (i, array[i].as_py()) for i in np.flatnonzero(found != expected)[:5].tolist()
    ]
    return found


def test_non_ascii_needles_and_texts_are_case_folded_as_re2_folds_them():
    needles = Needles.of(["Gartenmöbel", "ΣΟΦΊΑ"], ["université", "karen"], ignore_case=True)
    texts = ["GARTENMÖBEL im Angebot", "la σοφία", "l'UNIVERSITÉ de Lyon", "Karen", "gartenmobel", "universite", "ｋaren"]
    assert _agree(needles, pa.array(texts)).tolist() == [True] * 4 + [False] * 3


def test_a_word_whose_first_letter_is_a_non_ascii_case_variant_is_found():
    """KELVIN SIGN folds to `k`, LONG S to `s` (NFKC too: `tokens` reads them as `k`, `s`).
    RE2's word start is ASCII `\\b`, which takes the variant for a non-word character: the
    RE2 expression misses such a word at a word start and keeps it glued to a letter (no
    word of `tokens` then); `mask` looks only at the byte before the match."""
    needles = Needles.of([], ["kelvin", "street"], ignore_case=True)
    texts = ["\u212aELVIN scale", "a \u017ftreet", "x\u212aelvin"]
    assert needles.mask(texts).tolist() == [True, True, False]
    assert re2_mask(texts, needles.pattern, ignore_case=True).tolist() == [False, False, True]


def test_a_needle_split_across_two_rows_is_in_neither():
    """The rows lie back to back in the data buffer: a match spanning two is no row's."""
    needles = Needles.of(["holdout/hr"], ["novak"], ignore_case=True)
    rows = ["see the hold", "out/hr folder", "Karen No", "vak", "holdout/hr and novak"]
    assert _agree(needles, pa.array(rows)).tolist() == [False, False, False, False, True]


def test_a_word_at_a_row_start_is_found_after_a_row_ending_in_a_letter():
    """A word needle must not follow a letter or digit *in its row*: the previous row's last
    byte, just before it in the buffer, is no reason to drop it (nor the next row's first
    byte for a word at a row's end)."""
    needles = Needles.of([], ["run"], ignore_case=True)
    rows = ["overrun", "run fast", "x9", "RUN", "rerun and brun", "_run", "-run", "é run", "érun", "a run", "x"]
    assert _agree(needles, pa.array(rows)).tolist() == [False, True, False, True, False, True, True, True, True, True, False]


def test_a_word_is_found_in_the_spellings_that_share_its_feature_only():
    """`run` stands for the tokens whose feature it is (`run`, `runs`, `runing`): `running`
    (feature `runn`), `runway` or `run9` are other words, `run_x` and `run-up` hold `run`."""
    needles = Needles.of([], ["run"], ignore_case=True)
    rows = ["runs", "RUNING", "running", "runway", "run9", "run_x", "run-up", "a run.", "runé", "runsing"]
    assert _agree(needles, pa.array(rows)).tolist() == [True, True, False, False, False, True, True, True, True, False]


def test_sliced_null_chunked_and_large_string_columns():
    needles = Needles.of(["trials-03"], ["karen"], ignore_case=True)
    rows = ["x", None, "Karen", "", "see trials-03", None, "karenina", "akaren", "ok"] * 3
    for kind in (pa.string(), pa.large_string()):
        array = pa.array(rows, kind)
        assert _agree(needles, array).tolist() == [False, False, True, False, True, False, False, False, False] * 3
        _agree(needles, array.slice(4, 13))
        _agree(needles, pa.chunked_array([array.slice(0, 5), array.slice(5)]))
    assert needles.mask([]).tolist() == []
    assert Needles.of().mask(["anything"]).tolist() == [False]


def test_the_index_prefilter_agrees_with_re2_on_a_mixed_corpus(index):
    """Prose, holdout words in every case, needles glued to letters and digits, split across
    rows, non-ASCII and `\\u`-looking text: the same rows as RE2 on the prefilter's expression,
    and the same with RE2 alone (no Hyperscan), for every prefilter of the index."""
    rng = random.Random(14)
    needles = sorted(index.prefilter.literals | index.prefilter.words)
    filler = ["the", "of", "Straße", "université", "данные", "会社", "x", "9", "_", "-", "\\u00e9", "ｋ", " "]

    def piece() -> str:
        word = rng.choice(needles) if rng.random() < 0.3 else rng.choice(filler)
        word = rng.choice([word, word.upper(), word.title(), word[: len(word) // 2], word[len(word) // 2 :]])
        return rng.choice(["", "a", "7", "_", " ", "\n"]) + word + rng.choice(["", "s", "ing", "9", " ", "."])

    rows = ["".join(piece() for _ in range(rng.randrange(0, 12))) for _ in range(4000)]
    array = pa.array(rows, pa.large_string())
    kept = _agree(index.prefilter, array)
    assert 0.2 < kept.mean() < 0.9  # a corpus that tells the two apart
    for other in (index._literal_prefilter, index.query_prefilter, index.line_query_prefilter):
        _agree(other, array)
    hyperscan, _needles.hyperscan = _needles.hyperscan, None
    try:
        assert index.prefilter.mask(array).tolist() == kept.tolist()
    finally:
        _needles.hyperscan = hyperscan


def test_windows_of_rows_and_literals_holding_a_line_break(monkeypatch):
    """A column larger than one scan is scanned a window of rows at a time; a literal with a
    line break (rows are joined by line breaks) is looked for in each row by RE2."""
    needles = Needles.of(["SELECT ?x\nWHERE", "holdout/hr"], ["karen"], ignore_case=True)
    rows = ["select ?x\nwhere {", "SELECT ?x", "WHERE", "in holdout/hr", "karen", "x" * 40, "Karen Novak"] * 4
    whole = _agree(needles, pa.array(rows))
    assert whole.tolist() == [True, False, False, True, True, False, True] * 4
    monkeypatch.setattr(_needles, "_SCAN_LIMIT", 16)
    assert _agree(needles, pa.array(rows)).tolist() == whole.tolist()


def test_question_words_counted_by_hyperscan_equal_arrow_split(index):
    """The word count's (line, feature) pairs: Hyperscan over the lines joined by spaces gives
    what Arrow's whitespace split of the byte-table words gives, line for line (words at a
    line's start and end, glued by `_`, digits, plurals, non-ASCII around them)."""
    words = index._words
    rng = random.Random(21)
    vocabulary = list(words.spellings) + ["the", "x_", "9", "Caf\u00e9", "\u00e9", "-", "_", "DEPARTMENT", "employees."]
    lines = ["".join(rng.choice(vocabulary) + rng.choice(["", " ", "_", ".", "\u00e9", "7"]) for _ in range(rng.randrange(0, 9)))
             for _ in range(3000)]
    for array in (pa.array(lines, pa.large_string()), pa.array(lines, pa.string()).slice(7, 2000)):
        line, feat = words._features_by_line_in_arrow(array)
        expected = np.divmod(np.unique(line * words.n_features + feat), words.n_features)
        found = words._features_by_line(array)
        assert len(expected[0]) > 1000
        assert found[0].tolist() == expected[0].tolist() and found[1].tolist() == expected[1].tolist()


def test_a_pickled_index_brings_its_compiled_databases(index, monkeypatch):
    """Workers receive the index pickled: they load its Hyperscan databases (~0.1 ms) instead
    of compiling them (~0.3 CPU-s for the prefilter), and find the same rows."""
    import pickle

    rows = pa.array(["Karen Novak works in which department?", "nothing", "see holdout/hr"])
    expected = index.prefilter.mask(rows).tolist()
    blob = pickle.dumps(index)
    _needles._compiled.__dict__.clear()

    def no_compiling(*args, **kwargs):
        raise AssertionError("compiled in the worker")

    monkeypatch.setattr(_needles, "_compile", no_compiling)
    monkeypatch.setattr(_needles.hyperscan, "Database", no_compiling)
    loaded = pickle.loads(blob)
    assert loaded.prefilter.mask(rows).tolist() == expected
    loaded.line_candidates(rows)  # the literal prefilter and the word count's database


@pytest.mark.parametrize("engine", ["hyperscan", "re2"])
def test_rows_with_bytes_finds_every_row_holding_a_byte_of_the_class(engine, monkeypatch):
    """Over a sliced column too (its buffer starts before its first row), nulls and empty rows,
    a byte at a row's first and last position; without Hyperscan the same rows."""
    import kgeval.guards._needles as needles

    if engine == "re2":
        monkeypatch.setattr(needles, "hyperscan", None)
    elif needles.hyperscan is None:
        pytest.skip("no Hyperscan wheel for this platform")
    texts = ["\x00lead", "plain", None, "", "tail\x1f", "mid\x07dle", "line\nbreak", "caf\u00e9", "\x7f"]
    column = pa.array(["\x01before", *texts], pa.large_string()).slice(1)
    found = needles.rows_with_bytes(column, ((0x00, 0x08), (0x0E, 0x1F), (0x7F, 0x7F)))
    assert found.tolist() == [0, 4, 5, 8]


def test_ascii_needles_over_bytes_match_what_the_unicode_caseless_mode_matches():
    """The ASCII needles are compiled over bytes (faster to compile), the rows holding KELVIN
    SIGN or LONG S read again with `k` and `s`: over every code point, those are the only
    characters outside ASCII that Hyperscan's caseless UTF-8 mode takes for an ASCII letter
    or digit, and the rows found are those the UTF-8 mode finds (a variant glued to a word
    is a letter, not a bound)."""
    import string

    letters = string.ascii_lowercase + string.digits
    database = _needles._compile([f"^{c}$".encode() for c in letters], ignore_case=True)
    found: dict[str, list[int]] = {}
    for point in [p for p in range(0x80, 0x110000) if not 0xD800 <= p <= 0xDFFF]:
        database.scan(chr(point).encode(), match_event_handler=lambda i, s, e, f, c, p=point: found.setdefault(letters[i], []).append(p))

    assert found == {"k": [0x212A], "s": [0x17F]}
    needles = Needles.of(["Kasse:Sk"], ["kiosk", "desk"], ignore_case=True)
    rows = ["\u212aASSE:\u017f\u212a", "a \u212aio\u017fk\u017f.", "x\u212aiosk", "DESKING", "desk_", "de\u017fkx", "kiosks", "\u212adesk"]
    unicode = _needles._compile([_needles._expression(n, w) for n, w in (("Kasse:Sk", False), ("kiosk", True), ("desk", True))], True)
    expected = [False] * len(rows)
    for i, row in enumerate(rows):
        unicode.scan(row.encode(), match_event_handler=lambda *a, i=i: expected.__setitem__(i, True))
    assert needles.mask(rows).tolist() == expected == [True, True, False, True, True, False, True, False]
    assert len(needles._database()) == 1  # every needle ASCII: the bytes database alone
