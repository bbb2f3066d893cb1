-- +goose Up
-- Cheaper run and conversation writes.
--
-- 1. The notification trigger of run updates (0004) is for updates that
--    set status or lease_owner: its WHEN clause, which PostgreSQL reads
--    back from the catalog text for every UPDATE statement on agent_runs,
--    is no longer read for the updates that only move last_seq (every
--    journal append). It fires for exactly the rows it fired for: a status
--    changes, or a lease is released, only by an UPDATE that sets that
--    column. (Dropped here, re-created at the end: ALTER COLUMN TYPE below
--    refuses a column a trigger reads.)
DROP TRIGGER IF EXISTS agent_runs_notify_update ON agent_runs;

-- 2. The status of runs and conversations is checked by a domain instead
--    of a CHECK constraint of its table, as the journal's status and the
--    message's role are since 0010 (same values allowed and refused, same
--    SQLSTATE 23514); a table's CHECKs are read back from the catalog text
--    and const-folded for every INSERT or UPDATE statement on it.
--
--   kindgi_run_status           agent_runs.status
--                               'queued', 'running', 'suspended', 'completed', 'failed'
--   kindgi_conversation_status  agent_conversations.status
--                               'open', 'closed'
--
-- ALTER COLUMN TYPE refuses a column that a row-level security policy or
-- a trigger's WHEN reads. The policies that read status (the worker's
-- clause of agent_runs' tenant isolation from 0004, the sweeps' policies
-- from 0003 and 0005, whichever this database has) are therefore set to
-- a placeholder for the change and then given back their own expressions,
-- read from the catalog before it, in this migration's transaction; the
-- trigger is dropped and re-created (as above). The expressions mean what
-- they meant; their stored text now reads the column through a cast to
-- text ("(status)::text = 'open'::text").
--
-- On an existing database: no table rewrite (the column becomes a domain
-- without a constraint first, which is binary-compatible with text), but
-- the partial indexes whose predicate reads status are rebuilt
-- (agent_runs_prune_idx, agent_runs_claim_idx,
-- agent_conversations_idle_idx: PostgreSQL does not keep an index with a
-- predicate across ALTER COLUMN TYPE), then the domain's constraint is
-- added, which reads every row of the table once to validate it. Both
-- under the ACCESS EXCLUSIVE lock of the ALTER TABLE, held to the end of
-- the migration. Every statement may be repeated.
-- +goose StatementBegin
DO $$
DECLARE
    c record;
    p record;
    v_pols text[];
BEGIN
    FOR c IN SELECT * FROM (VALUES
        ('agent_runs', 'kindgi_run_status', 'agent_runs_status_check',
         $v$VALUE IN ('queued', 'running', 'suspended', 'completed', 'failed')$v$),
        ('agent_conversations', 'kindgi_conversation_status', 'agent_conversations_status_check',
         $v$VALUE IN ('open', 'closed')$v$)
    ) AS v(tab, dom, tabcheck, expr)
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_type WHERE typname = c.dom AND typnamespace = current_schema()::regnamespace) THEN
            EXECUTE format('CREATE DOMAIN %I.%I AS text', current_schema(), c.dom);
        END IF;
        IF (SELECT a.atttypid FROM pg_attribute a
            WHERE a.attrelid = format('%I.%I', current_schema(), c.tab)::regclass AND a.attname = 'status') = 'text'::regtype THEN
            v_pols := '{}';
            FOR p IN
                SELECT pol.polname, pg_get_expr(pol.polqual, pol.polrelid) AS qual,
                       pg_get_expr(pol.polwithcheck, pol.polrelid) AS chk
                FROM pg_policy pol
                WHERE pol.polrelid = format('%I.%I', current_schema(), c.tab)::regclass
                  AND EXISTS (SELECT 1 FROM pg_depend d JOIN pg_attribute a
                                  ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid AND a.attname = 'status'
                              WHERE d.classid = 'pg_policy'::regclass AND d.objid = pol.oid
                                AND d.refclassid = 'pg_class'::regclass AND d.refobjid = pol.polrelid)
            LOOP
                EXECUTE format('ALTER POLICY %I ON %I.%I USING (false)', p.polname, current_schema(), c.tab)
                    || CASE WHEN p.chk IS NOT NULL THEN ' WITH CHECK (false)' ELSE '' END;
                v_pols := v_pols || ARRAY[p.polname::text, p.qual, p.chk];
            END LOOP;
            EXECUTE format('ALTER TABLE %I.%I ALTER COLUMN status TYPE %I.%I',
                current_schema(), c.tab, current_schema(), c.dom);
            FOR i IN 1 .. coalesce(array_length(v_pols, 1), 0) / 3 LOOP
                EXECUTE format('ALTER POLICY %I ON %I.%I USING (%s)', v_pols[3*i-2], current_schema(), c.tab, v_pols[3*i-1])
                    || CASE WHEN v_pols[3*i] IS NOT NULL THEN format(' WITH CHECK (%s)', v_pols[3*i]) ELSE '' END;
            END LOOP;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_constraint
                       WHERE contypid = format('%I.%I', current_schema(), c.dom)::regtype AND conname = c.dom || '_check') THEN
            EXECUTE format('ALTER DOMAIN %I.%I ADD CONSTRAINT %I CHECK (%s)',
                current_schema(), c.dom, c.dom || '_check', c.expr);
        END IF;
        EXECUTE format('ALTER TABLE %I.%I DROP CONSTRAINT IF EXISTS %I', current_schema(), c.tab, c.tabcheck);
    END LOOP;
END
$$;
-- +goose StatementEnd

-- The trigger of 1.
CREATE TRIGGER agent_runs_notify_update AFTER UPDATE OF status, lease_owner ON agent_runs
    FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status OR (NEW.lease_owner = '' AND OLD.lease_owner <> ''))
    EXECUTE FUNCTION kindgi_notify_run();
