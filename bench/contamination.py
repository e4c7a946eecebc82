"""Contamination check throughput and recall on a >= 1 GB training file with planted leaks.

Generates, in a temporary directory deleted afterwards, a JSONL file of text-to-SPARQL
training records (CK25 questions and queries with varied entities, schema context; half in
prompt/completion form, half as chat messages) with leaks of every kind planted at random
records: a holdout question with case, spacing and punctuation changed; a light paraphrase;
a reference query with variables and prefixes renamed and its layout changed; a distinctive
holdout IRI; a holdout question id. Then runs the check and prints MB/s, records/s, peak
memory (RSS of the whole process tree, sampled) and planted-leak recall (must be 100%).

    python bench/contamination.py [--gb 1.0] [--workers 1 2] [--holdout holdout]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kgeval.config import ContaminationConfig, GuardsConfig  # noqa: E402
from kgeval.guards import build_index, check_contamination, load_fingerprints  # noqa: E402
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


def planted_leaks(index, holdout, rng: random.Random, per_kind: int) -> list[tuple[str, str, dict]]:
    """(kind, holdout item, record) for every planted leak."""
    questions = holdout.questions()
    iris = sorted(index.iris)
    leaks = []
    for _ in range(per_kind):
        q = rng.choice(questions)
        mangled = "  ".join(w.upper() if rng.random() < 0.5 else w.lower() for w in re.findall(r"\w+", q.question)) + " ?!"
        leaks.append(("question-exact", f"{q.kg}/{q.id}", {"prompt": "Question: " + mangled, "completion": "SELECT * WHERE { ?s ?p ?o }"}))
        qid, text = rng.choice(sorted(PARAPHRASES.items()))
        kg = qid.rsplit("-", 1)[0]
        leaks.append(("question-near", f"{kg}/{qid}", {"messages": [{"role": "user", "content": text}]}))
        q = rng.choice(questions)
        leaks.append(("sparql", f"{q.kg}/{q.id}", {"prompt": "Translate.", "completion": rename_query(q.sparql, rng)}))
        iri = rng.choice(iris)
        leaks.append(("iri", "kg " + ", ".join(sorted(index.iris[iri])), {"prompt": f"What do you know about <{iri}>?", "completion": "n/a"}))
        q = rng.choice(questions)
        leaks.append(("kg-identifier", f"{q.kg}/{q.id}", {"prompt": f"see {q.id} for details", "completion": "ok"}))
    return leaks


def write_file(path: Path, target_bytes: int, pool: list[str], leaks, rng: random.Random) -> dict[int, tuple[str, str]]:
    """Write clean lines up to `target_bytes` with the leaks at random records; return them by record."""
    avg = sum(map(len, pool[:1000])) / 1000 + 1
    n_records = int(target_bytes / avg) + 1
    positions = sorted(rng.sample(range(n_records), len(leaks)))
    planted = {pos: (kind, item) for pos, (kind, item, _) in zip(positions, leaks)}
    at = dict(zip(positions, (json.dumps(rec) for _, _, rec in leaks)))
    with open(path, "w", encoding="utf-8") as fh:
        block: list[str] = []
        for i in range(n_records):
            block.append(at.get(i) or pool[rng.randrange(len(pool))])
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

    @property
    def cpu_seconds(self) -> float:
        return sum(t - self._start.get(pid, 0) for pid, t in self._ticks.items()) / os.sysconf("SC_CLK_TCK")


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return 0


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


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
    parser.add_argument("--gb", type=float, default=1.0, help="size of the generated file (default 1.0)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts to run (default 1 2)")
    parser.add_argument("--per-kind", type=int, default=20, help="planted leaks of each kind (default 20)")
    parser.add_argument("--holdout", type=Path, default=REPO / "holdout")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    holdout = load_holdout(args.holdout)
    t0 = time.perf_counter()
    index = build_index(holdout, GuardsConfig(), load_fingerprints(REPO / "schema_gate"))
    print(f"index: {len(index.questions)} questions, {len(index.iris)} distinctive IRIs, "
          f"{len(index.namespaces)} namespaces, prefilter {len(index.prefilter)} chars; built in {time.perf_counter() - t0:.1f} s")
    leaks = planted_leaks(index, holdout, rng, args.per_kind)
    with tempfile.TemporaryDirectory(prefix="kgeval-bench-") as tmp:
        path = Path(tmp) / "train.jsonl"
        t0 = time.perf_counter()
        planted = write_file(path, int(args.gb * 1e9), clean_pool(20_000, rng), leaks, rng)
        size = path.stat().st_size
        print(f"generated {size / 1e9:.2f} GB, {len(planted)} planted leaks in {time.perf_counter() - t0:.0f} s; "
              f"bench process RSS before the check {_rss(os.getpid()) / 1e6:.0f} MB")
        missed = [run(path, size, index, planted, workers) for workers in args.workers]
    print("bench process maxrss (getrusage)", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, "MB")
    if any(missed):
        sys.exit("recall below 100%: planted leaks were missed")


def run(path: Path, size: int, index, planted: dict[int, tuple[str, str]], workers: int) -> int:  # noqa: ANN001
    """Check the file with `workers` workers, print the figures; return the planted leaks missed."""
    config = GuardsConfig(contamination=ContaminationConfig(workers=workers))
    with PeakRss() as rss:
        t0 = time.perf_counter()
        report = check_contamination([path], index, config)
        seconds = time.perf_counter() - t0
    found = {(h.record, h.kind, h.holdout_item) for h in report.hits}
    missed = [(rec, kind, item) for rec, (kind, item) in planted.items() if (rec, kind, item) not in found]
    caught = len(planted) - len(missed)
    false_hits = {h.record for h in report.hits} - set(planted)
    by_kind: dict[str, list[int]] = {}
    for rec, (kind, item) in planted.items():
        by_kind.setdefault(kind, [0, 0])[1] += 1
        by_kind[kind][0] += (rec, kind, item) in found
    mbs = size / 1e6 / seconds
    print(
        f"workers={workers}: {mbs:.1f} MB/s wall ({mbs / workers:.1f} per worker; {size / 1e6 / rss.cpu_seconds:.1f} MB per CPU-second, "
        f"{rss.cpu_seconds:.0f} CPU-s), {report.records / seconds:,.0f} records/s, "
        f"{report.records:,} records in {seconds:.1f} s; peak RSS {rss.peak / 1e6:.0f} MB (process tree); "
        f"recall {caught}/{len(planted)} = {100 * caught / len(planted):.1f}% "
        f"({', '.join(f'{k} {a}/{b}' for k, (a, b) in sorted(by_kind.items()))}); "
        f"records flagged that were not planted: {len(false_hits)}"
    )
    if missed:
        print(f"  MISSED: {missed[:10]}")
    return len(missed)


if __name__ == "__main__":
    main()
