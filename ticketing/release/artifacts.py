"""Files an answer says the agent created: ```` ```artifact path=RELATIVE/PATH ```` blocks.

Pure: no I/O. An Agent Protocol (or A2A) step's signed answer may hold fenced blocks whose
info string is ``artifact path=RELATIVE/PATH``; each is a file the agent "created", its
contents the block's lines, each ending in a newline (an empty block is an empty file). The
signature covers the whole answer, so a file cannot be swapped after signing. A path must
stay inside the task's folder: relative, no ``..``, no NUL or other control character, no
backslash, named once per answer; otherwise the answer is refused with the reason, like any
answer that cannot be released.
"""

from __future__ import annotations

from dataclasses import dataclass

from ticketing.release.quoting import quote
from ticketing.render.fences import fenced_blocks
from ticketing.render.markdown import split_lines

__all__ = [
    "ARTIFACT_INFO",
    "MAX_PATH_CHARS",
    "AnswerArtifact",
    "ArtifactAnswer",
    "path_problem",
    "read_artifacts",
]

ARTIFACT_INFO = "artifact"
MAX_PATH_CHARS = 255


@dataclass(frozen=True)
class AnswerArtifact:
    """One file an answer created: its path inside the task's folder and its bytes."""

    relative_path: str
    content: bytes

    @property
    def file_name(self) -> str:
        """Return the last part of the path."""
        return self.relative_path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class ArtifactAnswer:
    """An answer split into its text (artifact blocks taken out) and its files, or problems."""

    text: str
    artifacts: tuple[AnswerArtifact, ...]
    problems: tuple[str, ...]


def path_problem(path: str) -> str | None:
    """Return why ``path`` cannot name a file inside a task's folder, or None if it can."""
    if not path:
        return "the path is empty; name the file, like `notes/summary.md`."
    if len(path) > MAX_PATH_CHARS:
        return f"the path is longer than {MAX_PATH_CHARS} characters."
    if "\x00" in path or any(ord(char) < 0x20 or ord(char) == 0x7F for char in path):
        return f"the path {quote(path)} holds a NUL or another control character."
    if "\\" in path:
        return f"the path {quote(path)} holds a backslash; separate folders with `/`."
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        return f"the path {quote(path)} is absolute; give it relative to the task's folder."
    parts = path.split("/")
    if ".." in parts:
        return f"the path {quote(path)} climbs out of the task's folder with `..`."
    if any(part in {"", "."} for part in parts):
        return f"the path {quote(path)} has an empty or `.` part; write it plainly."
    return None


def read_artifacts(text: str) -> ArtifactAnswer:
    """Split ``text`` into its prose and its artifact blocks, checking every path."""
    lines = split_lines(text)
    kept: list[str] = []
    artifacts: list[AnswerArtifact] = []
    problems: list[str] = []
    seen: set[str] = set()
    taken = 0
    for block in fenced_blocks(lines):
        words = block.info.split(maxsplit=1)
        if not words or words[0] != ARTIFACT_INFO:
            continue
        where = f"the artifact block on line {block.line + 1}"
        kept += lines[taken : block.line]
        taken = block.end + 1
        rest = words[1].strip() if len(words) > 1 else ""
        if not rest.startswith("path="):
            problems.append(f"{where} names no file: label it `artifact path=RELATIVE/PATH`.")
            continue
        path = rest.removeprefix("path=")
        problem = path_problem(path)
        if problem is not None:
            problems.append(f"{where}: {problem}")
            continue
        if not block.closed:
            problems.append(f"{where} is never closed; end it with the fence that opened it.")
            continue
        if path in seen:
            problems.append(f"{where} names {quote(path)} again; each file may appear once.")
            continue
        seen.add(path)
        body_lines = split_lines(block.body) if block.body or block.end > block.line + 1 else []
        try:
            content = "".join(f"{line}\n" for line in body_lines).encode("utf-8")
        except UnicodeEncodeError:
            problems.append(f"{where} holds an unpaired surrogate character; remove it.")
            continue
        artifacts.append(AnswerArtifact(relative_path=path, content=content))
    kept += lines[taken:]
    return ArtifactAnswer(
        text="\n".join(kept).strip(),
        artifacts=tuple(artifacts),
        problems=tuple(problems),
    )
