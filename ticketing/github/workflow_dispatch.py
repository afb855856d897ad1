"""Starting a workflow in another repository (an editor's fork): ``workflow_dispatch``.

https://docs.github.com/rest/actions/workflows#create-a-workflow-dispatch-event: ``POST
/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches`` with ``ref`` and at most
25 ``inputs``, answered 204. It needs ``actions: write`` on that repository (a fine-grained
token's permission, or an App installed there). Runs on the worker thread, through
PyGithub's requester: one request, no lookups first.
"""

from __future__ import annotations

from urllib.parse import quote

from github.Requester import Requester

# GitHub's limit on a dispatch's inputs.
MAX_INPUTS = 25


def dispatch_path(repository: str, workflow: str) -> str:
    """Return the dispatch operation's path for a workflow (file name or id) of ``owner/name``."""
    owner, _, name = repository.partition("/")
    return (
        f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}/actions/workflows/"
        f"{quote(workflow, safe='')}/dispatches"
    )


def send_workflow_dispatch(
    requester: Requester, repository: str, workflow: str, *, ref: str, inputs: dict[str, str]
) -> None:
    """Send one workflow dispatch; PyGithub raises GitHub's refusals (mapped by the worker)."""
    if len(inputs) > MAX_INPUTS:
        raise ValueError(f"a workflow dispatch takes at most {MAX_INPUTS} inputs")
    requester.requestJsonAndCheck(
        "POST", dispatch_path(repository, workflow), input={"ref": ref, "inputs": inputs}
    )
