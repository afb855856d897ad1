"""Which model ids people answer, which go to an upstream model, and the aliases agents insist on.

The routes file is TOML (path in ``TICKETPROXY_ROUTES``)::

    [models."gpt-4-turbo"]
    route = "humans"                          # the default

    [models."gpt-3.5-turbo"]
    route = "upstream"
    base_url = "http://127.0.0.1:11434/v1"    # any OpenAI-compatible base URL
    api_key_env = "CHEAP_MODEL_KEY"           # the key comes from this variable, never the file
    model = "llama3.2"                        # optional: the upstream's own model id
    timeout = 120                             # optional: seconds to connect, and between reads

    [aliases]
    "gpt-4o" = "gpt-4-turbo"

Any other model id goes to people too (agents pick ids of their own: openai-agents'
default, ``gpt-4.1-mini``), unless the file starts with ``unlisted = "refuse"``, which makes
them a 404. Without a routes file every model id goes to people; ``/v1/models`` lists the
configured ones (``TICKETPROXY_MODELS``), which some agents check. ``Settings.from_env`` takes
the keys the file names from the environment at start-up (``upstream_key_variables``);
``load_routes`` then checks the file in full against them.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from .errors import ConfigError, InvalidRequest, NotFound

HUMANS = "humans"
UPSTREAM = "upstream"
ROUTE_KINDS = (HUMANS, UPSTREAM)
REFUSE = "refuse"
UNLISTED_CHOICES = (HUMANS, REFUSE)
DEFAULT_UPSTREAM_TIMEOUT = 600.0
_MODEL_KEYS = frozenset({"route", "base_url", "api_key_env", "model", "timeout"})
_UPSTREAM_ONLY_KEYS = ("base_url", "api_key_env", "model", "timeout")


@dataclass(frozen=True)
class Route:
    """Where requests for one model id go: to people (a ticket) or to an upstream model."""

    kind: str = HUMANS
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    upstream_model: str | None = None
    timeout: float = DEFAULT_UPSTREAM_TIMEOUT


@dataclass(frozen=True)
class RouteTable:
    """The model ids this ticketproxy serves, each with its route, and the aliases of them."""

    routes: Mapping[str, Route]
    aliases: Mapping[str, str] = field(default_factory=dict)
    # Where an id that is neither a model nor an alias goes; None refuses it (404).
    unlisted: Route | None = field(default_factory=Route)

    @classmethod
    def humans_only(cls, models: tuple[str, ...]) -> RouteTable:
        """Return a table that lists ``models`` and sends every model id to people."""
        return cls(routes=MappingProxyType(dict.fromkeys(models, Route())))

    def resolve(self, model: str) -> tuple[str, Route] | None:
        """Return the canonical model id and its route, following one alias hop, or None."""
        route = self.routes.get(model)
        if route is not None:
            return model, route
        target = self.aliases.get(model)
        if target is not None and target in self.routes:
            return target, self.routes[target]
        return None if self.unlisted is None else (model, self.unlisted)

    @property
    def listed(self) -> tuple[str, ...]:
        """Return the ids ``/v1/models`` lists: the models, then the aliases, in file order."""
        return (*self.routes, *(a for a in self.aliases if a not in self.routes))


@dataclass(frozen=True)
class RoutedModel:
    """A request's model: the id the client asked for, the id it resolves to, and its route."""

    requested: str
    canonical: str
    route: Route


def route_request(table: RouteTable, body: Any) -> RoutedModel:
    """Resolve a request body's ``model``, refusing a missing or unknown one before any wait."""
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.", code="invalid_type")
    model = body.get("model")
    if not isinstance(model, str) or model == "":
        raise InvalidRequest("you must provide a model", param="model", code="missing")
    resolved = table.resolve(model)
    if resolved is None:
        raise NotFound(
            f"The model `{model}` does not exist on this ticketproxy (its routes file says "
            f'unlisted = "refuse"); use one of: {", ".join(table.listed)}',
            param="model",
            code="model_not_found",
        )
    canonical, route = resolved
    return RoutedModel(requested=model, canonical=canonical, route=route)


def upstream_key_variables(path: Path) -> tuple[str, ...]:
    """Return the variables a routes file names in ``api_key_env``; none if it is unreadable.

    A file that cannot be read or parsed names no variable here: ``load_routes`` refuses it
    with the reason, when the app is built.
    """
    try:
        with path.open("rb") as file:
            document = tomllib.load(file)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return ()
    models = document.get("models")
    if not isinstance(models, dict):
        return ()
    names = (spec.get("api_key_env") for spec in models.values() if isinstance(spec, dict))
    return tuple(name for name in names if isinstance(name, str) and name)


def load_routes(path: Path, environ: Mapping[str, str]) -> RouteTable:
    """Read a routes file, taking upstream keys from ``environ``; fail with what to fix.

    ``environ`` holds the variables the file names (``Settings.upstream_keys``), not
    necessarily the whole environment.
    """
    where = f"routes file {path} (TICKETPROXY_ROUTES)"
    try:
        with path.open("rb") as file:
            document = tomllib.load(file)
    except FileNotFoundError:
        raise ConfigError(
            f"{where} does not exist: create it, or unset TICKETPROXY_ROUTES to send every "
            "model in TICKETPROXY_MODELS to people"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{where} cannot be read: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where} is not valid TOML: {exc}") from None
    unknown = sorted(set(document) - {"models", "aliases", "unlisted"})
    if unknown:
        raise ConfigError(
            f'{where} has unknown top-level keys {unknown}: it holds only unlisted = "humans" '
            'or "refuse", [models."ID"] tables and an [aliases] table'
        )
    unlisted = document.get("unlisted", HUMANS)
    if unlisted not in UNLISTED_CHOICES:
        raise ConfigError(
            f'{where} has unlisted = {unlisted!r}: use unlisted = "humans" (people answer any '
            'model id the file does not list; the default) or unlisted = "refuse" (a 404)'
        )
    models = document.get("models")
    if not isinstance(models, dict) or not models:
        raise ConfigError(
            f"{where} lists no models: add at least one table such as "
            '[models."gpt-4o"] with route = "humans"'
        )
    if "" in models:
        raise ConfigError(f'{where} has a model with an empty id: name it, e.g. [models."gpt-4o"]')
    routes = {model: _route(where, model, spec, environ) for model, spec in models.items()}
    aliases = _aliases(where, document.get("aliases", {}), routes)
    return RouteTable(
        routes=MappingProxyType(routes),
        aliases=MappingProxyType(aliases),
        unlisted=Route() if unlisted == HUMANS else None,
    )


def _route(where: str, model: str, spec: Any, environ: Mapping[str, str]) -> Route:
    table = f'[models."{model}"]'
    if not isinstance(spec, dict):
        raise ConfigError(f'{where}: models."{model}" must be a table like {table}')
    if "api_key" in spec:
        # Keys in files end up in backups and commits: only a variable's name goes here.
        raise ConfigError(
            f"{where}: {table} holds api_key; never put the key in this file: set it in an "
            'environment variable and name that here, e.g. api_key_env = "CHEAP_MODEL_KEY"'
        )
    unknown = sorted(set(spec) - _MODEL_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: {table} has unknown keys {unknown}: use {', '.join(sorted(_MODEL_KEYS))}"
        )
    kind = spec.get("route", HUMANS)
    if kind not in ROUTE_KINDS:
        raise ConfigError(
            f'{where}: {table} has route = {kind!r}: use route = "humans" (people answer '
            'on GitHub) or route = "upstream" (an OpenAI-compatible model)'
        )
    if kind == HUMANS:
        stray = [key for key in _UPSTREAM_ONLY_KEYS if key in spec]
        if stray:
            raise ConfigError(
                f'{where}: {table} has route = "humans" but sets {", ".join(stray)}, which '
                'only an upstream route uses: remove them, or set route = "upstream"'
            )
        return Route()
    return Route(
        kind=UPSTREAM,
        base_url=_base_url(where, table, spec.get("base_url"), spec.get("api_key_env")),
        api_key=_api_key(where, table, spec.get("api_key_env"), environ),
        upstream_model=_upstream_model(where, table, spec.get("model")),
        timeout=_timeout(where, table, spec.get("timeout", DEFAULT_UPSTREAM_TIMEOUT)),
    )


def _base_url(where: str, table: str, value: Any, key_variable: Any) -> str:
    if value is None:
        raise ConfigError(
            f'{where}: {table} has route = "upstream" but no base_url: add the upstream\'s '
            'OpenAI-compatible base URL, e.g. base_url = "http://127.0.0.1:11434/v1"'
        )
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigError(
            f"{where}: {table} has base_url = {value!r}, which is not an http(s) URL: use "
            'the base URL an OpenAI client would take, e.g. "https://api.openai.com/v1"'
        )
    try:
        parts = urlsplit(value)
        credentials = parts.username is not None or parts.password is not None
        parts.port  # noqa: B018 (raises ValueError on a port that is not a number)
    except ValueError as exc:
        raise ConfigError(
            f"{where}: {table} has a base_url that is not a valid URL ({exc}): use the base "
            'URL an OpenAI client would take, e.g. "https://api.openai.com/v1"'
        ) from None
    if credentials:
        # Never echo the URL: it holds a secret. A password in this file ends up in backups
        # and commits, the URL is logged with every forwarded request, and with api_key_env
        # as well the request would carry two Authorization headers, which aiohttp refuses.
        clash = (
            f", and api_key_env = {key_variable!r} names a key too (a request carries one "
            "Authorization header)"
            if key_variable is not None
            else ""
        )
        raise ConfigError(
            f"{where}: {table} has a base_url with credentials in it (user:password@host)"
            f"{clash}: remove them from the URL, put the key in an environment variable and "
            'name it with api_key_env, e.g. api_key_env = "CHEAP_MODEL_KEY"'
        )
    return value.rstrip("/")


def _api_key(where: str, table: str, name: Any, environ: Mapping[str, str]) -> str | None:
    if name is None:
        # Local servers (Ollama, llama.cpp, vLLM) often need no key at all.
        return None
    if not isinstance(name, str) or name == "":
        raise ConfigError(
            f"{where}: {table} has api_key_env = {name!r}: give the name of the environment "
            'variable that holds the key, e.g. api_key_env = "CHEAP_MODEL_KEY"'
        )
    key = environ.get(name, "")
    if key == "":
        raise ConfigError(
            f"{where}: {table} takes its upstream key from {name}, which is not set: "
            f"export {name}=<the upstream's API key>, or remove api_key_env if the upstream "
            "needs no key"
        )
    if not key.isascii() or not key.isprintable() or " " in key:
        # Never echo the key itself: say only where it came from.
        raise ConfigError(
            f"{where}: {table} takes its upstream key from {name}, whose value holds spaces "
            "or characters an HTTP header cannot carry: set it to the key alone"
        )
    return key


def _upstream_model(where: str, table: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value == "":
        raise ConfigError(
            f"{where}: {table} has model = {value!r}: give the upstream's model id as a "
            'string, e.g. model = "llama3.2", or remove it to forward the id unchanged'
        )
    return value


def _timeout(where: str, table: str, value: Any) -> float:
    valid = isinstance(value, int | float) and not isinstance(value, bool)
    if not valid or not math.isfinite(value) or value <= 0:
        raise ConfigError(
            f"{where}: {table} has timeout = {value!r}: give a positive number of seconds, "
            "e.g. timeout = 120"
        )
    return float(value)


def _aliases(where: str, value: Any, routes: Mapping[str, Route]) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(target, str) for target in value.values()):
        raise ConfigError(
            f'{where}: [aliases] must map ids to model ids, e.g. "gpt-4o" = "gpt-4-turbo"'
        )
    resolved: dict[str, str] = {}
    for alias in value:
        if alias in routes:
            raise ConfigError(
                f'{where}: "{alias}" is both a model and an alias: remove it from [aliases], '
                f'or remove its [models."{alias}"] table'
            )
        # Follow chains (a -> b -> model) here, so resolve() needs one hop at request time.
        seen = [alias]
        target = value[alias]
        while target not in routes:
            if target not in value:
                raise ConfigError(
                    f'{where}: alias "{seen[-1]}" points to "{target}", which is not a model '
                    f'in this file: add a [models."{target}"] table, or point the alias at '
                    f"one of: {', '.join(routes)}"
                )
            if target in seen:
                cycle = " -> ".join(f'"{a}"' for a in [*seen, target])
                raise ConfigError(
                    f"{where}: aliases form a cycle ({cycle}): point one of them at a model "
                    f"in [models], e.g. one of: {', '.join(routes)}"
                )
            seen.append(target)
            target = value[target]
        resolved[alias] = target
    return resolved
