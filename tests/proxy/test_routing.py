"""Model routing: people or an upstream model per id, aliases, and the routes file's errors."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web

from embedded_github import RunningSandbox, SandboxConfig
from proxy.app import create_app
from proxy.errors import ConfigError
from proxy.handlers import ROUTES
from proxy.routing import HUMANS, UPSTREAM, Route, RouteTable, load_routes
from proxy.settings import Settings
from tests.helpers.stack import CLIENT_KEY, Stack, free_port, start_stack, stop_stack
from tests.helpers.upstream_stub import CANNED_TEXT, UpstreamStub, running_upstream_stub

UPSTREAM_KEY = "sk-upstream-secret-key-0123456789"
KEY_ENV = {"CHEAP_MODEL_KEY": UPSTREAM_KEY}
PROMPT = [{"role": "user", "content": "Summarise the README in one line."}]

ROUTES_TOML = """
unlisted = "refuse"

[models."gpt-4-turbo"]
route = "humans"

[models."gpt-3.5-turbo"]
route = "upstream"
base_url = "{upstream}/"
api_key_env = "CHEAP_MODEL_KEY"
model = "llama3.2"
timeout = 5

[models."slow-model"]
route = "upstream"
base_url = "{upstream}"
timeout = 0.3

[models."dead-model"]
route = "upstream"
base_url = "http://127.0.0.1:{closed_port}/v1"
timeout = 2

[aliases]
"gpt-4o" = "gpt-4-turbo"
"gpt-4" = "gpt-4-turbo"
"""


def write_routes(tmp_path: Path, text: str) -> Path:
    """Write a routes file and return its path."""
    path = tmp_path / "routes.toml"
    path.write_text(text, encoding="utf-8")
    return path


def config_error(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> str:
    """Load ``text`` as a routes file, expecting a ConfigError, and return its message."""
    path = write_routes(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_routes(path, KEY_ENV if environ is None else environ)
    message = str(caught.value)
    assert str(path) in message
    return message


# --- the routes file -----------------------------------------------------------------------


def test_routes_file_sends_each_model_to_its_route_with_the_key_from_the_environment(
    tmp_path: Path,
) -> None:
    """Models, their upstream settings, the key from the named variable and the aliases load."""
    path = write_routes(tmp_path, ROUTES_TOML.format(upstream="http://u.test/v1", closed_port=9))
    table = load_routes(path, KEY_ENV)
    assert table.routes["gpt-4-turbo"] == Route(kind=HUMANS)
    assert table.routes["gpt-3.5-turbo"] == Route(
        kind=UPSTREAM,
        base_url="http://u.test/v1",
        api_key=UPSTREAM_KEY,
        upstream_model="llama3.2",
        timeout=5.0,
    )
    assert table.routes["slow-model"].api_key is None
    assert table.routes["slow-model"].upstream_model is None
    assert dict(table.aliases) == {"gpt-4o": "gpt-4-turbo", "gpt-4": "gpt-4-turbo"}


def test_model_without_a_route_goes_to_humans_and_upstream_timeout_defaults_to_600(
    tmp_path: Path,
) -> None:
    """``route`` defaults to humans; an upstream's timeout defaults to 600 seconds."""
    path = write_routes(
        tmp_path, '[models."m"]\n[models."u"]\nroute = "upstream"\nbase_url = "https://x.test/v1"\n'
    )
    table = load_routes(path, {})
    assert table.routes["m"].kind == HUMANS
    assert table.routes["u"].timeout == 600.0


def test_unknown_route_kind_is_rejected_naming_the_model_and_the_kinds(tmp_path: Path) -> None:
    """A typo in ``route`` stops the start, naming the model and both valid kinds."""
    message = config_error(tmp_path, '[models."gpt-4o"]\nroute = "robots"\n')
    assert '[models."gpt-4o"]' in message
    assert "'robots'" in message
    assert '"humans"' in message
    assert '"upstream"' in message


def test_upstream_route_without_base_url_is_rejected_with_an_example(tmp_path: Path) -> None:
    """An upstream route must say where the upstream is."""
    message = config_error(tmp_path, '[models."cheap"]\nroute = "upstream"\n')
    assert '[models."cheap"]' in message
    assert "no base_url" in message
    assert 'base_url = "http' in message


def test_base_url_that_is_not_http_is_rejected(tmp_path: Path) -> None:
    """A base URL without an http(s) scheme is refused before any request is forwarded."""
    text = '[models."cheap"]\nroute = "upstream"\nbase_url = "127.0.0.1:11434/v1"\n'
    assert "not an http(s) URL" in config_error(tmp_path, text)


def test_credentials_in_the_upstream_url_with_an_api_key_env_are_a_config_error_at_start_up(
    tmp_path: Path,
) -> None:
    """``user:pass@`` in base_url beside api_key_env stops start-up, naming the fix, not a 500."""
    text = """
[models."gpt-3.5-turbo"]
route = "upstream"
base_url = "https://bob:hunter2-secret@llm.example/v1"
api_key_env = "CHEAP_MODEL_KEY"
"""
    path = write_routes(tmp_path, text)
    settings = Settings.from_env({"TICKETPROXY_ROUTES": str(path), **KEY_ENV})
    with pytest.raises(ConfigError) as caught:
        create_app(settings)
    message = str(caught.value)
    assert str(path) in message
    assert "TICKETPROXY_ROUTES" in message
    assert '[models."gpt-3.5-turbo"]' in message
    assert "credentials" in message
    assert "remove them from the URL" in message
    assert "api_key_env" in message
    assert "one Authorization header" in message
    assert "hunter2" not in message
    assert "bob" not in message


def test_credentials_in_the_upstream_url_alone_are_refused_without_echoing_them(
    tmp_path: Path,
) -> None:
    """A password in base_url is a key in the file: refused like api_key, never echoed."""
    message = config_error(
        tmp_path,
        '[models.m]\nroute = "upstream"\nbase_url = "http://:only-a-password@127.0.0.1:1/v1"\n',
    )
    assert "credentials" in message
    assert "api_key_env" in message
    assert "only-a-password" not in message


def test_upstream_url_with_a_port_that_is_not_a_number_is_rejected(tmp_path: Path) -> None:
    """A base_url aiohttp could not use is refused at start-up, not at the first request."""
    message = config_error(
        tmp_path, '[models.m]\nroute = "upstream"\nbase_url = "http://127.0.0.1:port/v1"\n'
    )
    assert "not a valid URL" in message


def test_unset_upstream_key_variable_is_rejected_naming_the_variable(tmp_path: Path) -> None:
    """``api_key_env`` naming an unset variable stops the start and says what to export."""
    text = '[models."cheap"]\nroute = "upstream"\nbase_url = "http://x.test/v1"\n'
    text += 'api_key_env = "CHEAP_MODEL_KEY"\n'
    message = config_error(tmp_path, text, environ={"OTHER": "x"})
    assert "CHEAP_MODEL_KEY" in message
    assert "export CHEAP_MODEL_KEY=" in message
    assert '[models."cheap"]' in message


def test_upstream_key_that_cannot_be_a_header_is_rejected_without_echoing_it(
    tmp_path: Path,
) -> None:
    """A key with a newline or space (a copy-paste slip) is refused at start-up, not per request."""
    text = '[models."cheap"]\nroute = "upstream"\nbase_url = "http://x.test/v1"\n'
    text += 'api_key_env = "CHEAP_MODEL_KEY"\n'
    message = config_error(tmp_path, text, environ={"CHEAP_MODEL_KEY": "sk-pasted\n"})
    assert "CHEAP_MODEL_KEY" in message
    assert "sk-pasted" not in message


def test_key_written_into_the_routes_file_is_rejected_without_echoing_it(tmp_path: Path) -> None:
    """A literal ``api_key`` in the file is refused, and the refusal does not repeat the key."""
    text = '[models."cheap"]\nroute = "upstream"\nbase_url = "http://x.test/v1"\n'
    text += 'api_key = "sk-literal-secret"\n'
    message = config_error(tmp_path, text)
    assert "api_key_env" in message
    assert "sk-literal-secret" not in message


def test_unknown_key_in_a_model_table_is_rejected_listing_the_known_ones(tmp_path: Path) -> None:
    """A misspelt setting is an error, not silently ignored."""
    message = config_error(tmp_path, '[models."m"]\nrout = "upstream"\n')
    assert "'rout'" in message
    assert "route" in message


def test_humans_route_with_upstream_settings_is_rejected(tmp_path: Path) -> None:
    """A humans route that sets base_url is probably a forgotten ``route = "upstream"``."""
    message = config_error(tmp_path, '[models."m"]\nbase_url = "http://x.test/v1"\n')
    assert 'route = "humans"' in message
    assert "base_url" in message


@pytest.mark.parametrize("timeout", ["0", "-1", '"soon"', "true", "inf"])
def test_timeout_that_is_not_a_positive_number_is_rejected(tmp_path: Path, timeout: str) -> None:
    """The upstream timeout must be a positive, finite number of seconds."""
    text = f'[models."m"]\nroute = "upstream"\nbase_url = "http://x.test/v1"\ntimeout = {timeout}\n'
    assert "positive number of seconds" in config_error(tmp_path, text)


def test_alias_to_an_unknown_model_is_rejected_naming_both(tmp_path: Path) -> None:
    """An alias must lead to a model in the file."""
    message = config_error(tmp_path, '[models."gpt-4-turbo"]\n[aliases]\n"gpt-4o" = "gpt-5"\n')
    assert '"gpt-4o"' in message
    assert '"gpt-5"' in message
    assert "gpt-4-turbo" in message


def test_alias_cycle_is_rejected_showing_the_cycle(tmp_path: Path) -> None:
    """Aliases that point at each other never reach a model: the start stops, showing the loop."""
    text = '[models."m"]\n[aliases]\n"a" = "b"\n"b" = "c"\n"c" = "a"\n'
    message = config_error(tmp_path, text)
    assert '"a" -> "b" -> "c" -> "a"' in message


def test_alias_that_is_also_a_model_is_rejected(tmp_path: Path) -> None:
    """An id cannot be both a model and an alias: which route it takes would be a guess."""
    message = config_error(tmp_path, '[models."gpt-4"]\n[models."m"]\n[aliases]\n"gpt-4" = "m"\n')
    assert '"gpt-4" is both a model and an alias' in message


def test_alias_chain_is_flattened_so_resolve_needs_one_hop(tmp_path: Path) -> None:
    """``a -> b -> model`` is stored as ``a -> model`` and resolves to the model."""
    path = write_routes(tmp_path, '[models."m"]\n[aliases]\n"a" = "b"\n"b" = "m"\n')
    table = load_routes(path, {})
    assert dict(table.aliases) == {"a": "m", "b": "m"}
    assert table.resolve("a") == ("m", Route())


def test_missing_routes_file_is_rejected_naming_the_variable(tmp_path: Path) -> None:
    """A TICKETPROXY_ROUTES that points nowhere stops the start with the path and the variable."""
    path = tmp_path / "nowhere.toml"
    with pytest.raises(ConfigError) as caught:
        load_routes(path, {})
    assert str(path) in str(caught.value)
    assert "TICKETPROXY_ROUTES" in str(caught.value)


def test_malformed_toml_is_rejected_naming_the_file(tmp_path: Path) -> None:
    """A TOML syntax error is reported with the file, not as a traceback."""
    assert "not valid TOML" in config_error(tmp_path, '[models."m"\nroute = \n')


def test_file_without_models_is_rejected(tmp_path: Path) -> None:
    """A routes file must serve at least one model."""
    assert "lists no models" in config_error(tmp_path, '[aliases]\n"a" = "b"\n')


def test_upstream_key_never_appears_in_the_reprs(tmp_path: Path) -> None:
    """Printing a route or the table (logs, tracebacks) does not reveal the upstream key."""
    path = write_routes(tmp_path, ROUTES_TOML.format(upstream="http://u.test/v1", closed_port=9))
    table = load_routes(path, KEY_ENV)
    assert table.routes["gpt-3.5-turbo"].api_key == UPSTREAM_KEY
    assert UPSTREAM_KEY not in repr(table.routes["gpt-3.5-turbo"])
    assert UPSTREAM_KEY not in repr(table)


def test_app_takes_the_upstream_key_the_environment_gave_at_start_up(tmp_path: Path) -> None:
    """``create_app`` loads the routes file with the key ``Settings.from_env`` read for it."""
    path = write_routes(tmp_path, ROUTES_TOML.format(upstream="http://u.test/v1", closed_port=9))
    settings = Settings.from_env({"TICKETPROXY_ROUTES": str(path), **KEY_ENV})
    app = create_app(settings)
    resolved = app[ROUTES].resolve("gpt-3.5-turbo")
    assert resolved is not None
    assert resolved[1].api_key == UPSTREAM_KEY


def test_app_refuses_a_routes_file_whose_key_variable_was_not_set(tmp_path: Path) -> None:
    """Building the app names the unset variable, as loading the file alone does."""
    path = write_routes(tmp_path, ROUTES_TOML.format(upstream="http://u.test/v1", closed_port=9))
    settings = Settings.from_env({"TICKETPROXY_ROUTES": str(path)})
    with pytest.raises(ConfigError, match="takes its upstream key from CHEAP_MODEL_KEY"):
        create_app(settings)


def test_app_refuses_a_missing_routes_file_naming_it(tmp_path: Path) -> None:
    """A TICKETPROXY_ROUTES that points nowhere stops building the app with the path."""
    path = tmp_path / "missing.toml"
    settings = Settings.from_env({"TICKETPROXY_ROUTES": str(path)})
    with pytest.raises(ConfigError, match="does not exist"):
        create_app(settings)


def test_resolve_follows_an_alias_and_refuses_unknown_ids() -> None:
    """A model resolves to itself, an alias to its model, anything else to None."""
    upstream = Route(kind=UPSTREAM, base_url="http://u.test/v1")
    table = RouteTable(routes={"m": Route(), "u": upstream}, aliases={"a": "u"}, unlisted=None)
    assert table.resolve("m") == ("m", Route())
    assert table.resolve("a") == ("u", upstream)
    assert table.resolve("gpt-5") is None


def test_listed_ids_are_the_models_then_the_aliases_in_file_order(tmp_path: Path) -> None:
    """``listed`` keeps the file's order: models first, then aliases."""
    path = write_routes(tmp_path, ROUTES_TOML.format(upstream="http://u.test/v1", closed_port=9))
    assert load_routes(path, KEY_ENV).listed == (
        "gpt-4-turbo",
        "gpt-3.5-turbo",
        "slow-model",
        "dead-model",
        "gpt-4o",
        "gpt-4",
    )


def test_humans_only_table_sends_every_configured_model_to_people() -> None:
    """Without a routes file every model id is listed, in order, and routed to humans."""
    table = RouteTable.humans_only(("gpt-4", "gpt-4o"))
    assert table.listed == ("gpt-4", "gpt-4o")
    assert table.resolve("gpt-4o") == ("gpt-4o", Route(kind=HUMANS))


def test_routes_path_comes_from_ticketproxy_routes() -> None:
    """TICKETPROXY_ROUTES sets ``routes_path``; unset or empty leaves it None."""
    assert Settings.from_env({"TICKETPROXY_ROUTES": "/etc/tp/routes.toml"}).routes_path == Path(
        "/etc/tp/routes.toml"
    )
    assert Settings.from_env({}).routes_path is None
    assert Settings.from_env({"TICKETPROXY_ROUTES": ""}).routes_path is None


# --- the running proxy ---------------------------------------------------------------------


@pytest.fixture
async def upstream() -> AsyncIterator[UpstreamStub]:
    """Yield a running OpenAI-compatible upstream stub."""
    async with running_upstream_stub() as stub:
        yield stub


@pytest.fixture
async def routed(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    tmp_path: Path,
    upstream: UpstreamStub,
) -> AsyncIterator[Stack]:
    """Yield a stack serving ROUTES_TOML: humans, the upstream stub, a slow and a dead route."""
    text = ROUTES_TOML.format(upstream=upstream.base_url, closed_port=free_port())
    table = load_routes(write_routes(tmp_path, text), KEY_ENV)
    stack = await start_stack(github_sandbox, sandbox_config, tmp_path)
    # start_stack builds its app from settings alone: restart it on the same store with the
    # table, injected the way the CLI's environment would provide it.
    await stack.runner.cleanup()
    app = create_app(stack.settings, clock=stack.clock, bot_login="ticketproxy-bot", routes=table)
    stack.runner = web.AppRunner(app)
    await stack.runner.setup()
    site = web.TCPSite(stack.runner, "127.0.0.1", 0)
    await site.start()
    host, port = stack.runner.addresses[0][:2]
    stack.base_url = f"http://{host}:{port}/v1"
    try:
        yield stack
    finally:
        await stop_stack(stack)


async def post(stack: Stack, path: str, body: dict[str, Any]) -> tuple[int, Any, str]:
    """POST ``body`` to the proxy with the client key; return status, JSON body and raw text."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            stack.base_url + path,
            json=body,
            headers={"Authorization": f"Bearer {CLIENT_KEY}"},
        ) as response,
    ):
        text = await response.text()
        return response.status, json.loads(text), text + str(dict(response.headers))


async def test_models_endpoint_lists_models_then_aliases_and_retrieves_an_alias(
    routed: Stack,
) -> None:
    """``/v1/models`` lists every model then every alias; an alias can be retrieved by id."""
    client = routed.openai()
    listed = [m.id for m in (await client.models.list()).data]
    assert listed == ["gpt-4-turbo", "gpt-3.5-turbo", "slow-model", "dead-model", "gpt-4o", "gpt-4"]
    assert (await client.models.retrieve("gpt-4o")).id == "gpt-4o"
    with pytest.raises(openai.NotFoundError):
        await client.models.retrieve("gpt-5")


async def test_unknown_model_is_refused_with_404_model_not_found_and_no_ticket(
    routed: Stack,
) -> None:
    """An id that is neither a model nor an alias is a 404 at once, and no issue is opened."""
    client = routed.openai()
    with pytest.raises(openai.NotFoundError) as caught:
        await client.chat.completions.create(model="gpt-5", messages=PROMPT)
    assert caught.value.code == "model_not_found"
    assert await routed.issues() == []


async def test_upstream_model_is_answered_by_the_upstream_and_opens_no_ticket(
    routed: Stack, upstream: UpstreamStub
) -> None:
    """An upstream-routed model gets the stub's completion; no GitHub issue is opened."""
    client = routed.openai()
    completion = await asyncio.wait_for(
        client.chat.completions.create(model="gpt-3.5-turbo", messages=PROMPT), 10
    )
    assert completion.choices[0].message.content == CANNED_TEXT
    # Passed through unchanged: the upstream's own id and model name.
    assert completion.id == "chatcmpl-stub"
    assert completion.model == "llama3.2"
    assert await routed.issues() == []
    assert len(upstream.received) == 1


async def test_upstream_sees_its_own_model_name_and_key_but_never_the_client_key(
    routed: Stack, upstream: UpstreamStub
) -> None:
    """The body reaches the upstream with ``model`` renamed and the upstream's bearer key."""
    client = routed.openai()
    await client.chat.completions.create(model="gpt-3.5-turbo", messages=PROMPT, temperature=0.5)
    [seen] = upstream.received
    assert seen.path == "/v1/chat/completions"
    assert seen.body["model"] == "llama3.2"
    assert seen.body["messages"] == PROMPT
    assert seen.body["temperature"] == 0.5
    assert seen.headers["Authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert CLIENT_KEY not in json.dumps(dict(seen.headers))


async def test_upstream_stream_reaches_the_client_chunk_by_chunk(
    routed: Stack, upstream: UpstreamStub
) -> None:
    """The first SSE chunk arrives while the upstream is still holding the rest back."""
    upstream.gate = asyncio.Event()
    client = routed.openai()

    async def read() -> list[str]:
        stream = await client.chat.completions.create(
            model="gpt-3.5-turbo", messages=PROMPT, stream=True
        )
        pieces: list[str] = []
        async for chunk in stream:
            piece = chunk.choices[0].delta.content if chunk.choices else None
            if piece:
                pieces.append(piece)
                assert upstream.gate is not None
                if not upstream.gate.is_set():
                    # Only passing chunks through as they come can deliver this one now.
                    assert pieces == ["Hello"]
                    upstream.gate.set()
        return pieces

    pieces = await asyncio.wait_for(read(), 10)
    assert "".join(pieces) == CANNED_TEXT
    assert len(pieces) > 1
    assert upstream.received[0].body["stream"] is True


async def test_upstream_cut_mid_stream_cuts_the_client_stream_too(
    routed: Stack, upstream: UpstreamStub
) -> None:
    """A stream the upstream breaks off ends in an error, never in an answer that looks whole."""
    upstream.cut_mid_stream = True
    client = routed.openai()
    pieces: list[str] = []

    async def read() -> None:
        stream = await client.chat.completions.create(
            model="gpt-3.5-turbo", messages=PROMPT, stream=True
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)

    with pytest.raises(openai.APIConnectionError):
        await asyncio.wait_for(read(), 10)
    assert pieces == ["Hello"]


async def test_upstream_error_status_and_body_pass_through_unchanged(
    routed: Stack, upstream: UpstreamStub
) -> None:
    """An upstream 400 reaches the client as that 400 with the upstream's own error."""
    upstream.status = 400
    status, body, _ = await post(
        routed, "/chat/completions", {"model": "gpt-3.5-turbo", "messages": PROMPT}
    )
    assert status == 400
    assert body["error"]["code"] == "upstream_says_no"
    assert body["error"]["message"] == "upstream says no"


async def test_unreachable_upstream_is_a_502_in_openai_error_envelope(routed: Stack) -> None:
    """Nothing listening upstream: 502, OpenAI's envelope, code upstream_unavailable."""
    status, body, raw = await post(
        routed, "/chat/completions", {"model": "dead-model", "messages": PROMPT}
    )
    assert status == 502
    assert body["error"]["code"] == "upstream_unavailable"
    assert body["error"]["type"] == "server_error"
    assert "dead-model" in body["error"]["message"]
    assert UPSTREAM_KEY not in raw
    assert await routed.issues() == []


async def test_upstream_that_does_not_answer_in_time_is_a_502(
    routed: Stack, upstream: UpstreamStub
) -> None:
    """An upstream slower than the route's timeout: 502 upstream_unavailable, not a hang."""
    upstream.delay = 1.5
    status, body, _ = await post(
        routed, "/chat/completions", {"model": "slow-model", "messages": PROMPT}
    )
    assert status == 502
    assert body["error"]["code"] == "upstream_unavailable"


async def test_openai_client_sees_an_unreachable_upstream_as_a_server_error(routed: Stack) -> None:
    """The official client raises InternalServerError (which it would retry) for the 502."""
    client = routed.openai()
    with pytest.raises(openai.InternalServerError) as caught:
        await client.chat.completions.create(model="dead-model", messages=PROMPT)
    assert caught.value.status_code == 502


async def test_legacy_completion_for_an_upstream_model_goes_to_the_upstream_legacy_route(
    routed: Stack, upstream: UpstreamStub
) -> None:
    """``/v1/completions`` forwards to the upstream's ``/completions``."""
    client = routed.openai()
    completion = await client.completions.create(model="gpt-3.5-turbo", prompt="Say hi")
    assert completion.choices[0].text == CANNED_TEXT
    [seen] = upstream.received
    assert seen.path == "/v1/completions"
    assert seen.body == {"model": "llama3.2", "prompt": "Say hi"}


async def test_upstream_key_is_never_logged(
    routed: Stack, upstream: UpstreamStub, caplog: pytest.LogCaptureFixture
) -> None:
    """Neither a forwarded request nor a failed one writes the upstream key to the log."""
    caplog.set_level(logging.DEBUG)
    client = routed.openai()
    await client.chat.completions.create(model="gpt-3.5-turbo", messages=PROMPT)
    upstream.status = 500
    await post(routed, "/chat/completions", {"model": "gpt-3.5-turbo", "messages": PROMPT})
    await post(routed, "/chat/completions", {"model": "dead-model", "messages": PROMPT})
    assert "upstream" in caplog.text
    assert UPSTREAM_KEY not in caplog.text


async def test_alias_routed_to_humans_opens_a_ticket_and_echoes_the_requested_id(
    routed: Stack, upstream: UpstreamStub
) -> None:
    """``gpt-4o`` opens a ticket for gpt-4-turbo, and the completion says ``gpt-4o``."""
    client = routed.openai()
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    issue = await routed.wait_for_issue(1)
    assert "| Model | `gpt-4-turbo` |" in (issue.body or "")
    await routed.answer(1, "The README explains how to run ticketproxy.")
    completion = await asyncio.wait_for(pending, 10)
    assert completion.model == "gpt-4o"
    assert completion.choices[0].message.content == "The README explains how to run ticketproxy."
    assert upstream.received == []
