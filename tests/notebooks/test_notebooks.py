"""Every notebook under notebooks/ executes top to bottom on a real run (nbclient + ipykernel):
a run with published accuracy, and a run whose accuracy the harness report withholds."""

import base64
import json
import re

import pytest

from kgeval.checklists import pre_eval_checklist
from kgeval.config import KgevalConfig, RunConfig
from kgeval.holdout import load_holdout
from kgeval.runs import ResultsDB, execute_run
from kgeval.systems import ReplaySystem
from tests.conftest import MINI_QUESTIONS, REPO
from tests.oversight import run_system

nbformat = pytest.importorskip("nbformat", reason="nbformat/nbclient/ipykernel are in the test extra")
nbclient = pytest.importorskip("nbclient")


def _execute(monkeypatch, db, run_id) -> list[dict]:
    monkeypatch.setenv("KGEVAL_DB", str(db))
    monkeypatch.setenv("KGEVAL_RUN", run_id)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    nb = nbformat.read(REPO / "notebooks" / "accuracy_by_kg.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]


def _plot_and_table(outputs: list[dict]) -> tuple[bytes, str]:
    """The side-by-side block: the PNG plot and the pandas table of attempts."""
    html = [o["data"]["text/html"] for o in outputs if "<img" in o.get("data", {}).get("text/html", "")]
    assert len(html) == 1
    png = re.search(r'src="data:image/png;base64,([^"]+)"', html[0]).group(1)
    return base64.b64decode(png), html[0]


def test_accuracy_by_kg_notebook_plots_a_run(mini_holdout, mini_gold, tmp_path, monkeypatch):
    db = tmp_path / "r.duckdb"
    run_id = run_system(mini_holdout, mini_gold, db, "weak", seeds=2)
    outputs = _execute(monkeypatch, db, run_id)
    text = "".join(o.get("text", "") for o in outputs)
    assert f"run {run_id}: weak, 2 seeds, accuracy " in text and "withheld" not in text
    png, html = _plot_and_table(outputs)
    assert png.startswith(b"\x89PNG")
    assert "<th>execution</th>" in html and "<th>seed</th>" in html and html.count("<tr>") == 2 * len(MINI_QUESTIONS)  # one row per attempt


def test_notebook_on_a_run_whose_accuracy_is_withheld(mini_holdout, mini_gold, tmp_path, monkeypatch):
    """Half the answers missing from the replay: 50% errors, above the 10% limit."""
    replay = tmp_path / "half.jsonl"
    replay.write_text("".join(json.dumps({"kg": "mini", "question_id": q["id"], "sparql": q["sparql"]}) + "\n" for q in MINI_QUESTIONS[::2]))
    db = tmp_path / "r.duckdb"
    checklist = pre_eval_checklist(REPO / "checklists" / "pre_eval.yaml")
    with ResultsDB(db) as results:
        run_id = execute_run(load_holdout(mini_holdout), mini_gold, ReplaySystem(replay), KgevalConfig(run=RunConfig(seeds=1)), results, checklist=checklist, replay=replay).run_id
    outputs = _execute(monkeypatch, db, run_id)
    text = "".join(o.get("text", "") for o in outputs)
    assert f"run {run_id}: replay, 1 seeds, accuracy withheld (harness report)" in text
    assert "accuracy withheld: 4 of 8 attempts" in text
    png, html = _plot_and_table(outputs)
    assert png.startswith(b"\x89PNG") and html.count("<td>error</td>") == 4 and html.count("<td>answered</td>") == 4
    groups = [o["data"]["text/html"] for o in outputs if "<img" not in o.get("data", {}).get("text/html", "<img")]
    assert any("<th>missing</th>" in g and "<th>answered</th>" in g for g in groups)  # the harness view per KG
