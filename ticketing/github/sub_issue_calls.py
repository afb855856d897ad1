"""GitHub calls of runs as trees: link a child issue under its parent, rewrite the checklist.

Both are follow-up writes the durable write queue sends, and both are safe to repeat: a link
first asks GitHub for the child's parent (so a child is never linked twice, and a link whose
response was lost is not sent again), and the checklist is replaced in place in the body.
https://docs.github.com/rest/issues/sub-issues#add-sub-issue takes the child's **id**.
"""

from __future__ import annotations

from typing import Any

from github.Requester import Requester

from ticketing.errors import GitHubError
from ticketing.github.throttle import WriteThrottle
from ticketing.github.worker import GitHubWorker
from ticketing.tree import with_section


class SubIssueCalls:
    """The sub-issue link and the checklist edit, over the adapter's worker (a mix-in)."""

    _worker: GitHubWorker
    _throttle: WriteThrottle

    @property
    def _repo(self) -> Any:
        return self._worker.repo

    @property
    def _requester(self) -> Requester:
        return self._worker.requester

    async def link_sub_issue(self, parent: int, child: int) -> bool:
        """Link issue ``child`` under issue ``parent``; False if it already was.

        Raises GitHubError (permanent) when the child already has another parent.
        """
        base = f"{self._repo.url}/issues"

        def linked_to() -> tuple[int, str | None]:
            _, data = self._requester.requestJsonAndCheck("GET", f"{base}/{child}")
            return int(data["id"]), data.get("parent_issue_url")

        child_id, parent_url = await self._worker.retrying(linked_to, what="read sub-issue")
        if parent_url is not None:
            if parent_url.rstrip("/").endswith(f"/issues/{parent}"):
                return False
            raise GitHubError(f"issue #{child} is already a sub-issue of {parent_url}")
        # Linking creates content on GitHub: it is paced like a comment.
        await self._throttle.acquire()

        def link() -> None:
            self._requester.requestJsonAndCheck(
                "POST", f"{base}/{parent}/sub_issues", input={"sub_issue_id": child_id}
            )

        async def already_linked() -> bool | None:
            _, url = await self._worker.retrying(linked_to, what="read sub-issue")
            return True if url is not None else None

        await self._worker.retrying(link, what="link sub-issue", before_retry=already_linked)
        return True

    async def replace_issue_section(self, number: int, section: str) -> bool:
        """Put ``section`` (the children's checklist) in issue ``number``'s body; False if same."""
        url = f"{self._repo.url}/issues/{number}"

        def read() -> str:
            _, data = self._requester.requestJsonAndCheck("GET", url)
            return str(data.get("body") or "")

        body = await self._worker.retrying(read, what="read issue body")
        updated = with_section(body, section)
        if updated == body:
            return False

        def edit() -> None:
            self._requester.requestJsonAndCheck("PATCH", url, input={"body": updated})

        await self._worker.retrying(edit, what="edit issue body")
        return True


__all__ = ["SubIssueCalls"]
