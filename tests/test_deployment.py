"""The deployment files: an image that runs unprivileged, and a compose file of two replicas,
PostgreSQL, a load balancer for long waits and SSE, and an agent.

``docker compose config`` validates the compose file where Docker's compose plugin is
installed; elsewhere that test is skipped, saying so, and the structure is checked here.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
ENV = {
    "TICKETPROXY_GITHUB_REPO": "acme/agent-desk",
    "TICKETPROXY_GITHUB_TOKEN": "ghp_example",
    "TICKETPROXY_API_KEYS": "client-key-0123456789",
    "POSTGRES_PASSWORD": "example-password",
    "AGENT_CLIENT_KEY": "client-key-0123456789",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
}


def compose() -> dict[str, Any]:
    """Return docker-compose.yml as YAML reads it (anchors merged)."""
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def test_docker_compose_config_validates_the_compose_file() -> None:
    """``docker compose config`` accepts the compose file with its variables set."""
    try:
        version = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, text=True, timeout=20
        )
    except (FileNotFoundError, subprocess.TimeoutExpired):
        pytest.skip("docker is not installed: docker compose config cannot run here")
    if version.returncode != 0:
        pytest.skip(f"docker compose is not available here: {version.stderr.strip()[:200]}")
    result = subprocess.run(
        ["docker", "compose", "-f", "docker-compose.yml", "config", "--quiet"],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_two_replicas_share_postgres_with_data_volumes_of_their_own_and_no_redis() -> None:
    """Both replicas use the one database, each its own /data, as on separate hosts."""
    services = compose()["services"]
    replicas = [services["replica-a"], services["replica-b"]]
    assert "redis" not in services
    for replica in replicas:
        assert "postgres:5432" in replica["environment"]["TICKETPROXY_DATABASE_URL"]
        assert "TICKETPROXY_REDIS_URL" not in replica["environment"]
        assert replica["depends_on"]["postgres"]["condition"] == "service_healthy"
    volumes = [{v.split(":")[0] for v in r["volumes"] if v.endswith(":/data")} for r in replicas]
    assert volumes == [{"replica-a-data"}, {"replica-b-data"}]
    assert services["postgres"]["image"].startswith("postgres:")


def test_the_load_balancer_neither_buffers_nor_times_out_a_long_wait() -> None:
    """nginx passes SSE and heartbeats unbuffered, waits past an hour, and fails over."""
    services = compose()["services"]
    assert re.fullmatch(r"nginx:\d+\.\d+\.\d+-alpine", services["ticketproxy"]["image"])
    conf = (ROOT / "deploy" / "nginx.conf").read_text()
    assert "server replica-a:8080" in conf
    assert "server replica-b:8080" in conf
    assert "proxy_buffering off;" in conf
    read_timeout = re.search(r"proxy_read_timeout (\d+)s;", conf)
    assert read_timeout is not None
    assert int(read_timeout[1]) > 3600
    assert "proxy_next_upstream error timeout" in conf


def test_the_agent_service_runs_an_openai_client_against_the_load_balancer() -> None:
    """The agent reaches the replicas through nginx, with a client key of its own."""
    agent = compose()["services"]["agent"]
    assert agent["environment"]["OPENAI_BASE_URL"] == "http://ticketproxy:8080/v1"
    assert "/agent/agent.py" in " ".join(agent["command"])
    source = (ROOT / "deploy" / "agent.py").read_text()
    assert "openai.OpenAI(" in source
    compile(source, "agent.py", "exec")


def test_the_image_base_is_pinned_and_runs_as_a_user_that_owns_its_data() -> None:
    """The Dockerfile's base is a pinned release (tag or digest) and its user is not root."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    base = re.search(r"^FROM (\S+)", dockerfile, flags=re.MULTILINE)
    assert base is not None
    assert re.fullmatch(r"python:\d+\.\d+\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", base[1])
    assert "USER ticketproxy" in dockerfile
