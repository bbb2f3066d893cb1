-- +goose Up
-- Cheaper writes of a turn on the database server, with the same rows,
-- results and refusals: (1) the run notification trigger only for updates
-- that set status or lease_owner, (2) run and conversation status checked
-- by domains, (3) kindgi_append_steps and kindgi_message_step without a
-- CTE around their journal insert and with ctid updates of the rows they
-- locked, (4) kindgi_expect_messages' message lookup by the primary key
-- whatever the statistics.
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
-- A policy of the operator's own that reads status (on any table) is
-- kept the same way. A view or rule that reads it makes ALTER COLUMN TYPE
-- fail, and the migration with it, with nothing changed; an index that
-- reads it is rebuilt as below.
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
            -- Every policy that reads the column, on this table or another.
            FOR p IN
                SELECT pol.polname, pol.polrelid::regclass::text AS tab, pg_get_expr(pol.polqual, pol.polrelid) AS qual,
                       pg_get_expr(pol.polwithcheck, pol.polrelid) AS chk
                FROM pg_policy pol
                WHERE EXISTS (SELECT 1 FROM pg_depend d JOIN pg_attribute a
                                  ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid AND a.attname = 'status'
                              WHERE d.classid = 'pg_policy'::regclass AND d.objid = pol.oid
                                AND d.refclassid = 'pg_class'::regclass
                                AND d.refobjid = format('%I.%I', current_schema(), c.tab)::regclass)
            LOOP
                EXECUTE format('ALTER POLICY %I ON %s USING (false)', p.polname, p.tab)
                    || CASE WHEN p.chk IS NOT NULL THEN ' WITH CHECK (false)' ELSE '' END;
                v_pols := v_pols || ARRAY[p.polname::text, p.tab, p.qual, p.chk];
            END LOOP;
            EXECUTE format('ALTER TABLE %I.%I ALTER COLUMN status TYPE %I.%I',
                current_schema(), c.tab, current_schema(), c.dom);
            FOR i IN 1 .. coalesce(array_length(v_pols, 1), 0) / 4 LOOP
                EXECUTE format('ALTER POLICY %I ON %s USING (%s)', v_pols[4*i-3], v_pols[4*i-2], v_pols[4*i-1])
                    || CASE WHEN v_pols[4*i] IS NOT NULL THEN format(' WITH CHECK (%s)', v_pols[4*i]) ELSE '' END;
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


-- 3. A write's journal entries are inserted by a plain INSERT … ON
--    CONFLICT DO NOTHING, and when all of them were appended (the usual
--    case: the count says so) the rows returned are made from their
--    numbers, v_last + i, instead of an INSERT … RETURNING inside a CTE
--    whose rows a tuplestore collects and a second scan reads; when some
--    were stored already, one read of the journal returns each entry of
--    the call as stored (appended now when its seq is v_last + i).
--    A row the function locked with SELECT … FOR UPDATE (the
--    conversation, and the run when the call finishes it) is then updated
--    through its ctid, which the lock holds still until this transaction
--    writes it (the key is checked again), instead of a second index
--    lookup. Arguments, rows (in another order when an entry was stored
--    already; pgstore reads them by ordinal) and effects as in 0010.

-- kindgi_append_steps: as in migration 0010, with the insert above.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION kindgi_append_steps(
    p_tenant text, p_run text, p_owner text, p_now timestamptz,
    p_keys text[], p_phases text[], p_nodes text[], p_statuses text[],
    p_outputs text[], p_errors text[], p_ats timestamptz[], p_finish text)
RETURNS TABLE (o_ord integer, o_seq bigint, o_appended boolean, o_node text, o_status text,
               o_output jsonb, o_error jsonb, o_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_owner   text;
    v_expires timestamptz;
    v_last    bigint;
    v_n       integer;
    v_ins     integer;
    v_row     tid;
BEGIN
    PERFORM set_config('kindgi.tenant_id', p_tenant, true);
    v_n := coalesce(array_length(p_keys, 1), 0);
    IF p_finish IS NULL THEN
        UPDATE agent_runs r SET last_seq = r.last_seq + v_n
            WHERE r.tenant_id = p_tenant AND r.id = p_run
              AND (p_owner = '' OR (r.lease_owner = p_owner AND r.lease_expires_at > p_now))
            RETURNING r.lease_owner, r.lease_expires_at, r.last_seq - v_n INTO v_owner, v_expires, v_last;
        IF NOT FOUND THEN
            -- No such run, or its lease is not p_owner's: nothing changes.
            SELECT r.lease_owner, r.lease_expires_at INTO v_owner, v_expires
                FROM agent_runs r WHERE r.tenant_id = p_tenant AND r.id = p_run;
            IF FOUND THEN
                o_ord := 0; o_node := v_owner; o_at := v_expires;
                RETURN NEXT;
            END IF;
            RETURN;
        END IF;
    ELSE
        SELECT r.ctid, r.lease_owner, r.lease_expires_at, r.last_seq INTO v_row, v_owner, v_expires, v_last
            FROM agent_runs r WHERE r.tenant_id = p_tenant AND r.id = p_run FOR UPDATE;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        IF p_owner <> '' AND (v_owner <> p_owner OR v_expires IS NULL OR v_expires <= p_now) THEN
            o_ord := 0; o_node := v_owner; o_at := v_expires;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;
    o_ord := 0; o_node := v_owner; o_at := v_expires;
    RETURN NEXT;
    IF v_n > 0 THEN
        INSERT INTO agent_run_journal (tenant_id, run_id, seq, key, phase, node, status, output, error, at)
        SELECT p_tenant, p_run, v_last + u.o, u.k, u.ph, u.nd, u.st, u.outp::jsonb, u.err::jsonb, u.a
        FROM unnest(p_keys, p_phases, p_nodes, p_statuses, p_outputs, p_errors, p_ats)
            WITH ORDINALITY AS u(k, ph, nd, st, outp, err, a, o)
        ORDER BY u.o
        ON CONFLICT (tenant_id, run_id, key, phase) DO NOTHING;
        GET DIAGNOSTICS v_ins = ROW_COUNT;
        IF v_ins = v_n THEN
            -- Every entry appended, the i-th as v_last + i.
            o_node := NULL; o_at := NULL; o_appended := true;
            FOR i IN 1 .. v_n LOOP
                o_ord := i; o_seq := v_last + i;
                RETURN NEXT;
            END LOOP;
        ELSE
            -- Each entry as stored: appended now when its seq is v_last + i,
            -- otherwise the stored entry.
            RETURN QUERY
            SELECT u.o::integer, j.seq, j.seq = v_last + u.o,
                CASE WHEN j.seq <> v_last + u.o THEN j.node END, CASE WHEN j.seq <> v_last + u.o THEN j.status::text END,
                CASE WHEN j.seq <> v_last + u.o THEN j.output END, CASE WHEN j.seq <> v_last + u.o THEN j.error END,
                CASE WHEN j.seq <> v_last + u.o THEN j.at END
            FROM unnest(p_keys, p_phases) WITH ORDINALITY AS u(k, ph, o)
            JOIN agent_run_journal j ON j.tenant_id = p_tenant AND j.run_id = p_run AND j.key = u.k AND j.phase = u.ph;
        END IF;
        IF v_ins > 0 THEN
            v_last := v_last + v_n;
        END IF;
    END IF;
    IF p_finish IS NOT NULL THEN
        UPDATE agent_runs r
            SET last_seq = v_last, status = p_finish, updated_at = p_now,
                lease_owner = CASE WHEN p_owner <> '' THEN '' ELSE r.lease_owner END,
                lease_expires_at = CASE WHEN p_owner <> '' THEN NULL ELSE r.lease_expires_at END
            WHERE r.ctid = v_row AND r.tenant_id = p_tenant AND r.id = p_run;
    END IF;
END
$$;
-- +goose StatementEnd

-- kindgi_message_step: as in migration 0010, with the insert above.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION kindgi_message_step(
    p_tenant text, p_run text, p_owner text, p_now timestamptz,
    p_h_keys text[], p_h_phases text[], p_h_nodes text[], p_h_statuses text[],
    p_h_outputs text[], p_h_errors text[], p_h_ats timestamptz[],
    p_conv text, p_id text, p_role text, p_content text, p_tool_calls text,
    p_tool_call_id text, p_turn integer, p_run_id text, p_metadata text, p_at timestamptz, p_participant text,
    p_prefix text, p_suffix text,
    p_t_keys text[], p_t_phases text[], p_t_nodes text[], p_t_statuses text[],
    p_t_outputs text[], p_t_errors text[], p_t_ats timestamptz[], p_finish text)
RETURNS TABLE (o_part integer, o_ord integer, o_seq bigint, o_appended boolean, o_node text, o_status text,
               o_output jsonb, o_error jsonb, o_at timestamptz,
               m_status text, m_turn_count integer, m_id text, m_seq bigint, m_role text, m_content text,
               m_tool_calls jsonb, m_tool_call_id text, m_turn_number integer, m_run_id text, m_metadata jsonb,
               m_created_at timestamptz, m_participant_id text, m_appended boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_owner    text;
    v_expires  timestamptz;
    v_last     bigint;
    v_h        integer;
    v_n        integer;
    v_ins      integer;
    v_row      tid;
    v_crow     tid;
    v_count    integer;
    v_conv     boolean;
    v_stored   boolean := false;
    v_status   text;
    v_turns    integer;
    v_keys     text[];
    v_phases   text[];
    v_nodes    text[];
    v_statuses text[];
    v_outputs  text[];
    v_errors   text[];
    v_ats      timestamptz[];
BEGIN
    PERFORM set_config('kindgi.tenant_id', p_tenant, true);
    v_h := coalesce(array_length(p_h_keys, 1), 0);
    v_n := v_h + coalesce(array_length(p_t_keys, 1), 0);
    o_part := 1; o_ord := 0;
    IF p_finish IS NULL THEN
        -- The lease check, the run's lock and the numbers of all entries
        -- in one UPDATE.
        UPDATE agent_runs r SET last_seq = r.last_seq + v_n
            WHERE r.tenant_id = p_tenant AND r.id = p_run
              AND (p_owner = '' OR (r.lease_owner = p_owner AND r.lease_expires_at > p_now))
            RETURNING r.lease_owner, r.lease_expires_at, r.last_seq - v_n INTO v_owner, v_expires, v_last;
        IF NOT FOUND THEN
            -- No such run, or its lease is not p_owner's: nothing is stored.
            SELECT r.lease_owner, r.lease_expires_at INTO o_node, o_at
                FROM agent_runs r WHERE r.tenant_id = p_tenant AND r.id = p_run;
            IF FOUND THEN
                RETURN NEXT;
            END IF;
            RETURN;
        END IF;
    ELSE
        SELECT r.ctid, r.lease_owner, r.lease_expires_at, r.last_seq INTO v_row, v_owner, v_expires, v_last
            FROM agent_runs r WHERE r.tenant_id = p_tenant AND r.id = p_run FOR UPDATE;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        IF p_owner <> '' AND (v_owner <> p_owner OR v_expires IS NULL OR v_expires <= p_now) THEN
            o_node := v_owner; o_at := v_expires;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;
    o_node := v_owner; o_at := v_expires;
    RETURN NEXT;
    o_node := NULL; o_at := NULL;

    -- The message, as kindgi_append_message appends it (the lease was
    -- checked above, under the run's lock, which is held to the commit).
    SELECT c.ctid, c.status, c.turn_count, c.message_count INTO v_crow, v_status, v_turns, v_count
        FROM agent_conversations c WHERE c.tenant_id = p_tenant AND c.id = p_conv FOR UPDATE;
    v_conv := FOUND;
    IF v_conv AND v_status = 'open' AND NOT (p_role = 'user' AND p_turn > 0 AND v_turns >= p_turn) THEN
        INSERT INTO agent_conversation_messages
            (tenant_id, conversation_id, id, seq, role, content, tool_calls, tool_call_id, turn_number, run_id,
             metadata, created_at, participant_id)
            VALUES (p_tenant, p_conv, p_id, v_count + 1, p_role, p_content, p_tool_calls::jsonb, p_tool_call_id, p_turn,
                    p_run_id, p_metadata::jsonb, p_at, p_participant)
            ON CONFLICT (tenant_id, conversation_id, id) DO NOTHING;
        v_stored := FOUND;
        IF v_stored THEN
            UPDATE agent_conversations c
                SET message_count = v_count + 1,
                    turn_count = GREATEST(c.turn_count, p_turn),
                    last_activity_at = GREATEST(c.last_activity_at, p_at)
                WHERE c.ctid = v_crow AND c.tenant_id = p_tenant AND c.id = p_conv;
        END IF;
    END IF;

    -- The entries: those before the message and, when this call stored
    -- it, the step's entry (its output the stored message with its seq)
    -- and those after it, in one insert; the i-th numbered v_last + i.
    IF v_stored THEN
        p_t_outputs[1] := p_prefix || (v_count + 1)::text || p_suffix;
        v_keys := p_h_keys || p_t_keys; v_phases := p_h_phases || p_t_phases; v_nodes := p_h_nodes || p_t_nodes;
        v_statuses := p_h_statuses || p_t_statuses; v_outputs := p_h_outputs || p_t_outputs;
        v_errors := p_h_errors || p_t_errors; v_ats := p_h_ats || p_t_ats;
    ELSE
        v_n := v_h;
        v_keys := p_h_keys; v_phases := p_h_phases; v_nodes := p_h_nodes; v_statuses := p_h_statuses;
        v_outputs := p_h_outputs; v_errors := p_h_errors; v_ats := p_h_ats;
    END IF;
    IF v_n > 0 THEN
        INSERT INTO agent_run_journal (tenant_id, run_id, seq, key, phase, node, status, output, error, at)
        SELECT p_tenant, p_run, v_last + u.o, u.k, u.ph, u.nd, u.st, u.outp::jsonb, u.err::jsonb, u.a
        FROM unnest(v_keys, v_phases, v_nodes, v_statuses, v_outputs, v_errors, v_ats)
            WITH ORDINALITY AS u(k, ph, nd, st, outp, err, a, o)
        ORDER BY u.o
        ON CONFLICT (tenant_id, run_id, key, phase) DO NOTHING;
        GET DIAGNOSTICS v_ins = ROW_COUNT;
        IF v_ins = v_n THEN
            -- Every entry appended, the i-th as v_last + i.
            o_appended := true;
            FOR i IN 1 .. v_n LOOP
                IF i <= v_h THEN
                    o_part := 1; o_ord := i;
                ELSE
                    o_part := 3; o_ord := i - v_h;
                END IF;
                o_seq := v_last + i;
                RETURN NEXT;
            END LOOP;
            o_seq := NULL; o_appended := NULL;
        ELSE
            -- Each entry as stored: appended now when its seq is v_last + i,
            -- otherwise the stored entry.
            RETURN QUERY
            SELECT CASE WHEN u.o <= v_h THEN 1 ELSE 3 END,
                (CASE WHEN u.o <= v_h THEN u.o ELSE u.o - v_h END)::integer,
                j.seq, j.seq = v_last + u.o,
                CASE WHEN j.seq <> v_last + u.o THEN j.node END, CASE WHEN j.seq <> v_last + u.o THEN j.status::text END,
                CASE WHEN j.seq <> v_last + u.o THEN j.output END, CASE WHEN j.seq <> v_last + u.o THEN j.error END,
                CASE WHEN j.seq <> v_last + u.o THEN j.at END,
                NULL::text, NULL::integer, NULL::text, NULL::bigint, NULL::text, NULL::text,
                NULL::jsonb, NULL::text, NULL::integer, NULL::text, NULL::jsonb, NULL::timestamptz, NULL::text, NULL::boolean
            FROM unnest(v_keys, v_phases) WITH ORDINALITY AS u(k, ph, o)
            JOIN agent_run_journal j ON j.tenant_id = p_tenant AND j.run_id = p_run AND j.key = u.k AND j.phase = u.ph;
        END IF;
        IF v_ins > 0 THEN
            v_last := v_last + v_n;
        END IF;
    END IF;

    IF p_finish IS NOT NULL THEN
        -- The run's row was locked, not updated: its last_seq, and the
        -- finish when this call stored the message (otherwise the caller
        -- finishes the run with the entries after the message).
        IF v_stored THEN
            UPDATE agent_runs r
                SET last_seq = v_last, status = p_finish, updated_at = p_now,
                    lease_owner = CASE WHEN p_owner <> '' THEN '' ELSE r.lease_owner END,
                    lease_expires_at = CASE WHEN p_owner <> '' THEN NULL ELSE r.lease_expires_at END
                WHERE r.ctid = v_row AND r.tenant_id = p_tenant AND r.id = p_run;
        ELSIF v_n > 0 AND v_ins > 0 THEN
            UPDATE agent_runs r SET last_seq = v_last WHERE r.ctid = v_row AND r.tenant_id = p_tenant AND r.id = p_run;
        END IF;
    END IF;

    IF NOT v_conv THEN
        RETURN; -- no such conversation: no message row
    END IF;
    o_part := 2; o_ord := NULL;
    m_status := v_status; m_turn_count := v_turns;
    IF v_stored THEN
        m_id := p_id; m_seq := v_count + 1; m_appended := true;
        RETURN NEXT;
        -- The run's lease, for the step's entry and those after it.
        o_part := 3; o_ord := 0; o_node := v_owner; o_at := v_expires;
        m_status := NULL; m_turn_count := NULL; m_id := NULL; m_seq := NULL; m_appended := NULL;
        RETURN NEXT;
        RETURN;
    END IF;
    -- Not stored now: the message stored before under this id, if any.
    SELECT m.id, m.seq, m.role, m.content, m.tool_calls, m.tool_call_id, m.turn_number, m.run_id, m.metadata,
           m.created_at, m.participant_id, false
        INTO m_id, m_seq, m_role, m_content, m_tool_calls, m_tool_call_id, m_turn_number, m_run_id, m_metadata,
             m_created_at, m_participant_id, m_appended
        FROM agent_conversation_messages m
        WHERE m.tenant_id = p_tenant AND m.conversation_id = p_conv AND m.id = p_id;
    RETURN NEXT;
END
$$;
-- +goose StatementEnd

-- 4. kindgi_expect_messages (0011) looks for a stored message with id
--    p_id through the primary key whatever the statistics say. Written as
--    an equality, the lookup ties in cost, on tables not yet analyzed,
--    with a scan of agent_conversation_messages_seq_idx over the whole
--    conversation filtered by id (the planner keeps the index it met
--    first, the newest), and a plan cached on a fresh table keeps that
--    scan until the table is analyzed: its cost then grows with the
--    conversation. As a range on id in id order, only the primary key
--    serves it without a sort. Same check, same SQLSTATE KG001.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION kindgi_expect_messages(p_tenant text, p_conv text, p_count integer, p_id text)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_count integer;
BEGIN
    PERFORM set_config('kindgi.tenant_id', p_tenant, true);
    SELECT c.message_count INTO v_count FROM agent_conversations c
        WHERE c.tenant_id = p_tenant AND c.id = p_conv FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF v_count = p_count THEN
        -- id >= p_id AND id <= p_id is id = p_id (a deterministic
        -- collation orders equal strings only when their bytes are equal).
        PERFORM 1 FROM agent_conversation_messages m
            WHERE m.tenant_id = p_tenant AND m.conversation_id = p_conv AND m.id >= p_id AND m.id <= p_id
            ORDER BY m.id LIMIT 1;
    END IF;
    IF v_count <> p_count OR FOUND THEN
        RAISE EXCEPTION 'kindgi: conversation changed at % messages', v_count USING ERRCODE = 'KG001';
    END IF;
END
$$;
-- +goose StatementEnd
