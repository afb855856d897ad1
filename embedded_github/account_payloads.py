"""GitHub's JSON for accounts and repositories: users, bots, organizations, permissions.

These are the objects ``routes_account`` answers with, and the base every other payload is
built on. Every URL is built from the request's own origin: PyGithub refuses URLs whose host
or path prefix differ from its ``base_url``.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from embedded_github.config import SandboxUser
from embedded_github.store import SandboxStore
from embedded_github.store_rows import Author, RepoRow
from embedded_github.timestamps import format_timestamp

API_PREFIX = "/api/v3"

JsonObject = dict[str, Any]


def node_id(kind_code: str, kind: str, ident: int) -> str:
    """Return a legacy-style GitHub node id (base64 of ``"04:User1"``)."""
    return base64.b64encode(f"{kind_code}:{kind}{ident}".encode()).decode()


def organization_id(login: str) -> int:
    """Return a stable id for an owner that is not a configured user (an organization)."""
    return 90_000_000 + zlib.crc32(login.lower().encode()) % 10_000_000


class AccountPayloads:
    """Render users and repositories as GitHub REST JSON, with URLs under one origin."""

    def __init__(
        self,
        *,
        origin: str,
        store: SandboxStore,
        find_user: Callable[[str], SandboxUser | None],
        repos_by_id: Mapping[int, RepoRow],
    ) -> None:
        """Bind the origin (``http://host:port``) and the state the payloads draw on."""
        self.origin = origin.rstrip("/")
        self.api = f"{self.origin}{API_PREFIX}"
        self._store = store
        self._find_user = find_user
        self._repos = repos_by_id

    # URLs ---------------------------------------------------------------------------------

    def repo_url(self, repo: RepoRow) -> str:
        """Return the API URL of a repository."""
        return f"{self.api}/repos/{repo.owner}/{repo.name}"

    # Users --------------------------------------------------------------------------------

    def user(self, login: str, user_id: int, *, kind: str = "User") -> JsonObject:
        """Return a ``simple-user`` object (an App's ``<slug>[bot]`` user is of type Bot)."""
        users = f"{self.api}/users/{quote(login)}"
        configured = self._find_user(login)
        html_url = f"{self.origin}/{login}"
        if kind == "User" and login.endswith("[bot]"):
            kind = "Bot"
            html_url = f"{self.origin}/apps/{login.removesuffix('[bot]')}"
        code = "04" if kind in ("User", "Bot") else "012"
        return {
            "name": configured.name if configured else None,
            "email": None,
            "login": login,
            "id": user_id,
            "node_id": node_id(code, kind, user_id),
            "avatar_url": f"{self.origin}/avatars/u/{user_id}?v=4",
            "gravatar_id": "",
            "url": users,
            "html_url": html_url,
            "followers_url": f"{users}/followers",
            "following_url": f"{users}/following{{/other_user}}",
            "gists_url": f"{users}/gists{{/gist_id}}",
            "starred_url": f"{users}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{users}/subscriptions",
            "organizations_url": f"{users}/orgs",
            "repos_url": f"{users}/repos",
            "events_url": f"{users}/events{{/privacy}}",
            "received_events_url": f"{users}/received_events",
            "type": kind,
            "user_view_type": "public",
            "site_admin": False,
        }

    def author(self, author: Author) -> JsonObject:
        """Return the ``simple-user`` of whoever wrote something."""
        return self.user(author.login, author.id)

    def owner(self, repo: RepoRow) -> JsonObject:
        """Return the owner of a repository: a configured user or else an organization."""
        configured = self._find_user(repo.owner)
        if configured is not None:
            return self.user(configured.login, configured.id)
        return self.user(repo.owner, organization_id(repo.owner), kind="Organization")

    def authenticated_user(self, user: SandboxUser, *, now: int) -> JsonObject:
        """Return the ``GET /user`` answer: a simple-user plus the public profile fields."""
        payload = self.user(user.login, user.id)
        payload.update(
            {
                "company": None,
                "blog": "",
                "location": None,
                "hireable": None,
                "bio": None,
                "twitter_username": None,
                "public_repos": 0,
                "public_gists": 0,
                "followers": 0,
                "following": 0,
                "created_at": format_timestamp(now - 86_400 * 365),
                "updated_at": format_timestamp(now - 86_400),
            }
        )
        return payload

    def collaborator_permission(self, user: SandboxUser) -> JsonObject:
        """Return the ``repository-collaborator-permission`` object for a user."""
        collaborator = self.user(user.login, user.id)
        level = user.permission
        collaborator["permissions"] = {
            "admin": level == "admin",
            "maintain": level == "admin",
            "push": level in ("admin", "write"),
            "triage": level in ("admin", "write"),
            "pull": True,
        }
        collaborator["role_name"] = level
        return {"permission": level, "role_name": level, "user": collaborator}

    # Repositories -------------------------------------------------------------------------

    def repository(self, repo: RepoRow, *, viewer: SandboxUser | None, now: int) -> JsonObject:
        """Return a plausible full ``repository`` object."""
        url = self.repo_url(repo)
        html = f"{self.origin}/{repo.owner}/{repo.name}"
        open_issues = len(self._store.list_issues(repo.id, state="open"))
        templated = {
            "archive_url": "/{archive_format}{/ref}",
            "assignees_url": "/assignees{/user}",
            "blobs_url": "/git/blobs{/sha}",
            "branches_url": "/branches{/branch}",
            "collaborators_url": "/collaborators{/collaborator}",
            "comments_url": "/comments{/number}",
            "commits_url": "/commits{/sha}",
            "compare_url": "/compare/{base}...{head}",
            "contents_url": "/contents/{+path}",
            "contributors_url": "/contributors",
            "deployments_url": "/deployments",
            "downloads_url": "/downloads",
            "events_url": "/events",
            "forks_url": "/forks",
            "git_commits_url": "/git/commits{/sha}",
            "git_refs_url": "/git/refs{/sha}",
            "git_tags_url": "/git/tags{/sha}",
            "hooks_url": "/hooks",
            "issue_comment_url": "/issues/comments{/number}",
            "issue_events_url": "/issues/events{/number}",
            "issues_url": "/issues{/number}",
            "keys_url": "/keys{/key_id}",
            "labels_url": "/labels{/name}",
            "languages_url": "/languages",
            "merges_url": "/merges",
            "milestones_url": "/milestones{/number}",
            "notifications_url": "/notifications{?since,all,participating}",
            "pulls_url": "/pulls{/number}",
            "releases_url": "/releases{/id}",
            "stargazers_url": "/stargazers",
            "statuses_url": "/statuses/{sha}",
            "subscribers_url": "/subscribers",
            "subscription_url": "/subscription",
            "tags_url": "/tags",
            "teams_url": "/teams",
            "trees_url": "/git/trees{/sha}",
        }
        payload: JsonObject = {
            "id": repo.id,
            "node_id": node_id("010", "Repository", repo.id),
            "name": repo.name,
            "full_name": repo.full_name,
            "owner": self.owner(repo),
            "private": False,
            "html_url": html,
            "description": "ticketproxy sandbox repository",
            "fork": False,
            "url": url,
            **{key: f"{url}{suffix}" for key, suffix in templated.items()},
            "git_url": f"git://{self.origin.split('://', 1)[-1]}/{repo.full_name}.git",
            "ssh_url": f"git@sandbox:{repo.full_name}.git",
            "clone_url": f"{html}.git",
            "svn_url": html,
            "mirror_url": None,
            "homepage": None,
            "language": None,
            "forks": 0,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "watchers": 0,
            "size": 0,
            "default_branch": "main",
            "open_issues": open_issues,
            "open_issues_count": open_issues,
            "is_template": False,
            "topics": [],
            "has_issues": True,
            "has_projects": False,
            "has_wiki": False,
            "has_pages": False,
            "has_downloads": False,
            "has_discussions": False,
            "archived": False,
            "disabled": False,
            "visibility": "public",
            "license": None,
            "allow_forking": True,
            "web_commit_signoff_required": False,
            "pushed_at": format_timestamp(repo.created_at),
            "created_at": format_timestamp(repo.created_at),
            "updated_at": format_timestamp(max(repo.created_at, now)),
            "network_count": 0,
            "subscribers_count": 0,
        }
        if viewer is not None:
            level = viewer.permission
            payload["permissions"] = {
                "admin": level == "admin",
                "maintain": level == "admin",
                "push": level in ("admin", "write"),
                "triage": level in ("admin", "write"),
                "pull": True,
            }
        return payload
