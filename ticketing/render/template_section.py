"""The *Answer template* section of a ticket body: the template, its notes and the tool table.

Pure: no I/O. The answer template (see :mod:`ticketing.render.templates`) shows what a valid
answer looks like, in a fence the editor copies; agent values in its tool table
(:mod:`ticketing.render.tool_table`) are escaped like the rest. When the body is too long
(see :mod:`ticketing.render.fitting`), the section shows fewer table rows, then less of the
template, each time with a note naming the continuation comment that holds the rest.

Internal to the renderer: :mod:`ticketing.render.ticket` uses it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ticketing.render.layout import UNPLACED, Locator, counted
from ticketing.render.markdown import block_text
from ticketing.render.snippets import fence
from ticketing.render.templates import answer_notes, answer_template
from ticketing.render.tool_table import tool_table
from ticketing.request import ChatRequest
from ticketing.threads import is_side_call

# AutoGPT's step summary: a side call of its run, not a question from its task.
SIDE_CALL_NOTE = (
    "This is the agent's own bookkeeping, not a question from its task: it asks for the action"
    " above and its result condensed into one line. Answer with that one line of plain text:"
    " no JSON, no command, no tool call."
)


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


def gather_guide(request: ChatRequest, *, table_in_first_post: bool = False) -> Guide | None:
    """Gather the answer template, its notes and the tool table, or None for plain chat.

    With ``table_in_first_post`` (a step whose tools are those of the issue's first step),
    the table is left out and the notes point to the issue's first post for it.
    """
    template = answer_template(request)
    table = tool_table(request)
    if template is None and table is None and is_side_call(request):
        return Guide(template="", notes=(SIDE_CALL_NOTE,), table_head="", rows=(), noun="tool")
    if template is None and table is None:
        return None
    head, noun = "", "tool"
    rows: tuple[str, ...] = ()
    if table is not None:
        # tool_table writes a header line, a separator line, then one line per tool.
        lines = table.split("\n")
        head, rows = "\n".join(lines[:2]) + "\n", tuple(line + "\n" for line in lines[2:])
        noun = "command" if lines[0].startswith("| Command") else "tool"
    if table_in_first_post and head:
        return Guide(
            template=block_text(template or ""),
            notes=answer_notes(request, table="the table in the issue's first post"),
            table_head="",
            rows=(),
            noun=noun,
            unchanged=True,
        )
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


def render_guide(guide: Guide | None, cut: GuideCut, where: Locator = UNPLACED) -> str:
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
            more = counted(hidden, f"more {guide.noun}" if shown_rows else guide.noun)
            parts.append(f"\n… [{more}, {chars} characters: in {where.text('tools')} below]\n")
        parts.append("\n")
    return "".join(parts)
