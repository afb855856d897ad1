"""Lay a request out as the sections of a ticket body, and fit them under GitHub's limit.

Pure: no I/O. A body is the header, the conversation's sections (the newest message, what
followed, earlier history and the system prompt, or for a step comment what is new and what
changed), the *Answer template* section, and the how-to. The answer template (see
:mod:`ticketing.render.templates`) shows what a valid answer looks like, in a fence the editor
copies; agent values in its tool table are escaped like the rest.

The body never goes over GitHub's limit and is never cut silently: history and system
prompt (oldest first), then the tool table and the answer template, and finally the newest
message are shortened with a note naming the *continuation comment* that holds the rest
(never the header or the how-to). :func:`fit` plans the cuts with placeholder
continuation numbers; :mod:`ticketing.render.continuations` then packs the rest and gives the
real ones.

Internal to the renderer: :mod:`ticketing.render.ticket` re-exports what callers use.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ticketing.render.markdown import block_text, escape_inline
from ticketing.render.snippets import fence
from ticketing.render.templates import answer_notes, answer_template
from ticketing.render.tool_table import tool_table
from ticketing.request import ChatRequest, Message, ToolCall

# GitHub refuses issue and comment bodies longer than this ("body is too long").
GITHUB_BODY_LIMIT = 65_536
# How a plan marks a message left out whole (absent means whole, a number how much is kept).
DROPPED = -1


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


_PLACEHOLDER = Locator()


# --- conversation sections ----------------------------------------------------------------


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
    return json.dumps(parsed, indent=2, ensure_ascii=False)


def _dropped_note(first: int, last: int, chars: int, where: Locator = _PLACEHOLDER) -> str:
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


def _render_unit(unit: Unit, keep: int | None, where: Locator = _PLACEHOLDER) -> str:
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
            more = f"{_counted(range(omitted_calls), 'more tool call')}, {omitted_chars} characters"
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


# --- the answer template -----------------------------------------------------------------


@dataclass(frozen=True)
class Guide:
    """The answer template section: template, notes and tool table, which may be shortened."""

    template: str
    notes: tuple[str, ...]
    table_head: str
    rows: tuple[str, ...]
    noun: str  # what a table row is: "tool" or "command"
    unchanged: bool = False  # a step whose tools are those of the first step


@dataclass(frozen=True)
class GuideCut:
    """How much of the guide to show: table rows and template characters; None shows all."""

    rows: int | None = None
    chars: int | None = None


def gather_guide(request: ChatRequest) -> Guide | None:
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
    return Guide(
        template=block_text(template or ""),
        notes=answer_notes(request),
        table_head=head,
        rows=rows,
        noun=noun,
    )


def is_json(text: str) -> bool:
    """Return whether text is one JSON value (so its fence can be labelled json)."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def template_shown(guide: Guide, cut: GuideCut) -> str:
    """Return the part of the template the body shows under ``cut``, ending on a whole line."""
    shown = guide.template if cut.chars is None else guide.template[: cut.chars]
    if len(shown) < len(guide.template) and "\n" in shown:
        # End a cut template on a whole line; the newline belongs to the shown part, so
        # the continuation starts on the next line.
        shown = shown[: shown.rfind("\n") + 1]
    return shown


def render_guide(guide: Guide | None, cut: GuideCut, where: Locator = _PLACEHOLDER) -> str:
    """Render the *Answer template* section, showing as much as ``cut`` allows."""
    if guide is None:
        return ""
    parts = ["## Answer template\n\n"]
    if guide.template:
        shown = template_shown(guide, cut)
        parts.append(
            "Copy this into `answer.md`, replace each placeholder with your answer, then sign"
            " and post it as *How to answer* says:\n\n"
        )
        if shown:
            info = "json" if is_json(guide.template) else "text"
            parts.append(
                fence(shown.removesuffix("\n") if len(shown) < len(guide.template) else shown, info)
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


def _fit_guide(guide: Guide, budget: int) -> GuideCut:
    """Return the largest cut of the guide within ``budget``: rows go first, then template."""
    rows = largest(lambda n: len(render_guide(guide, GuideCut(rows=n))) <= budget, len(guide.rows))
    if rows is not None:
        return GuideCut(rows=rows)
    chars = largest(
        lambda n: len(render_guide(guide, GuideCut(rows=0, chars=n))) <= budget,
        len(guide.template),
    )
    return GuideCut(rows=0, chars=chars or 0)


# --- fitting the body under GitHub's limit ------------------------------------------------


def assemble(
    sections: Sequence[Section],
    plan: Mapping[int, int | None],
    *,
    top: str,
    bottom: str,
    where: Locator = _PLACEHOLDER,
) -> str:
    """Join the header, sections and how-to, rendering each message as the plan says."""
    parts = [top]
    for section in sections:
        dropped = [u for u in section.units if plan.get(u.number) == DROPPED]
        parts.append(section.opening)
        if dropped:
            # Messages are dropped oldest first, so the dropped ones are a leading run.
            chars = sum(u.size for u in dropped)
            parts.append(_dropped_note(dropped[0].number, dropped[-1].number, chars, where))
        for unit in section.units:
            keep = plan.get(unit.number)
            if keep != DROPPED:
                parts.append(_render_unit(unit, keep, where))
        parts.append(section.closing)
    parts.append(bottom)
    return "".join(parts)


def fit(
    sections: Sequence[Section],
    guide: Guide | None,
    *,
    top: str,
    bottom: str,
    focus: int | None,
) -> tuple[dict[int, int | None], GuideCut]:
    """Plan the body: shorten history (oldest first), the guide, then the newest message.

    Returns, per message number, how many characters to keep (or ``DROPPED``; absent
    means whole) and how much of the guide to show, with notes sized for any place.
    """
    plan: dict[int, int | None] = {}
    cut = GuideCut()
    guide_text = render_guide(guide, cut)
    body = assemble(sections, plan, top=top, bottom=guide_text + bottom)
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
            plan[number] = DROPPED
            total = rest + note_delta
            continue
        # Dropping it fits; keep as much of it as still fits (dropping when nothing does).
        plan[number] = _largest_keep(unit, GITHUB_BODY_LIMIT - rest) or DROPPED
        fitted = True
        break
    if not fitted and guide is not None:
        rest = total - len(guide_text)
        cut = _fit_guide(guide, GITHUB_BODY_LIMIT - rest)
        total = rest + len(render_guide(guide, cut))
        fitted = total <= GITHUB_BODY_LIMIT
    if not fitted and focus_number is not None:
        _, unit = located[focus_number]
        rest = total - len(_render_unit(unit, None))
        plan[focus_number] = _largest_keep(unit, GITHUB_BODY_LIMIT - rest) or 0
    return plan, cut


def largest(fits: Callable[[int], bool], high: int) -> int | None:
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


def _largest_keep(unit: Unit, budget: int) -> int | None:
    """Return the most characters of a message that render within ``budget``, or None."""
    return largest(lambda n: len(_render_unit(unit, n)) <= budget, unit.size)
