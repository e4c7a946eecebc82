"""The stress set: coincidentally right wrong answers and equivalent rewrites (issue 40, part 4).

`cases.yaml` beside this module holds candidate SPARQL for questions of the shipped sample
holdout (`holdout: sample`) and of CK25 (`holdout: ck25`, read from $KGEVAL_CK25, never copied
here). Each case is one of two kinds:

- `wrong`: a query that answers the question wrongly, yet gives the gold's rows on the shipped
  KG (a dropped filter every row passes, hard-coded answer IRIs, a count of another class of the
  same size, ...). Its `breaks_on` is one concrete edit of the KG (triples removed and added)
  after which its result and the reference query's differ: the proof that it is wrong.
- `rewrite`: a query equivalent to the reference query on every KG of the same schema (its `why`
  argues it), so it must be accepted on the KG and on every neighbour a test suite fuzzes.

`probes` are further edits of a KG aimed at the corners the rewrites' arguments rest on
(language subtags, repeated solutions, a second entity with the same label): every rewrite
must agree with its reference after each wrong case's edit and each probe of its KG.

The contract this module keeps: a case is read only when it is whole (`load_cases` refuses a
file with a duplicate id, an unknown holdout, kind or category, a wrong case without its edit or
a rewrite with one, naming the case), so a test over the set never passes on a half-read file.
`replay_records` / `write_replay` give the cases as the JSONL `kgeval run --system replay` reads
(kgeval/systems/_replay.py): one record per case, the i-th case of a question on seed i, and
optionally the reference queries on the seeds no case takes, so a run misses no attempt.

Use: `load_cases(kind="wrong")`, then `write_replay(cases, path, fill)` and
`kgeval run --system replay --replay path --seeds N` (N: `seeds_needed`); the mapping it returns
reads the run's verdicts back as case ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

CASES_FILE = Path(__file__).with_name("cases.yaml")
"""The stress set shipped with the tests."""

HoldoutName = Literal["sample", "ck25"]
Kind = Literal["wrong", "rewrite"]
Category = Literal[
    # wrong: what makes it coincide on the shipped KG
    "dropped_filter",  # a filter (or a pattern) every row of this KG passes is left out
    "added_filter",  # a filter every row of this KG passes is added
    "hard_coded",  # the answer's IRIs or values written into the query (VALUES, IN, a constant)
    "same_size_count",  # a count of something else that has the same size here
    "different_path",  # another path that happens to reach the same entities here
    "extra_columns",  # extra columns that de-duplicate to the gold
    "wrong_comparison",  # a comparison or threshold that coincides with the right one here
    "dropped_type",  # a type constraint left out (every subject here has that type)
    "wrong_constant",  # another constant that still selects the same rows here
    "count_distinct",  # COUNT for COUNT(DISTINCT ...) or the reverse, no duplicates here
    # rewrite: how it differs in form
    "reordered_patterns",
    "property_path",
    "values_for_filter",
    "sub_select",
    "optional_never_binds",
    "renamed_variables",
    "shared_variable",
    "filter_form",
    "exists_form",
    "aggregate_form",
    "inverse_path",
]
ExtraRule = Literal["extra_columns", "duplicates"]


class KgEdit(BaseModel):
    """One concrete edit of a KG, as Turtle triples (the file's `prefixes` are declared)."""

    model_config = ConfigDict(extra="forbid")

    remove: str = ""
    """Triples taken out of the KG; each must be in it (an edit that removes nothing proves nothing)."""
    add: str = ""
    """Triples put into the KG; none may be in it already."""


class StressCase(BaseModel):
    """One candidate query for one question, and why it is wrong or equivalent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    """Unique in the set: the question id and a short name (`hr-03-canada`)."""
    holdout: HoldoutName
    """`sample` (the repository's holdout/) or `ck25` ($KGEVAL_CK25 imported as KG `ck25`)."""
    question_id: str = Field(alias="question")
    """The question's id as kgeval spells it (`hr-03`, `ck25-13`)."""
    kind: Kind
    category: Category
    sparql: str
    """The candidate query, as a person would write it (prefixes, comments, keyword case)."""
    why: str
    """One line: why it is wrong, or why it is equivalent on every KG of the same schema."""
    breaks_on: KgEdit | None = None
    """For a wrong case: an edit after which its result and the reference query's differ."""
    needs: tuple[ExtraRule, ...] = ()
    """Comparator leniency the coincidence needs beyond equal multisets of rows with the same
    number of columns (`extra_columns`: it has columns the gold lacks)."""

    @model_validator(mode="after")
    def _edit_matches_kind(self) -> StressCase:
        if self.kind == "wrong" and self.breaks_on is None:
            raise ValueError("a wrong case needs `breaks_on` (the edit of the KG that shows it is wrong)")
        if self.kind == "rewrite" and (self.breaks_on is not None or self.needs):
            raise ValueError("a rewrite has no `breaks_on` and needs no leniency: it is equivalent")
        return self

    @property
    def kg(self) -> str:
        """The KG id the question belongs to (its id's prefix: `hr-03` -> `hr`)."""
        return self.question_id.rsplit("-", 1)[0]


class Probe(BaseModel):
    """An edit of a KG that exercises a corner the rewrites' arguments rest on (a language
    subtag, a repeated solution, a second label): every rewrite of that KG must still agree
    with its reference query after it, as after every wrong case's edit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kg: str
    """The KG id it edits (`hr`, `ck25`)."""
    why: str
    """One line: which rewrites' argument it puts to the test."""
    edit: KgEdit


class StressSet(BaseModel):
    """The whole file: the prefixes its edits use, the cases and the probes."""

    model_config = ConfigDict(extra="forbid")

    prefixes: dict[str, str]
    """Prefix -> namespace, declared before every `breaks_on` edit's Turtle."""
    cases: list[StressCase]
    probes: list[Probe] = []

    @model_validator(mode="after")
    def _unique_ids(self) -> StressSet:
        seen: set[str] = set()
        for case in self.cases:
            if case.id in seen:
                raise ValueError(f"case id {case.id!r} appears twice")
            seen.add(case.id)
        return self

    def edits_of(self, kg: str) -> list[tuple[str, KgEdit]]:
        """Every edit of KG `kg`, named: each wrong case's `breaks_on`, then each probe."""
        edits = [(c.id, c.breaks_on) for c in self.cases if c.kg == kg and c.breaks_on is not None]
        return edits + [(f"probe {i} of {kg}", p.edit) for i, p in enumerate(p for p in self.probes if p.kg == kg)]

    def turtle_prefixes(self) -> str:
        """The `@prefix` lines an edit's Turtle is parsed with."""
        return "".join(f"@prefix {name}: <{iri}> .\n" for name, iri in self.prefixes.items())


def load_stress_set(path: Path = CASES_FILE) -> StressSet:
    """The stress set in `path`; ValueError naming the file and the case when it is not whole."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        return StressSet.model_validate(doc)
    except (yaml.YAMLError, ValidationError) as exc:
        raise ValueError(f"{path}: not a valid stress set: {exc}") from None


def load_cases(path: Path = CASES_FILE, *, holdout: HoldoutName | None = None, kind: Kind | None = None) -> list[StressCase]:
    """The cases of `path`, in file order, optionally only one holdout's or one kind's."""
    return [c for c in load_stress_set(path).cases if (holdout is None or c.holdout == holdout) and (kind is None or c.kind == kind)]


def replay_records(cases: Iterable[StressCase], fill: Sequence[tuple[str, str, str]] = ()) -> list[dict]:
    """Replay records (kgeval/systems/_replay.py's JSONL) for `cases`: the i-th case of a
    question is its seed i. `fill`: (kg, question id, SPARQL) of questions whose seeds the cases
    leave empty (the reference queries, say), so a run over every question misses no attempt;
    each is written for seeds 0 .. seeds-1 where no case took the seed."""
    records: list[dict] = []
    taken: dict[tuple[str, str], int] = {}
    for case in cases:
        key = (case.kg, case.question_id)
        seed = taken.get(key, 0)
        taken[key] = seed + 1
        records.append({"kg": case.kg, "question_id": case.question_id, "seed": seed, "sparql": case.sparql, "case": case.id})
    seeds = seeds_needed(records)
    for kg, question_id, sparql in fill:
        records += [{"kg": kg, "question_id": question_id, "seed": s, "sparql": sparql} for s in range(taken.get((kg, question_id), 0), seeds)]
    return records


def seeds_needed(records: Iterable[dict]) -> int:
    """The `--seeds` a run needs to ask for every record (the highest seed + 1)."""
    return max((r["seed"] for r in records), default=0) + 1


def write_replay(cases: Iterable[StressCase], path: Path, fill: Sequence[tuple[str, str, str]] = ()) -> dict[tuple[str, int], str]:
    """Write `replay_records(cases, fill)` to `path` as JSONL; return (question id, seed) -> case
    id, to read a run's verdicts back as cases (the filled attempts are not in it). The `case`
    field of a record is ignored by the replay system (it reads only what it knows)."""
    records = replay_records(cases, fill)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return {(r["question_id"], r["seed"]): r["case"] for r in records if "case" in r}
