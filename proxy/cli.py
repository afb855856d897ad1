"""The ``ticketproxy`` command: serve, run the GitHub sandbox, make keys, sign and answer."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlparse

from aiohttp import web

from auth.errors import AuthError
from auth.keyring import add_key_to_keyring
from auth.keys import generate_signing_key, load_signing_key, write_signing_key
from auth.roles import Act, Role
from auth.sign import sign_comment
from ticketing.errors import TicketingError
from ticketing.github_client import GITHUB_API_URL, post_comment_once
from ticketing.sandbox import Sandbox, load_sandbox_config, start_sandbox

from .app import create_app
from .embedded import BOT_LOGIN, ensure_demo_identity, start_embedded_github
from .errors import ProxyError
from .settings import Settings

log = logging.getLogger("ticketproxy")


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
    sign.add_argument("--ttl", type=float, default=3600.0, help="seconds the signature is valid")
    sign.add_argument("file", nargs="?", default="-", help="answer text file, or - for stdin")

    answer = commands.add_parser("answer", help="sign an answer and post it on the issue")
    answer.add_argument("issue_url", help="the ticket's issue URL")
    answer.add_argument("--key", type=Path, required=True, help="your private key file")
    answer.add_argument("--file", default="-", help="answer text file, or - for stdin")
    answer.add_argument("--token", help="your GitHub token (default: $GITHUB_TOKEN)")
    answer.add_argument("--api-url", help="GitHub API URL (default: derived from the issue URL)")
    answer.add_argument("--ttl", type=float, default=3600.0, help="seconds the signature is valid")
    return parser


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run the ``ticketproxy`` command line."""
    args = _parser().parse_args(argv)
    env = os.environ if environ is None else environ
    logging.basicConfig(
        level=env.get("TICKETPROXY_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    try:
        if args.command == "serve":
            settings = Settings.from_env(env).with_listen(args.host, args.port)
            settings.check_exposure()
            asyncio.run(_serve(settings))
        elif args.command == "github-sandbox":
            asyncio.run(_sandbox(Settings.from_env(env), args))
        elif args.command == "keygen":
            _keygen(Settings.from_env(env), args)
        elif args.command == "sign":
            sys.stdout.write(_signed_text(args.key, args.ticket, _read(args.file), args) + "\n")
        elif args.command == "answer":
            _answer(args, env)
    except (ProxyError, AuthError, TicketingError, OSError) as exc:
        print(f"ticketproxy: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _read(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    return Path(name).read_text(encoding="utf-8")


async def _wait_for_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def _serve(settings: Settings) -> None:
    sandbox = None
    bot_login: str | None = None
    if settings.embedded:
        identity = ensure_demo_identity(settings)
        sandbox, settings = await start_embedded_github(settings, identity)
        bot_login = BOT_LOGIN
    runner = web.AppRunner(create_app(settings, bot_login=bot_login))
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    await site.start()
    base = f"http://{settings.host}:{settings.port}/v1"
    if not settings.api_keys:
        log.warning("no client API keys (TICKETPROXY_API_KEYS): listening on loopback only")
    log.info("ticketproxy serving on %s, tickets in %s", base, settings.github_repo)
    if sandbox is not None:
        web_url = sandbox.web_url.rstrip("/")
        print(
            f"\nticketproxy is ready: OpenAI base URL {base}\n"
            f"Embedded GitHub (no TICKETPROXY_GITHUB_TOKEN set): {web_url}/ "
            f"(API {sandbox.api_url}, repository {settings.github_repo})\n\n"
            "Ask it something (another shell):\n"
            f"  OPENAI_BASE_URL={base} OPENAI_API_KEY=unused .venv/bin/python -c "
            "'from openai import OpenAI; print(OpenAI().chat.completions.create("
            'model="gpt-4o", messages=[{"role": "user", "content": "Say hello"}]'
            ").choices[0].message.content)'\n\n"
            f"Answer it as the demo editor {identity.editor.login} (a third shell; "
            f"the issue is listed at {web_url}/):\n"
            f"  echo 'Hello from a human' | GITHUB_TOKEN={identity.editor.token} "
            f".venv/bin/ticketproxy answer {web_url}/{settings.github_repo}/issues/1 "
            f"--key {identity.editor_key}\n",
            flush=True,
        )
    try:
        await _wait_for_signal()
    finally:
        await runner.cleanup()
        if sandbox is not None:
            await sandbox.stop()


async def _sandbox(settings: Settings, args: argparse.Namespace) -> None:
    users = args.users or settings.data_dir / "sandbox-users.json"
    if args.users is None and not users.exists():
        ensure_demo_identity(settings)
    config = load_sandbox_config(users)
    sandbox = Sandbox(config, db_path=settings.data_dir / "sandbox.sqlite3")
    running = await start_sandbox(sandbox, host=args.host, port=args.port)
    print(f"GitHub sandbox: pages {running.web_url} API {running.api_url}", flush=True)
    try:
        await _wait_for_signal()
    finally:
        await running.stop()


def _keygen(settings: Settings, args: argparse.Namespace) -> None:
    roles = [Role(r.strip()) for r in args.roles.split(",") if r.strip()]
    keyring = args.keyring or settings.keyring_path
    out = args.out or Path.home() / ".ticketproxy" / f"{args.login}.key"
    out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = generate_signing_key(login=args.login, alg=args.alg)
    write_signing_key(out, key)
    add_key_to_keyring(keyring, key, roles=roles, user_id=args.user_id)
    print(f"private key: {out} (mode 0600; keep it on this machine)")
    print(f"public key {key.kid} for {args.login} ({', '.join(roles)}) added to {keyring}")


def _signed_text(key_path: Path, ticket: str, text: str, args: argparse.Namespace) -> str:
    key = load_signing_key(key_path)
    return sign_comment(
        text,
        ticket=ticket,
        key=key,
        now=datetime.now(UTC),
        act=Act(getattr(args, "act", Act.ANSWER.value)),
        ttl=timedelta(seconds=args.ttl),
        judged_digest=getattr(args, "judged_sha256", None),
    )


def parse_issue_url(url: str) -> tuple[str, str, int]:
    """Split an issue URL into (API URL, OWNER/REPO, number)."""
    parsed = urlparse(url)
    parts = [p for p in parsed.path.split("/") if p]
    if parsed.scheme not in {"http", "https"} or len(parts) < 4 or parts[-2] != "issues":
        raise ProxyError(
            f"{url!r} is not an issue URL like https://github.com/OWNER/REPO/issues/12"
        )
    if not parts[-1].isdigit():
        raise ProxyError(f"{url!r} does not end in an issue number")
    owner, repo = parts[-4], parts[-3]
    if parsed.hostname == "github.com":
        api = GITHUB_API_URL
    else:
        # GitHub Enterprise and the embedded sandbox serve the API under /api/v3.
        api = f"{parsed.scheme}://{parsed.netloc}/api/v3"
    return api, f"{owner}/{repo}", int(parts[-1])


def _answer(args: argparse.Namespace, env: Mapping[str, str]) -> None:
    api_url, repo, number = parse_issue_url(args.issue_url)
    token = args.token or env.get("GITHUB_TOKEN") or env.get("TICKETPROXY_EDITOR_TOKEN")
    if not token:
        raise ProxyError("no GitHub token: pass --token or set GITHUB_TOKEN to your own token")
    body = _signed_text(args.key, f"{repo}#{number}", _read(args.file), args)
    url = post_comment_once(
        api_url=args.api_url or api_url, token=token, repo=repo, number=number, body=body
    )
    print(f"signed answer posted: {url}")
