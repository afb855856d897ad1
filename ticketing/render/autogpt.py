"""Read AutoGPT's system prompt: its ``## Commands`` list and its ``AssistantResponse`` interface.

Pure: no I/O. AutoGPT (agpt 0.5, see ``tests/samples/autogpt/run1_default/004``) asks for
each step as one JSON object in the reply's content and describes it in two places:

- a numbered list under a ``## Commands`` heading, one command a line, as AutoGPT's
  ``fmt_line`` writes it: ``7. write_file: Write a file.. Params: (filename: string,
  args?: Array<string>)``;
- ``interface AssistantResponse { ... }``, TypeScript-like, where ``//`` comments say what
  each member holds.

The prompt is agent input, so every reader is linear or bounded (tokens, characters,
nesting) and none raises. What it reads:

- The commands: under the first heading line ``#{1,6} Commands`` (any case, space
  optional) up to the next ``#`` heading; ``N. name: description. Params: (...)``, the name
  word characters, dots and hyphens from a word character on, and the list the *last*
  ``Params:`` on the line, since a description may say "Params:" itself. Each
  parameter is ``name: type`` or ``name?: type`` (optional); commas inside ``<>``, ``()``,
  ``[]`` or ``{}`` do not split. A part that is not ``name: ...`` is not a parameter.
  A command whose ``Params:`` spans several lines (an object type) has none.
- The task: AutoGPT repeats one instruction as the newest user message of every step
  ("Determine exactly one command to use next ..."), which says nothing about the step;
  the run's task is the first user message, in triple quotes.
- The interface: after ``interface AssistantResponse`` (up to 200 characters, as for an
  ``extends`` clause) and ``{``, members ``name?: type``, quoted or not; types are unions,
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

from ticketing.render.markdown import split_lines
from ticketing.request import ChatRequest

__all__ = [
    "ArrayType",
    "AutoGPTCommand",
    "AutoGPTParam",
    "InterfaceShape",
    "LiteralType",
    "Member",
    "NamedType",
    "ObjectType",
    "TypeShape",
    "UnionType",
    "autogpt_task",
    "parse_commands",
    "parse_response_interface",
    "uses_json_convention",
]

# Bounds, so a hostile prompt cannot make reading slow or deep.
_MAX_DEPTH = 16  # nesting levels of a type
_MAX_TOKENS = 4_000  # tokens of an interface
_MAX_SCAN = 50_000  # characters of prompt read after `interface AssistantResponse {`

# Either marker means the agent wants its step as a JSON object in the content.
# AutoGPT's per-step instruction (agpt 0.5, one_shot prompt strategy's `choose_action`).
_STEP_INSTRUCTION = "Determine exactly one command to use next"
_TASK_LIMIT = 2_000  # characters of a task; a longer "task" is not AutoGPT's
_TRIPLE_QUOTED = re.compile(r'\s*"""(.+?)"""\s*', re.DOTALL)
_JSON_MARKERS = ("interface AssistantResponse", "RESPOND WITH A JSON OBJECT")
_INTERFACE = re.compile(r"\binterface\s+AssistantResponse\b([^{};]{0,200})\{")
_COMMANDS_HEADING = re.compile(r"#{1,6}[ \t]*Commands[ \t]*", re.IGNORECASE)
_HEADING = re.compile(r"#{1,6}[ \t]")
_COMMAND_LINE = re.compile(r"\s*\d+\.\s+(\w[\w.-]*)\s*:(.*)")
_COMMAND_PARAMS = re.compile(r"Params:\s*\((.*)\)\s*")
# One optional `\s*` per gap, so a long run of spaces cannot make the match quadratic.
_PARAM = re.compile(r"\s*([A-Za-z_$][\w$-]*)\s*(?:(\?)\s*)?:(.*)", re.DOTALL)
_OPENING = {"(": ")", "[": "]", "{": "}", "<": ">"}
_SPLIT_MARK = re.compile(r"[,()\[\]{}<>]")
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


# --- the task -------------------------------------------------------------------------------


def autogpt_task(request: ChatRequest) -> str | None:
    """Return the run's task when the newest user message is AutoGPT's per-step boilerplate."""
    users = [m for m in request.messages if m.role == "user"]
    if len(users) < 2 or not users[-1].content.lstrip().startswith(_STEP_INSTRUCTION):
        return None
    if len(users[0].content) > _TASK_LIMIT + 6:  # the quotes and a little whitespace
        return None
    quoted = _TRIPLE_QUOTED.fullmatch(users[0].content)
    task = quoted[1].strip() if quoted else ""
    return task or None


# --- commands -------------------------------------------------------------------------------


@dataclass(frozen=True)
class AutoGPTParam:
    """One parameter of a command, ``name: type`` or, when not required, ``name?: type``."""

    name: str
    type: str  # as written, e.g. "Array<string>"; empty when the prompt gives none
    required: bool


@dataclass(frozen=True)
class AutoGPTCommand:
    """One command of the prompt's ``## Commands`` list."""

    name: str
    description: str
    params: tuple[AutoGPTParam, ...]


def parse_commands(system_prompt: str) -> tuple[AutoGPTCommand, ...]:
    """Return the numbered commands under the prompt's ``## Commands`` heading, in order."""
    lines = split_lines(system_prompt)
    start = next((i for i, line in enumerate(lines) if _COMMANDS_HEADING.fullmatch(line)), None)
    if start is None:
        return ()
    found: list[AutoGPTCommand] = []
    for line in lines[start + 1 :]:
        if _HEADING.match(line):
            break
        listed = _COMMAND_LINE.fullmatch(line)
        if listed is not None:
            found.append(_command(listed[1], listed[2]))
    # Duplicates are kept: a reader shows every line, a checker takes the first.
    return tuple(found)


def _command(name: str, rest: str) -> AutoGPTCommand:
    """Split what follows ``name:`` into the description and the ``Params: (...)`` list."""
    at = rest.rfind("Params:")
    params = _COMMAND_PARAMS.fullmatch(rest, at) if at >= 0 else None
    if params is None:
        return AutoGPTCommand(name, rest.strip(), ())
    description = rest[:at].rstrip()
    # fmt_line writes "{description}. Params:", so a description ending in "." shows "..".
    description = description.removesuffix(".").strip()
    return AutoGPTCommand(name, description, _params(params[1]))


def _params(text: str) -> tuple[AutoGPTParam, ...]:
    """Read ``a: string, b?: Array<string>`` into parameters, skipping parts that are not."""
    found = []
    for part in _split_top_level(text):
        match = _PARAM.fullmatch(part)
        if match is not None:
            name, optional, kind = match.groups()
            found.append(AutoGPTParam(name=name, type=kind.strip(), required=optional is None))
    return tuple(found)


def _split_top_level(text: str) -> list[str]:
    """Split a parameter list on the commas that are not inside brackets."""
    parts: list[str] = []
    start, depth = 0, 0
    for mark in _SPLIT_MARK.finditer(text):
        char = mark.group()
        if char in _OPENING:
            depth += 1
        elif char != ",":
            depth = max(depth - 1, 0)
        elif depth == 0:
            parts.append(text[start : mark.start()])
            start = mark.end()
    parts.append(text[start:])
    return [part for part in parts if part.strip()]


# --- the AssistantResponse interface --------------------------------------------------------


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
