"""Folding: a text in full-width forms, hidden characters or look-alike letters reads as the
text it looks like, and the Arrow screen never lets a row that folding changes through."""

from __future__ import annotations

import random
import unicodedata

import pyarrow as pa
import pytest

from kgeval.guards._text import (
    HIDDEN,
    LOOKALIKES,
    foldable_characters,
    folded,
    folded_rows,
    tokens,
)
from kgeval.holdout import load_holdout
from tests.conftest import REPO
from tests.guards.test_contamination import DISGUISES


def test_every_disguise_of_a_holdout_question_or_query_folds_to_it():
    for q in load_holdout(REPO / "holdout").questions():
        for name, change in DISGUISES.items():
            if name.startswith("no declarations"):
                continue
            assert folded(change(q.question, 0)) == q.question, (name, q.id)
            assert folded(change(q.sparql, 0)) == q.sparql, (name, q.id)
        assert tokens(DISGUISES["look-alike letters"](q.question, 0)) == tokens(q.question)


def test_look_alikes_are_letters_nfkc_keeps_and_every_format_character_is_hidden():
    for c, latin in LOOKALIKES.items():
        assert unicodedata.normalize("NFKC", c) == c == unicodedata.normalize("NFD", c), unicodedata.name(c)
        assert unicodedata.category(c).startswith("L") and latin.isascii() and latin.isalpha()
    hidden = {c for lo, hi in HIDDEN for c in range(lo, hi + 1)}
    cf = [cp for cp in range(0x110000) if unicodedata.category(chr(cp)) == "Cf"]
    assert set(cf) <= hidden, sorted(set(cf) - hidden)


def test_folding_is_idempotent_and_the_same_for_canonically_equivalent_texts():
    """Drawn from characters that fold, compose or reorder: Latin and Cyrillic letters with
    marks (composed and not), hidden characters between a letter and its mark, Hangul jamo,
    full-width forms, ligatures, look-alikes."""
    pool = list("aeoAEOkKsS \u0430\u0435\u043e\u0415\u0418\u0438\u0439\u0451\u03bf\u039f\u03ac\u1100\u1161\u11a8\uac00")
    pool += ["\u0301", "\u0308", "\u0323", "\u0306", "\u200b", "\u00ad", "\ufeff", "\u200d", "\uff41", "\ufb01", "\u212a", "\u00bd", "\u3164"]
    rng = random.Random(4)
    for _ in range(5000):
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(1, 12)))
        once = folded(text)
        assert folded(once) == once, ascii(text)
        for form in ("NFC", "NFD", "NFKD"):
            assert folded(unicodedata.normalize(form, text)) == once, (form, ascii(text))


def test_the_screen_passes_every_character_folding_may_change():
    """Exhaustively: every character that `folded` changes alone, or that NFKC may compose
    with or reorder after the character before it (a combining class other than 0, or the
    second character of a canonical decomposition), is matched by the Arrow screen, so
    `folded_rows` finds every row that folding changes."""
    seconds = set()
    risky = []
    for cp in range(0x80, 0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        decomposition = unicodedata.decomposition(c)
        if decomposition and not decomposition.startswith("<"):
            seconds.update(chr(int(x, 16)) for x in decomposition.split()[1:])
        if folded(c) != c or unicodedata.combining(c):
            risky.append(c)
    risky += sorted(seconds)
    column = pa.array(["x" + c for c in risky], pa.large_string())
    matched = pa.compute.match_substring_regex(column, pattern=foldable_characters()).to_numpy(zero_copy_only=False)
    assert matched.all(), [f"U+{ord(risky[i]):04X}" for i in (~matched).nonzero()[0][:20]]
    # and a row made only of other characters (and ASCII) is one folding leaves alone
    plain = [chr(cp) for cp in range(0xA0, 0x3000) if chr(cp) not in set(risky) and not 0xD800 <= cp <= 0xDFFF]
    rng = random.Random(5)
    rows = ["".join(rng.choice(plain + list("ab ")) for _ in range(20)) for _ in range(2000)]
    assert all(folded(r) == r for r in rows)


def test_folded_rows_returns_exactly_the_rows_folding_changes():
    texts = ["plain ascii", "caf\u00e9 na\u00efve", "\uff2b\uff41\uff52\uff45\uff4e", None, "Kar\u200ben", "\u0421\u0430\u0440", "\u516c\u53f8", "e\u0301"]
    rows, changed = folded_rows(pa.array(texts, pa.large_string()))
    assert rows.tolist() == [2, 4, 5, 7]
    assert changed == ["Karen", "Karen", "Cap", "\u00e9"]


def test_folded_rows_folds_as_folded_does():
    pool = list("ab \u0430\u0435\u043e\u0415\u0439\u0451\u03bf\u039f\u1100\u1161\u11a8\uac00\u0301\u0308\u200b\u00ad\ufeff\uff41\ufb01\u212a\u3164\uffa0")
    pool += ["\U0001d6a8", "\U000e0041", "\u00e9"]  # MATHEMATICAL BOLD CAPITAL ALPHA (NFKC: a Greek look-alike), a tag
    rng = random.Random(6)
    texts = ["".join(rng.choice(pool) for _ in range(rng.randrange(0, 15))) for _ in range(3000)]
    rows, changed = folded_rows(pa.array(texts, pa.large_string()))
    expected = {i: folded(t) for i, t in enumerate(texts) if folded(t) != t}
    assert dict(zip(rows.tolist(), changed)) == expected


def test_the_shipped_screen_is_the_one_this_python_computes():
    """kgeval/guards/foldable.txt spares each check ~0.3 s; it is used only for its Unicode
    version (`kgeval.guards._text.write_foldable_file()` writes it for another)."""
    from kgeval.guards._text import FOLDABLE_FILE, _foldable

    version, expression = FOLDABLE_FILE.read_text(encoding="ascii").split("\n")[:2]
    if version != unicodedata.unidata_version:
        pytest.skip(f"foldable.txt is for Unicode {version}, this Python has {unicodedata.unidata_version} (computed instead)")
    assert expression == _foldable()


def test_every_control_character_but_layout_is_dropped_and_screened():
    """Every character of category Cc renders as nothing or as white space: the ones that lay
    text out (tab, line feed, vertical tab, form feed, carriage return, NEXT LINE) still part
    words; every other is dropped by `folded` and `folded_rows`, and the Arrow screen passes it."""
    layout = {"\t", "\n", "\x0b", "\x0c", "\r", "\x85"}
    controls = [chr(cp) for cp in range(0x110000) if unicodedata.category(chr(cp)) == "Cc"]
    for c in controls:
        assert folded(f"Al{c}ice") == ("Alice" if c not in layout else f"Al{c}ice"), f"U+{ord(c):04X}"
    hiding = [c for c in controls if c not in layout]
    rows, changed = folded_rows(pa.array([f"Al{c}ice" for c in hiding] + ["Al\nice", "Alice"], pa.large_string()))
    assert rows.tolist() == list(range(len(hiding))) and set(changed) == {"Alice"}
