-- +goose Up
-- Compliance records, the auto-close sweep's listing, and the participant
-- of a message.
--
-- Compliance records: the audit sink of guardrail evaluations
-- (bindings.ComplianceRecorder). One row per evaluation, identified by
-- (tenant_id, run_id, key); a second write of the same identity stores
-- nothing, so an audit holds exactly one record per evaluation however
-- often a run is resumed or replayed. Rows are not tied to agent_runs:
-- pruning a run leaves its audit.

CREATE TABLE IF NOT EXISTS agent_compliance_records (
    tenant_id       text        NOT NULL,
    run_id          text        NOT NULL,
    key             text        NOT NULL,
    conversation_id text        NOT NULL DEFAULT '',
    turn_number     integer     NOT NULL DEFAULT 0,
    agent_id        text        NOT NULL DEFAULT '',
    agent_version   text        NOT NULL DEFAULT '',
    guardrail_id    text        NOT NULL,
    check_id        text        NOT NULL DEFAULT '',
    kind            text        NOT NULL DEFAULT '',
    action          text        NOT NULL DEFAULT '',
    passed          boolean     NOT NULL,
    reason          text        NOT NULL DEFAULT '',
    judge_response  text        NOT NULL DEFAULT '',
    evaluated_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, run_id, key)
);

-- ListCompliance reads a tenant's records as a keyset in the order
-- (evaluated_at, run_id, key) under byte-wise collation (Go's string order).
CREATE INDEX IF NOT EXISTS agent_compliance_records_list_idx
    ON agent_compliance_records (tenant_id, evaluated_at, run_id COLLATE "C", key COLLATE "C");

ALTER TABLE agent_compliance_records ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_compliance_records FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_tenant_isolation ON agent_compliance_records;
CREATE POLICY agent_tenant_isolation ON agent_compliance_records
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));

-- Auto-close (conversationPolicy.autoCloseAfterInactiveSeconds): the sweep
-- lists open conversations by last activity, oldest first, under byte-wise
-- collation, read as a keyset.
CREATE INDEX IF NOT EXISTS agent_conversations_idle_idx
    ON agent_conversations (last_activity_at, tenant_id COLLATE "C", id COLLATE "C")
    WHERE status = 'open';

-- The auto-close sweep reads across tenants as the approval sweep does
-- (see 0003_retention.up.sql): only members of kindgi_sweeper, only in a
-- transaction that set kindgi.sweep to 'inactive-conversations', and only
-- open conversations; FOR SELECT, so it adds no right to write. Closing
-- goes through tenant-scoped calls.
-- +goose StatementBegin
DO $$
BEGIN
    DROP POLICY IF EXISTS agent_idle_sweep ON agent_conversations;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kindgi_sweeper') THEN
        CREATE POLICY agent_idle_sweep ON agent_conversations FOR SELECT
            TO kindgi_sweeper
            USING (current_setting('kindgi.sweep', true) = 'inactive-conversations'
                   AND status = 'open');
    ELSE
        RAISE NOTICE 'kindgi: role kindgi_sweeper does not exist; the auto-close sweep will see no tenant''s conversations until it exists and 0005_compliance_and_auto_close.up.sql is applied again';
    END IF;
END
$$;
-- +goose StatementEnd

-- The participant a user message is from (AppendMessageInput.ParticipantID).
ALTER TABLE agent_conversation_messages ADD COLUMN IF NOT EXISTS participant_id text NOT NULL DEFAULT '';
