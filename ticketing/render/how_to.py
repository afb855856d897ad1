"""The *How to answer* section of an issue and of a step comment.

Pure: no I/O, no clock. It tells the editor how to write, sign and post an answer (with
``ticketproxy answer`` or ``ticketproxy sign``, or on the answer page), which comments count,
and the deadline. It holds no agent text: the repository and the step's reference are
checked by the caller, and the answer page's address is linked only when it is plainly a
URL.
"""

from __future__ import annotations

import re

__all__ = ["page_line", "render_how_to", "render_step_how_to"]

# An operator's address is linked only when it is plainly a URL (see replies._link).
_LINKABLE = re.compile(r"https?://[^\s<>()\[\]`\\]{1,300}")


def page_line(answer_page: str | None, issue_number: int | None) -> str:
    """Say where the answer page is, which signs in the browser with the editor's own key."""
    where = "the answer page (`/desk/` on the ticketproxy server)"
    if answer_page is not None and _LINKABLE.fullmatch(answer_page):
        target = answer_page if issue_number is None else f"{answer_page}?ticket={issue_number}"
        where = f"[the answer page](<{target}>)"
    return (
        f"Or open {where}: it shows this ticket with its template filled in, signs in your"
        " browser with your own key (imported once, never sent anywhere) and posts with your"
        " own GitHub token.\n\n"
    )


def render_how_to(repo: str, deadline: str, answer_page: str | None = None) -> str:
    """Render the instructions for answering, signing and the deadline."""
    return (
        "## How to answer\n\n"
        "Write your answer in a file, for example `answer.md`. To make a tool call instead"
        " of answering with text, the file holds one fenced block:\n\n"
        "````\n"
        "```tool_call\n"
        '{"name": "execute_shell", "arguments": {"command": "ls"}}\n'
        "```\n"
        "````\n\n"
        "Sign it with your own key and post it here in one step:\n\n"
        "```sh\n"
        "ticketproxy answer <this issue's URL> --key ~/.ticketproxy/<you>.key --file answer.md\n"
        "```\n\n"
        "or sign it, then paste the whole output as a new comment on this issue:\n\n"
        "```sh\n"
        f"ticketproxy sign --ticket {repo}#<this issue's number> --key ~/.ticketproxy/<you>.key"
        " answer.md\n"
        "```\n\n"
        f"{page_line(answer_page, None)}"
        "Only comments signed by an editor whose key is in the keyring count; anything else"
        " here is ignored. A signed comment that is edited afterwards no longer counts: post"
        " a new signed comment instead of editing.\n\n"
        "Later steps of the same agent run arrive as *step comments* on this issue, each"
        " answered with its own `--step` (`--step 2` for step 2, and so on; each step comment"
        " gives its exact commands). This post is step 1: it needs no `--step` until a later"
        " step exists, then `--step 1`.\n\n"
        f"Answer before **{deadline}** (UTC). After the deadline the ticket expires, the agent"
        " is told that nobody answered, and later answers are refused.\n"
    )


def render_step_how_to(step: int, reference: str, deadline: str, page: str = "") -> str:
    """Render the instructions for answering one step, whose reference names the step."""
    return (
        f"## How to answer step {step}\n\n"
        "Write your answer in `answer.md` (start from the answer template; a tool call is one"
        " `tool_call` block, as the issue's first post shows), then sign it for this step and"
        " post it on this issue in one step:\n\n"
        "```sh\n"
        f"ticketproxy answer <this issue's URL> --step {step}"
        " --key ~/.ticketproxy/<you>.key --file answer.md\n"
        "```\n\n"
        "or sign it, then paste the whole output as a new comment on this issue:\n\n"
        "```sh\n"
        f"ticketproxy sign --ticket {reference} --key ~/.ticketproxy/<you>.key answer.md\n"
        "```\n\n"
        f"{page}"
        f"The signature names step {step} (`{reference}`): an answer signed for another step"
        " does not count here. Only comments signed by an editor whose key is in the keyring"
        " count, and a signed comment edited afterwards no longer counts.\n\n"
        f"Answer before **{deadline}** (UTC). After the deadline this step expires and the"
        " agent is told that nobody answered.\n"
    )
