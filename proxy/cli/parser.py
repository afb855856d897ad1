"""The ``ticketproxy`` command line's arguments: one sub-command per command, and the
argparse types that check a number of seconds and a step number.
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

from auth.roles import Act
from proxy.cli.delegate import AddQuestion, AddressQuestion


def _seconds(raw: str) -> float:
    """Parse a positive, finite number of seconds (an argparse ``type``)."""
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number of seconds") from None
    # Far beyond any sensible signature lifetime, and what timedelta can still hold.
    if not math.isfinite(value) or not 0 < value <= 10**9:
        raise argparse.ArgumentTypeError(f"{raw!r} must be a positive number of seconds")
    return value


def build_parser() -> argparse.ArgumentParser:
    """Return the ``ticketproxy`` argument parser, one sub-command per command."""
    parser = argparse.ArgumentParser(
        prog="ticketproxy",
        description="An OpenAI-compatible endpoint answered by people in signed GitHub comments.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the OpenAI-compatible endpoint")
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default 8080)")

    sandbox = commands.add_parser(
        "github-sandbox", help="run only the embedded GitHub-compatible server"
    )
    sandbox.add_argument("--host", default="127.0.0.1")
    sandbox.add_argument("--port", type=int, default=8081)
    sandbox.add_argument(
        "--users", type=Path, help="users file (default DATA_DIR/sandbox-users.json)"
    )

    people = commands.add_parser("sandbox", help="manage the embedded GitHub while it runs")
    people_commands = people.add_subparsers(dest="sandbox_command", required=True)
    add_user = people_commands.add_parser(
        "add-user", help="add a person to the embedded GitHub and the keyring, no restart"
    )
    add_user.add_argument("login", help="their GitHub login in the sandbox")
    add_user.add_argument("--roles", default="editor", help="comma list: editor,reviewer")
    add_user.add_argument("--permission", choices=["write", "read", "admin"], default="write")
    add_user.add_argument("--out", type=Path, help="private key file (default DATA_DIR/LOGIN.key)")

    keygen = commands.add_parser("keygen", help="make a signing key pair and add it to the keyring")
    keygen.add_argument("--login", required=True, help="your GitHub login")
    keygen.add_argument("--roles", default="editor", help="comma list: editor,reviewer")
    keygen.add_argument("--keyring", type=Path, help="keyring file (default TICKETPROXY_KEYRING)")
    keygen.add_argument(
        "--out", type=Path, help="private key file (default ~/.ticketproxy/LOGIN.key)"
    )
    keygen.add_argument("--user-id", type=int, help="your numeric GitHub user id (checked too)")
    keygen.add_argument("--alg", choices=["EdDSA", "ES256"], default="EdDSA")
    keygen.add_argument(
        "--on-behalf-of",
        metavar="LOGIN",
        help="with --roles agent: the editor whose agent this key is",
    )

    sign = commands.add_parser("sign", help="print a signed comment for a ticket")
    sign.add_argument("--ticket", required=True, help="OWNER/REPO#NUMBER")
    _signer_arguments(sign)
    sign.add_argument("--act", choices=[a.value for a in Act], default=Act.ANSWER.value)
    sign.add_argument("--judged-sha256", help="for approve/reject: the answer's sha256")
    sign.add_argument("--ttl", type=_seconds, default=3600.0, help="seconds the signature is valid")
    sign.add_argument(
        "--ask",
        action="store_true",
        help="sign the answer as a question back (the agent asks its user; not the last step)",
    )
    sign.add_argument("file", nargs="?", default="-", help="answer text file, or - for stdin")

    delegate = commands.add_parser(
        "delegate", help="split a ticket into sub-questions for others: sign and post it"
    )
    delegate.add_argument("issue_url", help="the ticket's issue URL")
    delegate.add_argument("--key", type=Path, required=True, help="your private key file")
    delegate.add_argument(
        "--ask", dest="questions", action=AddQuestion, metavar="TEXT", help="a sub-question"
    )
    delegate.add_argument(
        "--to", action=AddressQuestion, metavar="LOGIN", help="who the --ask before it is for"
    )
    delegate.add_argument("--token", help="your GitHub token (default: $GITHUB_TOKEN)")
    delegate.add_argument("--api-url", help="GitHub API URL (default: derived from the issue URL)")
    delegate.add_argument("--step", type=_step, help="the step of the agent run to delegate")
    delegate.add_argument(
        "--ttl", type=_seconds, default=3600.0, help="seconds the signature is valid"
    )

    answer = commands.add_parser("answer", help="sign an answer and post it on the issue")
    answer.add_argument("issue_url", help="the ticket's issue URL")
    _signer_arguments(answer)
    answer.add_argument("--file", default="-", help="answer text file, or - for stdin")
    answer.add_argument("--token", help="your GitHub token (default: $GITHUB_TOKEN)")
    answer.add_argument("--api-url", help="GitHub API URL (default: derived from the issue URL)")
    answer.add_argument(
        "--ttl", type=_seconds, default=3600.0, help="seconds the signature is valid"
    )
    answer.add_argument(
        "--step",
        type=_step,
        help="the step of the agent run to answer; needed once the issue holds more than one "
        "step (never guessed), unless the URL names the step comment (default: 1)",
    )
    answer.add_argument(
        "--force",
        action="store_true",
        help="post even though the ticket's answer was already delivered",
    )
    answer.add_argument(
        "--draft",
        action="store_true",
        help="sign the model's draft on the issue, unchanged, instead of --file",
    )
    answer.add_argument(
        "--draft-by",
        metavar="LOGIN",
        help="with --draft: sign the draft LOGIN posted (a personal agent's) instead of the bot's",
    )
    answer.add_argument(
        "--ask",
        action="store_true",
        help="sign the answer as a question back (the agent asks its user; not the last step)",
    )

    agent = commands.add_parser(
        "agent-draft",
        help="draft a ticket with your own model and post it as a suggestion (personal agent)",
    )
    agent.add_argument("ticket_url", help="the ticket's issue URL")
    agent.add_argument("--model-url", required=True, help="the model's base URL, ending in /v1")
    agent.add_argument("--model", required=True, help="the model's name")
    agent.add_argument("--editor", required=True, help="whose agent this is (a GitHub login)")
    agent.add_argument(
        "--prompt-file", default=".ticketproxy/agent.md", help="your prompt additions"
    )
    agent.add_argument("--api-url", help="GitHub API URL (default: derived from the ticket URL)")
    agent.add_argument(
        "--timeout", type=_seconds, default=300.0, help="seconds to wait for the model"
    )
    agent.add_argument(
        "--oidc",
        action="store_true",
        help="opt-in: answer as the agent's own keyless identity (this job's OIDC token, needs "
        "permissions: id-token: write, and --as) instead of posting a draft",
    )
    agent.add_argument(
        "--as",
        dest="agent_login",
        metavar="LOGIN",
        help="with --oidc: the agent's account, which posts its answers (as the keyring lists it)",
    )
    agent.add_argument(
        "--ttl", type=_seconds, default=3600.0, help="with --oidc: seconds the signature is valid"
    )
    approve = commands.add_parser(
        "approve", help="show the answer awaiting review, then sign and post your approval"
    )
    _review_arguments(approve)
    approve.add_argument("--note", help="a note to post with the approval")
    reject = commands.add_parser(
        "reject", help="show the answer awaiting review, then sign and post your rejection"
    )
    _review_arguments(reject)
    reject.add_argument("--reason", required=True, help="why the answer must not be released")

    mcp = commands.add_parser(
        "mcp",
        help="serve MCP over stdio (ask_team, request_approval) for clients that start servers",
    )
    mcp.add_argument(
        "--url",
        help="a running ticketproxy (e.g. http://127.0.0.1:8080); its client key is read from"
        " $TICKETPROXY_CLIENT_KEY. Without it, the embedded default runs in this process",
    )
    mcp.add_argument("--host", help="with the embedded default: address to listen on")
    mcp.add_argument("--port", type=int, help="with the embedded default: port to listen on")

    oidc_keys = commands.add_parser(
        "oidc-keys", help="the OIDC issuer's keys the desk kept, for offline audits"
    )
    oidc_commands = oidc_keys.add_subparsers(dest="oidc_command", required=True)
    export = oidc_commands.add_parser(
        "export",
        help="write the kept keys as a JWKS file, with when each was first and last seen",
    )
    export.add_argument("--out", type=Path, metavar="FILE", help="where (default: standard output)")
    export.add_argument(
        "--issuer", help="whose keys (default: TICKETPROXY_OIDC_ISSUER, else GitHub Actions')"
    )

    audit = commands.add_parser(
        "audit", help="re-verify answered tickets offline; exit 1 on any mismatch"
    )
    target = audit.add_mutually_exclusive_group(required=True)
    target.add_argument("issue_url", nargs="?", help="one ticket's issue URL")
    target.add_argument("--repo", help="OWNER/REPO: audit every issue labelled ticketproxy")
    audit.add_argument("--keyring", type=Path, help="keyring file, with revoked keys kept")
    audit.add_argument("--policy", type=Path, help="review policy file (default: the packaged one)")
    audit.add_argument("--bot", help="login of the ticketproxy bot (default: each issue's author)")
    audit.add_argument("--json", action="store_true", help="print one JSON object per ticket")
    audit.add_argument(
        "--oidc-issuer",
        help="the OIDC issuer of agents' keyless answers, whose keys are fetched when the "
        "keyring lists oidc_agents (default: the --oidc-jwks file's, else GitHub Actions')",
    )
    audit.add_argument(
        "--oidc-jwks",
        type=Path,
        metavar="FILE",
        help="check agents' OIDC tokens with this JWKS file (`oidc-keys export`) instead of "
        "fetching the issuer's keys: offline, and after the issuer rotated its keys",
    )
    audit.add_argument(
        "--check-issuer",
        action="store_true",
        help="with --oidc-jwks: also fetch the issuer's current keys, and fail if it serves a "
        "kid of FILE with other key material",
    )
    audit.add_argument("--token", help="a GitHub token (default: $GITHUB_TOKEN)")
    audit.add_argument(
        "--api-url",
        help="GitHub API URL (default: from the issue URL; with --repo, the GitHub serve uses:"
        " TICKETPROXY_GITHUB_API_URL, the embedded one without a GitHub token, else GitHub)",
    )
    audit.add_argument(
        "--proxy-url",
        help="the ticketproxy uploaded files are fetched from; links to any other host are not"
        " followed (default: TICKETPROXY_DESK_URL, else http://127.0.0.1:8080)",
    )
    audit.add_argument(
        "--desk-token", help="the desk token for those downloads (default: $TICKETPROXY_DESK_TOKEN)"
    )
    audit.add_argument(
        "--files",
        type=Path,
        metavar="DIR",
        help="check uploaded files exported to DIR/TASK_ID/ARTIFACT_ID instead of fetching them",
    )
    return parser


def _signer_arguments(command: argparse.ArgumentParser) -> None:
    """Add who signs: a key file, or an agent's ephemeral key vouched for by OIDC."""
    signer = command.add_mutually_exclusive_group(required=True)
    signer.add_argument("--key", type=Path, help="your private key file")
    signer.add_argument(
        "--oidc",
        action="store_true",
        help="sign as a keyless agent: an ephemeral key bound to this GitHub Actions job's "
        "OIDC token (needs permissions: id-token: write, and --as)",
    )
    command.add_argument(
        "--as",
        dest="agent_login",
        metavar="LOGIN",
        help="with --oidc: the login that posts the agent's comments, as the keyring lists it",
    )


def _review_arguments(command: argparse.ArgumentParser) -> None:
    """Add the arguments ``approve`` and ``reject`` share."""
    command.add_argument("issue_url", help="the ticket's issue URL")
    command.add_argument("--key", type=Path, required=True, help="your private key file")
    command.add_argument("--token", help="your GitHub token (default: $GITHUB_TOKEN)")
    command.add_argument("--api-url", help="GitHub API URL (default: derived from the issue URL)")
    command.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    command.add_argument("--policy", type=Path, help="review policy to show findings with")
    command.add_argument(
        "--step", type=_step, help="the step of the agent run to judge (default: the newest)"
    )
    command.add_argument(
        "--ttl", type=_seconds, default=3600.0, help="seconds the signature is valid"
    )


def _step(value: str) -> int:
    """Parse a step number of an agent run (an argparse ``type``)."""
    if not re.fullmatch(r"[1-9][0-9]{0,5}", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a step number (1, 2, 3 …)")
    return int(value)
