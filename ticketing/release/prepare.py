"""Turn a verified answer text into what the agent receives, or into the reasons it cannot.

Pure: no I/O, no clock. The public face of the work is :mod:`ticketing.release`; this module
runs the checks in their order and builds the :class:`Release` or the :class:`Refusal`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from auth.review_decision import Command
from ticketing.commands import commands_in, unreadable_json
from ticketing.json_depth import MAX_JSON_DEPTH
from ticketing.release.artifacts import read_artifacts
from ticketing.release.autogpt import function_command_problems
from ticketing.release.blocks import read_calls, split_answer
from ticketing.release.calls import call_problems
from ticketing.release.content import check_content, cut_at_stop, length_problems
from ticketing.release.json_values import encodable
from ticketing.release.quoting import quote
from ticketing.render.autogpt_skeleton import uses_function_commands
from ticketing.request import ChatRequest, ToolCall

__all__ = ["Refusal", "Release", "prepare_release"]


@dataclass(frozen=True)
class Release:
    """What the agent receives."""

    content: str | None
    tool_calls: tuple[ToolCall, ...]
    # "stop", "tool_calls", or "function_call" when the request used legacy `functions`.
    finish_reason: str
    # Signed with ``--ask``: a question back to the agent's user, not the task's last step.
    ask: bool = False

    def commands(self) -> tuple[Command, ...]:
        """Return the commands it makes the agent run, as the review policy reads them."""
        return commands_in(self.content, [(c.name, c.arguments) for c in self.tool_calls])


@dataclass(frozen=True)
class Refusal:
    """Why a signed answer cannot be released; posted on the ticket so the editor can fix it."""

    problems: tuple[str, ...]


def prepare_release(text: str, request: ChatRequest, *, call_id_seed: str) -> Release | Refusal:
    """Check an answer against its request and return what to release, or why not."""
    try:
        return _prepare(text, request, call_id_seed)
    except Exception as error:  # noqa: BLE001
        # The contract is "never raises": a bug here must not stop the desk's poll loop.
        # Fail closed, and name the error so the report reaches someone who can fix it.
        return Refusal(
            (
                f"ticketproxy could not check this answer (internal error"
                f" {quote(type(error).__name__)}); please report it to the operators.",
            )
        )


def _prepare(text: str, request: ChatRequest, seed: str) -> Release | Refusal:
    """Do the work of :func:`prepare_release`, which guards it."""
    problems: list[str] = []
    answer = split_answer(text, problems)
    calls = read_calls(answer.blocks, problems)
    problems += call_problems(calls, len(answer.blocks), request)
    content, checked_json = answer.content, False
    functions_mode = uses_function_commands(request)
    if not answer.blocks or functions_mode:
        content, checked_json = check_content(
            content, request, problems, beside_call=bool(answer.blocks)
        )
    if functions_mode:
        problems += function_command_problems(len(answer.blocks))
    content = cut_at_stop(content, request, problems, checked_json=checked_json)
    problems += length_problems(content, request)
    if content is not None and not encodable(content):
        problems.append("the answer holds an unpaired surrogate character; remove it.")
    if unreadable_json(content):
        problems.append(
            f"the answer holds JSON nested more than {MAX_JSON_DEPTH} levels deep, which"
            " ticketproxy cannot check for commands that need review; flatten it."
        )
    if request.answer_artifacts:
        problems += read_artifacts(text).problems
    if problems:
        return Refusal(tuple(dict.fromkeys(problems)))
    tool_calls = tuple(
        ToolCall(id=_call_id(seed, index), name=call.name, arguments=call.arguments)
        for index, call in enumerate(calls)
    )
    if not tool_calls:
        finish_reason = "stop"
    elif request.legacy_functions:
        finish_reason = "function_call"
    else:
        finish_reason = "tool_calls"
    return Release(content=content, tool_calls=tool_calls, finish_reason=finish_reason)


def _call_id(seed: str, index: int) -> str:
    """Return a tool call id that a retry of the same ticket gets again."""
    digest = hashlib.sha256(f"{seed}:{index}".encode("utf-8", "surrogatepass")).hexdigest()
    return "call_" + digest[:24]
