"""GitHub Actions workflows the sandbox hosts, and the dispatches it was asked for.

The sandbox runs no workflow: it knows which workflow files a repository has (a test adds
them), checks a dispatch the way GitHub does, and records it, so a test reads what would
have run. Kept in memory: a dispatch is an event, not state a restart must keep.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SandboxWorkflow:
    """A workflow file of a hosted repository that a ``workflow_dispatch`` may trigger."""

    id: int
    repo: str
    # The file's path, ``.github/workflows/<name>.yml``; its name also identifies it.
    path: str
    # The inputs its ``workflow_dispatch`` trigger declares; a dispatch may send no others.
    inputs: tuple[str, ...] = ()
    # Branches and tags that exist: a dispatch names one as its ``ref``.
    refs: tuple[str, ...] = ("main",)
    # False: the file has no ``workflow_dispatch`` trigger, and GitHub refuses a dispatch.
    dispatchable: bool = True

    @property
    def file_name(self) -> str:
        """Return the file's name, which GitHub takes in place of the workflow's id."""
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class DispatchRecord:
    """One accepted dispatch: a workflow's (``workflow_dispatch``) or a repository's event."""

    kind: str  # "workflow_dispatch" or "repository_dispatch"
    repo: str
    login: str
    at: int
    workflow: SandboxWorkflow | None = None
    ref: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict, hash=False)
    event_type: str | None = None
    client_payload: dict[str, Any] = field(default_factory=dict, hash=False)


class Workflows:
    """The hosted workflows, by repository, and the dispatches accepted so far."""

    def __init__(self) -> None:
        """Start with no workflows and no dispatches."""
        self._by_repo: dict[str, list[SandboxWorkflow]] = {}
        self.dispatches: list[DispatchRecord] = []

    def add(
        self,
        repo: str,
        path: str,
        *,
        inputs: tuple[str, ...] = (),
        refs: tuple[str, ...] = ("main",),
        dispatchable: bool = True,
    ) -> SandboxWorkflow:
        """Host a workflow file in ``repo`` (``owner/name``); return it with its new id."""
        if not path.startswith(".github/workflows/") or not path.endswith((".yml", ".yaml")):
            raise ValueError(f"a workflow lives in .github/workflows/*.yml, not {path!r}")
        number = 1 + sum(len(found) for found in self._by_repo.values())
        workflow = SandboxWorkflow(
            id=161335 + number,
            repo=repo,
            path=path,
            inputs=inputs,
            refs=refs,
            dispatchable=dispatchable,
        )
        self._by_repo.setdefault(repo.lower(), []).append(workflow)
        return workflow

    def find(self, repo: str, workflow_id: str) -> SandboxWorkflow | None:
        """Return the workflow of ``repo`` with this id or file name, or None."""
        for workflow in self._by_repo.get(repo.lower(), []):
            if workflow_id in (str(workflow.id), workflow.file_name):
                return workflow
        return None
