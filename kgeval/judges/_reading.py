"""How a grader reads an answer list against its question, before normalization (`read_items`).

A system that answers with a list instead of SPARQL writes what a person would: `yes`, `wd:Q42`,
`Douglas Adams (Q42)`, `January 1, 1985`, `169 minutes`, `three`. Each reading here turns such
an item into the value the gold holds, where the gold says which kind of value is asked (a
boolean, dates, numbers, the gold's IRIs); anything not read stays as written, and the
normalization rules (`_normalize`) then compare it as a text. A reading never widens what is
accepted beyond what the item says: an item naming two different values, or a unit the question
rules out, is not read.
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from kgeval.judges._normalize import XSD_NUMBERS, iri_tail, spells_iri, unbracketed
from kgeval.stores import QueryResult

_XSD_BOOLEAN = "http://www.w3.org/2001/XMLSchema#boolean"

_YES_NO_VALUES = {"yes": True, "yep": True, "yeah": True, "yup": True, "true": True, "no": False, "nope": False, "nah": False, "false": False}
_YES_NO = re.compile(rf"\s*({'|'.join(_YES_NO_VALUES)})\b(?![-'])", re.IGNORECASE)
_POLAR_WORD = re.compile(rf"\b({'|'.join(_YES_NO_VALUES)})\b(?![-'])", re.IGNORECASE)


def ask_items(items: list) -> list:
    """An answer list to a yes/no question (the gold is an ASK) with a text that starts with
    yes, no, true or false (or yep, yeah, nope, nah) read as that boolean (`"Yes"`, `"no"`,
    `"Yes, it is."`), unless a word of the other sense follows (`"No idea, but I would guess
    yes."`: the first word is not the answer); other items as they are."""
    out = []
    for item in items:
        found = _YES_NO.match(item) if isinstance(item, str) else None
        if found:
            value = _YES_NO_VALUES[found[1].lower()]
            if all(_YES_NO_VALUES[word.lower()] == value for word in _POLAR_WORD.findall(item, found.end())):
                out.append(value)
                continue
        out.append(item)
    return out


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


def read_items(items: list, reference: str, gold: QueryResult, store_prefixes: dict[str, str] | None = None) -> list:
    """An answer list as a grader reads it against this question (`reference`: its reference
    query; `gold`: its gold), before normalization:
    - to a yes/no question (an ASK gold, or a gold of one xsd:boolean value: `SELECT ?passed`),
      a text starting with yes / no / true / false is that boolean (`ask_items`);
    - a prefixed name the reference query declares, or else the store predeclares
      (`store_prefixes`), is its IRI (`wd:Q42` -> `http://www.wikidata.org/entity/Q42`);
    - a name followed by an identifier in parentheses (`Christopher Nolan (Q25191)`, `Nolan
      (wd:Q25191)`) is that identifier, when it is the tail of one of the gold's IRIs: the
      identifier says which entity the name means;
    - where the gold holds a date (xsd:date or xsd:dateTime), a date written out in English
      (`January 1, 1985`, `1 Jan 1985`, `1st of January, 1985`) is that date (`1985-01-01`);
      numeric forms (`01/02/1985`) are left alone: their order of day and month is unknown. A
      year alone (`1994`) is the gold's 1 January of that year, where the gold holds that date:
      Wikidata writes a date known to the year as its 1 January (`1994-01-01T00:00:00Z`);
    - where every gold value is a number, a number with a unit or a currency (`169 minutes`,
      `193 cm`, `$1,200`, `45%`) or a hedge (`about 150`) is that number, `2.5 million` is
      2500000, and `three`, `twenty-one` are 3 and 21: the gold's number has no unit to compare
      with, so a wrong unit is not caught.
    Anything else stays as it is."""
    if gold.form == "ask" or _one_boolean(gold):
        return ask_items(items)
    prefixes = {**store_prefixes, **declared_prefixes(reference)} if store_prefixes else declared_prefixes(reference)
    tails: set[str] | None = None
    dates = _holds_dates(gold)
    numbers = not dates and _all_numbers(gold)
    out = []
    for item in items:
        if isinstance(item, str):
            item = (_prose_date(item) or _year_date(item, gold) or item) if dates else item
            item = (_unit_number(item) or item) if numbers else item
            item = _expanded(item, prefixes)
            named = _WITH_ID.match(item) if item.endswith(")") else None
            if named:
                if tails is None:
                    tails = {iri_tail(t.value).casefold() for row in gold.rows for t in row if t is not None and t.type == "uri"}
                identifier = _expanded(named[2], prefixes)
                if iri_tail(unbracketed(identifier)).casefold() in tails:
                    item = identifier
        out.append(item)
    return out


_MONTHS = {
    name: number
    for number, names in enumerate(("january jan", "february feb", "march mar", "april apr", "may", "june jun", "july jul",
                                    "august aug", "september sep sept", "october oct", "november nov", "december dec"), 1)  # fmt: skip
    for name in names.split()
}
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_MONTH = r"([a-z]+)\.?"
_PROSE_DATES = (
    (re.compile(rf"\s*{_MONTH}\s+{_DAY},?\s+(\d{{4}})\s*$", re.IGNORECASE), 1, 2, 3),  # January 1, 1985
    (re.compile(rf"\s*(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\s*$", re.IGNORECASE), 2, 1, 3),  # 1 January 1985
)
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
_WITH_UNIT = re.compile(
    r"\s*(?P<hedge>(?:about|approximately|approx\.?|around|roughly|circa|ca\.|~)\s*)?(?P<currency>[$€£¥])?\s*"
    r"(?:(?P<number>[+-]?(?:[1-9]\d{0,2}(?:,\d{3})+|\d+)(?:\.\d+)?)"
    rf"|(?P<tens>{'|'.join(_TENS)})(?:[-\s](?P<ten_ones>{'|'.join(_ONES[1:10])}))?\b|(?P<ones>{'|'.join(sorted(_ONES, key=len, reverse=True))})\b)\s*"
    rf"(?:(?P<scale>{'|'.join(_MULTIPLIERS)})s?\b)?\s*"
    rf"(?P<unit>%|(?!(?:{'|'.join(_MULTIPLIERS)})s?\b)[^\W\d_°][^\s\d]*(?:\s+[^\W\d_][^\s\d]*)?|°\s*[CFK]?)?\s*$",
    re.IGNORECASE,
)
"""A number, in digits or words (`three`, `twenty-one`), with a hedge before it (`about`), a
currency sign, a scale word (`million`) or a unit after it (one or two words, `%`, `°C`)."""


def _unit_number(text: str) -> str | None:
    """The number of `169 minutes`, `$1,200`, `2.5 million people`, `about 150`, `three`; None
    for a bare number in digits (read by rule 4 as it is) or anything else."""
    found = _WITH_UNIT.match(text)
    if not found:
        return None
    if found["number"] is None:  # in words
        words = found["ones"] or found["tens"]
        number = str(_ONES.index(words.lower()) if found["ones"] else _TENS[words.lower()] + (_ONES.index(found["ten_ones"].lower()) if found["ten_ones"] else 0))
    elif found["hedge"] or found["currency"] or found["scale"] or found["unit"]:
        number = found["number"]
    else:
        return None
    if not found["scale"]:
        return number
    try:
        return format(Decimal(number.replace(",", "")).scaleb(_MULTIPLIERS[found["scale"].lower()]).normalize(), "f")
    except InvalidOperation:
        return None


def _expanded(text: str, prefixes: dict[str, str]) -> str:
    """`text` as the IRI it names when it is a prefixed name of `prefixes`, else as it is."""
    found = _PREFIXED.match(text) if prefixes and ":" in text else None
    if found and found[1] in prefixes and not spells_iri(text.strip()):
        return prefixes[found[1]] + found[2]
    return text
