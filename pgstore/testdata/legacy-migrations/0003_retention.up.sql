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
-- the references it needs, and only for a role the operator chose: the
-- sweep policies below apply to members of the role kindgi_sweeper
-- (NOLOGIN, no rights of its own; roles are cluster-wide, so one role serves
-- every database and schema), and only in a transaction that set the
-- transaction-local kindgi.sweep to 'expired-approvals' (pgstore does so for
-- the one SELECT of ExpiredApprovals, and never sets a tenant in it). Such a
-- transaction may also READ the pending approvals that have an expiry and
-- the suspended runs of every tenant. Any connection can set kindgi.sweep;
-- without membership of kindgi_sweeper it admits nothing.
--
-- Operators grant the role to the login role of the workers that run the
-- sweep, with inheritance (the default); a grant or revoke applies to the
-- next statement of connections already open:
--
--     GRANT kindgi_sweeper TO worker_role;
--
-- A policy's TO list is matched against the privileges current_user
-- inherits, so a grant WITH INHERIT FALSE, or to a NOINHERIT role, admits
-- nothing. The policies name the role, so DROP ROLE kindgi_sweeper is
-- refused while they exist.
--
-- These policies are FOR SELECT: they add no right to insert, change or
-- delete, and a tenant-scoped call, which never sets kindgi.sweep, sees
-- exactly what it saw before, also as a member of kindgi_sweeper.
-- Everything the sweep then does to a run (resume it, mark its approval)
-- goes through tenant-scoped calls.
--
-- The role is created here when missing. When the migrating role may not
-- create roles (no CREATEROLE) and kindgi_sweeper does not exist yet, no
-- sweep policy is created and a NOTICE says so: the sweep then sees only
-- what the tenant policy shows a connection without a tenant, which is
-- nothing, so ExpiredApprovals lists no approval (and moves no run) until
-- an administrator runs `CREATE ROLE kindgi_sweeper NOLOGIN` and this file
-- again by hand (every statement in it may be repeated).
-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kindgi_sweeper') THEN
        BEGIN
            CREATE ROLE kindgi_sweeper NOLOGIN;
        EXCEPTION
            -- Another database's migration created it meanwhile.
            WHEN duplicate_object OR unique_violation THEN NULL;
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'kindgi: cannot create role kindgi_sweeper (%); the approval sweep will see no tenant''s approvals until it exists and 0003_retention.up.sql is applied again', SQLERRM;
        END;
    END IF;

    DROP POLICY IF EXISTS agent_expiry_sweep ON agent_approvals;
    DROP POLICY IF EXISTS agent_expiry_sweep ON agent_runs;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kindgi_sweeper') THEN
        CREATE POLICY agent_expiry_sweep ON agent_approvals FOR SELECT
            TO kindgi_sweeper
            USING (current_setting('kindgi.sweep', true) = 'expired-approvals'
                   AND status = 'pending' AND expires_at IS NOT NULL);
        CREATE POLICY agent_expiry_sweep ON agent_runs FOR SELECT
            TO kindgi_sweeper
            USING (current_setting('kindgi.sweep', true) = 'expired-approvals'
                   AND status = 'suspended');
    END IF;
END
$$;
-- +goose StatementEnd
