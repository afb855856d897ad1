"""Continuation comments: the text a ticket body had to shorten or leave out, in full.

Pure: no I/O. Each comment stays under GitHub's limit; text is fenced and neutralised like
the body, split at line ends where possible, and each comment says what it holds and ends
with a bot-reply marker line, so the answer finder never reads it as an answer.
:func:`collect_overflow` finds what the fitted body left out; :func:`render_continuations`
packs it into comments and reports which comments hold each item, so the body's notes can
name them.

Internal to the renderer: :mod:`ticketing.render.ticket` re-exports what callers use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ticketing.render.fitting import DROPPED, GITHUB_BODY_LIMIT, largest
from ticketing.render.layout import Section, Unit, unit_heading
from ticketing.render.markdown import clip, escape_inline
from ticketing.render.replies import REPLY_MARKER_PREFIX
from ticketing.render.snippets import code, fence
from ticketing.render.template_section import Guide, GuideCut, is_json, template_shown

_CONTINUATION_MARKER = f"{REPLY_MARKER_PREFIX}continuation -->"
# Room kept in each continuation for its heading, listing (capped) and marker line.
_CONTINUATION_RESERVE = 2_500
_CONTINUATION_CAPACITY = GITHUB_BODY_LIMIT - _CONTINUATION_RESERVE
_LISTING_LIMIT = 1_000
# A long text that would get less than this in a part-filled comment starts a new one.
_MIN_PIECE = 2_000
# At most this many continuation comments per request. Each is a content-creating write
# under GitHub's secondary limits (80 a minute, 500 an hour, shared by every ticket), so one
# huge prompt (1.9 MB made 30 comments) must not spend the budget of all the others. Five
# hold about 315,000 characters beyond the body; the last says what was left out.
MAX_CONTINUATIONS = 5
_LEFT_OUT_LISTING_LIMIT = 300


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

    key: str  # "m<number>", "template" or "tools", as Locator knows them
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


def collect_overflow(
    sections: Sequence[Section],
    plan: Mapping[int, int | None],
    guide: Guide | None,
    cut: GuideCut,
) -> list[_Item]:
    """Return, in reading order, every text the body shortened or left out, with its rest."""
    items: list[_Item] = []
    units = sorted((u for section in sections for u in section.units), key=lambda u: u.number)
    for unit in units:
        keep = plan.get(unit.number)
        if keep is not None:
            items.extend(_unit_overflow(unit, 0 if keep == DROPPED else keep))
    if guide is None:
        return items
    shown = template_shown(guide, cut)
    if len(shown) < len(guide.template):
        info = "json" if is_json(guide.template) else "text"
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


def _unit_overflow(unit: Unit, keep: int) -> list[_Item]:
    """Return the rest of a message the body shows only ``keep`` characters of, if any."""
    # Mirrors render_unit: content first, then each call's arguments, from one budget.
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
    return [_Item(f"m{number}", f"message {number}", unit_heading(unit), number, tuple(segments))]


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


def render_continuations(
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
    kept, left_out = pages.pages[:MAX_CONTINUATIONS], pages.pages[MAX_CONTINUATIONS:]
    spans: dict[str, tuple[int, int]] = {}
    for k, page in enumerate(pages.pages, start=1):
        for block in page:
            first, _ = spans.get(block.key, (k, k))
            spans[block.key] = (first, k)
    listings = [_listing(page, items, spans, k) for k, page in enumerate(kept, start=1)]
    # What was left out is pointed at the last comment, which says so.
    last = len(kept)
    spans = {key: (min(first, last), min(end, last)) for key, (first, end) in spans.items()}
    count = len(kept)
    comments = [
        _render_continuation(k, count, listing, page, request_id)
        for k, (listing, page) in enumerate(zip(listings, kept, strict=True), start=1)
    ]
    if left_out:
        comments[-1] = comments[-1].replace(
            _CONTINUATION_MARKER, _left_out_note(left_out, request_id) + _CONTINUATION_MARKER
        )
    return tuple(comments), spans


def _left_out_note(pages: Sequence[Sequence[_Block]], request_id: str) -> str:
    """Say what the comments past MAX_CONTINUATIONS would have held, and where it is kept."""
    blocks = [block for page in pages for block in page]
    entries = clip(
        "; ".join(dict.fromkeys(block.entry for block in blocks)), _LEFT_OUT_LISTING_LIMIT
    )
    chars = sum(len(block.text) for block in blocks)
    return (
        f"**Left out:** {len(pages)} more continuation comments (about {chars:,} characters:"
        f" {entries}) were not posted. ticketproxy posts at most {MAX_CONTINUATIONS}"
        " continuation comments per request, so that one large request cannot use up the"
        " GitHub write budget every other ticket shares. The whole request is kept in"
        f" ticketproxy's store (request {code(request_id)}); ask the operator for it, or answer"
        " from what is shown.\n\n"
    )


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

        size = largest(fits, limit) or 0
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
    return f"{head}{fence(segment.text[position : position + size], segment.info)}\n"


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
        f"This continues the ticket post above (request {code(request_id)}) with text it had"
        f" no room for: {listing}. Nothing here needs an answer of its own.\n\n"
        + "".join(block.text for block in page)
        + _CONTINUATION_MARKER
    )
