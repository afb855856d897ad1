"""Tests for auth.policy: reading commands from answers, deciding review, counting approvals."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from auth.errors import AuthError, PolicyError
from auth.policy import (
    Command,
    Judgement,
    ReviewPolicy,
    commands_in,
    decide,
    tally_review,
)
from auth.roles import Act
from auth.verify import Accepted
from tests.helpers.signing_team import NOW

SAMPLES = Path(__file__).parents[1] / "samples" / "autogpt"
DEFAULT = ReviewPolicy.default()
DIGEST = "a" * 64
OTHER_DIGEST = "b" * 64


def autogpt(name: str, arguments: object, *, legacy: bool = False) -> str:
    """Return an AutoGPT reply whose command is ``name`` with ``arguments``."""
    call = {"name": name, "args" if legacy else "arguments": arguments}
    return json.dumps({"thoughts": {"text": "t"}, "command" if legacy else "use_tool": call})


def required(content: str | None, tool_calls: tuple[tuple[str, str], ...] = ()) -> int:
    """Return the approvals the default policy asks of an answer."""
    return decide(DEFAULT, commands_in(content, tool_calls)).required_approvals


# --- reading commands -----------------------------------------------------------------------


def test_tool_calls_are_read_with_their_json_arguments() -> None:
    """Each (name, JSON arguments) pair becomes a tool_call command with parsed arguments."""
    commands = commands_in(None, [("execute_shell", '{"command": "ls -la"}')])
    assert commands == (Command("execute_shell", {"command": "ls -la"}, "tool_call"),)


def test_autogpt_use_tool_in_the_content_is_a_command() -> None:
    """AutoGPT 0.5's JSON reply names its command under use_tool."""
    [command] = commands_in(autogpt("write_file", {"filename": "a.txt"}), ())
    assert (command.name, command.arguments, command.source) == (
        "write_file",
        {"filename": "a.txt"},
        "autogpt",
    )


def test_legacy_autogpt_command_with_args_is_a_command() -> None:
    """The older {"command": {"name", "args"}} shape is read too."""
    [command] = commands_in(autogpt("execute_shell", {"command_line": "id"}, legacy=True), ())
    assert command.name == "execute_shell"
    assert command.arguments == {"command_line": "id"}


def test_command_in_a_json_code_fence_surrounded_by_prose_is_found() -> None:
    """Agents also look inside a fenced block, so the policy must as well."""
    content = f"Here is my plan.\n\n```json\n{autogpt('execute_python_code', {'code': '1'})}\n```\n"
    assert [c.name for c in commands_in(content, ())] == ["execute_python_code"]


def test_command_in_braces_inside_prose_is_found() -> None:
    """A JSON object embedded in prose, as AutoGPT's lenient parser finds it, counts."""
    content = f"Sure! {autogpt('web_search', {'query': 'x'})} Hope that helps."
    assert [c.name for c in commands_in(content, ())] == ["web_search"]


def test_tool_call_block_in_raw_answer_text_is_a_command() -> None:
    """A ```tool_call block, as an editor writes it, is read from unreleased answer text."""
    text = '```tool_call\n{"name": "execute_shell", "arguments": {"command": "ls"}}\n```'
    assert commands_in(text, ()) == (Command("execute_shell", {"command": "ls"}, "tool_call"),)


def test_prose_and_broken_json_hold_no_command() -> None:
    """Content that is not JSON is tolerated and holds no command."""
    assert commands_in("Just run the tests { and see", ()) == ()
    assert commands_in("", ()) == ()
    assert commands_in(None, ()) == ()
    assert commands_in('{"thoughts": {"text": "no command"}}', ()) == ()


def test_repeated_use_tool_key_yields_every_command() -> None:
    """Parsers disagree on which duplicate key wins, so every one is a command."""
    content = (
        '{"use_tool": {"name": "finish", "arguments": {}},'
        ' "use_tool": {"name": "execute_shell", "arguments": {"command": "rm -rf /"}}}'
    )
    assert [c.name for c in commands_in(content, ())] == ["finish", "execute_shell"]


def test_unreadable_tool_call_arguments_are_marked_unreadable() -> None:
    """Arguments that are not a JSON object are kept as unreadable, never silently empty."""
    [command] = commands_in(None, [("write_file", "not json")])
    assert command.readable is False
    assert command.arguments == {}


def test_twice_encoded_arguments_are_decoded() -> None:
    """Arguments sent as a JSON string holding JSON are read as the object inside."""
    [command] = commands_in(None, [("write_file", json.dumps('{"filename": "/etc/x"}'))])
    assert command.arguments == {"filename": "/etc/x"}


def test_captured_autogpt_reply_holds_its_write_file_command() -> None:
    """The assistant reply AutoGPT echoed in a real captured request is read as one command."""
    recorded = json.loads(
        (SAMPLES / "run1_default" / "006_POST_v1_chat_completions.json").read_text()
    )
    reply = next(m for m in recorded["body"]["messages"] if m["role"] == "assistant")
    assert commands_in(reply["content"], ()) == (
        Command("write_file", {"filename": "hello.txt", "contents": "hello from stub"}, "autogpt"),
    )


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


# --- counting approvals ---------------------------------------------------------------------


def judgement(
    reviewer: str,
    seconds: int,
    *,
    act: Act = Act.APPROVE,
    digest: str = DIGEST,
    comment_id: int | None = None,
) -> Judgement:
    """Return a verified judgement by ``reviewer`` posted ``seconds`` after NOW."""
    return Judgement(
        act=act,
        reviewer=reviewer,
        kid=f"kid-{reviewer}",
        jti=f"jti-{reviewer}-{seconds}",
        digest=digest,
        comment_id=comment_id or 100 + seconds,
        posted_at=NOW + timedelta(seconds=seconds),
    )


def test_two_distinct_reviewers_approve_an_answer_needing_two() -> None:
    """Two approvals by different reviewers release an answer that needs two."""
    result = tally_review(
        2,
        answer_signer="alice",
        answer_digest=DIGEST,
        answer_posted_at=NOW,
        judgements=[judgement("bob", 10), judgement("carol", 20)],
    )
    assert result.state == "approved"
    assert result.approvers == ("bob", "carol")


def test_self_approval_does_not_count() -> None:
    """The answer's own author approving it (in any letter case) leaves it pending."""
    result = tally_review(
        1,
        answer_signer="alice",
        answer_digest=DIGEST,
        answer_posted_at=NOW,
        judgements=[judgement("Alice", 10)],
    )
    assert result.state == "pending"
    assert result.approvers == ()
    assert "approved their own answer" in result.ignored[0]


def test_one_reviewer_approving_twice_counts_once() -> None:
    """A double click is one approval, not two."""
    result = tally_review(
        2,
        answer_signer="alice",
        answer_digest=DIGEST,
        answer_posted_at=NOW,
        judgements=[judgement("bob", 10), judgement("BOB", 20)],
    )
    assert result.state == "pending"
    assert result.approvers == ("bob",)
    assert "more than once" in result.ignored[0]


def test_approval_for_another_digest_does_not_count() -> None:
    """An approval of a different text leaves the answer pending."""
    result = tally_review(
        1,
        answer_signer="alice",
        answer_digest=DIGEST,
        answer_posted_at=NOW,
        judgements=[judgement("bob", 10, digest=OTHER_DIGEST)],
    )
    assert result.state == "pending"
    assert "for another text" in result.ignored[0]


def test_approval_posted_before_the_answer_does_not_count() -> None:
    """An approval that predates the answer cannot have reviewed it."""
    result = tally_review(
        1,
        answer_signer="alice",
        answer_digest=DIGEST,
        answer_posted_at=NOW,
        judgements=[judgement("bob", -30)],
    )
    assert result.state == "pending"
    assert "before the answer" in result.ignored[0]


def test_rejection_before_enough_approvals_stops_the_answer() -> None:
    """A rejection wins over approvals that come after it."""
    result = tally_review(
        2,
        answer_signer="alice",
        answer_digest=DIGEST,
        answer_posted_at=NOW,
        judgements=[
            judgement("bob", 10),
            judgement("carol", 20, act=Act.REJECT),
            judgement("dave", 30),
        ],
    )
    assert result.state == "rejected"
    assert result.rejection is not None
    assert result.rejection.reviewer == "carol"
    assert result.approvers == ("bob",)


def test_rejection_after_approval_changes_nothing() -> None:
    """Once approved (and released) a later rejection is only noted."""
    result = tally_review(
        1,
        answer_signer="alice",
        answer_digest=DIGEST,
        answer_posted_at=NOW,
        judgements=[judgement("carol", 20, act=Act.REJECT), judgement("bob", 10)],
    )
    assert result.state == "approved"
    assert result.rejection is None
    assert "already approved" in result.ignored[0]


def test_answer_needing_no_approval_is_approved_with_no_judgements() -> None:
    """required 0 is approved at once."""
    result = tally_review(
        0, answer_signer="alice", answer_digest=DIGEST, answer_posted_at=NOW, judgements=()
    )
    assert result.state == "approved"


def test_judgement_is_not_made_from_an_answer_verdict() -> None:
    """Judgement.from_accepted refuses an answer verdict, so answers never count as approvals."""
    answer = Accepted("t", Act.ANSWER, "alice", "k", "j", DIGEST, NOW, NOW)
    with pytest.raises(ValueError, match="not a judgement"):
        Judgement.from_accepted(answer, comment_id=1, posted_at=NOW)
