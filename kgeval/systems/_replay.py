"""The replay system: recorded answers from a JSONL file, one object per attempt.

    {"kg": "hr", "question_id": "hr-01", "seed": 0, "sparql": "...", "answer": [...],
     "stop_reason": "stop"}

`sparql` and/or `answer`; `seed` defaults to 0. An attempt with no record is reported as a
missing answer, not scored. A record that matches no question of the holdout is an error
naming it (file:line, the kg and id it gave, the closest the holdout has), never skipped: its
question would be "missing" and the run would publish a number without it. A record naming
its KG or question in another case (`cre_Doc_Template_Mgt`, which an import stores as
`cre_doc_template_mgt`), or by the name the benchmark gave the KG, is matched, with one warning
line (`note`). Recorded model output is read as a live model's is (pipeline
parity): a `sparql` holding a ``` code block gives the query inside it, and `text` (the model's
whole response, instead of `sparql`) is read by `output_from_text`, as the prompted systems do.

The TEXT2SPARQL client's answer file (`text2sparql ask ... -o answers.json`: a JSON list of
{"dataset", "question", "query", "qname": "ck25:7-en", "uri"}) is accepted too, over a holdout
KG imported with `kgeval holdout import text2sparql`: each answer is matched to its question by
the dataset and the source id in `qname` (else `uri`, else the question text), answers in other
languages than the one imported are left aside, and every answer is seed 0 (run `--seeds 1`).

A QALD JSON file (`{"questions": [{"id", "query": {"sparql"}, "answers": [...]}]}`: a QALD
challenge submission, or `kgeval export RUN --format qald`) is accepted too, over holdout KGs
imported with `kgeval holdout import qald`: each question is matched by its source id (and by
the KG field the benchmark was imported with, when it carries one); every answer is seed 0. A
question's SPARQL is executed as any replayed query; a question without one is judged on its
`answers` (one SPARQL JSON result: a boolean, or the values of its one variable).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kgeval._files import check_input_file, parse_json, sha256_file
from kgeval.errors import InputError
from kgeval.holdout import Holdout, KnowledgeGraph, Question, did_you_mean
from kgeval.systems._model import OutputCut, StopReason, SystemOutput, head_of
from kgeval.systems._prompt import extract_sparql, output_from_text

DEFAULT_MAX_OUTPUT_BYTES = 1 << 20
"""`run.max_output_bytes`'s default."""
_SLACK = 64 * 1024
"""What a record may hold beside its output (ids, seed, stop reason) before its line is read in
pieces, its long strings cut (`_LongStrings`)."""
_PIECE = 1 << 20


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore")
    kg: str
    question_id: str
    seed: int = 0
    sparql: str | None = None
    answer: list[Any] | None = None
    text: str | None = None
    """The model's whole response, its query read out as a live prompted system reads it."""
    stop_reason: StopReason = "stop"
    cut: OutputCut | None = None
    """Set when the record's output was over `run.max_output_bytes` (read cut from the file)."""


class ReplaySystem:
    """Serves recorded attempts by (kg, question id, seed)."""

    name = "replay"
    kind = "replay"
    pipeline = None
    reasoning: dict = {}

    def __init__(self, path: Path, holdout: Holdout | None = None, max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES) -> None:
        self.path = Path(path)
        check_input_file(self.path, "replay file")
        if not self.path.is_file():
            raise InputError(f"{self.path}: replay file does not exist (--replay: a JSONL of attempts, or a TEXT2SPARQL answer list)")
        self.version = sha256_file(self.path)[:12]
        self._records: dict[tuple[str, str, int], _Record] = {}
        self.note: str | None = None
        """One warning line: the records whose KG or question id matched the holdout's only
        ignoring case or by the benchmark's name for the KG, and those for questions excluded
        on record (not asked)."""
        read = list(_reader(self.path)(self.path, holdout, max_output_bytes))
        if holdout is not None:
            read, self.note = _matched(self.path, read, holdout)
        for where, record in read:
            key = (record.kg, record.question_id, record.seed)
            if key in self._records:
                raise InputError(f"{where}: a second record for {key[0]}/{key[1]} seed {key[2]}")
            if record.sparql is None and record.answer is None and record.text is None:
                raise InputError(f"{where}: record has none of 'sparql', 'answer', 'text'")
            if record.text is not None and record.sparql is not None:
                raise InputError(f"{where}: record has both 'text' and 'sparql': give the model's response or the query read from it")
            self._records[key] = record
        if not self._records:  # every attempt would be a missing answer: a run of nothing but harness errors
            raise InputError(
                f"{self.path}: contains no replay records ({_emptiness(self.path)}): nothing to replay; "
                "an empty predictions file is usually a failed export"
            )

    def respond(self, question: Question, seed: int) -> SystemOutput:
        record = self._records.get((question.kg, question.id, seed))
        if record is None:
            return SystemOutput(stop_reason="missing", error=f"no recorded answer in {self.path.name}", error_kind="missing")
        if record.cut is not None:  # over run.max_output_bytes: judged wrong as it stands, never read further
            return SystemOutput(sparql=record.sparql, raw_text=record.text, answer=record.answer, stop_reason=record.stop_reason, cut=record.cut)
        if record.text is not None:
            return output_from_text(record.text, record.stop_reason).model_copy(update={"answer": record.answer})
        sparql = record.sparql
        if sparql is not None and "```" in sparql:  # a model's code block, as a live system would read it
            sparql = extract_sparql(sparql) or sparql
        return SystemOutput(sparql=sparql, answer=record.answer, stop_reason=record.stop_reason)


_SHOWN = 10
"""Most unmatched records an error lists."""


def _matched(path: Path, read: list[tuple[str, _Record]], holdout: Holdout) -> tuple[list[tuple[str, _Record]], str | None]:
    """`read` with each record's kg and question id as the holdout writes them, and the warning
    line for those matched ignoring case (or by the benchmark's KG name); InputError naming the
    records that match no question of the holdout."""
    questions = {(q.kg, q.id) for q in holdout.questions()}
    folded: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for kg, qid in questions:
        folded.setdefault((kg.casefold(), qid.casefold()), []).append((kg, qid))
    aliases = {str(kg.source["kg_value"]).casefold(): kg.id for kg in holdout.kgs if kg.source.get("kg_value")}
    kept, renamed, unmatched = [], {}, []
    for where, record in read:
        key = (record.kg, record.question_id)
        if key not in questions:
            kg = aliases.get(record.kg.casefold(), record.kg)
            found = folded.get((kg.casefold(), record.question_id.casefold()), [])
            if len(found) != 1:
                unmatched.append((where, record))
                continue
            renamed[key] = found[0]
            record = record.model_copy(update={"kg": found[0][0], "question_id": found[0][1]})
        kept.append((where, record))
    if unmatched:
        raise InputError(_unmatched_message(path, unmatched, sorted(questions), len(read)))
    excluded = sorted({r.question_id for _, r in kept if r.question_id in holdout.exclusions})
    notes = [_renamed_note(renamed), _excluded_note(excluded)]
    return kept, "; ".join(n for n in notes if n) or None


def _excluded_note(excluded: list[str]) -> str | None:
    """One line for the records whose question is excluded on record: not asked, and counted
    with the run's exclusions (never refused: the benchmark's answers cover every question)."""
    if not excluded:
        return None
    shown = ", ".join(excluded[:5]) + (" ..." if len(excluded) > 5 else "")
    return f"replay records for {len(excluded)} question(s) excluded on record are not asked (counted as excluded: {shown})"


def _unmatched_message(path: Path, unmatched: list[tuple[str, _Record]], questions: list[tuple[str, str]], total: int) -> str:
    """The error for records matching no question: each (up to `_SHOWN`) with the closest."""
    names = [f"{kg}/{qid}" for kg, qid in questions]
    lines = []
    for where, record in unmatched[:_SHOWN]:
        meant = did_you_mean(f"{record.kg}/{record.question_id}", names)
        lines.append(f"  {where}: kg {record.kg!r}, question_id {record.question_id!r}: no such question{meant}")
    more = f"\n  ... and {len(unmatched) - _SHOWN} more" if len(unmatched) > _SHOWN else ""
    return (
        f"{path}: {len(unmatched)} of {total} replay records match no question of the holdout (their answers would be "
        "left out as missing and the run would publish a number without them):\n" + "\n".join(lines) + more
        + "\nFix their kg / question_id to the holdout's (`kgeval holdout verify` lists its KGs), or replay them against the holdout they answer"
    )


def _renamed_note(renamed: dict[tuple[str, str], tuple[str, str]]) -> str | None:
    """One line for the records matched ignoring case or by the benchmark's KG name."""
    if not renamed:
        return None
    kgs = sorted({(given[0], ours[0]) for given, ours in renamed.items() if given[0] != ours[0]})
    shown = ", ".join(f"{given} as {ours}" for given, ours in kgs[:5]) + (" ..." if len(kgs) > 5 else "")
    ids = sum(1 for given, ours in renamed.items() if given[1] != ours[1])
    return (
        f"{len(renamed)} replay records name their KG or question otherwise than the holdout does and were matched ignoring case "
        "or by the benchmark's name for the KG"
        + (f" (KGs {shown})" if kgs else "") + (f"; {ids} question ids in another case" if ids else "")
    )


def _emptiness(path: Path) -> str:
    """What an empty replay file holds, in words."""
    size = path.stat().st_size
    if size == 0:
        return "0 bytes"
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    return "blank lines only" if not text else f"{size} bytes, no answer for a question of the holdout"


class _LongStrings:
    """One JSON text read in pieces, with every string longer than `max_bytes` (as the file holds
    it) replaced by a marker and kept apart as its head, size and sha256, so that neither a line
    of a replay file nor a whole QALD file is ever held whole (a 200 MB line peaked a run at 2 GB).
    A string cannot hold a line break, so line numbers stay those of the file."""

    _BODY = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
    MARK = "\x00kgeval-cut-"

    def __init__(self, max_bytes: int) -> None:
        self.limit = max_bytes
        """`run.max_output_bytes`: a cut string's head is kept to this."""
        self.kept, self.cuts, self._max = bytearray(), [], max(max_bytes, _SLACK)  # names and ids are never cut
        self._open, self._pending = False, b""
        self._head, self._size, self._sha = bytearray(), 0, hashlib.sha256()

    def feed(self, data: bytes) -> None:
        data, self._pending, i = self._pending + data, b"", 0
        while i < len(data):
            if not self._open:
                j = data.find(b'"', i)
                self.kept += data[i:] if j < 0 else data[i:j]
                if j < 0:
                    return
                self._open, self._head, self._size, self._sha, i = True, bytearray(), 0, hashlib.sha256(), j + 1
                continue
            j = self._BODY.match(data, i).end()  # type: ignore[union-attr]
            self._add(data[i:j])
            if j < len(data) and data[j] == 0x22:  # the closing quote
                self._close()
                j += 1
            elif j < len(data):  # a backslash last: its escape goes on in the next piece
                self._pending = data[j:]
                return
            i = j

    def _add(self, piece: bytes) -> None:
        self._size += len(piece)
        self._sha.update(piece)
        if len(self._head) <= self._max:
            self._head += piece[: self._max + 1 - len(self._head)]

    def _close(self) -> None:
        self._open = False
        if self._size <= self._max:
            self.kept += b'"' + self._head + b'"'
            return
        self.kept += b'"' + json.dumps(f"{self.MARK}{len(self.cuts)}").encode()[1:-1] + b'"'
        self.cuts.append((head_of(_json_string_head(bytes(self._head[: self._max])), self.limit), self._size, self._sha.hexdigest()))


def _json_string_head(raw: bytes) -> str:
    """The text of a JSON string's first bytes (an escape or a character cut in two left out)."""
    for end in range(len(raw), max(len(raw) - 12, 0) - 1, -1):
        try:
            return json.loads(b'"' + raw[:end] + b'"')
        except ValueError:
            continue
    return ""


def _cut_of(value: Any, strings: _LongStrings, part: str) -> tuple[Any, OutputCut | None]:
    """`value` (a string that may be a marker) as its head, and its cut when it was cut."""
    if not (isinstance(value, str) and value.startswith(_LongStrings.MARK)):
        return value, None
    head, size, sha = strings.cuts[int(value[len(_LongStrings.MARK):])]
    return head, OutputCut(part=part, bytes=size, sha256=sha, limit=strings.limit)  # type: ignore[arg-type]


def _answer_cut(answer: Any, strings: _LongStrings) -> OutputCut | None:
    """The largest cut string inside an answer list, as the answer's cut (a loop, not recursion:
    an answer may nest deep)."""
    found, pending = [], [answer] if strings.cuts else []
    while pending:
        item = pending.pop()
        if isinstance(item, str) and item.startswith(_LongStrings.MARK):
            found.append(strings.cuts[int(item[len(_LongStrings.MARK):])])
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, dict):
            pending.extend(item.values())
    if not found:
        return None
    _, size, sha = max(found, key=lambda cut: cut[1])
    return OutputCut(part="answer", bytes=size, sha256=sha, limit=strings.limit)


def _lines(path: Path, max_bytes: int):  # noqa: ANN202 - generator of (line number, bytes kept, its long strings)
    """The lines of a replay file, each read whole when it is short, else in pieces through
    `_LongStrings`: memory follows `max_bytes`, not the longest line."""
    with open(path, "rb") as fh:
        lineno = 0
        while line := fh.readline(max_bytes + _SLACK):
            lineno += 1
            if line.endswith(b"\n") or len(line) < max_bytes + _SLACK:
                yield lineno, line, None
                continue
            strings = _LongStrings(max_bytes)
            strings.feed(line)
            while piece := fh.readline(_PIECE):
                strings.feed(piece)
                if piece.endswith(b"\n"):
                    break
            yield lineno, bytes(strings.kept), strings


def _read_records(path: Path, max_bytes: int):  # noqa: ANN202 - generator of ("file:line", record)
    try:
        for lineno, line, strings in _lines(path, max_bytes):
            if not line.strip():
                continue
            yield f"{path}:{lineno}", _record(f"{path}:{lineno}", line, strings)
    except OSError as exc:
        raise InputError(f"{path}: cannot read replay file: {exc}") from None


def _record(where: str, line: bytes, strings: _LongStrings | None) -> _Record:
    """One JSONL record; a field cut by `strings` becomes its head, the record's cut says so."""
    try:
        record = _Record.model_validate(parse_json(line, where))
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(f"{where}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    if strings is None or not strings.cuts:
        return record
    for name in ("kg", "question_id"):
        if _cut_of(getattr(record, name), strings, "text")[1] is not None:
            raise InputError(f"{where}: {name} is longer than {_SLACK:,} bytes")
    sparql, sparql_cut = _cut_of(record.sparql, strings, "sparql")
    text, text_cut = _cut_of(record.text, strings, "text")
    answer_cut = _answer_cut(record.answer, strings)
    cut = sparql_cut or text_cut or answer_cut
    return record.model_copy(update={"sparql": sparql, "text": text, "answer": None if answer_cut else record.answer, "cut": cut})


def _parsed_whole(path: Path, max_bytes: int, what: str) -> tuple[Any, _LongStrings]:
    """A whole-file JSON document (QALD, TEXT2SPARQL) read in pieces, its long strings cut."""
    strings = _LongStrings(max_bytes)
    try:
        with open(path, "rb") as fh:
            while piece := fh.read(_PIECE):
                strings.feed(piece)
    except OSError as exc:
        raise InputError(f"{path}: not {what}: {exc}") from None
    return parse_json(_utf8(path, bytes(strings.kept)), str(path), what), strings


def _utf8(path: Path, data: bytes, first_line: int = 1) -> str:
    """`data` (lines of `path` from `first_line` on, long strings cut: line breaks kept) as text;
    an InputError naming the line that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data.count(b"\n", 0, exc.start)
        raise InputError(f"{path}: line {line}: not UTF-8 text ({exc.reason}: byte 0x{data[exc.start]:02x}); save the file as UTF-8") from None


_QALD_START = re.compile(rb'\s*\{\s*"questions"\s*:')


def _reader(path: Path):  # noqa: ANN202 - one of the readers below
    """A TEXT2SPARQL answer file is one JSON list, a QALD file one JSON object with a
    "questions" list (often over many lines); a replay file is JSON lines of objects. Only the
    head of the first line is read to tell them apart."""
    try:
        with open(path, "rb") as fh:
            first, lineno = b"", 0
            while not first.strip() and (line := fh.readline(_SLACK)):
                first, lineno = line, lineno + 1
    except OSError as exc:
        raise InputError(f"{path}: cannot read replay file: {exc}") from None
    whole = first.endswith(b"\n") or len(first) < _SLACK
    first_text = _utf8(path, first, lineno).strip() if whole else ""
    if first.lstrip().startswith(b"["):
        return _read_text2sparql
    if not whole:  # a first line too long to try as one JSON object: its start tells
        return _read_qald if _QALD_START.match(first) else _read_jsonl
    try:
        record = json.loads(first_text)
    except (RecursionError, ValueError) as exc:
        if not isinstance(exc, json.JSONDecodeError):  # a line too deep, a number too long: the JSONL reader names it
            return _read_jsonl
        # an object that goes on past its first line is a whole-file JSON document (QALD); a line
        # that closes its object is a broken JSONL record, which the JSONL reader names by line
        continued = first_text.startswith("{") and not first_text.endswith("}")
        return _read_qald if _QALD_START.match(first) or continued else _read_jsonl
    return _read_qald if isinstance(record, dict) and "questions" in record else _read_jsonl


def _read_jsonl(path: Path, _holdout: Holdout | None, max_bytes: int = DEFAULT_MAX_OUTPUT_BYTES):  # noqa: ANN202 - generator of ("file:line", record)
    """Replay records from a JSONL replay file (the holdout is not needed to match them)."""
    return _read_records(path, max_bytes)


def _read_text2sparql(path: Path, holdout: Holdout | None, max_bytes: int = DEFAULT_MAX_OUTPUT_BYTES):  # noqa: ANN202 - generator of ("file: answer N", record)
    """Replay records from a TEXT2SPARQL client answer file, matched to the holdout's imported KGs."""
    if holdout is None:
        raise InputError(f"{path}: a TEXT2SPARQL answer file needs the holdout it answers (its questions' source ids)")
    answers, strings = _parsed_whole(path, max_bytes, "a TEXT2SPARQL answer file (a JSON list)")
    by_dataset: dict[object, list[KnowledgeGraph]] = {}  # a dataset imported once per language is several KGs
    for kg in holdout.kgs:
        if kg.source.get("format") == "text2sparql":
            by_dataset.setdefault(kg.source.get("dataset"), []).append(kg)
    for n, answer in enumerate(answers, 1):
        if not isinstance(answer, dict):
            raise InputError(f"{path}: answer {n}: expected an object with 'dataset' and 'query'")
        kgs = by_dataset.get(answer.get("dataset"))
        if not kgs:
            known = ", ".join(sorted(str(d) for d in by_dataset if d)) or "none (import one with `kgeval holdout import text2sparql`)"
            raise InputError(f"{path}: answer {n}: dataset {answer.get('dataset')!r} is not a KG of the holdout; imported datasets: {known}")
        found = _kg_question_of(path, n, answer, kgs)
        if found is not None:
            kg, question_id = found
            query = answer["query"] if "query" in answer else answer.get("sparql")  # "" is an empty answer, judged so
            query, cut = _cut_of(query, strings, "sparql")
            yield f"{path}: answer {n}", _Record(kg=kg.id, question_id=question_id, seed=0, sparql=query, cut=cut)


def _kg_question_of(path: Path, n: int, answer: dict, kgs: list[KnowledgeGraph]) -> tuple[KnowledgeGraph, str] | None:
    """The KG (of those imported from the answer's dataset, one per language) and our question
    id an answer is for; None for an answer in a language none of them was imported in."""
    problem = None
    for kg in kgs:
        try:
            question_id = _question_of(path, n, answer, kg)
        except InputError as exc:  # not this KG's: perhaps another language's
            problem = problem or exc
            continue
        if question_id is not None:
            return kg, question_id
    if problem is not None:
        raise problem
    return None


def _question_of(path: Path, n: int, answer: dict, kg: KnowledgeGraph) -> str | None:
    """Our question id for a TEXT2SPARQL answer; None for an answer in another language."""
    ours = {str(source): qid for qid, source in kg.source.get("ids", {}).items()}
    name = str(answer.get("qname") or "").rpartition(":")[2] or str(answer.get("uri") or "").removeprefix(str(answer.get("dataset")))
    source_id, _, lang = name.rpartition("-")
    if source_id:
        if lang != kg.source.get("lang", lang):
            return None
        if source_id not in ours:
            raise InputError(f"{path}: answer {n}: question {source_id!r} of {kg.source.get('dataset')} is not in holdout KG {kg.id}")
        return ours[source_id]
    text = " ".join(str(answer.get("question", "")).split())
    found = [q.id for q in kg.questions if " ".join(q.question.split()) == text]
    if not found:
        raise InputError(f"{path}: answer {n}: no 'qname' or 'uri', and its question {text[:80]!r} is not in holdout KG {kg.id}")
    return found[0]


def _read_qald(path: Path, holdout: Holdout | None, max_bytes: int = DEFAULT_MAX_OUTPUT_BYTES):  # noqa: ANN202 - generator of ("file: question ID", record)
    """Replay records from a QALD JSON file, matched to the holdout's KGs imported from QALD."""
    if holdout is None:
        raise InputError(f"{path}: a QALD file needs the holdout it answers (its questions' source ids)")
    doc, strings = _parsed_whole(path, max_bytes, "a QALD JSON file")
    if not isinstance(doc, dict) or not isinstance(doc.get("questions"), list):
        raise InputError(f"{path}: expected a QALD object with a 'questions' list")
    kgs = [kg for kg in holdout.kgs if kg.source.get("format") == "qald"]
    if not kgs:
        raise InputError(f"{path}: the holdout has no KG imported from QALD (`kgeval holdout import qald`) to match its questions to")
    imported: dict[str, list[tuple[KnowledgeGraph, str]]] = {}  # source id -> (KG, our id)
    for kg in kgs:
        for ours, theirs in kg.source.get("ids", {}).items():
            imported.setdefault(str(theirs), []).append((kg, ours))
    for n, raw in enumerate(doc["questions"], 1):
        where = f"{path}: question {raw.get('id', f'#{n}') if isinstance(raw, dict) else f'#{n}'}"
        if not isinstance(raw, dict) or "id" not in raw:
            raise InputError(f"{where}: expected an object with an 'id'")
        kg, question_id = _qald_question_of(where, raw, imported, kgs)
        query = raw.get("query")
        sparql = query.get("sparql") if isinstance(query, dict) else None
        if isinstance(sparql, str) and sparql.strip():
            sparql, cut = _cut_of(sparql, strings, "sparql")
            yield where, _Record(kg=kg.id, question_id=question_id, sparql=sparql, cut=cut)
        else:
            cut = _answer_cut(raw.get("answers"), strings)
            answer = None if cut else _qald_answer(where, raw.get("answers"))
            yield where, _Record(kg=kg.id, question_id=question_id, answer=answer, sparql=None if answer is not None else "", cut=cut)


def _qald_question_of(
    where: str, raw: dict, imported: dict[str, list[tuple[KnowledgeGraph, str]]], kgs: list[KnowledgeGraph]
) -> tuple[KnowledgeGraph, str]:
    """The holdout KG and our question id of one QALD question, by its source id (and KG field)."""
    source_id = str(raw["id"])
    found = [(kg, ours) for kg, ours in imported.get(source_id, []) if _names_kg(raw, kg)]
    if not found:
        raise InputError(f"{where}: no question of the holdout was imported from source id {source_id!r} (KGs: {', '.join(kg.id for kg in kgs)})")
    if len(found) > 1:
        field = next((kg.source.get("kg_field") for kg, _ in found if kg.source.get("kg_field")), "kg")
        values = " or ".join(str(kg.source.get("kg_value") or kg.id) if field == kg.source.get("kg_field") else kg.id for kg, _ in found)
        raise InputError(f"{where}: source id {source_id!r} is a question of KGs {', '.join(kg.id for kg, _ in found)}: give its {field!r} field ({values})")
    return found[0]


def _names_kg(raw: dict, kg: KnowledgeGraph) -> bool:
    """Whether a QALD record may be a question of `kg`: the benchmark's own KG field (the one
    `--kg-field` named at import) holds its value (or our KG's id), or else a `kg` field holds
    our KG's id (KGs imported one at a time have no field of their own); a record without
    either may be. Case is ignored: an import writes `cre_Doc_Template_Mgt` as
    `cre_doc_template_mgt`."""
    field = kg.source.get("kg_field")
    if field and field in raw:
        return str(raw[field]).strip().casefold() in (str(kg.source.get("kg_value")).casefold(), kg.id.casefold())
    if "kg" in raw:
        return str(raw["kg"]).strip().casefold() == kg.id.casefold()
    return True


def _qald_answer(where: str, answers: object) -> list[Any]:
    """A QALD `answers` list (one SPARQL JSON result) as an answer list."""
    if not answers:
        return []
    result = answers[0] if isinstance(answers, list) and len(answers) == 1 else None
    if not isinstance(result, dict):
        raise InputError(f"{where}: answers: expected a list holding one SPARQL JSON result, and no query.sparql was given")
    if isinstance(result.get("boolean"), bool):
        return [result["boolean"]]
    bindings = (result.get("results") or {}).get("bindings")
    variables = (result.get("head") or {}).get("vars") or (
        sorted({v for b in bindings if isinstance(b, dict) for v in b}) if isinstance(bindings, list) else []
    )  # some submissions leave out the head: the variables the bindings use
    if not isinstance(bindings, list) or len(variables) != 1:
        raise InputError(f"{where}: answers: a result of {len(variables)} variables cannot be judged as an answer list: give the query (query.sparql)")
    return [b[variables[0]]["value"] for b in bindings if isinstance(b, dict) and isinstance(b.get(variables[0]), dict)]
