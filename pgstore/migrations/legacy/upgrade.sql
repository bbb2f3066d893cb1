-- Brings a database that the thirteen files before the baseline migrated
-- (its version table records version 1 as 0001_agents.up.sql) to the
-- baseline's schema. Migrate runs it once, in the transaction that then
-- records version 1 as 0001_baseline.up.sql and forgets the legacy
-- versions 2–13. TestBaselineEqualsLegacySchema holds the result to the
-- baseline with pg_dump --schema-only.
--
-- Every change to the schema before the first release goes into both the
-- baseline and this file; after it, changes come as migrations 0002 and on.

-- bindings.Run.LastError: the failed drives of a run that did not end.
ALTER TABLE agent_runs
    ADD COLUMN IF NOT EXISTS last_error_code    text,
    ADD COLUMN IF NOT EXISTS last_error_message text,
    ADD COLUMN IF NOT EXISTS last_error_at      timestamptz,
    ADD COLUMN IF NOT EXISTS drive_attempts     integer NOT NULL DEFAULT 0;

-- Quotas (issue 25).
ALTER TABLE agent_runs ADD COLUMN not_before timestamptz;
-- Tenant quotas (bindings.QuotaCounter): each quota as its last take
-- defined it, whose row a take locks (so the takes of one quota are one
-- at a time), and the units counted, one row per (quota, unit): a unit
-- counted once is never counted again.
CREATE TABLE agent_quotas (
    tenant_id      text             NOT NULL,
    name           text             NOT NULL,
    scope          text             NOT NULL,
    tool_id        text             NOT NULL DEFAULT '',
    quota_limit    double precision NOT NULL,
    window_seconds bigint           NOT NULL,
    on_exceeded    text             NOT NULL DEFAULT '',
    updated_at     timestamptz      NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
CREATE TABLE agent_quota_units (
    tenant_id text             NOT NULL,
    quota     text             NOT NULL,
    unit      text             NOT NULL,
    at        timestamptz      NOT NULL,
    amount    double precision NOT NULL,
    PRIMARY KEY (tenant_id, quota, unit)
);
-- A quota's window: its units by time.
CREATE INDEX agent_quota_units_at_idx ON agent_quota_units (tenant_id, quota, at);
ALTER TABLE agent_quotas ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_quotas FORCE ROW LEVEL SECURITY;
ALTER TABLE agent_quota_units ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_quota_units FORCE ROW LEVEL SECURITY;
CREATE POLICY agent_tenant_isolation ON agent_quotas
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));
CREATE POLICY agent_tenant_isolation ON agent_quota_units
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));

-- Sub-agents (issue 24): a child run's parent run and step, taken from
-- transaction-local settings by the functions that create runs; a
-- parent's children counts, kept by triggers; the index of a run's
-- children; a child that ended announces its parent.
ALTER TABLE agent_runs
    ADD COLUMN IF NOT EXISTS parent_run_id   text NOT NULL DEFAULT COALESCE(current_setting('kindgi.parent_run_id', true), ''),
    ADD COLUMN IF NOT EXISTS parent_step_key text NOT NULL DEFAULT COALESCE(current_setting('kindgi.parent_step_key', true), ''),
    ADD COLUMN IF NOT EXISTS children_total  integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS children_active integer NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS agent_runs_parent_idx
    ON agent_runs (tenant_id, parent_run_id, created_at DESC, id COLLATE "C" DESC)
    WHERE parent_run_id <> '';
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION kindgi_notify_run() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('kindgi_runs', NEW.tenant_id || E'\t' || NEW.id || E'\t' || NEW.status || E'\t' ||
        CASE WHEN NEW.lease_owner = '' AND NEW.status IN ('queued', 'running') THEN 'claimable' ELSE '' END);
    IF NEW.parent_run_id <> '' AND NEW.status IN ('completed', 'failed') THEN
        PERFORM pg_notify('kindgi_runs', NEW.tenant_id || E'\t' || NEW.parent_run_id || E'\t' || E'\t' || 'claimable');
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION kindgi_run_children() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    t text;
    p text;
    d_total integer := 0;
    d_active integer := 0;
BEGIN
    IF TG_OP = 'INSERT' THEN
        t := NEW.tenant_id; p := NEW.parent_run_id; d_total := 1;
        d_active := (NEW.status IN ('queued', 'running', 'suspended'))::integer;
    ELSIF TG_OP = 'DELETE' THEN
        t := OLD.tenant_id; p := OLD.parent_run_id; d_total := -1;
        d_active := -(OLD.status IN ('queued', 'running', 'suspended'))::integer;
    ELSE
        t := NEW.tenant_id; p := NEW.parent_run_id;
        d_active := (NEW.status IN ('queued', 'running', 'suspended'))::integer
            - (OLD.status IN ('queued', 'running', 'suspended'))::integer;
    END IF;
    IF d_total <> 0 OR d_active <> 0 THEN
        UPDATE agent_runs ru
        SET children_total = ru.children_total + d_total, children_active = ru.children_active + d_active
        WHERE ru.tenant_id = t AND ru.id = p;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP TRIGGER IF EXISTS agent_runs_children_insert ON agent_runs;
DROP TRIGGER IF EXISTS agent_runs_children_update ON agent_runs;
DROP TRIGGER IF EXISTS agent_runs_children_delete ON agent_runs;
CREATE TRIGGER agent_runs_children_insert AFTER INSERT ON agent_runs
    FOR EACH ROW WHEN (new.parent_run_id <> '')
    EXECUTE FUNCTION kindgi_run_children();
CREATE TRIGGER agent_runs_children_update AFTER UPDATE OF status ON agent_runs
    FOR EACH ROW WHEN (new.parent_run_id <> '' AND new.status::text IS DISTINCT FROM old.status::text)
    EXECUTE FUNCTION kindgi_run_children();
CREATE TRIGGER agent_runs_children_delete AFTER DELETE ON agent_runs
    FOR EACH ROW WHEN (old.parent_run_id <> '')
    EXECUTE FUNCTION kindgi_run_children();

-- The journal and the messages without their foreign keys to agent_runs
-- and agent_conversations (the functions that append rows lock the parent
-- first); a deleted parent's rows go with it by a statement trigger
-- instead of the keys' cascades.
ALTER TABLE agent_run_journal DROP CONSTRAINT IF EXISTS agent_run_journal_tenant_id_run_id_fkey;
ALTER TABLE agent_conversation_messages DROP CONSTRAINT IF EXISTS agent_conversation_messages_tenant_id_conversation_id_fkey;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION kindgi_delete_appended() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_TABLE_NAME = 'agent_runs' THEN
        DELETE FROM agent_run_journal j USING gone g WHERE j.tenant_id = g.tenant_id AND j.run_id = g.id;
    ELSE
        DELETE FROM agent_conversation_messages m USING gone g
            WHERE m.tenant_id = g.tenant_id AND m.conversation_id = g.id;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER agent_runs_journal_delete AFTER DELETE ON agent_runs
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION kindgi_delete_appended();
CREATE TRIGGER agent_conversations_messages_delete AFTER DELETE ON agent_conversations
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION kindgi_delete_appended();

-- Ids and keys compare byte-wise, as Go compares strings: the columns that
-- name a row or its parent, the journal's step keys and the quotas' names
-- and units are COLLATE "C" (no locale's comparison in any index).
ALTER TABLE agent_conversations
    ALTER COLUMN id TYPE text COLLATE "C";
ALTER TABLE agent_conversation_messages
    ALTER COLUMN conversation_id TYPE text COLLATE "C",
    ALTER COLUMN id TYPE text COLLATE "C",
    ALTER COLUMN run_id TYPE text COLLATE "C";
ALTER TABLE agent_run_snapshots
    ALTER COLUMN run_id TYPE text COLLATE "C",
    ALTER COLUMN conversation_id TYPE text COLLATE "C";
ALTER TABLE agent_runs
    ALTER COLUMN id TYPE text COLLATE "C";
ALTER TABLE agent_run_journal
    ALTER COLUMN run_id TYPE text COLLATE "C",
    ALTER COLUMN key TYPE text COLLATE "C",
    ALTER COLUMN phase TYPE text COLLATE "C";
ALTER TABLE agent_memory_facts
    ALTER COLUMN id TYPE text COLLATE "C",
    ALTER COLUMN conversation_id TYPE text COLLATE "C";
-- (agent_approvals_run_state names run_id: it is made again around it.)
DROP TRIGGER agent_approvals_run_state ON agent_approvals;
ALTER TABLE agent_approvals
    ALTER COLUMN id TYPE text COLLATE "C",
    ALTER COLUMN run_id TYPE text COLLATE "C",
    ALTER COLUMN conversation_id TYPE text COLLATE "C";
CREATE TRIGGER agent_approvals_run_state
    AFTER INSERT OR DELETE OR UPDATE OF status, expires_at, run_id ON agent_approvals
    FOR EACH ROW EXECUTE FUNCTION kindgi_run_approvals();
ALTER TABLE agent_compliance_records
    ALTER COLUMN run_id TYPE text COLLATE "C",
    ALTER COLUMN key TYPE text COLLATE "C",
    ALTER COLUMN conversation_id TYPE text COLLATE "C";
ALTER TABLE agent_quotas
    ALTER COLUMN name TYPE text COLLATE "C";
ALTER TABLE agent_quota_units
    ALTER COLUMN quota TYPE text COLLATE "C",
    ALTER COLUMN unit TYPE text COLLATE "C";
