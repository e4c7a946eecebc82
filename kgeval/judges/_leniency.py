"""Leniency, named and counted (DESIGN invariant 13).

Every reading or rule of the execution judge that accepts what the field's comparator rejects
(the comparison's own leniency too: `COMPARATOR_RULES`) has a name (`RULES`), a switch in `judges.execution` (`RULE_SWITCHES`), and a default set
by one principle: an answer is accepted only when it states the same entities and values as the
gold, without guessing. Beside its verdict the judge records, per attempt, in
`details["leniency"]`:

- `standard`: the verdict with every rule and reading off and no vacuous check: the field's
  execution accuracy, compared as Spider's evaluation does (Zhong et al.'s `result_eq`): the same
  number of columns in any order, rows as multisets, in order only where the question is
  order-sensitive (ties on the reference query's ORDER BY keys in any order), after IRI/literal
  normalization; an empty result equal to an empty gold;
- `lenient`: the verdict with every rule and reading on;
- `alone`: the rules that alone decide this verdict, the others as configured: for an accept,
  the rules it needs (off, the answer is rejected); for a reject, the rules off that would
  accept it, each switched on by itself.

A rule can only accept more, so extra judgements are made only where they can change the
answer: none for a model failure, a missing answer, or an accept no rule made; one (`lenient`)
for a plain reject, and one per rule switched off when that one accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

from kgeval.config import ExecutionJudgeConfig, ReadingsConfig
from kgeval.judges._model import Verdict

RuleName = Literal[
    "label_columns", "extra_columns", "duplicates", "entity_for_label", "label_for_entity", "symmetric_pairs", "split_listing", "approximate_numbers",
    "yes_no", "answer_phrases", "sparql_notation", "name_with_id", "written_dates", "year_for_date", "units",
    "number_words", "hedged_numbers", "sentence_values", "other_languages",
]  # fmt: skip
"""Every leniency rule, as verdicts, configurations and reports spell it."""

READINGS: tuple[str, ...] = tuple(ReadingsConfig.model_fields)
"""The answer-list readings (`judges.execution.readings.<name>`): they apply to answer lists only."""
COMPARATOR_RULES: tuple[str, ...] = ("label_columns", "extra_columns", "duplicates")
"""What the comparison itself accepts beyond the field's comparator (same number of columns,
rows as bags): an extra column of labels, any extra column, rows compared as sets."""
RESULT_RULES: tuple[str, ...] = (*COMPARATOR_RULES, "entity_for_label", "label_for_entity", "symmetric_pairs", "split_listing", "approximate_numbers")
"""Rules that apply to executed results (and to answer lists too)."""
RULES: tuple[str, ...] = (*RESULT_RULES, *READINGS)
"""Every rule's name, in the order reports list them."""
FAILURE_PATHS = frozenset({"invalid_sparql", "refused", "candidate_timeout", "over_budget", "no_answer"})
"""Verdict paths no rule can change: wrong under every rule set."""


def rules_on(config: ExecutionJudgeConfig) -> dict[str, bool]:
    """Each rule's switch as `config` sets it."""
    on = {
        "entity_for_label": config.labels.entity_for_label,
        "label_for_entity": config.labels.label_for_entity,
        "symmetric_pairs": config.symmetric_pairs != "off",
        "split_listing": config.split_listing,
        "approximate_numbers": config.approximate_numbers,
        **{rule: getattr(config, rule) for rule in COMPARATOR_RULES},
    }
    return {**on, **config.readings.model_dump()}


def with_rules(config: ExecutionJudgeConfig, on: Mapping[str, bool], *, vacuous: bool | None = None) -> ExecutionJudgeConfig:
    """`config` with the rules in `on` switched as it says (the others as they are). A pairs rule
    switched on keeps its configured reach, or "declared_or_detected" when it was off; the
    label-for-entity rule switched on by `lenient_config` takes shared names too."""
    labels = config.labels.model_copy(update={k: on[k] for k in ("entity_for_label", "label_for_entity") if k in on})
    update: dict = {"labels": labels, "readings": config.readings.model_copy(update={k: on[k] for k in READINGS if k in on})}
    if "symmetric_pairs" in on:
        update["symmetric_pairs"] = (config.symmetric_pairs if config.symmetric_pairs != "off" else "declared_or_detected") if on["symmetric_pairs"] else "off"
    update.update({k: on[k] for k in ("split_listing", "approximate_numbers", *COMPARATOR_RULES) if k in on})
    if vacuous is not None:
        update["vacuous"] = vacuous
    return config.model_copy(update=update)


def standard_config(config: ExecutionJudgeConfig) -> ExecutionJudgeConfig:
    """The field's standard comparison: every rule and reading off, no vacuous check."""
    return with_rules(config, dict.fromkeys(RULES, False), vacuous=False)


def lenient_config(config: ExecutionJudgeConfig) -> ExecutionJudgeConfig:
    """Every rule and reading on (label-for-entity with shared names)."""
    lenient = with_rules(config, dict.fromkeys(RULES, True))
    return lenient.model_copy(update={"labels": lenient.labels.model_copy(update={"shared_names": True})})


def rules_used(verdict: Verdict) -> list[str]:
    """The rules an accepting verdict says it went through (rule, readings, number digits)."""
    details = verdict.details
    used = [details["rule"]] if details.get("rule") in RULES else []
    used += [r for r in details.get("readings", ()) if r in RULES]
    used += [r for r in details.get("comparator_rules", ()) if r in RULES]
    if "number_digits" in details:
        used.append("approximate_numbers")
    if "split_item" in details or "unnested" in details:
        used.append("split_listing")
    return list(dict.fromkeys(used))


Decide = Callable[[str], bool]
"""Whether the answer is accepted under a named variant of the judge's configuration:
"standard", "lenient", "+rule" (that rule on) or "-rule" (that rule off)."""


def leniency(verdict: Verdict, on: dict[str, bool], applicable: tuple[str, ...], decide: Decide) -> dict:
    """`details["leniency"]` of `verdict` (see module docstring); `applicable`: the rules that
    can apply to this answer (an executed result: `RESULT_RULES`)."""
    if verdict.path in FAILURE_PATHS:
        return {"standard": False, "lenient": False, "alone": []}
    if verdict.correct:
        used = [r for r in rules_used(verdict) if on.get(r)]
        standard = not used or decide("standard")
        alone = [] if standard else [r for r in used if not decide("-" + r)]
        return {"standard": standard, "lenient": True, "alone": alone}
    standard = verdict.path == "vacuous" and decide("standard")
    off = [r for r in applicable if not on[r]]
    if verdict.path == "vacuous" or not off or not decide("lenient"):
        return {"standard": standard, "lenient": False, "alone": []}
    return {"standard": standard, "lenient": True, "alone": [r for r in off if decide("+" + r)]}


def variant_config(config: ExecutionJudgeConfig, name: str) -> ExecutionJudgeConfig:
    """The configuration `Decide` names (see `Decide`)."""
    if name == "standard":
        return standard_config(config)
    if name == "lenient":
        return lenient_config(config)
    return with_rules(config, {name[1:]: name[0] == "+"})
