"""Lay a conversation out as the sections of a ticket body, and render its messages.

Pure: no I/O. A body is the header, the conversation's sections (the newest message, what
followed, earlier history and the system prompt, or for a step comment what is new and what
changed), the *Answer template* section (:mod:`ticketing.render.template_section`), and the
how-to. A message the body shortens (see :mod:`ticketing.render.fitting`) ends with a note
naming the *continuation comment* that holds the rest; a :class:`Locator` says which.

Internal to the renderer: :mod:`ticketing.render.ticket` puts the body together from it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ticketing.json_depth import too_deep
from ticketing.render.markdown import block_text, escape_inline
from ticketing.render.snippets import fence
from ticketing.request import Message, ToolCall


@dataclass(frozen=True)
class Locator:
    """Where each overflowing item's rest is: continuation numbers by item key.

    Keys are ``m<number>`` for a message, ``template`` and ``tools``. Without spans it
    names the widest possible place, so a body fitted with it only shrinks once the real
    numbers are known.
    """

    spans: Mapping[str, tuple[int, int]] | None = None

    def text(self, first: str, last: str | None = None) -> str:
        """Return "continuation 2" or "continuations 2–4" for the items first to last."""
        if self.spans is None:
            return "continuations 999999–999999"
        start, end = self.spans[first][0], self.spans[last or first][1]
        return f"continuation {start}" if start == end else f"continuations {start}–{end}"


# Before the continuations are packed: notes name the widest place, so a body only shrinks.
UNPLACED = Locator()


@dataclass(frozen=True)
class Unit:
    """One message as the body shows it, with the texts that may be shortened."""

    number: int
    message: Message
    content: str
    arguments: tuple[str, ...]

    @property
    def size(self) -> int:
        """Return how many characters of shortenable text this message holds."""
        return len(self.content) + sum(len(a) for a in self.arguments)


@dataclass(frozen=True)
class Section:
    """A run of messages with the markdown that opens and closes it."""

    opening: str
    closing: str
    units: tuple[Unit, ...]


def _unit(number: int, message: Message) -> Unit:
    """Prepare one message for display: normalised content and readable arguments."""
    return Unit(
        number=number,
        message=message,
        content=block_text(message.content),
        arguments=tuple(block_text(_pretty_arguments(c)) for c in message.tool_calls),
    )


def _pretty_arguments(call: ToolCall) -> str:
    """Return a tool call's arguments indented for reading when they are JSON."""
    try:
        parsed = json.loads(call.arguments)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than json can read
        return call.arguments
    if too_deep(parsed):  # indenting recurses, two frames a level: show it as it came
        return call.arguments
    return json.dumps(parsed, indent=2, ensure_ascii=False)


def dropped_note(first: int, last: int, chars: int, where: Locator = UNPLACED) -> str:
    """Say which whole messages (numbers first to last) were left out, and their size."""
    span = f"message {first}" if first == last else f"{last - first + 1} messages ({first}–{last})"
    return f"… [{span}, {chars} characters: in {where.text(f'm{first}', f'm{last}')} below]\n\n"


def layout(messages: Sequence[Message], focus: int | None) -> list[Section]:
    """Split the conversation into the newest message, what followed, history and prompt."""
    if focus is None:
        empty = Section("## Newest message\n\n*The request holds no messages.*\n\n", "", ())
        return [empty]
    units = [_unit(i + 1, m) for i, m in enumerate(messages)]
    leading = 0
    while leading < focus and messages[leading].role in {"system", "developer"}:
        leading += 1
    system, earlier = tuple(units[:leading]), tuple(units[leading:focus])
    after = tuple(units[focus + 1 :])
    sections = [Section("## Newest message\n\n", "", (units[focus],))]
    if after:
        sections.append(
            Section(
                f"## Since then\n\n{_count(after)} after the newest user message:\n\n",
                "",
                after,
            )
        )
    if earlier:
        sections.append(_details(f"Earlier conversation ({_count(earlier)})", earlier))
    if system:
        chars = sum(u.size for u in system)
        sections.append(_details(f"System prompt ({_count(system)}, {chars} characters)", system))
    return sections


def step_layout(
    messages: Sequence[Message],
    *,
    since: int,
    new_from: int,
    focus: int | None,
    changed: Sequence[int],
) -> list[Section]:
    """Split a step into the newest new message, the rest of what is new, and changes."""
    units = [_unit(i + 1, m) for i, m in enumerate(messages)]
    heading = f"## New since step {since}\n\n"
    if focus is None:
        sections = [Section(heading + "*No new messages since the previous step.*\n\n", "", ())]
    else:
        sections = [Section(heading, "", (units[focus],))]
        after = tuple(units[focus + 1 :])
        before = tuple(units[new_from:focus])
        if after:
            sections.append(Section(f"### Since then\n\n{_count(after)} after it:\n\n", "", after))
        if before:
            sections.append(
                Section(f"### Also new, before it\n\n{_count(before)}:\n\n", "", before)
            )
    if changed:
        shown = tuple(units[i] for i in changed)
        summary = f"Changed earlier in the conversation ({_count(shown)})"
        sections.append(_details(summary, shown))
    return sections


def _count(units: Sequence[Unit]) -> str:
    """Return "1 message" or "N messages"."""
    return "1 message" if len(units) == 1 else f"{len(units)} messages"


def _details(summary: str, units: tuple[Unit, ...]) -> Section:
    """Return a collapsed section; its summary holds no agent text, only counts."""
    # The blank line after <summary> lets GitHub render the markdown inside <details>.
    opening = f"<details>\n<summary>{summary}</summary>\n\n"
    return Section(opening, "</details>\n\n", units)


def render_unit(unit: Unit, keep: int | None, where: Locator = UNPLACED) -> str:
    """Render a message, keeping only its first ``keep`` characters of text when given."""
    message = unit.message
    parts = [unit_heading(unit) + "\n\n"]
    budget = unit.size if keep is None else keep
    omitted_chars = 0
    omitted_calls = 0
    shown = unit.content[:budget]
    budget -= len(shown)
    omitted_chars += len(unit.content) - len(shown)
    if shown:
        parts.append(fence(shown))
    elif not unit.content and not message.tool_calls:
        parts.append("*(empty)*\n")
    for call, arguments in zip(message.tool_calls, unit.arguments, strict=True):
        if budget <= 0 and keep is not None:
            omitted_calls += 1
            omitted_chars += len(arguments)
            continue
        shown = arguments[:budget]
        budget -= len(shown)
        omitted_chars += len(arguments) - len(shown)
        label = f"Tool call {escape_inline(call.name)} (id {escape_inline(call.id)}):"
        parts.append(f"\n{label}\n\n{fence(shown, 'json')}")
    if omitted_calls or omitted_chars:
        place = where.text(f"m{unit.number}")
        more = f"{omitted_chars} more characters"
        if omitted_calls:
            more = f"{counted(range(omitted_calls), 'more tool call')}, {omitted_chars} characters"
        parts.append(f"\n… [message {unit.number} continues in {place} below: {more}]\n")
    parts.append("\n")
    return "".join(parts)


def unit_heading(unit: Unit) -> str:
    """Return a message's bold heading: number, role, name and the tool call it answers."""
    message = unit.message
    heading = f"**Message {unit.number} · {escape_inline(message.role, limit=20)}**"
    if message.name:
        heading += f" (name {escape_inline(message.name)})"
    if message.tool_call_id:
        heading += f", result of tool call {escape_inline(message.tool_call_id)}"
    return heading


def counted(items: Sequence[object], noun: str) -> str:
    """Return "1 tool" or "N tools"."""
    return f"1 {noun}" if len(items) == 1 else f"{len(items)} {noun}s"
