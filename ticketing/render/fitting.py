"""Fit a ticket body under GitHub's limit, and assemble it from its parts.

Pure: no I/O. The body never goes over GitHub's limit and is never cut silently: history and
system prompt (oldest first), then the tool table and the answer template, and finally the
newest message are shortened with a note naming the *continuation comment* that holds the
rest (never the header or the how-to). :func:`fit` plans the cuts with placeholder
continuation numbers; :mod:`ticketing.render.continuations` then packs the rest and gives the
real ones.

Internal to the renderer: :mod:`ticketing.render.ticket` re-exports what callers use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ticketing.render.layout import UNPLACED, Locator, Section, Unit, dropped_note, render_unit
from ticketing.render.template_section import Guide, GuideCut, render_guide

# GitHub refuses issue and comment bodies longer than this ("body is too long").
GITHUB_BODY_LIMIT = 65_536
# How a plan marks a message left out whole (absent means whole, a number how much is kept).
DROPPED = -1


def assemble(
    sections: Sequence[Section],
    plan: Mapping[int, int | None],
    *,
    top: str,
    bottom: str,
    where: Locator = UNPLACED,
) -> str:
    """Join the header, sections and how-to, rendering each message as the plan says."""
    parts = [top]
    for section in sections:
        dropped = [u for u in section.units if plan.get(u.number) == DROPPED]
        parts.append(section.opening)
        if dropped:
            # Messages are dropped oldest first, so the dropped ones are a leading run.
            chars = sum(u.size for u in dropped)
            parts.append(dropped_note(dropped[0].number, dropped[-1].number, chars, where))
        for unit in section.units:
            keep = plan.get(unit.number)
            if keep != DROPPED:
                parts.append(render_unit(unit, keep, where))
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
        rest = total - len(render_unit(unit, None))
        # Whole messages leave a section oldest first, so its note covers a prefix.
        gone = dropped.get(id(section))
        old_note = len(dropped_note(*gone)) if gone else 0
        grown = (gone[0], number, gone[2] + unit.size) if gone else (number, number, unit.size)
        note_delta = len(dropped_note(*grown)) - old_note
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
        rest = total - len(render_unit(unit, None))
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
    return largest(lambda n: len(render_unit(unit, n)) <= budget, unit.size)


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
