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


def render_how_to(
    repo: str, deadline: str, answer_page: str | None = None, *, tools: bool = True
) -> str:
    """Render the instructions for answering, signing and the deadline.

    ``tools`` says whether the request offers tools: only then is a tool call explained.
    """
    tool_call = (
        " To make a tool call instead of answering with text, the file holds a fenced"
        " `tool_call` block like the one in the answer template above."
        if tools
        else ""
    )
    return (
        "## How to answer\n\n"
        f"Write your answer in a file, for example `answer.md`.{tool_call}\n\n"
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


def render_step_how_to(
    step: int,
    reference: str,
    deadline: str,
    page: str = "",
    *,
    issue_url: str | None = None,
    tools: bool = True,
) -> str:
    """Render the instructions for answering one step, whose reference names the step.

    ``issue_url`` is the run's issue, known by the time a step is posted; ``tools`` says
    whether the request offers tools.
    """
    url = issue_url if issue_url and _LINKABLE.fullmatch(issue_url) else "<this issue's URL>"
    start = (
        "start from the answer template; a tool call is one `tool_call` block, as the template"
        " shows"
        if tools
        else "start from the answer template"
    )
    return (
        f"## How to answer step {step}\n\n"
        f"Write your answer in `answer.md` ({start}), then sign it for this step and"
        " post it on this issue in one step:\n\n"
        "```sh\n"
        f"ticketproxy answer {url} --step {step}"
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
