"""The ``audit`` command: re-verify answered tickets offline against the keyring and the
review policy, one verdict per step of each agent run.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from auth.keyring import Keyring
from auth.oidc import OidcTrust
from auth.policy import ReviewPolicy
from proxy.cli.audit_files import FileSource, check_files
from proxy.cli.github_access import audit_comments, editor_errors
from proxy.cli.oidc_keys import audit_trust
from proxy.cli.rules import configured_api_url, parse_issue_url
from proxy.cli.terminal import shown
from proxy.cli.variables import PATH_VARIABLES, only
from proxy.errors import ProxyError
from proxy.settings import Settings
from ticketing.audit.delegation import DELEGATED_ANSWER, DelegationAudit, audit_delegations
from ticketing.audit.files import FileCheck, listed_files
from ticketing.audit.issue import audit_issue, audit_steps
from ticketing.audit.results import TicketAudit
from ticketing.github.one_shot import IssueHistory, fetch_issue_once, fetch_tickets_once

_REPO_RE = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


def audit(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Re-verify answered tickets offline and print each verdict; 1 on any mismatch."""
    keyring_path = args.keyring or Settings.from_env(only(env, PATH_VARIABLES)).keyring_path
    keyring = Keyring.load(keyring_path)
    policy = ReviewPolicy.load_or_default(args.policy)
    # Agents' keyless answers: the issuer's keys as published now, or as --oidc-jwks kept them.
    oidc, issuer_problems = audit_trust(args, keyring)
    token = args.token or env.get("GITHUB_TOKEN") or env.get("TICKETPROXY_GITHUB_TOKEN")
    if args.issue_url:
        api_url, repo, number = parse_issue_url(args.issue_url)
        api_url = args.api_url or api_url
        with editor_errors(api_url, f"issue {repo}#{number}"):
            issues: Sequence[IssueHistory] = (
                fetch_issue_once(api_url=api_url, token=token, repo=repo, number=number),
            )
    else:
        repo, (api_url, where) = args.repo, configured_api_url(env)
        if args.api_url:
            api_url, where = args.api_url, "--api-url"
        if _REPO_RE.fullmatch(repo) is None:
            raise ProxyError(f"--repo {repo!r} is not OWNER/REPO")
        print(f"auditing {repo} on {api_url} ({where})", file=sys.stderr)
        with editor_errors(api_url, f"repository {repo}"):
            issues = fetch_tickets_once(api_url=api_url, token=token, repo=repo)
    files = FileSource.from_args(args, env)
    _print_issuer_problems(oidc, issuer_problems, as_json=args.json)
    mismatches = 0
    audited = 0
    checks: list[FileCheck] = []
    children: set[int] = set()
    for issue in issues:
        if issue.number in children:
            continue  # audited with its delegated parent, under its own reference
        comments = audit_comments(issue)
        bot_login = args.bot or issue.author_login
        # One audit per step of an agent run, each under its own ticket reference.
        results = audit_steps(
            f"{repo}#{issue.number}",
            comments,
            keyring_history=keyring,
            bot_login=bot_login,
            policy=policy,
            oidc=oidc,
        )
        audits = [(result, issue) for result in results]
        split = audit_delegations(
            f"{repo}#{issue.number}", comments, keyring_history=keyring, bot_login=bot_login
        )
        if split.problems or split.notes:
            audits[0] = (_with_delegation(audits[0][0], split), issue)
        for number in split.children:
            children.add(number)
            with editor_errors(api_url, f"issue {repo}#{number}"):
                child = fetch_issue_once(api_url=api_url, token=token, repo=repo, number=number)
            result = audit_issue(
                f"{repo}#{number}",
                audit_comments(child),
                keyring_history=keyring,
                bot_login=bot_login,
                policy=policy,
                oidc=oidc,
                released_as=DELEGATED_ANSWER,
            )
            audits.append((result, child))
        for result, shown_issue in audits:
            audited += 1
            mismatches += result.verdict == "mismatch"
            if args.json:
                line = {**result.to_json(), "issue_url": shown_issue.url}
                print(json.dumps(line, ensure_ascii=False))
            else:
                print(shown(_audit_text(result, shown_issue)))
        listed = listed_files(issue.body, comments, bot_login=bot_login)
        if listed:
            if not checks:
                print(files.describe(), file=sys.stderr)
            found = check_files(listed, files)
            checks += found
            _print_files(f"{repo}#{issue.number}", issue, found, as_json=args.json)
    failed = sum(check.result == "mismatch" for check in checks)
    if not args.json:
        print(f"{audited} ticket(s) audited, {mismatches} mismatch(es)" + _files_summary(checks))
    return 1 if mismatches or failed or issuer_problems else 0


def _print_issuer_problems(
    oidc: OidcTrust | None, problems: Sequence[str], *, as_json: bool
) -> None:
    """Print, before any ticket, what is wrong with the OIDC issuer's keys themselves."""
    if not problems or oidc is None:
        return
    if as_json:
        print(json.dumps({"oidc_issuer": oidc.issuer, "problems": list(problems)}))
    else:
        lines = [f"OIDC issuer {oidc.issuer}: mismatch"]
        print(shown("\n".join(lines + [f"  problem: {p}" for p in problems])))


def _with_delegation(result: TicketAudit, split: DelegationAudit) -> TicketAudit:
    """Add to a parent's audit what its delegations came to: a mismatch if one fails."""
    problems = (*result.problems, *split.problems)
    verdict = "mismatch" if split.problems else result.verdict
    return replace(result, verdict=verdict, problems=problems, notes=(*result.notes, *split.notes))


def _print_files(
    ref: str, issue: IssueHistory, found: Sequence[FileCheck], *, as_json: bool
) -> None:
    """Print an issue's uploaded files as the audit found them."""
    if as_json:
        line = {"issue": ref, "issue_url": issue.url, "files": [c.to_json() for c in found]}
        print(json.dumps(line, ensure_ascii=False))
    else:
        print(
            shown(
                "\n".join(
                    [f"{ref}: uploaded files ({issue.url})"] + [f"  {c.line()}" for c in found]
                )
            )
        )


def _files_summary(checks: Sequence[FileCheck]) -> str:
    if not checks:
        return ""
    count = {
        result: sum(c.result == result for c in checks)
        for result in ("matches", "mismatch", "not checked")
    }
    return (
        f"; {len(checks)} uploaded file(s): {count['matches']} match(es), "
        f"{count['mismatch']} digest mismatch(es), {count['not checked']} not checked"
    )


def _audit_text(result: TicketAudit, issue: IssueHistory) -> str:
    """Return one ticket's audit as the lines a person reads."""

    def when(value: datetime) -> str:
        return f"{value.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"

    lines = [f"{result.ticket}: {result.verdict} ({issue.url})"]
    if result.answer is not None:
        a = result.answer
        lines.append(
            f"  answered by {a.signer} (key {a.kid}, jti {a.jti}) signed {when(a.signed_at)}, "
            f"posted {when(a.posted_at)}: {a.comment_url}"
        )
        if a.agent is not None:
            lines.append(f"  answered by {a.agent}")
    if result.released_at is not None:
        lines.append(f"  delivery recorded by the bot at {when(result.released_at)}")
    if result.required_approvals is not None:
        lines.append(f"  approvals required by the review policy: {result.required_approvals}")
    lines += [
        f"  approved by {r.signer} (key {r.kid}, jti {r.jti}) at {when(r.posted_at)}: "
        f"{r.comment_url}"
        for r in result.approvals
    ]
    if result.rejection is not None:
        r = result.rejection
        lines.append(f"  rejected by {r.signer} (key {r.kid}) at {when(r.posted_at)}")
    if result.verdict == "unanswered":
        lines.append(f"  state {issue.state}, labels: {', '.join(issue.labels) or 'none'}")
    lines += [f"  problem: {problem}" for problem in result.problems]
    lines += [f"  note: {note}" for note in result.notes]
    if result.created_files:
        lines.append(
            "  files the agent created, covered by the answer's signature: "
            + ", ".join(result.created_files)
        )
    return "\n".join(lines)
