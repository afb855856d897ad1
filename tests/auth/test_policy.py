"""Tests for auth.policy and auth.review_decision: the rules, and what they decide of answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from auth.errors import AuthError, PolicyError
from auth.policy import ReviewPolicy
from auth.review_decision import Command, decide
from tests.helpers.autogpt_replies import autogpt
from ticketing.commands import commands_in

DEFAULT = ReviewPolicy.default()


def required(content: str | None, tool_calls: tuple[tuple[str, str], ...] = ()) -> int:
    """Return the approvals the default policy asks of an answer."""
    return decide(DEFAULT, commands_in(content, tool_calls)).required_approvals


# --- the default policy ---------------------------------------------------------------------


def test_plain_text_answer_is_released_at_once() -> None:
    """An answer with no command needs no approval."""
    decision = decide(DEFAULT, commands_in("The tests pass; nothing to do.", ()))
    assert decision.required_approvals == 0
    assert decision.findings == ()


@pytest.mark.parametrize(
    "name", ["execute_shell", "execute_python_code", "run_tests", "my_SHELL_tool", "EXECUTE_X"]
)
def test_shell_and_code_execution_needs_one_approval(name: str) -> None:
    """Command names matching execute_*, run_* or *shell* (any case) wait for a reviewer."""
    decision = decide(DEFAULT, commands_in(None, [(name, "{}")]))
    assert decision.required_approvals == 1
    [finding] = decision.findings
    assert (finding.rule, finding.command, finding.argument) == (
        "shell and code execution",
        name,
        None,
    )
    assert name in finding.detail


def test_write_inside_the_workspace_is_released_at_once() -> None:
    """The captured AutoGPT write of hello.txt stays in the workspace and needs nobody."""
    assert required(autogpt("write_file", {"filename": "hello.txt", "contents": "x"})) == 0
    assert required(autogpt("open_file", {"file_path": "notes/today.md"})) == 0
    assert required(autogpt("open_file", {"file_path": "/workspace/notes/a.md"})) == 0


@pytest.mark.parametrize(
    ("argument", "path"),
    [
        ("filename", "/etc/passwd"),
        ("filename", "../../home/user/.ssh/authorized_keys"),
        ("filename", "notes/../../escape"),
        ("filename", "~/.bashrc"),
        ("filename", "C:\\Windows\\system.ini"),
        ("filename", "..\\..\\secrets"),
        ("file_path", "/workspace/../etc/cron.d/x"),
        ("file_path", "/workspacefoo/x"),
        ("file_path", "/tmp/x"),
    ],
)
def test_file_write_escaping_the_workspace_needs_one_approval(argument: str, path: str) -> None:
    """Absolute, home, drive-letter and .. paths outside the workspace wait for a reviewer."""
    decision = decide(DEFAULT, commands_in(autogpt("write_file", {argument: path}), ()))
    assert decision.required_approvals == 1
    [finding] = decision.findings
    assert finding.rule == "file writes outside the workspace"
    assert finding.argument == argument
    assert "outside" in finding.detail


def test_write_with_unreadable_arguments_fails_closed() -> None:
    """A write whose arguments cannot be read waits for a reviewer."""
    decision = decide(DEFAULT, commands_in(None, [("write_to_file", "[1, 2]")]))
    assert decision.required_approvals == 1
    assert "cannot be checked" in decision.findings[0].detail


def test_web_access_needs_one_approval() -> None:
    """web_search and read_webpage wait for a reviewer."""
    assert required(autogpt("read_webpage", {"url": "https://example.com"})) == 1
    assert required(None, (("web_search", '{"query": "x"}'),)) == 1


def test_finish_and_ask_user_are_released_at_once() -> None:
    """Harmless AutoGPT commands match no rule."""
    assert required(autogpt("finish", {"reason": "done"})) == 0
    assert required(autogpt("ask_user", {"question": "which file?"})) == 0


# --- custom policies ------------------------------------------------------------------------


def test_highest_approval_count_among_matching_rules_wins() -> None:
    """A command matching a 1-approval and a 2-approval rule needs 2."""
    policy = ReviewPolicy.from_toml(
        """
        [[rules]]
        name = "any shell"
        tools = ["*shell*"]
        approvals = 1
        [[rules]]
        name = "root shell"
        tools = ["execute_shell"]
        arguments = { "command" = "re:\\\\bsudo\\\\b" }
        approvals = 2
        """
    )
    mild = decide(policy, commands_in(None, [("execute_shell", '{"command": "ls"}')]))
    harsh = decide(policy, commands_in(None, [("execute_shell", '{"command": "sudo rm x"}')]))
    assert mild.required_approvals == 1
    assert harsh.required_approvals == 2
    assert [f.rule for f in harsh.findings] == ["any shell", "root shell"]


def test_rule_without_approvals_takes_reviewers_required() -> None:
    """reviewers_required is the count of a rule that does not set its own."""
    policy = ReviewPolicy.from_toml('reviewers_required = 3\n[[rules]]\nname = "x"\ntools = ["x"]')
    assert policy.rules[0].approvals == 3
    assert decide(policy, [Command("x", {}, "tool_call")]).required_approvals == 3


def test_minimum_approvals_holds_back_even_plain_answers() -> None:
    """minimum_approvals = 1 makes every answer wait, with or without commands."""
    policy = ReviewPolicy.from_toml("minimum_approvals = 1")
    assert decide(policy, ()).required_approvals == 1


def test_url_pattern_on_nested_arguments_matches() -> None:
    """An argument rule without tools looks into nested objects and lists of every command."""
    policy = ReviewPolicy.from_toml(
        '[[rules]]\nname = "links"\narguments = { "*url*" = "url" }\napprovals = 1'
    )
    nested = {"options": {"urls": ["docs/a.md", "file:///etc/shadow"]}}
    decision = decide(policy, [Command("fetch", nested, "tool_call")])
    assert decision.required_approvals == 1
    assert decision.findings[0].argument == "options.urls"
    assert decide(policy, [Command("fetch", {"url": "docs/a.md"}, "tool_call")]).findings == ()


def test_arguments_nested_5000_deep_are_walked_without_recursion() -> None:
    """A risky leaf 5,000 objects down is found, not lost to a RecursionError."""
    policy = ReviewPolicy.from_toml(
        '[[rules]]\nname = "links"\narguments = { "*url*" = "url" }\napprovals = 1'
    )
    arguments: dict[str, object] = {"url": "file:///etc/shadow"}
    for _ in range(5_000):
        arguments = {"a": arguments}
    decision = decide(policy, [Command("fetch", arguments, "tool_call")])
    assert decision.required_approvals == 1
    assert decision.findings[0].argument == "a." * 5_000 + "url"


# --- policy errors --------------------------------------------------------------------------


def test_policy_error_is_an_auth_error() -> None:
    """PolicyError sits in the auth exception tree."""
    assert issubclass(PolicyError, AuthError)


def test_missing_policy_file_names_the_path_and_the_default(tmp_path: Path) -> None:
    """Loading a missing file is an error naming it, not an empty policy."""
    with pytest.raises(PolicyError, match=r"no review policy file at .*nope\.toml.*default"):
        ReviewPolicy.load(tmp_path / "nope.toml")


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    """A TOML syntax error names the file it is in."""
    path = tmp_path / "policy.toml"
    path.write_text("[[rules]\nname=", encoding="utf-8")
    with pytest.raises(PolicyError, match=r"policy\.toml is not valid TOML"):
        ReviewPolicy.load(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("reviewer_required = 1", r"unknown setting reviewer_required; allowed are"),
        ('[[rules]]\ntools = ["x"]', r"rule 1 needs a name, like name ="),
        ('[[rules]]\nname = "r"', r"rule 1 \('r'\) matches nothing: give tools"),
        ('[[rules]]\nname = "r"\ntools = []', r"rule 1 \('r'\): tools must be a non-empty list"),
        ('[[rules]]\nname = "r"\ntool = ["x"]', r"\('r'\): unknown key tool; allowed are"),
        (
            '[[rules]]\nname = "r"\ntools = ["x"]\napprovals = true',
            r"\('r'\): approvals must be a whole number of at least 0, like approvals = 1",
        ),
        ('[[rules]]\nname = "r"\ntools = ["x"]\napprovals = -1', r"approvals must be a whole"),
        (
            '[[rules]]\nname = "r"\narguments = { "p" = "inside:/x" }',
            r"\('r'\): argument 'p': unknown pattern 'inside:/x'; use \"outside:<dir>\"",
        ),
        (
            '[[rules]]\nname = "r"\narguments = { "p" = "re:(" }',
            r"argument 'p': 're:\(' is not a valid regular expression",
        ),
        (
            '[[rules]]\nname = "r"\ntools = ["x"]\n[[rules]]\nname = "r"\ntools = ["y"]',
            r"rule 2 repeats the name 'r'",
        ),
        ("reviewers_required = 0", r"reviewers_required must be a whole number of at least 1"),
    ],
    ids=[
        "top-typo",
        "no-name",
        "matches-nothing",
        "empty-tools",
        "rule-typo",
        "bool-approvals",
        "negative",
        "bad-pattern",
        "bad-regex",
        "duplicate-name",
        "zero-reviewers",
    ],
)
def test_policy_mistake_names_the_file_the_rule_and_the_fix(text: str, message: str) -> None:
    """Each mistake is a PolicyError naming where it is and what to write instead."""
    with pytest.raises(PolicyError, match=message) as caught:
        ReviewPolicy.from_toml(text, "policy file team.toml")
    assert str(caught.value).startswith("policy file team.toml")
