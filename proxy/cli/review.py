"""The reviewer's commands: ``approve`` and ``reject`` show the answer awaiting review, then
sign and post the judgement on it.

A reviewer never approves an answer edited since the bot asked for review, nor their own
(see :func:`proxy.cli.rules.refuse_approval`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from datetime import timedelta

from auth.keys import SigningKey, load_signing_key
from auth.policy import ReviewPolicy
from auth.review_decision import decide
from auth.roles import Act
from auth.sign import sign_comment
from proxy.cli.github_access import audit_comments, editor_errors, editor_issue
from proxy.cli.rules import refuse_approval, ticket_to_review
from proxy.cli.terminal import shown
from proxy.errors import ProxyError
from ticketing.audit.pending import PendingAnswer, pending_answer
from ticketing.clock import utc_now
from ticketing.commands import commands_in
from ticketing.github.one_shot import fetch_issue_once, post_comment_once


def review(args: argparse.Namespace, env: Mapping[str, str], act: Act) -> int:
    """Show the answer awaiting review, then sign and post ``act`` on it; 1 if declined."""
    api_url, repo, number, token = editor_issue(args, env)
    if act is Act.REJECT and not args.reason.strip():
        raise ProxyError("--reason is empty: say why the answer must not be released")
    key = load_signing_key(args.key)
    policy = ReviewPolicy.load_or_default(args.policy)
    with editor_errors(api_url, f"issue {repo}#{number}"):
        history = fetch_issue_once(api_url=api_url, token=token, repo=repo, number=number)
    comments = audit_comments(history)
    issue = f"{repo}#{number}"
    ticket = ticket_to_review(history, comments, repo=repo, number=number, step=args.step)
    pending = pending_answer(
        comments, bot_login=history.author_login, ticket=ticket, issue_ticket=issue
    )
    if pending is None:
        raise ProxyError(
            f"no answer awaits review on {ticket}: no signed answer is on it, or the one the "
            "bot asked to review was deleted"
        )
    print(describe_pending(ticket, pending, policy))
    if act is Act.APPROVE:
        refuse_approval(pending, reviewer=key.login)
    verb = act.value
    if not args.yes and not _confirmed(f"{verb.capitalize()} this answer as {key.login}? [y/N] "):
        print(f"not {verb}d: nothing was posted")
        return 1
    body = _judgement(pending, key=key, ticket=ticket, act=act, args=args)
    with editor_errors(api_url, f"issue {ticket}"):
        url = post_comment_once(api_url=api_url, token=token, repo=repo, number=number, body=body)
    print(f"signed {'approval' if act is Act.APPROVE else 'rejection'} posted: {url}")
    return 0


def describe_pending(ticket: str, pending: PendingAnswer, policy: ReviewPolicy) -> str:
    """Return what a reviewer is shown: the answer, the commands it runs, the policy's say."""
    comment = pending.comment
    origin = (
        "the bot asked for review of"
        if pending.requested
        else "no review request from the bot; the newest signed answer is"
    )
    lines = [
        f"On {ticket}, {origin} the answer by {comment.author_login}: {comment.url}",
        f"sha256 {pending.digest}",
        "--- answer ---",
        *(f"| {line}" for line in pending.text.split("\n")),
        "--- end of answer ---",
    ]
    commands = commands_in(pending.text, ())
    if commands:
        lines.append("Commands it makes the agent run:")
        lines += [f"  {command.show()}" for command in commands]
    else:
        lines.append("It holds no command in JSON or a tool_call block.")
    decision = decide(policy, commands)
    lines.append(f"{policy.source}: {decision.required_approvals} approval(s) needed")
    lines += [f"  - {f.rule}: {f.detail}" for f in decision.findings]
    return shown("\n".join(lines))


def _confirmed(prompt: str) -> bool:
    print(prompt, end="", flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() in {"y", "yes"}


def _judgement(
    pending: PendingAnswer, *, key: SigningKey, ticket: str, act: Act, args: argparse.Namespace
) -> str:
    about = f"the answer {pending.comment.url} (sha256 {pending.digest})"
    if act is Act.APPROVE:
        note = args.note or f"Approved {about} after review."
    else:
        note = f"Rejected {about}: {args.reason.strip()}"
    return sign_comment(
        note,
        ticket=ticket,
        key=key,
        now=utc_now(),
        act=act,
        ttl=timedelta(seconds=args.ttl),
        judged_digest=pending.digest,
    )
