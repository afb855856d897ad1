"""``audit``'s file checks: fetch each uploaded file a task's issue lists, or read it from
an exported folder, and compare it with what the issue shows (:mod:`ticketing.audit.files`).

A file is fetched only from the ticketproxy the operator configured (``--proxy-url``, else
``TICKETPROXY_DESK_URL``, else ``serve``'s default address), with the desk token
(``--desk-token`` or ``TICKETPROXY_DESK_TOKEN``). A link to any other host is never
followed, nor is a redirect: the token goes nowhere else. Offline (``--files DIR``) the file
of a link ``…/desk/api/artifacts/TASK/ARTIFACT`` is ``DIR/TASK/ARTIFACT``.
"""

from __future__ import annotations

import argparse
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from proxy.cli.variables import only
from proxy.errors import ProxyError
from proxy.setting_values import parse_desk_token
from proxy.settings import Settings
from ticketing.audit.files import (
    FileCheck,
    ListedFile,
    check_file,
    file_ids,
    followed_link,
    not_checked,
)

__all__ = ["FileSource", "check_files"]

_FILE_VARIABLES = ("TICKETPROXY_DESK_URL", "TICKETPROXY_DESK_TOKEN")
_TIMEOUT = 30.0


@dataclass(frozen=True)
class FileSource:
    """Where the audit reads uploaded files: the configured ticketproxy, or a folder."""

    proxy_url: str
    where: str
    files_dir: Path | None = None
    # Kept out of repr so a logged value never shows the secret.
    desk_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_args(cls, args: argparse.Namespace, env: Mapping[str, str]) -> FileSource:
        """Take the ticketproxy's address, the desk token and ``--files`` from flags or env."""
        settings = Settings.from_env(only(env, _FILE_VARIABLES))
        token = parse_desk_token(args.desk_token) if args.desk_token else settings.desk_token
        if args.proxy_url:
            parts = urlsplit(args.proxy_url)
            if parts.scheme not in {"http", "https"} or not parts.hostname:
                raise ProxyError(
                    f"--proxy-url {args.proxy_url!r} is not an http(s) URL: give ticketproxy's "
                    "address as editors reach it, e.g. https://tickets.example.com"
                )
            url, where = args.proxy_url, "--proxy-url"
        elif settings.desk_url is not None:
            url, where = settings.desk_url, "TICKETPROXY_DESK_URL"
        else:
            url, where = settings.answer_page_url or "http://127.0.0.1:8080/", "serve's default"
        return cls(proxy_url=url, where=where, files_dir=args.files, desk_token=token)

    def describe(self) -> str:
        """Say where the files are read from, for the operator."""
        if self.files_dir is not None:
            return f"uploaded files read from {self.files_dir} (--files)"
        return (
            f"uploaded files fetched only from {self.proxy_url} ({self.where}); "
            "links to other hosts are not followed"
        )


def check_files(listed: Sequence[ListedFile], source: FileSource) -> tuple[FileCheck, ...]:
    """Check each listed file against the bytes the source holds."""
    return tuple(_check(item, source) for item in listed)


def _check(listed: ListedFile, source: FileSource) -> FileCheck:
    if source.files_dir is not None:
        return _read_exported(listed, source.files_dir)
    refused = followed_link(listed.url, proxy_url=source.proxy_url)
    if refused is not None:
        return not_checked(listed, refused)
    request = urllib.request.Request(listed.url)  # noqa: S310 (http(s) only, checked above)
    if source.desk_token is not None:
        request.add_header("Authorization", f"Bearer {source.desk_token}")
    # No proxies from the environment and no redirects: the token goes to this host only.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
    try:
        with opener.open(request, timeout=_TIMEOUT) as response:
            # One byte past the listed size is enough to tell a longer file.
            content = response.read(listed.size + 1)
    except urllib.error.HTTPError as exc:
        return not_checked(listed, _refusal(exc.code))
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return not_checked(listed, f"unreachable: {reason}")
    return check_file(listed, content)


def _read_exported(listed: ListedFile, folder: Path) -> FileCheck:
    path = urlsplit(listed.url).path
    ids = file_ids(path, prefix=path.split("/desk/api/artifacts/")[0])
    if ids is None:
        return not_checked(listed, "the link names no task and file id to look up in --files")
    exported = folder / ids[0] / ids[1]
    try:
        with exported.open("rb") as file:
            content = file.read(listed.size + 1)
    except OSError as exc:
        return not_checked(listed, f"unreadable in --files: {exported}: {exc.strerror}")
    return check_file(listed, content)


def _refusal(status: int) -> str:
    if status in {401, 403}:
        return (
            f"ticketproxy refused the download ({status}): set TICKETPROXY_DESK_TOKEN "
            "or pass --desk-token"
        )
    if 300 <= status < 400:
        return f"ticketproxy answered a redirect ({status}); not followed"
    return f"ticketproxy answered {status}"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse every redirect, so a file link never leads to another host."""

    def redirect_request(self, *_: object, **__: object) -> None:
        return None
