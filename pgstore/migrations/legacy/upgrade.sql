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
