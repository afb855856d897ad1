"""docker-compose.yml's services as real processes on loopback, for a host without Docker.

The embedded GitHub stands in for github.com, the session's PostgreSQL for the ``postgres``
service (a ``ticketproxy`` role and database, as the image creates them), and each service
the compose file describes runs as it says: two ``ticketproxy serve`` replicas with exactly
the ``x-replica`` environment, interpolated from ``.env``-style values; Debian's nginx with
``deploy/nginx.conf``; ``deploy/agent.py`` with the agent's environment. Only host names,
ports and paths change (``postgres:5432``, ``replica-a:8080``, ``ticketproxy:8080``,
``/config/keyring.json``, ``/data``), each replica getting a data directory of its own, plus
a shorter heartbeat, which the compose file leaves at its default.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

import psycopg
from psycopg import sql

from tests.helpers.compose import (
    NGINX_CONF,
    ROOT,
    find_program,
    loopback_nginx_conf,
    nginx_arguments,
    read_env_file,
    service_environment,
)
from tests.helpers.deployment import REPO, Deployment, free_port
from tests.helpers.postgres import PostgresServer
from tests.helpers.processes import Child, alive_or_fail, healthy, wait_until

REPLICAS = ("replica-a", "replica-b")
# .env values that make the file fast: the compose file reads both from the environment.
FAST = {"TICKETPROXY_POLL_INTERVAL": "0.2", "TICKETPROXY_POLL_LEASE": "1"}
HEARTBEAT = "0.3"  # TICKETPROXY_HEARTBEAT_INTERVAL: 2 s by default, not set by the compose file


class Topology:
    """The compose file's replicas, nginx and agent, started on loopback."""

    def __init__(self, deployment: Deployment, database: PostgresServer) -> None:
        """Fill in the .env values, create the database and start both replicas and nginx."""
        self.deployment = deployment
        self.database = database
        self.client_key = secrets.token_urlsafe(24)
        password = secrets.token_urlsafe(16)
        self.env = {
            **read_env_file(),
            "TICKETPROXY_GITHUB_REPO": REPO,
            "TICKETPROXY_GITHUB_TOKEN": deployment.bot.token,
            "TICKETPROXY_GITHUB_API_URL": deployment.api_url,
            "TICKETPROXY_API_KEYS": self.client_key,
            "POSTGRES_PASSWORD": password,
            "AGENT_CLIENT_KEY": self.client_key,
            **FAST,
        }
        _create_database(database, password)
        deployment.database_url = database.url("ticketproxy")  # what Deployment.query reads
        self.ports = {name: free_port() for name in REPLICAS}
        self.replicas: dict[str, Child] = {}
        for name in REPLICAS:
            self.start_replica(name)
        self.port = free_port()
        self.work = Path(tempfile.mkdtemp(prefix="ticketproxy-nginx-"))
        # nginx started as root runs its workers as nobody, who must reach its spool dirs.
        self.work.chmod(0o755)
        self.nginx = self._start_nginx()

    def replica_env(self, name: str) -> dict[str, str]:
        """Return the compose file's environment of replica ``name``, moved onto loopback."""
        env = service_environment(name, self.env)
        assert env["TICKETPROXY_KEYRING"] == "/config/keyring.json"
        url = env["TICKETPROXY_DATABASE_URL"]
        assert "@postgres:5432/" in url
        return {
            **env,
            "TICKETPROXY_KEYRING": str(self.deployment.keyring),
            "TICKETPROXY_DATABASE_URL": url.replace("@postgres:5432/", f"@{self._db_host}/"),
            # The image's TICKETPROXY_DATA_DIR, a volume of the replica's own.
            "TICKETPROXY_DATA_DIR": str(self.deployment.tmp / name),
            "TICKETPROXY_HEARTBEAT_INTERVAL": HEARTBEAT,
        }

    @property
    def _db_host(self) -> str:
        return f"127.0.0.1:{self.database.port}"

    def start_replica(self, name: str) -> None:
        """Start (or start again) replica ``name`` on its port and data directory."""
        self.replicas[name] = self.deployment.start_serve(self.ports[name], self.replica_env(name))

    def kill_9(self, name: str) -> None:
        """SIGKILL replica ``name``."""
        self.replicas[name].kill_9()

    def ensure_running(self) -> None:
        """Start again any replica a test killed, and wait until nginx sends to it."""
        for name, child in self.replicas.items():
            if not child.alive():
                self.start_replica(name)
                self._wait_until_nginx_reaches(name)

    def _wait_until_nginx_reaches(self, name: str) -> None:
        """Wait until nginx sends a request to ``name`` (past a failure's fail_timeout)."""
        replica = self.replicas[name]
        seen = len(replica.output())

        def reached() -> bool:
            return healthy(self.port) and "GET /healthz" in replica.output()[seen:]

        wait_until(reached, within=15, what=f"nginx to send to {name} again")

    def serving(self, number: int) -> str:
        """Return the replica that opened issue ``number`` (and so holds its first client)."""
        line = f"/issues/{number}\n"

        def opened() -> list[str]:
            return [name for name, child in self.replicas.items() if line in child.output()]

        # The issue is on GitHub a moment before its replica logs so.
        found = wait_until(opened, within=5, what=f"the replica that opened #{number}")
        assert len(found) == 1, f"issue #{number} opened by {found}"
        return str(found[0])

    def _start_nginx(self) -> Child:
        nginx = find_program("nginx", install="apt-get install nginx")
        conf = self.work / "nginx.conf"
        upstreams = {name: self.ports[name] for name in REPLICAS}
        conf.write_text(
            loopback_nginx_conf(
                NGINX_CONF.read_text(), upstreams=upstreams, listen=self.port, work=self.work
            )
        )
        child = self._child(nginx_arguments(conf, self.work), {}, "nginx", program=Path(nginx))
        wait_until(
            lambda: alive_or_fail(child) and healthy(self.port),
            within=15,
            what="nginx to pass /healthz to a replica",
        )
        return child

    def start_agent(self, question: str) -> Child:
        """Run deploy/agent.py with the agent service's environment, pointed at nginx."""
        env = service_environment("agent", {**self.env, "AGENT_QUESTION": question})
        assert env["OPENAI_BASE_URL"] == "http://ticketproxy:8080/v1"
        env["OPENAI_BASE_URL"] = f"http://127.0.0.1:{self.port}/v1"
        script = [str(ROOT / "deploy" / "agent.py")]
        return self._child(script, env, "agent", program=Path(sys.executable))

    def _child(self, argv: list[str], env: dict[str, str], name: str, *, program: Path) -> Child:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.work), **env}
        log = self.deployment.tmp / f"{name}-{len(self.deployment.children)}.log"
        child = Child(argv, env, log, program=program)
        self.deployment.children.append(child)
        return child

    def nginx_errors(self) -> str:
        """Return what nginx has logged so far (connections refused by a dead replica, say)."""
        return (self.work / "error.log").read_text()

    def close(self) -> None:
        """Stop every process and remove nginx's directory."""
        self.deployment.close()
        shutil.rmtree(self.work, ignore_errors=True)


def _create_database(server: PostgresServer, password: str) -> None:
    """Create the role and database the postgres image makes of POSTGRES_USER and _DB."""
    with psycopg.connect(server.url(), autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS ticketproxy WITH (FORCE)")
        admin.execute("DROP ROLE IF EXISTS ticketproxy")
        admin.execute(
            sql.SQL("CREATE ROLE ticketproxy LOGIN SUPERUSER PASSWORD {}").format(
                sql.Literal(password)
            )
        )
        admin.execute("CREATE DATABASE ticketproxy OWNER ticketproxy")
