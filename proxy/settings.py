"""Configuration, read once at start-up from an injected mapping (normally ``os.environ``).

``Settings.from_env`` is the one place that reads the environment: the server's settings,
the desk token, the log level and format, and the upstream keys the routes file names. The
rest of the proxy takes its values from ``Settings``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from proxy.agent_route_settings import read_agent_routes
from proxy.draft_settings import read_draft_settings
from proxy.errors import ConfigError
from proxy.github_app_settings import read_github_app
from proxy.routing import upstream_key_variables
from proxy.setting_values import (
    log_settings,
    parse_allowed_hosts,
    parse_allowed_origins,
    parse_api_keys,
    parse_database_url,
    parse_desk_token,
    parse_desk_url,
    parse_github_api_url,
    parse_metrics_token,
    parse_models,
    parse_oidc_issuer,
    parse_port,
    parse_redis_url,
    parse_repo,
    parse_tree_after_steps,
    parse_webhook_secret,
    read_flag,
    read_number,
    read_step_wait,
)
from ticketing.agent_routes import AgentRoute

DEFAULT_HEARTBEAT_INTERVAL = 2.0
DEFAULT_MODELS = ("gpt-4", "gpt-4-turbo", "gpt-4o", "gpt-3.5-turbo")
DEFAULT_SANDBOX_REPO = "acme/agents"


@dataclass(frozen=True)
class Settings:
    """Everything ticketproxy needs to know to serve; secrets stay out of ``repr``."""

    github_repo: str = DEFAULT_SANDBOX_REPO
    github_token: str | None = field(default=None, repr=False)
    github_api_url: str | None = None
    keyring_path: Path = Path("data/keyring.json")
    api_keys: tuple[str, ...] = field(default=(), repr=False)
    data_dir: Path = Path("data")
    poll_interval: float = 5.0
    # With several replicas, how long a dead poller's lease blocks another from polling.
    poll_lease: float = 15.0
    max_wait: float = 3600.0
    # Inside httpx's default 5 s read timeout, for clients that send no x-stainless-read-timeout.
    heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL
    models: tuple[str, ...] = DEFAULT_MODELS
    max_body_bytes: int = 4 * 1024 * 1024
    # Seconds a request body may take to arrive in full, from the handler's first read: a
    # client trickling its body would otherwise hold a connection (and its buffer) forever.
    body_timeout: float = 30.0
    # Seconds a connection may take to send a request's whole header section, counted from
    # its opening (or from the previous response); also how long an idle keep-alive
    # connection stays open. A client trickling its headers is cut after this.
    header_timeout: float = 65.0
    # Seconds POST /ap/v1/agent/tasks/{id}/steps waits for people before it answers
    # "running": well under the 300 s after which agent-protocol-client gives up.
    step_wait: float = 60.0
    # The largest file a client may upload to a task (Agent Protocol artifacts).
    max_artifact_bytes: int = 10 * 1024 * 1024
    host: str = "127.0.0.1"
    port: int = 8080
    sandbox_port: int = 8081
    lock_issues: bool = True
    # Past this many steps a run's later steps open as child issues (0: always).
    tree_after_steps: int = 50
    # ticketproxy's own pace for content creation, below GitHub's secondary limits.
    # 10% under GitHub's 80/min and 500/h: requests queue behind each other on the way
    # out, so they reach GitHub a little bunched compared with when they were paced.
    writes_per_minute: float = 72.0
    writes_per_hour: float = 450.0
    # TOML table of model routes (people or an upstream model) and aliases; see proxy.routing.
    routes_path: Path | None = None
    # The secret of GitHub's issue_comment webhook; None turns POST /github/webhook off.
    webhook_secret: str | None = field(default=None, repr=False)
    # TOML review policy (which answers need reviewers); None means the shipped default.
    review_policy_path: Path | None = None
    # Whose personal agents draft which tickets (TICKETPROXY_AGENT_ROUTES); none by default.
    agent_routes: tuple[AgentRoute, ...] = ()
    # A GitHub App installation instead of a token: all three or none (see read_github_app).
    github_app_id: str | None = None
    github_app_private_key: str | None = field(default=None, repr=False)
    github_app_installation_id: int | None = None
    # Redis shared by several replicas (key locks, jtis, poll lease, wake-ups); None: alone.
    # Out of repr: the URL may carry a password.
    redis_url: str | None = field(default=None, repr=False)
    # The PostgreSQL ticket store shared by replicas on several hosts; None: SQLite in
    # data_dir. Out of repr, like the Redis URL: it may carry a password.
    database_url: str | None = field(default=None, repr=False)
    # An OpenAI-compatible model that drafts a suggested answer per ticket; None: no drafts.
    # Out of repr, like the Redis URL: a URL may carry credentials.
    draft_url: str | None = field(default=None, repr=False)
    # Its key, sent as a bearer token; never logged, never in repr.
    draft_key: str | None = field(default=None, repr=False)
    # The model to ask; None asks for the ticket's own model.
    draft_model: str | None = None
    draft_timeout: float = 120.0
    # Where editors open the answer page, for the link on every ticket; None: derived from
    # host and port when they name one address (see answer_page_url).
    desk_url: str | None = None
    # Bearer token /metrics asks for; None: /metrics is open (a private network's usual).
    metrics_token: str | None = field(default=None, repr=False)
    # The one OIDC issuer whose tokens may vouch for keyless agents (auth.oidc_comment);
    # None: none is trusted. Its keys are fetched from ISSUER/.well-known/jwks.
    oidc_issuer: str | None = "https://token.actions.githubusercontent.com"
    # Bearer token the answer page asks for; None: it answers loopback clients only.
    desk_token: str | None = field(default=None, repr=False)
    # Host names the server answers besides its own, TICKETPROXY_DESK_URL's and localhost
    # (a name behind a load balancer, say); "*" turns the Host check off. See origin_checks.
    allowed_hosts: tuple[str, ...] = ()
    # Browser origins allowed besides the server's own (scheme://host[:port]).
    allowed_origins: tuple[str, ...] = ()
    # What the log shows (a logging level name) and how ("text" or "json" lines).
    log_level: str = "INFO"
    log_format: str = "text"
    # The upstream models' keys, by the variable names the routes file gives in api_key_env.
    upstream_keys: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def embedded(self) -> bool:
        """Say whether ticketproxy runs its own GitHub-compatible server (no token, no App)."""
        return self.github_token is None and self.github_app_id is None

    @property
    def store_path(self) -> Path:
        """Return where the ticket store lives."""
        return self.data_dir / "tickets.sqlite3"

    @property
    def answer_page_url(self) -> str | None:
        """Return the answer page's address that tickets link to, or None if unknown."""
        if self.desk_url is not None:
            return self.desk_url
        try:
            address = ipaddress.ip_address(self.host)
        except ValueError:
            return f"http://{self.host}:{self.port}/desk/"
        if address.is_unspecified:
            # Listening everywhere says nothing about the name editors reach it by.
            return None
        shown = f"[{address}]" if address.version == 6 else str(address)
        return f"http://{shown}:{self.port}/desk/"

    @property
    def drafting(self) -> bool:
        """Say whether an upstream model drafts suggested answers for tickets."""
        return self.draft_url is not None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Build settings from environment variables, failing with the variable's name."""
        # First, so a bad log setting is the error shown whatever else is wrong.
        log_level, log_format = log_settings(environ)
        data_dir = Path(environ.get("TICKETPROXY_DATA_DIR", "data"))
        token = environ.get("TICKETPROXY_GITHUB_TOKEN") or environ.get("GITHUB_TOKEN") or None
        repo = environ.get("TICKETPROXY_GITHUB_REPO")
        app_id, app_key, installation_id = read_github_app(environ, token=token)
        if repo is None and (token is not None or app_id is not None):
            credential = "a GitHub token" if app_id is None else "a GitHub App"
            raise ConfigError(
                f"TICKETPROXY_GITHUB_REPO is not set: with {credential}, name the repository "
                "that holds the tickets, e.g. TICKETPROXY_GITHUB_REPO=acme/agent-desk"
            )
        routes_path = (
            Path(environ["TICKETPROXY_ROUTES"]) if environ.get("TICKETPROXY_ROUTES") else None
        )
        key_variables = () if routes_path is None else upstream_key_variables(routes_path)
        settings = cls(
            github_repo=parse_repo(repo or DEFAULT_SANDBOX_REPO),
            github_token=token,
            github_api_url=parse_github_api_url(environ.get("TICKETPROXY_GITHUB_API_URL")),
            keyring_path=Path(environ.get("TICKETPROXY_KEYRING", str(data_dir / "keyring.json"))),
            api_keys=parse_api_keys(environ.get("TICKETPROXY_API_KEYS", "")),
            data_dir=data_dir,
            poll_interval=read_number(environ, "TICKETPROXY_POLL_INTERVAL", 5.0, low=0.01),
            poll_lease=read_number(environ, "TICKETPROXY_POLL_LEASE", 15.0, low=0.1),
            max_wait=read_number(environ, "TICKETPROXY_MAX_WAIT", 3600.0, low=1.0),
            heartbeat_interval=read_number(
                environ, "TICKETPROXY_HEARTBEAT_INTERVAL", DEFAULT_HEARTBEAT_INTERVAL, low=0.01
            ),
            models=parse_models(environ.get("TICKETPROXY_MODELS"), default=DEFAULT_MODELS),
            max_body_bytes=int(
                read_number(environ, "TICKETPROXY_MAX_BODY_BYTES", 4 << 20, low=1024, unit="bytes")
            ),
            body_timeout=read_number(environ, "TICKETPROXY_BODY_TIMEOUT", 30.0, low=0.01),
            header_timeout=read_number(environ, "TICKETPROXY_HEADER_TIMEOUT", 65.0, low=0.01),
            step_wait=read_step_wait(environ),
            max_artifact_bytes=int(
                read_number(
                    environ, "TICKETPROXY_MAX_ARTIFACT_BYTES", 10 << 20, low=1, unit="bytes"
                )
            ),
            sandbox_port=parse_port(
                environ.get("TICKETPROXY_SANDBOX_PORT") or "8081", "TICKETPROXY_SANDBOX_PORT"
            ),
            lock_issues=read_flag(environ, "TICKETPROXY_LOCK_ISSUES", True),
            oidc_issuer=parse_oidc_issuer(environ.get("TICKETPROXY_OIDC_ISSUER")),
            tree_after_steps=parse_tree_after_steps(environ.get("TICKETPROXY_TREE_AFTER_STEPS")),
            writes_per_minute=read_number(
                environ, "TICKETPROXY_WRITES_PER_MINUTE", 72.0, low=1.0, unit="writes per minute"
            ),
            writes_per_hour=read_number(
                environ, "TICKETPROXY_WRITES_PER_HOUR", 450.0, low=1.0, unit="writes per hour"
            ),
            routes_path=routes_path,
            webhook_secret=parse_webhook_secret(environ.get("TICKETPROXY_WEBHOOK_SECRET")),
            review_policy_path=Path(environ["TICKETPROXY_REVIEW_POLICY"])
            if environ.get("TICKETPROXY_REVIEW_POLICY")
            else None,
            github_app_id=app_id,
            github_app_private_key=app_key,
            github_app_installation_id=installation_id,
            redis_url=parse_redis_url(environ.get("TICKETPROXY_REDIS_URL")),
            database_url=parse_database_url(environ.get("TICKETPROXY_DATABASE_URL")),
            desk_url=parse_desk_url(environ.get("TICKETPROXY_DESK_URL")),
            metrics_token=parse_metrics_token(environ.get("TICKETPROXY_METRICS_TOKEN")),
            desk_token=parse_desk_token(environ.get("TICKETPROXY_DESK_TOKEN")),
            allowed_hosts=parse_allowed_hosts(environ.get("TICKETPROXY_ALLOWED_HOSTS")),
            allowed_origins=parse_allowed_origins(environ.get("TICKETPROXY_ALLOWED_ORIGINS")),
            log_level=log_level,
            log_format=log_format,
            upstream_keys={name: environ[name] for name in key_variables if name in environ},
        )
        settings = replace(settings, **read_draft_settings(environ))
        settings = replace(settings, agent_routes=read_agent_routes(environ))
        return settings

    def with_listen(self, host: str | None, port: int | None) -> Settings:
        """Return these settings listening on ``host``/``port`` (the ``serve`` flags)."""
        return replace(
            self,
            host=self.host if host is None else host,
            port=self.port if port is None else parse_port(str(port), "--port"),
        )

    def check_exposure(self) -> None:
        """Refuse to listen beyond loopback without client API keys."""
        if self.api_keys or is_loopback(self.host):
            return
        raise ConfigError(
            f"refusing to listen on {self.host} without client API keys: set "
            "TICKETPROXY_API_KEYS=key1,key2 (any agent that can reach the port could otherwise "
            "open tickets), or listen on 127.0.0.1"
        )


def is_loopback(host: str) -> bool:
    """Say whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
