-- +goose Up
-- Workers: queued runs, the claim of the runs that need a driver, the
-- operators' listing of runs, and the notifications that wake waiters and
-- idle workers.

-- A submitted run waits in status 'queued' until a worker claims it.
ALTER TABLE agent_runs DROP CONSTRAINT IF EXISTS agent_runs_status_check;
ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_status_check
    CHECK (status IN ('queued', 'running', 'suspended', 'completed', 'failed'));

-- ClaimRuns walks the runs that may need a driver, oldest first, in the
-- order (created_at, tenant_id, id) under byte-wise collation, and locks
-- the first claimable ones FOR UPDATE SKIP LOCKED: this index hands them
-- over without reading the finished runs (the bulk of the table). Runs
-- parked on approvals still pending are in it too (the claim skips them
-- after a look at their approvals, through agent_approvals_run_idx).
CREATE INDEX IF NOT EXISTS agent_runs_claim_idx
    ON agent_runs (created_at, tenant_id COLLATE "C", id COLLATE "C")
    WHERE status IN ('queued', 'running', 'suspended');

-- ListRuns: a tenant's runs newest first, read as a keyset.
CREATE INDEX IF NOT EXISTS agent_runs_created_idx
    ON agent_runs (tenant_id, created_at DESC, id COLLATE "C" DESC);

-- Notifications on the channel kindgi_runs, sent when the change commits:
-- a run created, its status changed or its lease released, and an
-- approval decided. The payload is tenant_id, run id, status and
-- 'claimable' (or '') separated by tabs (ids hold no control characters);
-- 'claimable' marks a change after which the run may need a driver.
-- turn.Wait and turn.Worker LISTEN to it; PostgreSQL folds identical
-- notifications of one transaction into one.
CREATE OR REPLACE FUNCTION kindgi_notify_run() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('kindgi_runs', NEW.tenant_id || E'\t' || NEW.id || E'\t' || NEW.status || E'\t' ||
        CASE WHEN NEW.lease_owner = '' AND NEW.status IN ('queued', 'running') THEN 'claimable' ELSE '' END);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION kindgi_notify_approval() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('kindgi_runs', NEW.tenant_id || E'\t' || NEW.run_id || E'\t' || E'\t' || 'claimable');
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS agent_runs_notify_insert ON agent_runs;
CREATE TRIGGER agent_runs_notify_insert AFTER INSERT ON agent_runs
    FOR EACH ROW EXECUTE FUNCTION kindgi_notify_run();
DROP TRIGGER IF EXISTS agent_runs_notify_update ON agent_runs;
CREATE TRIGGER agent_runs_notify_update AFTER UPDATE ON agent_runs
    FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status OR (NEW.lease_owner = '' AND OLD.lease_owner <> ''))
    EXECUTE FUNCTION kindgi_notify_run();
DROP TRIGGER IF EXISTS agent_approvals_notify ON agent_approvals;
CREATE TRIGGER agent_approvals_notify AFTER UPDATE ON agent_approvals
    FOR EACH ROW WHEN (OLD.status = 'pending' AND NEW.status IN ('approved', 'denied'))
    EXECUTE FUNCTION kindgi_notify_approval();

-- Row-level security and the claim. Claiming across tenants is a worker's
-- job, guarded as the approval sweep is (see 0003): only members of the
-- role kindgi_worker (NOLOGIN, no rights of its own), and only in a
-- transaction that set the transaction-local kindgi.claim to 'runs'
-- (pgstore does so for the one statement of ClaimRuns, which never sets a
-- tenant), may read and lease the runs of every tenant that are queued,
-- running or suspended, and read the approvals of every tenant (to tell
-- whether a parked run's approvals are decided). The claim returns
-- references and leases only; everything else a worker does to a run goes
-- through tenant-scoped calls. Any other role, and any transaction that
-- does not set kindgi.claim, sees exactly what the tenant policy shows.
--
-- Operators grant the role to the login role of their workers, with
-- inheritance (the default):
--
--     GRANT kindgi_worker TO worker_role;
--
-- The tenant isolation policies of agent_runs and agent_approvals gain the
-- worker's clause (so the schema keeps one policy per table besides the
-- sweep's); membership is checked with pg_has_role(…, 'USAGE'), the
-- privileges current_user inherits. When the migrating role may not create
-- roles and kindgi_worker does not exist yet, the policies are left as
-- they are and a NOTICE says so: ClaimRuns across tenants then claims
-- nothing until an administrator runs `CREATE ROLE kindgi_worker NOLOGIN`
-- and this file again by hand (every statement in it may be repeated).
-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kindgi_worker') THEN
        BEGIN
            CREATE ROLE kindgi_worker NOLOGIN;
        EXCEPTION
            -- Another database's migration created it meanwhile.
            WHEN duplicate_object OR unique_violation THEN NULL;
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'kindgi: cannot create role kindgi_worker (%); workers will claim no runs across tenants until it exists and 0004_workers.up.sql is applied again', SQLERRM;
        END;
    END IF;

    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kindgi_worker') THEN
        ALTER POLICY agent_tenant_isolation ON agent_runs
            USING (tenant_id = current_setting('kindgi.tenant_id', true)
                   OR (current_setting('kindgi.claim', true) = 'runs'
                       AND status IN ('queued', 'running', 'suspended')
                       AND pg_has_role('kindgi_worker', 'USAGE')))
            WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true)
                   OR (current_setting('kindgi.claim', true) = 'runs'
                       AND status IN ('queued', 'running', 'suspended')
                       AND pg_has_role('kindgi_worker', 'USAGE')));
        ALTER POLICY agent_tenant_isolation ON agent_approvals
            USING (tenant_id = current_setting('kindgi.tenant_id', true)
                   OR (current_setting('kindgi.claim', true) = 'runs'
                       AND pg_has_role('kindgi_worker', 'USAGE')));
    END IF;
END
$$;
-- +goose StatementEnd
