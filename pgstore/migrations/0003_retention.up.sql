-- +goose Up
-- Retention: Prune deletes finished and expired parked runs in batches, and
-- the approval sweep lists expired approvals across tenants.

-- Prune walks a tenant's runs that are not running, oldest update first,
-- in batches of a few hundred: this index hands it each batch without
-- reading the running runs or the rest of the table. The journal,
-- snapshots and approvals of a batch are then found by their primary keys
-- (tenant_id, run_id, …) and agent_approvals_run_idx.
CREATE INDEX IF NOT EXISTS agent_runs_prune_idx
    ON agent_runs (tenant_id, updated_at, id)
    WHERE status <> 'running';

-- An approval whose timeout outcome the sweep applied is marked 'expired'
-- (resolved_at: when), so that the sweep stops listing it.
ALTER TABLE agent_approvals DROP CONSTRAINT IF EXISTS agent_approvals_status_check;
ALTER TABLE agent_approvals ADD CONSTRAINT agent_approvals_status_check
    CHECK (status IN ('pending', 'approved', 'denied', 'expired'));

-- The sweep's listing: pending approvals with an expiry, in the order
-- (expires_at, tenant_id, id) under byte-wise collation (the order Go's
-- string comparison gives), read as a keyset.
CREATE INDEX IF NOT EXISTS agent_approvals_expiry_idx
    ON agent_approvals (expires_at, tenant_id COLLATE "C", id COLLATE "C")
    WHERE status = 'pending' AND expires_at IS NOT NULL;

-- Row-level security and the sweep. Every binding call names one tenant and
-- sees only its rows. The sweep alone looks across tenants, and only for
-- the references it needs: a transaction that sets the transaction-local
-- kindgi.sweep to 'expired-approvals' (pgstore does so for the one SELECT
-- of ExpiredApprovals, and never sets a tenant in it) may also READ the
-- pending approvals that have an expiry and the suspended runs. These
-- policies are FOR SELECT: they add no right to insert, change or delete,
-- and a tenant-scoped call, which never sets kindgi.sweep, sees exactly
-- what it saw before. Everything the sweep then does to a run (resume it,
-- mark its approval) goes through tenant-scoped calls.
DROP POLICY IF EXISTS agent_expiry_sweep ON agent_approvals;
CREATE POLICY agent_expiry_sweep ON agent_approvals FOR SELECT
    USING (current_setting('kindgi.sweep', true) = 'expired-approvals'
           AND status = 'pending' AND expires_at IS NOT NULL);

DROP POLICY IF EXISTS agent_expiry_sweep ON agent_runs;
CREATE POLICY agent_expiry_sweep ON agent_runs FOR SELECT
    USING (current_setting('kindgi.sweep', true) = 'expired-approvals'
           AND status = 'suspended');
