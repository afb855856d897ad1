"""The shapes of secret redacted from prompts, in the order they are applied.

Pure: a table of compiled patterns. The provider-specific shapes follow gitleaks'
``config/gitleaks.toml`` (https://github.com/gitleaks/gitleaks, v8.30 at commit b58d3f10,
MIT licence, Copyright (c) 2019 Zachary Rice), loosened where a ticket must err on the side of
redacting (lengths are minimums, not exact); the AWS secret access key next to its key id
follows detect-secrets' ``aws.py`` (https://github.com/Yelp/detect-secrets, Apache-2.0).
gitleaks' generic rule relies on an entropy filter this table does not have, so the
assignment rule below names its keywords instead, and spares the values detect-secrets'
keyword detector filters out: placeholders (``<your password>``, ``changeme``, ``xxxx``),
references (``${PASSWORD}``, ``os.environ[...]``, ``settings.SECRET_KEY``), literals
(``None``), values under four characters (``token: the next one``), and prose: a sentence
that names a secret with a word after its colon (``No token: hello?``, :func:`reads_as_prose`).

A pattern with a capture group replaces only the first group that took part in the match
(the value of ``password=...``, the secret after an AWS key id), so the ticket keeps the
context that says what was there.

Every pattern must stay linear on hostile input (``tests/ticketing/test_redact.py`` feeds
each a megabyte built to trip it): a pattern starts with a literal where it can (searched
fast) and checks the boundary before it with a lookbehind placed after that literal, so a
match cannot start inside a run its body has already scanned; a scan that can fail is
bounded or possessive; and the assignment rule's unquoted values stop at ``=`` and ``:``,
so no scan crosses another keyword's operator. Case-insensitive patterns, which have no
literal to search for, are tried only when the text holds one of their ``hints``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "DEFAULT_PATTERNS",
    "SecretPattern",
    "not_an_assigned_secret",
    "reads_as_prose",
    "spared_assignment",
]


@dataclass(frozen=True)
class SecretPattern:
    """A named shape of secret."""

    name: str
    pattern: re.Pattern[str]
    # Words (lowercase) one of which the text must hold for the pattern to be tried, as
    # gitleaks' `keywords`: a case-insensitive pattern has no literal to search for.
    hints: tuple[str, ...] = ()
    # Whether a matched value (the match, the value) is not a secret after all (a
    # placeholder, a reference, prose): then the match is left as it is, and nothing is
    # reported.
    spares: Callable[[re.Match[str], str], bool] | None = None


# Values an assignment names without being a secret: types in code, literals, placeholders,
# and what a pattern above already replaced. Checked once, past an opening quote.
_NOT_A_VALUE = (
    r"(?!\\?[\"']?(?:\[redacted |\$\{?[A-Za-z_]"
    r"|(?i:true|false|null|none|nil|undefined|str|string|bytes|int|bool|boolean|number"
    r"|optional|any|secretstr|required)\b))"
)

_ASSIGNED = (
    # The key: it ends with one of these words (DB_PASSWORD, client_secret, "access_token").
    r"(?i:passw(?:or)?d|secret(?:[_-]?key)?|token|api[_-]?key|access[_-]?key)"
    # A JSON or YAML key's closing quote (escaped, inside a JSON string), then the operator.
    r"\\?[\"']?[ \t]*(?:=|:=|:|=>)(?!=)[ \t]*" + _NOT_A_VALUE + r"(?:"
    r"\"((?:[^\"\\\n]|\\.){1,1024}+)\""
    r"|'([^'\n]{1,1024}+)'"
    r"|\\\"([^\"\\\n]{1,1024}+)\\\""
    # Unquoted: stops at '=' and ':' (base64 padding aside), and must end at a delimiter,
    # so `token=getToken()` and `secret=os.environ[...]` are code, not secrets.
    r"|(?P<bare>[^\s'\"`,;&#()\[\]{}<>\\=:]{1,1024}+={0,3})(?=[\s'\"`,;&#)\]}]|\Z)"
    r")"
)

# gitleaks `aws-access-token`: every kind of key id is 20 characters, so the boundary
# before it is checked after it (a pattern that starts with a literal is searched fast).
_AWS_KEY_ID = r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{16}(?<!\w.{20})\b"

# detect-secrets' keyword-detector filters (its FALSE_POSITIVES, templated and indirect
# values, non-alphanumeric strings), for the values an assignment names without holding a
# secret: placeholders, references to a variable, prose, and values too short to matter.
_SPARED = """
password passwd pwd secret token key apikey api_key secret_key access_token
changeme change_me example sample placeholder dummy test testing todo tbd fixme redacted
hidden masked foo bar baz foobar
unset empty missing required optional default none null nil true false yes no on off
this that these those here there same below above following your mine
"""  # the keyword itself; placeholders; literals and settings; prose ("this one")
_SPARED_WORDS = frozenset(_SPARED.split())
_SECRET_PARTS = frozenset({"password", "passwd", "pwd", "secret", "token", "key", "apikey"})
_SPARED_PREFIXES = ("your_", "your-", "your ", "<")
_ALPHANUMERIC = re.compile(r"[^\W_]")
_SHORTEST_SECRET = 4  # "abc" or "123" after a keyword is prose or a count, not a credential
_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_VARIABLE_REFERENCE = re.compile(r"%[A-Za-z_]\w*%|\$\(.*\)", re.DOTALL)


@functools.lru_cache(maxsize=1024)  # a text built to repeat one value pays for it once
def not_an_assigned_secret(value: str) -> bool:
    """Return whether an assigned value is a placeholder, a reference or prose, not a secret."""
    bare = value.strip()
    if len(bare) < _SHORTEST_SECRET or _ALPHANUMERIC.search(bare) is None:
        return True  # "abc", "********", "..."
    lowered = bare.lower()
    if lowered in _SPARED_WORDS or lowered.startswith(_SPARED_PREFIXES):
        return True  # "changeme", "YOUR_PASSWORD", "your-token-here"
    if bare.endswith(("...", "…")) or lowered.count(lowered[0]) == len(lowered):
        return True  # an example cut short such as "sk-...", "xxxxxxxx"
    if bare[0] in "%$" and _VARIABLE_REFERENCE.fullmatch(bare):
        return True  # "%PASSWORD%", "$(cat pw)"
    # A name that ends in a secret's name refers to one: self.password, settings.SECRET_KEY,
    # process.env.TOKEN, DB_PASSWORD; "MONKEY1" or "hunter2" name nothing of the kind.
    if _NAME.fullmatch(bare) and ("." in bare or "_" in bare or bare.isupper()):
        last = lowered.rsplit(".", 1)[-1]
        return any(part in _SECRET_PARTS for part in last.split("_"))
    return False


# Prose names a secret without giving one: "No token: hello?". The keyword follows a word on
# its line (not a line's start, where a YAML key stands, nor ``DB_``), then a bare ``: ``,
# and the value reads as a word: letters only, lowercase past its first, at most 16, maybe
# ending a sentence. A value with a digit, a symbol, odd case or more letters (entropy, a
# known shape) is still redacted, and so is any value after ``=`` (``password=hunter``).
_WORD_BEFORE = re.compile(r"[^\W\d_][,;]?[ \t]+\Z")
_KEYWORD_COLON = re.compile(r"[A-Za-z_-]+:[ \t]+")
_PROSE_WORD = re.compile(r"[^\W\d_]{1,16}[.?!…]{0,3}")


def reads_as_prose(match: re.Match[str]) -> bool:
    """Return whether an assignment's match is a sentence naming a secret, not giving one."""
    if match.start("bare") < 0:
        return False  # a quoted value was put there on purpose
    value = match.group("bare")
    if not _PROSE_WORD.fullmatch(value) or value[1:] != value[1:].lower():
        return False  # "Secret" and "hello?" read as words; "HUNTER", "hUnTeR", "a1b2" do not
    if not _KEYWORD_COLON.fullmatch(match.string, match.start(), match.start("bare")):
        return False
    before = match.string[max(0, match.start() - 64) : match.start()]
    return _WORD_BEFORE.search(before) is not None


def spared_assignment(match: re.Match[str], value: str) -> bool:
    """Return whether an assignment's value is a placeholder, a reference or prose."""
    return not_an_assigned_secret(value) or reads_as_prose(match)


_HINTS = {
    "bearer token": ("bearer",),
    "basic auth credentials": ("authorization",),
    "assigned secret": ("passw", "secret", "token", "key"),
}

_SPARES = {"assigned secret": spared_assignment}

DEFAULT_PATTERNS: tuple[SecretPattern, ...] = tuple(
    SecretPattern(name, re.compile(regex), _HINTS.get(name, ()), _SPARES.get(name))
    for name, regex in (
        # gitleaks `private-key`, any kind (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP ... BLOCK);
        # a block cut short is redacted to the end of the text.
        (
            "private key",
            r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
            r"(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|\Z)",
        ),
        # detect-secrets `aws.py`: 40 base64 characters near an access key id (before the
        # key id itself is redacted). Lowercase hex is a git SHA, not a secret key.
        (
            "AWS secret access key",
            _AWS_KEY_ID + r"(?:[^A-Za-z0-9/+=]{1,20}+[A-Za-z0-9/+=]{1,100}+){0,8}?"
            r"[^A-Za-z0-9/+=]{1,20}+(?![0-9a-f]{40})([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        ),
        (
            "AWS secret access key",
            r"(?:secret|Secret|SECRET)[_-]?(?:access|Access|ACCESS)[_-]?(?:key|Key|KEY)"
            r"\\?[\"']?[ \t]*[=:][ \t]*\\?[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        ),
        ("Anthropic API key", r"sk-ant-(?<![\w-]sk-ant-)[A-Za-z0-9_-]{20,}"),
        ("OpenAI API key", r"sk-(?<![\w-]sk-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        # gitleaks `github-pat`, `-oauth`, `-app-token`, `-refresh-token`, `-fine-grained-pat`.
        (
            "GitHub token",
            r"gh[pousr]_(?<!\wgh[pousr]_)[A-Za-z0-9]{30,}|github_pat_(?<!\wgithub_pat_)\w{30,}",
        ),
        # gitleaks `gitlab-*`: personal, deploy, runner, trigger, CI job, feed, SCIM ... tokens.
        (
            "GitLab token",
            r"(?:gl(?:pat|dt|rt|ptt|cbt|ft|soat|ffct|imt|agent|oas)-|GR1348941)[\w.-]{20,}",
        ),
        # gitleaks `huggingface-access-token`, `huggingface-organization-api-token`.
        (
            "Hugging Face token",
            r"(?:hf_(?<!\whf_)|api_org_(?<!\wapi_org_))[A-Za-z]{34,}",
        ),
        # gitleaks `stripe-access-token`: secret and restricted keys, live or test.
        ("Stripe key", r"[sr]k_(?<!\w[sr]k_)(?:live|test|prod)_[A-Za-z0-9]{10,}"),
        # gitleaks `slack-*-token`: bot, user, app, legacy and configuration tokens.
        (
            "Slack token",
            r"(?:xoxe\.xox[bp]-|xox[abposre]-(?<![\w.-]xox[abposre]-)|xapp-(?<![\w-]xapp-))"
            r"[A-Za-z0-9-]{10,}",
        ),
        (
            "Slack webhook URL",
            r"hooks\.slack\.com/(?:services|workflows|triggers)/[\w+/-]{20,}",
        ),
        ("Google API key", r"AIza(?<![\w-]AIza)[\w-]{35}(?![\w-])"),
        ("npm token", r"npm_(?<!\wnpm_)[A-Za-z0-9]{36,}"),
        # gitleaks `pypi-upload-token`, and TestPyPI's prefix.
        ("PyPI token", r"pypi-AgE(?<![\w-]pypi-AgE)(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[\w-]{20,}"),
        (
            "JSON Web Token",
            r"eyJ(?<![\w-]eyJ)[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}",
        ),
        ("bearer token", r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=-]{20,}"),
        ("basic auth credentials", r"(?i)\bauthorization:[ \t]*basic[ \t]+([A-Za-z0-9+/]{8,}=*)"),
        ("password in a URL", r"://([^/\s:@]{1,64}+:[^/\s@]{1,128}+)@"),
        ("AWS access key id", _AWS_KEY_ID),
        # Last: what the shapes above already replaced is skipped (``[redacted ...]``).
        ("assigned secret", _ASSIGNED),
    )
)
