-- +goose Up
-- Workers see references and leases only. 0004 let a kindgi_worker member
-- read every tenant's approvals under kindgi.claim so the claim could tell
-- whether a parked run's approvals are settled; that exposed their
-- arguments, reasons and comments. The claim now reads two columns of the
-- run instead, kept by a trigger on agent_approvals, and the approvals
-- policy is tenant isolation again.
--
--   approvals_total          how many approvals the run asked for
--   approvals_pending_until  the latest expiry among its pending approvals
--                            ('infinity' for one that never expires), NULL
--                            when none is pending
--
-- A suspended run is claimable once approvals_total > 0 and
-- approvals_pending_until is NULL or past.

ALTER TABLE agent_runs ADD COLUMN IF NOT EXISTS approvals_total int NOT NULL DEFAULT 0;
ALTER TABLE agent_runs ADD COLUMN IF NOT EXISTS approvals_pending_until timestamptz;

-- The trigger runs as the role that wrote the approval, so row-level
-- security lets it update only that tenant's run (every approval write
-- names its tenant).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION kindgi_run_approvals() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    t text;
    r text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        t := OLD.tenant_id; r := OLD.run_id;
    ELSE
        t := NEW.tenant_id; r := NEW.run_id;
    END IF;
    IF r = '' THEN
        RETURN NULL;
    END IF;
    UPDATE agent_runs ru SET approvals_total = s.total, approvals_pending_until = s.pending_until
    FROM (SELECT count(*)::int AS total,
                 max(CASE WHEN a.status = 'pending' THEN coalesce(a.expires_at, 'infinity'::timestamptz) END) AS pending_until
          FROM agent_approvals a WHERE a.tenant_id = t AND a.run_id = r) s
    WHERE ru.tenant_id = t AND ru.id = r
      AND (ru.approvals_total, ru.approvals_pending_until) IS DISTINCT FROM (s.total, s.pending_until);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP TRIGGER IF EXISTS agent_approvals_run_state ON agent_approvals;
CREATE TRIGGER agent_approvals_run_state AFTER INSERT OR DELETE OR UPDATE OF status, expires_at, run_id ON agent_approvals
    FOR EACH ROW EXECUTE FUNCTION kindgi_run_approvals();

-- Runs parked before this migration.
UPDATE agent_runs ru SET approvals_total = s.total, approvals_pending_until = s.pending_until
FROM (SELECT tenant_id, run_id, count(*)::int AS total,
             max(CASE WHEN status = 'pending' THEN coalesce(expires_at, 'infinity'::timestamptz) END) AS pending_until
      FROM agent_approvals WHERE run_id <> '' GROUP BY tenant_id, run_id) s
WHERE ru.tenant_id = s.tenant_id AND ru.id = s.run_id
  AND (ru.approvals_total, ru.approvals_pending_until) IS DISTINCT FROM (s.total, s.pending_until);

ALTER POLICY agent_tenant_isolation ON agent_approvals
    USING (tenant_id = current_setting('kindgi.tenant_id', true));
