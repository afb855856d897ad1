"""``docker-compose.yml`` and ``deploy/nginx.conf`` read as written, for hosts without Docker.

What the compose file says its services run is started here as real processes on loopback
(``tests/test_compose_topology.py``): only host names, ports and paths are rewritten, by the
pure functions below, which ``tests/test_deployment.py`` checks against the originals and
against ``docker-compose config`` itself.

Debian's ``nginx`` and ``docker-compose`` are looked up like PostgreSQL is: missing, a test is
skipped with the command that installs it, except under ``CI=true``, where that is a failure
(``.ci/run`` installs them).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
NGINX_CONF = ROOT / "deploy" / "nginx.conf"
ENV_EXAMPLE = ROOT / ".env.example"

# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?message}, ${NAME?message}, and $$.
_VARIABLE = re.compile(
    r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}"
)
# What nginx on loopback writes, which the image keeps under /var: the rest is as written.
_NGINX_PATHS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")


class MissingVariable(Exception):
    """A ``${NAME:?message}`` whose variable is unset or empty."""


def find_program(name: str, *, install: str, environ: Mapping[str, str] = os.environ) -> str:
    """Return the path of ``name`` (also looked for in /usr/sbin), or skip (fail in CI)."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if found is not None:
        return found
    if environ.get("CI", "").lower() == "true":
        pytest.fail(f"{name} not found in CI: .ci/run must install it ({install})")
    pytest.skip(f"{name} not found: {install}")


def read_env_file(path: Path = ENV_EXAMPLE) -> dict[str, str]:
    """Return the ``NAME=value`` lines of an env file such as ``.env.example``."""
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {name.strip(): value.strip() for name, value in pairs if not name.startswith("#")}


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """Substitute the compose file's variables in ``value`` as docker compose does."""

    def substitute(found: re.Match[str]) -> str:
        if found[0] == "$$":
            return "$"
        name, op, arg = found["name"], found["op"], found["arg"] or ""
        current = env.get(name)
        missing = current is None or (current == "" and op is not None and op.startswith(":"))
        if op in {":?", "?"} and missing:
            raise MissingVariable(f"{name}: {arg}")
        if op in {":-", "-"} and missing:
            return arg
        return current or ""

    return _VARIABLE.sub(substitute, value)


def read_compose(path: Path = COMPOSE_FILE) -> dict[str, Any]:
    """Return the compose file as YAML reads it (anchors and ``<<`` merged)."""
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def service_environment(service: str, env: Mapping[str, str]) -> dict[str, str]:
    """Return the environment the compose file gives ``service``, interpolated from ``env``."""
    written = read_compose()["services"][service].get("environment", {})
    return {name: interpolate(str(value), env) for name, value in written.items()}


def loopback_nginx_conf(text: str, *, upstreams: Mapping[str, int], listen: int, work: Path) -> str:
    """Return nginx.conf listening on loopback ``listen``, each upstream ``host:8080`` on its port.

    The files nginx writes (its access log and request-body spools) go under ``work``; every
    other line is kept as written.
    """
    for host, port in upstreams.items():
        text, count = re.subn(
            rf"(?m)^(\s*server\s+){re.escape(host)}:\d+\b", rf"\g<1>127.0.0.1:{port}", text
        )
        assert count == 1, f"nginx.conf has no single upstream server {host}"
    text, count = re.subn(r"(?m)^(\s*listen\s+)\d+;", rf"\g<1>127.0.0.1:{listen};", text)
    assert count == 1, "nginx.conf has no single listen PORT; line"
    paths = "".join(f"    {name}_temp_path {work / name};\n" for name in _NGINX_PATHS)
    spooled = f"http {{\n    access_log {work / 'access.log'};\n{paths}"
    text, count = re.subn(r"(?m)^http \{\n", lambda _: spooled, text)
    assert count == 1, "nginx.conf has no http block"
    return text


def nginx_arguments(conf: Path, work: Path) -> list[str]:
    """Return nginx's arguments for ``conf``: its error log, pid file and prefix in ``work``."""
    error_log = work / "error.log"
    return [
        "-p", str(work), "-e", str(error_log), "-c", str(conf),
        "-g", f"daemon off; pid {work / 'nginx.pid'}; error_log {error_log} info;",
    ]  # fmt: skip
