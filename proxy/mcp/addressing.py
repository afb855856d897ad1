"""``ask_team``'s ``to``: a person or a team of the keyring, the ones its ticket pings.

Pure: no I/O. ``to`` names a login in the keyring (``alice``, ``@alice``), or a team, which
is a keyring role (``editor`` or ``reviewer``, also in the plural): everyone with a key in
that role. Anything else is the tool's error, naming it, before a ticket opens. The logins
come from the operator's keyring, never from the agent, so the ticket may mention them.
"""

from __future__ import annotations

from dataclasses import dataclass

from auth.keyring import Keyring
from auth.logins import is_valid_login, same_login
from auth.roles import Role

__all__ = ["Addressee", "resolve_addressee"]


@dataclass(frozen=True)
class Addressee:
    """Who a question is asked of: its name as shown, and the keyring logins it pings."""

    shown: str
    logins: tuple[str, ...]


def _team(name: str) -> Role | None:
    """Return the role a team name stands for (``reviewer``, ``reviewers``), or None."""
    singular = name.lower().removesuffix("s")
    return next((role for role in Role if role.value == singular), None)


def resolve_addressee(to: str, keyring: Keyring) -> Addressee | str:
    """Return who ``to`` names in the keyring, or the problem with it, naming it."""
    name = to.strip().removeprefix("@")
    logins = sorted({entry.login for entry in keyring})
    person = next((login for login in logins if same_login(login, name)), None)
    if person is not None and is_valid_login(person):
        return Addressee(shown=person, logins=(person,))
    role = _team(name)
    if role is not None:
        members = tuple(
            sorted(login for login in keyring.logins_with_role(role) if is_valid_login(login))
        )
        if members:
            return Addressee(shown=f"the {role.value} team", logins=members)
        return f"`to`: the {role.value} team {to!r} has nobody in the keyring."
    teams = ", ".join(role.value for role in Role)
    return (
        f"`to`: {to!r} is neither a login nor a team in this ticketproxy's keyring (teams: "
        f"{teams}). Ask without `to`, or name someone who holds a key."
    )
