"""The schema-adjacency gate: a candidate holdout KG must not be near a training KG's schema.

Two rules, thresholds in `schema_gate/config.yaml` (`SchemaGateConfig`), checked against every
training fingerprint:

- overlap rule: refuse when the candidate shares **at least** (>=) `type_overlap_pct` % of its
  classes AND **at least** (>=) `relation_overlap_pct` % of its predicates with one training KG;
  shares are of the candidate's own classes / predicates; a candidate with no classes or no
  predicates of its own (after common vocabulary is left out) cannot trigger this rule;
- containment rule: the overlap rule the other way round: refuse when the candidate holds at
  least those shares of the training KG's own classes and predicates (a candidate that merges a
  training KG with others holds it whole, though its share of the candidate is small);
- Jaccard cap: refuse when the Jaccard similarity of the two signatures (classes, predicates
  and domain/range pairs, tagged by kind) **exceeds** (>) `jaccard_cap`.

Names are compared after normalization (`kgeval.guards._vocab`), common vocabulary left out.
"""

from __future__ import annotations

from pydantic import BaseModel

from kgeval.config import SchemaGateConfig
from kgeval.errors import InputError
from kgeval.guards._fingerprint import SchemaFingerprint, Signature
from kgeval.guards._text import jaccard


class GateScore(BaseModel):
    """How close a candidate KG is to one training KG."""

    training: str
    """The training KG's fingerprint name."""
    type_overlap_pct: float
    """% of the candidate's classes the training KG also has."""
    relation_overlap_pct: float
    """% of the candidate's predicates the training KG also has."""
    jaccard: float
    """Jaccard similarity of the two signatures."""
    refused_by: list[str]
    """The rules this training KG triggers: "overlap", "contains", "jaccard"; empty when none."""
    contained_type_pct: float = 0.0
    """% of the training KG's classes the candidate also has."""
    contained_relation_pct: float = 0.0
    """% of the training KG's predicates the candidate also has."""


class GateVerdict(BaseModel):
    """The gate's decision for one candidate holdout KG."""

    kg: str
    admitted: bool
    closest: GateScore
    """The training KG with the highest Jaccard similarity (the highest overlap on a tie)."""
    refusals: list[GateScore]
    """Every training KG that triggers a rule."""
    scores: list[GateScore]
    """Scores against every training KG, closest first."""
    config: SchemaGateConfig

    def summary(self) -> str:
        c = self.closest
        head = f"{self.kg}: {'admitted' if self.admitted else 'REFUSED'}"
        tail = (
            f"closest: {c.training} jaccard={c.jaccard:.3f} "
            f"types={c.type_overlap_pct:.0f}% relations={c.relation_overlap_pct:.0f}%"
        )
        why = "".join(f"; refused by {s.training} ({', '.join(s.refused_by)})" for s in self.refusals)
        return f"{head}  {tail}{why}"


def score_against(candidate: Signature, training: Signature, name: str, config: SchemaGateConfig) -> GateScore:
    type_pct = _share(candidate.classes, training.classes)
    rel_pct = _share(candidate.predicates, training.predicates)
    held_type_pct = _share(training.classes, candidate.classes)
    held_rel_pct = _share(training.predicates, candidate.predicates)
    similarity = jaccard(candidate.elements(), training.elements())
    refused_by = []
    if type_pct >= config.type_overlap_pct and rel_pct >= config.relation_overlap_pct and candidate.classes and candidate.predicates:
        refused_by.append("overlap")
    if held_type_pct >= config.type_overlap_pct and held_rel_pct >= config.relation_overlap_pct and training.classes and training.predicates:
        refused_by.append("contains")
    if similarity > config.jaccard_cap:
        refused_by.append("jaccard")
    return GateScore(
        training=name, type_overlap_pct=type_pct, relation_overlap_pct=rel_pct, jaccard=similarity, refused_by=refused_by,
        contained_type_pct=held_type_pct, contained_relation_pct=held_rel_pct,
    )  # fmt: skip


def _share(mine: frozenset[str], theirs: frozenset[str]) -> float:
    return 100.0 * len(mine & theirs) / len(mine) if mine else 0.0


def admit_kg(
    candidate: SchemaFingerprint,
    training: list[SchemaFingerprint],
    config: SchemaGateConfig,
    common: tuple[str, ...],
) -> GateVerdict:
    """Score `candidate` against every training fingerprint and decide."""
    if not training:
        raise InputError(
            "no training fingerprints to compare with: add them with `kgeval schema-gate add NAME KG_FILES...`"
        )
    mine = candidate.signature(common)
    scores = [score_against(mine, fp.signature(common), fp.name, config) for fp in training]
    scores.sort(key=lambda s: (-s.jaccard, -(s.type_overlap_pct + s.relation_overlap_pct), s.training))
    refusals = [s for s in scores if s.refused_by]
    return GateVerdict(
        kg=candidate.name, admitted=not refusals, closest=scores[0], refusals=refusals, scores=scores, config=config
    )
