import random

import pytest

from kgeval.config import EXECUTION_NORMALIZATION, SEED_NORMALIZATION, NormalizationConfig
from kgeval.judges import Normalizer
from kgeval.judges._normalize import _tail, _tails
from kgeval.stores import Term

XSD = "http://www.w3.org/2001/XMLSchema#"
ALL_ON = NormalizationConfig()


def key(value, **off):
    n = Normalizer(ALL_ON.model_copy(update={k: False for k in off}))
    return n.term(value) if isinstance(value, Term) else n.item(value)


@pytest.mark.parametrize(
    ("rule", "a", "b"),
    [
        ("iri_tail", "http://x/entities/ConsumerComplaint/12345", "12345"),
        ("percent_decode", "http://x/a/B%40c", "http://x/a/B@c"),
        ("whitespace", "  Foo \t  BAR ", "Foo BAR"),
        ("casefold", "Straße", "STRASSE"),
        ("numbers", "1.50", "1.5"),
        ("booleans", True, "true"),
        ("drop_language_tags", Term.literal("Sales", lang="en"), Term.literal("Sales")),
        ("drop_datatypes", Term.literal("1", XSD + "integer"), Term.literal("1")),
        ("ignore_term_kinds", Term.iri("http://x/e/alice"), Term.literal("alice")),
    ],
)
def test_each_rule_equates_when_on_and_can_be_switched_off(rule, a, b):
    assert key(a) == key(b)
    off = {rule: False}
    if rule == "booleans":  # with case folding on, True -> "True" -> "true" anyway
        off["casefold"] = False
    assert key(a, **off) != key(b, **off)


def test_trailing_slash_rule_on_full_iris():
    a, b = Term.iri("http://x/a/"), Term.iri("http://x/a")
    assert key(a, iri_tail=False) == key(b, iri_tail=False)
    assert key(a, iri_tail=False, trailing_slash=False) != key(b, iri_tail=False, trailing_slash=False)
    assert key(a) == key(b) == "a"  # a tail is found past trailing slashes either way


@pytest.mark.parametrize(("a", "b"), [("1e3", "1000"), ("-0.0", "0"), ("+7", "7"), ("-0.20", "-.2"), (-0.2, "-0.20")])
def test_numbers_canonical(a, b):
    assert key(a) == key(b)


# A computed value (an average, a ratio) as the engine's xsd:decimal (oxigraph keeps 18
# fractional digits, cut) and as a double (the candidate's query cast to xsd:double, or a JSON
# number in an answer list): equal at 12 significant digits
@pytest.mark.parametrize(
    ("decimal", "double"),
    [
        (Term.literal("629558.333333333333333333", XSD + "decimal"), Term.literal("629558.3333333334", XSD + "double")),
        (Term.literal("629558.333333333333333333", XSD + "decimal"), 629558.3333333334),
        (Term.literal("0.666666666666666666", XSD + "decimal"), 2 / 3),
        (Term.literal("0.666666666666666666", XSD + "decimal"), Term.literal("6.666666666666666E-1", XSD + "double")),
        ("1234.5678901234567", "1234.56789012346"),
    ],
)
def test_computed_values_compare_at_twelve_significant_digits(decimal, double):
    for normalizer in (Normalizer(NormalizationConfig()), Normalizer(SEED_NORMALIZATION), Normalizer(EXECUTION_NORMALIZATION)):
        as_key = normalizer.term if isinstance(decimal, Term) else normalizer.item
        other = normalizer.term(double) if isinstance(double, Term) else normalizer.item(double)
        assert as_key(decimal) == other


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("9780306406157", "9780306406158"),  # integers keep every digit: identifiers (ISBN-13)
        ("12345678901234567890", "12345678901234567891"),
        ("0.33333", "0.33334"),  # few digits: compared as written
        ("629558.3333", "629558.3334"),
        ("0.1234567890", "0.1234567891"),  # ten significant digits: every one counts
    ],
)
def test_numbers_differing_within_twelve_significant_digits_or_integers_stay_apart(a, b):
    assert key(a) != key(b)


def test_xsd_boolean_lexical_forms():
    one = Term.literal("1", XSD + "boolean")
    assert key(one) == "true"
    assert Normalizer(SEED_NORMALIZATION).term(one) == "1"  # the seed judge as first specified


def test_execution_preset_keeps_kinds_and_full_iris():
    n = Normalizer(EXECUTION_NORMALIZATION)
    assert n.term(Term.iri("http://x/e/alice")) != n.term(Term.literal("alice"))
    assert n.term(Term.iri("http://x/e/alice")) != n.term(Term.iri("http://x/other/alice"))
    assert n.term(Term.literal("1", XSD + "integer")) == n.item(1) == n.item("1")
    assert n.term(None) is None


def test_seed_preset_is_the_seed_judge_as_first_specified():
    n = Normalizer(SEED_NORMALIZATION)
    assert n.item("<http://x/a/B%40c/>") == "b@c"
    assert n.term(Term.literal("http://x/e/Alice")) == "alice"
    assert n.term(Term.bnode("b0")) == n.term(Term.bnode("b1")) == "_:"
    assert n.item(True) == "true" and n.item(" Foo  Bar ") == "foo bar"


@pytest.mark.parametrize(
    ("iri", "tail"),
    [
        ("http://x/entities/ConsumerComplaint/12345", "12345"), ("http://x/a/", "a"), ("http://x/a#b", "b"), ("http://x/a#", ""),
        ("http://x/a#b/c", "c"), ("urn:a:b", "b"), ("urn:a:", ""), ("urn:x/y", "y"), ("urn:", ""), ("abc", "abc"), ("///", ""), ("", ""),
    ],
)  # fmt: skip
def test_iri_tail_cuts_after_the_last_slash_or_hash(iri, tail):
    assert _tail(iri) == tail
    assert _tails([iri, iri]) == [tail, tail]


_PARTS = ["/", "#", ":", "urn:", "http://", "https://x.org/", "A", "b", "%40", "%2F", " ", "\t", "1", "0", ".", "-", "+", "e3", "ß", "<", ">", "Straße", "true"]


def _random_texts(rng: random.Random, n: int) -> list[str]:
    """Texts made of IRI, number, bracket and whitespace pieces: every rule finds something."""
    return ["".join(rng.choice(_PARTS) for _ in range(rng.randint(0, 8))) for _ in range(n)]


def _rule_sets(rng: random.Random, n: int) -> list[NormalizationConfig]:
    """Every rule on, every rule off, and `n` random mixes."""
    names = list(NormalizationConfig.model_fields)
    bits = [(True,) * len(names), (False,) * len(names), *(tuple(rng.random() < 0.5 for _ in names) for _ in range(n))]
    return [NormalizationConfig(**dict(zip(names, b))) for b in bits]


def test_batched_keys_equal_keys_one_by_one():
    """`cells` normalizes the IRIs it has not met as one batch (`_iris`, `_tails`); `term` of
    one cell takes the same path one IRI long: both give every key `term` gave before."""
    rng = random.Random(7)
    texts = _random_texts(rng, 2000)
    cells = [Term.iri(t) for t in texts] + [Term.literal(t, XSD + "decimal") for t in texts[:200]] + [Term.bnode("b"), None]
    for config in _rule_sets(rng, 24):
        one_by_one = Normalizer(config)
        expected = [one_by_one.term(cell) for cell in cells]
        batched = Normalizer(config)
        assert batched.cells(cells[::3]) == expected[::3]
        assert batched.cells(cells) == expected
        assert Normalizer(config).rows([cells[i : i + 2] for i in range(0, 2000, 2)], 2) == [tuple(expected[i : i + 2]) for i in range(0, 2000, 2)]


def test_batched_texts_equal_texts_one_by_one(monkeypatch):
    """`texts` normalizes the texts it has not met as one batch (IRIs by `_iris`, the others by
    `_literals`): it gives every key `text` gives one by one, under any rules, bracketed IRIs,
    repeats and texts memoized before included, and when its memo outgrows its bound."""
    from kgeval.judges import _normalize

    rng = random.Random(11)
    texts = _random_texts(rng, 1500)
    texts += texts[:100]  # repeats
    for config in _rule_sets(rng, 16):
        one_by_one = Normalizer(config)
        expected = [one_by_one.text(text) for text in texts]
        batched = Normalizer(config)
        assert batched.texts(texts[::3]) == expected[::3]
        assert batched.texts(texts) == expected
    monkeypatch.setattr(_normalize, "_CACHE_LIMIT", 64)
    bounded = Normalizer(ALL_ON)
    assert bounded.texts(texts[:50]) == [Normalizer(ALL_ON).text(t) for t in texts[:50]]
    assert bounded.texts(texts[:400]) == [Normalizer(ALL_ON).text(t) for t in texts[:400]]  # past the bound: starts over with these
    assert len(bounded._texts) <= len(set(texts[:400]))
