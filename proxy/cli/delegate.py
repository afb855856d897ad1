"""The ``delegate`` command: an editor signs a split of a ticket into sub-questions, and posts it.

``--ask TEXT`` adds a sub-question; a ``--to LOGIN`` right after it addresses that one to a
login from the keyring. The comment's text is the delegation rendered as a numbered list
(:func:`auth.delegation.render_delegations`), signed together with the ``delegate`` claim.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from auth.delegation import Delegation, render_delegations
from auth.keys import load_signing_key
from auth.logins import is_valid_login
from auth.roles import Act
from auth.sign import sign_comment
from proxy.cli.github_access import editor_errors, editor_issue
from proxy.cli.rules import step_to_answer
from proxy.errors import ProxyError
from ticketing.clock import utc_now
from ticketing.github.one_shot import fetch_issue_once, post_comment_once
from ticketing.references import ticket_reference

__all__ = ["AddQuestion", "AddressQuestion", "delegate", "signed_delegation"]


class AddQuestion(argparse.Action):
    """``--ask TEXT``: one more sub-question, addressed to nobody until a ``--to``."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        """Append the sub-question."""
        asked: list[Delegation] = list(getattr(namespace, self.dest, None) or [])
        asked.append(Delegation(ask=str(values)))
        setattr(namespace, self.dest, asked)


class AddressQuestion(argparse.Action):
    """``--to LOGIN``: address the sub-question just given."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        """Set the addressee of the last ``--ask``; refuse one without it, or a second."""
        asked: list[Delegation] = list(getattr(namespace, "questions", None) or [])
        login = str(values).removeprefix("@")
        if not asked or asked[-1].to is not None:
            parser.error("--to addresses the --ask just before it: give --ask TEXT --to LOGIN")
        if not is_valid_login(login):
            parser.error(f"--to {values!r} is not a GitHub login")
        asked[-1] = Delegation(ask=asked[-1].ask, to=login)
        namespace.questions = asked


def signed_delegation(
    ticket: str, questions: Sequence[Delegation], args: argparse.Namespace
) -> str:
    """Return the comment body delegating ``ticket`` into ``questions``, signed with ``--key``."""
    if not questions:
        raise ProxyError("give at least one sub-question: --ask TEXT [--to LOGIN]")
    return sign_comment(
        render_delegations(questions),
        ticket=ticket,
        key=load_signing_key(args.key),
        now=utc_now(),
        act=Act.DELEGATE,
        ttl=timedelta(seconds=args.ttl),
        delegations=questions,
    )


def delegate(args: argparse.Namespace, env: Mapping[str, str]) -> None:
    """Sign the delegation of the issue's ticket and post it (the ``delegate`` command)."""
    questions: list[Delegation] = list(args.questions or [])
    if not questions:
        raise ProxyError("give at least one sub-question: --ask TEXT [--to LOGIN]")
    api_url, repo, number, token = editor_issue(args, env)
    with editor_errors(api_url, f"issue {repo}#{number}"):
        history = fetch_issue_once(api_url=api_url, token=token, repo=repo, number=number)
    step = step_to_answer(history, repo=repo, issue_url=args.issue_url, step=args.step)
    ticket = ticket_reference(repo, number, step)
    body = signed_delegation(ticket, questions, args)
    with editor_errors(api_url, f"issue {repo}#{number}"):
        url = post_comment_once(api_url=api_url, token=token, repo=repo, number=number, body=body)
    print(f"signed delegation posted: {url} (signed for {ticket}, {len(questions)} sub-questions)")
