"""Markdown to HTML as GitHub shows it, sanitised: the one renderer of every page.

The embedded GitHub's issue page and the desk (``/desk/``, through its JSON) both show a
ticket with :func:`render_markdown`, so what an editor reads is what the sandbox shows.

What GitHub renders is rendered: CommonMark plus GFM's tables, strikethrough, task lists and
bare links (markdown-it-py's ``gfm-like`` preset). What a prompt could attack with is not:

- raw HTML is never passed through (``html`` off): ``<script>``, ``<img onerror=…>`` and
  every other tag come out as visible, escaped text;
- a link or image survives only with an ``http``, ``https`` or ``mailto`` scheme, or none
  (a relative link or a fragment); ``javascript:``, ``vbscript:``, ``data:``, ``file:`` and
  the rest are left as plain text;
- links open without a referrer and without a handle on the page (``rel="nofollow noopener
  noreferrer"``);
- the one piece of HTML ticketproxy writes itself, a collapsed section (``<details>`` and
  ``<summary>`` on lines of their own, without attributes), is rendered, balanced so that a
  body cannot fold the rest of the page away; its summary is escaped text;
- HTML comments, which GitHub hides, are shown escaped in a muted ``html-comment`` span: a
  person reviewing an answer should see the signature trailer that will be verified.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.ruler import RuleOptionsType
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from mdit_py_plugins.tasklists import tasklists_plugin

# Schemes a rendered link or image may carry; anything else stays text. An allow-list,
# since deny-lists miss the next scheme (markdown-it's own default lets data:image through).
ALLOWED_SCHEMES = frozenset({"http", "https", "mailto"})
_COMMENT_OPEN = "<!--"
_COMMENT_CLOSE = "-->"
# A key of markdown-it's per-block inline cache that no position (never negative) uses.
_NO_CLOSE_FROM = -1
# Whole lines, no attributes: a tag that could carry an event handler or a URL never matches.
_DETAILS_LINE = re.compile(r"(</?details>)|<summary>(.*)</summary>", re.IGNORECASE)


def is_allowed_link(url: str) -> bool:
    """Say whether a link or image target may be rendered (a safe scheme, or none)."""
    # markdown-it hands over the normalised URL (entities decoded, percent-encoded), so
    # "jav&#x61;script:" and "JAVASCRIPT:" arrive here already spelt plainly.
    try:
        scheme = urlsplit(url.strip()).scheme
    except ValueError:
        return False
    return scheme == "" or scheme.lower() in ALLOWED_SCHEMES


def _html_comment(state: StateInline, silent: bool) -> bool:
    # Only HTML comments are recognised, and only to be shown escaped: raw HTML stays off.
    if not state.src.startswith(_COMMENT_OPEN, state.pos):
        return False
    # Once no "-->" follows a position, none follows any later one: remembering that keeps a
    # body of many unclosed "<!--" linear, not quadratic.
    if state.pos >= state.cache.get(_NO_CLOSE_FROM, len(state.src) + 1):
        return False
    end = state.src.find(_COMMENT_CLOSE, state.pos + len(_COMMENT_OPEN))
    if end < 0:
        state.cache[_NO_CLOSE_FROM] = state.pos
        return False
    end += len(_COMMENT_CLOSE)
    if not silent:
        token = state.push("html_comment", "", 0)
        token.content = state.src[state.pos : end]
    state.pos = end
    return True


def _details_line(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    if state.is_code_block(start):
        return False
    line = state.src[state.bMarks[start] + state.tShift[start] : state.eMarks[start]]
    match = _DETAILS_LINE.fullmatch(line.strip())
    if match is None:
        return False
    if silent:
        return True  # it ends a paragraph or a list before it, as an HTML block does
    # Top level only (not in a list or a quote), where ticketproxy writes them and where a
    # balanced pair cannot straddle another block's end.
    if state.level > 0:
        return False
    token = state.push("html_block", "", 0)
    token.map = [start, start + 1]
    tag, summary = match.groups()
    shown = f"<summary>{html.escape(summary)}</summary>" if tag is None else tag.lower()
    token.content = shown + "\n"
    state.line = start + 1
    return True


def _balance_details(state: StateCore) -> None:
    # An unclosed <details> would fold away everything after the body (later comments, the
    # form); a stray </details> could close one the page opened. Drop strays, close the rest.
    depth = 0
    kept: list[Token] = []
    for token in state.tokens:
        if token.type == "html_block" and token.content == "</details>\n":
            if depth == 0:
                continue
            depth -= 1
        elif token.type == "html_block" and token.content == "<details>\n":
            depth += 1
        kept.append(token)
    for _ in range(depth):
        closing = Token("html_block", "", 0)
        closing.content = "</details>\n"
        kept.append(closing)
    state.tokens = kept


def _render_html_comment(
    renderer: RendererHTML, tokens: Sequence[Token], index: int, options: OptionsDict, env: EnvType
) -> str:
    return f'<span class="html-comment">{html.escape(tokens[index].content)}</span>'


def _render_link_open(
    renderer: RendererHTML, tokens: Sequence[Token], index: int, options: OptionsDict, env: EnvType
) -> str:
    tokens[index].attrSet("rel", "nofollow noopener noreferrer")
    return renderer.renderToken(tokens, index, options, env)


@functools.cache
def _markdown() -> MarkdownIt:
    md = MarkdownIt("gfm-like", {"html": False})
    md.use(tasklists_plugin)
    md.validateLink = is_allowed_link  # type: ignore[method-assign]
    md.inline.ruler.before("autolink", "html_comment", _html_comment)
    ends: RuleOptionsType = {"alt": ["paragraph", "list", "blockquote"]}
    md.block.ruler.before("html_block", "details_line", _details_line, ends)
    md.core.ruler.after("block", "balance_details", _balance_details)
    md.add_render_rule("html_comment", _render_html_comment)
    md.add_render_rule("link_open", _render_link_open)
    return md


def render_markdown(text: str) -> str:
    """Render GitHub-flavoured markdown to sanitised HTML (no raw HTML, safe links only)."""
    rendered: str = _markdown().render(text)
    return rendered
