"""Schema fingerprints and the schema-adjacency gate, on synthetic KGs and the shipped holdout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kgeval.config import COMMON_NAMESPACES, SchemaGateConfig
from kgeval.errors import InputError
from kgeval.guards import Signature, admit_kg, fingerprint_store, load_fingerprints, normalize_name
from kgeval.guards._gate import score_against
from kgeval.stores import EmbeddedStore
from tests.conftest import REPO

PREFIXES = """@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
"""

TRAINING = PREFIXES + """@prefix v: <http://train.example/trials/vocab/> .
@prefix e: <http://train.example/trials/id/> .
e:t1 a v:Trial ; rdfs:label "Trial one" ; v:hasSponsor e:s1 ; v:studiesCondition e:c1 ; v:enrollment "120"^^xsd:integer ; v:phase "3" .
e:t2 a v:Trial ; rdfs:label "Trial two" ; v:hasSponsor e:s2 ; v:studiesCondition e:c1 ; v:enrollment "80"^^xsd:integer ; v:phase "2" .
e:s1 a v:Sponsor ; rdfs:label "Acme Pharma" ; v:basedIn e:fr .
e:s2 a v:Sponsor ; rdfs:label "Beta Bio" ; v:basedIn e:de .
e:c1 a v:Condition ; skos:prefLabel "asthma"@en .
e:fr a v:Country ; rdfs:label "France" .
e:de a v:Country ; rdfs:label "Germany" .
"""

# The same schema and data under another namespace, with snake_case and capitalised names.
RENAMED_COPY = PREFIXES + """@prefix q: <https://holdout.example/clinical#> .
@prefix i: <https://holdout.example/data/> .
i:a a q:trial ; rdfs:label "Study A" ; q:has_sponsor i:b ; q:Studies_Condition i:c ; q:ENROLLMENT "10"^^xsd:integer ; q:phase "1" .
i:b a q:sponsor ; rdfs:label "Gamma" ; q:based_in i:x .
i:c a q:condition ; skos:prefLabel "flu"@en .
i:x a q:country ; rdfs:label "Spain" .
"""

# Its own vocabulary; shares only common vocabulary (rdfs, skos, owl, xsd) with the training KG.
COMMON_ONLY = PREFIXES + """@prefix r: <http://other.example/retail/> .
r:p1 a r:Product , owl:Thing ; rdfs:label "Lamp" ; skos:prefLabel "Lamp"@en ; r:price "9.5"^^xsd:decimal ; r:soldBy r:shop1 .
r:shop1 a r:Shop ; rdfs:label "Shop" ; rdfs:comment "a shop" ; r:inCity r:paris ; owl:sameAs r:shop1b .
r:paris a r:City ; rdfs:label "Paris" .
"""


def _fingerprint(tmp_path: Path, name: str, ttl: str):
    path = tmp_path / f"{name}.ttl"
    path.write_text(ttl, encoding="utf-8")
    return fingerprint_store(EmbeddedStore([path]), name, SchemaGateConfig())


def test_local_names_are_normalized_so_a_renamed_namespace_hides_nothing():
    names = ["http://a/vocab/hasManager", "https://b/ns#has_manager", "urn:x:Has-Manager", "http://c/HAS%20MANAGER/"]
    assert {normalize_name(n) for n in names} == {"hasmanager"}
    assert normalize_name("http://a/vocab/manager") != normalize_name("http://a/vocab/hasManager")


def test_fingerprint_holds_schema_not_data(tmp_path):
    fp = _fingerprint(tmp_path, "trials_v3", TRAINING)
    v = "http://train.example/trials/vocab/"
    assert fp.classes == sorted(v + c for c in ("Condition", "Country", "Sponsor", "Trial"))
    assert v + "hasSponsor" in fp.predicates and "http://www.w3.org/2000/01/rdf-schema#label" in fp.predicates
    pairs = {(p.domain.removeprefix(v), p.predicate.removeprefix(v), p.range.rsplit("#", 1)[-1].removeprefix(v), p.literal) for p in fp.pairs}
    assert ("Trial", "hasSponsor", "Sponsor", False) in pairs
    assert ("Trial", "enrollment", "integer", True) in pairs
    text = fp.model_dump_json()
    assert "Acme Pharma" not in text and "train.example/trials/id/" not in text


def test_renamed_copy_of_a_training_kg_is_refused(tmp_path):
    training = [_fingerprint(tmp_path, "trials_v3", TRAINING), _fingerprint(tmp_path, "retail", COMMON_ONLY)]
    verdict = admit_kg(_fingerprint(tmp_path, "candidate", RENAMED_COPY), training, SchemaGateConfig(), COMMON_NAMESPACES)
    assert not verdict.admitted
    assert verdict.closest.training == "trials_v3"
    assert verdict.closest.type_overlap_pct == 100 and verdict.closest.relation_overlap_pct == 100
    assert set(verdict.closest.refused_by) == {"overlap", "contains", "jaccard"}  # a copy: both ways
    assert [s.training for s in verdict.refusals] == ["trials_v3"]
    assert "REFUSED  closest: trials_v3 jaccard=" in verdict.summary()


def test_kg_sharing_only_common_vocabulary_is_admitted(tmp_path):
    training = [_fingerprint(tmp_path, "trials_v3", TRAINING)]
    verdict = admit_kg(_fingerprint(tmp_path, "retail", COMMON_ONLY), training, SchemaGateConfig(), COMMON_NAMESPACES)
    assert verdict.admitted
    assert verdict.closest.jaccard == 0 and verdict.closest.type_overlap_pct == 0
    # Without the common-vocabulary exclusion the same pair would share rdfs:label, skos:prefLabel ...
    bare = admit_kg(_fingerprint(tmp_path, "retail", COMMON_ONLY), training, SchemaGateConfig(), ())
    assert bare.closest.relation_overlap_pct > 0


def _sig(classes, predicates, pairs=()):
    return Signature(classes=frozenset(classes), predicates=frozenset(predicates), pairs=frozenset(pairs))


def test_overlap_thresholds_are_at_least():
    candidate = _sig({"a", "b"}, {"p", "q", "r", "s"})
    training = _sig({"a", "x", "y", "z", "w", "v"}, {"p", "q", "m", "n", "o", "k", "l"})  # types 50%, relations 50%
    cfg = SchemaGateConfig(type_overlap_pct=50, relation_overlap_pct=50, jaccard_cap=1.0)
    at = score_against(candidate, training, "t", cfg)
    assert (at.type_overlap_pct, at.relation_overlap_pct) == (50.0, 50.0)
    assert at.refused_by == ["overlap"]
    above = score_against(candidate, training, "t", cfg.model_copy(update={"relation_overlap_pct": 50.01}))
    assert above.refused_by == []


def test_jaccard_cap_refuses_only_when_exceeded():
    candidate, training = _sig({"a", "b"}, {"p"}), _sig({"a", "c"}, {"q"})  # jaccard 1/5
    cfg = SchemaGateConfig(type_overlap_pct=100, relation_overlap_pct=100, jaccard_cap=0.2)
    assert score_against(candidate, training, "t", cfg).jaccard == pytest.approx(0.2)
    assert score_against(candidate, training, "t", cfg).refused_by == []
    assert score_against(candidate, training, "t", cfg.model_copy(update={"jaccard_cap": 0.19})).refused_by == ["jaccard"]


def test_no_training_fingerprints_is_an_error_not_a_pass(tmp_path):
    with pytest.raises(InputError, match="no training fingerprints"):
        admit_kg(_fingerprint(tmp_path, "c", COMMON_ONLY), [], SchemaGateConfig(), COMMON_NAMESPACES)


def test_shipped_holdout_is_admitted_against_ck25():
    training = load_fingerprints(REPO / "schema_gate")
    assert "ck25" in [fp.name for fp in training]
    from kgeval.holdout import load_holdout

    for kg in load_holdout(REPO / "holdout").kgs:
        verdict = admit_kg(fingerprint_store(EmbeddedStore(kg.files), kg.id, SchemaGateConfig()), training, SchemaGateConfig(), COMMON_NAMESPACES)
        assert verdict.admitted, verdict.summary()
        assert verdict.closest.jaccard < 0.1


def kgeval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgeval", *args], capture_output=True, text=True, cwd=REPO, timeout=300)


def test_cli_schema_gate_add_then_admit(tmp_path):
    gate = tmp_path / "gate"
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "kg.ttl").write_text(TRAINING, encoding="utf-8")
    (tmp_path / "copy.ttl").write_text(RENAMED_COPY, encoding="utf-8")
    (tmp_path / "other.ttl").write_text(COMMON_ONLY, encoding="utf-8")

    empty = kgeval("holdout", "admit", str(tmp_path / "other.ttl"), "--gate-dir", str(gate))
    assert empty.returncode == 2 and "no training fingerprints" in empty.stderr

    added = kgeval("schema-gate", "add", "trials_v3", str(tmp_path / "train"), "--gate-dir", str(gate))
    assert added.returncode == 0, added.stderr
    stored = json.loads((gate / "fingerprints" / "trials_v3.json").read_text())
    assert stored["name"] == "trials_v3" and "Acme Pharma" not in json.dumps(stored)

    ok = kgeval("holdout", "admit", str(tmp_path / "other.ttl"), "--gate-dir", str(gate))
    assert ok.returncode == 0, ok.stderr
    assert "other: admitted  closest: trials_v3 jaccard=0.000" in ok.stdout

    refused = kgeval("holdout", "admit", str(tmp_path / "other.ttl"), str(tmp_path / "copy.ttl"), "--gate-dir", str(gate))
    assert refused.returncode == 3
    assert "copy: REFUSED  closest: trials_v3" in refused.stdout and "refused: copy" in refused.stderr

    (gate / "config.yaml").write_text("jaccard_cap: 1.0\ntype_overlap_pct: 100.01\n", encoding="utf-8")
    bad = kgeval("holdout", "admit", str(tmp_path / "copy.ttl"), "--gate-dir", str(gate))
    assert bad.returncode == 2 and "config.yaml" in bad.stderr


def test_cli_admit_on_the_shipped_holdout():
    result = kgeval("holdout", "admit", "holdout")
    assert result.returncode == 0, result.stderr
    for kg in ("catalogue", "complaints", "hr", "trials"):
        assert f"{kg}: admitted  closest: ck25 jaccard=" in result.stdout


def test_fingerprint_is_the_same_from_a_sparql_endpoint(tmp_path):
    """The fingerprint is computed through `Store.execute`: a real `oxigraph serve` endpoint
    gives the schema the embedded store gives."""
    from kgeval.holdout import load_holdout
    from kgeval.stores import open_store
    from tests.conftest import write_holdout
    from tests.stores.servers import start_oxigraph, stop

    holdout = load_holdout(write_holdout(tmp_path / "h", [], ttl=TRAINING, kg="trials_v3"))
    (tmp_path / "ox").mkdir()
    server = start_oxigraph(tmp_path / "ox", {"train": holdout})
    try:
        remote = fingerprint_store(open_store(server.config("train"), [], kg="trials_v3"), "trials_v3", SchemaGateConfig())
    finally:
        stop(server.process)
    local = _fingerprint(tmp_path, "trials_v3", TRAINING)
    assert (remote.classes, remote.predicates, remote.pairs) == (local.classes, local.predicates, local.pairs)
    assert remote.engine != local.engine


def test_a_candidate_holding_a_whole_training_schema_is_refused():
    """Four KGs merged, one of them a training KG: its share of the candidate is small (types
    30%, relations 29%, jaccard 0.29 in the acceptance test: admitted), but the candidate holds
    all of it. The overlap rule the other way round refuses it; a candidate holding less of the
    training schema than the thresholds is admitted."""
    training = _sig({"employee", "department", "project"}, {"worksin", "manages", "salary", "label"})
    merged = _sig(training.classes | {f"c{i}" for i in range(7)}, training.predicates | {f"p{i}" for i in range(10)})
    cfg = SchemaGateConfig()  # 50% and 50%, jaccard cap 0.3
    score = score_against(merged, training, "hr", cfg)
    assert score.type_overlap_pct == 30.0 and score.jaccard <= cfg.jaccard_cap and "overlap" not in score.refused_by
    assert (score.contained_type_pct, score.contained_relation_pct) == (100.0, 100.0) and score.refused_by == ["contains"]
    partial = _sig({"employee", *(f"c{i}" for i in range(7))}, {"worksin", "manages", *(f"p{i}" for i in range(10))})
    assert score_against(partial, training, "hr", cfg).refused_by == []  # a third of the classes, half the predicates: below
