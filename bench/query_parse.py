"""What reading a query costs kgeval, next to what running it costs the engine.

For every distinct reference query of CK25 ($KGEVAL_CK25), the sample holdout and the test
corpora (mixed case, comments, hostile tricks), in one process:
- rdflib: `parseQuery` + `translateQuery` once, the least the old guard paid per text (it
  also parsed again for determinism and ran a pyparsing locator for the tie probe);
- new, cold: the guard, the determinism scan and (for ordered/limited SELECTs) the tie probe
  with empty caches;
- new, warm: the same calls again (each distinct text is analysed once per process);
- engine: pyoxigraph executing the text and reading every row, on the text's own KG.

Then the guard's worst case: every hostile text of the test corpora (tests/stores/
hostile_corpus.py, sparql_tricks.py) and 20 KB texts built to be slow (long chains of `(`,
many comments, long strings full of escapes, 6,000-triple BGPs, 10,000-value VALUES ...),
in CPU milliseconds (the machine is shared), next to tree-sitter parsing the same text.

    python bench/query_parse.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from rdflib.plugins.sparql.algebra import translateQuery  # noqa: E402
from rdflib.plugins.sparql.parser import parseQuery  # noqa: E402

from kgeval.errors import QueryError  # noqa: E402
from kgeval.holdout import load_holdout  # noqa: E402
import pyoxigraph as ox  # noqa: E402

from kgeval.stores import guard_query, order_probe, query_determinism  # noqa: E402
from kgeval.stores._engine import load_kg  # noqa: E402
from kgeval.stores._functions import DERIVED_INTEGER_CASTS  # noqa: E402
from kgeval.stores import _query, _rewrite  # noqa: E402


def corpus() -> list[tuple[str, str, ox.Store | None]]:
    """(label, text, store to run it on or None) for every distinct text."""
    texts: list[tuple[str, str, ox.Store | None]] = []
    ck25 = Path(os.environ.get("KGEVAL_CK25", ROOT.parent / "shared" / "datasets" / "ck25"))
    if (ck25 / "questions.yml").is_file():
        store = load_kg(sorted((ck25 / "graphs").glob("*.ttl")))  # the raw engine, as the sandbox workers hold it
        for q in yaml.safe_load((ck25 / "questions.yml").read_text())["questions"]:
            texts.append(("ck25", q["query"]["sparql"], store))
    holdout = load_holdout(ROOT / "holdout")
    for kg in holdout.kgs:
        store = load_kg(kg.files)
        texts += [("sample", q.sparql, store) for q in kg.questions]
    sys.path.insert(0, str(ROOT))
    from tests.stores.sparql_tricks import ACCEPTED  # noqa: PLC0415 - the test corpora, when present
    from tests.stores.test_tie_corpus import CORPUS

    texts += [("tricks", text.replace("{url}", "http://127.0.0.1:9"), None) for text, _ in ACCEPTED.values()]
    texts += [("ties", text, None) for text, _, _ in CORPUS.values()]
    return list({text: (label, text, store) for label, text, store in texts}.values())


def new_path(text: str) -> None:
    shape = guard_query(text)
    query_determinism(text)
    if shape.form == "select" and (shape.ordered or shape.limit is not None):
        order_probe(text)


def clear_caches() -> None:
    """Every cache the guard and the probes keep: the lexer's terminals and the shape per
    terminal sequence too, else a "cold" repeat only looks the text up."""
    for cached in (_query._analyse, _query._shape_of, _query.terminals, _query._in_scope, _rewrite.order_probe, _rewrite.query_determinism):  # noqa: SLF001
        cached.cache_clear()


def rdflib_path(text: str) -> None:
    translateQuery(parseQuery(text))


def engine_path(store: ox.Store, approved: str) -> None:
    result = store.query(approved, custom_functions=DERIVED_INTEGER_CASTS)  # pyoxigraph's own call, with kgeval's custom casts
    if hasattr(result, "__iter__"):
        for _ in result:
            pass


def best_ms(work: Callable[[], None], repeat: int, before: Callable[[], None] = lambda: None) -> float:
    times = []
    for _ in range(repeat):
        before()
        t0 = time.perf_counter()
        work()
        times.append(time.perf_counter() - t0)
    return min(times) * 1000


def hostile_texts() -> dict[str, str]:
    """Texts meant to be slow for the guard: the test corpora's hostile texts and ~20 KB ones."""
    from tests.stores import sparql_tricks  # noqa: PLC0415
    from tests.stores.hostile_corpus import hostile_queries  # noqa: PLC0415

    size = 19_900

    def fill(unit: str, head: str = "SELECT * WHERE { ", tail: str = " }") -> str:
        return head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail

    texts = {h.id: h.text for h in hostile_queries("http://127.0.0.1:9")}
    for group in (sparql_tricks.ACCEPTED, sparql_tricks.REFUSED):
        texts.update({f"trick:{name}": text.replace("{url}", "http://127.0.0.1:9") for name, (text, _) in group.items()})
    texts.update({
        "20k:open-parens": "SELECT * WHERE { ?s ?p ?o FILTER(" + "(" * 9_900 + ") }",
        "20k:balanced-parens-60": fill("FILTER(" + "(" * 60 + "?o" + ")" * 61 + " "),
        "20k:comments": fill("# a comment line\n"),
        "20k:string-escapes": 'SELECT * WHERE { ?s ?p "' + '\\n\\t\\"' * 3_300 + '" }',
        "20k:long-string-quotes": "SELECT * WHERE { ?s ?p '''" + "a'b''c\\'" * 2_400 + "''' }",
        "20k:unterminated-long-string": "SELECT * WHERE { ?s ?p '''" + "a'b''c" * 3_300 + " }",
        "20k:bgp-iris": fill("?s <p> ?o . "),
        "20k:bgp-pnames": "PREFIX ex: <http://x/> " + fill("?s ex:p ?o . "),
        "20k:bgp-dotted-pnames": "PREFIX dbr: <http://dbpedia.org/resource/> " + fill("?s dbr:J._R._R._Tolkien dbr:A.C._Milan . "),
        "20k:prefixes": fill("PREFIX p: <http://x/> ", head="", tail="SELECT * WHERE { ?s ?p ?o }"),
        "20k:values": fill("1 ", head="SELECT * WHERE { VALUES ?x { ", tail=" } }"),
        "20k:union": fill("{ ?s ?p ?o } UNION ", tail="{ } }"),
        "20k:projected-vars": fill("?v ", head="SELECT ", tail="WHERE { }"),
        "20k:less-than-chain": "SELECT * WHERE { ?s ?p ?o FILTER(" + "?o<1 && " * 2_200 + "true) }",
        "20k:binds": fill("BIND(CONCAT(?a, ?b) AS ?c) "),
        "20k:whitespace": fill(" \t\r\n"),
    })
    return {name: text for name, text in texts.items() if len(text.encode("utf-8", "surrogatepass")) <= 20_000}


def cpu_ms(work: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        clear_caches()
        t0 = time.process_time()
        try:
            work()
        except QueryError:
            pass
        times.append(time.process_time() - t0)
    return min(times) * 1000


def print_worst_case(repeat: int) -> None:
    rows = []
    for name, text in hostile_texts().items():
        guard = cpu_ms(lambda: guard_query(text), repeat)
        parse = cpu_ms(lambda: _query.parsed_tree(text.encode("utf-8", "replace").decode()), repeat)
        rows.append((guard, parse, name, len(text.encode("utf-8", "surrogatepass"))))
    rows.sort(reverse=True)
    print(f"\nguard worst case over {len(rows)} hostile texts (CPU ms, best of {repeat}; tree-sitter alone on the same text):")
    for guard, parse, name, size in rows[:5]:
        print(f"  {name:34} {size:6d} B  guard {guard:7.1f} ms  tree-sitter {parse:6.2f} ms  guard/tree-sitter {guard / max(parse, 1e-3):6.1f}x")
    print(f"worst: {rows[0][2]} {rows[0][0]:.1f} ms CPU for {rows[0][3]:,} bytes")


def main() -> int:
    logging.getLogger("rdflib").setLevel(logging.ERROR)  # its IRI warnings on the trick texts
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, list[tuple[float, float, float, float | None]]] = {}
    for label, text, store in corpus():
        try:
            old = best_ms(lambda: rdflib_path(text), args.repeat)
        except Exception:  # noqa: BLE001 - rdflib may not read a trick text at all
            old = float("nan")
        try:
            cold = best_ms(lambda: new_path(text), args.repeat, clear_caches)
        except QueryError:
            continue
        warm = best_ms(lambda: new_path(text), args.repeat)
        approved = guard_query(text).text
        engine = best_ms(lambda: engine_path(store, approved), args.repeat) if store else None
        rows.setdefault(label, []).append((old, cold, warm, engine))
    print(f"{'corpus':8} {'texts':>5} {'rdflib ms':>10} {'new cold ms':>12} {'new warm ms':>12} {'rdflib/new':>11} {'engine ms':>10} {'new cold/engine':>16}")
    for label, values in rows.items():
        old = statistics.mean(v[0] for v in values if v[0] == v[0])
        cold = statistics.mean(v[1] for v in values)
        warm = statistics.mean(v[2] for v in values)
        engines = [v[3] for v in values if v[3] is not None]
        engine = statistics.mean(engines) if engines else float("nan")
        print(f"{label:8} {len(values):5d} {old:10.3f} {cold:12.3f} {warm:12.4f} {old / cold:10.0f}x {engine:10.3f} {cold / engine:15.2f}x")
    print_worst_case(args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
