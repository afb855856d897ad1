"""The sandbox's state in SQLite: one store made of a query class per kind of thing.

:class:`SandboxStore` is what the rest of the package (and the tests) hold. Its queries live
beside the tables they read, one module each; they share the connection and the id
sequences of :class:`~embedded_github.store_database.SandboxDatabase`:

- ``store_repos``: hosted repositories;
- ``store_issues``: issues and the comments on them;
- ``store_labels``: repository labels and the labels on issues;
- ``store_sub_issues``: which issue is a sub-issue of which, in order;
- ``store_reactions``: reactions to issues and comments.
"""

from __future__ import annotations

from embedded_github.store_labels import LabelQueries
from embedded_github.store_reactions import ReactionQueries
from embedded_github.store_repos import RepoQueries
from embedded_github.store_sub_issues import SubIssueQueries


class SandboxStore(RepoQueries, SubIssueQueries, LabelQueries, ReactionQueries):
    """Read and write the sandbox's state in one SQLite database."""
