"""The repo-wide comment poll: one conditional request per page, however many tickets pend.

``GET /repos/{o}/{r}/issues/comments?sort=updated&direction=asc&since=…`` with
``If-None-Match`` (https://docs.github.com/en/rest/issues/comments#list-issue-comments-for-a-repository).
A ``304`` does not count against the primary rate limit. :func:`fetch_comment_page` blocks,
so it runs on the GitHub worker thread.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from github.Requester import Requester

from ticketing.github.interface import Comment, CommentPage
from ticketing.github.response_headers import header_value, next_page_url
from ticketing.github.times import parse_github_time


def fetch_comment_page(
    requester: Requester, repo_url: str, *, since: str | None, etag: str | None
) -> CommentPage:
    """Fetch every comment of the repository updated since ``since``, page after page."""
    params: dict[str, Any] = {"sort": "updated", "direction": "asc", "per_page": 100}
    if since is not None:
        params["since"] = since
    url: str | None = f"{repo_url}/issues/comments"
    headers = {"If-None-Match": etag} if etag else None
    comments: list[Comment] = []
    first_etag: str | None = None
    requests = 0
    remaining: int | None = None
    limit: int | None = None
    reset: float | None = None
    while url is not None:
        status, response_headers, text = requester.requestJson(
            "GET", url, parameters=params, headers=headers
        )
        requests += 1
        remaining_header = header_value(response_headers, "x-ratelimit-remaining")
        if remaining_header is not None:
            remaining = int(remaining_header)
        limit_header = header_value(response_headers, "x-ratelimit-limit")
        if limit_header is not None:
            limit = int(limit_header)
        reset_header = header_value(response_headers, "x-ratelimit-reset")
        if reset_header is not None:
            reset = float(reset_header)
        if status == 304:
            return CommentPage((), etag, True, requests, remaining, limit, reset)
        if status >= 400:
            data = json.loads(text) if text else {}
            raise Requester.createException(status, response_headers, data)
        if requests == 1:
            first_etag = header_value(response_headers, "etag")
        comments.extend(comment_from_json(item) for item in json.loads(text))
        url = next_page_url(response_headers)
        params, headers = {}, None
        if url is not None:
            # A conditional request only covers the first page, so an ETag for a
            # multi-page answer could hide new comments on later pages.
            first_etag = None
    return CommentPage(tuple(comments), first_etag, False, requests, remaining, limit, reset)


def comment_from_json(item: Mapping[str, Any]) -> Comment:
    """Read one comment of GitHub's REST answer."""
    issue_url = str(item.get("issue_url", ""))
    tail = issue_url.rsplit("/issues/", 1)[-1]
    return Comment(
        id=int(item["id"]),
        issue_number=int(tail) if tail.isdigit() else 0,
        body=str(item.get("body") or ""),
        author_login=str(item["user"]["login"]),
        author_id=int(item["user"]["id"]),
        created_at=parse_github_time(item["created_at"]),
        updated_at=parse_github_time(item["updated_at"]),
        url=str(item.get("html_url", "")),
    )
