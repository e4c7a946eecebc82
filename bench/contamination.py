"""Contamination check throughput and recall on a generated training file with planted leaks.

Generates, in a temporary directory deleted afterwards, a JSONL file of text-to-SPARQL
training records (half in prompt/completion form, half as chat messages) with leaks of every
kind planted at random records: a holdout question with case, spacing and punctuation
changed; a light paraphrase; a reference query with variables and prefixes renamed and its
layout changed, or every other one without its declarations; a distinctive holdout IRI; a
holdout question id; the questions and queries in turn as written, in full-width forms, with
Cyrillic/Greek look-alike letters and with zero-width spaces; half of the leaks written with
`/` as `\\/` and vowels and quotes (keys too) as `\\u` escapes, so their raw bytes hold no needle.

`--corpus unique` (default): no record and no line repeats (random prose over a 30,000-word
vocabulary with CK25 and holdout words mixed in, CK25 questions with varied names, queries
with varied entity IRIs, passages in six other languages, code, `\\u` and `\\/` escapes: see
`UniqueRecords`), so no cache helps. `--corpus repeating`: a pool of 20,000 records
drawn again and again (system prompts repeat in real data; the line cache then helps).

First, short paraphrases (`bench/paraphrases.py`): every question of the holdout and of CK25
with function words swapped, dropped or added, auxiliaries in the past tense, and polite
lead-ins, each its own record, must all be found (recall 100%); several hundred unrelated
questions of the same domains (other people's telephones, CK25's people's other attributes,
other departments and products, other KGs' questions, the other holdout's paraphrases) must
all pass (0 false positives). `--paraphrases-only` stops there (about a minute).

Then it prints the check's MB/s per core, records/s, peak memory (RSS of the whole process tree) and
planted-leak recall (must be 100%), and, measured in the same run on the same file, single-
core baselines that read and search without matching: `rg -F -i` over the prefilter's
literals (when ripgrep is installed), DuckDB `read_json` + `regexp_matches` with the
prefilter, pyarrow alone (`read_json` + RE2 prefilter) and pyarrow's `read_json` by itself (the
floor: every record is parsed): ratios, not absolute speeds, are
what carry over from this noisy machine. `--engine spark` also runs the check on Spark
(`--spark-master`, default local[2]) and prints its MB/s, per core, its ratio to the local
check and what a 10 TB corpus would cost in executor-core-hours at that rate.

    python bench/contamination.py [--paraphrases-only] [--gb 0.2] [--corpus unique|repeating] [--workers 1 2]
                                  [--engine local|spark] [--spark-master local[2]] [--repeat 3]

`--repeat N` runs the check and the baselines N times, alternated (each round meets the same
load), and prints the medians and kgeval's ratio to each: on a shared machine one round moves
by +-30%. The first round is a process's first check (what the CLI pays: compiling the
sample-anchored prefilter); later rounds reuse this thread's compiled databases.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kgeval.config import ContaminationConfig, GuardsConfig  # noqa: E402
from kgeval.guards import build_index, check_contamination, load_fingerprints  # noqa: E402
from bench._proc import cpu_ticks as _cpu_ticks  # noqa: E402
from bench._proc import process_tree as _tree  # noqa: E402
from bench.paraphrases import measure, paraphrases, unrelated_questions  # noqa: E402
from kgeval.guards._text import STOPWORDS  # noqa: E402
from kgeval.holdout import load_holdout  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CK25 = Path(os.environ.get("KGEVAL_CK25", REPO.parent / "shared" / "datasets" / "ck25"))

PARAPHRASES = {
    "hr-01": "In which department does Karen Novak work?",
    "hr-03": "Tell me how many employees are located at the Toronto office.",
    "hr-04": "Is Karen Duarte working remotely?",
    "catalogue-01": "How much does the Falkwerk Dumbbell Set Z476 cost, i.e. its price?",
    "catalogue-05": "How many discontinued products are there?",
    "trials-01": "Who is the sponsor of trial NCT05937709?",
    "trials-03": "Give me all the trials studying type 2 diabetes",
    "complaints-04": "Number of complaints received in 2023?",
}
NAMES = ["Anna Weber", "Liam Ortiz", "Mei Tanaka", "Jonas Berg", "Sofia Rossi", "Omar Haddad", "Ines Costa", "Piotr Nowak"]


def clean_pool(size: int, rng: random.Random) -> list[str]:
    """Pre-rendered clean JSONL lines: CK25 questions/queries with entities varied."""
    doc = yaml.safe_load((CK25 / "questions.yml").read_text(encoding="utf-8"))
    pairs = [(q["question"]["en"], q["query"]["sparql"]) for q in doc["questions"]]
    context = (
        "You translate questions into SPARQL over the corporate KG. Classes: pv:Employee, pv:Manager, "
        "pv:Department, pv:Product, pv:Supplier, pv:Hardware, pv:Service. Properties: pv:memberOf, "
        "pv:hasManager, pv:phone, pv:email, pv:name, pv:price, pv:hasSupplier, pv:country.\n"
    ) * 2
    lines = []
    for i in range(size):
        question, sparql = rng.choice(pairs)
        question = question.replace("Ms. Brant", rng.choice(NAMES)) + f" (variant {i})"
        if i % 2:
            record = {"prompt": context + "\n\nQuestion: " + question, "completion": sparql, "meta": {"source": "ck25", "n": i}}
        else:
            record = {"messages": [{"role": "system", "content": context}, {"role": "user", "content": question},
                                   {"role": "assistant", "content": sparql}]}
        lines.append(json.dumps(record))
    return lines


SYLLABLES = "ka lo mi ne ra su ti vo be da fe gu hi jo ku la me ni or pa qu re si to un ve wa xe yo ze an el in on ar er ir st tr pl gr ch sh th".split()


FOREIGN = {
    "de": "der die das und nicht mit für über Straße Größe Mitarbeiter Abteilung Gehalt Büro Kunde Lieferung "
          "Bestellung bezahlt geöffnet Übersicht Änderung schön heißt würde können müssen",
    "fr": "le la les des une être avoir très déjà où été élève français employé société prix "
          "commande reçu fenêtre garçon naïve cœur Noël année première dernière",
    "es": "el los las del una está año niño señor compañía empleado precio pedido información "
          "también después según acción canción corazón",
    "ru": "и в не на что это как сотрудник отдел зарплата компания цена заказ клиент "
          "поставщик дата город страна работа",
    "zh": "的 是 在 有 我们 公司 员工 部门 工资 价格 订单 客户 供应商 城市 国家 工作 数据 查询",
    "ja": "の は を に が 会社 社員 部署 給料 価格 注文 顧客 データ 検索 です ます",
}
CODE = [
    "def {f}(rows):\n    \"\"\"Sum the {w} column.\"\"\"\n    total = 0\n    for r in rows:\n        total += r['{w}']  # {w2}\n    return total\n",
    "SELECT {w}, COUNT(*) AS n FROM {t} WHERE {w2} LIKE '%{w3}%' GROUP BY {w} ORDER BY n DESC;",
    "const {f} = async (id) => {{\n  const res = await fetch(`/api/{w}/${{id}}?q={w2}`);\n  return res.json();\n}};",
    "for f in data/{w}/*.csv; do\n  grep -c \"{w2}\" \"$f\" >> /tmp/{w3}.txt\ndone",
    "{{\"{w}\": {{\"{w2}\": [1, 2, 3], \"path\": \"C:\\\\Users\\\\{w3}\"}}}}",
]


class UniqueRecords:
    """Records in which no line repeats: prose drawn word by word from a vocabulary of
    30,000 made-up words plus the CK25 and holdout questions' words and function words; one
    record in eight with a passage in another language (German, French, Spanish, Russian,
    Chinese, Japanese), one in eight with code (Python, SQL, JavaScript, shell, JSON with
    backslashes); a quarter of the records written as UTF-8, the rest with `\\u` escapes
    (json.dumps' default), and one in ten with every `/` escaped as `\\/` (PHP's default)."""

    def __init__(self, holdout, rng: random.Random) -> None:  # noqa: ANN001
        doc = yaml.safe_load((CK25 / "questions.yml").read_text(encoding="utf-8"))
        self.pairs = [(q["question"]["en"], q["query"]["sparql"]) for q in doc["questions"]]
        made_up: set[str] = set()
        while len(made_up) < 30_000:
            made_up.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randrange(2, 5))))
        real = {w for q, _ in self.pairs for w in re.findall(r"[A-Za-z]+", q)}
        real |= {w for q in holdout.questions() for w in re.findall(r"[A-Za-z]+", q.question)}
        self.vocab = np.array(sorted(made_up) + sorted(real) * 2 + sorted(STOPWORDS) * 20)
        self.np = np.random.default_rng(rng.randrange(2**32))
        self.rng = rng

    def prose(self, words: int) -> str:
        return " ".join(self.vocab[self.np.integers(0, len(self.vocab), words)].tolist())

    def record(self, i: int) -> str:
        question, sparql = self.rng.choice(self.pairs)
        question = question.replace("Ms. Brant", f"{self.prose(1).title()} {self.prose(1).title()}") + f" ({self.prose(3)})"
        sparql = re.sub(r"empl-[\w.%]+", f"empl-{self.prose(1)}.{i}", sparql).replace("?result", f"?r{i % 997}")
        context = f"{self.prose(60)}.\n{self.prose(40)}.\n"
        if i % 8 == 3:
            context += self.foreign(30) + "\n"
        elif i % 8 == 5:
            context += self.code() + "\n"
        if i % 2:
            record = {"prompt": context + "\nQuestion: " + question, "completion": sparql, "meta": {"source": "gen", "n": i}}
        else:
            record = {"messages": [{"role": "system", "content": context}, {"role": "user", "content": question},
                                   {"role": "assistant", "content": sparql}]}
        return encoded(record, i)

    def foreign(self, words: int) -> str:
        vocab = FOREIGN[self.rng.choice(sorted(FOREIGN))].split()
        sep = "" if vocab[0] in ("的", "の") else " "
        return sep.join(self.rng.choice(vocab) for _ in range(words)) + f" ({self.prose(2)})"

    def code(self) -> str:
        w = self.prose(4).split()
        return self.rng.choice(CODE).format(f=f"get_{w[0]}", w=w[1], w2=w[2], w3=w[3], t=f"t_{w[0]}")


def encoded(record: dict, i: int) -> str:
    """One JSONL line: UTF-8 for a quarter of the records, `\\u` escapes for the rest; every
    tenth with `/` written `\\/`."""
    line = json.dumps(record, ensure_ascii=i % 4 != 0)
    return line.replace("/", "\\/") if i % 10 == 7 else line


def rename_query(sparql: str, rng: random.Random) -> str:
    """Variables and prefixes renamed, keywords lower-cased, whitespace folded."""
    out = sparql
    for var in sorted(set(re.findall(r"\?(\w+)", sparql)), key=len, reverse=True):
        out = re.sub(rf"\?{var}\b", f"?x{rng.randrange(10**6)}", out)
    for prefix in set(re.findall(r"PREFIX\s+(\w*):", sparql)):
        new = f"p{rng.randrange(10**6)}"
        out = re.sub(rf"(?<![\w:#]){prefix}:", f"{new}:", out)
    out = re.sub(r"\b(PREFIX|SELECT|WHERE|DISTINCT|ORDER BY|LIMIT|FILTER|ASK)\b", lambda m: m.group(1).lower(), out)
    return " ".join(out.split())


LOOKALIKE = {"a": "\u0430", "c": "\u0441", "e": "\u0435", "o": "\u043e", "p": "\u0440", "x": "\u0445", "y": "\u0443",
             "A": "\u0410", "B": "\u0412", "C": "\u0421", "E": "\u0415", "H": "\u041d", "K": "\u039a", "M": "\u041c",
             "O": "\u039f", "P": "\u0420", "T": "\u0422", "X": "\u03a7"}
"""Latin letters -> Cyrillic or Greek letters drawn alike (a homoglyph swap)."""

DISGUISES = (
    lambda s: s,
    lambda s: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" if c == " " else c for c in s),  # full-width
    lambda s: "".join(LOOKALIKE.get(c, c) for c in s),
    lambda s: re.sub(r"(?<=\w)(?=\w)", "\u200b", s),  # zero-width spaces inside words
)
"""As written, full-width forms, look-alike letters, zero-width spaces: each leak kind that is
text (questions, queries) is planted in turn in each."""


def bare_query(sparql: str, rng: random.Random) -> str:
    """A query without its PREFIX / BASE declarations (so with the holdout's own prefixes),
    variables renamed, keywords lower-cased, whitespace folded (comments dropped first)."""
    out = re.sub(r"(?i)\b(?:PREFIX\s+[^\s:]*:\s*<[^>]*>|BASE\s*<[^>]*>)", " ", re.sub(r"(?m)(^|\s)#[^\n]*$", r"\1", sparql))
    for var in sorted(set(re.findall(r"\?(\w+)", out)), key=len, reverse=True):
        out = re.sub(rf"\?{var}\b", f"?x{rng.randrange(10**6)}", out)
    out = re.sub(r"\b(SELECT|WHERE|DISTINCT|ORDER BY|LIMIT|FILTER|ASK)\b", lambda m: m.group(1).lower(), out)
    return " ".join(out.split())


def planted_leaks(index, holdout, rng: random.Random, per_kind: int) -> list[tuple[str, str, dict]]:
    """(kind, holdout item, record) for every planted leak; questions and queries in turn as
    written and in each of `DISGUISES`, every other query also without its declarations."""
    questions = holdout.questions()
    iris = sorted(index.iris)
    leaks = []
    for n in range(per_kind):
        disguise = DISGUISES[n % len(DISGUISES)]
        q = rng.choice(questions)
        mangled = "  ".join(w.upper() if rng.random() < 0.5 else w.lower() for w in re.findall(r"\w+", q.question)) + " ?!"
        leaks.append(("question-exact", f"{q.kg}/{q.id}", {"prompt": "Question: " + disguise(mangled), "completion": "SELECT * WHERE { ?s ?p ?o }"}))
        qid, text = rng.choice(sorted(PARAPHRASES.items()))
        kg = qid.rsplit("-", 1)[0]
        leaks.append(("question-near", f"{kg}/{qid}", {"messages": [{"role": "user", "content": text}]}))
        q = rng.choice(questions)
        query = bare_query(q.sparql, rng) if n % 2 else rename_query(q.sparql, rng)
        leaks.append(("sparql", f"{q.kg}/{q.id}", {"prompt": "Translate.", "completion": disguise(query)}))
        iri = rng.choice(iris)
        leaks.append(("iri", "kg " + ", ".join(sorted(index.iris[iri])), {"prompt": f"What do you know about <{iri}>?", "completion": "n/a"}))
        q = rng.choice(questions)
        leaks.append(("kg-identifier", f"{q.kg}/{q.id}", {"prompt": f"see {q.id} for details", "completion": "ok"}))
    return leaks


def escaped_leak(record: dict) -> str:
    """A leak whose raw JSON holds no needle: `/` as `\\/`, vowels and quotes as `\\u` escapes
    (valid JSON that some writers produce; the check reads parsed text)."""
    line = json.dumps(record).replace("/", "\\/")
    return re.sub(r'\\u[0-9a-fA-F]{4}|\\(.)|([aeiouAEIOU])', _escape_more, line)


def _escape_more(m: re.Match) -> str:
    """A vowel or an escaped quote as a `\\u` escape; other escapes as they were."""
    if m.group(2):
        return f"\\u{ord(m.group(2)):04x}"
    return "\\u0022" if m.group(1) == '"' else m.group(0)


def write_file(path: Path, target_bytes: int, make, leaks, rng: random.Random) -> dict[int, tuple[str, str]]:  # noqa: ANN001
    """Write clean records (`make(i)` -> JSON line) up to `target_bytes` with the leaks at
    random records; return them by record."""
    avg = sum(len(make(i)) for i in range(1000)) / 1000 + 1
    n_records = int(target_bytes / avg) + 1
    positions = sorted(rng.sample(range(n_records), len(leaks)))
    planted = {pos: (kind, item) for pos, (kind, item, _) in zip(positions, leaks)}
    at = dict(zip(positions, (escaped_leak(rec) if n % 2 else json.dumps(rec) for n, (_, _, rec) in enumerate(leaks))))
    with open(path, "w", encoding="utf-8") as fh:
        block: list[str] = []
        for i in range(n_records):
            block.append(at.get(i) or make(i))
            if len(block) == 20_000:
                fh.write("\n".join(block) + "\n")
                block = []
        if block:
            fh.write("\n".join(block) + "\n")
    return planted


class PeakRss:
    """Samples the summed RSS of this process and all its descendants, and their CPU time
    (so a per-core rate can be given on a machine other jobs share)."""

    def __init__(self) -> None:
        self.peak = 0
        self._ticks: dict[int, int] = {}
        self._start = {pid: _cpu_ticks(pid) for pid in _tree(os.getpid())}
        self._stop = threading.Event()
        self._own = 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            tree = _tree(os.getpid())
            self.peak = max(self.peak, sum(_rss(p) for p in tree))
            for pid in tree:
                self._ticks[pid] = max(self._ticks.get(pid, 0), _cpu_ticks(pid))
        tree = _tree(os.getpid())  # the last ticks of processes still running
        for pid in tree:
            self._ticks[pid] = max(self._ticks.get(pid, 0), _cpu_ticks(pid))
        self._own = time.thread_time()  # reading /proc of a busy machine 10 times a second is not the check's

    @property
    def cpu_seconds(self) -> float:
        ticks = sum(t - self._start.get(pid, 0) for pid, t in self._ticks.items()) / os.sysconf("SC_CLK_TCK")
        return ticks - self._own


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=0.2, help="size of the generated file (default 0.2; the issue's figure: 1.0)")
    parser.add_argument("--corpus", choices=["unique", "repeating"], default="unique", help="records that never repeat (default) or a repeated pool")
    parser.add_argument("--workers", type=int, nargs="+", default=[1], help="worker counts of the local check (default 1)")
    parser.add_argument("--engine", choices=["local", "spark"], default="local", help="spark: also run the check on Spark")
    parser.add_argument("--spark-master", default="local[2]")
    parser.add_argument("--no-baselines", action="store_true", help="skip rg / DuckDB / pyarrow-only")
    parser.add_argument("--per-kind", type=int, default=20, help="planted leaks of each kind (default 20)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of the check and the baselines, alternated; medians printed (default 1)")
    parser.add_argument("--holdout", type=Path, default=REPO / "holdout")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--paraphrases-only", action="store_true", help="only the short-paraphrase recall and false positives")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    holdout = load_holdout(args.holdout)
    t0 = time.perf_counter()
    index = build_index(holdout, GuardsConfig(), load_fingerprints(REPO / "schema_gate"))
    print(f"index: {len(index.questions)} questions, {len(index.iris)} distinctive IRIs, "
          f"{len(index.namespaces)} namespaces, prefilter {len(index.prefilter.literals)} literals + {len(index.prefilter.words)} words; built in {time.perf_counter() - t0:.1f} s")
    paraphrase_failures = paraphrase_figures(holdout, index)
    if args.paraphrases_only:
        sys.exit("short paraphrases: recall below 100% or unrelated questions flagged" if paraphrase_failures else 0)
    leaks = planted_leaks(index, holdout, rng, args.per_kind)
    if args.corpus == "unique":
        make = UniqueRecords(holdout, rng).record
    else:
        pool = clean_pool(20_000, rng)
        make = lambda i: pool[rng.randrange(len(pool))]  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="kgeval-bench-") as tmp:
        path = Path(tmp) / "train.jsonl"
        t0 = time.perf_counter()
        planted = write_file(path, int(args.gb * 1e9), make, leaks, rng)
        size = path.stat().st_size
        print(f"generated {size / 1e9:.2f} GB ({args.corpus} records), {len(planted)} planted leaks in {time.perf_counter() - t0:.0f} s; "
              f"bench process RSS before the check {_rss(os.getpid()) / 1e6:.0f} MB")
        missed, local, others = 0, [], {}
        for i in range(args.repeat):  # alternated: each round meets the same load
            if args.repeat > 1:
                print(f"round {i + 1} of {args.repeat} (load average {os.getloadavg()[0]:.1f})")
            results = [run(path, size, index, planted, workers) for workers in args.workers]
            missed += sum(m for m, _ in results)
            local.append(results[0][1])
            for name, rate in ({} if args.no_baselines else baselines(path, size, index, local[-1])).items():
                others.setdefault(name, []).append(rate)
        medians(local, others)
        if args.engine == "spark":
            missed += run_spark(path, size, index, planted, args.spark_master, statistics.median(local), args.repeat)
    print("bench process maxrss (getrusage)", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, "MB")
    if missed or paraphrase_failures:
        sys.exit("recall below 100%: planted leaks were missed, or short paraphrases missed or unrelated questions flagged")


def paraphrase_figures(holdout, index) -> int:  # noqa: ANN001
    """Print the short-paraphrase figures of the holdout and of CK25 (when present), each
    against the other's paraphrases and, for CK25, `unrelated_questions`; the misses and false
    positives, counted."""
    from kgeval.interop import import_text2sparql

    failures = 0
    with tempfile.TemporaryDirectory(prefix="kgeval-bench-") as tmp:
        pairs = [("holdout", holdout, index, [])]
        if (CK25 / "questions.yml").is_file():
            import_text2sparql(CK25, "ck25", Path(tmp) / "ck25")
            ck25 = load_holdout(Path(tmp) / "ck25")
            pairs = [("CK25", ck25, None, unrelated_questions()), *pairs]
        for name, held, held_index, unrelated in pairs:
            others = [text for _, other, _, _ in pairs if other is not held for q in other.questions() for _, text in paraphrases(q.question)]
            figures = measure(held, unrelated + others, GuardsConfig(), Path(tmp), held_index)
            print("\n".join(figures.lines(name)))
            failures += len(figures.missed) + len(figures.flagged)
    return failures


def recall(report, planted: dict[int, tuple[str, str]]) -> tuple[str, int]:  # noqa: ANN001
    """The recall line and the number of planted leaks missed."""
    found = {(h.record, h.kind, h.holdout_item) for h in report.hits}
    missed = [(rec, kind, item) for rec, (kind, item) in planted.items() if (rec, kind, item) not in found]
    caught = len(planted) - len(missed)
    by_kind: dict[str, list[int]] = {}
    for rec, (kind, item) in planted.items():
        by_kind.setdefault(kind, [0, 0])[1] += 1
        by_kind[kind][0] += (rec, kind, item) in found
    false_hits = {h.record for h in report.hits} - set(planted)
    line = (f"recall {caught}/{len(planted)} = {100 * caught / len(planted):.1f}% "
            f"({', '.join(f'{k} {a}/{b}' for k, (a, b) in sorted(by_kind.items()))}); "
            f"records flagged that were not planted: {len(false_hits)}")
    if missed:
        line += f"\n  MISSED: {missed[:10]}"
    return line, len(missed)


def run(path: Path, size: int, index, planted: dict[int, tuple[str, str]], workers: int) -> tuple[int, float]:  # noqa: ANN001
    """Check the file with `workers` workers, print the figures; (leaks missed, MB per CPU-second)."""
    config = GuardsConfig(contamination=ContaminationConfig(workers=workers))
    with PeakRss() as rss:
        t0 = time.perf_counter()
        report = check_contamination([path], index, config)
        seconds = time.perf_counter() - t0
    mbs = size / 1e6 / seconds
    per_core = size / 1e6 / max(rss.cpu_seconds, 1e-9)
    line, missed = recall(report, planted)
    print(
        f"kgeval local, workers={workers}: {mbs:.1f} MB/s wall ({mbs / workers:.1f} per worker; {per_core:.1f} MB per CPU-second, "
        f"{rss.cpu_seconds:.2f} CPU-s), {report.records / seconds:,.0f} records/s, "
        f"{report.records:,} records in {seconds:.1f} s; peak RSS {rss.peak / 1e6:.0f} MB (process tree); {line}"
    )
    return missed, per_core


def medians(local: list[float], others: dict[str, list[float]]) -> None:
    """With more than one round: the median of each figure, and kgeval's ratio to each median."""
    if len(local) < 2:
        return
    mid = statistics.median(local)
    print(f"median of {len(local)} rounds: kgeval local {mid:.1f} MB per CPU-second (rounds: {', '.join(f'{x:.1f}' for x in local)})")
    for name, rates in others.items():
        print(f"median of {len(rates)} rounds: baseline {name}: {statistics.median(rates):.1f}; kgeval local / it = {mid / statistics.median(rates):.2f}")


def needles(index) -> list[str]:  # noqa: ANN001
    """The prefilter's strings (for `rg -F`: words as plain substrings)."""
    return sorted(index.prefilter.literals | index.prefilter.words)


def baselines(path: Path, size: int, index, kgeval_per_core: float) -> dict[str, float]:  # noqa: ANN001
    """Single-core readers of the same file, in this run: MB per CPU-second and kgeval's ratio."""
    rates: dict[str, float] = {}
    if shutil.which("rg"):
        pattern_file = path.with_suffix(".needles")
        pattern_file.write_text("\n".join(needles(index)) + "\n", encoding="utf-8")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(["rg", "-F", "-i", "-c", "-j1", "-f", str(pattern_file), str(path)], capture_output=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        rates["rg -F -i (needles, raw bytes)"] = size / 1e6 / (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    else:
        print("rg not installed (apt-get install ripgrep): no rg baseline")
    rates["DuckDB read_json + regexp_matches (1 thread)"] = _timed_cpu(lambda: _duckdb_scan(path, index), size)
    rates["pyarrow only: read_json + RE2 prefilter"] = _timed_cpu(lambda: _pyarrow_scan(path, index), size)
    rates["pyarrow read_json alone (the check's floor)"] = _timed_cpu(lambda: _pyarrow_scan(path, None), size)
    for name, rate in rates.items():
        print(f"baseline {name}: {rate:.1f} MB per CPU-second; kgeval local / it = {kgeval_per_core / rate:.2f}")
    return rates


def _timed_cpu(action, size: int) -> float:  # noqa: ANN001
    t0 = time.process_time()
    action()
    return size / 1e6 / (time.process_time() - t0)


def _duckdb_scan(path: Path, index) -> int:  # noqa: ANN001
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 1")
    text = "concat_ws(chr(10), prompt, completion, array_to_string(list_transform(messages, lambda m: m.content), chr(10)))"
    sql = (f"SELECT count(*) FROM read_json(?, format='newline_delimited', "
           f"columns={{prompt: 'VARCHAR', completion: 'VARCHAR', messages: 'STRUCT(content VARCHAR)[]'}}) "
           f"WHERE regexp_matches({text}, ?)")
    return con.execute(sql, [str(path), "(?i)" + index.prefilter.pattern]).fetchone()[0]


def _pyarrow_scan(path: Path, index) -> int:  # noqa: ANN001
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    from kgeval.guards._records import FieldPath, field_texts, json_schema

    fields = tuple(FieldPath.parse(f) for f in ContaminationConfig().fields)
    options = pj.ParseOptions(explicit_schema=json_schema(fields), unexpected_field_behavior="ignore")
    table = pj.read_json(path, read_options=pj.ReadOptions(use_threads=False, block_size=32 << 20), parse_options=options)
    kept = 0
    for f in fields if index is not None else ():
        _, texts = field_texts(table, f, str(path))
        kept += pc.sum(pc.match_substring_regex(texts, pattern=index.prefilter.pattern, ignore_case=True)).as_py() or 0
    del table, pa
    return kept


def run_spark(path: Path, size: int, index, planted: dict[int, tuple[str, str]], master: str, local_per_core: float, repeat: int = 1) -> int:  # noqa: ANN001
    """The check on Spark (`repeat` times); MB/s, per core, ratio to the local check (its median
    over the rounds), 10 TB in executor-core-hours."""
    from kgeval.guards import check_files_spark, spark_session

    spark = spark_session(master)
    spark.sparkContext.setLogLevel("ERROR")
    cores = spark.sparkContext.defaultParallelism
    check_files_spark([path], index, GuardsConfig(), spark)  # warm: JVM, Python workers, broadcast
    missed, rates = 0, []
    for _ in range(repeat):
        with PeakRss() as rss:  # the JVM and Spark's Python workers are this process's descendants
            t0 = time.perf_counter()
            report = check_files_spark([path], index, GuardsConfig(), spark)
            seconds = time.perf_counter() - t0
        mbs = size / 1e6 / seconds
        rates.append(per_core := size / 1e6 / max(rss.cpu_seconds, 1e-9))
        line, lost = recall(report, planted)
        missed += lost
        print(
            f"kgeval on Spark {master} ({cores} cores): {mbs:.1f} MB/s wall, {per_core:.1f} MB per CPU-second "
            f"(JVM + Python workers, {rss.cpu_seconds:.1f} CPU-s; load average {os.getloadavg()[0]:.1f}); "
            f"per core / local check's = {per_core / local_per_core:.2f}; {line}"
        )
    per_core = statistics.median(rates)
    core_hours = 10e12 / (per_core * 1e6) / 3600
    print(
        f"kgeval on Spark, median of {repeat}: {per_core:.1f} MB per CPU-second; per core / local check's = {per_core / local_per_core:.2f}\n"
        f"  10 TB at {per_core:.1f} MB/s per executor core: {core_hours:,.0f} executor-core-hours "
        f"(e.g. {core_hours / 100:.1f} h on 100 cores), if the cluster's cores are as fast as these and storage keeps up"
    )
    spark.stop()
    return missed


if __name__ == "__main__":
    main()
