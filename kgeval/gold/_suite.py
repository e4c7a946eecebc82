"""Test suites: per question, the neighbour KGs that tell its near misses apart, with their golds.

Test-suite accuracy (Zhong, Yu & Klein, "Semantic Evaluation for Text-to-SQL with Distilled
Test Suites", EMNLP 2020; github.com/ruiqi-zhong/TestSuiteEval) accepts a prediction only when
it matches the gold on every database of a suite. kgeval's suite of a question is a few
neighbour KGs (`_fuzz`) distilled greedily: each neighbour's reference result is built as a
gold entry is (`build_entry`, sandboxed: repeated executions, ties, determinism), every
near-miss mutant (`_mutants`) runs on the original KG and every neighbour, and neighbours are
picked one at a time, each the one that tells apart the most mutants not yet told apart, until
none tells apart more (then `suite.min_neighbours` are kept anyway, those where the gold changes
most first: a hard-coded answer is caught only where the gold differs). "Told apart" is the
caller's `differs` (the configured judge rejects the mutant's result against the reference's
entry, its ties resolved as a run resolves them), so a mutant the judge would accept (a
reordered unordered answer) never counts as killed.

A neighbour where the reference query is nondeterministic or fails is left out of that
question's suite: an answer is never rejected where the gold itself is not fixed (DESIGN
invariant 2). Tied golds carry their acceptable answers like any gold entry.

Store: the suites are a gold version (`_layout`, `_write`, `_store`: one directory per version,
a manifest with every file's sha256 and the HMAC tag, one rename switches it in) at
`<gold>/suites`, holding `neighbours/<kg>~nNN/<file>` (the neighbour KGs), `<kg>~nNN.json`
(each neighbour's gold entries, of the questions whose suite keeps it), and
`suites/<kg>.json` (per question: its neighbours, mutants, kill rate). Incremental: a
question whose reference query, KG data and suite settings are unchanged keeps its record and
its neighbours' entries (read back verified) without executing anything.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple

import pyoxigraph as ox
from pydantic import BaseModel, Field

from kgeval._files import sha256_file, sha256_json
from kgeval.config import GoldConfig, SuiteConfig
from kgeval.errors import CheckFailed, KgevalError, QueryError
from kgeval.gold._build import build_entry
from kgeval.gold._fuzz import FUZZ_VERSION, RDF_TYPE, XSD, Neighbour, _Kg, kg_sha256, kg_sha256_of, make_neighbours, named_terms, read_kg, row_floor
from kgeval.gold._index import EntrySummary, read_entry
from kgeval.gold._layout import has_gold, writer_lock
from kgeval.gold._model import GoldEntry
from kgeval.gold._mutants import MUTANTS_VERSION, Mutant, MutantKind, mutants
from kgeval.gold._reuse import index_kg_file
from kgeval.gold._store import GoldReader, _each_kg_file
from kgeval.gold._ties import TieInfo
from kgeval.gold._write import GoldWriter, latest_staging
from kgeval.holdout import Holdout, KnowledgeGraph, Question, read_manifest
from kgeval.stores import CellResult, QueryResult, Store, term_cell
from kgeval.stores._lexer import Token, canonical_tokens, declared_prefixes, iri_of, string_value

SUITES_DIR = "suites"
"""Where a gold's suites live: `<gold>/suites`."""

MutantStatus = Literal["killed_on_kg", "killed", "survived", "equivalent", "undecided"]
"""killed_on_kg: the original KG already tells it apart; killed: a neighbour of the suite does;
survived: its results differ from the reference's somewhere, yet the judge accepts them on
every KG (DISTINCT toggled under a set comparison); equivalent: its results are those of the
reference on the original KG and on every neighbour made (a type pattern the schema implies:
no KG that keeps the schema, as fuzzed, separates them); undecided: it does not parse, run, or
finish in time."""

Differs = Callable[[Question, "GoldEntry | Reference", QueryResult, str], bool]
"""(question, the reference's result on a KG (its `result`, `result_sha256` and `ties`), a
mutant's result there, the mutant's SPARQL) -> whether the judge tells them apart (rejects the
mutant's result). Only asked about a result whose hash differs from the reference's: the same
answer is never told apart (a judge accepts the gold itself), so distillation skips the call,
and with it building the result's Terms."""
NeighbourStore = Callable[[KnowledgeGraph], Store]
"""Opens a sandboxed store on a neighbour (given as a KnowledgeGraph of its files)."""


class MutantRecord(BaseModel):
    """One mutant of a reference query and what the suite made of it."""

    kind: MutantKind
    """Its mutation kind."""
    where: str
    """The terminals changed."""
    sparql: str
    """Its text."""
    status: MutantStatus
    """Whether and where it was told apart."""
    by: str | None = None
    """The neighbour of the suite that tells it apart first (status "killed")."""
    error: str | None = None
    """Why it is undecided, when it is."""


class QuestionSuite(BaseModel):
    """The suite of one question."""

    question_id: str
    """Question id."""
    kg: str
    """KG id."""
    query_sha256: str
    """sha256 of the reference query it was distilled for."""
    kg_sha256: str
    """Data hash of the original KG (`_fuzz.kg_sha256`)."""
    settings_sha256: str
    """Hash of the suite settings, fuzzer and mutant generator versions that shaped it (a change
    rebuilds it)."""
    neighbours: list[str] = Field(default_factory=list)
    """The neighbours of its suite, in the order distillation picked them."""
    left_out: dict[str, str] = Field(default_factory=dict)
    """Neighbours not usable for this question, and why (the reference is nondeterministic or
    failed there)."""
    mutants: list[MutantRecord] = Field(default_factory=list)
    """Every mutant generated, with its outcome."""

    @property
    def decided(self) -> list[MutantRecord]:
        """The mutants that ran and differ from the reference somewhere (the kill rate's base)."""
        return [m for m in self.mutants if m.status not in ("undecided", "equivalent")]

    @property
    def kill_rate(self) -> float | None:
        """Share of the decided mutants the suite (the original KG and its neighbours) tells
        apart; None when there are none."""
        decided = self.decided
        return sum(m.status != "survived" for m in decided) / len(decided) if decided else None

    @property
    def strict_kill_rate(self) -> float | None:
        """The same share with the equivalent mutants counted as not told apart."""
        ran = [m for m in self.mutants if m.status != "undecided"]
        return sum(m.status in ("killed", "killed_on_kg") for m in ran) / len(ran) if ran else None

    @property
    def survivors(self) -> list[MutantRecord]:
        return [m for m in self.mutants if m.status == "survived"]


class NeighbourInfo(BaseModel):
    """One stored neighbour KG."""

    files: list[str]
    """Its files, relative to the suite version."""
    graphs: dict[str, str] = Field(default_factory=dict)
    """File name -> named graph IRI (as the original KG's)."""
    triples: int
    """Triples it holds."""


class KgSuites(BaseModel):
    """`suites/<kg>.json`: a KG's neighbours and its questions' suites."""

    kg: str
    """KG id."""
    kg_sha256: str
    """Data hash of the original KG."""
    triples: int
    """Triples of the original KG (each neighbour holds at most as many)."""
    neighbours: dict[str, NeighbourInfo]
    """The neighbours some question's suite keeps, by id."""
    questions: list[QuestionSuite]
    """Each question's suite, in question order."""


def settings_sha256(config: SuiteConfig, gold: GoldConfig) -> str:
    return sha256_json({
        "fuzz": FUZZ_VERSION, "mutant_generator": MUTANTS_VERSION, "neighbours": config.neighbours, "min": config.min_neighbours, "seed": config.seed,
        "mutants": config.mutants, "mutant_timeout_s": config.mutant_timeout_s, "row_cap": gold.row_cap,
        "executions": gold.executions, "tie_probe_rows": gold.tie_probe_rows,
    } | ({"scale": config.scale} if config.scale != 1 else {}))  # fmt: skip  # at 1 as before it was a setting: suites built then are kept


@dataclass
class SuiteReport:
    """What a suite build did, for the CLI and the benchmark."""

    built: list[str] = field(default_factory=list)
    """Questions distilled now."""
    reused: list[str] = field(default_factory=list)
    """Questions whose unchanged suite was kept."""
    skipped: list[str] = field(default_factory=list)
    """Questions without a suite (not SPARQL, or the reference fails on the original KG)."""
    suites: list[QuestionSuite] = field(default_factory=list)
    """Every question's suite."""
    version: Path | None = None
    seconds: float = 0.0
    reuse_note: str | None = None


def build_suites(
    holdout: Holdout, store_for: Callable[[KnowledgeGraph], Store], neighbour_store: NeighbourStore, differs: Differs,
    config: SuiteConfig, gold_config: GoldConfig, suites_dir: Path, *, force: bool = False, progress: Callable[[str], None] | None = None,
) -> SuiteReport:
    """Build (or keep, when unchanged) the suite of every question and switch the new suite
    version in at `suites_dir`."""
    started = time.perf_counter()
    report = SuiteReport()
    with writer_lock(suites_dir):
        previous = None if force else _previous(suites_dir, report)
        writer = GoldWriter(suites_dir, read_manifest(holdout.root)["sha256"], gold_config)
        for kg in holdout.kgs:
            _build_kg(kg, store_for, neighbour_store, differs, config, gold_config, writer, previous, report, progress)
        report.version = writer.commit()
    report.seconds = time.perf_counter() - started
    return report


def _previous(suites_dir: Path, report: SuiteReport) -> GoldReader | None:
    for where in (latest_staging(suites_dir), suites_dir):
        if where is None or not has_gold(where):
            continue
        try:
            return GoldReader(where)
        except KgevalError as exc:
            report.reuse_note = f"the previous suites do not verify, every suite is built again: {exc}"
    return None


def _previous_kg(previous: GoldReader | None, kg: str, report: SuiteReport) -> tuple[dict[str, QuestionSuite], dict[str, dict]]:
    """A KG's previous suites by question id, and its neighbours' previous entries."""
    name = f"{SUITES_DIR}/{kg}.json"
    if previous is None or name not in previous.manifest.files:
        return {}, {}
    try:
        record = KgSuites.model_validate_json(previous.check_file(name))
        entries = {n: index_kg_file(previous, f"{n}.json").entries for n in record.neighbours}
    except (CheckFailed, ValueError) as exc:
        report.reuse_note = f"the previous suites of {kg} do not verify, they are built again: {exc}"
        return {}, {}
    return {q.question_id: q for q in record.questions}, entries


def _build_kg(
    kg: KnowledgeGraph, store_for: Callable[[KnowledgeGraph], Store], neighbour_store: NeighbourStore, differs: Differs,
    config: SuiteConfig, gold_config: GoldConfig, writer: GoldWriter, previous: GoldReader | None, report: SuiteReport, progress: Callable[[str], None] | None,
) -> None:
    """A KG's suites. The questions' work on the original KG (their gold entries, every mutant
    run there) starts in the sandbox workers while this thread makes the neighbours: fuzzing
    is this process's CPU, those queries the workers', so each waits less for the other."""
    data = kg_sha256(kg.files)
    settings = settings_sha256(config, gold_config)
    old_suites, old_entries = _previous_kg(previous, kg.id, report)
    parsed = read_kg(kg.files)
    stores = _Stores(kg, {}, neighbour_store, store_for, writer.staging)
    alternatives = _alternatives(parsed)
    kept_suites = {q.id: old for q in kg.questions if (old := old_suites.get(q.id)) is not None and _unchanged(old, q, data, settings)}
    try:  # `gold.concurrency` questions at once, as a gold rebuild builds them (one sandbox worker each)
        with ThreadPoolExecutor(max_workers=gold_config.concurrency, thread_name_prefix="kgeval-suite") as pool:
            on_kg = {
                q.id: pool.submit(_on_original, q, stores, differs, config, gold_config, alternatives) for q in kg.questions if q.id not in kept_suites
            }  # fmt: skip
            try:
                _add_neighbours(kg, parsed, data, config, writer, stores)
            except BaseException:
                pool.shutdown(cancel_futures=True)  # no suite without neighbours: the work on the KG waiting is dropped
                raise
            entries: dict[str, dict[str, GoldEntry]] = {n: {} for n in stores.stored}

            def one(question: Question) -> QuestionSuite | None:
                old = kept_suites.get(question.id)
                if old is not None:
                    for n in old.neighbours:
                        entries[n][question.id] = old_entries[n][question.id].read()
                    report.reused.append(question.id)
                else:
                    old = _distil(question, on_kg[question.id].result(), data, settings, stores, differs, config, gold_config, entries)
                    (report.built if old is not None else report.skipped).append(question.id)
                if progress:
                    progress(question.id)
                return old

            suites = [s for s in pool.map(one, kg.questions) if s is not None]
    finally:
        stores.close()
    _add_kg(writer, kg, data, len(parsed.statements), stores.stored, entries, suites)
    report.suites += suites


def _add_neighbours(kg: KnowledgeGraph, parsed: _Kg, data: str, config: SuiteConfig, writer: GoldWriter, stores: _Stores) -> None:
    """Make the KG's neighbours, write their files into the version and let `stores` open them."""
    queries = [q.sparql for q in kg.questions if q.query_language == "sparql"]
    made = make_neighbours(
        kg.id, kg.files, kg.graphs, config.neighbours, config.seed, _constants(kg), named_terms(queries), read=(parsed, data),
        scale=config.scale, rows=row_floor(queries),
    )  # fmt: skip
    stores.stored.update((n.id, _store_neighbour(writer, n)) for n in made)


def _unchanged(old: QuestionSuite, question: Question, data: str, settings: str) -> bool:
    """Whether a question's previous suite still holds: its reference query, the KG's data and
    the suite settings are those it was built for."""
    return old.query_sha256 == question.sparql_sha256 and old.kg_sha256 == data and old.settings_sha256 == settings


def _add_kg(
    writer: GoldWriter, kg: KnowledgeGraph, data: str, triples: int, stored: dict[str, NeighbourInfo], entries: dict[str, dict[str, GoldEntry]], suites: list[QuestionSuite]
) -> None:
    """Write a KG's suites: the neighbours some suite keeps (with their entries) and the record."""
    kept = {n for s in suites for n in s.neighbours}
    for n in sorted(kept):
        writer.add_kg(n, (entries[n][s.question_id] for s in suites if n in s.neighbours))
    record = KgSuites(kg=kg.id, kg_sha256=data, triples=triples, neighbours={n: stored[n] for n in sorted(kept)}, questions=suites)
    writer.add_file(f"{SUITES_DIR}/{kg.id}.json", record.model_dump_json(indent=1) + "\n")
    _drop_unkept(writer, stored, kept)


def _store_neighbour(writer: GoldWriter, neighbour: Neighbour) -> NeighbourInfo:
    names = []
    for file_name, text in neighbour.files.items():
        name = f"neighbours/{neighbour.id}/{file_name}"
        writer.add_file(name, text)
        names.append(name)
    return NeighbourInfo(files=names, graphs=neighbour.graphs, triples=neighbour.triples)


def _drop_unkept(writer: GoldWriter, stored: dict[str, NeighbourInfo], kept: set[str]) -> None:
    """Neighbours no question keeps are not part of the version."""
    for n, info in stored.items():
        if n not in kept:
            for name in info.files:
                writer.drop_file(name)
            shutil.rmtree(writer.staging / "neighbours" / n, ignore_errors=True)  # its directory, now empty


class _Stores:
    """The original KG's store and the neighbours' sandboxed stores, opened when first used."""

    def __init__(
        self, kg: KnowledgeGraph, stored: dict[str, NeighbourInfo], neighbour_store: NeighbourStore, store_for: Callable[[KnowledgeGraph], Store], root: Path
    ) -> None:
        self.kg, self.stored, self._open, self._original_for, self.root = kg, stored, neighbour_store, store_for, root
        self._stores: dict[str, Store] = {}
        self._lock = threading.Lock()

    def original(self) -> Store:
        with self._lock:
            if "" not in self._stores:
                self._stores[""] = self._original_for(self.kg)
            return self._stores[""]

    def neighbour(self, n: str) -> Store:
        with self._lock:
            return self._neighbour(n)

    def _neighbour(self, n: str) -> Store:
        if n not in self._stores:
            info = self.stored[n]
            files = tuple(self.root / name for name in info.files)
            self._stores[n] = self._open(KnowledgeGraph(id=n, title=n, files=files, questions=(), graphs={Path(k).name: v for k, v in info.graphs.items()}))
        return self._stores[n]

    def close(self) -> None:
        for store in self._stores.values():
            close = getattr(store, "close", None)
            if close is not None:
                close()


class Reference(NamedTuple):
    """A reference query's result on one KG, as distillation compares mutants with it: a gold
    entry, or one plain execution (`ties` None) on a neighbour not yet chosen."""

    result: QueryResult
    result_sha256: str
    ties: TieInfo | None = None
    cells: CellResult | None = None
    """The plain execution's cells: the first execution of the neighbour's gold entry if it is chosen."""

    @classmethod
    def of(cls, cells: CellResult) -> Reference:
        """One plain execution's result, hashed on its cells (`CellResult.sha256`, the hash of
        `QueryResult.sha256` without a Term spelled per cell)."""
        return cls(cells.typed(), cells.sha256(), None, cells)


class _OnKg(NamedTuple):
    """A question's work on the original KG, done before its neighbours are needed."""

    entry: GoldEntry
    """The reference's gold entry there."""
    found: list[Mutant]
    """Its mutants."""
    outcomes: list[MutantRecord | bool]
    """Per mutant: its record when the original KG decides it (killed there, or undecided),
    else whether its result there is the reference's."""


def _on_original(
    question: Question, stores: _Stores, differs: Differs, config: SuiteConfig, gold_config: GoldConfig, alternatives: Callable[[str | None, Token], list[Token]],
) -> _OnKg | None:
    """A question's gold entry and mutants on the original KG (None when it has no suite: not
    SPARQL, or its reference fails there)."""
    if question.query_language != "sparql":
        return None
    try:
        original = build_entry(question.kg, question, stores.original(), gold_config, vocabulary=False)
    except QueryError:
        return None
    found = mutants(question.sparql, alternatives, config.mutants)
    outcomes: list[MutantRecord | bool] = []
    for mutant in found:
        try:
            result = stores.original().execute_cells(mutant.sparql, timeout_s=config.mutant_timeout_s, row_cap=gold_config.row_cap)
        except QueryError as exc:
            outcomes.append(MutantRecord(kind=mutant.kind, where=mutant.where, sparql=mutant.sparql, status="undecided", error=str(exc)[:300]))
            continue
        same, told = _compared(question, original, result, mutant.sparql, differs)
        outcomes.append(MutantRecord(kind=mutant.kind, where=mutant.where, sparql=mutant.sparql, status="killed_on_kg") if told else same)
    return _OnKg(original, found, outcomes)


def _distil(
    question: Question, on_kg: _OnKg | None, data: str, settings: str, stores: _Stores, differs: Differs, config: SuiteConfig, gold_config: GoldConfig,
    entries: dict[str, dict[str, GoldEntry]],
) -> QuestionSuite | None:
    """The suite of one question (None when it has none: `on_kg` None). The reference runs
    once on each neighbour to compare mutants with; only the neighbours chosen get a gold entry
    (repeated executions, ties), and one whose entry is not deterministic is left out and the
    choice made again without it."""
    if on_kg is None:
        return None
    original = on_kg.entry
    usable, left_out = {}, {}

    def reference(n: str) -> Reference | str:
        try:
            return Reference.of(stores.neighbour(n).execute_cells(question.sparql, timeout_s=gold_config.timeout_s, row_cap=gold_config.row_cap))
        except QueryError as exc:
            return f"the reference query fails here: {exc}"

    for n, ran in zip(stores.stored, _at_once(reference, list(stores.stored), gold_config.concurrency), strict=True):
        if isinstance(ran, str):
            left_out[n] = ran
        else:
            usable[n] = ran
    records, kills = _kill_matrix(question, on_kg, usable, stores, differs, config, gold_config)
    built: dict[str, GoldEntry] = {}
    while True:
        chosen = _greedy(kills, usable, original, config.min_neighbours)
        todo = [n for n in chosen if n not in built]
        made = _at_once(lambda n: _settled(question, n, stores, gold_config, usable[n].cells), todo, gold_config.concurrency)
        unsettled = [n for n, entry in zip(todo, made, strict=True) if not _keep(n, entry, built, left_out)]
        if not unsettled:
            break
        for n in unsettled:
            usable.pop(n)
            kills.pop(n)
    for m, record in enumerate(records):
        if record.status == "survived":
            killer = next((n for n in chosen if m in kills[n]), None)
            if killer is not None:
                records[m] = record.model_copy(update={"status": "killed", "by": killer})
    for n in chosen:
        entries[n][question.id] = built[n]
    return QuestionSuite(
        question_id=question.id, kg=question.kg, query_sha256=question.sparql_sha256, kg_sha256=data, settings_sha256=settings,
        neighbours=chosen, left_out=left_out, mutants=records,
    )  # fmt: skip


def _at_once(work: Callable[[str], object], neighbours: list[str], width: int) -> list:
    """`work` on each neighbour, `width` at once (each neighbour is its own store with its own
    sandbox workers), the outcomes in the neighbours' order. Only for the reference query and
    its entries, whose timeout (`gold.timeout_s`) leaves room for the wait; mutants, with their
    short `suite.mutant_timeout_s`, run one at a time, and `width` (`gold.concurrency`) keeps
    what runs beside them as a gold rebuild's questions do: one that runs out is undecided, and
    changes the suite."""
    if len(neighbours) < 2 or width < 2:
        return [work(n) for n in neighbours]
    with ThreadPoolExecutor(max_workers=min(width, len(neighbours)), thread_name_prefix="kgeval-suite-neighbour") as each:
        return list(each.map(work, neighbours))


def _settled(question: Question, n: str, stores: _Stores, gold_config: GoldConfig, first: CellResult | None) -> GoldEntry | str:
    """The gold entry of a chosen neighbour, or why it cannot be one: the reference fails
    there, or is not deterministic (never a false reject). `first`: the reference's plain
    execution there, which is the entry's first execution (not run again)."""
    try:
        entry = build_entry(n, question, stores.neighbour(n), gold_config, first, vocabulary=False)
    except QueryError as exc:
        return f"the reference query fails here: {exc}"
    if entry.nondeterministic:
        return "the reference query is not deterministic here: " + "; ".join(entry.nondeterministic)
    return entry


def _keep(n: str, entry: GoldEntry | str, built: dict[str, GoldEntry], left_out: dict[str, str]) -> bool:
    """Keep a chosen neighbour's entry in `built`; False (and why, in `left_out`) when it has none."""
    if isinstance(entry, str):
        left_out[n] = entry
        return False
    built[n] = entry
    return True


def _kill_matrix(
    question: Question, on_kg: _OnKg, usable: dict[str, Reference], stores: _Stores, differs: Differs, config: SuiteConfig, gold_config: GoldConfig,
) -> tuple[list[MutantRecord], dict[str, set[int]]]:
    """Each mutant's record (killed on the KG, undecided, equivalent, or survived so far) and,
    per usable neighbour, the mutants it tells apart among those the original KG does not. A
    mutant runs on the neighbours in turn until one tells it apart (not on every neighbour: the
    greedy choice then works on what was run, and still keeps a neighbour for every mutant told
    apart); one never told apart runs on all."""
    records: list[MutantRecord] = []
    kills: dict[str, set[int]] = {n: set() for n in usable}
    for m, (mutant, same) in enumerate(zip(on_kg.found, on_kg.outcomes, strict=True)):
        if isinstance(same, MutantRecord):  # decided on the original KG (`_on_original`)
            records.append(same)
            continue
        for n, entry in usable.items():
            try:
                there = stores.neighbour(n).execute_cells(mutant.sparql, timeout_s=config.mutant_timeout_s, row_cap=gold_config.row_cap)
            except QueryError:
                same = False
                continue  # not told apart here (an answer that fails here fails the suite anyway)
            equal, told = _compared(question, entry, there, mutant.sparql, differs)
            same = same and equal
            if told:
                kills[n].add(m)
                break
        records.append(MutantRecord(kind=mutant.kind, where=mutant.where, sparql=mutant.sparql, status="equivalent" if same else "survived"))
    return records, kills


def _compared(question: Question, reference: GoldEntry | Reference, cells: CellResult, sparql: str, differs: Differs) -> tuple[bool, bool]:
    """(whether a mutant's result is the reference's, whether the judge tells them apart),
    hashed on the cells: Terms are built only for a result that differs (`Differs`)."""
    if cells.sha256() == reference.result_sha256:
        return True, False
    return False, differs(question, reference, cells.typed(), sparql)


def _greedy(kills: dict[str, set[int]], usable: dict[str, Reference], original: GoldEntry, minimum: int) -> list[str]:
    """Neighbours picked one at a time, each the one telling apart the most mutants not yet told
    apart (ties: the earlier neighbour), until none adds any; then, up to `minimum`, those whose
    gold differs from the original's, most changed first."""
    chosen: list[str] = []
    left = set().union(*kills.values()) if kills else set()
    while left:
        best = max(kills, key=lambda n: (len(kills[n] & left), -list(kills).index(n)))
        if not kills[best] & left:
            break
        chosen.append(best)
        left -= kills[best]
    if len(chosen) >= minimum:
        return chosen
    ours = _row_set(original.result)
    for n in sorted(usable, key=lambda n: (-_change(original, ours, usable[n]), n)):
        if len(chosen) >= minimum:
            break
        if n not in chosen:
            chosen.append(n)
    return chosen


def _change(original: GoldEntry, ours: set[tuple], entry: Reference) -> int:
    """How much a neighbour's gold differs from the original's (rows not shared, plus one when
    the results differ at all); `ours`: the original's rows (`_row_set`)."""
    a, b = original.result, entry.result
    if a.form == "ask":
        return int(a.boolean != b.boolean)
    return len(ours ^ _row_set(b)) + int(original.result_sha256 != entry.result_sha256)


def _row_set(result: QueryResult) -> set[tuple]:
    """A result's distinct rows, each cell as its fields (`term_cell`, read in C: a Term is
    equal to another exactly when its fields are)."""
    return {tuple(None if c is None else term_cell(c) for c in row) for row in result.rows}


def _constants(kg: KnowledgeGraph) -> list[tuple[str | None, ox.Literal]]:
    """The literals the KG's reference queries name, each with the predicate it is a value of
    when the query says (`?x p true`, or `?x p ?v ... FILTER(?v > 5000)`): the fuzzer draws
    them, and the values beside them, often for that predicate."""
    out = []
    for q in kg.questions:
        if q.query_language != "sparql":
            continue
        try:
            tokens = canonical_tokens(q.sparql)
        except KgevalError:
            continue
        prefixes = declared_prefixes(tokens)
        bound = {tokens[i + 1].text: iri_of(tokens[i], prefixes) for i in range(len(tokens) - 1) if tokens[i].kind in ("pname", "iri") and tokens[i + 1].kind == "var"}
        for i, t in enumerate(tokens):
            literal = _literal_at(tokens, i, prefixes)
            if literal is None or i and tokens[i - 1].keyword in ("LIMIT", "OFFSET"):
                continue
            before = tokens[i - 1] if i else None
            if before is not None and before.kind in ("pname", "iri"):
                out.append((iri_of(before, prefixes), literal))
                continue
            var = next((tokens[j].text for j in range(i - 1, max(i - 8, -1), -1) if tokens[j].kind == "var"), None)
            out.append((bound.get(var) if var else None, literal))
    return out


def _literal_at(tokens: list[Token], i: int, prefixes: dict[str, str]) -> ox.Literal | None:
    """The literal a query names at token `i` (a number, a boolean, a typed or plain string)."""
    t = tokens[i]
    if t.kind == "number":
        integer = "." not in t.text and "e" not in t.text.lower()
        return ox.Literal(t.text, datatype=ox.NamedNode(f"{XSD}{'integer' if integer else 'decimal'}"))
    if t.kind == "word" and t.text in ("true", "false"):
        return ox.Literal(t.text, datatype=ox.NamedNode(f"{XSD}boolean"))
    if t.kind == "string" and i + 2 < len(tokens) and tokens[i + 1].text == "^^":
        datatype = iri_of(tokens[i + 2], prefixes)
        return ox.Literal(string_value(t.text), datatype=ox.NamedNode(datatype)) if datatype else None
    return None


def _alternatives(parsed: _Kg) -> Callable[[str | None, Token], list[Token]]:
    """Other constants to put in place of one a reference query names: another object of the
    same predicate in the KG (another class for `a`)."""
    by_predicate: dict[str, list[str]] = {}
    for _, p, o, _, _ in parsed.statements:
        values = by_predicate.setdefault("rdf:type" if p == RDF_TYPE else p[1:-1], [])
        if len(values) < 64 and o not in values:
            values.append(o)

    def alternatives(predicate: str | None, token: Token) -> list[Token]:
        for value in by_predicate.get(predicate or "", ()):
            literal = parsed.literals.get(value)
            if literal is None and value.startswith("<") and token.kind == "iri" and value != token.text:
                return [Token("iri", value)]
            if literal is not None and token.kind == "string":
                text = json.dumps(literal[0], ensure_ascii=False)
                if text != token.text:
                    return [Token("string", text)]
        return []

    return alternatives


@dataclass
class Suites:
    """A suite version read and verified: its records, and its neighbours' entries on disk."""

    version: Path
    manifest_sha256: str
    """sha256 of its MANIFEST.json: what a run judged with suites records."""
    kgs: dict[str, KgSuites]
    """Each KG's record, by KG id."""
    entries: dict[str, dict[str, EntrySummary]]
    """Neighbour id -> question id -> its verified entry's summary (`entry` reads it)."""
    holdout_manifest_sha256: str
    """The manifest hash of the holdout the suites were built from (their verified manifest's)."""
    file_sha256: dict[str, str]
    """sha256 of every file of the version, by path relative to it (their verified manifest's)."""

    def suite(self, question_id: str) -> QuestionSuite | None:
        for record in self.kgs.values():
            for suite in record.questions:
                if suite.question_id == question_id:
                    return suite
        return None

    def entry(self, neighbour: str, question_id: str) -> GoldEntry:
        """The verified gold entry of a question on one neighbour (CheckFailed when absent)."""
        summary = self.entries.get(neighbour, {}).get(question_id)
        if summary is None:
            raise CheckFailed(f"{neighbour}/{question_id}: no suite entry in {self.version}; rebuild with `kgeval suite build`")
        return read_entry(summary)

    def neighbour_kg(self, neighbour: str) -> KnowledgeGraph:
        """A neighbour as a KnowledgeGraph of its files in the version (to open a store on)."""
        kg = neighbour.split("~")[0]
        info = self.kgs[kg].neighbours[neighbour]
        return KnowledgeGraph(
            id=neighbour, title=neighbour, files=tuple(self.version / f for f in info.files), questions=(),
            graphs={Path(k).name: v for k, v in info.graphs.items()},
        )  # fmt: skip

    def built_for_other_data(self, holdout: Holdout, manifest: dict) -> list[str]:
        """Why these suites may not judge `holdout` (sealed by `manifest`, `read_manifest`'s):
        built from another holdout manifest, or a KG's suites built for other data than its
        files now (their hashes as the manifest records them, which the checklist verified).
        Empty when they were built for it. A suite built for other data must not judge."""
        problems, sealed = [], manifest.get("files", {})
        if self.holdout_manifest_sha256 != manifest["sha256"]:
            problems.append(f"built from another holdout (holdout manifest {self.holdout_manifest_sha256[:12]}, the holdout's is {manifest['sha256'][:12]})")
        for kg in holdout.kgs:
            record = self.kgs.get(kg.id)
            if record is None:
                continue
            data = kg_sha256_of((f.name, sealed.get(f"{f.parent.name}/{f.name}") or sha256_file(f)) for f in kg.files)
            if record.kg_sha256 != data:
                problems.append(f"KG {kg.id}: its suites were built for other data (kg_sha256 {record.kg_sha256[:12]}, its files now {data[:12]})")
        return problems

    def neighbour_sha256(self, neighbour: str) -> list[str]:
        """The hashes the manifest gives a neighbour's files, in `neighbour_kg`'s order: what a
        store loading them must find (they are read again later than `read_suites` checked them)."""
        return [self.file_sha256[f] for f in self.kgs[neighbour.split("~")[0]].neighbours[neighbour].files]


def suites_path(gold_dir: Path) -> Path:
    """Where the suites of the gold at `gold_dir` live."""
    return Path(gold_dir) / SUITES_DIR


def has_suites(gold_dir: Path) -> bool:
    return has_gold(suites_path(gold_dir))


def read_suites(gold_dir: Path, version: Path | None = None) -> Suites:
    """The suites of the gold at `gold_dir`, verified as a gold is (`_store._each_kg_file`): the
    manifest's tag (with a key), every file's sha256 (records, neighbour KGs, displays), every
    neighbour entry's result hash (CheckFailed). A damaged file of any kind fails closed.
    `version`: the suite version directory to read (one a run holds) instead of the one in force."""
    reader = GoldReader(version if version is not None else suites_path(gold_dir))
    kgs: dict[str, KgSuites] = {}

    def attached(name: str) -> None:  # checked against its hash; a suite record is read too
        raw = reader.check_file(name)
        if name.startswith(f"{SUITES_DIR}/"):
            try:
                record = KgSuites.model_validate_json(raw)
            except ValueError as exc:
                raise CheckFailed(f"{reader.version / name}: not a suite record: {exc}") from None
            kgs[record.kg] = record

    entries = {index.kg: {e.question_id: e for e in index.entries} for index in _each_kg_file(reader, reader.index_kg, attached)}
    return Suites(reader.version, reader.manifest_sha256, kgs, entries, reader.manifest.holdout_manifest_sha256, dict(reader.manifest.files))
