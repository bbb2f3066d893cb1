-- +goose Up
-- Row-level security: a row is visible and writable only while the
-- transaction-local setting kindgi.tenant_id names its tenant. FORCE applies
-- the policy to the tables' owner too; superusers and roles with BYPASSRLS
-- still bypass it, so run the application as an ordinary role.

ALTER TABLE agent_conversations ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_conversations FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_tenant_isolation ON agent_conversations;
CREATE POLICY agent_tenant_isolation ON agent_conversations
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));

ALTER TABLE agent_conversation_messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_conversation_messages FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_tenant_isolation ON agent_conversation_messages;
CREATE POLICY agent_tenant_isolation ON agent_conversation_messages
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));

ALTER TABLE agent_run_snapshots ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_run_snapshots FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_tenant_isolation ON agent_run_snapshots;
CREATE POLICY agent_tenant_isolation ON agent_run_snapshots
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));

ALTER TABLE agent_runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_runs FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_tenant_isolation ON agent_runs;
CREATE POLICY agent_tenant_isolation ON agent_runs
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));

ALTER TABLE agent_run_journal ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_run_journal FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_tenant_isolation ON agent_run_journal;
CREATE POLICY agent_tenant_isolation ON agent_run_journal
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));

ALTER TABLE agent_memory_facts ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_memory_facts FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_tenant_isolation ON agent_memory_facts;
CREATE POLICY agent_tenant_isolation ON agent_memory_facts
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));

ALTER TABLE agent_approvals ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_approvals FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_tenant_isolation ON agent_approvals;
CREATE POLICY agent_tenant_isolation ON agent_approvals
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));
