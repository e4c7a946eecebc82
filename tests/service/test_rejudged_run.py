"""A re-judged run (`kgeval rejudge`) is a run like any other for the service, marked as derived:
the run list names its source, its report carries where it came from, and the run page says so."""

from __future__ import annotations

from importlib import resources
from tests.cli.test_cli import kgeval
from tests.service.conftest import auth


def test_the_service_lists_and_reports_a_rejudged_run_as_derived(served, client):
    done = kgeval("rejudge", served.run_id, "--db", str(served.db))
    assert done.returncode == 0, done.stderr[-2000:]
    derived = done.stdout.strip().splitlines()[-1]
    runs = {r["run_id"]: r for r in client.get("/runs", headers=auth("ann")).json()}
    assert runs[derived]["derived_from"] == served.run_id and runs[served.run_id]["derived_from"] is None
    report = client.get(f"/runs/{derived}/report?format=json", headers=auth("ann")).json()
    assert report["metadata"]["derived_from"]["source_run_id"] == served.run_id and report["overall"]["accuracy"] == 1.0
    page = resources.files("kgeval.service").joinpath("static/page.html").read_text(encoding="utf-8")
    assert "report.metadata.derived_from" in page and "DERIVED: the stored answers of" in page
