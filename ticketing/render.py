"""Render a chat request into the GitHub issue a human editor reads and answers.

Pure: no I/O, no clock. Everything the agent sends (messages, names, ``user``, metadata,
tool calls, even the model name) is untrusted, so this module guarantees that it:

- never pings anyone or cross-references another issue: outside code fences a word joiner
  (U+2060) follows every ``@``, and every ``#`` or ``GH-`` that precedes a digit;
- never escapes its code fence: each fence is longer than the longest backtick run inside;
- never appears as raw HTML or markdown: outside fences it is backslash-escaped, one line;
- never forges a hidden trailer or marker: ``<!--`` and ``-->`` get a word joiner everywhere,
  fences included, so the only HTML comment in a body is the renderer's own request marker;
- never pushes the body or a comment over GitHub's limit, and never cuts silently: history
  and system prompt (oldest first), then the tool table and the answer template, and finally
  the newest message are shortened with a note naming the *continuation comment* that holds
  the rest (never the header or the how-to). Continuations are fenced and neutralised like
  the body, split at line ends where possible, and end with a bot-reply marker line.

:func:`render_step` renders a later step of the same agent run as a *step comment* on the
run's issue, showing only what is new; its ticket reference names the step (``#12/3``).

The escaping is :mod:`ticketing.markdown`'s, which the bot's replies share; fence lengths
come from :mod:`ticketing.fences`. The *Answer template* section (see
:mod:`ticketing.templates`) shows what a valid answer looks like, in a fence the editor
copies; agent values in its tool table are escaped like the rest.

Values this module refuses (a naive datetime, a key that is not hex, a malformed repo name)
raise ``ValueError``: they are programming errors, not agent input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from ticketing.autogpt import autogpt_task
from ticketing.fences import backtick_fence
from ticketing.markdown import (
    block_text,
    clip,
    escape_inline,
    format_span,
    format_utc,
    inert_line,
    neutralise_markers,
)
from ticketing.references import parse_ticket_reference, ticket_reference
from ticketing.replies import REPLY_MARKER_PREFIX
from ticketing.request import ChatRequest, Message, ToolCall
from ticketing.templates import answer_notes, answer_template, tool_table

__all__ = [
    "GITHUB_BODY_LIMIT",
    "MARKER_PREFIX",
    "STEP_MARKER_PREFIX",
    "TITLE_LIMIT",
    "RenderedTicket",
    "find_request_marker",
    "find_step_marker",
    "find_step_number",
    "parse_ticket_reference",
    "render_step",
    "render_ticket",
    "request_marker",
    "step_marker",
    "ticket_reference",
]

# GitHub refuses issue and comment bodies longer than this ("body is too long").
GITHUB_BODY_LIMIT = 65_536
TITLE_LIMIT = 120
MARKER_PREFIX = "<!-- ticketproxy:request "
STEP_MARKER_PREFIX = "<!-- ticketproxy:step "
_MARKER_SUFFIX = " -->"
_MARKER_LINE = re.compile(r"<!-- ticketproxy:request ([0-9a-f]{1,128}) -->")
# The step number comes first, so a reader (`ticketproxy answer`) knows the newest step.
_STEP_MARKER_LINE = re.compile(r"<!-- ticketproxy:step ([1-9][0-9]{0,5}) ([0-9a-f]{1,128}) -->")
# A step comment is one of the bot's replies, so the answer finder never reads it as an answer.
_STEP_REPLY_MARKER = f"{REPLY_MARKER_PREFIX}step -->"
_HEX_KEY = re.compile(r"[0-9a-f]{1,128}")
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")

# A code span is kept for values that need no escaping at all (model ids, request ids).
_PLAIN_CODE = re.compile(r"[A-Za-z0-9._:+/=-]{1,100}")
_AGENT_NAME = re.compile(r"\bYou are ([^\W\d_][\w-]*(?: [^\W\d_][\w-]*){0,3})[,.]")

_CELL_LIMIT = 300  # one value in the header table
_METADATA_ROWS = 16  # what the OpenAI API allows; more is shown as a count
_TITLE_PART_LIMIT = 40  # model and agent in the title, so the message keeps most of it
_DROPPED = -1


@dataclass(frozen=True)
class _Locator:
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


_PLACEHOLDER = _Locator()


@dataclass(frozen=True)
class RenderedTicket:
    """The title and markdown body of a ticket, and the comments that continue its body.

    ``continuations`` are posted in order right after the body; each holds, in full, text
    the body had to shorten or leave out, and ends with a bot-reply marker line.
    """

    title: str
    body: str
    continuations: tuple[str, ...] = ()


def request_marker(key: str) -> str:
    """Return the hidden line that ties an issue to its request key."""
    return f"{MARKER_PREFIX}{_checked_key(key)}{_MARKER_SUFFIX}"


def step_marker(key: str, step: int) -> str:
    """Return the hidden line that ties a step comment to its step and request key."""
    if isinstance(step, bool) or not 2 <= step <= 999_999:
        raise ValueError(f"step must be 2 to 999999, got {step!r}")
    return f"{STEP_MARKER_PREFIX}{step} {_checked_key(key)}{_MARKER_SUFFIX}"


def _checked_key(key: str) -> str:
    """Return the key when it is 1 to 128 lowercase hex digits, else raise ValueError."""
    if not _HEX_KEY.fullmatch(key):
        raise ValueError(f"request key must be 1 to 128 lowercase hex digits, got {key!r}")
    return key


def find_request_marker(body: str) -> str | None:
    """Return the request key from the renderer's marker line in an issue body, if any."""
    return _find_marker(_MARKER_LINE, body)


def find_step_marker(body: str) -> str | None:
    """Return the request key from the renderer's marker line in a step comment, if any."""
    return _find_marker(_STEP_MARKER_LINE, body, group=2)


def find_step_number(body: str) -> int | None:
    """Return the step a step comment is for, from its marker line, if any."""
    found = _find_marker(_STEP_MARKER_LINE, body, group=1)
    return None if found is None else int(found)


def _find_marker(pattern: re.Pattern[str], body: str, *, group: int = 1) -> str | None:
    """Return the key of the last line of body that is exactly a marker of this pattern."""
    # Agent text can never contain `<!--` (see neutralise_markers), so any exact marker
    # line was written by the renderer; the last one wins, as the renderer writes it last.
    found: str | None = None
    for line in body.splitlines():
        match = pattern.fullmatch(line.strip())
        if match:
            found = match.group(group)
    return found


def render_ticket(
    request: ChatRequest,
    *,
    request_id: str,
    created: datetime,
    deadline: datetime,
    repo: str,
    notes: Sequence[str] = (),
) -> RenderedTicket:
    """Render a request as an issue a human can answer, within GitHub's body limit.

    ``notes`` are ticketproxy's own remarks (such as what it redacted), shown under the
    header.
    """
    marker = request_marker(request.key)
    _check_times_and_repo(created, deadline, repo)
    agent = _agent_name(request)
    focus = _focus_index(request.messages)
    task = autogpt_task(request)
    title = _render_title(request.model, agent, _title_line(request, focus, task))
    top = _render_header(
        request, agent=agent, task=task, request_id=request_id, created=created, deadline=deadline
    )
    for note in notes:
        top += f"\n> **Note:** {escape_inline(note, limit=1000)}\n"
    bottom = _render_how_to(repo, format_utc(deadline)) + "\n" + marker
    layout = _layout(request.messages, focus)
    body, continuations = _render_body(
        layout, _guide(request), top=top, bottom=bottom, focus=focus, request_id=request_id
    )
    return RenderedTicket(title=title, body=body, continuations=continuations)


def render_step(
    request: ChatRequest,
    *,
    step: int,
    new_from: int,
    changed: Sequence[int],
    tools_changed: bool,
    request_id: str,
    created: datetime,
    deadline: datetime,
    repo: str,
    issue_number: int,
    notes: Sequence[str] = (),
    since_step: int | None = None,
) -> RenderedTicket:
    """Render a later step of an agent run as a comment on the run's issue.

    ``messages[new_from:]`` are new since step ``since_step`` (default: the step before)
    and shown open; ``changed`` holds the indices, before ``new_from``, of messages that
    differ from that step's request, shown collapsed. The tool table is shown only when
    ``tools_changed``. (A step may follow an earlier step than the one before it: an
    agent's side call can come in between.)
    """
    if isinstance(step, bool) or step < 2:
        raise ValueError(f"step must be 2 or more (step 1 is the issue itself), got {step!r}")
    since = step - 1 if since_step is None else since_step
    if isinstance(since, bool) or not 1 <= since < step:
        raise ValueError(f"since_step must be 1 to {step - 1}, got {since_step!r}")
    reference = ticket_reference(repo, issue_number, step)
    markers = f"{_STEP_REPLY_MARKER}\n{step_marker(request.key, step)}"
    _check_times_and_repo(created, deadline, repo)
    count = len(request.messages)
    if not 0 <= new_from <= count:
        raise ValueError(f"new_from must be within 0..{count}, got {new_from}")
    earlier = sorted(set(changed))
    if any(not 0 <= index < new_from for index in earlier):
        raise ValueError(f"changed must hold indices below new_from {new_from}, got {changed!r}")
    agent = _agent_name(request)
    task = autogpt_task(request)
    new = request.messages[new_from:]
    new_focus = _focus_index(new)
    focus = None if new_focus is None else new_from + new_focus
    title = _render_title(request.model, agent, _title_line(request, focus, task), step=step)
    top = _render_step_header(
        request,
        agent=agent,
        task=task,
        step=step,
        since=since,
        reference=reference,
        request_id=request_id,
        created=created,
        deadline=deadline,
    )
    for note in notes:
        top += f"\n> **Note:** {escape_inline(note, limit=1000)}\n"
    bottom = _render_step_how_to(step, reference, format_utc(deadline)) + "\n" + markers
    layout = _step_layout(
        request.messages, since=since, new_from=new_from, focus=focus, changed=earlier
    )
    guide = _guide(request)
    if guide is not None and not tools_changed and guide.table_head:
        guide = replace(guide, table_head="", rows=(), unchanged=True)
    body, continuations = _render_body(
        layout, guide, top=top, bottom=bottom, focus=focus, request_id=request_id
    )
    return RenderedTicket(title=title, body=body, continuations=continuations)


def _check_times_and_repo(created: datetime, deadline: datetime, repo: str) -> None:
    """Refuse a naive datetime or a malformed repo before anything is rendered."""
    for moment in (created, deadline):
        format_utc(moment)  # refuse a naive datetime before any arithmetic with it
    if not _REPO.fullmatch(repo):
        raise ValueError(f"repo must look like owner/name, got {repo!r}")


# --- text helpers -------------------------------------------------------------------------


def _fence(text: str, info: str = "text") -> str:
    """Wrap text in a code fence it cannot close: longer than any backtick run inside."""
    text = neutralise_markers(text)
    ticks = backtick_fence(text)
    return f"{ticks}{info}\n{text}\n{ticks}\n"


def _code(value: str) -> str:
    """Show a value as inline code when it is plainly safe, else as escaped text."""
    if _PLAIN_CODE.fullmatch(value):
        return f"`{value}`"
    return escape_inline(value, limit=_CELL_LIMIT)


def _first_line(text: str) -> str:
    """Return the first line of text that holds something other than whitespace."""
    for line in text.splitlines():
        if line.strip():
            return line
    return ""


# --- title and header ---------------------------------------------------------------------


# Metadata keys an agent may name itself under (the OpenAI API allows any 16 keys).
_AGENT_METADATA_KEYS = ("agent", "agent_name", "agent_id")


def _agent_name(request: ChatRequest) -> str:
    """Name the agent: its system prompt ("You are NAME,"), metadata, ``user``, or "agent"."""
    for match in _AGENT_NAME.finditer(request.system_prompt):
        name = match.group(1)
        if all(word[0].isupper() for word in name.split(" ")):
            return name
    for key in _AGENT_METADATA_KEYS:
        value = request.metadata.get(key, "").strip()
        if value:
            return value
    if request.user and request.user.strip():
        return request.user
    return "agent"


def _focus_index(messages: Sequence[Message]) -> int | None:
    """Return the index of the newest user message, else of the last message."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return index
    return len(messages) - 1 if messages else None


def _title_text(text: str, limit: int) -> str:
    """Return a single-line, mention-free piece of title of at most ``limit`` characters."""
    return inert_line(text, limit=limit)


def _title_line(request: ChatRequest, focus: int | None, task: str | None) -> str:
    """Return what the title says: the task when the newest message is boilerplate, else it."""
    if task is not None:
        # The step instruction AutoGPT repeats says nothing; the task says what the run does.
        return _title_text(task, TITLE_LIMIT)
    if focus is None:
        return "(no messages)"
    message = request.messages[focus]
    line = _title_text(_first_line(message.content), TITLE_LIMIT)
    return line or f"({_title_text(message.role, _TITLE_PART_LIMIT)} message)"


def _render_title(model: str, agent: str, line: str, *, step: int | None = None) -> str:
    """Render "[model] agent: line" (with ", step N" after the agent), at most 120 chars."""
    model_part = _title_text(model, _TITLE_PART_LIMIT) or "model"
    agent_part = _title_text(agent, _TITLE_PART_LIMIT) or "agent"
    if step is not None:
        agent_part += f", step {step}"
    title = f"[{model_part}] {agent_part}: {line}"
    if len(title) <= TITLE_LIMIT:
        return title
    # Cut at a word boundary when one is near, so the title does not end mid-word.
    cut = title[: TITLE_LIMIT - 1]
    space = cut.rfind(" ")
    if space >= TITLE_LIMIT * 3 // 4:
        cut = cut[:space]
    return cut.rstrip() + "…"


def _render_header(
    request: ChatRequest,
    *,
    agent: str,
    task: str | None,
    request_id: str,
    created: datetime,
    deadline: datetime,
) -> str:
    """Render the introduction and the table of who asks, with which model, until when."""
    rows: list[tuple[str, str]] = [
        ("Request id", _code(request_id)),
        ("Model", _code(request.model)),
        ("Agent", _code(agent)),
    ]
    if task is not None:
        rows.append(("Task", escape_inline(task, limit=_CELL_LIMIT)))
    rows.append(("Client", _code(request.client)))
    if request.user is not None:
        rows.append(("User", _code(request.user)))
    metadata = list(request.metadata.items())
    for key, value in metadata[:_METADATA_ROWS]:
        rows.append((f"Metadata {_code(key)}", _code(value)))
    if len(metadata) > _METADATA_ROWS:
        rows.append(("Metadata", f"{len(metadata) - _METADATA_ROWS} more entries not shown"))
    if request.max_tokens is not None:
        rows.append(("Max tokens", str(request.max_tokens)))
    waited = deadline - created
    rows.append(("Created", format_utc(created)))
    rows.append(("Deadline", f"{format_utc(deadline)} ({format_span(waited)} after creation)"))
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    who = "An agent" if agent == "agent" else f"An agent, **{escape_inline(agent)}**,"
    return (
        f"{who} is waiting for a person"
        " to answer its chat completion request. Read the newest message, then answer with a"
        " signed comment before the deadline (see *How to answer* below).\n\n"
        f"| Field | Value |\n|---|---|\n{table}\n\n"
    )


def _render_how_to(repo: str, deadline: str) -> str:
    """Render the instructions for answering, signing and the deadline."""
    return (
        "## How to answer\n\n"
        "Write your answer in a file, for example `answer.md`. To make a tool call instead"
        " of answering with text, the file holds one fenced block:\n\n"
        "````\n"
        "```tool_call\n"
        '{"name": "execute_shell", "arguments": {"command": "ls"}}\n'
        "```\n"
        "````\n\n"
        "Sign it with your own key and post it here in one step:\n\n"
        "```sh\n"
        "ticketproxy answer <this issue's URL> --key ~/.ticketproxy/<you>.key --file answer.md\n"
        "```\n\n"
        "or sign it, then paste the whole output as a new comment on this issue:\n\n"
        "```sh\n"
        f"ticketproxy sign --ticket {repo}#<this issue's number> --key ~/.ticketproxy/<you>.key"
        " answer.md\n"
        "```\n\n"
        "Only comments signed by an editor whose key is in the keyring count; anything else"
        " here is ignored. A signed comment that is edited afterwards no longer counts: post"
        " a new signed comment instead of editing.\n\n"
        "Later steps of the same agent run arrive as *step comments* on this issue, each"
        " answered with its own `--step` (`--step 2` for step 2, and so on; each step comment"
        " gives its exact commands). This post is step 1 and needs no `--step`.\n\n"
        f"Answer before **{deadline}** (UTC). After the deadline the ticket expires, the agent"
        " is told that nobody answered, and later answers are refused.\n"
    )


def _render_step_header(
    request: ChatRequest,
    *,
    agent: str,
    task: str | None,
    step: int,
    since: int,
    reference: str,
    request_id: str,
    created: datetime,
    deadline: datetime,
) -> str:
    """Render the step's heading, its one-sentence introduction and its small table."""
    rows: list[tuple[str, str]] = [
        ("Ticket reference", f"`{reference}`"),
        ("Request id", _code(request_id)),
        ("Model", _code(request.model)),
    ]
    if task is not None:
        rows.append(("Task", escape_inline(task, limit=_CELL_LIMIT)))
    rows.append(("Created", format_utc(created)))
    waited = deadline - created
    rows.append(("Deadline", f"{format_utc(deadline)} ({format_span(waited)} after creation)"))
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    who = "The agent" if agent == "agent" else f"The agent, **{escape_inline(agent)}**,"
    return (
        f"## Step {step}\n\n"
        f"{who} continues its run: read what is new since step {since}, then answer this"
        f" step with a signed comment before the deadline (see *How to answer step {step}*"
        " below).\n\n"
        f"| Field | Value |\n|---|---|\n{table}\n\n"
    )


def _render_step_how_to(step: int, reference: str, deadline: str) -> str:
    """Render the instructions for answering one step, whose reference names the step."""
    return (
        f"## How to answer step {step}\n\n"
        "Write your answer in `answer.md` (start from the answer template; a tool call is one"
        " `tool_call` block, as the issue's first post shows), then sign it for this step and"
        " post it on this issue in one step:\n\n"
        "```sh\n"
        f"ticketproxy answer <this issue's URL> --step {step}"
        " --key ~/.ticketproxy/<you>.key --file answer.md\n"
        "```\n\n"
        "or sign it, then paste the whole output as a new comment on this issue:\n\n"
        "```sh\n"
        f"ticketproxy sign --ticket {reference} --key ~/.ticketproxy/<you>.key answer.md\n"
        "```\n\n"
        f"The signature names step {step} (`{reference}`): an answer signed for another step"
        " does not count here. Only comments signed by an editor whose key is in the keyring"
        " count, and a signed comment edited afterwards no longer counts.\n\n"
        f"Answer before **{deadline}** (UTC). After the deadline this step expires and the"
        " agent is told that nobody answered.\n"
    )


# --- conversation sections ----------------------------------------------------------------


@dataclass(frozen=True)
class _Unit:
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
class _Section:
    """A run of messages with the markdown that opens and closes it."""

    opening: str
    closing: str
    units: tuple[_Unit, ...]


def _unit(number: int, message: Message) -> _Unit:
    """Prepare one message for display: normalised content and readable arguments."""
    return _Unit(
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
    return json.dumps(parsed, indent=2, ensure_ascii=False)


def _dropped_note(first: int, last: int, chars: int, where: _Locator = _PLACEHOLDER) -> str:
    """Say which whole messages (numbers first to last) were left out, and their size."""
    span = f"message {first}" if first == last else f"{last - first + 1} messages ({first}–{last})"
    return f"… [{span}, {chars} characters: in {where.text(f'm{first}', f'm{last}')} below]\n\n"


def _layout(messages: Sequence[Message], focus: int | None) -> list[_Section]:
    """Split the conversation into the newest message, what followed, history and prompt."""
    if focus is None:
        empty = _Section("## Newest message\n\n*The request holds no messages.*\n\n", "", ())
        return [empty]
    units = [_unit(i + 1, m) for i, m in enumerate(messages)]
    leading = 0
    while leading < focus and messages[leading].role in {"system", "developer"}:
        leading += 1
    system, earlier = tuple(units[:leading]), tuple(units[leading:focus])
    after = tuple(units[focus + 1 :])
    sections = [_Section("## Newest message\n\n", "", (units[focus],))]
    if after:
        sections.append(
            _Section(
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


def _step_layout(
    messages: Sequence[Message],
    *,
    since: int,
    new_from: int,
    focus: int | None,
    changed: Sequence[int],
) -> list[_Section]:
    """Split a step into the newest new message, the rest of what is new, and changes."""
    units = [_unit(i + 1, m) for i, m in enumerate(messages)]
    heading = f"## New since step {since}\n\n"
    if focus is None:
        sections = [_Section(heading + "*No new messages since the previous step.*\n\n", "", ())]
    else:
        sections = [_Section(heading, "", (units[focus],))]
        after = tuple(units[focus + 1 :])
        before = tuple(units[new_from:focus])
        if after:
            sections.append(_Section(f"### Since then\n\n{_count(after)} after it:\n\n", "", after))
        if before:
            sections.append(
                _Section(f"### Also new, before it\n\n{_count(before)}:\n\n", "", before)
            )
    if changed:
        shown = tuple(units[i] for i in changed)
        summary = f"Changed earlier in the conversation ({_count(shown)})"
        sections.append(_details(summary, shown))
    return sections


def _count(units: Sequence[_Unit]) -> str:
    """Return "1 message" or "N messages"."""
    return "1 message" if len(units) == 1 else f"{len(units)} messages"


def _details(summary: str, units: tuple[_Unit, ...]) -> _Section:
    """Return a collapsed section; its summary holds no agent text, only counts."""
    # The blank line after <summary> lets GitHub render the markdown inside <details>.
    opening = f"<details>\n<summary>{summary}</summary>\n\n"
    return _Section(opening, "</details>\n\n", units)


def _render_unit(unit: _Unit, keep: int | None, where: _Locator = _PLACEHOLDER) -> str:
    """Render a message, keeping only its first ``keep`` characters of text when given."""
    message = unit.message
    parts = [_unit_heading(unit) + "\n\n"]
    budget = unit.size if keep is None else keep
    omitted_chars = 0
    omitted_calls = 0
    shown = unit.content[:budget]
    budget -= len(shown)
    omitted_chars += len(unit.content) - len(shown)
    if shown:
        parts.append(_fence(shown))
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
        parts.append(f"\n{label}\n\n{_fence(shown, 'json')}")
    if omitted_calls or omitted_chars:
        place = where.text(f"m{unit.number}")
        more = f"{omitted_chars} more characters"
        if omitted_calls:
            more = f"{_counted(range(omitted_calls), 'more tool call')}, {omitted_chars} characters"
        parts.append(f"\n… [message {unit.number} continues in {place} below: {more}]\n")
    parts.append("\n")
    return "".join(parts)


# --- the answer template -----------------------------------------------------------------


@dataclass(frozen=True)
class _Guide:
    """The answer template section: template, notes and tool table, which may be shortened."""

    template: str
    notes: tuple[str, ...]
    table_head: str
    rows: tuple[str, ...]
    noun: str  # what a table row is: "tool" or "command"
    unchanged: bool = False  # a step whose tools are those of the issue's first step


@dataclass(frozen=True)
class _GuideCut:
    """How much of the guide to show: table rows and template characters; None shows all."""

    rows: int | None = None
    chars: int | None = None


def _guide(request: ChatRequest) -> _Guide | None:
    """Gather the answer template, its notes and the tool table, or None for plain chat."""
    template = answer_template(request)
    table = tool_table(request)
    if template is None and table is None:
        return None
    head, noun = "", "tool"
    rows: tuple[str, ...] = ()
    if table is not None:
        # tool_table writes a header line, a separator line, then one line per tool.
        lines = table.split("\n")
        head, rows = "\n".join(lines[:2]) + "\n", tuple(line + "\n" for line in lines[2:])
        noun = "command" if lines[0].startswith("| Command") else "tool"
    return _Guide(
        template=block_text(template or ""),
        notes=answer_notes(request),
        table_head=head,
        rows=rows,
        noun=noun,
    )


def _is_json(text: str) -> bool:
    """Return whether text is one JSON value (so its fence can be labelled json)."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _unit_heading(unit: _Unit) -> str:
    """Return a message's bold heading: number, role, name and the tool call it answers."""
    message = unit.message
    heading = f"**Message {unit.number} · {escape_inline(message.role, limit=20)}**"
    if message.name:
        heading += f" (name {escape_inline(message.name)})"
    if message.tool_call_id:
        heading += f", result of tool call {escape_inline(message.tool_call_id)}"
    return heading


def _template_shown(guide: _Guide, cut: _GuideCut) -> str:
    """Return the part of the template the body shows under ``cut``, ending on a whole line."""
    shown = guide.template if cut.chars is None else guide.template[: cut.chars]
    if len(shown) < len(guide.template) and "\n" in shown:
        # End a cut template on a whole line; the newline belongs to the shown part, so
        # the continuation starts on the next line.
        shown = shown[: shown.rfind("\n") + 1]
    return shown


def _render_guide(guide: _Guide | None, cut: _GuideCut, where: _Locator = _PLACEHOLDER) -> str:
    """Render the *Answer template* section, showing as much as ``cut`` allows."""
    if guide is None:
        return ""
    parts = ["## Answer template\n\n"]
    if guide.template:
        shown = _template_shown(guide, cut)
        parts.append(
            "Copy this into `answer.md`, replace each placeholder with your answer, then sign"
            " and post it as *How to answer* says:\n\n"
        )
        if shown:
            info = "json" if _is_json(guide.template) else "text"
            parts.append(
                _fence(
                    shown.removesuffix("\n") if len(shown) < len(guide.template) else shown, info
                )
            )
        omitted = len(guide.template) - len(shown)
        if omitted:
            place = where.text("template")
            parts.append(
                f"\n… [the template continues in {place} below: {omitted} more characters]\n"
            )
        parts.append("\n")
    parts.extend(f"- {note}\n" for note in guide.notes)
    if guide.notes:
        parts.append("\n")
    if guide.unchanged:
        parts.append(
            "Tools are unchanged since the issue's first step (its first post lists them).\n\n"
        )
    if guide.table_head:
        shown_rows = guide.rows if cut.rows is None else guide.rows[: cut.rows]
        parts.append(f"The {guide.noun}s the agent offers ({len(guide.rows)}):\n\n")
        if shown_rows:
            parts.append(guide.table_head)
            parts.extend(shown_rows)
        hidden = guide.rows[len(shown_rows) :]
        if hidden:
            chars = sum(len(row) for row in hidden)
            more = _counted(hidden, f"more {guide.noun}" if shown_rows else guide.noun)
            parts.append(f"\n… [{more}, {chars} characters: in {where.text('tools')} below]\n")
        parts.append("\n")
    return "".join(parts)


def _counted(items: Sequence[object], noun: str) -> str:
    """Return "1 tool" or "N tools"."""
    return f"1 {noun}" if len(items) == 1 else f"{len(items)} {noun}s"


def _fit_guide(guide: _Guide, budget: int) -> _GuideCut:
    """Return the largest cut of the guide within ``budget``: rows go first, then template."""
    rows = _largest(
        lambda n: len(_render_guide(guide, _GuideCut(rows=n))) <= budget, len(guide.rows)
    )
    if rows is not None:
        return _GuideCut(rows=rows)
    chars = _largest(
        lambda n: len(_render_guide(guide, _GuideCut(rows=0, chars=n))) <= budget,
        len(guide.template),
    )
    return _GuideCut(rows=0, chars=chars or 0)


# --- fitting the body under GitHub's limit ------------------------------------------------


def _assemble(
    sections: Sequence[_Section],
    plan: Mapping[int, int | None],
    *,
    top: str,
    bottom: str,
    where: _Locator = _PLACEHOLDER,
) -> str:
    """Join the header, sections and how-to, rendering each message as the plan says."""
    parts = [top]
    for section in sections:
        dropped = [u for u in section.units if plan.get(u.number) == _DROPPED]
        parts.append(section.opening)
        if dropped:
            # Messages are dropped oldest first, so the dropped ones are a leading run.
            chars = sum(u.size for u in dropped)
            parts.append(_dropped_note(dropped[0].number, dropped[-1].number, chars, where))
        for unit in section.units:
            keep = plan.get(unit.number)
            if keep != _DROPPED:
                parts.append(_render_unit(unit, keep, where))
        parts.append(section.closing)
    parts.append(bottom)
    return "".join(parts)


def _fit(
    sections: Sequence[_Section],
    guide: _Guide | None,
    *,
    top: str,
    bottom: str,
    focus: int | None,
) -> tuple[dict[int, int | None], _GuideCut]:
    """Plan the body: shorten history (oldest first), the guide, then the newest message.

    Returns, per message number, how many characters to keep (or ``_DROPPED``; absent
    means whole) and how much of the guide to show, with notes sized for any place.
    """
    plan: dict[int, int | None] = {}
    cut = _GuideCut()
    guide_text = _render_guide(guide, cut)
    body = _assemble(sections, plan, top=top, bottom=guide_text + bottom)
    total = len(body)
    if total <= GITHUB_BODY_LIMIT:
        return plan, cut
    focus_number = None if focus is None else focus + 1
    located = {u.number: (s, u) for s in sections for u in s.units}
    # Per section: (first number, last number, characters) of the whole messages dropped.
    dropped: dict[int, tuple[int, int, int]] = {}
    fitted = False
    for number in sorted(n for n in located if n != focus_number):
        section, unit = located[number]
        rest = total - len(_render_unit(unit, None))
        # Whole messages leave a section oldest first, so its note covers a prefix.
        gone = dropped.get(id(section))
        old_note = len(_dropped_note(*gone)) if gone else 0
        grown = (gone[0], number, gone[2] + unit.size) if gone else (number, number, unit.size)
        note_delta = len(_dropped_note(*grown)) - old_note
        if rest + note_delta > GITHUB_BODY_LIMIT:
            dropped[id(section)] = grown
            plan[number] = _DROPPED
            total = rest + note_delta
            continue
        # Dropping it fits; keep as much of it as still fits (dropping when nothing does).
        plan[number] = _largest_keep(unit, GITHUB_BODY_LIMIT - rest) or _DROPPED
        fitted = True
        break
    if not fitted and guide is not None:
        rest = total - len(guide_text)
        cut = _fit_guide(guide, GITHUB_BODY_LIMIT - rest)
        total = rest + len(_render_guide(guide, cut))
        fitted = total <= GITHUB_BODY_LIMIT
    if not fitted and focus_number is not None:
        _, unit = located[focus_number]
        rest = total - len(_render_unit(unit, None))
        plan[focus_number] = _largest_keep(unit, GITHUB_BODY_LIMIT - rest) or 0
    return plan, cut


def _render_body(
    sections: Sequence[_Section],
    guide: _Guide | None,
    *,
    top: str,
    bottom: str,
    focus: int | None,
    request_id: str,
) -> tuple[str, tuple[str, ...]]:
    """Return the body within GitHub's limit and the continuation comments for its rest."""
    plan, cut = _fit(sections, guide, top=top, bottom=bottom, focus=focus)
    overflow = _overflow(sections, plan, guide, cut)
    comments, spans = _continuations(overflow, request_id=request_id)
    # The real continuation numbers are never wider than the placeholder the plan was
    # sized with, so the body only gets shorter here.
    where = _Locator(spans)
    guide_text = _render_guide(guide, cut, where)
    body = _assemble(sections, plan, top=top, bottom=guide_text + bottom, where=where)
    if len(body) > GITHUB_BODY_LIMIT:
        # The header, guide notes and how-to are bounded (every agent value in them is
        # capped), so this means a bug in the renderer, not an unlucky request.
        raise RuntimeError(f"ticket body is {len(body)} characters even after shortening")
    return body, comments


def _largest(fits: Callable[[int], bool], high: int) -> int | None:
    """Return the largest n in 0..high for which ``fits(n)``, assumed monotone, or None."""
    if not fits(0):
        return None
    low = 0
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _largest_keep(unit: _Unit, budget: int) -> int | None:
    """Return the most characters of a message that render within ``budget``, or None."""
    return _largest(lambda n: len(_render_unit(unit, n)) <= budget, unit.size)


# --- continuation comments -----------------------------------------------------------------

_CONTINUATION_MARKER = f"{REPLY_MARKER_PREFIX}continuation -->"
# Room kept in each continuation for its heading, listing (capped) and marker line.
_CONTINUATION_RESERVE = 2_500
_CONTINUATION_CAPACITY = GITHUB_BODY_LIMIT - _CONTINUATION_RESERVE
_LISTING_LIMIT = 1_000
# A long text that would get less than this in a part-filled comment starts a new one.
_MIN_PIECE = 2_000


@dataclass(frozen=True)
class _Segment:
    """The rest of one text of an overflowing item, from ``offset`` of a text ``total`` long."""

    label: str  # escaped markdown naming the text, or "" for a message's content
    part: str  # how a listing names it ("tool call 2"); no agent text
    text: str
    offset: int
    total: int
    info: str


@dataclass(frozen=True)
class _Item:
    """Something the body shortened or left out: a message, the template or the tool table."""

    key: str  # "m<number>", "template" or "tools", as _Locator knows them
    name: str  # how a listing names it; no agent text
    heading: str  # markdown heading of each of its pieces
    number: int | None = None  # the message number, for listing ranges
    segments: tuple[_Segment, ...] = ()
    table_head: str = ""
    rows: tuple[str, ...] = ()
    first_row: int = 0  # how many rows the body showed
    total_rows: int = 0


@dataclass(frozen=True)
class _Block:
    """One piece of markdown in a continuation, and how the listing names it."""

    key: str
    entry: str
    text: str


def _overflow(
    sections: Sequence[_Section],
    plan: Mapping[int, int | None],
    guide: _Guide | None,
    cut: _GuideCut,
) -> list[_Item]:
    """Return, in reading order, every text the body shortened or left out, with its rest."""
    items: list[_Item] = []
    units = sorted((u for section in sections for u in section.units), key=lambda u: u.number)
    for unit in units:
        keep = plan.get(unit.number)
        if keep is not None:
            items.extend(_unit_overflow(unit, 0 if keep == _DROPPED else keep))
    if guide is None:
        return items
    shown = _template_shown(guide, cut)
    if len(shown) < len(guide.template):
        info = "json" if _is_json(guide.template) else "text"
        rest = _Segment("", "", guide.template[len(shown) :], len(shown), len(guide.template), info)
        items.append(
            _Item("template", "the answer template", "**Answer template**", segments=(rest,))
        )
    shown_rows = len(guide.rows) if cut.rows is None else min(cut.rows, len(guide.rows))
    if guide.table_head and shown_rows < len(guide.rows):
        items.append(
            _Item(
                "tools",
                f"the {guide.noun} table",
                f"**The {guide.noun}s the agent offers**",
                table_head=guide.table_head,
                rows=guide.rows[shown_rows:],
                first_row=shown_rows,
                total_rows=len(guide.rows),
            )
        )
    return items


def _unit_overflow(unit: _Unit, keep: int) -> list[_Item]:
    """Return the rest of a message the body shows only ``keep`` characters of, if any."""
    # Mirrors _render_unit: content first, then each call's arguments, from one budget.
    segments: list[_Segment] = []
    budget = keep
    shown = min(budget, len(unit.content))
    budget -= shown
    empty = not unit.content and not unit.message.tool_calls
    if shown < len(unit.content) or (empty and keep == 0):
        rest = unit.content[shown:]
        segments.append(_Segment("", "", rest, shown, len(unit.content), "text"))
    calls = zip(unit.message.tool_calls, unit.arguments, strict=True)
    for index, (call, arguments) in enumerate(calls, start=1):
        omitted = budget <= 0
        shown = min(max(budget, 0), len(arguments))
        budget -= shown
        if shown < len(arguments) or omitted:
            label = f"Tool call {escape_inline(call.name)} (id {escape_inline(call.id)})"
            rest = arguments[shown:]
            segments.append(
                _Segment(label, f"tool call {index}", rest, shown, len(arguments), "json")
            )
    if not segments:
        return []
    number = unit.number
    return [_Item(f"m{number}", f"message {number}", _unit_heading(unit), number, tuple(segments))]


class _Pages:
    """Continuation comments being filled in order, each within its capacity."""

    def __init__(self) -> None:
        self.pages: list[list[_Block]] = [[]]
        self.used = 0

    def room(self) -> int:
        """Return how many characters the current comment can still take."""
        return _CONTINUATION_CAPACITY - self.used

    def add(self, block: _Block) -> None:
        """Put a block in the current comment; the caller checked that it fits."""
        self.pages[-1].append(block)
        self.used += len(block.text)

    def turn(self) -> None:
        """Start a new comment, unless the current one is still empty."""
        if self.pages[-1]:
            self.pages.append([])
            self.used = 0


def _continuations(
    items: Sequence[_Item], *, request_id: str
) -> tuple[tuple[str, ...], dict[str, tuple[int, int]]]:
    """Render the items across continuation comments; return them and each item's span."""
    if not items:
        return (), {}
    pages = _Pages()
    for item in items:
        if item.rows:
            _pack_rows(item, pages)
        for segment in item.segments:
            _pack_segment(item, segment, pages)
    spans: dict[str, tuple[int, int]] = {}
    for k, page in enumerate(pages.pages, start=1):
        for block in page:
            first, _ = spans.get(block.key, (k, k))
            spans[block.key] = (first, k)
    count = len(pages.pages)
    comments = tuple(
        _render_continuation(k, count, _listing(page, items, spans, k), page, request_id)
        for k, page in enumerate(pages.pages, start=1)
    )
    return comments, spans


def _pack_segment(item: _Item, segment: _Segment, pages: _Pages) -> None:
    """Put a segment's text into comments, split at line ends where possible."""
    text, position = segment.text, 0
    while True:
        remaining = len(text) - position
        if remaining <= pages.room():  # rendering is never shorter than the text
            whole = _piece(item, segment, position, remaining)
            if len(whole) <= pages.room():
                pages.add(_Block(item.key, _entry(item, segment, position, remaining), whole))
                return
        room = pages.room()
        limit = min(remaining, room)
        start = position

        def fits(n: int, start: int = start, room: int = room) -> bool:
            return len(_piece(item, segment, start, n)) <= room

        size = _largest(fits, limit) or 0
        if size < min(remaining, _MIN_PIECE) and pages.used:
            pages.turn()
            continue
        if size == 0:
            raise RuntimeError("a continuation cannot hold even its own heading")
        line_end = text.rfind("\n", position, position + size)
        if line_end >= position + size // 2:
            size = line_end + 1 - position  # end the piece on a whole line
        piece = _piece(item, segment, position, size)
        pages.add(_Block(item.key, _entry(item, segment, position, size), piece))
        position += size
        pages.turn()


def _chars(segment: _Segment, position: int, size: int) -> str:
    """Return ", characters a–b of T" for a piece that is not the segment's whole text."""
    if segment.offset == 0 and position == 0 and size == len(segment.text):
        return ""
    start = segment.offset + position
    return f", characters {start + 1:,}–{start + size:,} of {segment.total:,}"


def _piece(item: _Item, segment: _Segment, position: int, size: int) -> str:
    """Render one fenced piece of a segment, with a heading saying which part it is."""
    chars = _chars(segment, position, size)
    if segment.label:
        head = f"{item.heading}\n\n{segment.label}{chars}:\n\n"
    else:
        head = f"{item.heading}{chars}\n\n"
    if not segment.text:
        return f"{head}*(empty)*\n\n"
    return f"{head}{_fence(segment.text[position : position + size], segment.info)}\n"


def _entry(item: _Item, segment: _Segment, position: int, size: int) -> str:
    """Return how a listing names one piece, e.g. "message 3, characters 1–60,000 of 90,000"."""
    part = f", {segment.part}" if segment.part else ""
    return f"{item.name}{part}{_chars(segment, position, size)}"


def _pack_rows(item: _Item, pages: _Pages) -> None:
    """Put the tool table's hidden rows into comments, each piece a table of its own."""
    index = 0
    while index < len(item.rows):
        widest = len(_rows_head(item, item.total_rows, item.total_rows)) + 1
        room = pages.room() - widest
        taken, size = 0, 0
        while index + taken < len(item.rows) and size + len(item.rows[index + taken]) <= room:
            size += len(item.rows[index + taken])
            taken += 1
        if taken == 0:
            if not pages.used:
                raise RuntimeError("a continuation cannot hold one row of the tool table")
            pages.turn()
            continue
        first = item.first_row + index + 1
        last = first + taken - 1
        rows = "".join(item.rows[index : index + taken])
        entry = f"{item.name}, rows {first:,}–{last:,} of {item.total_rows:,}"
        pages.add(_Block(item.key, entry, f"{_rows_head(item, first, last)}{rows}\n"))
        index += taken
        if index < len(item.rows):
            pages.turn()


def _rows_head(item: _Item, first: int, last: int) -> str:
    """Return the heading and table header of a piece of the tool table."""
    return f"{item.heading}, rows {first:,}–{last:,} of {item.total_rows:,}:\n\n{item.table_head}"


def _listing(
    page: Sequence[_Block], items: Sequence[_Item], spans: Mapping[str, tuple[int, int]], k: int
) -> str:
    """Say what one continuation holds: whole messages as ranges, parts with their range."""
    numbers = {item.key: item.number for item in items}
    entries: list[str] = []
    run: list[int] = []  # consecutive whole messages, listed as one range

    def close_run() -> None:
        if run:
            entries.append(f"message {run[0]}" if len(run) == 1 else f"messages {run[0]}–{run[-1]}")
            run.clear()

    seen: set[str] = set()
    for block in page:
        whole = spans[block.key] == (k, k)  # every piece of the item is in this comment
        if whole and block.key in seen:
            continue
        seen.add(block.key)
        number = numbers[block.key]
        if whole and number is not None:
            if run and run[-1] + 1 != number:
                close_run()
            run.append(number)
            continue
        close_run()
        entries.append(_item_name(items, block.key) if whole else block.entry)
    close_run()
    return clip("; ".join(entries), _LISTING_LIMIT)


def _item_name(items: Sequence[_Item], key: str) -> str:
    """Return the listing name of the item with this key."""
    return next(item.name for item in items if item.key == key)


def _render_continuation(
    k: int, count: int, listing: str, page: Sequence[_Block], request_id: str
) -> str:
    """Render continuation comment k of count, ending with the bot-reply marker line."""
    return (
        f"### Continuation {k} of {count}\n\n"
        f"This continues the ticket post above (request {_code(request_id)}) with text it had"
        f" no room for: {listing}. Nothing here needs an answer of its own.\n\n"
        + "".join(block.text for block in page)
        + _CONTINUATION_MARKER
    )
