"""The README stays short and every link in it and in the documentation site resolves; the
site's navigation lists every page (CI also builds it with `mkdocs build --strict`)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.conftest import REPO

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PAGES = sorted((REPO / "docs").glob("*.md"))


def _relative_links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every Markdown link to a relative path, outside code blocks."""
    links, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#"):
                links.append((number, target))
    return links


def test_the_readme_is_at_most_300_lines():
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 300, f"README.md has {lines} lines: move detail to a page under docs/"


def test_every_relative_link_resolves():
    broken = []
    for path in [REPO / "README.md", *PAGES]:
        for number, target in _relative_links(path):
            resolved = (path.parent / target.split("#", 1)[0]).resolve()
            if not resolved.exists():
                broken.append(f"{path.relative_to(REPO)}:{number}: {target}")
    assert broken == [], "links to nothing:\n" + "\n".join(broken)


def test_docs_pages_link_only_inside_the_site():
    """MkDocs builds docs/ alone: a link out of it (to ../README.md, ../bench/...) is a broken
    link on the site; name such files in backticks instead."""
    outside = [
        f"{path.relative_to(REPO)}:{number}: {target}"
        for path in PAGES
        for number, target in _relative_links(path)
        if not (path.parent / target.split("#", 1)[0]).resolve().is_relative_to((REPO / "docs").resolve())
    ]
    assert outside == [], "links out of docs/:\n" + "\n".join(outside)


def test_the_navigation_lists_every_page_once():
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = [page for entry in config["nav"] for page in entry.values()]
    assert sorted(listed) == sorted(p.name for p in PAGES) and len(set(listed)) == len(listed)


def test_the_built_site_reads_as_written_and_searches_from_disk(tmp_path):
    """Issue 44 item 14: `\\|` showed literally in the command tables' code spans (a pipe in a
    code span needs no escape in Python-Markdown's tables); search did not work with the built
    site opened from disk (mkdocs-material's offline plugin: an index as a script, pages as
    files); pages cited an "issue 12" and a README table that readers cannot find."""
    import shutil
    import subprocess
    import sys

    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        import pytest

        pytest.skip("mkdocs not installed: pip install -e '.[docs]'")
    site = tmp_path / "site"
    built = subprocess.run([mkdocs, "build", "--strict", "-d", str(site)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    codes = [code for page in site.glob("*.html") for code in re.findall(r"<code>(.*?)</code>", page.read_text(encoding="utf-8"), re.S)]
    assert codes and not [c for c in codes if "\\|" in c], [c for c in codes if "\\|" in c][:3]
    assert any("md|json|html" in c for c in codes)
    assert (site / "search" / "search_index.js").is_file() and (site / "cli.html").is_file()  # opened from disk: file:// pages, index as a script
    cited = [f"{p.name}: {m}" for p in PAGES for m in re.findall(r"\(issue \d+[^)]*\)|README's \"[^\"]+\" table", p.read_text(encoding="utf-8"))]
    assert cited == [], cited
