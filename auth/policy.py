"""The review policy: which commands in an answer need a security reviewer's approval.

Pure: TOML text and commands in, decisions out. :func:`decide` matches the commands an
answer would make the agent run against a :class:`ReviewPolicy` and returns how many
distinct signed approvals the answer needs before release (0: release at once), with the
findings to show the reviewer. :func:`tally_review` then counts the verified approvals and
rejections of one answer, with the same rules for the live desk and the offline audit.

The policy file format is documented in the packaged ``auth/default-policy.toml``.
Mistakes in a policy raise :class:`~auth.errors.PolicyError` naming the file, the rule and
the fix. Findings quote untrusted names and values as JSON strings; whoever shows them on a
ticket must still escape them for markdown.
"""

from __future__ import annotations

import fnmatch
import json
import os
import posixpath
import re
import tomllib
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from auth.errors import PolicyError
from auth.logins import same_login
from auth.roles import Act
from auth.verify import Accepted

__all__ = [
    "ArgumentCheck",
    "Command",
    "Judgement",
    "ReviewDecision",
    "ReviewPolicy",
    "ReviewTally",
    "RiskFinding",
    "Rule",
    "decide",
    "tally_review",
]

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

CommandSource = Literal["tool_call", "autogpt"]
TallyState = Literal["approved", "rejected", "pending"]


@dataclass(frozen=True)
class Command:
    """One command an answer makes the agent run: a tool call or an AutoGPT command."""

    name: str
    arguments: Mapping[str, Any]
    source: CommandSource
    # False when the arguments were not a JSON object: rules on arguments then match,
    # because what cannot be read cannot be shown to be harmless.
    readable: bool = True

    def show(self) -> str:
        """Return the command as a reviewer should read it: name and JSON arguments."""
        arguments = json.dumps(self.arguments, ensure_ascii=False, sort_keys=True)
        return (
            f"{self.name} {arguments}" if self.readable else f"{self.name} (unreadable arguments)"
        )


# --- the policy -----------------------------------------------------------------------------


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
            return f"is the URL {_quote(value)}" if _URL_RE.match(value) else None
        if self._regex is not None:
            return (
                f"is {_quote(value)}, matching {_quote(self.pattern[3:])}"
                if self._regex.search(value)
                else None
            )
        base = self.pattern.removeprefix("outside:")
        return f"is {_quote(value)}, outside {_quote(base)}" if _escapes(value, base) else None


@dataclass(frozen=True)
class Rule:
    """A named kind of risky command and the approvals it needs."""

    name: str
    tools: tuple[str, ...]
    arguments: tuple[ArgumentCheck, ...]
    approvals: int


@dataclass(frozen=True)
class RiskFinding:
    """Why a rule matched a command, in one sentence for the reviewer."""

    rule: str
    command: str
    argument: str | None
    detail: str


@dataclass(frozen=True)
class ReviewDecision:
    """How many distinct approvals an answer needs (0: release at once), and why."""

    required_approvals: int
    findings: tuple[RiskFinding, ...]


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


def decide(policy: ReviewPolicy, commands: Sequence[Command]) -> ReviewDecision:
    """Return the approvals the commands need: the highest count among matching rules."""
    required = policy.minimum_approvals
    findings: list[RiskFinding] = []
    for rule in policy.rules:
        matched = False
        for command in commands:
            for finding in _rule_findings(rule, command):
                findings.append(finding)
                matched = True
        if matched:
            required = max(required, rule.approvals)
    return ReviewDecision(required_approvals=required, findings=tuple(findings))


def _rule_findings(rule: Rule, command: Command) -> Iterator[RiskFinding]:
    name = command.name.lower()
    glob = next((g for g in rule.tools if fnmatch.fnmatchcase(name, g.lower())), None)
    if glob is None:
        return
    shown = _quote(command.name)
    if not rule.arguments:
        yield RiskFinding(rule.name, command.name, None, f"command {shown} matches {_quote(glob)}")
        return
    if not command.readable:
        yield RiskFinding(
            rule.name,
            command.name,
            None,
            f"the arguments of {shown} are not a JSON object, so they cannot be checked",
        )
        return
    for path, leaf, value in _leaves(command.arguments):
        for check in rule.arguments:
            if not fnmatch.fnmatchcase(leaf.lower(), check.name_glob.lower()):
                continue
            why = check.match(value)
            if why is not None:
                detail = f"argument {_quote(path)} of {shown} {why}"
                yield RiskFinding(rule.name, command.name, path, detail)


def _leaves(arguments: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str, Any]]:
    """Yield (dotted path, own name, value) for every scalar under an arguments object."""
    for key, value in arguments.items():
        path = f"{prefix}{key}"
        # A deque: arguments may hold long lists, and list.pop(0) would make this quadratic.
        # Every value of a repeated JSON key arrives as one tuple, and is walked like a list.
        stack = deque([value])
        while stack:
            item = stack.popleft()
            if isinstance(item, dict):
                yield from _leaves(item, f"{path}.")
            elif isinstance(item, list | tuple):
                stack.extendleft(reversed(item))
            else:
                yield path, str(key), item


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


def _quote(value: str) -> str:
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


# --- counting approvals ---------------------------------------------------------------------


@dataclass(frozen=True)
class Judgement:
    """A verified approval or rejection of an answer: who, with which key, and when posted."""

    act: Act
    reviewer: str
    kid: str
    jti: str
    digest: str
    comment_id: int
    posted_at: datetime

    @classmethod
    def from_accepted(cls, verdict: Accepted, *, comment_id: int, posted_at: datetime) -> Judgement:
        """Build a judgement from :func:`auth.verify.verify_comment`'s approve/reject verdict."""
        if verdict.act is Act.ANSWER:
            raise ValueError("an answer is not a judgement; verify with acts={APPROVE, REJECT}")
        return cls(
            act=verdict.act,
            reviewer=verdict.signer,
            kid=verdict.kid,
            jti=verdict.jti,
            digest=verdict.digest,
            comment_id=comment_id,
            posted_at=posted_at,
        )


@dataclass(frozen=True)
class ReviewTally:
    """Where an answer's review stands, who counted, and which judgements did not."""

    state: TallyState
    approvals: tuple[Judgement, ...]
    rejection: Judgement | None
    ignored: tuple[str, ...]

    @property
    def approvers(self) -> tuple[str, ...]:
        """Return the logins whose approvals counted, in order."""
        return tuple(j.reviewer for j in self.approvals)


def tally_review(
    required_approvals: int,
    *,
    answer_signer: str,
    answer_digest: str,
    answer_posted_at: datetime,
    judgements: Sequence[Judgement],
) -> ReviewTally:
    """Count judgements, in the order they were posted, against the approvals required.

    An approval counts once per reviewer, never from the answer's own signer, only for this
    answer's digest and only if posted after the answer. The first decisive event wins: the
    required number of approvals releases the answer, and a rejection before that stops it.
    Approvals after the decision are still listed, but change nothing.
    """
    counted: list[Judgement] = []
    ignored: list[str] = []
    rejection: Judgement | None = None
    state: TallyState = "approved" if required_approvals <= 0 else "pending"
    for judgement in sorted(judgements, key=lambda j: (j.posted_at, j.comment_id)):
        who = judgement.reviewer
        verb = "approval" if judgement.act is Act.APPROVE else "rejection"
        if judgement.digest != answer_digest:
            ignored.append(f"{who}'s {verb} (comment {judgement.comment_id}) is for another text")
            continue
        if judgement.posted_at < answer_posted_at:
            ignored.append(
                f"{who}'s {verb} (comment {judgement.comment_id}) was posted before the answer"
            )
            continue
        if judgement.act is Act.REJECT:
            if state == "pending":
                state, rejection = "rejected", judgement
            elif state == "approved":
                why = "needed no approval" if required_approvals <= 0 else "was already approved"
                ignored.append(f"{who}'s rejection did not count: the answer {why}")
            continue
        if same_login(who, answer_signer):
            ignored.append(f"{who} approved their own answer; another reviewer must approve it")
            continue
        if any(same_login(who, j.reviewer) for j in counted):
            ignored.append(f"{who} approved more than once; each reviewer counts once")
            continue
        if state == "rejected":
            ignored.append(f"{who}'s approval came after the answer was rejected")
            continue
        counted.append(judgement)
        if state == "pending" and len(counted) >= required_approvals:
            state = "approved"
    return ReviewTally(
        state=state, approvals=tuple(counted), rejection=rejection, ignored=tuple(ignored)
    )
