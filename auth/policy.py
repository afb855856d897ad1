"""The review policy: its rules, their argument checks, and reading them from a TOML file.

Pure apart from reading the policy file. A :class:`ReviewPolicy` says which commands in an
answer need a security reviewer's approval; :func:`auth.review_decision.decide` applies it.
The policy file format is documented in the packaged ``auth/default-policy.toml``.
Mistakes in a policy raise :class:`~auth.errors.PolicyError` naming the file, the rule and
the fix.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from auth.errors import PolicyError

__all__ = ["ArgumentCheck", "ReviewPolicy", "Rule", "quote_untrusted"]

DEFAULT_POLICY_RESOURCE = "default-policy.toml"

_TOP_KEYS = ("reviewers_required", "minimum_approvals", "rules")
_RULE_KEYS = ("name", "tools", "arguments", "approvals")
_PATTERN_HELP = '"outside:<dir>", "re:<regex>" or "url"'
_URL_RE = re.compile(
    r"\s*(?:(?:[a-z][a-z0-9+.\-]*:)?//|(?:data|javascript|mailto|file|about|blob):|www\.)",
    re.IGNORECASE,
)
_DRIVE_RE = re.compile(r"[A-Za-z]:")
_QUOTE_LIMIT = 80


@dataclass(frozen=True)
class ArgumentCheck:
    """An argument-name glob and the pattern its values are checked against."""

    name_glob: str
    pattern: str
    _regex: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Refuse an empty glob or an unknown pattern, and compile a regular expression."""
        if not self.name_glob.strip():
            raise PolicyError("an argument name glob is empty")
        if self.pattern.startswith("re:"):
            try:
                object.__setattr__(self, "_regex", re.compile(self.pattern[3:]))
            except re.error as exc:
                raise PolicyError(
                    f"{self.pattern!r} is not a valid regular expression: {exc}"
                ) from None
        elif self.pattern != "url" and not (
            self.pattern.startswith("outside:") and self.pattern.removeprefix("outside:").strip()
        ):
            raise PolicyError(f"unknown pattern {self.pattern!r}; use {_PATTERN_HELP}")

    def match(self, value: Any) -> str | None:
        """Return why ``value`` matches the pattern, or None when it does not."""
        if not isinstance(value, str):
            return None
        if self.pattern == "url":
            return f"is the URL {quote_untrusted(value)}" if _URL_RE.match(value) else None
        if self._regex is not None:
            return (
                f"is {quote_untrusted(value)}, matching {quote_untrusted(self.pattern[3:])}"
                if self._regex.search(value)
                else None
            )
        base = self.pattern.removeprefix("outside:")
        return (
            f"is {quote_untrusted(value)}, outside {quote_untrusted(base)}"
            if _escapes(value, base)
            else None
        )


@dataclass(frozen=True)
class Rule:
    """A named kind of risky command and the approvals it needs."""

    name: str
    tools: tuple[str, ...]
    arguments: tuple[ArgumentCheck, ...]
    approvals: int


@dataclass(frozen=True)
class ReviewPolicy:
    """The rules that decide which answers wait for a reviewer."""

    rules: tuple[Rule, ...]
    reviewers_required: int = 1
    minimum_approvals: int = 0
    source: str = "review policy"

    @classmethod
    def from_toml(cls, text: str, source: str = "review policy") -> ReviewPolicy:
        """Parse a policy from TOML text; ``source`` names it in errors."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise PolicyError(f"{source} is not valid TOML: {exc}") from None
        return _policy(data, source)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ReviewPolicy:
        """Read a policy file; a missing file is an error, not an empty policy."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise PolicyError(
                f"no review policy file at {path}; fix the path, or start from the packaged "
                "default (auth/default-policy.toml)"
            ) from None
        except OSError as exc:
            raise PolicyError(f"cannot read review policy file {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise PolicyError(f"review policy file {path} is not UTF-8 text") from None
        return cls.from_toml(text, f"review policy file {path}")

    @classmethod
    def load_or_default(cls, path: str | os.PathLike[str] | None) -> ReviewPolicy:
        """Read the policy file at ``path``, or return the packaged default without one."""
        return cls.default() if path is None else cls.load(path)

    @classmethod
    def default(cls) -> ReviewPolicy:
        """Return the packaged default policy."""
        text = resources.files("auth").joinpath(DEFAULT_POLICY_RESOURCE).read_text("utf-8")
        return cls.from_toml(text, "the default review policy")


def _escapes(value: str, base: str) -> bool:
    """Return whether path ``value``, relative to ``base``, leaves ``base`` once normalised."""
    path = value.replace("\\", "/")
    # Home directories and drive letters are somewhere else whatever the base; a NUL cuts
    # the path short in C, so nobody can tell where it points.
    if path.startswith("~") or _DRIVE_RE.match(path) or "\x00" in path:
        return True
    root = posixpath.normpath(base.replace("\\", "/"))
    joined = posixpath.normpath(posixpath.join(root, path))
    if root == ".":
        return joined.startswith("/") or joined == ".." or joined.startswith("../")
    prefix = root if root.endswith("/") else f"{root}/"
    return joined != root and not joined.startswith(prefix)


def quote_untrusted(value: str) -> str:
    """Return an untrusted name or value as a JSON string, cut short, for a finding."""
    shown = value if len(value) <= _QUOTE_LIMIT else f"{value[:_QUOTE_LIMIT]}…"
    return json.dumps(shown, ensure_ascii=False)


# --- reading a policy -----------------------------------------------------------------------


def _policy(data: Mapping[str, Any], source: str) -> ReviewPolicy:
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise PolicyError(
            f"{source}: unknown setting {', '.join(unknown)}; allowed are {', '.join(_TOP_KEYS)}"
        )
    reviewers = _count(data, "reviewers_required", 1, where=source, minimum=1)
    minimum = _count(data, "minimum_approvals", 0, where=source)
    raw_rules = data.get("rules", [])
    if not isinstance(raw_rules, list):
        raise PolicyError(f"{source}: rules must be a list of [[rules]] tables")
    rules: list[Rule] = []
    for index, raw in enumerate(raw_rules, start=1):
        rule = _rule(raw, index, reviewers, source)
        if any(rule.name == other.name for other in rules):
            raise PolicyError(
                f"{source}: rule {index} repeats the name {rule.name!r}; give each rule its own"
            )
        rules.append(rule)
    return ReviewPolicy(
        rules=tuple(rules), reviewers_required=reviewers, minimum_approvals=minimum, source=source
    )


def _rule(raw: Any, index: int, reviewers: int, source: str) -> Rule:
    where = f"{source}: rule {index}"
    if not isinstance(raw, dict):
        raise PolicyError(f"{where} must be a [[rules]] table")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise PolicyError(f'{where} needs a name, like name = "shell and code execution"')
    where = f"{where} ({name!r})"
    unknown = sorted(set(raw) - set(_RULE_KEYS))
    if unknown:
        raise PolicyError(
            f"{where}: unknown key {', '.join(unknown)}; allowed are {', '.join(_RULE_KEYS)}"
        )
    if "tools" not in raw and "arguments" not in raw:
        raise PolicyError(
            f'{where} matches nothing: give tools = ["execute_*"] or an arguments table'
        )
    tools = raw.get("tools", ["*"])
    if (
        not isinstance(tools, list)
        or not tools
        or not all(isinstance(t, str) and t.strip() for t in tools)
    ):
        raise PolicyError(f'{where}: tools must be a non-empty list of globs, like ["execute_*"]')
    checks = _argument_checks(raw.get("arguments", {}), where)
    approvals = _count(raw, "approvals", reviewers, where=where)
    return Rule(name=name, tools=tuple(tools), arguments=checks, approvals=approvals)


def _argument_checks(raw: Any, where: str) -> tuple[ArgumentCheck, ...]:
    example = 'arguments = { "*path*" = "outside:/workspace" }'
    if not isinstance(raw, dict):
        raise PolicyError(f"{where}: arguments must be a table of name glob = pattern, {example}")
    checks: list[ArgumentCheck] = []
    for glob, patterns in raw.items():
        listed = patterns if isinstance(patterns, list) else [patterns]
        if not listed:
            raise PolicyError(f"{where}: argument {glob!r} lists no pattern; use {_PATTERN_HELP}")
        for pattern in listed:
            checks.append(_argument_check(glob, pattern, f"{where}: argument {glob!r}"))
    return tuple(checks)


def _argument_check(glob: str, pattern: Any, where: str) -> ArgumentCheck:
    if not isinstance(pattern, str):
        raise PolicyError(f"{where}: the pattern must be a string: {_PATTERN_HELP}")
    try:
        return ArgumentCheck(glob, pattern)
    except PolicyError as exc:
        raise PolicyError(f"{where}: {exc}") from None


def _count(data: Mapping[str, Any], key: str, default: int, *, where: str, minimum: int = 0) -> int:
    value = data.get(key, default)
    # bool is an int in Python, but `approvals = true` is a mistake, not a count.
    if type(value) is not int or value < minimum:
        raise PolicyError(
            f"{where}: {key} must be a whole number of at least {minimum}, like {key} = 1"
        )
    return value
