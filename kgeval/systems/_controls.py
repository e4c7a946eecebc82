"""Control systems: an oracle that must score ~100% and a deliberately weak one.

If the oracle does not score ~100%, the harness is broken (gold, store or judge), not the
system; if the weak control scores high, the judge accepts too much.
"""

from __future__ import annotations

from kgeval._files import sha256_text
from kgeval.holdout import Question, Tag
from kgeval.systems._model import SystemOutput

WEAK_WRONG_SELECT = "SELECT DISTINCT ?class WHERE { ?s a ?class } ORDER BY ?class LIMIT 7"
WEAK_WRONG_ASK = "ASK { FILTER(false) }"
WEAK_WRONG_GREMLIN = "g.V().label().dedup().order().limit(7)"


class OracleSystem:
    """Answers every question with its own reference query (SPARQL, or Gremlin on a property graph)."""

    name = "oracle"
    version = "1"
    kind = "control"
    pipeline = None
    reasoning: dict = {}

    def respond(self, question: Question, seed: int) -> SystemOutput:
        return SystemOutput(sparql=question.reference_query)


class WeakSystem:
    """Deterministic and poor: the reference SPARQL for about one (question, seed) in three,
    otherwise a fixed query that lists a few classes (or answers false to an ASK)."""

    name = "weak"
    version = "1"
    kind = "control"
    pipeline = None
    reasoning: dict = {}

    def respond(self, question: Question, seed: int) -> SystemOutput:
        if int(sha256_text(f"{question.id}/{seed}")[:8], 16) % 3 == 0:
            return SystemOutput(sparql=question.reference_query)
        if question.query_language == "gremlin":
            return SystemOutput(sparql=WEAK_WRONG_GREMLIN)
        wrong = WEAK_WRONG_ASK if Tag.ASK in question.tags else WEAK_WRONG_SELECT
        return SystemOutput(sparql=wrong)
