"""A comment posted with an editor's own GitHub token (the desk API's signed comments).

The call is built here and run on the adapter's one worker thread
(:meth:`~ticketing.github.worker.GitHubWorker.call_for_someone_else`). The token is used for
that one request and dropped: never stored, never logged (PyGithub masks it in its debug
log). A failure is GitHub's answer to the editor's token, not to ticketproxy's; nothing is
retried, so a comment is never posted twice.
"""

from __future__ import annotations

from collections.abc import Callable

from github import Auth
from github.Requester import Requester

from ticketing.github.interface import PostedComment


def editor_comment(
    requester: Callable[[], Requester],
    repo_url: Callable[[], str],
    number: int,
    body: str,
    token: str,
) -> Callable[[], PostedComment]:
    """Return the call that posts ``body`` on issue ``number`` as the owner of ``token``.

    ``requester`` and ``repo_url`` are read when the call runs, on the worker thread.
    """

    def post() -> PostedComment:
        editor = requester().withAuth(Auth.Token(token))
        try:
            _, data = editor.requestJsonAndCheck(
                "POST", f"{repo_url()}/issues/{number}/comments", input={"body": body}
            )
        finally:
            editor.close()
        user = data.get("user") or {}
        return PostedComment(
            id=int(data["id"]), url=str(data["html_url"]), author=str(user.get("login", ""))
        )

    return post
