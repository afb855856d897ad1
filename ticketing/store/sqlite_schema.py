"""The SQLite ticket store's schema: one migration per version, applied in order.

A database records the version it is at in ``PRAGMA user_version``; opening it applies the
migrations above that version, each in its own transaction. Migrations are never edited
once released, so a database written by any earlier ticketproxy still opens.
"""

from __future__ import annotations

SCHEMA_VERSION = 18

_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE tickets (
        id            INTEGER PRIMARY KEY,
        request_key   TEXT NOT NULL,
        request_id    TEXT NOT NULL,
        state         TEXT NOT NULL,
        issue_number  INTEGER,
        issue_url     TEXT,
        created_at    REAL NOT NULL,
        deadline      REAL NOT NULL,
        updated_at    REAL NOT NULL
    );
    CREATE INDEX tickets_by_key ON tickets (request_key, id);
    CREATE INDEX tickets_by_issue ON tickets (issue_number);
    CREATE INDEX tickets_by_state ON tickets (state);
    CREATE TABLE answers (
        ticket_id     INTEGER PRIMARY KEY REFERENCES tickets (id),
        comment_id    INTEGER NOT NULL UNIQUE,
        comment_url   TEXT NOT NULL,
        text          TEXT NOT NULL,
        signer        TEXT NOT NULL,
        kid           TEXT NOT NULL,
        jti           TEXT NOT NULL,
        digest        TEXT NOT NULL,
        accepted_at   REAL NOT NULL,
        delivered_at  REAL
    );
    CREATE TABLE used_jtis (
        jti           TEXT PRIMARY KEY,
        ticket_id     INTEGER NOT NULL,
        used_at       REAL NOT NULL
    );
    CREATE TABLE replied_comments (
        comment_id    INTEGER PRIMARY KEY,
        ticket_id     INTEGER,
        kind          TEXT NOT NULL,
        replied_at    REAL NOT NULL
    );
    CREATE TABLE cursor (
        name          TEXT PRIMARY KEY,
        since         TEXT,
        etag          TEXT
    );
    """,
    # The request itself (to check answers against its tools and formats after a restart)
    # and what was released to the agent (text, tool calls, finish reason).
    2: """
    ALTER TABLE tickets ADD COLUMN request TEXT;
    ALTER TABLE answers ADD COLUMN release TEXT NOT NULL DEFAULT '';
    """,
    # Webhook deliveries already handled (GitHub may deliver one twice).
    3: """
    CREATE TABLE webhook_deliveries (
        delivery_id   TEXT PRIMARY KEY,
        received_at   REAL NOT NULL
    );
    """,
    # GitHub bookkeeping writes (labels, replies, closing) survive a restart.
    4: """
    CREATE TABLE write_queue (
        id            INTEGER PRIMARY KEY,
        kind          TEXT NOT NULL,
        issue_number  INTEGER NOT NULL,
        payload       TEXT NOT NULL,
        attempts      INTEGER NOT NULL DEFAULT 0,
        not_before    REAL NOT NULL,
        created_at    REAL NOT NULL,
        done_at       REAL,
        failure       TEXT
    );
    CREATE INDEX write_queue_due ON write_queue (done_at, not_before, id);
    """,
    # Answers that wait for reviewers, and the reviewers' signed approvals and rejections.
    5: """
    CREATE TABLE candidates (
        comment_id    INTEGER PRIMARY KEY,
        ticket_id     INTEGER NOT NULL REFERENCES tickets (id),
        comment_url   TEXT NOT NULL,
        text          TEXT NOT NULL,
        signer        TEXT NOT NULL,
        kid           TEXT NOT NULL,
        jti           TEXT NOT NULL,
        digest        TEXT NOT NULL,
        release       TEXT NOT NULL,
        required      INTEGER NOT NULL,
        posted_at     REAL NOT NULL,
        proposed_at   REAL NOT NULL,
        state         TEXT NOT NULL
    );
    CREATE INDEX candidates_by_ticket ON candidates (ticket_id, state);
    CREATE TABLE judgements (
        comment_id    INTEGER PRIMARY KEY,
        candidate_id  INTEGER NOT NULL REFERENCES candidates (comment_id),
        act           TEXT NOT NULL,
        reviewer      TEXT NOT NULL,
        kid           TEXT NOT NULL,
        jti           TEXT NOT NULL,
        digest        TEXT NOT NULL,
        posted_at     REAL NOT NULL
    );
    """,
    # One issue per agent run: a ticket is step `step` of the thread opened by ticket
    # `thread_id`, continuing ticket `parent_id`. Replies delivered (by fingerprint, see
    # ticketing.threads) and threads named by clients point at the tickets they continue.
    6: """
    ALTER TABLE tickets ADD COLUMN step INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE tickets ADD COLUMN thread_id INTEGER;
    ALTER TABLE tickets ADD COLUMN parent_id INTEGER;
    ALTER TABLE tickets ADD COLUMN client TEXT;
    UPDATE tickets SET thread_id = id;
    CREATE INDEX tickets_by_thread ON tickets (thread_id, step);
    CREATE INDEX tickets_by_client ON tickets (client, id);
    CREATE TABLE thread_replies (
        fingerprint   TEXT PRIMARY KEY,
        ticket_id     INTEGER NOT NULL REFERENCES tickets (id)
    );
    CREATE TABLE thread_names (
        name_key      TEXT PRIMARY KEY,
        thread_id     INTEGER NOT NULL REFERENCES tickets (id)
    );
    """,
    # An upstream model's suggested answer, at most one per ticket (claimed before it is
    # asked for, so retries and replicas never ask twice).
    7: """
    CREATE TABLE drafts (
        ticket_id     INTEGER PRIMARY KEY REFERENCES tickets (id),
        state         TEXT NOT NULL,
        model         TEXT NOT NULL DEFAULT '',
        text          TEXT NOT NULL DEFAULT '',
        digest        TEXT NOT NULL DEFAULT '',
        created_at    REAL NOT NULL,
        updated_at    REAL NOT NULL,
        detail        TEXT
    );
    """,
    # Responses API responses (store: true): which ticket answers each, for which client,
    # what its object echoes and its input items. A deleted one keeps its row (without its
    # content) so a retry of its request cannot bring it back.
    8: """
    CREATE TABLE responses (
        response_id   TEXT PRIMARY KEY,
        ticket_id     INTEGER NOT NULL REFERENCES tickets (id),
        client        TEXT NOT NULL,
        stored        INTEGER NOT NULL,
        previous_id   TEXT,
        echo          TEXT NOT NULL DEFAULT '',
        items         TEXT NOT NULL DEFAULT '',
        created_at    REAL NOT NULL,
        deleted_at    REAL
    );
    """,
    # Agent tasks (Agent Protocol, A2A): a task, its steps (each carried by a ticket), and
    # its files with their bytes, so a restart loses none of them.
    9: """
    CREATE TABLE tasks (
        task_id           TEXT PRIMARY KEY,
        client            TEXT NOT NULL,
        input             TEXT,
        additional_input  TEXT NOT NULL DEFAULT 'null',
        created_at        REAL NOT NULL
    );
    CREATE INDEX tasks_by_client ON tasks (client, created_at);
    CREATE TABLE task_steps (
        step_id           TEXT PRIMARY KEY,
        task_id           TEXT NOT NULL REFERENCES tasks (task_id),
        seq               INTEGER NOT NULL,
        input             TEXT,
        additional_input  TEXT NOT NULL DEFAULT 'null',
        status            TEXT NOT NULL,
        ticket_id         INTEGER REFERENCES tickets (id),
        output            TEXT,
        is_last           INTEGER NOT NULL DEFAULT 0,
        created_at        REAL NOT NULL,
        UNIQUE (task_id, seq)
    );
    CREATE TABLE task_artifacts (
        artifact_id       TEXT PRIMARY KEY,
        task_id           TEXT NOT NULL REFERENCES tasks (task_id),
        step_id           TEXT REFERENCES task_steps (step_id),
        agent_created     INTEGER NOT NULL,
        file_name         TEXT NOT NULL,
        relative_path     TEXT,
        size              INTEGER NOT NULL,
        sha256            TEXT NOT NULL,
        content           BLOB NOT NULL,
        created_at        REAL NOT NULL
    );
    CREATE INDEX task_artifacts_by_task ON task_artifacts (task_id, created_at);
    """,
    # How a task's step ended (an answer, an expiry, a cancel) and when, and when its client
    # canceled the task: A2A's failed and canceled states, and its status timestamps.
    10: """
    ALTER TABLE task_steps ADD COLUMN ending TEXT;
    ALTER TABLE task_steps ADD COLUMN ended_at REAL;
    ALTER TABLE tasks ADD COLUMN canceled_at REAL;
    """,
    # MCP tasks: a task-augmented tool call, the ticket it waits on, and its cancel, so a
    # client that reconnects after a restart still gets the result.
    11: """
    CREATE TABLE tool_tasks (
        task_id      TEXT PRIMARY KEY,
        client       TEXT NOT NULL,
        tool         TEXT NOT NULL,
        arguments    TEXT NOT NULL,
        ticket_id    INTEGER NOT NULL REFERENCES tickets (id),
        ttl_ms       INTEGER NOT NULL,
        created_at   REAL NOT NULL,
        canceled_at  REAL
    );
    CREATE INDEX tool_tasks_by_client ON tool_tasks (client, created_at);
    """,
    # An answer under review signed by an agent: the editor it answers for, who may not
    # approve it (a self-approval by proxy).
    12: """
    ALTER TABLE candidates ADD COLUMN on_behalf_of TEXT;
    """,
    # Runs as trees: a later step opened as a child issue of its own (ticketing.tree).
    13: """
    ALTER TABLE tickets ADD COLUMN own_issue INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX tickets_by_thread_step ON tickets (thread_id, step);
    """,
    # A judgement's signed text, so a rejection's reason reaches the agent that asked for
    # the approval (MCP's request_approval), here or after a restart.
    14: """
    ALTER TABLE judgements ADD COLUMN reason TEXT NOT NULL DEFAULT '';
    """,
    # A draft handed to an editor's personal agent: whose agent (the login whose draft
    # comment is taken), and the comment it posted.
    15: """
    ALTER TABLE drafts ADD COLUMN agent TEXT;
    ALTER TABLE drafts ADD COLUMN comment_url TEXT;
    """,
    # Delegation: a ticket split by a signed delegate act into child tickets, one per
    # sub-question, each addressed to a login or to nobody.
    16: """
    CREATE TABLE delegations (
        child_id      INTEGER PRIMARY KEY REFERENCES tickets (id),
        parent_id     INTEGER NOT NULL REFERENCES tickets (id),
        position      INTEGER NOT NULL,
        question      TEXT NOT NULL,
        addressee     TEXT,
        delegated_by  TEXT NOT NULL,
        comment_id    INTEGER NOT NULL,
        comment_url   TEXT NOT NULL,
        jti           TEXT NOT NULL,
        delegated_at  REAL NOT NULL
    );
    CREATE INDEX delegations_by_parent ON delegations (parent_id, position);
    """,
    # The OIDC issuer's public keys the desk fetched, kept after the issuer drops them, so
    # agents' keyless answers can still be audited offline (ticketing.oidc_archive).
    17: """
    CREATE TABLE oidc_issuer_keys (
        issuer        TEXT NOT NULL,
        kid           TEXT NOT NULL,
        jwk           TEXT NOT NULL,
        first_seen    REAL NOT NULL,
        last_seen     REAL NOT NULL,
        PRIMARY KEY (issuer, kid)
    );
    """,
    # A delegate act is recorded with its sub-questions and addressees in the transaction
    # that spends its jti, so the children not yet opened (GitHub down, a crash) are opened
    # later from the record; one child per sub-question, whichever replica opens it.
    18: """
    CREATE TABLE delegation_acts (
        jti           TEXT PRIMARY KEY,
        parent_id     INTEGER NOT NULL REFERENCES tickets (id),
        comment_id    INTEGER NOT NULL,
        comment_url   TEXT NOT NULL,
        delegated_by  TEXT NOT NULL,
        digest        TEXT NOT NULL,
        questions     TEXT NOT NULL,
        delegated_at  REAL NOT NULL,
        stalled_at    REAL,
        ended_at      REAL,
        outcome       TEXT
    );
    CREATE INDEX delegation_acts_by_parent ON delegation_acts (parent_id);
    CREATE INDEX delegation_acts_unfinished ON delegation_acts (ended_at);
    CREATE UNIQUE INDEX delegations_by_sub_question ON delegations (jti, position);
    """,
}


def migration_statements(version: int) -> list[str]:
    """Return the SQL statements that bring a database from ``version - 1`` to ``version``."""
    return [statement for statement in _MIGRATIONS[version].split(";") if statement.strip()]
