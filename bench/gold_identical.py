"""Gold files before and after a change: build the gold of each holdout with the kgeval on
`sys.path` and print the sha256 of every file of it (MANIFEST.json, each KG file, each display
file), one line each; then rebuild it unchanged (every entry reused) and check the files are
the same bytes. Run it at two commits and diff the outputs: a change to how the gold is
BUILT (speed, memory) must leave every byte of it as it was.

    python bench/gold_identical.py [--ck25 DIR] [--questions 1000] > after.txt
    PYTHONPATH=/path/to/other/checkout python bench/gold_identical.py ... > before.txt
    diff before.txt after.txt

Holdouts: the shipped sample (`holdout/`), CK25 (`$KGEVAL_CK25` or --ck25, skipped when
absent) and bench/gold_rebuild.py's generated holdout (same seed: same files at both commits).
No integrity key is used (a tag would differ by key, not by content).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.append(str(REPO))  # last: a checkout given in PYTHONPATH wins
sys.path.append(str(REPO / "bench"))

from kgeval.config import GoldConfig, KgevalConfig  # noqa: E402
from kgeval.gold import rebuild_gold  # noqa: E402
from kgeval.holdout import load_holdout  # noqa: E402
from kgeval.stores import EmbeddedStore  # noqa: E402


def gold_file_hashes(label: str, holdout_dir: Path, out: Path) -> list[str]:
    """`label path sha256` for every file of a freshly built gold of `holdout_dir`."""
    holdout = load_holdout(holdout_dir)
    # as `kgeval gold rebuild` opens them (reference queries in the sandbox workers): a checkout
    # without `local_copy` builds in process, which is what the diff compares against
    stores = {kg.id: _store(kg) for kg in holdout.kgs}
    report = rebuild_gold(holdout, lambda kg: stores[kg.id], GoldConfig(), out, force=True)
    assert report.version is not None
    lines = _file_hashes(label, report.version)
    again = rebuild_gold(holdout, lambda kg: stores[kg.id], GoldConfig(), out)  # unchanged: every entry reused
    assert again.version is not None and not again.built, f"{label}: an unchanged rebuild executed {len(again.built)} queries"
    assert _file_hashes(label, again.version) == lines, f"{label}: the unchanged rebuild wrote other bytes than the forced one"
    return lines


def _store(kg) -> EmbeddedStore:  # noqa: ANN001 - a KnowledgeGraph
    """The store `kgeval gold rebuild` of the checkout on sys.path opens (its `reference_store`),
    or, at a checkout from before reference queries ran in the sandbox, the in-process one."""
    try:
        from kgeval.cli._data import reference_store
    except ImportError:
        return EmbeddedStore(kg.files, graphs=kg.graphs)
    return reference_store(KgevalConfig(), kg)


def _file_hashes(label: str, version: Path) -> list[str]:
    files = sorted(p for p in version.rglob("*") if p.is_file())
    return [f"{label} {p.relative_to(version)} {hashlib.sha256(p.read_bytes()).hexdigest()}" for p in files]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ck25", type=Path, default=Path(os.environ["KGEVAL_CK25"]) if os.environ.get("KGEVAL_CK25") else None)
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--kgs", type=int, default=5)
    parser.add_argument("--triples", type=int, default=200_000)
    args = parser.parse_args()
    for name in ("KGEVAL_INTEGRITY_KEY", "KGEVAL_INTEGRITY_KEY_FILE"):
        os.environ.pop(name, None)
    from gold_rebuild import (
        generate_holdout,  # imported after kgeval: it puts this checkout first on sys.path
    )

    import kgeval

    print(f"# kgeval from {Path(kgeval.__file__).parent}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        lines = gold_file_hashes("sample", REPO / "holdout", Path(tmp) / "sample-gold")
        if args.ck25 and args.ck25.is_dir():
            from kgeval.interop import import_text2sparql

            import_text2sparql(args.ck25, "ck25", Path(tmp) / "ck25")
            lines += gold_file_hashes("ck25", Path(tmp) / "ck25", Path(tmp) / "ck25-gold")
        generated = generate_holdout(Path(tmp) / "generated", args.questions, args.kgs, args.triples)
        lines += gold_file_hashes("generated", generated, Path(tmp) / "generated-gold")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
