"""``ticketproxy agent-draft``: an editor's personal agent drafts one ticket.

The step of the composite action ``actions/personal-agent/action.yml``, run in the editor's
fork: read the ticket (the issue ticketproxy opened; for a later step of an agent run, the
dispatch names its step comment, and the issue and the steps up to it are read), ask the
editor's OpenAI-compatible model with the editor's prompt additions
(``.ticketproxy/agent.md``), and post the answer on the ticket as a marked suggestion
naming whose agent drafted it, for that step's reference, in the same format as the
upstream drafter's (:func:`ticketing.render.drafts.render_draft_comment`). It is never an
answer: an editor signs it (``ticketproxy answer URL --draft --draft-by LOGIN``).

Secrets come from the environment only (never an argument, so never a process listing):
the model's key in ``TICKETPROXY_AGENT_MODEL_KEY``, the token that comments on the ticket
in ``GITHUB_TOKEN``. Neither is printed. A repeated run (a dispatch sent twice) posts no
second draft. :class:`DraftFinisher` is the hook that decides what is posted: by default
the draft as it is (:func:`post_as_draft`); with ``--oidc --as LOGIN`` (the action's opt-in
``answer-as-agent``), the agent's answer signed keylessly as its own identity
(:func:`answer_as_agent`), never the editor's key. That answer is released only where the
review policy lets an agent answer (plain text); a command is held for a person.
"""

from __future__ import annotations

import argparse
import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Protocol
from urllib.parse import urlparse

from auth.logins import is_valid_login, same_login
from proxy.cli.oidc_token import sign_as_agent
from proxy.cli.rules import parse_issue_url, step_to_answer
from proxy.drafts import read_completion
from proxy.errors import DraftFailed, ProxyError
from ticketing.audit.comments import claimed_ticket
from ticketing.github.one_shot import IssueHistory, fetch_issue_once, post_comment_once
from ticketing.references import ticket_reference
from ticketing.render.drafts import (
    draft_answer_text,
    draft_digest,
    parse_draft_comment,
    render_draft_comment,
)
from ticketing.render.markdown import escape_inline
from ticketing.render.markers import find_step_number

MODEL_KEY_VARIABLE = "TICKETPROXY_AGENT_MODEL_KEY"
TOKEN_VARIABLE = "GITHUB_TOKEN"  # noqa: S105 (a variable name, not a secret)
# The prompt additions are the editor's notes, not a corpus.
MAX_PROMPT_BYTES = 64 * 1024
INSTRUCTIONS = (
    "You draft the reply to a ticket that ticketproxy opened for an AI agent's request. The "
    "ticket below shows the agent's conversation. Write only the reply the agent should "
    "receive: plain text, or a fenced block with the info string tool_call holding "
    '{"name": ..., "arguments": {...}} for a tool the ticket offers. An editor reads and '
    "signs your draft before the agent sees it."
)


class DraftFinisher(Protocol):
    """What happens to the rendered draft comment before it is posted (the signing hook)."""

    def __call__(self, body: str, *, text: str, ticket: str) -> str:
        """Return the comment to post for draft ``text`` of ``ticket``, rendered as ``body``."""
        ...


def post_as_draft(body: str, *, text: str, ticket: str) -> str:
    """Post the draft as a marked suggestion, unsigned: an editor signs it (the default)."""
    return body


def answer_as_agent(login: str, env: Mapping[str, str], *, ttl: timedelta) -> DraftFinisher:
    """Return a finisher that posts the text as ``login``'s answer, signed keylessly (OIDC)."""

    def finish(body: str, *, text: str, ticket: str) -> str:
        return sign_as_agent(text, ticket=ticket, login=login, env=env, ttl=ttl)

    return finish


def agent_draft(
    args: argparse.Namespace, env: Mapping[str, str], *, finish: DraftFinisher | None = None
) -> str:
    """Draft the ticket at ``args.ticket_url`` and post the draft; return what was done."""
    answering = bool(getattr(args, "oidc", False))
    login = getattr(args, "agent_login", None)
    if answering and (not login or not is_valid_login(login)):
        raise ProxyError("--oidc needs --as LOGIN: the account that posts the agent's comments")
    if finish is None:
        ttl = timedelta(seconds=args.ttl)
        finish = answer_as_agent(login, env, ttl=ttl) if answering and login else post_as_draft
    api_url, repo, number = parse_issue_url(args.ticket_url)
    api_url = args.api_url or api_url
    token = env.get(TOKEN_VARIABLE)
    if not token:
        raise ProxyError(
            f"{TOKEN_VARIABLE} is not set: give the action a token that may comment on "
            f"{repo} (issues: write), from the fork's secrets"
        )
    agent = f"{args.editor}'s agent"
    additions = _prompt_additions(Path(args.prompt_file))
    history = fetch_issue_once(api_url=api_url, token=token, repo=repo, number=number)
    # The dispatch names the step: the issue's address for step 1 of a run, the step
    # comment's (…#issuecomment-N) for a later one; the draft is made for that step only.
    named = bool(urlparse(args.ticket_url).fragment)
    step = step_to_answer(history, repo=repo, issue_url=args.ticket_url, step=None if named else 1)
    ticket = ticket_reference(repo, number, step)
    if history.state != "open":
        return f"{ticket} is {history.state}: nothing to draft"
    if _drafted_already(history, agent, ticket):
        return f"{ticket} has a draft by {agent} already: not drafted again"
    if answering and login and _answered_already(history, login, ticket):
        return f"{ticket} has an answer signed by {login} already: not answered again"
    text = _ask_model(args, env, _conversation(history, step), additions)
    body = render_draft_comment(
        text,
        model=args.model,
        digest=draft_digest(text),
        ticket=ticket,
        issue_url=history.url,
        agent=agent,
    )
    body = finish(body, text=text, ticket=ticket)
    url = post_comment_once(api_url=api_url, token=token, repo=repo, number=number, body=body)
    what = f"answer by {agent}, signed as {login} (OIDC)," if answering else f"draft by {agent}"
    return f"{what} posted: {url} (sha256 {draft_digest(text)})"


def _prompt_additions(path: Path) -> str:
    """Return the editor's prompt additions, or nothing when the fork has none."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return ""
    if len(raw) > MAX_PROMPT_BYTES:
        raise ProxyError(f"{path} has {len(raw)} bytes; keep the prompt under {MAX_PROMPT_BYTES}")
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ProxyError(f"{path} is not UTF-8 text") from None


def _drafted_already(history: IssueHistory, agent: str, ticket: str) -> bool:
    """Say whether this agent's draft for ``ticket`` is posted already (a dispatch sent twice)."""
    header = f"**Suggested answer** drafted by **{escape_inline(agent)}**"
    first_step = "/" not in ticket
    return any(
        comment.body.startswith(header)
        and (draft := parse_draft_comment(comment.body)) is not None
        and (draft.ticket == ticket or (draft.ticket is None and first_step))
        for comment in history.comments
    )


def _answered_already(history: IssueHistory, login: str, ticket: str) -> bool:
    """Say whether ``login`` signed an answer for ``ticket`` already (a dispatch sent twice)."""
    return any(
        same_login(comment.author_login, login) and claimed_ticket(comment.body) == ticket
        for comment in history.comments
    )


def _conversation(history: IssueHistory, step: int) -> str:
    """Return what the model reads: the issue, then the bot's step comments up to ``step``."""
    parts = [f"# {history.title}\n\n{history.body}"]
    for comment in history.comments:
        found = find_step_number(comment.body)
        bot = same_login(comment.author_login, history.author_login)
        if bot and found is not None and 1 < found <= step:
            parts.append(comment.body)
    return "\n\n---\n\n".join(parts)


def _ask_model(
    args: argparse.Namespace, env: Mapping[str, str], conversation: str, additions: str
) -> str:
    """Ask the editor's model for the draft's text; ProxyError says what went wrong."""
    system = INSTRUCTIONS if not additions else f"{INSTRUCTIONS}\n\n{additions}"
    body = {
        "model": args.model,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": conversation},
        ],
        "stream": False,
    }
    url = args.model_url.rstrip("/") + "/chat/completions"
    if not url.startswith(("http://", "https://")):
        raise ProxyError("--model-url is not an http(s) URL: give the model's base URL, e.g. …/v1")
    headers = {"Content-Type": "application/json"}
    key = env.get(MODEL_KEY_VARIABLE)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(  # noqa: S310 (the scheme is checked above)
        url, data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=args.timeout) as response:  # noqa: S310
            raw = response.read()
    except urllib.error.HTTPError as exc:
        raise ProxyError(f"the model at {url} answered HTTP {exc.code}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        # The type only: the text of some errors quotes the request.
        raise ProxyError(f"the model at {url} is unreachable ({type(exc).__name__})") from None
    try:
        completion = read_completion(json.loads(raw))
    except (ValueError, RecursionError):
        raise ProxyError(f"the model at {url} answered no JSON") from None
    except DraftFailed as exc:
        raise ProxyError(f"the model at {url}: {exc}") from None
    text = draft_answer_text(completion.content, completion.tool_calls)
    if not text:
        raise ProxyError(f"the model at {url} returned no text and no tool call: nothing to post")
    return text
