"""What a model system needs of the example bank, and a JSONL loader for one.

The bank is kgeval.guards.ExampleBank (guarded ingest and retrieval; `status()` lists its
guards for the pre-eval checklist). `FewShotBank` is the narrow interface the Gemini system
uses, so any guarded bank with the same two methods plugs in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from kgeval.errors import InputError

if TYPE_CHECKING:  # kgeval.guards imports the contamination check (pyarrow, numpy): not for a run
    from kgeval.guards import Example


class FewShotBank(Protocol):
    def retrieve(self, question: str, k: int = 3) -> list[Example]:
        """The `k` examples most like `question` that pass the bank's guards."""
        ...

    def status(self) -> list[Any]:
        """One status (name, active, details) per guard, for the pre-eval checklist."""
        ...


def load_examples(path: Path) -> list[Example]:
    """Examples from a JSONL file, one {"kg", "question", "sparql"} per line."""
    from kgeval.guards import Example
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read example bank: {exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: example bank is damaged: not UTF-8 text ({exc}); restore it from a backup") from None
    if not text.strip():  # a file emptied to 0 bytes is damaged, never a bank with no examples
        raise InputError(f"{path}: example bank is empty ({len(text)} bytes): damaged or cut short; restore it from a backup")
    lines = text.splitlines()
    examples = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            examples.append(Example.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise InputError(f"{path}:{lineno}: not an example ({{kg, question, sparql}}): {exc}") from None
    return examples
