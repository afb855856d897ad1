"""Text for a terminal: every character it would hide or act on, made visible."""

from __future__ import annotations

import unicodedata

# Characters a terminal does not show as themselves (escapes, bidi overrides, zero-width
# joiners): shown as \uXXXX, so an answer cannot hide what a reviewer approves.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Zl", "Zp"})


def shown(text: str) -> str:
    """Return text with every character a terminal would hide or act on made visible."""
    return "".join(
        f"\\u{ord(char):04x}"
        if char not in "\n\t" and unicodedata.category(char) in _HIDDEN_CATEGORIES
        else char
        for char in text
    )
