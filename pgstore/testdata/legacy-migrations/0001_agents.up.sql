-- +goose Up
-- kindgi/agents storage: conversations, messages, run snapshots, runs and
-- their journal, memory facts and approvals. Every table is tenant-scoped:
-- tenant_id leads its primary key and a row-level security policy admits
-- only rows of the tenant named by the transaction-local setting
-- kindgi.tenant_id, which pgstore sets on every call. JSON payloads are
-- {"v": version, "doc": document} envelopes.

CREATE TABLE IF NOT EXISTS agent_conversations (
    tenant_id        text        NOT NULL,
    id               text        NOT NULL,
    project_id       text        NOT NULL DEFAULT '',
    agent_id         text        NOT NULL,
    agent_version    text        NOT NULL,
    title            text        NOT NULL DEFAULT '',
    participant_id   text        NOT NULL DEFAULT '',
    status           text        NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    turn_count       integer     NOT NULL DEFAULT 0,
    message_count    integer     NOT NULL DEFAULT 0,
    opened_at        timestamptz NOT NULL,
    last_activity_at timestamptz NOT NULL,
    closed_at        timestamptz,
    PRIMARY KEY (tenant_id, id)
);

-- Keyset pagination: (opened_at DESC, id DESC) within a tenant.
CREATE INDEX IF NOT EXISTS agent_conversations_opened_idx
    ON agent_conversations (tenant_id, opened_at DESC, id DESC);

CREATE TABLE IF NOT EXISTS agent_conversation_messages (
    tenant_id       text        NOT NULL,
    conversation_id text        NOT NULL,
    id              text        NOT NULL,
    seq             bigint      NOT NULL,
    role            text        NOT NULL CHECK (role IN ('user', 'agent', 'tool', 'system')),
    content         text        NOT NULL DEFAULT '',
    tool_calls      jsonb,
    tool_call_id    text        NOT NULL DEFAULT '',
    turn_number     integer     NOT NULL DEFAULT 0,
    run_id          text        NOT NULL DEFAULT '',
    metadata        jsonb,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, conversation_id, id),
    FOREIGN KEY (tenant_id, conversation_id)
        REFERENCES agent_conversations (tenant_id, id) ON DELETE CASCADE
);

-- Reading the last N messages walks this index backwards: O(N).
CREATE UNIQUE INDEX IF NOT EXISTS agent_conversation_messages_seq_idx
    ON agent_conversation_messages (tenant_id, conversation_id, seq);

CREATE TABLE IF NOT EXISTS agent_run_snapshots (
    tenant_id       text        NOT NULL,
    run_id          text        NOT NULL,
    flow_id         text        NOT NULL,
    flow_version    text        NOT NULL,
    agent_id        text        NOT NULL DEFAULT '',
    agent_version   text        NOT NULL DEFAULT '',
    conversation_id text        NOT NULL DEFAULT '',
    project_id      text        NOT NULL DEFAULT '',
    input           jsonb,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, run_id)
);

CREATE TABLE IF NOT EXISTS agent_runs (
    tenant_id        text        NOT NULL,
    id               text        NOT NULL,
    flow_id          text        NOT NULL,
    flow_version     text        NOT NULL,
    status           text        NOT NULL CHECK (status IN ('running', 'suspended', 'completed', 'failed')),
    lease_owner      text        NOT NULL DEFAULT '',
    lease_expires_at timestamptz,
    last_seq         bigint      NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE IF NOT EXISTS agent_run_journal (
    tenant_id text        NOT NULL,
    run_id    text        NOT NULL,
    seq       bigint      NOT NULL,
    key       text        NOT NULL,
    phase     text        NOT NULL,
    node      text        NOT NULL DEFAULT '',
    status    text        NOT NULL CHECK (status IN ('started', 'completed', 'failed', 'parked')),
    output    jsonb,
    error     jsonb,
    at        timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, run_id, seq),
    FOREIGN KEY (tenant_id, run_id) REFERENCES agent_runs (tenant_id, id) ON DELETE CASCADE
);

-- One entry per (run, step key, phase): appends use ON CONFLICT DO NOTHING.
CREATE UNIQUE INDEX IF NOT EXISTS agent_run_journal_step_idx
    ON agent_run_journal (tenant_id, run_id, key, phase);

CREATE TABLE IF NOT EXISTS agent_memory_facts (
    tenant_id       text        NOT NULL,
    id              text        NOT NULL,
    type            text        NOT NULL,
    project_id      text        NOT NULL DEFAULT '',
    conversation_id text        NOT NULL DEFAULT '',
    text            text        NOT NULL DEFAULT '',
    data            jsonb,
    -- The fact's embedding (no pgvector: cosine similarity is computed in SQL
    -- over the array) and its Euclidean norm.
    embedding       real[],
    embedding_norm  double precision,
    search          tsvector    NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE INDEX IF NOT EXISTS agent_memory_facts_search_idx
    ON agent_memory_facts USING gin (search);
CREATE INDEX IF NOT EXISTS agent_memory_facts_type_idx
    ON agent_memory_facts (tenant_id, type, created_at DESC, id);

CREATE TABLE IF NOT EXISTS agent_approvals (
    tenant_id       text        NOT NULL,
    id              text        NOT NULL,
    run_id          text        NOT NULL DEFAULT '',
    conversation_id text        NOT NULL DEFAULT '',
    tool_call_id    text        NOT NULL DEFAULT '',
    tool_id         text        NOT NULL DEFAULT '',
    tool_version    text        NOT NULL DEFAULT '',
    arguments       jsonb,
    reviewer_role   text        NOT NULL DEFAULT '',
    reason          text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz,
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied')),
    reviewer        text        NOT NULL DEFAULT '',
    comment         text        NOT NULL DEFAULT '',
    resolved_at     timestamptz,
    PRIMARY KEY (tenant_id, id)
);

CREATE INDEX IF NOT EXISTS agent_approvals_run_idx
    ON agent_approvals (tenant_id, run_id);
