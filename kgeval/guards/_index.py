"""What the contamination check and the example-bank guards look for: the holdout's index.

Built once from a loaded holdout; picklable, so worker processes receive it once.

Distinctive IRIs: an IRI of a holdout KG (its data files and its reference queries) is
distinctive unless it lies in a common or shared namespace (`GuardsConfig`) or appears in a
training KG's fingerprint (`schema_gate/fingerprints/`): those legitimately occur in training
data. The namespace of a distinctive IRI is distinctive too (so a `PREFIX` declaration is
caught) when it has a path below the host and no training IRI or common/shared namespace
lies under it.

KG identifiers: each question id, and each KG id, matched as a whole token (case-sensitive)
when it is distinctive enough to mean the holdout: at least 4 characters with a digit, `_`
or `-` in it (`trials_v3`, `hr-07`). Every KG id is also matched in its path form
`holdout/<kg>`, however short or common the id is.

Questions: exact (normalized) containment, and near-duplicates (content-word Jaccard >=
`near_duplicate` between a holdout question and a window of the text about its length).

Prefilter: one regular expression of literal strings that every match must contain: the
distinctive namespaces (or the IRI itself when its namespace is not distinctive), the
identifiers, one needle of each reference query without a distinctive IRI (its rarest: not a
common namespace; in the data's sample, the least frequent), and for
each question enough *anchor* words that any text reaching its near-duplicate threshold
contains one (prefix filtering: a window with Jaccard >= t shares >= ceil(t*|F|) of the
question's |F| features, so it cannot miss all of any |F| - ceil(t*|F|) + 1 of them). Which
features serve as anchors is free, so `with_anchors_from` picks those rarest in a sample of
the data being checked. The prefilter runs per line (`Needles`: Hyperscan over the column's
buffer, RE2 in Arrow without it); questions are matched
within a line, so a question broken across lines is found only if one line reaches the
threshold. Reference queries span lines: a text is parsed as SPARQL only when it holds the
key of some query (one of its needles, `query_keys`) and then all its needles
(`query_needles`). A key holding a prefilter literal is preferred: every line with it passes
the prefilter, so it is looked for in the kept lines only; other keys in whole texts.

Folding: everything the index holds (questions, IRIs, identifiers, reference queries) and
every text it is given is `folded` first (NFKC, hidden characters dropped, Cyrillic and Greek
look-alikes read as Latin: `kgeval.guards._text`), so a copy in full-width forms, with
zero-width spaces or soft hyphens, or with look-alike letters is the text it looks like.
Beyond that the Python matchers fold case (casefold), the prefilter Unicode simple case
folding; the question word count allows for the difference (`_hidden_word_weights`).
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Literal, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyoxigraph as ox
from pydantic import BaseModel

from kgeval.config import GuardsConfig
from kgeval.errors import InputError
from kgeval.guards._fingerprint import SchemaFingerprint
from kgeval.guards._needles import Needles, load_words_database, occurrences, whole_words, words_database
from kgeval.guards._text import (
    NOT_A_QUERY,
    QUERY_KEYWORD,
    STOPWORDS,
    TOKEN,
    QueryKey,
    bare_query_needles,
    canonical_sparql,
    declarations,
    feature,
    features,
    folded,
    iris_in_query,
    query_key,
    query_needles,
    sparql_candidates,
    tokens,
)
from kgeval.guards._vocab import in_namespaces, namespace
from kgeval.holdout import Holdout
from kgeval.stores import rdf_format

MatchKind = Literal["kg-identifier", "iri", "namespace", "question-exact", "question-near", "sparql"]

_IRI = re.compile(r"https?://[^\s<>\"'{}|\\^`]+")
_IRI_TRAILING = ".,;:!?)]'"

_SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate: legal in JSON and Python text, not encodable in UTF-8."""


class Match(BaseModel, frozen=True):
    """One piece of holdout material found in a text."""

    kind: MatchKind
    """What matched: an identifier, a distinctive IRI or namespace, a question, a query."""
    matched: str
    """The text that matched (an excerpt, at most 200 characters)."""
    holdout_item: str
    """Which holdout item: "kg <id>", or "<kg>/<question id>"."""
    score: float | None = None
    """Similarity for near-duplicate questions."""


class LineCandidates(NamedTuple):
    """Of lines that passed the prefilter, what `match_line` may find in each (`line_candidates`)."""

    kept: np.ndarray
    """Which lines it may find anything in (`line_mask`)."""
    only: dict[int, list[int]]
    """For the kept lines whose word count rules questions out: the only questions each may
    match (its `questions`)."""
    literal: np.ndarray
    """Which lines hold one of `literals` (ignoring case): only those may hold an identifier
    or IRI (its `literals`). Every IRI the matchers find holds its namespace or itself as a
    literal, and every identifier is one."""


@dataclass(frozen=True)
class HeldQuestion:
    kg: str
    id: str
    normalized: str
    length: int
    features: frozenset[str]
    names: frozenset[str]
    """Features of words written capitalized inside the question (likely names)."""
    threshold: float
    """Jaccard a window needs to be a near-duplicate (above 1: exact matches only); see
    `ContaminationConfig.min_question_words`."""
    words: frozenset[str] = frozenset()
    """The `feature` of each of its normalized words, function words included."""
    coverage: float = 0.0
    """Share of `words` a near-duplicate must hold around its window (0 for a question with
    many content words); see `ContaminationConfig.min_question_coverage`."""
    function_words: int = 0
    """How many distinct function words (`STOPWORDS`) it has."""
    order: tuple[str, ...] = ()
    """Its `features` in the order they first appear in it."""

    @property
    def near(self) -> bool:
        return self.threshold <= 1.0


@dataclass
class HoldoutIndex:
    kgs: tuple[str, ...]
    identifiers: dict[str, str]
    iris: dict[str, frozenset[str]]
    namespaces: dict[str, frozenset[str]]
    questions: list[HeldQuestion]
    by_key: dict[str, list[int]]
    sparql: dict[str, list[int]]
    needles: list[frozenset[str]]
    """Per reference query (distinct canonical forms), strings a matching text must contain."""
    near_duplicate: float
    prefilter: Needles
    """The literals (with `query_literals`) anywhere, and every anchor word at a word start."""
    literals: frozenset[str]
    """Namespaces, IRIs and identifiers: what `match_line` finds."""
    query_keys: frozenset[str]
    """One needle of each reference query (case-sensitive): texts without any are no query.
    Chosen, where a query has one, among needles holding a prefilter literal (`_covered`):
    those are found in the lines the prefilter keeps, the others only in whole texts."""
    undistinctive_queries: list[str] = field(default_factory=list)
    """Reference queries with no distinctive IRI."""
    undistinctive_needles: list[frozenset[str]] = field(default_factory=list)
    """The needle sets (`needles` and `bare`'s) none of whose needles holds a literal: those
    of undistinctive queries, and those of queries copied without their declarations (which
    no longer hold a holdout namespace). The prefilter holds one needle of each."""
    query_literals: frozenset[str] = frozenset()
    """One needle of each of `undistinctive_needles` (the rarest known): in the prefilter, so a
    text holding the query is tried as one, but not in `line_mask`'s literals (a line matcher
    finds IRIs, identifiers and questions, never a query: the needle may be a common name)."""
    sparql_keys: dict[QueryKey, str] = field(default_factory=dict)
    """The `query_key` of each reference query (that has one), with its canonical form (a key
    of `sparql`): a text with one of these keys is that query, without parsing it."""
    bare: list[tuple[str, frozenset[str]]] = field(default_factory=list)
    """Per reference query with declarations (distinct): its declarations, and the strings a
    copy of it without them must contain (`bare_query_needles`): such a copy is read with the
    holdout's declarations (`SELECT ?p WHERE { ?p hr:worksIn ?d }` is hr's query all the same)."""

    def __post_init__(self) -> None:
        ids = "|".join(re.escape(i) for i in sorted(self.identifiers, key=len, reverse=True))
        self._ids = re.compile(rf"(?<![\w-])(?:{ids})(?![\w-])") if ids else None
        self._literal_prefilter = _prefilter(set(self.literals), set())
        self.query_prefilter = _query_prefilter(set(self.query_keys))
        covered = {k for k in self.query_keys if _covered(k, self.literals | self.query_literals)}
        self.line_query_prefilter = _query_prefilter(covered)
        """The keys every line holding one of passes the prefilter: a text holds one of them
        exactly when one of its kept lines does."""
        self.text_query_prefilter = _query_prefilter(set(self.query_keys) - covered) if self.query_keys - covered else None
        """The other keys (or None): looked for in whole texts."""
        # Kept when unpickled: rebuilding it costs a worker ~0.3 s of Unicode tables.
        self._words = self.__dict__.get("_words") or _QuestionWords(self.questions)
        # Each token whose feature is a question's (few spellings each): a dict look-up per
        # word instead of `feature` of every word of a line.
        spellings = {t for k in self.by_key for t in (k, k + "s", k + "ing")}
        self._spelled = {t: f for t in spellings if t not in STOPWORDS and (f := feature(t)) in self.by_key}

    def __getstate__(self) -> dict:
        # The word tables and the literal prefilter travel along: each carries what a worker
        # would otherwise rebuild (Unicode tables, a compiled Hyperscan database).
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_") or k in ("_words", "_literal_prefilter")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    def may_match(self, text: str) -> bool:
        """The prefilter: False means no matcher can fire on `text`."""
        return bool(self.prefilter_mask([folded(text)])[0])

    def prefilter_mask(self, texts: list[str] | pa.Array) -> np.ndarray:
        """`may_match` of each text (`folded` already: the needles are), in one pass of a
        multi-literal matcher over the column (`Needles.mask`): linear in the text's length.
        (Python's `re` tries each of the prefilter's hundreds of alternatives at every position:
        20 s for one megabyte of text without a line break.)"""
        return self.prefilter.mask(texts)

    def line_mask(self, lines: pa.Array) -> np.ndarray:
        """Of lines that passed the prefilter: those `match_line` may find something in. A
        line holds a literal (IRI, namespace, identifier), or for some question as many of
        its features as an exact or near match needs (counted in Arrow, not in Python)."""
        return self.line_candidates(lines)[0]

    def line_candidates(self, lines: pa.Array) -> LineCandidates:
        """`line_mask`, and what `match_line` needs to look for in each kept line."""
        if not len(lines):
            return LineCandidates(np.zeros(0, dtype=bool), {}, np.zeros(0, dtype=bool))
        literal = self._literal_prefilter.mask(lines)
        question, only = self._words.line_questions(lines)
        only.update((i, []) for i in np.flatnonzero(literal & ~question).tolist())
        return LineCandidates(literal | question, only, literal)

    def match_text(self, text: str) -> list[Match]:
        """Every holdout match in `text`, `folded`: each line, then the text as a query. A lone
        surrogate (legal in JSON, not in UTF-8) is read as U+FFFD: no holdout text holds one."""
        text = folded(text)
        try:
            lines = pa.array(text.split("\n"), pa.large_string())
        except UnicodeEncodeError:
            text = _SURROGATE.sub("\ufffd", text)
            lines = pa.array(text.split("\n"), pa.large_string())
        kept = lines.filter(pa.array(self.prefilter_mask(lines)))
        if not len(kept):
            return []
        hit_lines = kept.filter(pa.array(self.line_mask(kept))).to_pylist()
        return unique_matches([m for line in hit_lines for m in self.match_line(line)] + self.match_query(text))

    def match_line(self, line: str, questions: Sequence[int] | None = None, literals: bool = True) -> list[Match]:
        """Identifiers, IRIs and questions in one line (questions are matched within a line);
        `questions`: the only ones to try (from `line_candidates`), None: all; `literals`
        False: the line holds none of `literals` (`line_candidates`), so no identifier or IRI."""
        found = [*self._match_identifiers(line), *self._match_iris(line)] if literals else []
        return found + self._match_questions(line, questions)

    def match_query(self, text: str, *, prefiltered: bool = False) -> list[Match]:
        """Reference queries in `text`, canonicalized (spans lines); `prefiltered` when the
        caller has run `query_prefilter` on it already."""
        return self._match_sparql(text) if prefiltered or self.query_prefilter.mask([text])[0] else []

    def with_anchors_from(self, sample: list[str]) -> HoldoutIndex:
        """The same index with each question's anchors chosen as its features rarest in
        `sample` (lines of the data to be checked). Any choice of |F| - ceil(t*|F|) + 1
        features is sound; the rarest make the prefilter pass the fewest lines."""
        if not sample:
            return self
        sample = [folded(line) for line in sample]
        counts = self._words.lines_with_feature(sample)
        anchors = _anchors(self.questions, lambda f, q: (counts[f], _commonness(f, q.names), -len(f), f))
        joined = "\n".join(sample)
        needles = {x for n in self.needle_sets() for x in n}
        anywhere = occurrences(joined, needles, ignore_case=True)  # the prefilter ignores case
        rarest = {min(n, key=lambda x: (anywhere[x], *_needle_rank(x))) for n in self.undistinctive_needles}
        covering = self.literals | rarest
        seen = occurrences(joined, needles)  # queries share namespaces: counted once
        # Each query's key: a covered needle if it has one (found in kept lines), the rarest.
        tiers = [[x for x in n if _covered(x, covering)] or list(n) for n in self.needle_sets() if n]
        keys = {min(tier, key=lambda x: (seen[x], -len(x))) for tier in tiers}
        prefilter = _prefilter(set(self.literals) | rarest, anchors)
        return replace(self, prefilter=prefilter, query_keys=frozenset(keys), query_literals=frozenset(rarest))

    def _match_identifiers(self, text: str) -> list[Match]:
        if self._ids is None:
            return []
        return [Match(kind="kg-identifier", matched=m.group(0), holdout_item=self.identifiers[m.group(0)]) for m in self._ids.finditer(text)]

    def _match_iris(self, text: str) -> list[Match]:
        found = []
        for raw in _IRI.findall(text):
            iri = raw.rstrip(_IRI_TRAILING)
            if iri in self.iris:
                found.append(Match(kind="iri", matched=iri[:200], holdout_item=_kgs(self.iris[iri])))
                continue
            for ns in _prefixes(iri):
                if ns in self.namespaces:
                    found.append(Match(kind="namespace", matched=iri[:200], holdout_item=_kgs(self.namespaces[ns])))
                    break
        return found

    def _match_questions(self, text: str, only: Sequence[int] | None = None) -> list[Match]:
        if only is not None and not only:
            return []
        words = tokens(text)
        positions: dict[str, list[int]] = defaultdict(list)
        for i, w in enumerate(words):
            if (f := self._spelled.get(w)) is not None:
                positions[f].append(i)
        candidates = sorted(only) if only is not None else sorted({i for k in {*positions, *words} for i in self.by_key.get(k, ())})
        padded = f" {' '.join(words)} "
        feats: list[str | None] = []  # every word's feature, for windows: computed once, if needed
        found = []
        for i in candidates:
            q = self.questions[i]
            item = f"{q.kg}/{q.id}"
            if f" {q.normalized} " in padded:
                found.append(Match(kind="question-exact", matched=q.normalized[:200], holdout_item=item, score=1.0))
                continue
            have = [f for f in q.features if f in positions]
            if not q.near or len(have) < math.ceil(q.threshold * len(q.features)):
                continue
            feats = feats or [None if w in STOPWORDS else feature(w) for w in words]
            score, start, end = _best_window(words, feats, sorted(p for f in have for p in positions[f]), q)
            if score >= q.threshold and _covers(words, start, end, q) and (score >= 1.0 or _unreplaced(feats, start, end, q)):
                window = " ".join(words[start : end + 1])
                found.append(Match(kind="question-near", matched=window[:200], holdout_item=item, score=round(score, 3)))
        return found

    def _match_sparql(self, text: str) -> list[Match]:
        """Reference queries in `text`: a piece that parses as it is, or, when it does not (a
        prefix it does not declare), read after the declarations of each reference query whose
        copy without them it may be (its own declarations, after those, still count)."""
        prologues = [p for p, needles in self.bare if all(n in text for n in needles)]
        if not prologues and not any(all(n in text for n in needles) for needles in self.needles):
            return []
        found = []
        for piece in sparql_candidates(text):
            if not QUERY_KEYWORD.search(piece):
                continue
            canonical = self._canonical(piece)
            for prologue in prologues if canonical is None else ():
                if (canonical := self._canonical(f"{prologue}\n{piece}")) in self.sparql:
                    break
            for i in self.sparql.get(canonical, ()) if canonical else ():
                q = self.questions[i]
                found.append(Match(kind="sparql", matched=" ".join(piece.split())[:200], holdout_item=f"{q.kg}/{q.id}"))
        return found

    def _canonical(self, piece: str) -> str | None:
        """`canonical_sparql(piece)`, told by its `query_key` where that can say it: a
        reference query's key (the query, up to names), or a text that cannot parse."""
        key = query_key(piece)
        if key is not None and (key == NOT_A_QUERY or key in self.sparql_keys):
            return self.sparql_keys.get(key)
        return canonical_sparql(piece)

    def needle_sets(self) -> list[frozenset[str]]:
        """The needles of each reference query as written, and of each without its declarations."""
        return [*self.needles, *(n for _, n in self.bare)]

    def question_matches(self, text: str) -> list[Match]:
        """Exact and near-duplicate holdout questions in `text` (no prefilter: for short texts)."""
        return self._match_questions(text)


class _QuestionWords:
    """Counts, per line and question, the question's distinct features in the line, in Arrow
    and numpy: a line with fewer than a match needs (near: ceil(t x |F|), exact: all) cannot
    hold the question. Lines are split into words by a byte table (`_ascii_words`): on an
    ASCII line these are its `tokens`. On a line with other characters, a `tokens` word the
    table split misses involves a character that NFKC and case folding turn into a letter or
    digit of ASCII or of some question feature, or a combining mark (`_hidden_word_weights`):
    the line's count of each question is raised by how many words such characters can make."""

    def __init__(self, questions: list[HeldQuestion]) -> None:
        feats = sorted({f for q in questions for f in (q.features or {q.normalized.split(" ")[0]})})
        fid = {f: i for i, f in enumerate(feats)}
        # Every token whose feature is f: f, f+"s", f+"ing" (a superset is sound: it only keeps more lines).
        spellings = {t: fid[f] for f in feats for t in (f, f + "s", f + "ing") if t == f or feature(t) == f}
        self.spellings = tuple(sorted(spellings))
        self.vocab = pa.array(self.spellings, pa.large_string())
        self.vocab_feature = np.array([spellings[t] for t in sorted(spellings)], dtype=np.int64)
        by_feature: list[list[int]] = [[] for _ in feats]
        for qi, q in enumerate(questions):
            for f in q.features or {q.normalized.split(" ")[0]}:
                by_feature[fid[f]].append(qi)
        self.indptr = np.cumsum([0] + [len(b) for b in by_feature])
        self.question_of = np.array([qi for b in by_feature for qi in b], dtype=np.int64)
        self.need = np.array([_needed(q) for q in questions], dtype=np.int64)
        self.features, self.n_features, self.n_questions = feats, len(feats), len(questions)
        self.hidden = _hidden_word_weights(frozenset("".join(feats)) - frozenset(string.printable))

    def __getstate__(self) -> dict:
        return {**self.__dict__, "database": words_database(self.spellings)}

    def __setstate__(self, state: dict) -> None:
        load_words_database(state["spellings"], state.pop("database"))
        self.__dict__.update(state)

    def line_questions(self, lines: pa.Array) -> tuple[np.ndarray, dict[int, list[int]]]:
        """Which lines may hold a question, and for those without characters the byte table
        may miss, the questions with enough features in them (the others cannot match)."""
        hidden = self.hidden_words(lines)
        keep = hidden >= (self.need.min() if self.n_questions else 1)
        if not self.n_questions:
            return keep, {}
        line, feat = self._features_by_line(lines)
        starts, counts = self.indptr[feat], np.diff(self.indptr)[feat]
        offsets = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        key, have = np.unique(np.repeat(line, counts) * self.n_questions + self.question_of[offsets], return_counts=True)
        have += hidden[key // self.n_questions]
        enough = key[have >= self.need[key % self.n_questions]]
        line = enough // self.n_questions
        keep[line] = True
        plain = hidden[line] == 0  # a line with hidden words keeps every question (no entry)
        only: dict[int, list[int]] = {}
        for i, q in zip(line[plain].tolist(), (enough[plain] % self.n_questions).tolist()):
            only.setdefault(i, []).append(q)
        return keep, only

    def _features_by_line(self, lines: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """(line, feature id) of each distinct question feature the byte table finds in a line:
        by Hyperscan over the lines' bytes, or without it by Arrow's split (the same pairs)."""
        found = whole_words(lines, self.spellings, _WORD_BYTES)
        if found is None:
            line, feat = self._features_by_line_in_arrow(lines)
        else:
            line, feat = found[0], self.vocab_feature[found[1]]
        return np.divmod(np.unique(line * self.n_features + feat), self.n_features)

    def _features_by_line_in_arrow(self, lines: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        words = pc.ascii_split_whitespace(_ascii_words(lines))
        at = pc.index_in(pc.list_flatten(words), value_set=self.vocab)
        valid = pc.is_valid(at).to_numpy(zero_copy_only=False)
        return pc.list_parent_indices(words).to_numpy()[valid], self.vocab_feature[pc.drop_null(at).to_numpy()]

    def lines_with_feature(self, lines: list[str]) -> Counter[str]:
        """In how many of `lines` each question feature occurs, as `tokens` splits them: the
        ASCII lines counted in Arrow (the byte table splits them the same), the others in Python."""
        array = pa.array(lines, pa.large_string())
        plain = pc.fill_null(pc.string_is_ascii(array), True).to_numpy(zero_copy_only=False)
        _, feat = self._features_by_line(array.filter(pa.array(plain)))
        counts = Counter({self.features[f]: int(n) for f, n in enumerate(np.bincount(feat, minlength=self.n_features)) if n})
        wanted = set(self.features)
        for line in array.filter(pa.array(~plain)).to_pylist():
            counts.update(wanted.intersection(map(feature, set(tokens(line)))))  # set: lines repeat words
        return counts

    def hidden_words(self, lines: pa.Array) -> np.ndarray:
        """Per line, at most how many of its `tokens` words the byte table split misses."""
        hidden = np.zeros(len(lines), dtype=np.int64)
        other = np.flatnonzero(~pc.fill_null(pc.string_is_ascii(lines), True).to_numpy(zero_copy_only=False))
        if not len(other):
            return hidden
        some = lines.take(pa.array(other, pa.int64()))
        for weight, chars in self.hidden.items():
            hidden[other] += weight * pc.count_substring_regex(some, pattern=chars).to_numpy(zero_copy_only=False)
        return hidden


_WORD_BYTES = bytes(b + 32 if 65 <= b <= 90 else b if 97 <= b <= 122 or 48 <= b <= 57 else 32 for b in range(256))
"""ASCII letters lower-cased, digits kept, every other byte a space: on an ASCII line,
`tokens` (NFKC and case folding change no ASCII character; `[^\\W_]+` is `[A-Za-z0-9]+`)."""


@lru_cache(maxsize=8)
def _hidden_word_weights(feature_chars: frozenset[str]) -> dict[int, str]:
    """RE2 character classes by weight: the non-ASCII characters that can make or join a
    `tokens` word the byte table split misses, each weighted by how many words it can be
    part of. Those are the characters that NFKC and case folding turn into text with an
    ASCII letter or digit or a non-ASCII character of a question feature (`ﬁ`, `Ｋ`, `ß`,
    KELVIN SIGN, `Ö`) or into nothing, a feature's own non-ASCII characters and the marks
    that compose into them (`o` + U+0308 is `ö`; a mark joined to an ASCII letter makes a
    word no ASCII feature is)."""
    wanted = set(feature_chars) | set(string.ascii_lowercase + string.digits)
    by_weight: dict[int, set[int]] = defaultdict(set)
    for c, spelled in _folded_characters():
        if not spelled or not wanted.isdisjoint(spelled):  # a character folded to nothing would join words
            by_weight[max(1, len(TOKEN.findall(spelled)))].add(ord(c))
    by_weight[1].update(ord(x) for c in feature_chars for x in unicodedata.normalize("NFD", c) + c if not x.isascii())
    return {w: _char_class(sorted(points)) for w, points in sorted(by_weight.items())}


@lru_cache(maxsize=1)
def _folded_characters() -> list[tuple[str, str]]:
    """(character, NFKC + case folded) of every non-ASCII character that they change. Blocks
    of 4096 characters are normalized at once, joined by NULs (which compose with nothing),
    and looked into only when something in them changed: ~0.3 s, once per process."""
    changed = []
    for start in range(0x80, 0x110000, 4096):
        points = np.arange(start, min(start + 4096, 0x110000), dtype=np.uint32)
        points = points[(points < 0xD800) | (points > 0xDFFF)]
        if not len(points):
            continue
        block = np.stack([points, np.zeros_like(points)], axis=1).tobytes().decode("utf-32-le")
        folded = unicodedata.normalize("NFKC", block).casefold()
        if folded != block:
            changed += [(c, f) for c, f in zip(block[::2], folded.split("\0")) if c != f]
    return changed


def _char_class(points: list[int]) -> str:
    """An RE2 class of the code points (sorted), as ranges."""
    ranges, start = [], points[0]
    for a, b in zip(points, points[1:] + [-1]):
        if b != a + 1:
            ranges.append(f"\\x{{{start:x}}}" + (f"-\\x{{{a:x}}}" if a != start else ""))
            start = b
    return "[" + "".join(ranges) + "]"


def _ascii_words(lines: pa.Array) -> pa.Array:
    """`lines` with every byte mapped by `_WORD_BYTES` (one `bytes.translate`, ~10x faster
    than a Unicode regex split in Arrow): split at whitespace, an ASCII line gives exactly its
    `tokens`. Lines with other characters come out mangled; `line_mask` keeps them anyway."""
    lines = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    wide = pa.types.is_large_string(lines.type)
    validity, offsets, data = lines.buffers()
    bounds = np.frombuffer(offsets, np.int64 if wide else np.int32)[lines.offset : lines.offset + len(lines) + 1]
    words = data[int(bounds[0]) : int(bounds[-1])].to_pybytes().translate(_WORD_BYTES) if data is not None else b""
    rebased = pa.py_buffer((bounds - bounds[0]).tobytes())
    kind = pa.large_string() if wide else pa.string()
    return pa.Array.from_buffers(kind, len(lines), [_validity(lines), rebased, pa.py_buffer(words)])


def _validity(array: pa.Array) -> pa.Buffer | None:
    """`array`'s validity bitmap starting at bit 0 (a sliced array's starts at its offset)."""
    if not array.null_count:
        return None
    return pc.is_valid(array).buffers()[1]


def _needed(q: HeldQuestion) -> int:
    """Distinct features a line must hold to match `q` at all (exact needs every one)."""
    if not q.features:
        return 1
    return math.ceil(q.threshold * len(q.features)) if q.near else len(q.features)


def unique_matches(found: list[Match]) -> list[Match]:
    """One match per kind and holdout item, the first found."""
    seen: set[tuple[str, str]] = set()
    unique = []
    for m in found:
        if (m.kind, m.holdout_item) not in seen:
            seen.add((m.kind, m.holdout_item))
            unique.append(m)
    return unique


def _kgs(kgs: frozenset[str]) -> str:
    return "kg " + ", ".join(sorted(kgs))


def _prefixes(iri: str) -> list[str]:
    """Every prefix of `iri` ending in `/` or `#`, longest first."""
    return [iri[: i + 1] for i in range(len(iri) - 1, 7, -1) if iri[i] in "/#"]


def _best_window(words: list[str], feats: list[str | None], hits: list[int], q: HeldQuestion) -> tuple[float, int, int]:
    """Highest Jaccard of the question's features with a window of at most its length + 3
    words, and the window's first and last word (0, 0, -1: none). Only windows that start and
    end on one of its features can be best: widening a window adds no feature of the question.
    Each start grows its window one word at a time, keeping the intersection and union sizes,
    so a line costs O(hits x window length), not the cube of it (a long line full of the
    question's words is a service request's worst case)."""
    best, best_start, best_end = 0.0, 0, -1
    span, size = q.length + 3, len(q.features)
    for start in hits:
        seen: set[str] = set()
        shared = 0
        for end in range(start, min(start + span, len(feats))):
            f = feats[end]
            if f is None or f in seen:
                continue
            seen.add(f)
            if f in q.features:
                shared += 1
                score = shared / (size + len(seen) - shared)
                if score > best:
                    best, best_start, best_end = score, start, end
        if best >= 1.0:
            break
    return best, best_start, best_end


def _covers(words: list[str], start: int, end: int, q: HeldQuestion) -> bool:
    """Do the words around a near-duplicate window (as many more as make it the question's
    length, on each side) hold `q.coverage` of the question's words? When they hold every
    content word of the question in its order, any function word stands for any other: a copy
    may swap them (`What is` -> `Which was`), drop or add some, or put a lead-in before it
    ("Please tell me: "), and is still a question of the same words; a generic phrase
    ("employees per department") has too few words of any kind around the content words, and
    one with them in another order asks something else ("Which phase has the most trials?"
    is not "How many trials are there in each phase?")."""
    if not q.coverage:
        return True
    slack = max(0, q.length - (end - start + 1))
    nearby = words[max(0, start - slack) : end + 1 + slack]
    around = {feature(w) for w in nearby}
    if len(q.words & around) >= q.coverage * len(q.words):
        return True
    in_order = tuple(dict.fromkeys(f for w in nearby if w not in STOPWORDS and (f := feature(w)) in q.features))
    if in_order != q.order:
        return False
    function = min(q.function_words, len(STOPWORDS.intersection(nearby)))
    return len(q.features) + function >= q.coverage * len(q.words)


def _unreplaced(feats: list[str | None], start: int, end: int, q: HeldQuestion) -> bool:
    """For a short question whose window lacks some of its content words: is the Jaccard still
    at least its threshold over some span of the question's length around the window? A window
    may leave out a content word that another one took the place of ("What is the email of
    Baldwin Dirksen?": `baldwin dirksen` alone has 2 of the 3 features of "What is the
    telephone of Baldwin Dirksen?"); the span holds the replacement, and asks something else."""
    if not q.coverage:
        return True
    span = max(end - start + 1, min(q.length, len(feats)))
    best = 0.0
    for first in range(max(0, end - span + 1), min(start, len(feats) - span) + 1):
        held = {f for f in feats[first : first + span] if f is not None}
        best = max(best, len(held & q.features) / len(held | q.features))
    return best >= q.threshold


def build_index(holdout: Holdout, config: GuardsConfig, training: list[SchemaFingerprint] = ()) -> HoldoutIndex:
    """Index `holdout` for the matchers (module docstring), leaving out what training KGs share."""
    excluded = config.common_namespaces + config.shared_namespaces
    training_iris = {iri for fp in training for iri in (*fp.classes, *fp.predicates, *(p.range for p in fp.pairs))}
    iris: dict[str, set[str]] = defaultdict(set)
    for kg in holdout.kgs:
        for iri in _kg_iris(kg.files) | {i for q in kg.questions for i in iris_in_query(q.sparql)}:
            if not in_namespaces(iri, excluded) and iri not in training_iris:
                iris[folded(iri)].add(kg.id)  # as the matchers read a text's
    namespaces = _distinctive_namespaces(iris, excluded, training_iris)
    questions = _held_questions(holdout, config)
    sparql, sparql_keys = _canonical_queries(holdout)
    identifiers = _identifiers(holdout)
    literals = set(identifiers) | {folded(f"holdout/{kg.id}") for kg in holdout.kgs}
    literals |= {ns if (ns := namespace(iri)) in namespaces else iri for iri in iris}
    anchors = _anchors(questions)
    queries = list(dict.fromkeys(folded(q.sparql) for q in holdout.questions()))
    needles = list({query_needles(q) for q in queries})
    bare = list({(prologue, bare_query_needles(q, iris)) for q in queries if (prologue := declarations(q))})
    undistinctive = [q for q in holdout.questions() if not any(i in iris for i in iris_in_query(folded(q.sparql)))]
    undistinctive_needles = list({n for n in [*needles, *(n for _, n in bare)] if n and not any(_covered(x, literals) for x in n)})
    query_literals = {min(n, key=_needle_rank) for n in undistinctive_needles}
    return HoldoutIndex(
        kgs=tuple(kg.id for kg in holdout.kgs),
        identifiers=identifiers,
        iris={k: frozenset(v) for k, v in iris.items()},
        namespaces=namespaces,
        questions=questions,
        by_key=_keys(questions),
        sparql=sparql,
        sparql_keys=sparql_keys,
        needles=needles,
        near_duplicate=config.contamination.near_duplicate,
        prefilter=_prefilter(literals | query_literals, anchors),
        literals=frozenset(literals),
        query_literals=frozenset(query_literals),
        undistinctive_needles=undistinctive_needles,
        bare=bare,
        query_keys=frozenset(
            min(n, key=lambda x: (not _covered(x, literals | query_literals), -len(x))) for n in [*needles, *(n for _, n in bare)] if n
        ),
        undistinctive_queries=[f"{q.kg}/{q.id}" for q in undistinctive],
    )


def _needle_rank(needle: str) -> tuple[bool, bool, int]:
    """Which needle of a set without a literal to look for: not a namespace (a query without a
    distinctive IRI declares only common ones, as much SPARQL in training data does), then a
    prefixed name (`hr:worksIn`, rare in prose, where a label such as "Engineering" is not),
    then the longest."""
    return "://" in needle, ":" not in needle, -len(needle)


def _kg_iris(files: tuple) -> set[str]:
    found: set[str] = set()
    for path in files:
        try:
            for triple in ox.parse(path=str(path), format=rdf_format(path)):
                for term in (triple.subject, triple.predicate, triple.object):
                    if isinstance(term, ox.NamedNode):
                        found.add(term.value)
                    elif isinstance(term, ox.Literal):
                        found.add(term.datatype.value)
        except (SyntaxError, ValueError, OSError) as exc:
            raise InputError(f"{path}: cannot read holdout KG: {exc}") from None
    return found


def _distinctive_namespaces(
    iris: dict[str, set[str]], excluded: tuple[str, ...], training_iris: set[str]
) -> dict[str, frozenset[str]]:
    by_ns: dict[str, set[str]] = defaultdict(set)
    for iri, kgs in iris.items():
        by_ns[namespace(iri)] |= kgs
    training_ns = {p for iri in training_iris for p in _prefixes(iri)}
    return {
        ns: frozenset(kgs)
        for ns, kgs in by_ns.items()
        if _has_path(ns) and ns not in training_ns and not in_namespaces(ns, excluded)
        and not any(e.startswith(ns) for e in excluded)
    }


def _has_path(ns: str) -> bool:
    """`http://host/a/` has a path below the host; `http://host/` does not."""
    rest = ns.split("://", 1)[-1]
    return "/" in rest and bool(rest.split("/", 1)[1].strip("/#"))


def _held_questions(holdout: Holdout, config: GuardsConfig) -> list[HeldQuestion]:
    held = []
    cc = config.contamination
    for q in holdout.questions():
        words = tokens(q.question)
        feats = features(words)
        threshold = cc.near_duplicate if len(feats) >= cc.min_question_words else 1.0 if len(feats) >= 2 else 2.0
        names = frozenset(feature(w.casefold()) for w in folded(q.question).split()[1:] if w[:1].isupper()) & feats
        coverage = cc.min_question_coverage if len(feats) < cc.short_question_words else 0.0
        held.append(
            HeldQuestion(
                kg=q.kg, id=q.id, normalized=" ".join(words), length=len(words), features=feats, names=names,
                threshold=threshold, words=frozenset(map(feature, words)), coverage=coverage,
                function_words=len(STOPWORDS.intersection(words)),
                order=tuple(dict.fromkeys(feature(w) for w in words if w not in STOPWORDS)),
            )
        )
    return held


def _keys(questions: list[HeldQuestion]) -> dict[str, list[int]]:
    """Candidate lookup: a question is a candidate when a text holds one of its features
    (or, for a question of function words only, its first word)."""
    by_key: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(questions):
        for key in q.features or {q.normalized.split(" ")[0]}:
            by_key[key].append(i)
    return dict(by_key)


def _anchors(questions: list[HeldQuestion], rank: Callable[[str, HeldQuestion], tuple] | None = None) -> set[str]:
    """The rarest features of each question, enough of them (module docstring).

    Rarity in training text is guessed, in this order: names (capitalized inside the
    question, or letters mixed with digits: "Novak", "NCT05937709"), then long words, then the
    rest, short numbers last; within a rank, fewer holdout questions using it, then longer.
    A `rank` measured on the data (counts in a sample) ranks first the features already
    anchors of other questions: they cost the prefilter nothing more."""
    df = Counter(f for q in questions for f in q.features)
    measured = rank is not None
    rank = rank or (lambda f, q: (_commonness(f, q.names), df[f], -len(f), f))
    anchors: set[str] = set()
    for q in sorted(questions, key=lambda q: len(q.features)):  # the fewest choices first
        if not q.features:
            anchors.add(q.normalized.split(" ")[0])
            continue
        need = len(q.features) - math.ceil(q.threshold * len(q.features)) + 1 if q.near else 1
        ranked = sorted(q.features, key=lambda f: (measured and f not in anchors, *rank(f, q)))
        anchors.update(ranked[: max(1, need)])
    return anchors


def _commonness(feat: str, names: frozenset[str]) -> int:
    if feat in names or (any(c.isdigit() for c in feat) and any(c.isalpha() for c in feat)):
        return 0
    if feat.isdigit():
        return 3 if len(feat) <= 4 else 1
    return 1 if len(feat) >= 7 else 2


def _canonical_queries(holdout: Holdout) -> tuple[dict[str, list[int]], dict[QueryKey, str]]:
    """Each reference query's canonical form (the questions holding it), and the canonical form
    of each one's `query_key` (`HoldoutIndex.sparql_keys`)."""
    sparql: dict[str, list[int]] = defaultdict(list)
    keys: dict[QueryKey, str] = {}
    for i, q in enumerate(holdout.questions()):
        text = folded(q.sparql)  # as the matcher reads a text's
        canonical = canonical_sparql(text)
        if canonical is None:
            raise InputError(f"{holdout.root}/{q.kg}: question {q.id}: reference SPARQL does not parse")
        sparql[canonical].append(i)
        if key := query_key(text):
            keys[key] = canonical
    return dict(sparql), keys


def _identifiers(holdout: Holdout) -> dict[str, str]:
    ids = {folded(kg.id): f"kg {kg.id}" for kg in holdout.kgs if _distinctive_id(kg.id)}
    ids.update({folded(f"holdout/{kg.id}"): f"kg {kg.id}" for kg in holdout.kgs})
    ids.update({folded(q.id): f"{q.kg}/{q.id}" for q in holdout.questions() if _distinctive_id(q.id)})
    return ids


def _distinctive_id(ident: str) -> bool:
    return len(ident) >= 4 and any(c.isdigit() or c in "_-" for c in ident)


def _prefilter(literals: set[str], anchors: set[str]) -> Needles:
    return Needles.of(literals, anchors, ignore_case=True)


def _query_prefilter(keys: set[str]) -> Needles:
    """One needle per reference query (case-sensitive): a text holding none holds no query."""
    return Needles.of(keys)


def _covered(key: str, literals: frozenset[str] | set[str]) -> bool:
    """Does every line holding `key` pass the prefilter? It does when a literal of the
    prefilter (matched anywhere, ignoring case) is part of `key` and `key` is one line."""
    return "\n" not in key and any(lit in key for lit in literals)

