"""Short paraphrases of holdout questions, and unrelated questions of the same domains.

The contamination check must find a holdout question copied with its function words swapped,
dropped or added, its tense or copula changed, or a polite lead-in put before it ("Please
tell me: Which was telephone for Baldwin Dirksen?" from "What is the telephone of Baldwin
Dirksen?"), and must not flag a question that asks something else (another person's
telephone, another department's manager, another KG's question). `paraphrases` makes the
first systematically from any question; `unrelated_questions` writes the second for CK25.
bench/contamination.py prints the check's recall and false positives on both;
tests/guards/test_contamination.py asserts them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

LEAD_INS = (
    "Please tell me: ", "Can you tell me ", "Could you tell me, ", "Quick question: ", "Hi! ",
    "I was wondering: ", "Tell me please, ", "Do you know ", "Help me out here: ", "Hey, one question: ",
)
"""Polite or chatty openings a data builder's template or a user puts before a question."""

SWAPS = {
    "what": "which", "which": "what", "is": "was", "was": "is", "are": "were", "were": "are",
    "do": "did", "does": "did", "did": "does", "has": "had", "have": "had", "had": "has",
    "of": "for", "for": "of", "in": "at", "at": "in", "the": "a", "a": "the", "our": "the",
    "we": "you", "can": "could", "could": "can", "with": "by", "from": "of", "who": "which",
}
"""One function word for another (question word, preposition, article, tense of an auxiliary)."""

TENSES = {"is": "was", "are": "were", "do": "did", "does": "did", "has": "had", "have": "had", "can": "could"}
"""Present to past of the auxiliaries and copulas only: a content verb's tense is a new word."""

ARTICLES = frozenset({"the", "a", "an"})
_WORD = re.compile(r"[\w'’-]+|[^\w\s]+")


def _words(question: str) -> list[str]:
    return _WORD.findall(question)


def _join(words: list[str]) -> str:
    text = " ".join(words)
    return re.sub(r" ([^\w\s'’-]+)", r"\1", text)


def _replace(words: list[str], table: dict[str, str], limit: int | None = None) -> list[str]:
    """`words` with up to `limit` (None: all) of the words in `table` replaced, case kept."""
    out, done = [], 0
    for w in words:
        new = table.get(w.lower())
        if new is not None and (limit is None or done < limit):
            done += 1
            w = new.capitalize() if w[0].isupper() else new
        out.append(w)
    return out


def _lower_first(text: str) -> str:
    """`text` with its first letter lower-cased unless it starts a name (`Ms.`, an id)."""
    first = text.split(" ", 1)[0]
    return text if not first.isalpha() or first.isupper() or len(first) == 1 else text[0].lower() + text[1:]


def paraphrases(question: str) -> Iterator[tuple[str, str]]:
    """(how, paraphrase) of `question`: each transformation alone, then combined with the
    lead-ins. None adds, drops or changes a content word."""
    words = _words(question)
    lower = [w.lower() for w in words]
    variants: dict[str, list[str]] = {}
    variants["swapped"] = _replace(words, SWAPS)
    variants["one swapped"] = _replace(words, SWAPS, limit=1)
    variants["tense"] = _replace(words, TENSES)
    variants["articles dropped"] = [w for w in words if w.lower() not in ARTICLES]
    function = [i for i, w in enumerate(lower) if w in SWAPS or w in ARTICLES]
    for n, i in enumerate(function[:4]):
        variants[f"function word {n + 1} dropped"] = words[:i] + words[i + 1 :]
    variants["swapped, articles dropped"] = [w for w in variants["swapped"] if w.lower() not in ARTICLES]
    if lower[:2] in (["what", "is"], ["who", "is"], ["where", "is"]):
        variants["contracted"] = [words[0] + "'s", *words[2:]]
    if words[-1] in "?.!":
        variants["please added"] = [*words[:-1], ",", "please", words[-1]]
    variants["then added"] = ["And", "then", _lower_first(words[0]), *words[1:]]
    yield "as written", question
    for how, ws in variants.items():
        if ws != words:
            yield how, _join(ws)
    for n, lead in enumerate(LEAD_INS):
        how, ws = list(variants.items())[n % len(variants)]
        yield f"lead-in + {how}", lead + _lower_first(_join(ws))
        yield "lead-in", lead + _lower_first(question)


PEOPLE = (
    "Anna Weber", "Liam Ortiz", "Mei Tanaka", "Jonas Berg", "Sofia Rossi", "Omar Haddad", "Ines Costa",
    "Piotr Nowak", "Greta Lindqvist", "Tobias Kranz", "Mr. Becker", "Ms. Yilmaz", "Elena from Sales",
)
CK25_PEOPLE = ("Baldwin Dirksen", "Heinrich Hoch", "Ms. Brant", "Sabrina from Marketing")
ATTRIBUTES = ("telephone", "email", "office", "job title", "salary", "birthday", "address", "mobile number", "team")
ASKED = {("telephone", "Baldwin Dirksen"), ("email", "Sabrina from Marketing")}
"""CK25's own (attribute, person) questions: left out of the unrelated ones."""
PERSON_TEMPLATES = (
    "What is the {a} of {p}?", "Which {a} does {p} have?", "Please tell me {p}'s {a}.",
    "Do you know the {a} of {p}?", "What was {p}'s {a}?",
)
DEPARTMENTS = ("Sales", "Finance", "Legal", "Research", "Procurement", "Quality Assurance", "Logistics", "IT Support")
PRODUCTS = ("Capacitors", "Resistors", "Relays", "Potentiometers", "Thermistors", "Diodes", "Fuses", "Connectors")
COUNTRIES = ("Germany", "Italy", "Spain", "Poland", "Japan", "Canada", "Sweden", "Austria")
CITIES = ("Lyon", "Munich", "Milan", "Gdansk", "Osaka", "Toronto", "Graz", "Malmo")
DOMAIN_TEMPLATES = (
    "Who is the manager of the {d} department?", "How many employees work in {d}?",
    "Which department is responsible for {x}?", "How many {x} do we stock?", "Who is our expert for {x}?",
    "Which supplier delivers {x}?", "How many suppliers do we have in {c}?", "Do we have suppliers in {t}?",
    "What is the cheapest of our {x}?", "Which {x} weigh the most?", "Which of our suppliers are located in {t}?",
    "What is the average price of {x}?", "Which employees work in {d} in {t}?", "What is the budget of {d}?",
)
OTHER_KGS = (
    "Which river flows through the most countries?", "Who directed the film Inception?",
    "What is the population of Lyon?", "Which planets have more than ten moons?",
    "Who wrote the novel Buddenbrooks?", "When was the University of Leipzig founded?",
    "Which actors starred in both Heat and Ronin?", "What is the capital of Canada?",
    "How many bridges cross the Rhine in Basel?", "Which proteins interact with TP53?",
    "What is the boiling point of ethanol?", "Which airlines fly from Graz to Vienna?",
    "Who is the mayor of Toulouse?", "Which albums did Kraftwerk release in the 1970s?",
    "How many students are enrolled in the physics course?", "Which patients were prescribed metformin?",
    "What is the ISBN of the book Momo?", "Which stations are on the U2 line?",
    "Who coached the team that won the 2014 World Cup?", "Which genes are associated with asthma?",
    "What is the telephone number of the Lyon city hall?", "Which hotels in Munich have a spa?",
    "How many goals did Gerd Muller score?", "Which languages are spoken in Switzerland?",
)
"""Questions over other KGs (encyclopedic, bibliographic, biomedical, transport)."""


def unrelated_questions() -> list[str]:
    """Several hundred questions a text-to-SPARQL training set over a corporate KG and others
    holds that ask nothing CK25 asks: other people's telephones and emails, CK25's people's
    other attributes, other departments, products, countries and cities, other KGs."""
    out = [
        t.format(a=a, p=p)
        for p in PEOPLE + CK25_PEOPLE for a in ATTRIBUTES for t in PERSON_TEMPLATES[: 2 if p in PEOPLE else 5]
        if (a, p) not in ASKED
    ]
    out += [f"Who is the manager of {p}?" for p in PEOPLE if not p.endswith("Sales")]
    out += [f"In which department is {p}?" for p in PEOPLE if not p.endswith("Sales")]
    for n, t in enumerate(DOMAIN_TEMPLATES):
        for k in range(len(DEPARTMENTS)):
            pick = lambda xs: xs[(k + n) % len(xs)]  # noqa: E731
            out.append(t.format(d=pick(DEPARTMENTS), x=pick(PRODUCTS), c=pick(COUNTRIES), t=pick(CITIES)))
    return list(dict.fromkeys(out + list(OTHER_KGS)))


class Figures(NamedTuple):
    """What the contamination check made of the paraphrases and the unrelated questions."""

    paraphrases: int
    short: int
    """Paraphrases of questions of at most `SHORT_WORDS` words."""
    missed: list[tuple[str, str, str, int]]
    """(holdout item, how it was made, text, words of the question) of each paraphrase not
    found as its own question."""
    unrelated: int
    flagged: list[tuple[str, str]]
    """(text, holdout item) of each unrelated question flagged."""

    def lines(self, name: str) -> list[str]:
        """The figures as the bench prints them, then the first misses and false positives."""
        caught = self.paraphrases - len(self.missed)
        short = self.short - sum(1 for *_, words in self.missed if words <= SHORT_WORDS)
        out = [
            f"{name}: paraphrases found {caught}/{self.paraphrases} = {_percent(caught, self.paraphrases)} "
            f"(of questions of <= {SHORT_WORDS} words {short}/{self.short} = {_percent(short, self.short)}); "
            f"unrelated questions flagged {len(self.flagged)}/{self.unrelated} = {_percent(len(self.flagged), self.unrelated)}"
        ]
        out += [f"  MISSED {item} ({how}): {text!r}" for item, how, text, _ in self.missed[:20]]
        out += [f"  FALSE POSITIVE {item}: {text!r}" for text, item in self.flagged[:20]]
        return out


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / max(1, whole):.1f}%"


SHORT_WORDS = 8


def measure(holdout, unrelated: list[str], config, directory: Path, index=None) -> Figures:  # noqa: ANN001
    """Check every paraphrase of every question of `holdout` and every `unrelated` question
    (each its own record) with `check_contamination`, in files of 250 records (the report lists
    at most 1,000 hits); each paraphrase must be found as its own question."""
    from kgeval.guards import build_index, check_contamination

    index = index or build_index(holdout, config)
    made = [(f"{q.kg}/{q.id}", how, text, len(q.question.split())) for q in holdout.questions() for how, text in paraphrases(q.question)]
    texts = [text for _, _, text, _ in made] + unrelated
    hits: set[tuple[int, str]] = set()
    for start in range(0, len(texts), 250):
        path = directory / f"paraphrases-{start}.jsonl"
        path.write_text("".join(json.dumps({"prompt": t}) + "\n" for t in texts[start : start + 250]), encoding="utf-8")
        report = check_contamination([path], index, config)
        hits |= {(start + h.record, h.holdout_item) for h in report.hits}
        path.unlink()
    missed = [m for i, m in enumerate(made) if (i, m[0]) not in hits]
    flagged = sorted({(texts[r], item) for r, item in hits if r >= len(made)})
    return Figures(len(made), sum(1 for m in made if m[3] <= SHORT_WORDS), missed, len(unrelated), flagged)
