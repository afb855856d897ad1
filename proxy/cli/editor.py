"""The editor's commands: ``sign`` prints a signed comment, ``answer`` signs and posts one.

``answer`` never guesses the step of an agent run (see :func:`proxy.cli.rules.step_to_answer`),
and ``answer --draft`` signs the bot's draft for that step exactly as drafted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

from auth.keys import load_signing_key
from auth.roles import Act
from auth.sign import sign_comment
from proxy.cli.github_access import audit_comments, editor_errors, editor_issue
from proxy.cli.oidc_token import sign_as_agent
from proxy.cli.rules import draft_to_sign, refuse_delivered, step_to_answer
from proxy.errors import ProxyError
from ticketing.clock import utc_now
from ticketing.github.one_shot import IssueHistory, fetch_issue_once, post_comment_once
from ticketing.references import ticket_reference


def sign(args: argparse.Namespace, env: Mapping[str, str]) -> None:
    """Print the signed comment for ``--ticket`` (the ``sign`` command)."""
    sys.stdout.write(_signed_text(args.ticket, _read_text(args.file), args, env) + "\n")


def answer(args: argparse.Namespace, env: Mapping[str, str]) -> None:
    """Sign an answer for the issue's ticket and post it (the ``answer`` command)."""
    api_url, repo, number, token = editor_issue(args, env)
    if args.draft and args.file != "-":
        raise ProxyError("give either --draft or --file, not both")
    if args.draft_by is not None and not args.draft:
        raise ProxyError("--draft-by names whose draft --draft signs: give --draft too")
    with editor_errors(api_url, f"issue {repo}#{number}"):
        history = fetch_issue_once(api_url=api_url, token=token, repo=repo, number=number)
    step = step_to_answer(history, repo=repo, issue_url=args.issue_url, step=args.step)
    ticket = ticket_reference(repo, number, step)
    if not args.force:
        refuse_delivered(
            history, audit_comments(history), ticket=ticket, issue_ticket=f"{repo}#{number}"
        )
    text = _draft_text(history, ticket, args.draft_by) if args.draft else _read_text(args.file)
    body = _signed_text(ticket, text, args, env)
    with editor_errors(api_url, f"issue {repo}#{number}"):
        url = post_comment_once(api_url=api_url, token=token, repo=repo, number=number, body=body)
    print(f"signed answer posted: {url} (signed for {ticket})")


def _draft_text(history: IssueHistory, ticket: str, posted_by: str | None) -> str:
    """Return the exact text of the newest draft the bot (or ``posted_by``) posted here."""
    newest, draft = draft_to_sign(history, ticket, posted_by=posted_by)
    print(f"signing the draft {newest.url} (sha256 {draft.digest}) unchanged for {ticket}")
    return draft.text


def _read_text(name: str) -> str:
    """Return the UTF-8 text of file ``name``, or of standard input for ``-``."""
    try:
        if name == "-":
            return sys.stdin.read()
        return Path(name).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        source = "standard input" if name == "-" else name
        raise ProxyError(f"{source} is not UTF-8 text; save the answer as UTF-8") from None


def _signed_text(ticket: str, text: str, args: argparse.Namespace, env: Mapping[str, str]) -> str:
    """Return ``text`` signed for ``ticket`` with ``--key`` (or ``--oidc``), as ``args`` ask."""
    act = Act(getattr(args, "act", Act.ANSWER.value))
    if act is Act.DELEGATE:
        raise ProxyError(
            "a delegation names its sub-questions: use `ticketproxy delegate ISSUE_URL --key K"
            " --ask TEXT [--to LOGIN] ...`"
        )
    if act is Act.ANSWER and not text.strip():
        raise ProxyError("the answer is empty: give its text in the file or on standard input")
    ask = bool(getattr(args, "ask", False))
    if ask and act is not Act.ANSWER:
        raise ProxyError("--ask marks an answer as a question back; an approval cannot ask")
    if getattr(args, "oidc", False):
        if act is not Act.ANSWER:
            raise ProxyError("--oidc signs an agent's answer; an agent never approves or rejects")
        login = getattr(args, "agent_login", None)
        ttl = timedelta(seconds=args.ttl)
        return sign_as_agent(text, ticket=ticket, login=login, env=env, ttl=ttl, ask=ask)
    return sign_comment(
        text,
        ticket=ticket,
        key=load_signing_key(args.key),
        now=utc_now(),
        act=act,
        ttl=timedelta(seconds=args.ttl),
        judged_digest=getattr(args, "judged_sha256", None),
        ask=ask,
    )
