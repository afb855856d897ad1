"""The one markdown renderer: GitHub's markdown rendered, every attack in it left inert."""

from __future__ import annotations

import pytest

from embedded_github.markdown_html import is_allowed_link, render_markdown

GFM = """# A heading

| tool | risk |
|------|------|
| ls   | ~~none~~ |

```python
print("<b>hi</b>")
```

- [ ] to do
- [x] done
"""


def test_headings_tables_code_fences_and_task_lists_render_as_github_does() -> None:
    """A heading, a table, a fenced block and a task list become their HTML elements."""
    shown = render_markdown(GFM)
    assert "<h1>A heading</h1>" in shown
    assert "<table>" in shown
    assert "<td><s>none</s></td>" in shown
    assert '<pre><code class="language-python">print(&quot;&lt;b&gt;hi&lt;/b&gt;&quot;)' in shown
    assert 'type="checkbox"> to do</li>' in shown
    assert 'checked="checked" disabled="disabled" type="checkbox"> done</li>' in shown


def test_script_tag_in_markdown_is_text_not_a_script() -> None:
    """A ``<script>`` element is shown escaped, never passed through."""
    shown = render_markdown("before\n\n<script>alert(1)</script>\n\nafter <script>x()</script>")
    assert "<script" not in shown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown


def test_img_onerror_in_markdown_is_text_not_an_element() -> None:
    """``<img src=x onerror=…>``, as a block or inline, never becomes an element."""
    shown = render_markdown("<img src=x onerror=alert(1)>\n\nsee <img src=x onerror=alert(2)>")
    assert "<img" not in shown
    assert "onerror=alert(1)" in shown  # visible, as text


@pytest.mark.parametrize(
    "source",
    [
        "[click](javascript:alert(1))",
        "[click](JaVaScRiPt:alert(1))",
        "[click](jav&#x61;script:alert(1))",
        "[click](  javascript:alert(1))",
        "<javascript:alert(1)>",
        "[click][ref]\n\n[ref]: javascript:alert(1)",
        "[click](vbscript:msgbox(1))",
        "[click](file:///etc/passwd)",
    ],
)
def test_javascript_link_is_not_a_link(source: str) -> None:
    """A link to a script (in any spelling) or another unsafe scheme stays plain text."""
    shown = render_markdown(source)
    assert "<a " not in shown
    assert "href=" not in shown


@pytest.mark.parametrize(
    "source",
    ["[open](data:text/html,<script>alert(1)</script>)", "![pixel](data:image/png;base64,AAAA)"],
)
def test_data_link_or_image_is_not_rendered(source: str) -> None:
    """``data:`` URLs, even images (which markdown-it allows by default), are not rendered."""
    shown = render_markdown(source)
    assert "href=" not in shown
    assert "src=" not in shown


@pytest.mark.parametrize(
    "raw",
    [
        "<iframe src=https://evil.example></iframe>",
        "<svg onload=alert(1)>",
        '<a href="javascript:alert(1)">x</a>',
        "<style>body{display:none}</style>",
        '<div style="position:fixed;inset:0">cover</div>',
        "<details open ontoggle=alert(1)>",
    ],
)
def test_raw_html_in_markdown_is_escaped(raw: str) -> None:
    """Any raw HTML tag, with or without attributes, comes out as escaped text."""
    shown = render_markdown(f"{raw}\n\ninline {raw}")
    assert raw.split(" ")[0].split(">")[0] not in shown
    assert "&lt;" in shown


def test_unclosed_details_cannot_fold_away_the_rest_of_the_page() -> None:
    """An unclosed ``<details>`` is closed at the body's end; a stray ``</details>`` dropped."""
    shown = render_markdown("</details>\n\n<details>\n<summary>s</summary>\n\nrest")
    assert shown.count("<details>") == shown.count("</details>") == 1
    assert shown.index("<details>") < shown.index("</details>")
    assert shown.rstrip().endswith("</details>")


def test_collapsed_section_renders_with_an_escaped_summary() -> None:
    """ticketproxy's own ``<details>`` section renders; markup in its summary stays text."""
    shown = render_markdown("<details>\n<summary>Changed <b>2</b></summary>\n\n- a\n</details>")
    assert "<details>\n<summary>Changed &lt;b&gt;2&lt;/b&gt;</summary>" in shown
    assert "<li>a</li>" in shown


def test_html_comment_is_shown_muted_not_hidden() -> None:
    """A hidden comment (a signature trailer) is visible, escaped, in the muted span."""
    shown = render_markdown("answer\n\n<!-- ticketproxy-signature: a.b.c -->")
    assert '<span class="html-comment">&lt;!-- ticketproxy-signature: a.b.c --&gt;</span>' in shown


def test_link_leaks_no_referrer_and_no_window_handle() -> None:
    """Rendered links carry ``rel="nofollow noopener noreferrer"``, bare URLs included."""
    shown = render_markdown("[docs](https://example.com/a) and https://example.org/b")
    assert shown.count('rel="nofollow noopener noreferrer"') == 2


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://example.com", True),
        ("http://example.com", True),
        ("mailto:a@example.com", True),
        ("/acme/agents/issues/1", True),
        ("#issuecomment-1", True),
        ("javascript:alert(1)", False),
        ("data:image/png;base64,AAAA", False),
        ("ftp://example.com", False),
        ("http://[::1", False),
    ],
)
def test_only_web_and_mail_links_are_allowed(url: str, allowed: bool) -> None:
    """The link check is an allow-list: http, https, mailto, or no scheme at all."""
    assert is_allowed_link(url) is allowed
