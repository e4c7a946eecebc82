"""Self-contained HTML pages: inline CSS, plots as inline SVG, no external assets.

The page body is the Markdown report converted by a small converter that knows only what the
renderers write (headings, bullets, pipe tables, bold, code), so the HTML never says anything
the Markdown does not; the plots are added above it.
"""

from __future__ import annotations

import html
import re

from kgeval.reports._summary import Accuracy
from kgeval.samples import SAMPLE_CSS

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d2430}
h1{font-size:1.5rem}h2{font-size:1.25rem;border-bottom:1px solid #d8dee6;padding-bottom:.2rem}h3{font-size:1.05rem;margin-top:1.4rem}
table{border-collapse:collapse;margin:.4rem 0}td,th{border:1px solid #d8dee6;padding:.2rem .6rem;text-align:left}
th{background:#f2f5f8}code{background:#f2f5f8;padding:0 .2rem;border-radius:3px}
.warning{background:#fff3cd;border:1px solid #e0b400;padding:.6rem 1rem;font-weight:600}
figure{margin:1rem 0}figcaption{font-size:.85rem;color:#5a6472}
"""

_BOLD = re.compile(r"\*\*(.+?)\*\*")
_CODE = re.compile(r"`([^`]+)`")


def _inline(text: str) -> str:
    escaped = html.escape(text, quote=False)
    return _CODE.sub(r"<code>\1</code>", _BOLD.sub(r"<strong>\1</strong>", escaped))


def markdown_to_html(markdown: str) -> str:
    """The subset of Markdown our renderers write, as HTML. A bullet indented under another
    is a nested list inside its parent item, never flattened into the parent's list."""
    out: list[str] = []
    depth = 0  # open lists; each but the innermost ends in an open <li>
    in_table = False
    for line in markdown.splitlines():
        bullet = re.match(r"( *)- (.*)", line)
        if depth and not bullet:
            out.append(_close_lists(depth))
            depth = 0
        if in_table and not line.startswith("|"):
            out.append("</table>")
            in_table = False
        if bullet:
            depth = _list_item(out, depth, len(bullet.group(1)) // 2 + 1, bullet.group(2))
        elif m := re.match(r"(#{1,5}) (.*)", line):
            level = len(m.group(1))
            out.append(f"<h{level}>{_inline(m.group(2))}</h{level}>")
        elif line.startswith("|"):
            in_table = _table_row(out, line, in_table)
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    if depth:
        out.append(_close_lists(depth))
    if in_table:
        out.append("</table>")
    return "\n".join(out)


def _list_item(out: list[str], depth: int, level: int, text: str) -> int:
    """Append one bullet at `level` (1 = top); returns the lists open afterwards."""
    level = min(level, depth + 1)  # a bullet cannot skip a level
    if level > depth:
        out.append("<ul>")
    else:
        out.append("</li>")
        while depth > level:
            out.append("</ul></li>")
            depth -= 1
    out.append(f"<li>{_inline(text)}")
    return level


def _close_lists(depth: int) -> str:
    return "</li></ul>" * depth


def _table_row(out: list[str], line: str, in_table: bool) -> bool:
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if all(set(c) <= {"-", ":"} for c in cells):
        return in_table
    tag = "th" if not in_table else "td"
    if not in_table:
        out.append("<table>")
    out.append("<tr>" + "".join(f"<{tag}>{_inline(c)}</{tag}>" for c in cells) + "</tr>")
    return True


def interval_chart_svg(rows: list[Accuracy], title: str) -> str:
    """Accuracy as a dot with its Wilson 95% interval as a whisker, one row per group."""
    rows = [r for r in rows if r.accuracy is not None]
    left, width, row_h, top = 170, 420, 26, 28
    height = top + row_h * len(rows) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{left + width + 90}" height="{height}" '
        f'viewBox="0 0 {left + width + 90} {height}" font-family="sans-serif" font-size="12">',
        f"<title>{html.escape(title)}</title>",
    ]
    for tick in range(0, 101, 20):
        x = left + width * tick / 100
        parts.append(f'<line x1="{x:.1f}" y1="{top - 8}" x2="{x:.1f}" y2="{height - 24}" stroke="#e3e8ee"/>')
        parts.append(f'<text x="{x:.1f}" y="{height - 8}" text-anchor="middle" fill="#5a6472">{tick}%</text>')
    for i, r in enumerate(rows):
        y = top + row_h * i + row_h / 2
        x0, x1, xp = (left + width * v for v in (r.ci_low, r.ci_high, r.accuracy))
        label = html.escape(f"{r.group} (n={r.n})")
        parts.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
        parts.append(f'<line x1="{x0:.1f}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y:.1f}" stroke="#2b6cb0" stroke-width="2"/>')
        for x in (x0, x1):
            parts.append(f'<line x1="{x:.1f}" y1="{y - 5:.1f}" x2="{x:.1f}" y2="{y + 5:.1f}" stroke="#2b6cb0" stroke-width="2"/>')
        parts.append(f'<circle cx="{xp:.1f}" cy="{y:.1f}" r="4.5" fill="#1a365d"><title>{label}: {r.accuracy:.1%} [{r.ci_low:.1%}, {r.ci_high:.1%}]</title></circle>')
        parts.append(f'<text x="{left + width + 8}" y="{y + 4:.1f}" fill="#1d2430">{r.accuracy:.1%}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def html_page(title: str, body: str, warning: str | None = None) -> str:
    banner = f'<p class="warning">{html.escape(warning)}</p>\n' if warning else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{html.escape(title)}</title>\n<style>{_CSS}{SAMPLE_CSS}</style>\n</head>\n<body>\n{banner}{body}\n{banner}</body>\n</html>\n"
    )


def figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>"
