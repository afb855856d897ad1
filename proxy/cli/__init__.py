"""The ``ticketproxy`` command: serve, run the GitHub sandbox, make keys, sign, answer, review.

One module per group of commands: :mod:`proxy.cli.serve` (``serve``, ``github-sandbox``),
:mod:`proxy.cli.sandbox_users` (``sandbox add-user``), :mod:`proxy.cli.keys` (``keygen``),
:mod:`proxy.cli.editor` (``sign``, ``answer``),
:mod:`proxy.cli.delegate` (``delegate``), :mod:`proxy.cli.review` (``approve``,
``reject``), :mod:`proxy.cli.audit` (``audit``), :mod:`proxy.cli.agent_draft`
(``agent-draft``, a personal agent's step) and :mod:`proxy.cli.mcp` (``mcp``).
:mod:`proxy.cli.parser` holds the arguments, :mod:`proxy.cli.rules` the editor's and
reviewer's rules as pure functions, and :mod:`proxy.cli.variables` which settings each
command reads.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Mapping, Sequence

from auth.errors import AuthError
from auth.roles import Act
from proxy.cli.agent_draft import agent_draft
from proxy.cli.audit import audit
from proxy.cli.delegate import delegate
from proxy.cli.editor import answer, sign
from proxy.cli.keys import keygen
from proxy.cli.mcp import mcp_stdio
from proxy.cli.oidc_keys import export_oidc_keys
from proxy.cli.parser import build_parser
from proxy.cli.review import review
from proxy.cli.sandbox_users import add_user
from proxy.cli.serve import run_sandbox, serve
from proxy.cli.variables import (
    LOG_VARIABLES,
    PATH_VARIABLES,
    TOKEN_VARIABLES,
    ReadNames,
    only,
    unknown_variables,
    without,
)
from proxy.errors import ProxyError
from proxy.logs import configure_logging
from proxy.settings import Settings
from ticketing.errors import TicketingError

log = logging.getLogger("ticketproxy")


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run the ``ticketproxy`` command line."""
    args = build_parser().parse_args(argv)
    env = os.environ if environ is None else environ
    try:
        configure_logging(Settings.from_env(only(env, LOG_VARIABLES)))
        if args.command == "serve":
            read = ReadNames(env)
            settings = Settings.from_env(read).with_listen(args.host, args.port)
            _warn_unknown_variables(env, read.names)
            settings.check_exposure()
            asyncio.run(serve(settings))
        elif args.command == "github-sandbox":
            asyncio.run(run_sandbox(Settings.from_env(without(env, TOKEN_VARIABLES)), args))
        elif args.command == "sandbox":
            add_user(Settings.from_env(only(env, PATH_VARIABLES)), args)
        elif args.command == "keygen":
            keygen(Settings.from_env(only(env, PATH_VARIABLES)), args, env)
        elif args.command == "sign":
            sign(args, env)
        elif args.command == "answer":
            answer(args, env)
        elif args.command == "delegate":
            delegate(args, env)
        elif args.command in {"approve", "reject"}:
            return review(args, env, Act(args.command))
        elif args.command == "audit":
            return audit(args, env)
        elif args.command == "oidc-keys":
            export_oidc_keys(args, env)
        elif args.command == "agent-draft":
            print(agent_draft(args, env))
        elif args.command == "mcp":
            read = ReadNames(env)
            mcp_stdio(args, env, lambda: Settings.from_env(read).with_listen(args.host, args.port))
    except (ProxyError, AuthError, TicketingError, OSError) as exc:
        print(f"ticketproxy: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _warn_unknown_variables(env: Mapping[str, str], known: set[str]) -> None:
    # A misspelt variable is otherwise silently ignored; its value may be a secret, so only
    # its name is logged.
    for name, close in unknown_variables(env, known):
        hint = f"; did you mean {close}?" if close else ""
        log.warning("%s is set but ticketproxy reads no such variable%s", name, hint)
