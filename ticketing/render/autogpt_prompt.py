"""Read what AutoGPT's step request says in prose: the run's task and the ``## Commands`` list.

Pure: no I/O. AutoGPT (agpt 0.5, see ``tests/samples/autogpt/run1_default/004``) asks for
each step as one JSON object in the reply's content. Its system prompt lists the commands
the step may run as a numbered list under a ``## Commands`` heading, one command a line, as
AutoGPT's ``fmt_line`` writes it: ``7. write_file: Write a file.. Params: (filename: string,
args?: Array<string>)``. The JSON object's shape, ``interface AssistantResponse``, is read by
:mod:`ticketing.render.autogpt_interface`.

The prompt is agent input, so every reader is linear or bounded and none raises. What it
reads:

- The commands: under the first heading line ``#{1,6} Commands`` (any case, space
  optional) up to the next ``#`` heading; ``N. name: description. Params: (...)``, the name
  word characters, dots and hyphens from a word character on, and the list the *last*
  ``Params:`` on the line, since a description may say "Params:" itself. Each
  parameter is ``name: type`` or ``name?: type`` (optional); commas inside ``<>``, ``()``,
  ``[]`` or ``{}`` do not split. A part that is not ``name: ...`` is not a parameter.
  A command whose ``Params:`` spans several lines (an object type) has none.
- The task: AutoGPT repeats one instruction as the newest user message of every step
  ("Determine exactly one command to use next ...", or the older "Determine which next
  command to use ..."), which says nothing about the step; the run's task is the first user
  message, in triple quotes, or, in the older prompts that state it in the system prompt,
  the line after "Your task is" or the first of its ``GOALS:``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ticketing.render.markdown import split_lines
from ticketing.request import ChatRequest

__all__ = [
    "AutoGPTCommand",
    "AutoGPTParam",
    "autogpt_task",
    "parse_commands",
]

# AutoGPT's per-step instruction (agpt 0.5, one_shot prompt strategy's `choose_action`).
# AutoGPT's per-step instructions: agpt 0.5's, and the classic prompt's of 0.4.
_STEP_INSTRUCTIONS = ("Determine exactly one command to use", "Determine which next command to use")
_TASK_LIMIT = 2_000  # characters of a task; a longer "task" is not AutoGPT's
_TRIPLE_QUOTED = re.compile(r'\s*"""(.+?)"""\s*', re.DOTALL)
# "Your task is: X" / "Your task is to X" on one line of the system prompt.
_TASK_SENTENCE = re.compile(r"\s*Your task is(?::|\s+to\b)\s*(\S.*)", re.IGNORECASE)
_GOALS_HEADING = re.compile(r"[ \t]*(?:#{1,6}[ \t]*)?GOALS[ \t]*(?::[ \t]*)?", re.IGNORECASE)
_GOAL_LINE = re.compile(r"\s*(?:\d{1,3}[.)]|[-*])\s+(\S.*)")
_COMMANDS_HEADING = re.compile(r"#{1,6}[ \t]*Commands[ \t]*", re.IGNORECASE)
_HEADING = re.compile(r"#{1,6}[ \t]")
_COMMAND_LINE = re.compile(r"\s*\d+\.\s+(\w[\w.-]*)\s*:(.*)")
_COMMAND_PARAMS = re.compile(r"Params:\s*\((.*)\)\s*")
# One optional `\s*` per gap, so a long run of spaces cannot make the match quadratic.
_PARAM = re.compile(r"\s*([A-Za-z_$][\w$-]*)\s*(?:(\?)\s*)?:(.*)", re.DOTALL)
_OPENING = {"(": ")", "[": "]", "{": "}", "<": ">"}
_SPLIT_MARK = re.compile(r"[,()\[\]{}<>]")

# --- the task -------------------------------------------------------------------------------


def autogpt_task(request: ChatRequest) -> str | None:
    """Return the run's task when the newest user message is AutoGPT's per-step boilerplate."""
    users = [m for m in request.messages if m.role == "user"]
    if not users or not users[-1].content.lstrip().startswith(_STEP_INSTRUCTIONS):
        return None
    if len(users) >= 2 and len(users[0].content) <= _TASK_LIMIT + 6:  # quotes, whitespace
        quoted = _TRIPLE_QUOTED.fullmatch(users[0].content)
        if quoted and quoted[1].strip():
            return quoted[1].strip()
    return _stated_task(request.system_prompt)


def _stated_task(system_prompt: str) -> str | None:
    """Return the task an older AutoGPT prompt states: "Your task is ...", or its first goal."""
    lines = split_lines(system_prompt)
    for line in lines:
        stated = _TASK_SENTENCE.fullmatch(line)
        if stated is not None:
            return stated[1].strip()[:_TASK_LIMIT]
    heading = next((i for i, line in enumerate(lines) if _GOALS_HEADING.fullmatch(line)), None)
    if heading is None:
        return None
    for line in lines[heading + 1 :]:
        if not line.strip():
            continue
        goal = _GOAL_LINE.fullmatch(line)
        return goal[1].strip()[:_TASK_LIMIT] if goal else None
    return None


# --- commands -------------------------------------------------------------------------------


@dataclass(frozen=True)
class AutoGPTParam:
    """One parameter of a command, ``name: type`` or, when not required, ``name?: type``."""

    name: str
    type: str  # as written, e.g. "Array<string>"; empty when the prompt gives none
    required: bool


@dataclass(frozen=True)
class AutoGPTCommand:
    """One command of the prompt's ``## Commands`` list."""

    name: str
    description: str
    params: tuple[AutoGPTParam, ...]


def parse_commands(system_prompt: str) -> tuple[AutoGPTCommand, ...]:
    """Return the numbered commands under the prompt's ``## Commands`` heading, in order."""
    lines = split_lines(system_prompt)
    start = next((i for i, line in enumerate(lines) if _COMMANDS_HEADING.fullmatch(line)), None)
    if start is None:
        return ()
    found: list[AutoGPTCommand] = []
    for line in lines[start + 1 :]:
        if _HEADING.match(line):
            break
        listed = _COMMAND_LINE.fullmatch(line)
        if listed is not None:
            found.append(_command(listed[1], listed[2]))
    # Duplicates are kept: a reader shows every line, a checker takes the first.
    return tuple(found)


def _command(name: str, rest: str) -> AutoGPTCommand:
    """Split what follows ``name:`` into the description and the ``Params: (...)`` list."""
    at = rest.rfind("Params:")
    params = _COMMAND_PARAMS.fullmatch(rest, at) if at >= 0 else None
    if params is None:
        return AutoGPTCommand(name, rest.strip(), ())
    description = rest[:at].rstrip()
    # fmt_line writes "{description}. Params:", so a description ending in "." shows "..".
    description = description.removesuffix(".").strip()
    return AutoGPTCommand(name, description, _params(params[1]))


def _params(text: str) -> tuple[AutoGPTParam, ...]:
    """Read ``a: string, b?: Array<string>`` into parameters, skipping parts that are not."""
    found = []
    for part in _split_top_level(text):
        match = _PARAM.fullmatch(part)
        if match is not None:
            name, optional, kind = match.groups()
            found.append(AutoGPTParam(name=name, type=kind.strip(), required=optional is None))
    return tuple(found)


def _split_top_level(text: str) -> list[str]:
    """Split a parameter list on the commas that are not inside brackets."""
    parts: list[str] = []
    start, depth = 0, 0
    for mark in _SPLIT_MARK.finditer(text):
        char = mark.group()
        if char in _OPENING:
            depth += 1
        elif char != ",":
            depth = max(depth - 1, 0)
        elif depth == 0:
            parts.append(text[start : mark.start()])
            start = mark.end()
    parts.append(text[start:])
    return [part for part in parts if part.strip()]
