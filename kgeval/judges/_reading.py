"""How a grader reads an answer list against its question, before normalization (`read_items`).

A system that answers with a list instead of SPARQL writes what a person would: `yes`, `wd:Q42`,
`Douglas Adams (Q42)`, `January 1, 1985`, `169 minutes`, `three`. Each reading here turns such
an item into the value the gold holds, where the gold says which kind of value is asked (a
boolean, dates, numbers, the gold's IRIs); anything not read stays as written, and the
normalization rules (`_normalize`) then compare it as a text. A reading never widens what is
accepted beyond what the item says: an item naming two different values, or a unit the question
rules out, is not read.

Each reading is a named rule (`ReadingsConfig`, docs/scoring.md), switched on or off in the judge's
configuration; `read_items` adds the name of each reading it applied to `used`, and a reading
that needs a guess (a hedge, a year for a date, a value pulled out of a sentence) is off by
default (DESIGN invariant 13).
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from kgeval.config import ReadingsConfig
from kgeval.judges._cache import GoldCache
from kgeval.judges._normalize import XSD_NUMBERS, iri_tail, spells_iri, unbracketed
from kgeval.stores import QueryResult

_XSD_BOOLEAN = "http://www.w3.org/2001/XMLSchema#boolean"

_YES_NO_VALUES = {
    "yes": True, "yep": True, "yeah": True, "yup": True, "true": True, "no": False, "nope": False, "nah": False, "false": False,
    "ja": True, "jawohl": True, "nein": False, "sí": True,  # German and Spanish: none is an English word
}  # fmt: skip
_FOREIGN_YES_NO = frozenset({"ja", "jawohl", "nein", "sí"})
_DEFAULT_ON = frozenset(name for name, value in ReadingsConfig() if value)
"""The readings on by default."""
_YES_NO = re.compile(rf"\s*({'|'.join(_YES_NO_VALUES)})\b(?![-'])", re.IGNORECASE)
_POLAR_WORD = re.compile(rf"\b({'|'.join(_YES_NO_VALUES)})\b(?![-'])", re.IGNORECASE)


def ask_items(items: list, on: frozenset[str] | None = None, used: Used | None = None) -> list:
    """An answer list to a yes/no question (the gold is an ASK) with a text that starts with
    yes, no, true or false (or yep, yeah, nope, nah) read as that boolean (`"Yes"`, `"no"`,
    `"Yes, it is."`), unless a word of the other sense follows (`"No idea, but I would guess
    yes."`: the first word is not the answer); other items as they are. `on`: the readings
    switched on (`yes_no`; `other_languages` for `Ja`, `Nein`, `Sí`); `used`: see `Used`."""
    on = _DEFAULT_ON if on is None else on
    out = []
    for item in items:
        found = _YES_NO.match(item) if isinstance(item, str) else None
        if found:
            value = _YES_NO_VALUES[found[1].lower()]
            if all(_YES_NO_VALUES[word.lower()] == value for word in _POLAR_WORD.findall(item, found.end())):
                needs = frozenset({"yes_no", "other_languages"} if found[1].lower() in _FOREIGN_YES_NO else {"yes_no"})
                if _gated((value, needs), on, used) is not None:
                    out.append(value)
                    continue
        out.append(item)
    return out


Used = dict[str, bool]
"""The readings that found something in an answer list: True when applied, False when one it
needed was off (the answer would read otherwise with it on: the judge's leniency figures ask
the all-rules reading only then)."""
Read = tuple[object, frozenset[str]]
"""What a reading made of an item, and the readings it needed."""


def _gated(found: Read | None, on: frozenset[str], used: Used | None) -> object | None:
    """The reading's value when every reading it needs is on, else None; noted in `used`."""
    if found is None:
        return None
    applied = found[1] <= on
    if used is not None:
        for name in found[1]:
            used[name] = used.get(name, False) or (applied and name in on)
    return found[0] if applied else None


_DECLARED = re.compile(r"PREFIX\s+([A-Za-z][\w.-]*|)\s*:\s*<([^<>\s]*)>", re.IGNORECASE)
_PREFIXED = re.compile(r"\s*([A-Za-z][\w.-]*|):([^\s:/<>()\[\]]+)\s*$")
_WITH_ID = re.compile(r"(.+?)\s*\(\s*([^\s()]+)\s*\)\s*$")


@lru_cache(maxsize=4096)  # one reference query per question, read for each of its answer lists
def declared_prefixes(sparql: str) -> dict[str, str]:
    """The prefixes a query's PREFIX lines declare: name -> namespace IRI."""
    return {name: iri for name, iri in _DECLARED.findall(sparql)}


def _one_boolean(gold: QueryResult) -> bool:
    """Whether the gold is a single xsd:boolean value: a yes/no question asked with SELECT."""
    if gold.total != 1 or len(gold.rows) != 1 or len(gold.rows[0]) != 1:
        return False
    cell = gold.rows[0][0]
    return cell is not None and cell.type == "literal" and cell.datatype == _XSD_BOOLEAN


def read_items(
    items: list, reference: str, gold: QueryResult, store_prefixes: dict[str, str] | None = None, question: str = "",
    readings: ReadingsConfig | None = None, used: Used | None = None,
) -> list:
    """An answer list as a grader reads it against this question (`reference`: its reference
    query; `gold`: its gold), before normalization:
    - to a yes/no question (an ASK gold, or a gold of one xsd:boolean value: `SELECT ?passed`),
      a text starting with yes / no / true / false is that boolean (`ask_items`);
    - an item written as a SPARQL JSON term, as QALD answers are (`{"type": "uri", "value":
      "http://..."}`, a literal with its `datatype` or `xml:lang`), is its value;
    - a prefixed name the reference query declares, or else the store predeclares
      (`store_prefixes`), is its IRI (`wd:Q42` -> `http://www.wikidata.org/entity/Q42`);
    - a name followed by an identifier in parentheses (`Christopher Nolan (Q25191)`, `Nolan
      (wd:Q25191)`) is that identifier, when it is the tail of one of the gold's IRIs: the
      identifier says which entity the name means;
    - a text that says it is the answer (`The answer is Elena Herzog.`, `Answer: 42`) is what
      it says the answer is;
    - where the gold is empty, one text saying there is none (`None`, `No such line.`, `There is
      no such station.`) is the empty list;
    - where the gold holds a date (xsd:date or xsd:dateTime), a date written out in English
      (`January 1, 1985`, `1 Jan 1985`, `1st of January, 1985`) is that date (`1985-01-01`),
      alone or as the one date of a plain sentence (`It opened on 17 May 1902.`); a numeric
      form is read only when its order of day and month is plain (`05/15/1915`, `15.05.1915`:
      no month 15), never `01/02/1985`. A year alone (`1994`) is the gold's 1 January of that
      year, where the gold holds that date: Wikidata writes a date known to the year as its 1
      January (`1994-01-01T00:00:00Z`);
    - where every gold value is a number, a number with a unit or a currency (`169 minutes`,
      `193 cm`, `$1,200`, `45%`) or a hedge (`about 150`) is that number, `2.5 million` is
      2500000, and whole number words are read (`three`, `one hundred and sixty`, `a dozen`); a
      decimal comma is read (`24,2 km`). The
      gold's number has no unit: a unit is checked against the question (`question`: its text),
      and one of the dimension of a unit the question names but another (`24.2 miles` where it
      asks in km, `$79` where it asks in euros) is not read. The one number of a plain
      sentence is read the same way (`There are 40 stations in Bremsfeld.`);
    A sentence is read only when it holds one such value and no word that qualifies it (not,
    never, more, less, over, about ... or, maybe): `It is not 40.` stays as written.
    Anything else stays as it is.

    Only the readings `readings` switches on apply (default: `ReadingsConfig()`, the judges'
    defaults); each that found something is noted in `used` (`Used`)."""
    on = _DEFAULT_ON if readings is None else frozenset(name for name, value in readings if value)
    items = [_gated(_json_term(item), on, used) or item for item in items]
    items = [_gated(_said(item), on, used) or item for item in items]
    if gold.form == "ask" or _one_boolean(gold):
        return ask_items(items, on, used)
    if gold.form == "select" and gold.total == 0 and len(items) == 1 and isinstance(items[0], str) and (none := _NONE.match(items[0])):
        foreign = none[0].strip().split()[0].lower().rstrip(".!") in _FOREIGN_NONE
        if _gated(([], frozenset({"answer_phrases"} | ({"other_languages"} if foreign else set()))), on, used) is not None:
            return []
    prefixes = _prefixes(reference, store_prefixes)
    dates, numbers, tails = _GOLD_KINDS.get(gold)
    asked = units_named(question) if numbers else frozenset()
    out = []
    for item in items:
        if isinstance(item, str):
            if dates:
                item = _gated(_date_of(item, gold), on, used) or item
            elif numbers:
                item = _gated(_unit_number(item, asked), on, used) or _gated(_sentence_number(item, asked), on, used) or item
            item = _gated(_expanded(item, prefixes), on, used) or item
            item = _gated(_identified(item, prefixes, tails), on, used) or item
        out.append(item)
    return out


def _prefixes(reference: str, store_prefixes: dict[str, str] | None) -> dict[str, str]:
    return {**store_prefixes, **declared_prefixes(reference)} if store_prefixes else declared_prefixes(reference)


class _GoldTails:
    """The gold's IRI tails, casefolded, read when first asked for (`Name (ID)` items only)."""

    def __init__(self, gold: QueryResult) -> None:
        self._gold, self._tails = gold, None

    def __contains__(self, tail: str) -> bool:
        if self._tails is None:
            self._tails = {iri_tail(t.value).casefold() for row in self._gold.rows for t in row if t is not None and t.type == "uri"}
        return tail in self._tails


def _gold_kinds(gold: QueryResult) -> tuple[bool, bool, _GoldTails]:
    """What `read_items` reads of a gold whatever the answer: whether it holds a date, whether
    every value is a number (and none a date), its IRI tails (read when first asked for)."""
    dates = _holds_dates(gold)
    return dates, not dates and _all_numbers(gold), _GoldTails(gold)


_GOLD_KINDS: GoldCache[tuple[bool, bool, _GoldTails]] = GoldCache(_gold_kinds, size=16)  # the golds in flight
"""`_gold_kinds` by gold (identity, as the judges keep their prepared golds): every answer list
of a question, each judge and each leniency variant reading it, reads the gold's cells once (a
scan of every cell of a 1,500-row gold per answer list before)."""


def _identified(item: str, prefixes: dict[str, str], tails: _GoldTails) -> Read | None:
    """`Name (ID)` as the ID, when the ID is the tail of a gold IRI."""
    named = _WITH_ID.match(item) if item.endswith(")") else None
    if not named:
        return None
    identifier = _expanded(named[2], prefixes)
    identifier_text = identifier[0] if identifier else named[2]
    if iri_tail(unbracketed(identifier_text)).casefold() not in tails:
        return None
    return identifier_text, frozenset({"name_with_id"}) | (identifier[1] if identifier else frozenset())


def _json_term(item: object) -> Read | None:
    """A SPARQL JSON term's value."""
    value = _term_value(item)
    return None if value is item else (value, frozenset({"sparql_notation"}))


def _said(item: object) -> Read | None:
    """What a text saying it is the answer says (`The answer is X.`)."""
    if not isinstance(item, str):
        return None
    said = _said_answer(item)
    return None if said == item else (said, frozenset({"answer_phrases"}))


def _date_of(item: str, gold: QueryResult) -> Read | None:
    """The date a text states, with the readings it needed."""
    for read, needs in ((_prose_date, "written_dates"), (_numeric_date, "written_dates")):
        found = read(item)
        if found:
            return found, frozenset({needs}) | (_FOREIGN if _foreign_month(item) else frozenset())
    year = _year_date(item, gold)
    if year:
        return year, frozenset({"year_for_date"})
    found = _sentence_date(item)
    if found:
        return found, frozenset({"sentence_values", "written_dates"}) | (_FOREIGN if _foreign_month(item) else frozenset())
    return None


_FOREIGN = frozenset({"other_languages"})
_FOREIGN_NONE = frozenset({"keine", "kein", "keiner", "nichts", "niemand", "ninguno", "ninguna", "ningún", "nada", "nadie"})


_TERM_TYPES = frozenset({"uri", "literal", "typed-literal"})
"""SPARQL JSON term types read as their value (a blank node's label names nothing outside its result)."""


def _term_value(item: object) -> object:
    """The value of an item written as a SPARQL JSON term (`{"type": "uri", "value": ...}`);
    any other item as it is."""
    if isinstance(item, dict) and item.get("type") in _TERM_TYPES and isinstance(item.get("value"), str):
        return item["value"]
    return item


_MONTHS = {
    name: number
    for number, names in enumerate(("january jan januar jänner enero", "february feb februar febrero", "march mar märz marzo",
                                    "april apr abril", "may mai mayo", "june jun juni junio", "july jul juli julio", "august aug agosto",
                                    "september sep sept septiembre setiembre", "october oct oktober octubre", "november nov noviembre",
                                    "december dec dezember diciembre"), 1)  # fmt: skip
    for name in names.split()
}
"""Month names in English, German and Spanish: none names another month in another of them."""
_ENGLISH_MONTHS = frozenset(
    "january jan february feb march mar april apr may june jun july jul august aug september sep sept october oct november nov december dec".split()
)


def _foreign_month(text: str) -> bool:
    """Whether a text names a month in German or Spanish only (`Mai`, `marzo`) or writes a date
    the German or Spanish way (`15. Mai 1915`, `3 de marzo de 2001`)."""
    words = re.findall(r"[^\W\d_]+", text.lower())
    return any(w in _MONTHS and w not in _ENGLISH_MONTHS for w in words) or bool(re.search(r"\d\.\s*[^\W\d_]|\bde\s+[^\W\d_]", text, re.IGNORECASE))
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_MONTH = r"([^\W\d_]+)\.?"
_PROSE_DATES = (
    (re.compile(rf"\s*{_MONTH}\s+{_DAY},?\s+(\d{{4}})\s*$", re.IGNORECASE), 1, 2, 3),  # January 1, 1985
    (re.compile(rf"\s*(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\s*$", re.IGNORECASE), 2, 1, 3),  # 1 January 1985
    (re.compile(rf"\s*(?:am\s+)?(\d{{1,2}})\.\s*{_MONTH}\s+(\d{{4}})\s*\.?\s*$", re.IGNORECASE), 2, 1, 3),  # 15. Mai 1915
    (re.compile(rf"\s*(?:el\s+)?(\d{{1,2}})\s+de\s+{_MONTH}\s+del?\s+(\d{{4}})\s*\.?\s*$", re.IGNORECASE), 2, 1, 3),  # el 3 de marzo de 2001
)
_PROSE_DATES_IN = (
    (re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+(\d{{4}})\b", re.IGNORECASE), 1, 2, 3),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b", re.IGNORECASE), 2, 1, 3),
    (re.compile(rf"\b(\d{{1,2}})\.\s*{_MONTH}\s+(\d{{4}})\b", re.IGNORECASE), 2, 1, 3),
    (re.compile(rf"\b(\d{{1,2}})\s+de\s+{_MONTH}\s+del?\s+(\d{{4}})\b", re.IGNORECASE), 2, 1, 3),
)
"""`_PROSE_DATES` anywhere in a text."""
_DATE_TYPES = frozenset({"http://www.w3.org/2001/XMLSchema#date", "http://www.w3.org/2001/XMLSchema#dateTime"})


def _prose_date(text: str) -> str | None:
    """`text` as an ISO date when it is a date written out in English, else None."""
    for pattern, month, day, year in _PROSE_DATES:
        found = pattern.match(text)
        if found and (number := _MONTHS.get(found[month].lower())):
            try:
                return date(int(found[year]), number, int(found[day])).isoformat()
            except ValueError:  # 31 February
                return None
    return None


_NUMERIC_DATE = re.compile(r"\s*(\d{1,2})([./-])(\d{1,2})\2(\d{4})\s*$")


def _numeric_date(text: str) -> str | None:
    """`text` as an ISO date when it is a numeric date whose order of day and month is plain
    (`05/15/1915`, `15.05.1915`, `3/3/1990`); None when it is not one, or either order reads."""
    found = _NUMERIC_DATE.match(text)
    if not found:
        return None
    first, second, year = int(found[1]), int(found[3]), int(found[4])
    if first != second and first <= 12 and second <= 12:
        return None  # 01/02/1985: January or February
    month, day = (first, second) if second > 12 else (second, first)
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


_ANSWER_IS = re.compile(r"\s*(?:the\s+)?(?:final\s+|correct\s+)?answer\s*(?:is\s*:?|:)\s*(.+?)\s*\.?\s*$", re.IGNORECASE | re.DOTALL)
_NONE = re.compile(
    r"\s*(?:none|nothing|nobody|no\s+one|n/?a|null|nil|empty|keine?|keiner|nichts|niemand|ningun[oa]|ningún|nada|nadie|no(?!\s+(?:idea|clue|answer|comment)\b)(?:\s+[\w-]+){1,3}"
    r"|there\s+(?:is|are)\s+no(?:ne)?\b[^.]*)\s*[.!]?\s*$",
    re.IGNORECASE,
)
_QUALIFIED = re.compile(
    r"\b(?:not|no|never|none|neither|nor|without|except|n't|isn't|wasn't|aren't|weren't|doesn't|didn't|don't|more|less|fewer|over|"
    r"under|least|most|between|up\s+to|nearly|almost|about|around|roughly|approximately|or|either|maybe|perhaps|possibly|probably|"
    r"guess|unsure|unknown|if|"
    # the same in German and Spanish (`Mehr als 40.`, `Es gibt nicht 360.`, `Más de 16`): none is an English word
    r"nicht|kein|keine|keiner|nie|niemals|ohne|außer|mehr|weniger|über|unter|mindestens|höchstens|beinahe|etwa|ungefähr|circa|rund|"
    r"zwischen|oder|vielleicht|wahrscheinlich|möglicherweise|eventuell|unbekannt|"
    r"nunca|ningún|ninguno|ninguna|excepto|más|mas|menos|mínimo|máximo|casi|aproximadamente|alrededor|unos|unas|entre|"
    r"quizás|quizá|tal\s+vez|posiblemente|probablemente|desconocido)\b",
    re.IGNORECASE,
)
"""Words that make a sentence's one value something else than the answer (a negation, a bound,
a hedge, an alternative), in English, German and Spanish."""


def _said_answer(text: str) -> str:
    """What a text that says it is the answer (`The answer is X.`) says; the text otherwise."""
    found = _ANSWER_IS.match(text)
    return found[1] if found and found[1] else text


def _sentence_date(text: str) -> str | None:
    """The one date written out in English in a plain sentence (`It opened on 17 May 1902.`)."""
    if _QUALIFIED.search(text):
        return None
    found = [(pattern, match) for pattern in _PROSE_DATES_IN for match in pattern[0].finditer(text)]
    spans = {match.span() for _, match in found}
    if len(spans) != 1:
        return None
    (_, month, day, year), match = found[0]
    number = _MONTHS.get(match[month].lower())
    try:
        return date(int(match[year]), number, int(match[day])).isoformat() if number else None
    except ValueError:
        return None


_NUMBER_IN = re.compile(r"(?<![\w.,/:-])[+-]?\d[\d,]*(?:\.\d+)?(?![\w/:-]|[.,]\d)(?:\s+(?P<unit>[^\W\d_][\w-]*))?")


def _sentence_number(text: str, asked: frozenset[str]) -> Read | None:
    """The one number of a plain sentence (`There are 40 stations in Bremsfeld.`, `Every 7.5
    minutes.`), its unit checked against the question as `_unit_number` does; None otherwise."""
    if not any(c.isalpha() for c in text) or _QUALIFIED.search(text):
        return None
    found = list(_NUMBER_IN.finditer(text))
    if len(found) != 1 or (found[0]["unit"] and _ruled_out(found[0]["unit"], asked)):
        return None
    number = found[0].group().split()[0]
    if _DECIMAL_COMMA.fullmatch(number):
        return number.replace(",", "."), frozenset({"sentence_values", "other_languages"})
    return number, frozenset({"sentence_values"})


def _holds_dates(gold: QueryResult) -> bool:
    return any(cell is not None and cell.datatype in _DATE_TYPES for row in gold.rows for cell in row)


_YEAR = re.compile(r"\s*(\d{4})\s*$")


def _year_date(text: str, gold: QueryResult) -> str | None:
    """`YYYY-01-01` for a year alone (`1994`) when the gold holds that date, else None."""
    found = _YEAR.match(text)
    if not found:
        return None
    first = f"{found[1]}-01-01"
    held = any(cell is not None and cell.datatype in _DATE_TYPES and cell.value.startswith(first) for row in gold.rows for cell in row)
    return first if held else None


def _all_numbers(gold: QueryResult) -> bool:
    cells = [cell for row in gold.rows for cell in row]
    return bool(cells) and all(cell is not None and cell.datatype in XSD_NUMBERS for cell in cells)


_MULTIPLIERS = {"hundred": 2, "thousand": 3, "million": 6, "billion": 9, "trillion": 12}
_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = {word: 10 * n for n, word in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_HEDGE_WORDS = r"(?:about|approximately|approx\.?|around|roughly|circa|ca\.|~)"
"""Words that hedge a number (`about 150`): read as the number."""
_WITH_UNIT = re.compile(
    rf"\s*(?P<hedge>{_HEDGE_WORDS}\s*)?(?P<currency>[$€£¥])?\s*"
    r"(?P<number>[+-]?(?:[1-9]\d{0,2}(?:\.\d{3})+,\d+|[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?|\d+,\d{1,2}(?!\d)|\d+(?:\.\d+)?))\s*"
    rf"(?:(?P<scale>{'|'.join(_MULTIPLIERS)})s?\b)?\s*"
    rf"(?P<unit>%|[$€£¥]|(?!(?:{'|'.join(_MULTIPLIERS)})s?\b)[^\W\d_°][^\s\d]*(?:\s+[^\W\d_][^\s\d]*){{0,2}}|°\s*[CFK]?)?\s*\.?\s*$",
    re.IGNORECASE,
)
"""A number in digits (in words: `_words_number`), with a hedge before it (`about`), a
currency sign, a scale word (`million`) or a unit after it (one to three words, `%`, `°C`, `€`).
A comma before one or two digits is a decimal comma (`24,2`); before three, thousands."""


def _unit_number(text: str, asked: frozenset[str] = frozenset()) -> Read | None:
    """The number of `169 minutes`, `$1,200`, `2.5 million people`, `about 150`, `three`,
    `24,2 km`, `five (5)`; None for a bare number in digits (read by rule 4 as it is), a unit
    the question rules out (`asked`: the units it names, `_units_named`; `24.2 miles` where it
    asks for km, `$79` where it asks for euros), or anything else. With the readings it needed:
    `hedged_numbers` for a hedge, `units` for a unit, currency or scale word, `number_words` for
    words, `other_languages` for German or Spanish words and a decimal comma."""
    both = _BOTH_FORMS.match(text)
    if both:  # `five (5)`: read when both forms say the same number
        first, second = (_unit_number(part, asked) or _bare(part) for part in (both[1], both[2]))
        if first is None or second is None or first[0] != second[0]:
            return None
        return first[0], first[1] | second[1]
    worded = _words_number(text, asked)
    if worded is not None:
        return worded
    foreign = _FOREIGN_WORDS.get(text.strip().rstrip(".").strip().casefold())
    if foreign is not None:
        return foreign, frozenset({"number_words", "other_languages"})
    found = _WITH_UNIT.match(text)
    if not found:
        return None
    for unit in (found["currency"], found["unit"]):
        if unit and (_ruled_out(unit, asked) or _QUALIFIED.search(unit)):
            return None  # `24.2 miles` where the question asks in km; `154 minutes or more`
    number = found["number"]
    decimal_comma = bool(_DECIMAL_COMMA.fullmatch(number) or _DOT_GROUPS.fullmatch(number))  # `24,2`, `4.250.000,50`
    if not (found["hedge"] or found["currency"] or found["scale"] or found["unit"] or decimal_comma):
        return None  # a bare number in digits: rule 4 reads it as it is
    needs = {"hedged_numbers"} if found["hedge"] else set()
    needs |= {"units"} if found["currency"] or found["scale"] or found["unit"] else set()
    needs |= _FOREIGN if decimal_comma else set()
    if decimal_comma:
        number = number.replace(".", "").replace(",", ".")
    if not found["scale"]:
        return number, frozenset(needs)
    try:
        return format(Decimal(number.replace(",", "")).scaleb(_MULTIPLIERS[found["scale"].lower()]).normalize(), "f"), frozenset(needs)
    except InvalidOperation:
        return None


_WORD_VALUES = {**{word: n for n, word in enumerate(_ONES)}, **_TENS}
_FOREIGN_WORDS = {
    word: str(n)
    for n, words in enumerate(("cero", "eins uno", "zwei dos", "drei tres", "vier cuatro", "fünf cinco", "sechs seis", "sieben siete",
                               "acht ocho", "neun nueve", "zehn diez", "", "zwölf doce"))  # fmt: skip
    for word in words.split()
}
"""German and Spanish whole numbers zero to twelve, as a whole answer (`drei`, `Seis`): none is
an English word (`elf` and `once` are left out: they are; so is `null`, which in English says there is no value)."""
_HEDGE = re.compile(rf"^\s*{_HEDGE_WORDS}\s+", re.IGNORECASE)


def _words_number(text: str, asked: frozenset[str]) -> Read | None:
    """The number of a text written in whole number words (`one hundred and sixty`, `two
    thousand three hundred`, `a dozen`), with up to three unit words after it, checked as
    `_unit_number` checks them; None when it does not start so, or its words do not make one
    number (`three four`)."""
    unhedged = _HEDGE.sub("", text, count=1)
    words = re.split(r"[\s-]+", unhedged.strip().rstrip(".").lower())
    total, current, k, last = 0, 0, 0, ""
    if len(words) > 1 and words[0] == "a" and words[1] in ("dozen", "hundred", "thousand", "million"):
        current, k, last = 1, 1, "one"
    while k < len(words):
        word = words[k]
        if word in _WORD_VALUES and (last not in _WORD_VALUES or (last in _TENS and _WORD_VALUES[word] < 10)):
            current += _WORD_VALUES[word]
        elif word == "dozen" and last in _WORD_VALUES:
            current *= 12
        elif word == "hundred" and last in _WORD_VALUES and current % 100:
            current *= 100
        elif word in ("thousand", "million", "billion") and last and last != "and":
            total, current = total + current * 10 ** _MULTIPLIERS[word], 0
        elif word == "and" and last in ("hundred", "thousand", "million", "billion") and k + 1 < len(words) and words[k + 1] in _WORD_VALUES:
            pass
        else:
            break
        last, k = word, k + 1
    unit = " ".join(words[k:])
    if not last or last == "and" or len(words) - k > 3 or (unit and not unit[0].isalpha()):
        return None
    if unit and (_ruled_out(unit, asked) or _QUALIFIED.search(unit) or unit.split()[0] in (*_WORD_VALUES, "and", "a")):
        return None
    needs = {"number_words"} | ({"hedged_numbers"} if unhedged != text else set()) | ({"units"} if unit else set())
    return str(total + current), frozenset(needs)


_DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d{1,2}")
_DOT_GROUPS = re.compile(r"[+-]?[1-9]\d{0,2}(?:\.\d{3})+,\d+")
"""Thousands grouped with dots before a decimal comma (`4.250.000,50`, `5.200,5`): a form only
German, Spanish and the like write. Dot groups without a decimal comma (`980.000`) are not
read: in English that is 980."""
_BOTH_FORMS = re.compile(r"\s*([^()]+?)\s*\(\s*([^()]+?)\s*\)\s*$")


def _bare(text: str) -> Read | None:
    """A number in digits alone, as its text (no reading needed)."""
    text = text.strip()
    return (text, frozenset()) if re.fullmatch(r"[+-]?\d+(?:\.\d+)?", text) else None


_UNITS: dict[str, tuple[str, str]] = {
    spelling: (dimension, unit)
    for dimension, units in {
        "length": {
            "km": "km kilometre kilometres kilometer kilometers", "m": "m metre metres meter meters", "cm": "cm centimetre centimetres centimeter centimeters",
            "mm": "mm millimetre millimetres millimeter millimeters", "mi": "mi mile miles", "ft": "ft foot feet", "yd": "yd yard yards",
            "nmi": "nmi", "ly": "ly light-year light-years lightyear lightyears", "au": "au",
        },
        "mass": {"kg": "kg kilogram kilograms kilogramme kilogrammes", "g": "g gram grams gramme grammes", "t": "t tonne tonnes ton tons", "lb": "lb lbs pound pounds", "oz": "oz ounce ounces"},
        "time": {"s": "s sec secs second seconds", "min": "min mins minute minutes", "h": "h hr hrs hour hours", "d": "day days", "wk": "week weeks", "mo": "month months", "yr": "yr yrs year years"},
        "money": {"usd": "$ usd dollar dollars", "eur": "€ eur euro euros", "gbp": "£ gbp", "jpy": "¥ jpy yen", "chf": "chf franc francs"},
        "temperature": {"c": "°c celsius", "f": "°f fahrenheit", "k": "kelvin"},
        "speed": {"kmh": "km/h kmh kph", "mph": "mph", "m/s": "m/s", "kn": "kn knot knots"},
        "area": {"km2": "km² km2", "m2": "m² m2", "ha": "ha hectare hectares", "ac": "acre acres", "mi2": "mi² sq mi"},
    }.items()
    for unit, spellings in units.items()
    for spelling in spellings.split()
}
"""Units a number is given in, by spelling: (dimension, unit). A unit of the same dimension
as one the question names, but another one, rules the reading out."""
_DIMENSION = {unit: dimension for dimension, unit in _UNITS.values()}
_QUESTION_UNIT = re.compile(
    r"(?<![\w$€£¥°])(" + "|".join(sorted((re.escape(s) for s in _UNITS if len(s) > 1 or not s.isalpha()), key=len, reverse=True)) + r")(?![\w/²])",
    re.IGNORECASE,
)
"""A unit in a question's text (one-letter spellings left out: `s`, `m`, `h` are words too)."""


def units_named(question: str) -> frozenset[str]:
    """The units a question's text names (`In km, how long ...?`, `... in euros?`), as units."""
    return frozenset(_UNITS[spelling.lower()][1] for spelling in _QUESTION_UNIT.findall(question))


def _ruled_out(spelling: str, asked: frozenset[str]) -> bool:
    """Whether the question names a unit of `spelling`'s dimension other than `spelling`'s."""
    known = _UNITS.get(re.sub(r"\s+", " ", spelling.strip().lower()))
    if known is None or not asked:
        return False
    same = {unit for unit in asked if _DIMENSION[unit] == known[0]}
    return bool(same) and known[1] not in same


def _expanded(text: str, prefixes: dict[str, str]) -> Read | None:
    """The IRI `text` names when it is a prefixed name of `prefixes`, else None."""
    found = _PREFIXED.match(text) if prefixes and ":" in text else None
    if found and found[1] in prefixes and not spells_iri(text.strip()):
        return prefixes[found[1]] + found[2], frozenset({"sparql_notation"})
    return None
