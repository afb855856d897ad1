"""The ``serve`` and ``github-sandbox`` commands: the endpoint (with the embedded GitHub when
no token or App is set) and the sandbox alone, each until SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import shlex
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TextIO

from aiohttp import web

from embedded_github import RunningSandbox, Sandbox, load_sandbox_config, start_sandbox
from proxy.access_log import AccessLog
from proxy.app import create_app
from proxy.embedded import (
    BOT_LOGIN,
    DemoIdentity,
    ensure_demo_identity,
    loopback_url,
    start_embedded_github,
)
from proxy.settings import Settings

log = logging.getLogger("ticketproxy")


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
# How long a stop waits for requests still being handled. Waiting clients are released at
# once (told to retry, see proxy.app.release_waiting_clients), so this bounds only the rest,
# such as an upstream model's answer; aiohttp's default of 60 s made a stop take minutes.
SHUTDOWN_TIMEOUT = 3.0


async def serve(settings: Settings) -> None:
    """Serve the OpenAI-compatible endpoint until SIGINT or SIGTERM (the ``serve`` command)."""
    async with serving(settings, banner=sys.stdout):
        await _wait_for_signal()
        log.info("stopping (SIGINT or SIGTERM)")


@contextlib.asynccontextmanager
async def serving(settings: Settings, *, banner: TextIO) -> AsyncIterator[str]:
    """Serve the endpoint (and the embedded GitHub) while inside; yield its ``…/v1`` URL.

    The embedded default's quickstart is written to ``banner``.
    """
    sandbox: RunningSandbox | None = None
    identity: DemoIdentity | None = None
    bot_login: str | None = None
    if settings.embedded:
        identity = ensure_demo_identity(settings)
        sandbox, settings = await start_embedded_github(settings, identity)
        bot_login = BOT_LOGIN
    try:
        # Inside the try: a setting refused while building the app still stops the sandbox.
        # Credentials in URLs (a desk token sent as ?token=) are redacted from the access log.
        runner = web.AppRunner(
            create_app(settings, bot_login=bot_login),
            access_log_class=AccessLog,
            shutdown_timeout=SHUTDOWN_TIMEOUT,
        )
        try:
            await runner.setup()
            site = web.TCPSite(runner, settings.host, settings.port, backlog=LISTEN_BACKLOG)
            await site.start()
            base = f"{_bound_url(runner)}/v1"
            if not settings.api_keys:
                log.warning("no client API keys (TICKETPROXY_API_KEYS): listening on loopback only")
            if settings.host in {"0.0.0.0", "::"} and not settings.allowed_hosts:  # noqa: S104
                log.warning(
                    "listening on every interface: requests addressed by a name other than "
                    "localhost%s are refused (DNS-rebinding guard); list the names clients "
                    "use in TICKETPROXY_ALLOWED_HOSTS",
                    "" if settings.desk_url is None else " or TICKETPROXY_DESK_URL's host",
                )
            log.info("ticketproxy serving on %s, tickets in %s", base, settings.github_repo)
            if sandbox is not None and identity is not None:
                print(
                    _banner(settings, base=base, sandbox=sandbox, identity=identity),
                    file=banner,
                    flush=True,
                )
            yield base
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
    # After a restart the repository has issues already: name the one the question opens.
    number = sandbox.sandbox.next_issue_number(settings.github_repo)
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
        f"{command} answer {web_url}/{settings.github_repo}/issues/{number} --key {key}\n"
    )


async def run_sandbox(settings: Settings, args: argparse.Namespace) -> None:
    """Run only the embedded GitHub-compatible server (the ``github-sandbox`` command)."""
    users = args.users or settings.data_dir / "sandbox-users.json"
    if args.users is None and not users.exists():
        ensure_demo_identity(settings)
    config = load_sandbox_config(users)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    sandbox = Sandbox(config, db_path=settings.data_dir / "sandbox.sqlite3")
    try:
        running = await start_sandbox(sandbox, host=args.host, port=args.port, users_file=users)
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
