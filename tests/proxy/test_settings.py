"""Tests for proxy.settings: configuration from an injected mapping, failing with the name."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy.errors import ConfigError
from proxy.settings import DEFAULT_MODELS, Settings, is_loopback

TOKEN = "ghp_" + "T0kenT0kenT0kenT0kenT0kenT0kenT0ke"
KEYS = "client-key-aaaaaaaaaaaa,client-key-bbbbbbbbbbbb"


def test_empty_environment_gives_the_documented_defaults() -> None:
    """No variables: the embedded sandbox, loopback, data/ and the default timings."""
    settings = Settings.from_env({})
    assert settings.github_repo == "acme/agents"
    assert settings.github_token is None
    assert settings.embedded is True
    assert settings.github_api_url is None
    assert settings.data_dir == Path("data")
    assert settings.keyring_path == Path("data/keyring.json")
    assert settings.store_path == Path("data/tickets.sqlite3")
    assert settings.api_keys == ()
    assert settings.poll_interval == 5.0
    assert settings.max_wait == 3600.0
    assert settings.heartbeat_interval == 2.0
    assert settings.models == DEFAULT_MODELS
    assert settings.max_body_bytes == 4 * 1024 * 1024
    assert (settings.host, settings.port, settings.sandbox_port) == ("127.0.0.1", 8080, 8081)
    assert settings.lock_issues is True


def test_every_variable_is_parsed() -> None:
    """Each TICKETPROXY_ variable lands in its field, converted to its type."""
    settings = Settings.from_env(
        {
            "TICKETPROXY_DATA_DIR": "/var/lib/ticketproxy",
            "TICKETPROXY_GITHUB_TOKEN": TOKEN,
            "TICKETPROXY_GITHUB_REPO": "octo-org/agent.desk_1",
            "TICKETPROXY_GITHUB_API_URL": "https://ghe.example.com/api/v3/",
            "TICKETPROXY_KEYRING": "/etc/ticketproxy/keyring.json",
            "TICKETPROXY_API_KEYS": f" {KEYS} ,",
            "TICKETPROXY_POLL_INTERVAL": "2.5",
            "TICKETPROXY_MAX_WAIT": "600",
            "TICKETPROXY_HEARTBEAT_INTERVAL": "0.5",
            "TICKETPROXY_MODELS": "gpt-4o, gpt-4-turbo",
            "TICKETPROXY_MAX_BODY_BYTES": "65536",
            "TICKETPROXY_SANDBOX_PORT": "9000",
            "TICKETPROXY_LOCK_ISSUES": "off",
        }
    )
    assert settings.data_dir == Path("/var/lib/ticketproxy")
    assert settings.github_token == TOKEN
    assert settings.embedded is False
    assert settings.github_repo == "octo-org/agent.desk_1"
    assert settings.github_api_url == "https://ghe.example.com/api/v3"
    assert settings.keyring_path == Path("/etc/ticketproxy/keyring.json")
    assert settings.store_path == Path("/var/lib/ticketproxy/tickets.sqlite3")
    assert settings.api_keys == ("client-key-aaaaaaaaaaaa", "client-key-bbbbbbbbbbbb")
    assert settings.poll_interval == 2.5
    assert settings.max_wait == 600.0
    assert settings.heartbeat_interval == 0.5
    assert settings.models == ("gpt-4o", "gpt-4-turbo")
    assert settings.max_body_bytes == 65536
    assert isinstance(settings.max_body_bytes, int)
    assert settings.sandbox_port == 9000
    assert settings.lock_issues is False


def test_keyring_defaults_to_the_data_directory() -> None:
    """Without TICKETPROXY_KEYRING the keyring sits in TICKETPROXY_DATA_DIR."""
    settings = Settings.from_env({"TICKETPROXY_DATA_DIR": "/srv/tp"})
    assert settings.keyring_path == Path("/srv/tp/keyring.json")


def test_plain_github_token_is_used_when_ours_is_absent() -> None:
    """GITHUB_TOKEN (as in Actions) is the fallback for TICKETPROXY_GITHUB_TOKEN."""
    settings = Settings.from_env({"GITHUB_TOKEN": TOKEN, "TICKETPROXY_GITHUB_REPO": "a/b"})
    assert settings.github_token == TOKEN


def test_empty_values_fall_back_to_defaults() -> None:
    """A variable set to the empty string counts as unset."""
    settings = Settings.from_env(
        {
            "TICKETPROXY_GITHUB_TOKEN": "",
            "TICKETPROXY_GITHUB_API_URL": "",
            "TICKETPROXY_POLL_INTERVAL": "",
            "TICKETPROXY_MODELS": " ",
            "TICKETPROXY_LOCK_ISSUES": "",
            "TICKETPROXY_SANDBOX_PORT": "",
        }
    )
    assert settings.github_token is None
    assert settings.github_api_url is None
    assert settings.poll_interval == 5.0
    assert settings.models == DEFAULT_MODELS
    assert settings.lock_issues is True
    assert settings.sandbox_port == 8081


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("TICKETPROXY_GITHUB_REPO", "just-a-name"),
        ("TICKETPROXY_GITHUB_REPO", "acme/"),
        ("TICKETPROXY_GITHUB_REPO", "acme/agents/extra"),
        ("TICKETPROXY_GITHUB_REPO", "ac me/agents"),
        ("TICKETPROXY_GITHUB_API_URL", "api.github.com"),
        ("TICKETPROXY_GITHUB_API_URL", "ftp://api.github.com"),
        ("TICKETPROXY_API_KEYS", "short"),
        ("TICKETPROXY_API_KEYS", "long-enough-key,tiny"),
        ("TICKETPROXY_POLL_INTERVAL", "soon"),
        ("TICKETPROXY_POLL_INTERVAL", "0"),
        ("TICKETPROXY_POLL_INTERVAL", "nan"),
        ("TICKETPROXY_MAX_WAIT", "-5"),
        ("TICKETPROXY_MAX_WAIT", "inf"),
        ("TICKETPROXY_MAX_WAIT", "0.5"),
        ("TICKETPROXY_HEARTBEAT_INTERVAL", "fast"),
        ("TICKETPROXY_HEARTBEAT_INTERVAL", "0"),
        ("TICKETPROXY_MODELS", ",,"),
        ("TICKETPROXY_MAX_BODY_BYTES", "lots"),
        ("TICKETPROXY_MAX_BODY_BYTES", "100"),
        ("TICKETPROXY_SANDBOX_PORT", "http"),
        ("TICKETPROXY_SANDBOX_PORT", "70000"),
        ("TICKETPROXY_SANDBOX_PORT", "-1"),
        ("TICKETPROXY_SANDBOX_PORT", "²"),
        ("TICKETPROXY_LOCK_ISSUES", "maybe"),
    ],
)
def test_bad_value_is_refused_naming_the_variable(variable: str, value: str) -> None:
    """Each malformed value raises ConfigError whose message names the variable."""
    environ = {variable: value}
    with pytest.raises(ConfigError) as caught:
        Settings.from_env(environ)
    assert variable in str(caught.value)


def test_token_without_a_repository_is_refused_naming_the_variable() -> None:
    """With a real GitHub token the repository must be named, not defaulted to the sandbox's."""
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"TICKETPROXY_GITHUB_TOKEN": TOKEN})
    assert "TICKETPROXY_GITHUB_REPO" in str(caught.value)


def test_bad_api_key_message_does_not_echo_the_key() -> None:
    """The error about a short key does not print the key itself."""
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"TICKETPROXY_API_KEYS": "s3cr3t"})
    assert "s3cr3t" not in str(caught.value)


def test_booleans_are_parsed_strictly() -> None:
    """Only the usual spellings of true and false are accepted, case-insensitively."""
    for raw in ("1", "true", "YES", " on "):
        assert Settings.from_env({"TICKETPROXY_LOCK_ISSUES": raw}).lock_issues is True
    for raw in ("0", "False", "no", "OFF"):
        assert Settings.from_env({"TICKETPROXY_LOCK_ISSUES": raw}).lock_issues is False


def test_repr_never_shows_the_token_or_the_api_keys() -> None:
    """Secrets stay out of repr and str, which end up in logs and tracebacks."""
    settings = Settings.from_env(
        {
            "TICKETPROXY_GITHUB_TOKEN": TOKEN,
            "TICKETPROXY_GITHUB_REPO": "acme/agents",
            "TICKETPROXY_API_KEYS": KEYS,
        }
    )
    shown = repr(settings) + str(settings)
    assert TOKEN not in shown
    for key in KEYS.split(","):
        assert key not in shown
    assert "acme/agents" in shown


def test_with_listen_overrides_host_and_port_only_when_given() -> None:
    """The serve flags replace host and port; None keeps the current value."""
    settings = Settings.from_env({})
    assert settings.with_listen(None, None) == settings
    moved = settings.with_listen("0.0.0.0", 9999)
    assert (moved.host, moved.port) == ("0.0.0.0", 9999)
    assert settings.with_listen(None, 1234).host == "127.0.0.1"


def test_with_listen_refuses_a_port_out_of_range() -> None:
    """A --port beyond 65535 raises ConfigError naming the flag."""
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({}).with_listen(None, 70000)
    assert "--port" in str(caught.value)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "example.com", ""])
def test_listening_beyond_loopback_without_keys_is_refused(host: str) -> None:
    """Without client keys every non-loopback address is refused, naming TICKETPROXY_API_KEYS."""
    settings = Settings.from_env({}).with_listen(host, None)
    with pytest.raises(ConfigError) as caught:
        settings.check_exposure()
    assert "TICKETPROXY_API_KEYS" in str(caught.value)


def test_listening_beyond_loopback_with_keys_is_allowed() -> None:
    """With client keys, 0.0.0.0 is allowed."""
    settings = Settings.from_env({"TICKETPROXY_API_KEYS": KEYS}).with_listen("0.0.0.0", None)
    settings.check_exposure()
    assert settings.host == "0.0.0.0"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_without_keys_is_allowed(host: str) -> None:
    """Loopback addresses need no client keys."""
    assert is_loopback(host)
    Settings.from_env({}).with_listen(host, None).check_exposure()


def test_answer_page_address_comes_from_desk_url_or_the_listening_address() -> None:
    """Tickets link to TICKETPROXY_DESK_URL, else to the one address ticketproxy listens on."""
    given = Settings.from_env({"TICKETPROXY_DESK_URL": "https://desk.example.com/desk"})
    assert given.answer_page_url == "https://desk.example.com/desk/"
    assert Settings.from_env({}).answer_page_url == "http://127.0.0.1:8080/desk/"
    assert Settings.from_env({}).with_listen("::1", 9000).answer_page_url == (
        "http://[::1]:9000/desk/"
    )
    # Listening on every address says nothing about the name editors use: no link.
    assert Settings.from_env({}).with_listen("0.0.0.0", 8080).answer_page_url is None


@pytest.mark.parametrize(
    "value",
    [
        "ftp://desk.example.com/",
        "desk.example.com",
        "https://user:pw@desk.example.com/",
        "https://desk.example.com/desk?x=1",
        "https://desk.example.com/desk#top",
    ],
)
def test_desk_url_that_is_no_plain_http_address_stops_the_start(value: str) -> None:
    """A malformed answer-page address, or one carrying credentials, is refused by name."""
    with pytest.raises(ConfigError, match="TICKETPROXY_DESK_URL"):
        Settings.from_env({"TICKETPROXY_DESK_URL": value})


def test_short_metrics_token_stops_the_start_and_a_good_one_stays_out_of_repr() -> None:
    """TICKETPROXY_METRICS_TOKEN needs 16+ characters and never shows in repr."""
    for bad in ("short", " padded-token-0123456789 "):
        with pytest.raises(ConfigError, match="TICKETPROXY_METRICS_TOKEN"):
            Settings.from_env({"TICKETPROXY_METRICS_TOKEN": bad})
    settings = Settings.from_env({"TICKETPROXY_METRICS_TOKEN": "m" * 24})
    assert settings.metrics_token == "m" * 24
    assert "m" * 24 not in repr(settings)


# --- the one environment reader: desk token, log settings, upstream keys ------------------


def test_desk_token_log_settings_and_upstream_keys_are_read_with_the_rest(
    tmp_path: Path,
) -> None:
    """``from_env`` reads the desk token, the log level and format, and the routes file's keys."""
    routes = tmp_path / "routes.toml"
    routes.write_text(
        '[models."cheap"]\nroute = "upstream"\nbase_url = "http://u.test/v1"\n'
        'api_key_env = "CHEAP_MODEL_KEY"\n',
        encoding="utf-8",
    )
    settings = Settings.from_env(
        {
            "TICKETPROXY_DESK_TOKEN": "desk-token-0123456789abcdef",
            "TICKETPROXY_LOG_LEVEL": "warning",
            "TICKETPROXY_LOG_FORMAT": "JSON",
            "TICKETPROXY_ROUTES": str(routes),
            "CHEAP_MODEL_KEY": "sk-upstream-key-0123456789",
            "UNRELATED_SECRET": "not-for-ticketproxy",
        }
    )
    assert settings.desk_token == "desk-token-0123456789abcdef"
    assert (settings.log_level, settings.log_format) == ("WARNING", "json")
    assert dict(settings.upstream_keys) == {"CHEAP_MODEL_KEY": "sk-upstream-key-0123456789"}


def test_without_those_variables_the_desk_is_loopback_only_and_logs_are_text_at_info() -> None:
    """No desk token, INFO text lines, and no upstream keys when nothing is set."""
    settings = Settings.from_env({})
    assert settings.desk_token is None
    assert (settings.log_level, settings.log_format) == ("INFO", "text")
    assert dict(settings.upstream_keys) == {}


def test_a_routes_file_that_cannot_be_read_is_left_for_the_app_to_refuse(tmp_path: Path) -> None:
    """A missing routes file names no keys here; building the app refuses it, naming the file."""
    settings = Settings.from_env({"TICKETPROXY_ROUTES": str(tmp_path / "missing.toml")})
    assert settings.routes_path == tmp_path / "missing.toml"
    assert dict(settings.upstream_keys) == {}


def test_desk_token_and_upstream_keys_stay_out_of_repr(tmp_path: Path) -> None:
    """The desk token and the upstream keys never show in repr or str."""
    routes = tmp_path / "routes.toml"
    routes.write_text(
        '[models."cheap"]\nroute = "upstream"\nbase_url = "http://u.test/v1"\n'
        'api_key_env = "CHEAP_MODEL_KEY"\n',
        encoding="utf-8",
    )
    settings = Settings.from_env(
        {
            "TICKETPROXY_DESK_TOKEN": "desk-token-0123456789abcdef",
            "TICKETPROXY_ROUTES": str(routes),
            "CHEAP_MODEL_KEY": "sk-upstream-key-0123456789",
        }
    )
    shown = repr(settings) + str(settings)
    assert "desk-token-0123456789abcdef" not in shown
    assert "sk-upstream-key-0123456789" not in shown


def test_a_bad_log_setting_is_the_error_shown_whatever_else_is_wrong() -> None:
    """The log variables are checked first, as the command line has always done."""
    with pytest.raises(ConfigError, match="TICKETPROXY_LOG_FORMAT"):
        Settings.from_env({"TICKETPROXY_LOG_FORMAT": "xml", "TICKETPROXY_POLL_INTERVAL": "abc"})
