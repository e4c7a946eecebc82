"""Engine parity: rebuild one holdout's gold on every SPARQL store that starts here and name
each difference.

    python bench/engines.py [--holdout DIR] [--ck25 DIR] [--stores embedded,oxigraph,virtuoso,fuseki]

Inputs: the sample holdout (holdout/, or --holdout) and CK25 ($KGEVAL_CK25 or --ck25, imported
as `kgeval holdout import text2sparql` does: each file in the named graph its `.graph` names).
Stores: the embedded store (pyoxigraph, the reference), Oxigraph server, Virtuoso and Apache
Jena Fuseki, each started on 127.0.0.1 as the tests start them (tests/stores/servers.py; a
store whose server is not installed is reported as not run). Every gold is built with
`rebuild_gold`, as `kgeval gold rebuild` does. For each holdout and store: how many golds
hash equal to the embedded store's, how many differ, and for each difference its cause, found
by comparing the two results under ever looser readings (row order; the lexical form of
numbers; numeric datatypes; numeric precision; other typed literals' lexical forms; language
tags), and whether it is explained: flagged `engine_dependent` in the gold, or a row of
docs/engines.md's table. Exit 1 when a difference is neither.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kgeval.config import GoldConfig  # noqa: E402
from kgeval.gold import GoldEntry, rebuild_gold  # noqa: E402
from kgeval.holdout import Holdout, load_holdout  # noqa: E402
from kgeval.stores import EmbeddedStore, Term, open_store  # noqa: E402

XSD = "http://www.w3.org/2001/XMLSchema#"
NUMERIC = {XSD + t for t in ("integer", "decimal", "double", "float", "int", "long", "short", "byte", "nonNegativeInteger",
                             "positiveInteger", "negativeInteger", "nonPositiveInteger", "unsignedInt", "unsignedLong")}
SIGNIFICANT = 6
"""Digits two numbers must share to differ only in precision (Virtuoso writes doubles with 6)."""
STORES = ("embedded", "oxigraph", "virtuoso", "fuseki")
Cell = Term | None
Reading = Callable[[Cell], object]


def _number(term: Cell) -> Decimal | None:
    if term is None or term.type != "literal" or term.datatype not in NUMERIC:
        return None
    try:
        return Decimal(term.value.strip())
    except InvalidOperation:
        return None


def _lexical(term: Cell) -> object:
    number = _number(term)
    return (number.normalize(), term.datatype) if number is not None and number.is_finite() else term


def _numeric_type(term: Cell) -> object:
    number = _number(term)
    return number.normalize() if number is not None and number.is_finite() else term


def _precision(term: Cell) -> object:
    number = _number(term)
    return f"{number:.{SIGNIFICANT}g}" if number is not None and number.is_finite() else term


def _typed_value(term: Cell) -> object:
    if term is not None and term.datatype == XSD + "boolean":
        return term.value in ("1", "true")
    return _precision(term)


def _lang(term: Cell) -> object:
    if term is not None and term.lang:
        return ("literal", term.value)
    return _typed_value(term)


TIES = "ordering of ties under LIMIT (the gold's tie set accepts both answers: flagged tied)"
READINGS: list[tuple[str, Reading]] = [
    ("ordering of ties (same rows, another order: rows whose ORDER BY keys are equal or incomparable)", lambda t: t),
    ("lexical form of numbers (0.50 / 0.5)", _lexical),
    ("numeric types (integer division giving xsd:integer, not xsd:decimal; xsd:int / xsd:integer ...)", _numeric_type),
    (f"numeric precision: division, AVG, float sums (equal to {SIGNIFICANT} significant digits)", _precision),
    ("lexical form of other typed literals (true / 1)", _typed_value),
    ("language-tag handling", _lang),
]


def cause(reference: GoldEntry, other: GoldEntry) -> str:
    """The first (strictest) reading under which the two answers hold the same rows."""
    a, b = reference.result, other.result
    if a.form != b.form or a.vars != b.vars:
        return f"different answer shape ({a.form} {a.vars} / {b.form} {b.vars})"
    if a.form == "ask":
        return "different ASK answer"
    if reference.ties is not None and reference.ties.tied and reference.ties.accepts(b.rows):
        return TIES
    if a.total != b.total:
        return f"different number of rows ({a.total} / {b.total})"
    for name, read in READINGS:
        if Counter(_row(r, read) for r in a.rows) == Counter(_row(r, read) for r in b.rows):
            return name
    return "different rows"


def example(reference: GoldEntry, other: GoldEntry) -> str:
    """A row only one side has, from each side: the difference as the reader sees it."""
    mine = {_spell(r) for r in reference.result.rows}
    theirs = {_spell(r) for r in other.result.rows}
    only = sorted(mine - theirs)[:1] + sorted(theirs - mine)[:1]
    return f" (embedded: ...{only[0][-60:]}; this store: ...{only[1][-60:]})" if len(only) == 2 else ""


def _spell(row: list[Cell]) -> str:
    return " ".join("-" if c is None else (c.value + (f"^^{c.datatype.removeprefix(XSD)}" if c.datatype else "")
                                           + (f"@{c.lang}" if c.lang else "")) for c in row)


def _row(row: list[Cell], read: Reading) -> tuple:
    return tuple(repr(read(cell)) for cell in row)


def documented() -> dict[tuple[str, str], set[str]]:
    """(holdout, question) -> engines, from the table in docs/engines.md (read as the test reads it)."""
    from tests.stores.test_gold_engines import documented_differences

    found: dict[tuple[str, str], set[str]] = {}
    for engine, questions in documented_differences().items():
        for key in questions:
            found.setdefault(key, set()).add(engine)
    return found


def ck25_holdout(root: Path, workdir: Path) -> Holdout:
    from kgeval.interop import import_text2sparql

    import_text2sparql(root, "ck25", workdir / "ck25")
    return load_holdout(workdir / "ck25")


def start_servers(names: list[str], holdouts: dict[str, Holdout], workdir: Path) -> tuple[dict, list]:
    """name -> RunningServer for every server that started; the processes to stop."""
    from tests.stores.servers import start_fuseki, start_oxigraph, start_virtuoso

    starters = {"oxigraph": start_oxigraph, "virtuoso": start_virtuoso, "fuseki": start_fuseki}
    servers, processes = {}, []
    for name in names:
        if name == "embedded":
            continue
        (workdir / name).mkdir()
        try:
            servers[name] = starters[name](workdir / name, holdouts)
            processes.append(servers[name].process)
        except BaseException as exc:  # pytest's skip/fail outcomes when a server is not installed
            print(f"{name}: not run ({str(exc)[:200]})", flush=True)
    return servers, processes


def golds(holdout: Holdout, store_for: Callable) -> tuple[dict[str, GoldEntry], dict[str, str]]:
    """The gold entries built by `store_for`'s stores, and each failed question's error."""
    report = rebuild_gold(holdout, store_for, GoldConfig(), None)
    return {e.question_id: e for e in report.entries}, {f.question_id: " ".join(f.error.split())[:140] for f in report.failures}


def compare(label: str, holdout: Holdout, servers: dict, docs: dict[tuple[str, str], set[str]], with_embedded: bool) -> int:
    """Print the table and the differences of one holdout; the number left unexplained."""
    reference, failures = golds(holdout, lambda kg: EmbeddedStore(kg.files, graphs=kg.graphs))
    print(f"\n{label}: {len(holdout.questions())} questions; reference: embedded store ({next(iter(reference.values())).engine_version})")
    print(f"{'store':<34}{'equal':>7}{'different':>11}{'failed':>8}")
    if with_embedded:
        print(f"{'embedded (pyoxigraph)':<34}{len(reference):>7}{0:>11}{len(failures):>8}")
    lines, unexplained = [], 0
    for name, server in servers.items():
        config = server.config(label)
        entries, failed = golds(holdout, lambda kg, c=config: open_store(c, kg.files, kg.id))
        engine = next(iter(entries.values()), None)
        differing = sorted(q for q, e in entries.items() if q in reference and e.result_sha256 != reference[q].result_sha256)
        title = f"{name} ({engine.engine.split(':')[-1]} {engine.engine_version})" if engine else name
        print(f"{title:<34}{len(entries) - len(differing):>7}{len(differing):>11}{len(failed):>8}")
        found = [(qid, cause(reference[qid], entries[qid]), example(reference[qid], entries[qid]), entries[qid].engine_dependent)
                 for qid in differing]
        found += [(qid, f"failed: {error}", "", []) for qid, error in failed.items()]
        for qid, why, shown, flagged in found:
            flagged = flagged or (reference[qid].engine_dependent if qid in reference else [])
            if why == TIES:
                verdict = "explained by the gold"
            elif flagged:
                verdict = f"flagged engine_dependent in the gold: {'; '.join(flagged)}"
            elif name in docs.get((label, qid), set()):
                verdict = "explained in docs/engines.md"
            else:
                verdict, unexplained = "UNEXPLAINED", unexplained + 1
            lines.append(f"  {label}/{qid} on {name}: {why}{shown} [{verdict}]")
    print("\n".join(lines) if lines else "  every gold equal on every store")
    return unexplained


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holdout", type=Path, default=REPO / "holdout", help="holdout directory (default: the sample)")
    parser.add_argument("--ck25", type=Path, default=Path(os.environ.get("KGEVAL_CK25", REPO.parent / "shared" / "datasets" / "ck25")))
    parser.add_argument("--stores", default=",".join(STORES), help=f"comma-separated subset of {','.join(STORES)}")
    args = parser.parse_args()
    names = [n.strip() for n in args.stores.split(",") if n.strip()]
    if unknown := set(names) - set(STORES):
        parser.error(f"--stores: unknown {', '.join(sorted(unknown))} (choose from {', '.join(STORES)})")
    from tests.stores.servers import stop

    with tempfile.TemporaryDirectory(prefix="kgeval-engines-") as tmp:
        workdir = Path(tmp)
        holdouts = {"sample": load_holdout(args.holdout)}
        if (args.ck25 / "questions.yml").is_file():
            holdouts["ck25"] = ck25_holdout(args.ck25, workdir)
        else:
            print(f"{args.ck25}: no questions.yml; CK25 left out (set KGEVAL_CK25 or --ck25)")
        servers, processes = start_servers(names, holdouts, workdir)
        try:
            docs = documented()
            unexplained = sum(compare(label, h, servers, docs, "embedded" in names) for label, h in holdouts.items())
        finally:
            for process in processes:
                stop(process)
    print(f"\n{unexplained} difference(s) neither flagged in the gold nor explained in docs/engines.md")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
