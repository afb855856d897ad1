"""The sandbox's SQLite database: its schema, its id sequences and the shared connection.

Every call runs on the event loop thread: the sandbox is small and each query is short,
so a thread pool would add locking without making anything faster.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

# GitHub ids are large and never collide across kinds in practice; starting each kind in its
# own range (comments above 2**31, as on github.com today) catches clients that mix them up or
# squeeze them into 32 bits.
_ID_BASES = {
    "repos": 700_000_000,
    "issues": 2_900_000_000,
    "comments": 3_600_000_000,
    "labels": 8_100_000_000,
    "reactions": 290_000_000,
}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS id_sequences (
    name TEXT PRIMARY KEY,
    last INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS repos (
    id INTEGER PRIMARY KEY,
    owner TEXT NOT NULL COLLATE NOCASE,
    name TEXT NOT NULL COLLATE NOCASE,
    created_at INTEGER NOT NULL,
    UNIQUE (owner, name)
);
CREATE TABLE IF NOT EXISTS issues (
    id INTEGER PRIMARY KEY,
    repo_id INTEGER NOT NULL REFERENCES repos(id),
    number INTEGER NOT NULL,
    title TEXT NOT NULL,
    body TEXT,
    state TEXT NOT NULL DEFAULT 'open',
    state_reason TEXT,
    user_login TEXT NOT NULL,
    user_id INTEGER NOT NULL,
    locked INTEGER NOT NULL DEFAULT 0,
    lock_reason TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    closed_at INTEGER,
    closed_by_login TEXT,
    closed_by_id INTEGER,
    UNIQUE (repo_id, number)
);
CREATE TABLE IF NOT EXISTS comments (
    id INTEGER PRIMARY KEY,
    repo_id INTEGER NOT NULL REFERENCES repos(id),
    issue_number INTEGER NOT NULL,
    body TEXT NOT NULL,
    user_login TEXT NOT NULL,
    user_id INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS comments_by_updated ON comments (repo_id, updated_at);
CREATE TABLE IF NOT EXISTS labels (
    id INTEGER PRIMARY KEY,
    repo_id INTEGER NOT NULL REFERENCES repos(id),
    name TEXT NOT NULL COLLATE NOCASE,
    color TEXT NOT NULL,
    description TEXT,
    UNIQUE (repo_id, name)
);
CREATE TABLE IF NOT EXISTS issue_labels (
    issue_id INTEGER NOT NULL REFERENCES issues(id),
    label_id INTEGER NOT NULL REFERENCES labels(id),
    PRIMARY KEY (issue_id, label_id)
);
CREATE TABLE IF NOT EXISTS sub_issues (
    child_id INTEGER PRIMARY KEY REFERENCES issues(id),
    parent_id INTEGER NOT NULL REFERENCES issues(id),
    position INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sub_issues_by_parent ON sub_issues (parent_id, position);
CREATE TABLE IF NOT EXISTS reactions (
    id INTEGER PRIMARY KEY,
    subject_kind TEXT NOT NULL,
    subject_id INTEGER NOT NULL,
    user_login TEXT NOT NULL,
    user_id INTEGER NOT NULL,
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (subject_kind, subject_id, user_login, content)
);
"""


class SandboxDatabase:
    """Own the SQLite connection and hand out ids; the ``store_*`` query classes build on it."""

    def __init__(self, db_path: str | Path = ":memory:") -> None:
        """Open (and create if needed) the database at ``db_path``."""
        # The connection is only used from the event loop thread, but that thread may not be
        # the one that built the Sandbox, so the same-thread check would misfire.
        self._db = sqlite3.connect(str(db_path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        if str(db_path) != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def _next_id(self, table: str) -> int:
        # GitHub never reuses an id, even after a delete, so ids come from a sequence that
        # only grows, not from MAX(id) (which would hand a deleted comment's id out again).
        row = self._db.execute("SELECT last FROM id_sequences WHERE name = ?", (table,)).fetchone()
        if row is None:
            # Table names come from the fixed _ID_BASES keys, never from a request.
            highest = self._db.execute(f"SELECT MAX(id) FROM {table}").fetchone()  # noqa: S608
            last = int(highest[0]) if highest[0] is not None else _ID_BASES[table]
        else:
            last = int(row[0])
        self._db.execute(
            "INSERT INTO id_sequences (name, last) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET last = excluded.last",
            (table, last + 1),
        )
        return last + 1
