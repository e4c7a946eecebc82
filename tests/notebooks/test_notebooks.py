"""Every notebook under notebooks/ executes top to bottom on a real run (nbclient + ipykernel)."""

import base64

import pytest

from tests.conftest import REPO
from tests.oversight import run_system

nbformat = pytest.importorskip("nbformat", reason="nbformat/nbclient/ipykernel are in the test extra")
nbclient = pytest.importorskip("nbclient")


def test_accuracy_by_kg_notebook_plots_a_run(mini_holdout, mini_gold, tmp_path, monkeypatch):
    db = tmp_path / "r.duckdb"
    run_id = run_system(mini_holdout, mini_gold, db, "weak", seeds=2)
    monkeypatch.setenv("KGEVAL_DB", str(db))
    monkeypatch.setenv("KGEVAL_RUN", run_id)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    nb = nbformat.read(REPO / "notebooks" / "accuracy_by_kg.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    text = "".join(o.get("text", "") for o in outputs)
    assert f"run {run_id}: weak, 2 seeds" in text and "mini" in text
    pngs = [o["data"]["image/png"] for o in outputs if "image/png" in o.get("data", {})]
    assert len(pngs) == 1 and base64.b64decode(pngs[0]).startswith(b"\x89PNG")
