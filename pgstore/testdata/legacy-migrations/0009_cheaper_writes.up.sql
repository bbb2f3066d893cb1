-- +goose Up
-- Cheaper writes: kindgi_append_steps (migration 0007) and
-- kindgi_message_step (0008) with the same arguments, rows and effects,
-- doing less work per call. Each statement inside a function costs an
-- executor start and, for a write, its table's CHECK constraints read
-- back from the catalog, its indexes opened and its foreign-key checks
-- run; these run fewer of them.
--
-- When they do not finish the run, both lock the run's row by updating
-- it: one UPDATE that checks the lease and moves last_seq past the new
-- entries' numbers, instead of a SELECT … FOR UPDATE and, after the
-- inserts, an UPDATE. The entries are numbered after the run's last_seq
-- as before; an entry not appended (stored already) leaves its number
-- unused, as before: seq only has to increase. A refused lease or a
-- missing run changes nothing (the UPDATE matched no row) and is told
-- apart by a read of the run.
--
-- kindgi_message_step no longer calls kindgi_append_steps twice and
-- kindgi_append_message once: it does their work inline, locking the run
-- and checking its lease once, and stores the message first, so that the
-- entries before it and, when this call stored the message, the step's
-- entry and those after it are one INSERT.

-- kindgi_append_steps: as in migration 0007.
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
        SELECT r.lease_owner, r.lease_expires_at, r.last_seq INTO v_owner, v_expires, v_last
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
        RETURN QUERY
        WITH ins AS (
            INSERT INTO agent_run_journal (tenant_id, run_id, seq, key, phase, node, status, output, error, at)
            SELECT p_tenant, p_run, v_last + u.o, u.k, u.ph, u.nd, u.st, u.outp::jsonb, u.err::jsonb, u.a
            FROM unnest(p_keys, p_phases, p_nodes, p_statuses, p_outputs, p_errors, p_ats)
                WITH ORDINALITY AS u(k, ph, nd, st, outp, err, a, o)
            ORDER BY u.o
            ON CONFLICT (tenant_id, run_id, key, phase) DO NOTHING
            RETURNING seq
        )
        SELECT (ins.seq - v_last)::integer, ins.seq, true, NULL::text, NULL::text, NULL::jsonb, NULL::jsonb, NULL::timestamptz
        FROM ins;
        GET DIAGNOSTICS v_ins = ROW_COUNT;
        IF v_ins < v_n THEN
            -- The entries not appended: the stored entry of each.
            RETURN QUERY
            SELECT u.o::integer, j.seq, false, j.node, j.status, j.output, j.error, j.at
            FROM unnest(p_keys, p_phases) WITH ORDINALITY AS u(k, ph, o)
            JOIN agent_run_journal j ON j.tenant_id = p_tenant AND j.run_id = p_run AND j.key = u.k AND j.phase = u.ph
            WHERE j.seq <> v_last + u.o;
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
            WHERE r.tenant_id = p_tenant AND r.id = p_run;
    END IF;
END
$$;
-- +goose StatementEnd

-- kindgi_message_step: as in migration 0008.
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
    v_count    integer;
    v_conv     boolean;
    v_stored   boolean := false;
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
        SELECT r.lease_owner, r.lease_expires_at, r.last_seq INTO v_owner, v_expires, v_last
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
    SELECT c.status, c.turn_count, c.message_count INTO m_status, m_turn_count, v_count
        FROM agent_conversations c WHERE c.tenant_id = p_tenant AND c.id = p_conv FOR UPDATE;
    v_conv := FOUND;
    IF v_conv AND m_status = 'open' AND NOT (p_role = 'user' AND p_turn > 0 AND m_turn_count >= p_turn) THEN
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
                WHERE c.tenant_id = p_tenant AND c.id = p_conv;
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
        RETURN QUERY
        WITH ins AS (
            INSERT INTO agent_run_journal (tenant_id, run_id, seq, key, phase, node, status, output, error, at)
            SELECT p_tenant, p_run, v_last + u.o, u.k, u.ph, u.nd, u.st, u.outp::jsonb, u.err::jsonb, u.a
            FROM unnest(v_keys, v_phases, v_nodes, v_statuses, v_outputs, v_errors, v_ats)
                WITH ORDINALITY AS u(k, ph, nd, st, outp, err, a, o)
            ORDER BY u.o
            ON CONFLICT (tenant_id, run_id, key, phase) DO NOTHING
            RETURNING seq
        )
        SELECT CASE WHEN ins.seq - v_last <= v_h THEN 1 ELSE 3 END,
            (CASE WHEN ins.seq - v_last <= v_h THEN ins.seq - v_last ELSE ins.seq - v_last - v_h END)::integer,
            ins.seq, true, NULL::text, NULL::text, NULL::jsonb, NULL::jsonb, NULL::timestamptz,
            NULL::text, NULL::integer, NULL::text, NULL::bigint, NULL::text, NULL::text,
            NULL::jsonb, NULL::text, NULL::integer, NULL::text, NULL::jsonb, NULL::timestamptz, NULL::text, NULL::boolean
        FROM ins;
        GET DIAGNOSTICS v_ins = ROW_COUNT;
        IF v_ins < v_n THEN
            -- The entries not appended: the stored entry of each.
            RETURN QUERY
            SELECT CASE WHEN u.o <= v_h THEN 1 ELSE 3 END,
                (CASE WHEN u.o <= v_h THEN u.o ELSE u.o - v_h END)::integer,
                j.seq, false, j.node, j.status, j.output, j.error, j.at,
                NULL::text, NULL::integer, NULL::text, NULL::bigint, NULL::text, NULL::text,
                NULL::jsonb, NULL::text, NULL::integer, NULL::text, NULL::jsonb, NULL::timestamptz, NULL::text, NULL::boolean
            FROM unnest(v_keys, v_phases) WITH ORDINALITY AS u(k, ph, o)
            JOIN agent_run_journal j ON j.tenant_id = p_tenant AND j.run_id = p_run AND j.key = u.k AND j.phase = u.ph
            WHERE j.seq <> v_last + u.o;
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
                WHERE r.tenant_id = p_tenant AND r.id = p_run;
        ELSIF v_n > 0 AND v_ins > 0 THEN
            UPDATE agent_runs r SET last_seq = v_last WHERE r.tenant_id = p_tenant AND r.id = p_run;
        END IF;
    END IF;

    IF NOT v_conv THEN
        RETURN; -- no such conversation: no message row
    END IF;
    o_part := 2; o_ord := NULL;
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

-- The payloads a turn writes and reads back (journal outputs, messages,
-- the run's input) are compressed with lz4 rather than pglz when larger
-- than PostgreSQL's 2 kB threshold: the same values, compressed several
-- times faster (pglz was ~2% of a turn's backend CPU). Only values stored
-- from now on; older ones stay pglz, and both read the same. A server
-- built without lz4 keeps pglz (a NOTICE says so).
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TABLE agent_run_journal ALTER COLUMN output SET COMPRESSION lz4,
        ALTER COLUMN error SET COMPRESSION lz4;
    ALTER TABLE agent_conversation_messages ALTER COLUMN content SET COMPRESSION lz4,
        ALTER COLUMN tool_calls SET COMPRESSION lz4, ALTER COLUMN metadata SET COMPRESSION lz4;
    ALTER TABLE agent_run_snapshots ALTER COLUMN input SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'kindgi: this server has no lz4; payloads stay compressed with pglz';
END
$$;
-- +goose StatementEnd
