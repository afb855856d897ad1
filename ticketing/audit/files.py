"""Uploaded files on a task's issue: read the listing, decide which links to follow, compare.

Pure: issue text and bytes in, values out; fetching a file is the CLI's job
(:mod:`proxy.cli.audit_files`). A task's issue (and each of its step comments) lists every
file the client uploaded, one line each, as :class:`ticketing.tasks.conversation.ArtifactLink`
writes it::

    - in/report.txt: 16 bytes, sha256 <64 hex digits>, https://proxy.example/desk/api/artifacts/<task>/<artifact>

The audit reads these lines from the issue body and the bot's comments only, and compares
each file ticketproxy now holds with the size and SHA-256 the editors were shown. A link is
followed only when it points at the ticketproxy the operator configured (same scheme, host,
port and path prefix, no credentials, query or fragment): the issue is text anyone with the
client key shaped, so a link elsewhere is reported, never fetched.

Files the agent created are not listed: they are ```` ```artifact ```` blocks inside the
signed answer, so the answer's signature already covers their bytes
(:func:`created_files` names them for the report).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from auth.logins import same_login
from ticketing.audit.comments import AuditComment, signed_text
from ticketing.release.artifacts import read_artifacts

__all__ = [
    "FileCheck",
    "ListedFile",
    "check_file",
    "created_files",
    "file_ids",
    "followed_link",
    "listed_files",
    "not_checked",
]

FileResult = Literal["matches", "mismatch", "not checked"]

# Greedy name, anchored end: a file name holding ": 1 bytes, sha256 …" cannot shift the fields.
_LINE_RE = re.compile(
    r"- (?P<name>.+): (?P<size>0|[1-9][0-9]{0,15}) bytes, sha256 (?P<digest>[0-9a-f]{64}),"
    r" (?P<url>\S+)"
)
_ARTIFACT_PATH_RE = re.compile(r"/desk/api/artifacts/(?P<task>[^/]+)/(?P<artifact>[^/]+)")
# Task and artifact ids are UUIDs; anything else is not a link this ticketproxy wrote.
_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,128}")
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class ListedFile:
    """An uploaded file as the issue lists it: its name, size, SHA-256 and link."""

    name: str
    size: int
    sha256: str
    url: str


@dataclass(frozen=True)
class FileCheck:
    """What the audit found about one listed file."""

    listed: ListedFile
    result: FileResult
    detail: str = ""

    def line(self) -> str:
        """Return the report's line about this file."""
        name = self.listed.name
        if self.result == "matches":
            return f"file {name}: digest matches"
        if self.result == "mismatch":
            return f"file {name}: DIGEST MISMATCH ({self.detail})"
        return f"file {name}: not checked ({self.detail})"

    def to_json(self) -> dict[str, Any]:
        """Return the check as JSON-ready values."""
        return {
            "name": self.listed.name,
            "size": self.listed.size,
            "sha256": self.listed.sha256,
            "url": self.listed.url,
            "result": self.result.replace(" ", "_"),
            "detail": self.detail,
        }


def listed_files(
    issue_body: str, comments: Iterable[AuditComment], *, bot_login: str
) -> tuple[ListedFile, ...]:
    """Return every uploaded file listed in the issue body or the bot's comments, once each."""
    texts = [issue_body] + [c.body for c in comments if same_login(c.author_login, bot_login)]
    found: dict[ListedFile, None] = {}
    for text in texts:
        for line in text.replace("\r\n", "\n").split("\n"):
            match = _LINE_RE.fullmatch(line)
            if match is not None:
                listed = ListedFile(
                    name=match["name"],
                    size=int(match["size"]),
                    sha256=match["digest"],
                    url=match["url"],
                )
                found[listed] = None
    return tuple(found)


def followed_link(url: str, *, proxy_url: str) -> str | None:
    """Return why ``url`` must not be fetched for the ticketproxy at ``proxy_url``, or None.

    Followed only when scheme, host and port are the configured ticketproxy's, the path is
    its file route under the same prefix, and there are no credentials, query or fragment
    (``http://proxy@evil.example/`` names evil.example, not the proxy).
    """
    link, home = urlsplit(url), urlsplit(proxy_url)
    prefix = home.path.split("/desk/")[0].rstrip("/")
    try:
        same_port = _port(link.scheme, link.port) == _port(home.scheme, home.port)
    except ValueError:
        return "the link is malformed; not followed"
    if (
        link.scheme != home.scheme
        or not link.hostname
        or link.hostname != home.hostname
        or not same_port
        or link.username is not None
        or link.password is not None
    ):
        return (
            f"the link points to {_origin(link.scheme, link.netloc)}, not to the configured "
            f"ticketproxy {_origin(home.scheme, home.netloc)}; not followed"
        )
    if link.query or link.fragment or file_ids(link.path, prefix=prefix) is None:
        return "the link is not a file link of the configured ticketproxy; not followed"
    return None


def file_ids(path: str, *, prefix: str = "") -> tuple[str, str] | None:
    """Return (task id, artifact id) of a file link's path, or None if it is not one."""
    if not path.startswith(prefix + "/"):
        return None
    match = _ARTIFACT_PATH_RE.fullmatch(path[len(prefix) :])
    if match is None:
        return None
    task, artifact = unquote(match["task"]), unquote(match["artifact"])
    if _ID_RE.fullmatch(task) is None or _ID_RE.fullmatch(artifact) is None:
        return None
    return task, artifact


def check_file(listed: ListedFile, content: bytes) -> FileCheck:
    """Compare a file's bytes with the size and SHA-256 the issue shows."""
    digest = hashlib.sha256(content).hexdigest()
    if len(content) == listed.size and digest == listed.sha256:
        return FileCheck(listed, "matches")
    detail = (
        f"issue says {listed.size} bytes, sha256 {listed.sha256}; "
        f"file is {len(content)} bytes, sha256 {digest}"
    )
    return FileCheck(listed, "mismatch", detail)


def not_checked(listed: ListedFile, reason: str) -> FileCheck:
    """Return a file the audit could not compare, and why."""
    return FileCheck(listed, "not checked", reason)


def created_files(comments: Sequence[AuditComment], answer_comment_id: int) -> tuple[str, ...]:
    """Return the paths of the files a signed answer created (its artifact blocks)."""
    for comment in comments:
        if comment.id == answer_comment_id:
            text = signed_text(comment.body)
            if text is None:
                return ()
            return tuple(made.relative_path for made in read_artifacts(text).artifacts)
    return ()


def _port(scheme: str, port: int | None) -> int | None:
    return _DEFAULT_PORTS.get(scheme) if port is None else port


def _origin(scheme: str, netloc: str) -> str:
    return f"{scheme}://{netloc}"
