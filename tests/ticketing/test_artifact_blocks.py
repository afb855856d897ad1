"""Tests for artifact blocks in a signed answer: files the agent created, paths kept inside."""

from __future__ import annotations

import pytest

from ticketing.release import Refusal, Release, prepare_release
from ticketing.release.artifacts import AnswerArtifact, path_problem, read_artifacts
from ticketing.request import ChatRequest, Message

TASK_STEP = ChatRequest(
    model="agent-protocol",
    messages=(Message(role="user", content="Write the summary."),),
    answer_artifacts=True,
)
CHAT = ChatRequest(model="gpt-4o", messages=(Message(role="user", content="hi"),))


def _answer(path: str, body: str = "hello") -> str:
    return f"Here it is.\n\n```artifact path={path}\n{body}\n```\n\nDone."


def test_artifact_block_becomes_a_file_and_leaves_the_prose() -> None:
    """The block's lines, each with its newline, are the file; the prose keeps the rest."""
    read = read_artifacts(_answer("out/summary.md", "# Title\n\nline two"))
    assert read.problems == ()
    assert read.artifacts == (
        AnswerArtifact(relative_path="out/summary.md", content=b"# Title\n\nline two\n"),
    )
    assert read.text == "Here it is.\n\n\nDone."
    assert read.artifacts[0].file_name == "summary.md"


def test_two_artifact_blocks_with_other_fences_between_are_both_read() -> None:
    """A plain code block stays prose; both artifact blocks are files, tilde fences too."""
    text = "```python\nx = 1\n```\n~~~artifact path=a.txt\nA\n~~~\n```artifact path=b/c.txt\n```\n"
    read = read_artifacts(text)
    assert [a.relative_path for a in read.artifacts] == ["a.txt", "b/c.txt"]
    assert read.artifacts[1].content == b""
    assert "x = 1" in read.text


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("../secrets.txt", "climbs out"),
        ("notes/../../etc/passwd", "climbs out"),
        ("/etc/passwd", "absolute"),
        ("C:/Windows/win.ini", "absolute"),
        ("a\x00b.txt", "NUL"),
        ("a\\..\\b", "backslash"),
        ("a//b", "empty"),
        ("./a", "empty or `.`"),
    ],
)
def test_artifact_path_escaping_its_folder_is_refused(path: str, words: str) -> None:
    """A path that is absolute, climbs with ``..``, or holds NUL is a problem, not a file."""
    problem = path_problem(path)
    assert problem is not None
    assert words in problem
    read = read_artifacts(_answer(path))
    assert read.artifacts == ()
    assert len(read.problems) == 1


def test_signed_answer_naming_an_artifact_path_twice_is_refused() -> None:
    """Two blocks for one path would leave the file's contents ambiguous: refused."""
    text = _answer("a.txt", "one") + "\n" + _answer("a.txt", "two")
    refusal = prepare_release(text, TASK_STEP, call_id_seed="seed")
    assert isinstance(refusal, Refusal)
    assert any("again" in problem for problem in refusal.problems)


def test_artifact_block_without_a_path_is_refused() -> None:
    """``artifact`` alone names no file: refused, saying how to label it."""
    read = read_artifacts("```artifact\nx\n```")
    assert read.problems
    assert "path=" in read.problems[0]


def test_unclosed_artifact_block_is_refused() -> None:
    """A block that never closes would swallow the rest of the answer: refused."""
    read = read_artifacts("```artifact path=a.txt\nno end")
    assert read.problems
    assert "never closed" in read.problems[0]


def test_escaping_artifact_path_in_a_task_step_answer_is_refused_not_released() -> None:
    """In a task step, a bad path makes the whole answer unreleasable, with the reason."""
    refusal = prepare_release(_answer("../x"), TASK_STEP, call_id_seed="seed")
    assert isinstance(refusal, Refusal)
    assert "climbs out" in refusal.problems[0]


def test_artifact_block_in_a_chat_completion_is_plain_text() -> None:
    """Outside tasks the convention does not apply: the block reaches the agent as text."""
    release = prepare_release(_answer("../x"), CHAT, call_id_seed="seed")
    assert isinstance(release, Release)
    assert release.content is not None
    assert "artifact path=../x" in release.content
