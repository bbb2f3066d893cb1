-- +goose Up
-- Optimistic resume: a resumed drive reads the run without leasing it
-- (pgstore's ReadResumeRun) and takes the lease with its first write. That
-- write starts with kindgi_lease_as_read, one statement that sets the
-- tenant and takes the lease of run p_run for p_owner until p_expires only
-- if the run is still as read: status p_status, journal version p_last_seq
-- (every journal append moves last_seq), lease owner p_lease_owner and,
-- when that owner is not empty, lease expiry p_lease_expires; and only if
-- the lease is free for p_owner at p_now (free, expired or p_owner's, as
-- AcquireLease takes it). Otherwise it raises SQLSTATE KG003 (class KG, not
-- one PostgreSQL uses): the call's transaction stores nothing, and the
-- caller reports the run busy. The UPDATE waits on the run's row lock for a
-- writer in flight and re-checks the condition against the row it
-- committed, so of the drives that read the same run exactly one takes it.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION kindgi_lease_as_read(
    p_tenant text, p_run text, p_owner text, p_expires timestamptz, p_now timestamptz,
    p_status text, p_lease_owner text, p_lease_expires timestamptz, p_last_seq bigint)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('kindgi.tenant_id', p_tenant, true);
    UPDATE agent_runs r SET lease_owner = p_owner, lease_expires_at = p_expires, updated_at = p_now
        WHERE r.tenant_id = p_tenant AND r.id = p_run
          AND r.status = p_status AND r.last_seq = p_last_seq AND r.lease_owner = p_lease_owner
          AND (p_lease_owner = '' OR r.lease_expires_at IS NOT DISTINCT FROM p_lease_expires)
          AND (r.lease_owner = '' OR r.lease_owner = p_owner OR r.lease_expires_at IS NULL OR r.lease_expires_at <= p_now);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'kindgi: run % changed since it was read', p_run USING ERRCODE = 'KG003';
    END IF;
END
$$;
-- +goose StatementEnd
