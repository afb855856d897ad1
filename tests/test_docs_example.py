"""docs/example-ticket.md is what the captured AutoGPT run looks like on GitHub, and stays so.

The file is rendered by the same pure functions the desk uses, from the captured requests in
``tests/samples/autogpt/run1_default``: the issue that step 1 opens, and the comment its
step 2 becomes. Set ``TICKETPROXY_DOCS=1`` to rewrite it after a change to the rendering.
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.helpers.autogpt_samples import captured_request
from ticketing.render.ticket import render_step, render_ticket
from ticketing.threads import continuation_fingerprints, reply_fingerprint, step_delta

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "example-ticket.md"
REPO = "acme/agent-desk"
CREATED = datetime(2026, 11, 21, 20, 34, 4, tzinfo=UTC)
ANSWER_PAGE = "https://tickets.example.com/desk/"


def render_example() -> str:
    """Render issue #12 for AutoGPT's step 1 and the comment for its step 2."""
    step1 = captured_request("run1_default", "004_POST_v1_chat_completions.json")
    step2 = captured_request("run1_default", "006_POST_v1_chat_completions.json")
    step1 = replace(step1, key="5e1f" * 4)
    step2 = replace(step2, key="9a7c" * 4)
    issue = render_ticket(
        step1,
        request_id="req_4b1c9e2d7f3a",
        created=CREATED,
        deadline=CREATED + timedelta(hours=1),
        repo=REPO,
        answer_page=ANSWER_PAGE,
    )
    echoed = next(m.content for m in step2.messages if m.role == "assistant")
    wanted = reply_fingerprint(step1, echoed, ())
    index = next(i for i, fp in continuation_fingerprints(step2) if fp == wanted)
    delta = step_delta(step1, step2, echoed=index)
    later = CREATED + timedelta(minutes=3)
    comment = render_step(
        step2,
        step=2,
        new_from=delta.new_from,
        changed=delta.changed,
        tools_changed=False,
        request_id="req_8d2e6a0c5b91",
        created=later,
        deadline=later + timedelta(hours=1),
        repo=REPO,
        issue_number=12,
        issue_url=f"https://github.com/{REPO}/issues/12",
        answer_page=ANSWER_PAGE,
    )
    return (
        "# What a ticket looks like\n\n"
        "Rendered by `ticketing.render` from the requests a real AutoGPT sent"
        " (`tests/samples/autogpt/run1_default`); `tests/test_docs_example.py` keeps this file"
        " current. GitHub shows the markdown below as the issue and its step comment.\n\n"
        f"## Issue #12: {issue.title}\n\n"
        "<!-- the issue body starts here -->\n\n"
        f"{issue.body}\n\n"
        "---\n\n"
        "## Comment on issue #12: step 2 of the same run\n\n"
        f"{comment.body}\n"
    )


def test_example_ticket_in_docs_is_what_the_renderer_writes_today() -> None:
    """The README's example ticket matches the current rendering (TICKETPROXY_DOCS=1 rewrites)."""
    text = render_example()
    if os.environ.get("TICKETPROXY_DOCS") == "1":
        EXAMPLE.write_text(text, encoding="utf-8")
    assert EXAMPLE.read_text(encoding="utf-8") == text, (
        "docs/example-ticket.md is stale: run TICKETPROXY_DOCS=1 pytest tests/test_docs_example.py"
    )
    assert "Write the word hello into hello.txt" in text
