"""Read-only facts about one KG that the judges' rules ask of the store holding the gold.

- **Names** (label-for-entity rules): every label of the KG (rdfs:label, skos:prefLabel,
  schema:name, foaf:name, the predicates the configuration adds for the KG, and the KG's own
  predicates named `name` or `label`: CK25's `pv:name`), read once per
  run with one SELECT, folded (case and whitespace) for comparison; an IRI's tail (its last path
  segment, percent-decoded) is one of its names too when `iri_tail` is on.
- **Descriptions** (`label_columns` rule): the literals of an IRI's description predicates
  (schema:description, rdfs:comment, ...), asked for a batch of IRIs at once when an answer's
  extra column holds values that are not their names, folded, cached per IRI.
- **Vocabulary** (vacuous-answer rule): whether an IRI occurs anywhere in the KG (subject,
  predicate or object), one ASK per IRI, cached.

Everything goes through `Store.execute` (the read-only guard, a timeout, a row cap). A run
shares one lookup per KG across its worker threads: the caches are locked.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from kgeval.config import JudgesConfig
from kgeval.errors import QueryError
from kgeval.judges._normalize import iri_tail, iri_tails
from kgeval.stores import Store


_NAMES_KEPT = 1 << 18
"""IRIs whose names a lookup keeps (then it starts over): bounded memory."""
_DESCRIBED_PER_QUERY = 100
"""IRIs whose descriptions one query asks for (its VALUES block stays a few KB)."""


def fold(text: str) -> str:
    """How the label rules compare names: case- and whitespace-insensitive."""
    return " ".join(text.casefold().split())


def folds(texts: list[str]) -> list[str]:
    """`fold` of each text, in C over the list (a KG's labels are read by the thousand)."""
    return list(map(" ".join, map(str.split, map(str.casefold, texts))))


class KgLookup:
    """Labels and vocabulary of one KG, asked of `store` (read-only) and cached."""

    def __init__(
        self, store: Store, label_predicates: tuple[str, ...], *, iri_tail: bool = True, timeout_s: float = 60.0, row_cap: int = 500_000,
        local_names: tuple[str, ...] = (), description_predicates: tuple[str, ...] = (),
    ) -> None:
        self.store = store
        self.label_predicates = label_predicates
        self.description_predicates = description_predicates
        self._described: dict[str, frozenset[str]] = {}
        """IRI -> its folded descriptions (asked in batches: `descriptions`)."""
        self.local_names = local_names
        """The KG's own predicates ending in one of these local names are label predicates too."""
        self.iri_tail = iri_tail
        self.timeout_s = timeout_s
        self.row_cap = row_cap
        self._lock = threading.Lock()
        self._names: dict[str, _Group] | None = None
        """IRI -> its folded labels (read once: `_read_labels`)."""
        self._bearers: dict[str, _Group] = {}
        """Folded label or tail -> the labelled IRIs bearing it."""
        self._complete = True
        self._occurs: dict[str, bool] = {}
        self._named: dict[str, frozenset[str]] = {}

    def names(self, iri: str) -> frozenset[str]:
        """The folded names of `iri`: its labels, and its tail when `iri_tail` is on (kept: the
        label rules ask about the same IRIs for every seed and every wrong answer)."""
        found = self._named.get(iri)
        if found is None:
            labels = _frozen(self._label_index().get(iri))
            found = labels | {fold(iri_tail(iri))} if self.iri_tail else labels
            if len(self._named) >= _NAMES_KEPT:
                self._named.clear()
            self._named[iri] = found
        return found

    def descriptions(self, iris: Iterable[str]) -> dict[str, frozenset[str]]:
        """The folded descriptions of each of `iris` (`description_predicates`), those not asked
        before asked in batches; an IRI whose batch the store failed has none this time."""
        wanted = list(dict.fromkeys(iris))
        with self._lock:
            unknown = [iri for iri in wanted if iri not in self._described]
        for start in range(0, len(unknown) if self.description_predicates else 0, _DESCRIBED_PER_QUERY):
            found = self._read_descriptions(unknown[start : start + _DESCRIBED_PER_QUERY])
            with self._lock:
                if len(self._described) >= _NAMES_KEPT:
                    self._described.clear()
                self._described.update(found)
        with self._lock:
            return {iri: self._described.get(iri, frozenset()) for iri in wanted}

    def _read_descriptions(self, iris: list[str]) -> dict[str, frozenset[str]]:
        subjects = " ".join(f"<{iri}>" for iri in iris)
        predicates = " ".join(f"<{p}>" for p in self.description_predicates)
        query = f"SELECT ?s ?d WHERE {{ VALUES ?s {{ {subjects} }} VALUES ?p {{ {predicates} }} ?s ?p ?d . FILTER(isLiteral(?d)) }}"
        try:
            result = self.store.execute_values(query, timeout_s=self.timeout_s, row_cap=self.row_cap)
        except QueryError:
            return {}
        found: dict[str, set[str]] = {iri: set() for iri in iris}
        for subject, text in zip(*result.columns):
            if subject in found and text is not None:
                found[subject].add(fold(text))
        return {iri: frozenset(texts) for iri, texts in found.items()}

    def bearers(self, name: str) -> frozenset[str]:
        """IRIs of the KG one of whose labels (or tails, among labelled IRIs) folds to `name`."""
        self._label_index()
        return _frozen(self._bearers.get(fold(name)))

    @property
    def labels_complete(self) -> bool:
        """False when the KG holds more labels than the row cap (ambiguity may be undercounted)."""
        self._label_index()
        return self._complete

    def occurs(self, iri: str) -> bool:
        """True when `iri` occurs in the KG as a subject, predicate or object. A store failure
        counts as occurring: the vacuous rule rejects only on evidence."""
        with self._lock:
            known = self._occurs.get(iri)
        if known is not None or self._labelled(iri):
            return known is not False
        query = f"ASK {{ {{ ?s <{iri}> ?o }} UNION {{ ?s ?p <{iri}> }} UNION {{ <{iri}> ?p ?o }} }}"
        try:
            found = bool(self.store.execute(query, timeout_s=self.timeout_s, row_cap=1).boolean)
        except QueryError:
            return True
        with self._lock:
            self._occurs[iri] = found
        return found

    def lacks(self, iris: Iterable[str]) -> bool:
        """True when one of `iris` occurs nowhere in the KG (`occurs` of each); those not asked
        before are asked in one query (a candidate's IRIs together: one guard and one engine
        call instead of one ASK each), and by one ASK each if the store fails that query."""
        with self._lock:
            unknown = sorted({iri for iri in iris if iri not in self._occurs and not self._labelled(iri)})
        if len(unknown) > 1:
            found = self._occurring(unknown)
            if found is not None:
                with self._lock:
                    self._occurs.update((iri, n in found) for n, iri in enumerate(unknown))
        return not all(map(self.occurs, iris))

    def _labelled(self, iri: str) -> bool:
        """`iri` is the subject of a label: it occurs in the KG, no query needed. Read from the
        label index when the label rules have read it already (never read for this)."""
        names = self._names
        return names is not None and iri in names

    def _occurring(self, iris: list[str]) -> set[int] | None:
        """Positions in `iris` of those that occur in the KG, as `occurs` asks of each; None
        when the store fails the query."""
        rows = " ".join(f"({n} <{iri}>)" for n, iri in enumerate(iris))
        query = (
            f"SELECT ?n WHERE {{ VALUES (?n ?iri) {{ {rows} }} "
            "FILTER(EXISTS { ?s ?iri ?o } || EXISTS { ?s ?p ?iri } || EXISTS { ?iri ?p ?o }) }"
        )
        try:
            result = self.store.execute_cells(query, timeout_s=self.timeout_s, row_cap=len(iris))
        except QueryError:
            return None
        return {int(row[0][1]) for row in result.rows if row[0] is not None}

    def _label_index(self) -> dict[str, _Group]:
        with self._lock:
            if self._names is None:
                self._names = self._read_labels()
            return self._names

    def _named_predicates(self) -> tuple[str, ...]:
        """The KG's predicates with literal values whose IRI ends in one of `local_names`."""
        if not self.local_names:
            return ()
        ending = "|".join(self.local_names)  # plain words (the configuration checks them)
        query = f'SELECT DISTINCT ?p WHERE {{ ?s ?p ?o . FILTER(isLiteral(?o) && REGEX(STR(?p), "[/#:]({ending})$", "i")) }}'
        try:
            result = self.store.execute_cells(query, timeout_s=self.timeout_s, row_cap=1000)
        except QueryError:
            return ()
        return tuple(row[0][1] for row in result.rows if row[0] is not None)

    def _read_labels(self) -> dict[str, _Group]:
        predicates = tuple(dict.fromkeys((*self.label_predicates, *self._named_predicates())))
        if not predicates:
            return {}
        values = " ".join(f"<{p}>" for p in predicates)
        query = f"SELECT ?s ?l WHERE {{ VALUES ?p {{ {values} }} ?s ?p ?l . FILTER(isIRI(?s) && isLiteral(?l)) }}"
        try:  # bare values: every label of the KG, no cell or Term built for each
            result = self.store.execute_values(query, timeout_s=self.timeout_s, row_cap=self.row_cap)
        except QueryError:
            self._complete = False
            return {}
        subjects, labels = result.columns
        self._complete = result.total <= len(subjects)
        if None in subjects or None in labels:  # the FILTER binds both: only a store that ignores it
            pairs = [(subject, label) for subject, label in zip(subjects, labels) if subject is not None and label is not None]
            subjects, labels = [subject for subject, _ in pairs], [label for _, label in pairs]
        folded = folds(labels)
        names = _grouped(zip(subjects, folded))
        bearers = _grouped(zip(folded, subjects))
        if self.iri_tail:
            labelled = list(names)
            _grouped(zip(folds(iri_tails(labelled)), labelled), into=bearers)
        self._bearers = bearers
        return names


_Group = str | set[str]
"""A key's values in a label index: the value itself while there is one (most IRIs have one
label, most labels one bearer), a set past one."""


def _grouped(pairs: Iterable[tuple[str, str]], into: dict[str, _Group] | None = None) -> dict[str, _Group]:
    """Each key's values (`_Group`), added to `into` when given: no set built for a key with one
    value. On a KG of bench/run.py's 20-KG holdout (1,072 labels), the index took 8-16 ms to build
    with a set for every IRI and every name, then a frozen copy of each (the collector's passes
    over those thousands of objects included), 1.5-3 ms so."""
    groups: dict[str, _Group] = {} if into is None else into
    known_group = groups.get
    for key, value in pairs:
        known = known_group(key)
        if known is None:
            groups[key] = value
        elif known.__class__ is str:
            if known != value:
                groups[key] = {known, value}
        else:
            known.add(value)  # type: ignore[union-attr]
    return groups


def _frozen(group: _Group | None) -> frozenset[str]:
    if group is None:
        return frozenset()
    return frozenset((group,)) if group.__class__ is str else frozenset(group)


def kg_lookup(store: Store, kg: str, config: JudgesConfig, timeout_s: float) -> KgLookup:
    """The lookup the judges use for KG `kg`, as the execution judge's label rules configure it."""
    labels = config.execution.labels
    return KgLookup(
        store, labels.predicates_for(kg), iri_tail=labels.iri_tail, timeout_s=timeout_s, row_cap=labels.max_labels, local_names=labels.local_names,
        description_predicates=labels.description_predicates,
    )
