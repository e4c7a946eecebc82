"""Several KGs served by one sandbox (`EmbeddedKgs`, a holdout KG's neighbours during a run):
each KG answers from its own store, asked by name; a query runs on several in one request,
each execution bounded as one of its own request is; one that fails leaves the next to a fresh
request (a killed worker replaced)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgeval.config import CandidateQueryConfig
from kgeval.errors import QueryOverBudget, QuerySyntaxError, QueryTimeout, StoreError
from kgeval.stores import EmbeddedKgs, EmbeddedStore
from tests.conftest import MINI_QUESTIONS, MINI_TTL, UNENDING

ONE_TTL = "<http://example.org/a> <http://example.org/p> <http://example.org/b> .\n"
COUNT = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


@pytest.fixture
def kgs(tmp_path: Path):
    (tmp_path / "mini.ttl").write_text(MINI_TTL, encoding="utf-8")
    (tmp_path / "one.ttl").write_text(ONE_TTL, encoding="utf-8")
    (tmp_path / "two.ttl").write_text(ONE_TTL + ONE_TTL.replace("/b>", "/c>"), encoding="utf-8")
    files = {name: ([tmp_path / f"{name}.ttl"], {}) for name in ("mini", "one", "two")}
    served = EmbeddedKgs(files, CandidateQueryConfig(memory_mb=256, workers=1))
    yield served, tmp_path
    served.close()


def test_each_kg_answers_from_its_own_store_as_a_store_of_its_own_does(kgs):
    served, tmp_path = kgs
    outcomes = served.execute_candidate_each(COUNT, ["two", "mini", "one"], timeout_s=60, row_cap=10)
    counts = [cells.rows[0][0][1] for cells, _ in outcomes]
    alone = []
    for name in ("two", "mini", "one"):
        store = EmbeddedStore([tmp_path / f"{name}.ttl"], candidates=CandidateQueryConfig(memory_mb=256))
        try:
            result, _ = store.execute_candidate(COUNT, timeout_s=60, row_cap=10)
            alone.append(result)
        finally:
            store.close()
    assert counts == [r.rows[0][0].value for r in alone] and counts[0] == "2" and counts[2] == "1"
    assert [cells.typed() for cells, _ in outcomes] == alone  # the QueryResult execute_candidate gives
    assert all(resources.sandboxed for _, resources in outcomes)
    # one template and its one worker served all three, in one request
    assert len(served.store("one").sandbox.worker_pids()) == 1
    sparql = MINI_QUESTIONS[2]["sparql"]
    assert served.store("mini").execute(sparql, timeout_s=60, row_cap=10).rows[0][0].value == "3"  # trusted, by name
    result, _ = served.store("mini").execute_candidate(sparql, timeout_s=60, row_cap=10)
    assert result.rows[0][0].value == "3"


def test_a_kg_past_its_deadline_has_its_worker_killed_and_the_next_kgs_still_run(kgs):
    """The query ends at once on a one-triple KG and never on the mini KG: its execution there
    times out (the worker is killed, as a lone candidate's is), the KGs before keep their
    results, and the one after runs on a fresh worker."""
    served, _ = kgs
    served.execute_candidate_each("ASK { ?s ?p ?o }", ["one"], timeout_s=60, row_cap=1)
    [pid] = served.store("one").sandbox.worker_pids()
    first, stuck, after = served.execute_candidate_each(UNENDING, ["one", "mini", "one"], timeout_s=1, row_cap=10)
    assert first[0].total == 1 and after[0].total == 1
    assert isinstance(stuck, QueryTimeout) and stuck.resources.sandboxed
    assert not _alive(pid), "the timed-out worker still runs"
    assert pid not in served.store("one").sandbox.worker_pids()


def test_a_refused_query_is_refused_for_every_kg_and_none_is_sent(kgs):
    served, _ = kgs
    outcomes = served.execute_candidate_each("SELECT ?x WHERE { ?x ?p }", ["one", "two"], timeout_s=60, row_cap=10)
    assert all(isinstance(o, QuerySyntaxError) for o in outcomes) and len(outcomes) == 2
    assert served.store("one").sandbox.worker_pids() == []  # refused before any worker started


def test_each_execution_keeps_the_candidate_caps(tmp_path: Path):
    (tmp_path / "one.ttl").write_text(ONE_TTL, encoding="utf-8")
    limits = CandidateQueryConfig(memory_mb=256, max_result_bytes=30)
    served = EmbeddedKgs({"a": ([tmp_path / "one.ttl"], {}), "b": ([tmp_path / "one.ttl"], {})}, limits)
    try:
        big, small = served.execute_candidate_each("SELECT ?s ?o WHERE { ?s ?p ?o }", ["a", "b"], timeout_s=60, row_cap=10)
        assert isinstance(big, QueryOverBudget) and isinstance(small, QueryOverBudget)  # 42 bytes each: over 30, on both
        ok = served.execute_candidate_each("SELECT ?o WHERE { ?s ?p ?o }", ["a", "b"], timeout_s=60, row_cap=10)
        assert [cells.rows for cells, _ in ok] == [[(("uri", "http://example.org/b", None, None),)]] * 2
    finally:
        served.close()


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_verified_files_load_as_their_manifest_says_or_not_at_all(tmp_path: Path):
    """`verified` (a suite's neighbours: files kgeval wrote, hashed in a verified manifest):
    the worker parses them without validating each term again (a term strict parsing refuses
    loads, where it never is in such a file), answers as the strictly parsed store does, and a
    file whose bytes are not the manifest's is refused, sandboxed or in process."""
    (tmp_path / "mini.nt").write_bytes(_as_ntriples(MINI_TTL))
    (tmp_path / "odd.nt").write_text('<http://example.org/a b> <http://example.org/p> "x" .\n', encoding="utf-8")  # a space: not an IRI
    all_rows = "SELECT ?s ?p ?o WHERE { ?s ?p ?o } ORDER BY ?s ?p ?o"
    limits = CandidateQueryConfig(memory_mb=256, workers=1)
    strict = EmbeddedKgs({"mini": ([tmp_path / "mini.nt"], {})}, limits)
    lenient = EmbeddedKgs({n: ([tmp_path / f"{n}.nt"], {}) for n in ("mini", "odd")}, limits, verified={n: [_sha256(tmp_path / f"{n}.nt")] for n in ("mini", "odd")})
    try:
        [(expected, _)] = strict.execute_candidate_each(all_rows, ["mini"], timeout_s=60, row_cap=1000)
        (same, _), (odd, _) = lenient.execute_candidate_each(all_rows, ["mini", "odd"], timeout_s=60, row_cap=1000)
        assert same == expected and expected.total > 10
        assert odd.rows[0][0] == ("uri", "http://example.org/a b", None, None)  # parsed leniently: strict parsing refuses it
    finally:
        strict.close()
        lenient.close()
    for sandbox in (True, False):
        changed = EmbeddedKgs({"mini": ([tmp_path / "mini.nt"], {})}, limits.model_copy(update={"sandbox": sandbox}), verified={"mini": ["0" * 64]})
        try:
            [refused] = changed.execute_candidate_each(all_rows, ["mini"], timeout_s=60, row_cap=1000)
            assert isinstance(refused, StoreError) and "changed" in str(refused), refused
        finally:
            changed.close()


def _as_ntriples(turtle: str) -> bytes:
    import pyoxigraph as ox

    return ox.serialize(ox.parse(turtle.encode(), format=ox.RdfFormat.TURTLE), format=ox.RdfFormat.N_TRIPLES)
