"""Read AutoGPT's ``interface AssistantResponse``: the shape of the JSON object each step sends.

Pure: no I/O. AutoGPT (agpt 0.5, see ``tests/samples/autogpt/run1_default/004``) asks for
each step as one JSON object in the reply's content and describes it in its system prompt as
``interface AssistantResponse { ... }``, TypeScript-like, where ``//`` comments say what each
member holds. Its ``## Commands`` list and the run's task are read by
:mod:`ticketing.render.autogpt_prompt`.

The prompt is agent input, so the reader is bounded (tokens, characters, nesting) and never
raises. After ``interface AssistantResponse`` (up to 200 characters, as for an ``extends``
clause) and ``{``, it reads members ``name?: type``, quoted or not; types are unions,
``T[]``, ``(T)``, ``{ ... }``, string and number literals, and names with ``<...>``
arguments. ``//`` comments before a member are kept with it; ``/* */`` are skipped.
The shape is not ``complete`` when the interface ``extends`` another (whose members are
unknown) or when any of it cannot be read. In the latter case it holds only the top-level
members, without types, found as ``name:`` or ``name?:`` at the start of the body, of a
line, or after ``;``, ``,`` or a ``//`` comment, so that the keys it declares still bind.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "ArrayType",
    "InterfaceShape",
    "LiteralType",
    "Member",
    "NamedType",
    "ObjectType",
    "TypeShape",
    "UnionType",
    "parse_response_interface",
    "uses_json_convention",
]

# Bounds, so a hostile prompt cannot make reading slow or deep.
_MAX_DEPTH = 16  # nesting levels of a type
_MAX_TOKENS = 4_000  # tokens of an interface
_MAX_SCAN = 50_000  # characters of prompt read after `interface AssistantResponse {`

# Either marker means the agent wants its step as a JSON object in the content.
_JSON_MARKERS = ("interface AssistantResponse", "RESPOND WITH A JSON OBJECT")
_INTERFACE = re.compile(r"\binterface\s+AssistantResponse\b([^{};]{0,200})\{")
_TS_TOKEN = re.compile(
    r"""(?P<comment>//[^\n]*)
      | (?P<block>/\*)
      | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
      | (?P<number>-?\d+(?:\.\d+)?)
      | (?P<word>[A-Za-z_$][\w$]*)
      | (?P<space>\s+)
      | (?P<punct>.)""",
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class NamedType:
    """A type by name, with its ``<...>`` arguments: ``string``, ``Array<T>``, ``Record<K, V>``."""

    name: str
    arguments: tuple[TypeShape, ...] = ()


@dataclass(frozen=True)
class LiteralType:
    """A string or number literal type, such as ``'happy'`` or ``42``."""

    value: str | int | float


@dataclass(frozen=True)
class ArrayType:
    """An array type written with a suffix, ``T[]``."""

    element: TypeShape


@dataclass(frozen=True)
class UnionType:
    """A union, ``A | B``, its options in the order written."""

    options: tuple[TypeShape, ...]


@dataclass(frozen=True)
class Member:
    """One member of an interface or object type, with the ``//`` comments above it."""

    name: str
    type: TypeShape | None  # None when the interface could not be read whole
    required: bool
    comments: tuple[str, ...] = ()  # each comment's words, without the `//`


@dataclass(frozen=True)
class ObjectType:
    """An object type literal, ``{ name: type; ... }``."""

    members: tuple[Member, ...]


TypeShape = NamedType | LiteralType | ArrayType | UnionType | ObjectType


@dataclass(frozen=True)
class InterfaceShape:
    """The ``AssistantResponse`` interface as read, and whether all of it could be read."""

    members: tuple[Member, ...]
    complete: bool


def parse_response_interface(system_prompt: str) -> InterfaceShape | None:
    """Return the prompt's ``interface AssistantResponse``, or None when it declares none."""
    found = _INTERFACE.search(system_prompt)
    if found is None:
        return None
    parser = _Parser(list(_tokenize(system_prompt, found.end())))
    return parser.interface(extends=bool(found[1].strip()))


def uses_json_convention(system_prompt: str) -> bool:
    """Return whether the prompt asks, AutoGPT-style, for each reply as one JSON object."""
    return (
        any(marker in system_prompt for marker in _JSON_MARKERS)
        or _INTERFACE.search(system_prompt) is not None
    )


class _Token(NamedTuple):
    """A token of TypeScript-like text; ``newline`` says a line break comes before it."""

    kind: str
    text: str
    newline: bool


class _ParseError(Exception):
    """The text is not the TypeScript-like shape this parser reads."""


class _Parser:
    """Read the tokens after ``interface AssistantResponse {`` into its shape."""

    def __init__(self, tokens: Sequence[_Token]) -> None:
        self._tokens = tokens
        self._at = 0

    def interface(self, *, extends: bool) -> InterfaceShape:
        """Read the whole interface; failing that, find its top-level member names."""
        try:
            members = self._members(depth=0)
        except (_ParseError, IndexError):
            return InterfaceShape(self._scan_members(), complete=False)
        # Members inherited through `extends` are unknown, so the shape is then partial.
        return InterfaceShape(members, complete=not extends)

    def _scan_members(self) -> tuple[Member, ...]:
        """Find ``name?:`` where a top-level member may start, skipping what cannot be read."""
        # Members start the body, or follow `;`, `,`, a line break or a `//` comment; this
        # finds them even when a type between them is garbage, so their keys still bind.
        members: list[Member] = []
        comments: list[str] = []
        depth, expect = 0, True
        self._at = 0
        while self._at < len(self._tokens):
            token = self._tokens[self._at]
            if token.kind == "comment":
                comments += [token.text] if depth == 0 else []
                expect = True
                self._at += 1
                continue
            if depth == 0 and (expect or token.newline):
                expect = False
                head = self._try_member_head(token)
                if head is not None:
                    members.append(Member(head[0], None, head[1], tuple(comments)))
                    comments = []
                    continue
            if self._punct(token, "{", "[", "("):
                depth += 1
            elif self._punct(token, "}", "]", ")"):
                if depth == 0:
                    break  # the interface's closing brace
                depth -= 1
            elif depth == 0 and self._punct(token, ";", ","):
                expect = True
            self._at += 1
        return tuple(members)

    def _try_member_head(self, token: _Token) -> tuple[str, bool] | None:
        """Read ``name?:`` at the current token, or leave the position as it was and say None."""
        start = self._at
        self._at += 1
        try:
            head = self._member_head(token)
        except (_ParseError, IndexError):
            head = None
        # `name::` is no member (the scan this replaces read `:(?!:)`).
        if head is None or (self._at < len(self._tokens) and self._peek_is(":")):
            self._at = start
            return None
        return head

    @staticmethod
    def _punct(token: _Token, *texts: str) -> bool:
        """Return whether a token is one of the given punctuation marks (never a comment)."""
        return token.kind == "punct" and token.text in texts

    def _peek_is(self, text: str) -> bool:
        """Return whether the next token is the punctuation mark ``text``."""
        return self._punct(self._tokens[self._at], text)

    def _take(self, text: str | None = None) -> _Token:
        """Consume the next token, checking it is the punctuation mark ``text`` when given."""
        token = self._tokens[self._at]
        if text is not None and not self._punct(token, text):
            raise _ParseError(f"expected {text!r}, found {token.text!r}")
        self._at += 1
        return token

    def _member_head(self, token: _Token) -> tuple[str, bool]:
        """Read ``name?:`` from its first token on; return the name and whether it is required."""
        if token.kind == "word":
            name = token.text
        elif token.kind == "string":
            name = _unquote(token.text)
        else:
            raise _ParseError(f"expected a member name, found {token.text!r}")
        required = not self._peek_is("?")
        if not required:
            self._take()
        self._take(":")
        return name, required

    def _members(self, *, depth: int) -> tuple[Member, ...]:
        """Read ``name?: type;`` members up to and including the closing ``}``."""
        if depth > _MAX_DEPTH:
            raise _ParseError("interface nested too deep")
        members: list[Member] = []
        comments: list[str] = []
        while True:
            token = self._take()
            if token.kind == "comment":
                comments.append(token.text)
                continue
            if self._punct(token, "}"):
                return tuple(members)
            if self._punct(token, ";", ","):
                continue
            name, required = self._member_head(token)
            members.append(Member(name, self._type(depth=depth), required, tuple(comments)))
            comments = []

    def _type(self, *, depth: int) -> TypeShape:
        """Read a type, a union when options are joined by ``|``."""
        if depth > _MAX_DEPTH:
            raise _ParseError("type nested too deep")
        options = [self._postfix(depth=depth)]
        while self._peek_is("|"):
            self._take()
            options.append(self._postfix(depth=depth))
        return options[0] if len(options) == 1 else UnionType(tuple(options))

    def _postfix(self, *, depth: int) -> TypeShape:
        """Read a type with optional ``[]`` suffixes (arrays of it)."""
        shape = self._primary(depth=depth)
        while self._peek_is("["):
            self._take()
            self._take("]")
            shape, depth = ArrayType(shape), depth + 1
            if depth > _MAX_DEPTH:
                raise _ParseError("array type nested too deep")
        return shape

    def _primary(self, *, depth: int) -> TypeShape:
        """Read an object literal, a literal, a parenthesised type or a (generic) named type."""
        token = self._take()
        if self._punct(token, "{"):
            return ObjectType(self._members(depth=depth + 1))
        if self._punct(token, "("):
            shape = self._type(depth=depth + 1)
            self._take(")")
            return shape
        if token.kind == "string":
            return LiteralType(_unquote(token.text))
        if token.kind == "number":
            return LiteralType(_number_literal(token.text))
        if token.kind != "word":
            raise _ParseError(f"expected a type, found {token.text!r}")
        arguments: list[TypeShape] = []
        if self._peek_is("<"):
            self._take()
            arguments.append(self._type(depth=depth + 1))
            while self._peek_is(","):
                self._take()
                arguments.append(self._type(depth=depth + 1))
            self._take(">")
        return NamedType(token.text, tuple(arguments))


def _tokenize(text: str, start: int) -> Iterator[_Token]:
    """Yield the tokens of TypeScript-like text from ``start``, comments as their words."""
    text = text[: start + _MAX_SCAN]
    at, count, newline = start, 0, False
    while count < _MAX_TOKENS:
        match = _TS_TOKEN.match(text, at)
        if match is None:
            return
        kind, value, at = match.lastgroup or "punct", match.group(), match.end()
        if kind == "block":
            # Skipped with find, not a lazy regex, which would rescan the rest of the
            # prompt for every unclosed `/*`.
            close = text.find("*/", at)
            if close < 0:
                return
            at = close + 2
            continue
        if kind == "space":
            newline = newline or "\n" in value
            continue
        count += 1
        if kind == "comment":
            value = " ".join(value[2:].split())
        yield _Token(kind, value, newline)
        newline = False


def _unquote(literal: str) -> str:
    """Return the text of a quoted TypeScript string literal."""
    if literal[0] == '"':
        try:
            text = json.loads(literal)
        except ValueError:
            return literal[1:-1]
        return str(text)
    return literal[1:-1].replace("\\'", "'")


def _number_literal(text: str) -> int | float:
    """Return a numeric literal's value, or 0 when it is too long for Python to convert."""
    try:
        return float(text) if "." in text else int(text)
    except ValueError:  # more digits than int() accepts (sys.get_int_max_str_digits)
        return 0
