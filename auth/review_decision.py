"""The review decision: how many approvals the commands in an answer need, and why.

Pure: a :class:`~auth.policy.ReviewPolicy` and :class:`Command` values in, a
:class:`ReviewDecision` out. :func:`decide` returns the highest approval count among the
rules that match (0: release at once), with the findings to show the reviewer. Findings
quote untrusted names and values as JSON strings; whoever shows them on a ticket must still
escape them for markdown.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from auth.policy import ReviewPolicy, Rule, quote_untrusted

__all__ = [
    "AGENT_RULE",
    "Command",
    "CommandSource",
    "ReviewDecision",
    "RiskFinding",
    "decide",
    "decide_for_agent",
]

CommandSource = Literal["tool_call", "autogpt"]
AGENT_RULE = "agent-answers"


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


def decide_for_agent(
    decision: ReviewDecision, commands: Sequence[Command], *, agent: str
) -> ReviewDecision:
    """Return the decision for an agent's answer: any command at all waits for a person.

    An agent identity may answer in plain text only. Its answer with a command, even one
    the policy lets a person's answer run at once, is held until a reviewer approves it.
    """
    if not commands:
        return decision
    finding = RiskFinding(
        AGENT_RULE,
        commands[0].name,
        None,
        f"{agent} may answer in plain text only; a person must approve any command it sends",
    )
    return ReviewDecision(max(1, decision.required_approvals), (*decision.findings, finding))


def _rule_findings(rule: Rule, command: Command) -> Iterator[RiskFinding]:
    name = command.name.lower()
    glob = next((g for g in rule.tools if fnmatch.fnmatchcase(name, g.lower())), None)
    if glob is None:
        return
    shown = quote_untrusted(command.name)
    if not rule.arguments:
        yield RiskFinding(
            rule.name, command.name, None, f"command {shown} matches {quote_untrusted(glob)}"
        )
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
                detail = f"argument {quote_untrusted(path)} of {shown} {why}"
                yield RiskFinding(rule.name, command.name, path, detail)


def _leaves(arguments: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """Yield (dotted path, own name, value) for every scalar under an arguments object.

    Walked with a stack, not recursion: the arguments come from an answer, and however
    deep they nest the walk must not end in a RecursionError.
    """
    # (path, own name, value), the next one to visit last; every value of a repeated JSON
    # key arrives as one tuple, and is walked like a list.
    stack: list[tuple[str, str, Any]] = [(str(k), str(k), v) for k, v in arguments.items()]
    stack.reverse()
    while stack:
        path, key, item = stack.pop()
        if isinstance(item, dict):
            stack.extend(reversed([(f"{path}.{k}", str(k), v) for k, v in item.items()]))
        elif isinstance(item, list | tuple):
            stack.extend(reversed([(path, key, v) for v in item]))
        else:
            yield path, key, item
