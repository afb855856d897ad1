"""The ``ticketproxy`` command: serve, run the GitHub sandbox, make keys, sign, answer, review."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import os
import re
import shlex
import signal
import sys
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlparse

from aiohttp import web

from auth.audit import (
    NEEDS_REVIEW,
    AuditComment,
    PendingAnswer,
    TicketAudit,
    audit_steps,
    bot_records,
    pending_answer,
)
from auth.errors import AuthError
from auth.keyring import Keyring, add_key_to_keyring
from auth.keys import SigningKey, generate_signing_key, load_signing_key, write_signing_key
from auth.logins import same_login
from auth.policy import ReviewPolicy, commands_in, decide
from auth.roles import Act, Role
from auth.sign import sign_comment
from embedded_github import RunningSandbox, Sandbox, load_sandbox_config, start_sandbox
from ticketing.errors import GitHubError, TicketingError
from ticketing.github.client import GITHUB_API_URL
from ticketing.github.interface import Comment
from ticketing.github.one_shot import (
    IssueHistory,
    fetch_issue_once,
    fetch_tickets_once,
    post_comment_once,
)
from ticketing.references import parse_ticket_reference, ticket_reference
from ticketing.render.drafts import DRAFT_REPLY_KIND, parse_draft_comment
from ticketing.render.replies import REPLY_MARKER_PREFIX
from ticketing.render.ticket import find_step_number

from .app import create_app
from .embedded import (
    BOT_LOGIN,
    DemoIdentity,
    ensure_demo_identity,
    loopback_url,
    start_embedded_github,
)
from .errors import ProxyError
from .logs import configure_logging
from .settings import Settings

log = logging.getLogger("ticketproxy")

# Where a private key goes, and which keyring it joins, depend on these variables only:
# keygen must not fail on an unrelated setting (an editor's own GITHUB_TOKEN, say).
_PATH_VARIABLES = ("TICKETPROXY_DATA_DIR", "TICKETPROXY_KEYRING")
# A token or an App in the environment means "use real GitHub" to serve, but the sandbox
# has its own.
_TOKEN_VARIABLES = (
    "TICKETPROXY_GITHUB_TOKEN",
    "GITHUB_TOKEN",
    "TICKETPROXY_GITHUB_APP_ID",
    "TICKETPROXY_GITHUB_APP_PRIVATE_KEY",
    "TICKETPROXY_GITHUB_APP_PRIVATE_KEY_FILE",
    "TICKETPROXY_GITHUB_APP_INSTALLATION_ID",
)
_ISSUE_NUMBER_RE = re.compile(r"[1-9][0-9]*")
_REPO_RE = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
# Characters a terminal does not show as themselves (escapes, bidi overrides, zero-width
# joiners): shown as \uXXXX, so an answer cannot hide what a reviewer approves.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Zl", "Zp"})


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


def _parser() -> argparse.ArgumentParser:
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

    keygen = commands.add_parser("keygen", help="make a signing key pair and add it to the keyring")
    keygen.add_argument("--login", required=True, help="your GitHub login")
    keygen.add_argument("--roles", default="editor", help="comma list: editor,reviewer")
    keygen.add_argument("--keyring", type=Path, help="keyring file (default TICKETPROXY_KEYRING)")
    keygen.add_argument(
        "--out", type=Path, help="private key file (default ~/.ticketproxy/LOGIN.key)"
    )
    keygen.add_argument("--user-id", type=int, help="your numeric GitHub user id (checked too)")
    keygen.add_argument("--alg", choices=["EdDSA", "ES256"], default="EdDSA")

    sign = commands.add_parser("sign", help="print a signed comment for a ticket")
    sign.add_argument("--ticket", required=True, help="OWNER/REPO#NUMBER")
    sign.add_argument("--key", type=Path, required=True, help="your private key file")
    sign.add_argument("--act", choices=[a.value for a in Act], default=Act.ANSWER.value)
    sign.add_argument("--judged-sha256", help="for approve/reject: the answer's sha256")
    sign.add_argument("--ttl", type=_seconds, default=3600.0, help="seconds the signature is valid")
    sign.add_argument("file", nargs="?", default="-", help="answer text file, or - for stdin")

    answer = commands.add_parser("answer", help="sign an answer and post it on the issue")
    answer.add_argument("issue_url", help="the ticket's issue URL")
    answer.add_argument("--key", type=Path, required=True, help="your private key file")
    answer.add_argument("--file", default="-", help="answer text file, or - for stdin")
    answer.add_argument("--token", help="your GitHub token (default: $GITHUB_TOKEN)")
    answer.add_argument("--api-url", help="GitHub API URL (default: derived from the issue URL)")
    answer.add_argument(
        "--ttl", type=_seconds, default=3600.0, help="seconds the signature is valid"
    )
    answer.add_argument(
        "--step", type=_step, help="the step of the agent run to answer (default: the newest)"
    )
    answer.add_argument(
        "--draft",
        action="store_true",
        help="sign the model's draft on the issue, unchanged, instead of --file",
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
    audit.add_argument("--token", help="a GitHub token (default: $GITHUB_TOKEN)")
    audit.add_argument("--api-url", help="GitHub API URL (default: from the issue URL, or GitHub)")
    return parser


def _review_arguments(command: argparse.ArgumentParser) -> None:
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


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run the ``ticketproxy`` command line."""
    args = _parser().parse_args(argv)
    env = os.environ if environ is None else environ
    try:
        configure_logging(env)
        if args.command == "serve":
            settings = Settings.from_env(env).with_listen(args.host, args.port)
            settings.check_exposure()
            asyncio.run(_serve(settings, env))
        elif args.command == "github-sandbox":
            asyncio.run(_sandbox(Settings.from_env(_without(env, _TOKEN_VARIABLES)), args))
        elif args.command == "keygen":
            _keygen(Settings.from_env(_only(env, _PATH_VARIABLES)), args, env)
        elif args.command == "sign":
            sys.stdout.write(_signed_text(args.key, args.ticket, _read(args.file), args) + "\n")
        elif args.command == "answer":
            _answer(args, env)
        elif args.command in {"approve", "reject"}:
            return _review(args, env, Act(args.command))
        elif args.command == "audit":
            return _audit(args, env)
    except (ProxyError, AuthError, TicketingError, OSError) as exc:
        print(f"ticketproxy: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _only(env: Mapping[str, str], names: Sequence[str]) -> dict[str, str]:
    return {name: env[name] for name in names if name in env}


def _without(env: Mapping[str, str], names: Sequence[str]) -> dict[str, str]:
    return {name: value for name, value in env.items() if name not in names}


def _read(name: str) -> str:
    try:
        if name == "-":
            return sys.stdin.read()
        return Path(name).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        source = "standard input" if name == "-" else name
        raise ProxyError(f"{source} is not UTF-8 text; save the answer as UTF-8") from None


async def _wait_for_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()


# Connections not yet accepted. aiohttp's default of 128 overflows when many agents connect
# at once (after a restart, thousands re-attach): the kernel then drops their SYNs, and
# clients back off for seconds at a time until their connect timeout fails them. The kernel
# caps this at net.core.somaxconn (4096 by default since Linux 5.4).
LISTEN_BACKLOG = 4096


async def _serve(settings: Settings, environ: Mapping[str, str]) -> None:
    sandbox: RunningSandbox | None = None
    identity: DemoIdentity | None = None
    bot_login: str | None = None
    if settings.embedded:
        identity = ensure_demo_identity(settings)
        sandbox, settings = await start_embedded_github(settings, identity)
        bot_login = BOT_LOGIN
    try:
        # Inside the try: a setting refused while building the app still stops the sandbox.
        runner = web.AppRunner(create_app(settings, bot_login=bot_login, environ=environ))
        try:
            await runner.setup()
            site = web.TCPSite(runner, settings.host, settings.port, backlog=LISTEN_BACKLOG)
            await site.start()
            base = f"{_bound_url(runner)}/v1"
            if not settings.api_keys:
                log.warning("no client API keys (TICKETPROXY_API_KEYS): listening on loopback only")
            log.info("ticketproxy serving on %s, tickets in %s", base, settings.github_repo)
            if sandbox is not None and identity is not None:
                print(_banner(settings, base=base, sandbox=sandbox, identity=identity), flush=True)
            await _wait_for_signal()
        finally:
            await runner.cleanup()
    finally:
        if sandbox is not None:
            await sandbox.stop()
            sandbox.sandbox.close()


def _bound_url(runner: web.AppRunner) -> str:
    host, port = runner.addresses[0][:2]
    shown = f"[{host}]" if ":" in str(host) else str(host)
    return loopback_url(f"http://{shown}:{port}")


def _banner(
    settings: Settings, *, base: str, sandbox: RunningSandbox, identity: DemoIdentity
) -> str:
    """Return the quickstart text: where things are, how to ask, and how to answer."""
    web_url = loopback_url(sandbox.web_url).rstrip("/")
    api_url = loopback_url(sandbox.api_url)
    # Absolute paths, so the commands work from any directory, not only the checkout.
    bin_dir = Path(sys.executable).parent
    python = shlex.quote(sys.executable)
    script = bin_dir / "ticketproxy"
    command = shlex.quote(str(script)) if script.exists() else "ticketproxy"
    key = shlex.quote(str(identity.editor_key.absolute()))
    client_key = "YOUR_CLIENT_KEY" if settings.api_keys else "unused"
    return (
        f"\nticketproxy is ready: OpenAI base URL {base}\n"
        f"Embedded GitHub (no TICKETPROXY_GITHUB_TOKEN set): {web_url}/ "
        f"(API {api_url}, repository {settings.github_repo})\n\n"
        "Ask it something (another shell):\n"
        f"  OPENAI_BASE_URL={base} OPENAI_API_KEY={client_key} {python} -c "
        "'from openai import OpenAI; print(OpenAI().chat.completions.create("
        'model="gpt-4o", messages=[{"role": "user", "content": "Say hello"}]'
        ").choices[0].message.content)'\n\n"
        f"Answer it as the demo editor {identity.editor.login} (a third shell; "
        f"the issue is listed at {web_url}/):\n"
        f"  echo 'Hello from a human' | GITHUB_TOKEN={identity.editor.token} "
        f"{command} answer {web_url}/{settings.github_repo}/issues/1 --key {key}\n"
    )


async def _sandbox(settings: Settings, args: argparse.Namespace) -> None:
    users = args.users or settings.data_dir / "sandbox-users.json"
    if args.users is None and not users.exists():
        ensure_demo_identity(settings)
    config = load_sandbox_config(users)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    sandbox = Sandbox(config, db_path=settings.data_dir / "sandbox.sqlite3")
    try:
        running = await start_sandbox(sandbox, host=args.host, port=args.port)
        try:
            print(
                f"GitHub sandbox: pages {loopback_url(running.web_url)} "
                f"API {loopback_url(running.api_url)}",
                flush=True,
            )
            await _wait_for_signal()
        finally:
            await running.stop()
    finally:
        sandbox.close()


def _roles(raw: str) -> list[Role]:
    known = ", ".join(role.value for role in Role)
    names = [name.strip() for name in raw.split(",") if name.strip()]
    unknown = [name for name in names if name not in {role.value for role in Role}]
    if unknown:
        raise ProxyError(f"unknown role {', '.join(unknown)} in --roles: use {known}")
    if not names:
        raise ProxyError(f"--roles is empty: give at least one of {known}")
    return [Role(name) for name in names]


def _keygen(settings: Settings, args: argparse.Namespace, env: Mapping[str, str]) -> None:
    # Check everything before the key is written, so an error leaves no orphan key file.
    roles = _roles(args.roles)
    if args.user_id is not None and args.user_id <= 0:
        raise ProxyError(f"--user-id {args.user_id} is not a GitHub account id (a positive number)")
    keyring = args.keyring or settings.keyring_path
    if keyring.exists():
        Keyring.load(keyring)  # a broken keyring fails here, not after the key is on disk
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    out = args.out or home / ".ticketproxy" / f"{args.login}.key"
    key = generate_signing_key(login=args.login, alg=args.alg)
    out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    keyring.parent.mkdir(parents=True, exist_ok=True)
    write_signing_key(out, key)
    add_key_to_keyring(keyring, key, roles=roles, user_id=args.user_id)
    print(f"private key: {out} (mode 0600; keep it on this machine)")
    print(f"public key {key.kid} for {args.login} ({', '.join(roles)}) added to {keyring}")


def _signed_text(key_path: Path, ticket: str, text: str, args: argparse.Namespace) -> str:
    act = Act(getattr(args, "act", Act.ANSWER.value))
    if act is Act.ANSWER and not text.strip():
        raise ProxyError("the answer is empty: give its text in the file or on standard input")
    key = load_signing_key(key_path)
    return sign_comment(
        text,
        ticket=ticket,
        key=key,
        now=datetime.now(UTC),
        act=act,
        ttl=timedelta(seconds=args.ttl),
        judged_digest=getattr(args, "judged_sha256", None),
    )


def parse_issue_url(url: str) -> tuple[str, str, int]:
    """Split an issue URL into (API URL, OWNER/REPO, number).

    Takes the page address (``https://github.com/OWNER/REPO/issues/12``, the same on GitHub
    Enterprise and the sandbox) or the issue's API address (``.../repos/OWNER/REPO/issues/12``).
    """
    parsed = urlparse(url)
    parts = [p for p in parsed.path.split("/") if p]
    host = parsed.hostname
    if parsed.scheme not in {"http", "https"} or not host:
        raise ProxyError(
            f"{url!r} is not an issue URL like https://github.com/OWNER/REPO/issues/12"
        )
    origin = f"{parsed.scheme}://{parsed.netloc}"
    if host == "api.github.com" and parts[:1] == ["repos"]:
        api, parts = GITHUB_API_URL, parts[1:]
    elif parts[:3] == ["api", "v3", "repos"]:
        api, parts = f"{origin}/api/v3", parts[3:]
    elif host in {"github.com", "www.github.com"}:
        api = GITHUB_API_URL
    else:
        # GitHub Enterprise and the embedded sandbox serve the API under /api/v3.
        api = f"{origin}/api/v3"
    if len(parts) != 4 or parts[2] != "issues":
        raise ProxyError(
            f"{url!r} is not an issue URL like https://github.com/OWNER/REPO/issues/12"
        )
    owner, repo, _, number = parts
    if not _ISSUE_NUMBER_RE.fullmatch(number):
        raise ProxyError(f"{url!r} does not end in an issue number")
    return api, f"{owner}/{repo}", int(number)


def _step(value: str) -> int:
    if not re.fullmatch(r"[1-9][0-9]{0,5}", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a step number (1, 2, 3 …)")
    return int(value)


def newest_step(history: IssueHistory) -> int:
    """Return the newest step of the agent run on an issue: 1 unless the bot posted steps."""
    steps = [
        step
        for comment in history.comments
        if same_login(comment.author_login, history.author_login)
        for step in [find_step_number(comment.body)]
        if step is not None
    ]
    return max(steps, default=1)


def _step_to_answer(args: argparse.Namespace, history: IssueHistory, repo: str) -> int:
    """Return the step to sign for: ``--step``, the step comment the URL points at, or 1.

    An issue that holds later steps of an agent run needs the step named: guessing "the
    newest" could sign an answer written for one step for another that opened meanwhile.
    """
    if args.step is not None:
        return int(args.step)
    fragment = re.fullmatch(r"issuecomment-([1-9][0-9]{0,18})", urlparse(args.issue_url).fragment)
    if fragment is not None:
        comment = next((c for c in history.comments if c.id == int(fragment.group(1))), None)
        step = None if comment is None else find_step_number(comment.body)
        if (
            comment is None
            or step is None
            or not same_login(comment.author_login, history.author_login)
        ):
            raise ProxyError(
                f"{args.issue_url} does not point at one of the bot's step comments on "
                f"{repo}#{history.number}: pass the issue's URL with --step N"
            )
        return step
    newest = newest_step(history)
    if newest > 1:
        raise ProxyError(
            f"{repo}#{history.number} holds steps 1 to {newest} of an agent run: say which one "
            f"you answer with --step (the newest is --step {newest}), or pass its step "
            "comment's URL"
        )
    return 1


def _editor_issue(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[str, str, int, str]:
    """Return (API URL, OWNER/REPO, number, the editor's own token) for an issue command."""
    api_url, repo, number = parse_issue_url(args.issue_url)
    token = args.token or env.get("GITHUB_TOKEN") or env.get("TICKETPROXY_EDITOR_TOKEN")
    if not token:
        raise ProxyError("no GitHub token: pass --token or set GITHUB_TOKEN to your own token")
    return args.api_url or api_url, repo, number, token


def _answer(args: argparse.Namespace, env: Mapping[str, str]) -> None:
    api_url, repo, number, token = _editor_issue(args, env)
    if args.draft and args.file != "-":
        raise ProxyError("give either --draft or --file, not both")
    with _editor_errors(api_url, f"issue {repo}#{number}"):
        history = fetch_issue_once(api_url=api_url, token=token, repo=repo, number=number)
    ticket = ticket_reference(repo, number, _step_to_answer(args, history, repo))
    text = _draft_text(history, ticket) if args.draft else _read(args.file)
    body = _signed_text(args.key, ticket, text, args)
    with _editor_errors(api_url, f"issue {repo}#{number}"):
        url = post_comment_once(api_url=api_url, token=token, repo=repo, number=number, body=body)
    print(f"signed answer posted: {url} (signed for {ticket})")


def _draft_text(history: IssueHistory, ticket: str) -> str:
    """Return the exact text of the newest draft the bot posted for this ticket."""
    # Only the bot (the issue's author) posts drafts: a look-alike by anyone else is ignored.
    # A draft made for another step of the run is never signed for this one.
    marker = f"{REPLY_MARKER_PREFIX}{DRAFT_REPLY_KIND} -->"
    posted = [
        comment
        for comment in history.comments
        if same_login(comment.author_login, history.author_login) and marker in comment.body
    ]
    drafts = [(c, d) for c in posted if (d := parse_draft_comment(c.body)) is not None]
    step_one = parse_ticket_reference(ticket)[2] == 1
    mine = [(c, d) for c, d in drafts if d.ticket == ticket or (d.ticket is None and step_one)]
    if not mine:
        altered = len(posted) > len(drafts)
        raise ProxyError(
            f"no draft for {ticket}: "
            + (
                "a draft on the issue was changed after the bot posted it, so its text cannot"
                " be trusted as drafted: copy it, check it, and pass it with --file"
                if altered and not drafts
                else "the bot has posted no suggested answer for it; write the answer yourself"
                " and pass it with --file"
            )
        )
    newest, draft = max(mine, key=lambda pair: (pair[0].created_at, pair[0].id))
    print(f"signing the draft {newest.url} (sha256 {draft.digest}) unchanged for {ticket}")
    return draft.text


@contextlib.contextmanager
def _editor_errors(api_url: str, what: str) -> Iterator[None]:
    """Say what a person running the CLI can do about GitHub's 401 and 404."""
    try:
        yield
    except GitHubError as exc:
        # The shared messages speak to the server's operator (TICKETPROXY_*); this is a user.
        if exc.status == 401:
            raise ProxyError(
                f"GitHub at {api_url} rejected your token (401 Bad credentials): pass your own "
                "token with --token or set GITHUB_TOKEN"
            ) from None
        if exc.status == 404:
            raise ProxyError(
                f"{what} was not found at {api_url} (404): check the URL "
                "and that your token (GITHUB_TOKEN or --token) can see the repository"
            ) from None
        raise


# --- review: approve, reject, audit -------------------------------------------------------


def _audit_comments(history: IssueHistory) -> tuple[AuditComment, ...]:
    return tuple(_audit_comment(comment) for comment in history.comments)


def _audit_comment(comment: Comment) -> AuditComment:
    return AuditComment(
        id=comment.id,
        author_login=comment.author_login,
        author_id=comment.author_id,
        body=comment.body,
        created_at=comment.created_at,
        updated_at=comment.updated_at,
        url=comment.url,
    )


def _shown(text: str) -> str:
    """Return text with every character a terminal would hide or act on made visible."""
    return "".join(
        f"\\u{ord(char):04x}"
        if char not in "\n\t" and unicodedata.category(char) in _HIDDEN_CATEGORIES
        else char
        for char in text
    )


def _review(args: argparse.Namespace, env: Mapping[str, str], act: Act) -> int:
    api_url, repo, number, token = _editor_issue(args, env)
    if act is Act.REJECT and not args.reason.strip():
        raise ProxyError("--reason is empty: say why the answer must not be released")
    key = load_signing_key(args.key)
    policy = ReviewPolicy.load_or_default(args.policy)
    with _editor_errors(api_url, f"issue {repo}#{number}"):
        history = fetch_issue_once(api_url=api_url, token=token, repo=repo, number=number)
    comments = _audit_comments(history)
    issue = f"{repo}#{number}"
    asked = bot_records(comments, kind=NEEDS_REVIEW, bot_login=history.author_login)
    if args.step is not None:
        ticket = ticket_reference(repo, number, args.step)
    elif asked:
        # The step the bot's newest review request is about (an agent run's issue has several).
        ticket = asked[-1].ticket or issue
    else:
        ticket = ticket_reference(repo, number, newest_step(history))
    pending = pending_answer(
        comments, bot_login=history.author_login, ticket=ticket, issue_ticket=issue
    )
    if pending is None:
        raise ProxyError(
            f"no answer awaits review on {ticket}: no signed answer is on it, or the one the "
            "bot asked to review was deleted"
        )
    print(_describe_pending(ticket, pending, policy))
    if act is Act.APPROVE:
        if pending.edited:
            raise ProxyError(
                "the answer was edited after the bot asked for review (its text no longer has "
                f"sha256 {pending.digest}); do not approve it: ask for a new signed answer"
            )
        if same_login(key.login, pending.comment.author_login):
            raise ProxyError(
                f"you ({key.login}) wrote this answer; another reviewer must approve it"
            )
    verb = act.value
    if not args.yes and not _confirmed(f"{verb.capitalize()} this answer as {key.login}? [y/N] "):
        print(f"not {verb}d: nothing was posted")
        return 1
    body = _judgement(pending, key=key, ticket=ticket, act=act, args=args)
    with _editor_errors(api_url, f"issue {ticket}"):
        url = post_comment_once(api_url=api_url, token=token, repo=repo, number=number, body=body)
    print(f"signed {'approval' if act is Act.APPROVE else 'rejection'} posted: {url}")
    return 0


def _describe_pending(ticket: str, pending: PendingAnswer, policy: ReviewPolicy) -> str:
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
    return _shown("\n".join(lines))


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
        now=datetime.now(UTC),
        act=act,
        ttl=timedelta(seconds=args.ttl),
        judged_digest=pending.digest,
    )


def _audit(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    keyring_path = args.keyring or Settings.from_env(_only(env, _PATH_VARIABLES)).keyring_path
    keyring = Keyring.load(keyring_path)
    policy = ReviewPolicy.load_or_default(args.policy)
    token = args.token or env.get("GITHUB_TOKEN") or env.get("TICKETPROXY_GITHUB_TOKEN")
    if args.issue_url:
        api_url, repo, number = parse_issue_url(args.issue_url)
        api_url = args.api_url or api_url
        with _editor_errors(api_url, f"issue {repo}#{number}"):
            issues: Sequence[IssueHistory] = (
                fetch_issue_once(api_url=api_url, token=token, repo=repo, number=number),
            )
    else:
        repo, api_url = args.repo, args.api_url or GITHUB_API_URL
        if _REPO_RE.fullmatch(repo) is None:
            raise ProxyError(f"--repo {repo!r} is not OWNER/REPO")
        with _editor_errors(api_url, f"repository {repo}"):
            issues = fetch_tickets_once(api_url=api_url, token=token, repo=repo)
    mismatches = 0
    audited = 0
    for issue in issues:
        # One audit per step of an agent run, each under its own ticket reference.
        results = audit_steps(
            f"{repo}#{issue.number}",
            _audit_comments(issue),
            keyring_history=keyring,
            bot_login=args.bot or issue.author_login,
            policy=policy,
        )
        for result in results:
            audited += 1
            mismatches += result.verdict == "mismatch"
            if args.json:
                print(json.dumps({**result.to_json(), "issue_url": issue.url}, ensure_ascii=False))
            else:
                print(_shown(_audit_text(result, issue)))
    if not args.json:
        print(f"{audited} ticket(s) audited, {mismatches} mismatch(es)")
    return 1 if mismatches else 0


def _audit_text(result: TicketAudit, issue: IssueHistory) -> str:
    def when(value: datetime) -> str:
        return f"{value.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"

    lines = [f"{result.ticket}: {result.verdict} ({issue.url})"]
    if result.answer is not None:
        a = result.answer
        lines.append(
            f"  answered by {a.signer} (key {a.kid}, jti {a.jti}) signed {when(a.signed_at)}, "
            f"posted {when(a.posted_at)}: {a.comment_url}"
        )
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
    return "\n".join(lines)
