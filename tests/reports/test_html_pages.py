"""The Markdown-to-HTML converter of the self-contained report."""

from kgeval.reports._html import markdown_to_html


def test_nested_bullets_become_a_list_inside_their_item():
    page = markdown_to_html("## Wrong\n\n- **hr/q1**: who?\n  - the reason\n  - another\n- **hr/q2**: what?\n\nafter")
    assert page == (
        "<h2>Wrong</h2>\n<ul>\n<li><strong>hr/q1</strong>: who?\n<ul>\n<li>the reason\n</li>\n<li>another\n</li>\n</ul></li>\n"
        "<li><strong>hr/q2</strong>: what?\n</li></ul>\n<p>after</p>"
    )


def test_a_bullet_cannot_skip_a_level_and_tables_still_close():
    page = markdown_to_html("- a\n      - deep\n| x | y |\n|---|---|\n| 1 | 2 |")
    assert page.count("<ul>") == 2 and page.count("</ul>") == 2
    assert page.endswith("</li></ul></li></ul>\n<table>\n<tr><th>x</th><th>y</th></tr>\n<tr><td>1</td><td>2</td></tr>\n</table>")
