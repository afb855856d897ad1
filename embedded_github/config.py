"""Who may use the sandbox and which repositories it hosts, and the file that says so."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PERMISSIONS = ("admin", "write", "read")

_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
# A GitHub App acts as its bot user, whose login is the App's slug plus "[bot]".
_BOT_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,33})\[bot\]")
_SLUG = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,33})")
_REPO = re.compile(r"[A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100}")


class SandboxConfigError(ValueError):
    """The sandbox configuration is malformed; the message names the file and the field."""


@dataclass(frozen=True)
class SandboxUser:
    """A GitHub account the sandbox knows, with its token and its permission on every repo."""

    login: str
    id: int
    token: str = field(repr=False)
    permission: str = "write"
    name: str | None = None

    def __post_init__(self) -> None:
        """Reject values GitHub could never hand out."""
        if not (_LOGIN.fullmatch(self.login) or _BOT_LOGIN.fullmatch(self.login)):
            raise ValueError(f"invalid GitHub login {self.login!r}")
        if self.permission not in PERMISSIONS:
            raise ValueError(
                f"permission of {self.login!r} must be one of {', '.join(PERMISSIONS)}, "
                f"not {self.permission!r}"
            )
        if not self.token:
            raise ValueError(f"token of {self.login!r} must not be empty")


@dataclass(frozen=True)
class SandboxApp:
    """A GitHub App installed on every hosted repository, acting as its bot user."""

    id: int
    slug: str
    public_key_pem: str = field(repr=False)
    installation_id: int
    bot_login: str
    bot_id: int

    def __post_init__(self) -> None:
        """Reject values GitHub could never hand out."""
        if not _SLUG.fullmatch(self.slug):
            raise ValueError(f"invalid GitHub App slug {self.slug!r}")
        if self.bot_login != f"{self.slug}[bot]":
            raise ValueError(f"the bot login of App {self.slug!r} must be {self.slug}[bot]")
        for name in ("id", "installation_id", "bot_id"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} of App {self.slug!r} must be a positive integer")
        if "-----BEGIN PUBLIC KEY-----" not in self.public_key_pem:
            raise ValueError(f"public_key_pem of App {self.slug!r} must be a PEM public key")

    def bot_user(self, *, token: str) -> SandboxUser:
        """Return the bot user the App's installation tokens act as (write on every repo)."""
        return SandboxUser(self.bot_login, self.bot_id, token, "write", self.slug)


@dataclass(frozen=True)
class SandboxConfig:
    """The users, repositories and GitHub Apps a sandbox starts with."""

    users: tuple[SandboxUser, ...]
    repos: tuple[str, ...]
    apps: tuple[SandboxApp, ...] = ()

    def __post_init__(self) -> None:
        """Reject duplicate logins, ids or tokens and malformed repository names."""
        for attribute in ("login", "id", "token"):
            seen: set[object] = set()
            for user in self.users:
                value = getattr(user, attribute)
                if value in seen:
                    # Never echo a token back, even a duplicated one.
                    shown = "(hidden)" if attribute == "token" else repr(value)
                    raise ValueError(f"two users share the {attribute} {shown}")
                seen.add(value)
        for attribute in ("id", "slug", "installation_id", "bot_id"):
            seen_app: set[object] = set()
            for app in self.apps:
                value = getattr(app, attribute)
                if value in seen_app:
                    raise ValueError(f"two apps share the {attribute} {value!r}")
                seen_app.add(value)
        logins = {user.login.lower() for user in self.users}
        user_ids = {user.id for user in self.users}
        for app in self.apps:
            if app.bot_login.lower() in logins or app.bot_id in user_ids:
                raise ValueError(f"the bot of App {app.slug!r} shares a login or id with a user")
        for repo in self.repos:
            if not _REPO.fullmatch(repo):
                raise ValueError(f"repository {repo!r} is not of the form owner/name")


def load_sandbox_config(path: Path) -> SandboxConfig:
    """Read a sandbox configuration from its JSON file."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SandboxConfigError(f"{path}: cannot read the sandbox config: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise SandboxConfigError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise SandboxConfigError(f"{path}: expected a JSON object with 'users' and 'repos'")
    users_raw = _require(path, raw, "users", list)
    repos_raw = _require(path, raw, "repos", list)
    users = tuple(_parse_user(path, index, item) for index, item in enumerate(users_raw))
    apps_raw = _require(path, raw, "apps", list) if "apps" in raw else []
    apps = tuple(_parse_app(path, index, item) for index, item in enumerate(apps_raw))
    repos: list[str] = []
    for index, repo in enumerate(repos_raw):
        if not isinstance(repo, str):
            raise SandboxConfigError(f"{path}: repos[{index}] must be a string 'owner/name'")
        repos.append(repo)
    try:
        return SandboxConfig(users=users, repos=tuple(repos), apps=apps)
    except ValueError as exc:
        raise SandboxConfigError(f"{path}: {exc}") from exc


def save_sandbox_config(path: Path, config: SandboxConfig) -> None:
    """Write a sandbox configuration atomically, readable by its owner only (it holds tokens)."""
    document: dict[str, Any] = {
        "users": [
            {
                "login": user.login,
                "id": user.id,
                "token": user.token,
                "permission": user.permission,
                **({"name": user.name} if user.name is not None else {}),
            }
            for user in config.users
        ],
        "repos": list(config.repos),
    }
    if config.apps:
        document["apps"] = [
            {
                "id": app.id,
                "slug": app.slug,
                "public_key_pem": app.public_key_pem,
                "installation_id": app.installation_id,
                "bot_login": app.bot_login,
                "bot_id": app.bot_id,
            }
            for app in config.apps
        ]
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file 0600, so no other user can read the tokens even briefly.
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o600)
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def _require(path: Path, raw: dict[str, Any], key: str, kind: type) -> Any:
    if key not in raw:
        raise SandboxConfigError(f"{path}: missing field '{key}'")
    value = raw[key]
    if not isinstance(value, kind):
        raise SandboxConfigError(f"{path}: field '{key}' must be a {kind.__name__}")
    return value


def _parse_user(path: Path, index: int, item: object) -> SandboxUser:
    where = f"{path}: users[{index}]"
    if not isinstance(item, dict):
        raise SandboxConfigError(f"{where} must be an object")
    for key, kind in (("login", str), ("id", int), ("token", str)):
        if key not in item:
            raise SandboxConfigError(f"{where}: missing field '{key}'")
        value = item[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise SandboxConfigError(f"{where}.{key} must be a {kind.__name__}")
    permission = item.get("permission", "write")
    if not isinstance(permission, str):
        raise SandboxConfigError(f"{where}.permission must be a string")
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise SandboxConfigError(f"{where}.name must be a string or null")
    try:
        return SandboxUser(
            login=item["login"],
            id=item["id"],
            token=item["token"],
            permission=permission,
            name=name,
        )
    except ValueError as exc:
        raise SandboxConfigError(f"{where}: {exc}") from exc


def _parse_app(path: Path, index: int, item: object) -> SandboxApp:
    where = f"{path}: apps[{index}]"
    if not isinstance(item, dict):
        raise SandboxConfigError(f"{where} must be an object")
    fields = (
        ("id", int),
        ("slug", str),
        ("public_key_pem", str),
        ("installation_id", int),
        ("bot_id", int),
    )
    for key, kind in fields:
        if key not in item:
            raise SandboxConfigError(f"{where}: missing field '{key}'")
        value = item[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise SandboxConfigError(f"{where}.{key} must be a {kind.__name__}")
    bot_login = item.get("bot_login", f"{item['slug']}[bot]")
    if not isinstance(bot_login, str):
        raise SandboxConfigError(f"{where}.bot_login must be a string")
    try:
        return SandboxApp(
            id=item["id"],
            slug=item["slug"],
            public_key_pem=item["public_key_pem"],
            installation_id=item["installation_id"],
            bot_login=bot_login,
            bot_id=item["bot_id"],
        )
    except ValueError as exc:
        raise SandboxConfigError(f"{where}: {exc}") from exc
