"""Smaller neighbours (`suite.scale`): each class keeps a share of its entities, drawn
deterministically; named entities, the queries' LIMIT/OFFSET and each predicate's number of
values are kept; at scale 1 the neighbours are those made without the setting."""

from __future__ import annotations

import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyoxigraph as ox

from kgeval.config import GoldConfig, KgevalConfig, SuiteConfig
from kgeval.gold import read_suites
from kgeval.gold._fuzz import make_neighbours, row_floor
from kgeval.gold._suite import settings_sha256
from tests.suites.conftest import build, copy_kgs
from tests.suites.test_fuzz import HR, NAMED, RDF_TYPE, _original, _statements

EMPLOYEE = ox.NamedNode("http://example.org/hr/vocab/Employee")


def _members(quads, cls: ox.NamedNode) -> set:
    return {q.subject for q in quads if q.predicate == RDF_TYPE and q.object == cls}


def test_scale_draws_the_same_entities_from_the_same_seed_and_others_from_another() -> None:
    a = make_neighbours("hr", [HR], {}, 2, seed=0, named=NAMED, scale=0.25)
    assert [n.files for n in a] == [n.files for n in make_neighbours("hr", [HR], {}, 2, seed=0, named=NAMED, scale=0.25)]
    assert [n.files for n in a] != [n.files for n in make_neighbours("hr", [HR], {}, 2, seed=1, named=NAMED, scale=0.25)]
    assert [n.files for n in a] != [n.files for n in make_neighbours("hr", [HR], {}, 2, seed=0, named=NAMED, scale=0.5)]


def test_scale_one_makes_the_neighbours_made_without_it() -> None:
    """1 draws nothing: the bytes are today's (a suite built before the setting stays valid)."""
    made = make_neighbours("hr", [HR], {}, 4, seed=0, named=NAMED)
    assert [n.files for n in make_neighbours("hr", [HR], {}, 4, seed=0, named=NAMED, scale=1.0, rows=50)] == [n.files for n in made]


def test_each_class_keeps_its_share_of_entities() -> None:
    """About `scale` of each class's entities stay (the fuzzer then drops up to 13.5% of those
    at its heaviest level), never more; and far fewer triples than the original."""
    original = _original()
    employees = _members(original, EMPLOYEE)
    for scale in (0.5, 0.25):
        keep = math.ceil(len(employees) * scale)
        for neighbour in make_neighbours("hr", [HR], {}, 4, seed=0, named=NAMED, scale=scale):
            quads = _statements(neighbour.files["kg.nt"])
            kept = len(_members(quads, EMPLOYEE) & employees)
            assert keep * 0.85 - 1 <= kept <= keep, (scale, neighbour.id, kept, keep)
            assert neighbour.triples < len(original) * (scale + 0.1)


def test_named_entities_are_always_kept() -> None:
    """An entity named by IRI, and one named by a string only it carries ("Berlin"), is in every
    neighbour however small, but where the fuzzer's own drop (up to 13.5% of a class, as at
    scale 1) takes it; drawn with the rest at scale 0.05, it would be in about one in twenty."""
    employee, office = ox.NamedNode("http://example.org/hr/entities/Employee/E5989"), ox.NamedNode("http://example.org/hr/entities/Office/BER")
    present = Counter()
    for seed in range(3):
        for neighbour in make_neighbours("hr", [HR], {}, 4, seed=seed, named=NAMED, scale=0.05):
            subjects = {q.subject for q in _statements(neighbour.files["kg.nt"])}
            present.update({employee, office} & subjects)
    assert present[employee] >= 9 and present[office] >= 9, present  # of 12


def test_a_class_keeps_as_many_entities_as_one_subject_links_to(tmp_path: Path) -> None:
    """A project linking to 6 of 40 skills keeps 6 distinct skills, all still in the KG, at a
    scale that would keep 2: links to left-out entities are rewired among the kept ones, and
    the predicate's number of values per subject is kept (but for the fuzzer's rare value drop)."""
    lines = ["@prefix e: <http://e.org/> ."]
    lines += [f"e:s{i} a e:Skill ; e:name \"skill {i}\" ." for i in range(40)]
    lines += [f"e:p{i} a e:Project ; e:needs {', '.join(f'e:s{(i * 7 + k) % 40}' for k in range(6))} ." for i in range(10)]
    kg = tmp_path / "kg.ttl"
    kg.write_text("\n".join(lines) + "\n")
    needs, skill = ox.NamedNode("http://e.org/needs"), ox.NamedNode("http://e.org/Skill")
    for neighbour in make_neighbours("x", [kg], {}, 8, seed=0, scale=0.05):
        quads = _statements(neighbour.files["kg.nt"])
        skills = _members(quads, skill)
        links = Counter(q.subject for q in quads if q.predicate == needs)
        assert {q.object for q in quads if q.predicate == needs} <= skills, "a link to an entity no longer in the KG"
        assert links and all(n >= 5 for n in links.values()) and max(links.values()) == 6, (neighbour.id, links)


def test_a_class_keeps_the_rows_the_queries_limit_and_offset_reach() -> None:
    queries = ["SELECT ?e { ?e a <http://example.org/hr/vocab/Employee> } ORDER BY ?e LIMIT 20 OFFSET 30", "ASK { ?s ?p ?o }"]
    rows = row_floor(queries)
    assert rows == 51 and row_floor(["SELECT * { ?s ?p ?o }", "not SPARQL {"]) == 0
    for neighbour in make_neighbours("hr", [HR], {}, 4, seed=0, scale=0.01, rows=rows):
        kept = len(_members(_statements(neighbour.files["kg.nt"]), EMPLOYEE) & _members(_original(), EMPLOYEE))
        assert kept >= rows, (neighbour.id, kept)  # after the fuzzer's own drop too


def test_the_scale_is_part_of_the_suite_settings() -> None:
    gold = GoldConfig()
    assert settings_sha256(SuiteConfig(scale=0.5), gold) != settings_sha256(SuiteConfig(), gold) != settings_sha256(SuiteConfig(scale=0.25), gold)


def test_suite_build_with_a_scale_stores_smaller_neighbours_and_rebuilds_when_it_changes(tmp_path: Path) -> None:
    """Through `python -m kgeval suite build --config` (suite.scale 0.25): the configured scale
    shapes the stored neighbours; a suite built at one scale is built again at another (its
    settings hash changed), and at the same scale kept."""
    holdout = copy_kgs(tmp_path / "holdout", "hr")
    gold = tmp_path / "gold"
    build(holdout, gold, KgevalConfig(), force=True)  # the gold, and full-size suites
    full = read_suites(gold).kgs["hr"]
    config = tmp_path / "kgeval.yaml"
    config.write_text("suite:\n  scale: 0.25\n")
    args = [sys.executable, "-m", "kgeval", "suite", "build", "--holdout", str(holdout), "--gold", str(gold), "--config", str(config)]
    ran = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    small = read_suites(gold).kgs["hr"]
    assert [s.settings_sha256 for s in small.questions] != [s.settings_sha256 for s in full.questions]
    assert all(n.triples > len(_original()) * 0.7 for n in full.neighbours.values())
    assert small.neighbours and all(n.triples < len(_original()) * 0.35 for n in small.neighbours.values())
    again = build(holdout, gold, KgevalConfig(suite=SuiteConfig(scale=0.25)))
    assert not again.built and len(again.reused) == len(small.questions)
