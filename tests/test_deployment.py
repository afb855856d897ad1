"""The deployment files: an image that runs unprivileged, and a compose file of two replicas,
PostgreSQL, a load balancer for long waits and SSE, and an agent.

Debian's ``docker-compose`` (1.29, which needs no Docker engine to read a compose file)
validates the compose file with ``.env.example``'s variables filled in, and refuses it,
naming what to set, when one it requires is unset; ``nginx -t`` checks ``deploy/nginx.conf``
with only its upstream servers pointed at loopback. ``docker compose config`` (the plugin)
runs too where it is installed, and is skipped elsewhere, saying so.
``tests/test_compose_topology.py`` runs the services themselves on loopback.
"""

from __future__ import annotations

import difflib
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.compose import (
    COMPOSE_FILE,
    ENV_EXAMPLE,
    NGINX_CONF,
    MissingVariable,
    find_program,
    interpolate,
    loopback_nginx_conf,
    nginx_arguments,
    read_compose,
    read_env_file,
    service_environment,
)

ROOT = Path(__file__).resolve().parent.parent
# A value for each of .env.example's variables that it leaves for the operator to fill in.
FILLED = {
    "TICKETPROXY_GITHUB_TOKEN": "ghp_example",
    "TICKETPROXY_API_KEYS": "client-key-0123456789",
    "POSTGRES_PASSWORD": "example-password",
    "AGENT_CLIENT_KEY": "client-key-0123456789",
    "TICKETPROXY_WEBHOOK_SECRET": "webhook-secret-0123456789abcdef",
}
REQUIRED = dict(re.findall(r"\$\{(\w+):\?([^}]*)\}", COMPOSE_FILE.read_text()))
PATH = {"PATH": "/usr/local/bin:/usr/bin:/bin"}


def filled_env(**changes: str | None) -> dict[str, str]:
    """Return .env.example's variables, filled in, with ``changes`` (None unsets one)."""
    env = {name: value or FILLED[name] for name, value in read_env_file().items()}
    env.update({name: value for name, value in changes.items() if value is not None})
    return {name: value for name, value in env.items() if changes.get(name, "") is not None}


def compose() -> dict[str, Any]:
    """Return docker-compose.yml as YAML reads it (anchors merged)."""
    return read_compose()


def docker_compose_v1(tmp_path: Path, env: dict[str, str], *arguments: str) -> Any:
    """Run Debian's ``docker-compose … config`` with ``env`` as its env file, and nothing else."""
    program = find_program("docker-compose", install="apt-get install docker-compose")
    env_file = tmp_path / "compose.env"
    env_file.write_text("".join(f"{name}={value}\n" for name, value in env.items()))
    return subprocess.run(
        [program, "-f", str(COMPOSE_FILE), "--env-file", str(env_file), "config", *arguments],
        cwd=ROOT,
        env={**PATH, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_docker_compose_config_validates_the_compose_file(tmp_path: Path) -> None:
    """``docker compose config`` (the plugin) accepts the compose file with its variables set."""
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
        env={**PATH, "HOME": str(tmp_path), **filled_env()},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_docker_compose_v1_validates_the_compose_file_with_env_example_filled_in(
    tmp_path: Path,
) -> None:
    """``docker-compose config -q`` accepts the file with .env.example's variables set."""
    result = docker_compose_v1(tmp_path, filled_env(), "-q")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_an_unset_required_variable_stops_docker_compose_config_naming_what_to_set(
    tmp_path: Path, name: str
) -> None:
    """With one required variable unset, ``docker-compose config`` fails with its message."""
    result = docker_compose_v1(tmp_path, filled_env(**{name: None}), "-q")
    assert result.returncode != 0
    assert REQUIRED[name] in result.stderr


def test_env_example_names_every_variable_the_compose_file_requires() -> None:
    """Copying .env.example to .env leaves no required variable out."""
    assert set(REQUIRED) <= set(read_env_file(ENV_EXAMPLE))


def test_the_environment_read_here_is_the_one_docker_compose_resolves(tmp_path: Path) -> None:
    """The loopback topology's reading of each service's environment matches docker-compose's."""
    result = docker_compose_v1(tmp_path, filled_env())
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)["services"]
    for service in ("replica-a", "replica-b", "agent"):
        expected = {k: str(v) for k, v in resolved[service]["environment"].items()}
        assert service_environment(service, filled_env()) == expected


def test_a_required_variable_left_empty_is_refused_by_the_reader_too() -> None:
    """``${NAME:?message}`` with NAME empty raises with the message, as compose does."""
    with pytest.raises(MissingVariable, match="set a password for the database"):
        service_environment("replica-a", filled_env(POSTGRES_PASSWORD=""))
    assert interpolate("${A-x}${B:-y}$$", {"A": "", "B": ""}) == "y$"


def test_nginx_accepts_the_load_balancer_config_with_its_upstreams_on_loopback(
    tmp_path: Path,
) -> None:
    """``nginx -t`` passes deploy/nginx.conf with only replica-a/b and the port on loopback."""
    nginx = find_program("nginx", install="apt-get install nginx")
    conf = tmp_path / "nginx.conf"
    upstreams = {"replica-a": 18001, "replica-b": 18002}
    conf.write_text(
        loopback_nginx_conf(
            NGINX_CONF.read_text(), upstreams=upstreams, listen=18003, work=tmp_path
        )
    )
    result = subprocess.run(
        [nginx, "-t", *nginx_arguments(conf, tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stderr


def test_the_loopback_nginx_conf_changes_only_upstreams_the_port_and_where_it_writes(
    tmp_path: Path,
) -> None:
    """Every line of deploy/nginx.conf is kept but its servers and listen port; logs are added."""
    original = NGINX_CONF.read_text().splitlines()
    upstreams = {"replica-a": 18001, "replica-b": 18002}
    rewritten = loopback_nginx_conf(
        "\n".join(original) + "\n", upstreams=upstreams, listen=18003, work=tmp_path
    ).splitlines()
    diff = [d for d in difflib.ndiff(original, rewritten) if d[:2] in {"- ", "+ "}]
    removed = [d[2:].strip() for d in diff if d.startswith("- ")]
    added = [d[2:].strip() for d in diff if d.startswith("+ ")]
    assert removed == [
        "server replica-a:8080 max_fails=1 fail_timeout=5s;",
        "server replica-b:8080 max_fails=1 fail_timeout=5s;",
        "listen 8080;",
    ]
    assert [line for line in added if str(tmp_path) not in line] == [
        "server 127.0.0.1:18001 max_fails=1 fail_timeout=5s;",
        "server 127.0.0.1:18002 max_fails=1 fail_timeout=5s;",
        "listen 127.0.0.1:18003;",
    ]
    written = [line for line in added if str(tmp_path) in line]
    assert len(written) == 6
    assert all(re.fullmatch(r"(access_log|\w+_temp_path) \S+;", line) for line in written)


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


def test_missing_nginx_or_docker_compose_fails_the_tests_under_ci() -> None:
    """Under CI=true a missing program is a failure naming its install, never a skip."""
    with pytest.raises(pytest.fail.Exception, match=r"apt-get install nginx"):
        find_program("no-such-nginx", install="apt-get install nginx", environ={"CI": "true"})


def test_missing_nginx_or_docker_compose_skips_locally_saying_how_to_install_it() -> None:
    """Outside CI a missing program skips its tests with the command that installs it."""
    with pytest.raises(pytest.skip.Exception, match=r"apt-get install docker-compose"):
        find_program("no-such-compose", install="apt-get install docker-compose", environ={})
