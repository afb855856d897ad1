"""``TICKETPROXY_AGENT_ROUTES``: whose personal agents draft which tickets. Pure.

Three spellings, one meaning (a list of :class:`~ticketing.agent_routes.AgentRoute`):

- inline, routes separated by ``;``: ``model:gpt-4-turbo=alice/ticketproxy-agent/agent.yml``
  (``WHAT=OWNER/REPO/WORKFLOW[@REF]``; ``WHAT`` is ``model:ID``, ``client:NAME``,
  ``label:NAME`` or several joined by ``,``; the editor is the fork's owner);
- a TOML file's path (ending in ``.toml``), in the review policy's style, one ``[[route]]``
  table per route with ``repository``, ``workflow`` and at least one of ``model`` and
  ``client`` or ``label`` (``editor`` and ``ref`` optional);
- the same TOML inline, starting with ``[[route]]``.

Every mistake raises :class:`~proxy.errors.ConfigError` naming the variable, the route and
the fix: the operator is told at start, never a ticket later. Only the file is read here.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from proxy.errors import ConfigError
from ticketing.agent_routes import AgentRoute

VARIABLE = "TICKETPROXY_AGENT_ROUTES"
_EXAMPLE = f"{VARIABLE}=model:gpt-4-turbo=alice/ticketproxy-agent/agent.yml"
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_REPO_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")
_WORKFLOW = re.compile(r"(?:[A-Za-z0-9._-]{1,100}\.ya?ml|[1-9][0-9]{0,18})")
_REF = re.compile(r"[A-Za-z0-9._/-]{1,200}")
_SELECTORS = ("model", "client", "label")
_TABLE_KEYS = ("editor", "repository", "workflow", "ref", "model", "client", "label")
# A label as a client writes it in metadata: no comma (the separator), one line.
_LABEL = re.compile(r"[^,\s](?:[^,\n\r]{0,98}[^,\s])?")


def read_agent_routes(environ: Mapping[str, str]) -> tuple[AgentRoute, ...]:
    """Read ``TICKETPROXY_AGENT_ROUTES``; no routes (no agent drafts) when it is unset."""
    value = (environ.get(VARIABLE) or "").strip()
    if not value:
        return ()
    if value.startswith("[["):
        return parse_toml_routes(value, where=VARIABLE)
    if value.endswith(".toml"):
        path = Path(value)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{VARIABLE}: cannot read {path}: {exc.strerror or exc}") from None
        return parse_toml_routes(text, where=f"{VARIABLE} ({path})")
    return parse_inline_routes(value)


def parse_inline_routes(value: str) -> tuple[AgentRoute, ...]:
    """Parse ``WHAT=OWNER/REPO/WORKFLOW[@REF]`` routes separated by ``;``."""
    routes = []
    for number, item in enumerate((part.strip() for part in value.split(";")), start=1):
        if not item:
            continue
        where = f"{VARIABLE} route {number} ({item!r})"
        what, sep, target = item.rpartition("=")
        if not sep or not what:
            raise ConfigError(f"{where} has no WHAT=TARGET: write it like {_EXAMPLE}")
        selectors: dict[str, str] = {}
        for selector in what.split(","):
            key, colon, wanted = selector.strip().partition(":")
            if not colon or key not in _SELECTORS or not wanted.strip():
                raise ConfigError(
                    f"{where}: {selector.strip()!r} is not model:ID, client:NAME or label:NAME "
                    f"(e.g. {_EXAMPLE})"
                )
            selectors[key] = wanted.strip()
        target, at, ref = target.strip().partition("@")
        owner, _, rest = target.partition("/")
        repo, _, workflow = rest.partition("/")
        fields = {
            "repository": f"{owner}/{repo}",
            "workflow": workflow,
            **({"ref": ref} if at else {}),
            **selectors,
        }
        routes.append(_route(fields, where))
    if not routes:
        raise ConfigError(f"{VARIABLE} names no route: write it like {_EXAMPLE}, or unset it")
    return tuple(routes)


def parse_toml_routes(text: str, *, where: str) -> tuple[AgentRoute, ...]:
    """Parse ``[[route]]`` tables, in the review policy's style."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where} is not valid TOML: {exc}") from None
    unknown = sorted(set(document) - {"route"})
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; only [[route]] tables")
    tables = document.get("route")
    if not isinstance(tables, list) or not tables:
        raise ConfigError(f"{where} has no [[route]] table: add one per agent")
    routes = []
    for number, table in enumerate(tables, start=1):
        here = f"{where} [[route]] {number}"
        if not isinstance(table, dict):
            raise ConfigError(f"{here} is not a table")
        unknown = sorted(set(table) - set(_TABLE_KEYS))
        if unknown:
            raise ConfigError(
                f"{here}: unknown key(s) {', '.join(unknown)}; known: {', '.join(_TABLE_KEYS)}"
            )
        routes.append(_route(table, here))
    return tuple(routes)


def _route(fields: Mapping[str, Any], where: str) -> AgentRoute:
    """Check one route's fields and return it."""
    for key, value in fields.items():
        if not isinstance(value, str):
            raise ConfigError(f"{where}: {key} must be a string")
    repository = str(fields.get("repository", ""))
    owner, _, repo = repository.partition("/")
    if not _NAME.fullmatch(owner) or not _REPO_NAME.fullmatch(repo):
        raise ConfigError(
            f"{where}: the agent's repository {repository!r} is not OWNER/REPO "
            "(the editor's fork, e.g. alice/ticketproxy-agent)"
        )
    workflow = str(fields.get("workflow", ""))
    if not _WORKFLOW.fullmatch(workflow):
        raise ConfigError(
            f"{where}: the workflow {workflow!r} is neither a file name ending in .yml or "
            ".yaml (e.g. agent.yml) nor a workflow id"
        )
    ref = str(fields.get("ref", "main"))
    if not _REF.fullmatch(ref) or ".." in ref:
        raise ConfigError(f"{where}: the ref {ref!r} is not a branch or tag name")
    editor = str(fields.get("editor", owner))
    if not _NAME.fullmatch(editor):
        raise ConfigError(f"{where}: the editor {editor!r} is not a GitHub login")
    model = fields.get("model")
    client = fields.get("client")
    label = fields.get("label")
    if model is None and client is None and label is None:
        raise ConfigError(
            f"{where} says which agent but not which tickets: give a model (model:ID), a "
            "client (client:NAME) or a label (label:NAME), or several"
        )
    if label is not None and not _LABEL.fullmatch(str(label)):
        raise ConfigError(
            f"{where}: the label {label!r} is not one line of up to 100 characters without "
            "a comma (clients send labels comma-separated in metadata.ticketproxy_labels)"
        )
    return AgentRoute(
        editor=editor,
        repository=repository,
        workflow=workflow,
        ref=ref,
        model=None if model is None else str(model),
        client=None if client is None else str(client),
        label=None if label is None else str(label),
    )
