-- +goose Up
-- Server-side functions that do one call's work in one statement: a
-- journal append of many entries (optionally finishing the run) and a
-- message append. Each sets the transaction-local kindgi.tenant_id itself
-- first, so a call is one statement rather than a set_config, a lock, and
-- one insert and one read back per entry. They run with the caller's
-- privileges (SECURITY INVOKER): row-level security applies to every
-- statement in them as it does to the caller's own.

-- kindgi_append_steps appends entries to run p_run of tenant p_tenant
-- under the run's row lock, in array order, numbering the new ones after
-- the run's last_seq; an entry whose (key, phase) is stored already, or
-- repeated earlier in the arrays, is not appended. When p_owner is not
-- empty it must hold the run's lease at p_now, or nothing changes. When
-- p_finish is not NULL the run's status becomes p_finish and p_owner's
-- lease is released, in the same statement as the appends.
--
-- The first row (o_ord 0) is the run's lease before the call: o_node its
-- owner, o_at its expiry; no row at all means there is no such run. Then,
-- when the lease allowed the appends, one row per entry (o_ord 1..n): its
-- seq and whether it was appended; for an entry not appended, the stored
-- entry it collided with (node, status, output, error, at), which are NULL
-- for an appended one (the caller has them).
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
    v_start   bigint;
    v_n       integer;
    v_ins     integer;
BEGIN
    PERFORM set_config('kindgi.tenant_id', p_tenant, true);
    SELECT r.lease_owner, r.lease_expires_at, r.last_seq INTO v_owner, v_expires, v_last
        FROM agent_runs r WHERE r.tenant_id = p_tenant AND r.id = p_run FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    o_ord := 0; o_node := v_owner; o_at := v_expires;
    RETURN NEXT;
    v_start := v_last;
    IF p_owner <> '' AND (v_owner <> p_owner OR v_expires IS NULL OR v_expires <= p_now) THEN
        RETURN;
    END IF;
    v_n := coalesce(array_length(p_keys, 1), 0);
    -- One insert for all entries, the i-th numbered v_last + i: an entry
    -- whose (key, phase) is stored, or repeated earlier in the arrays, is
    -- skipped (its number left unused: seq only has to increase).
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
    IF p_finish IS NOT NULL THEN
        UPDATE agent_runs r
            SET last_seq = v_last, status = p_finish, updated_at = p_now,
                lease_owner = CASE WHEN p_owner <> '' THEN '' ELSE r.lease_owner END,
                lease_expires_at = CASE WHEN p_owner <> '' THEN NULL ELSE r.lease_expires_at END
            WHERE r.tenant_id = p_tenant AND r.id = p_run;
    ELSIF v_last <> v_start THEN
        UPDATE agent_runs r SET last_seq = v_last WHERE r.tenant_id = p_tenant AND r.id = p_run;
    END IF;
END
$$;
-- +goose StatementEnd

-- kindgi_append_message appends a message to conversation p_conv as
-- pgstore's AppendMessage does: under the conversation's row lock, numbered
-- with its new message count, unless a message with id p_id is stored
-- already, the conversation is closed, or the message is a user message of
-- a turn number the conversation has. When p_lease_run is not NULL the
-- message is stored only if that run exists and, when p_lease_owner is not
-- empty, p_lease_owner holds its lease at p_now.
--
-- No row means there is no such conversation. Otherwise one row: the
-- conversation's status and turn count before the append, then the message
-- with id p_id: when this call stored it, only its id and seq, with
-- o_appended true (the caller has the rest); when one was stored before,
-- all of it, with o_appended false; NULLs when there is none.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION kindgi_append_message(
    p_tenant text, p_conv text, p_id text, p_role text, p_content text, p_tool_calls text,
    p_tool_call_id text, p_turn integer, p_run_id text, p_metadata text, p_at timestamptz,
    p_participant text, p_lease_run text, p_lease_owner text, p_now timestamptz)
RETURNS TABLE (o_status text, o_turn_count integer,
               o_id text, o_seq bigint, o_role text, o_content text, o_tool_calls jsonb, o_tool_call_id text,
               o_turn_number integer, o_run_id text, o_metadata jsonb, o_created_at timestamptz, o_participant_id text,
               o_appended boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_count integer;
BEGIN
    PERFORM set_config('kindgi.tenant_id', p_tenant, true);
    SELECT c.status, c.turn_count, c.message_count INTO o_status, o_turn_count, v_count
        FROM agent_conversations c WHERE c.tenant_id = p_tenant AND c.id = p_conv FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF o_status = 'open'
       AND NOT (p_role = 'user' AND p_turn > 0 AND o_turn_count >= p_turn)
       AND (p_lease_run IS NULL OR EXISTS (
               SELECT 1 FROM agent_runs r WHERE r.tenant_id = p_tenant AND r.id = p_lease_run
                 AND (p_lease_owner = '' OR (r.lease_owner = p_lease_owner AND r.lease_expires_at > p_now)))) THEN
        INSERT INTO agent_conversation_messages
            (tenant_id, conversation_id, id, seq, role, content, tool_calls, tool_call_id, turn_number, run_id,
             metadata, created_at, participant_id)
            VALUES (p_tenant, p_conv, p_id, v_count + 1, p_role, p_content, p_tool_calls::jsonb, p_tool_call_id, p_turn,
                    p_run_id, p_metadata::jsonb, p_at, p_participant)
            ON CONFLICT (tenant_id, conversation_id, id) DO NOTHING;
        IF FOUND THEN
            UPDATE agent_conversations c
                SET message_count = v_count + 1,
                    turn_count = GREATEST(c.turn_count, p_turn),
                    last_activity_at = GREATEST(c.last_activity_at, p_at)
                WHERE c.tenant_id = p_tenant AND c.id = p_conv;
            o_id := p_id; o_seq := v_count + 1; o_appended := true;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;
    -- Not stored now: the message stored before under this id, if any.
    SELECT m.id, m.seq, m.role, m.content, m.tool_calls, m.tool_call_id, m.turn_number, m.run_id, m.metadata,
           m.created_at, m.participant_id, false
        INTO o_id, o_seq, o_role, o_content, o_tool_calls, o_tool_call_id, o_turn_number, o_run_id, o_metadata,
             o_created_at, o_participant_id, o_appended
        FROM agent_conversation_messages m
        WHERE m.tenant_id = p_tenant AND m.conversation_id = p_conv AND m.id = p_id;
    RETURN NEXT;
END
$$;
-- +goose StatementEnd

-- kindgi_open_run writes run p_run's snapshot (unless one is stored), then
-- creates the run leased to p_owner until p_expires, or takes the lease of
-- the existing run when it is free, expired or p_owner's at p_now — what
-- pgstore's Write and StartRun do, in one statement. One row: o_taken (the
-- lease is p_owner's now), o_created (this call created the run), the run
-- as it is now (taken or not; NULLs when there is none), o_snap_written
-- (this call stored the snapshot: the caller has it) and, when it did not,
-- the snapshot stored before (NULLs when there is none).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION kindgi_open_run(
    p_tenant text, p_run text, p_snap_flow_id text, p_snap_flow_version text, p_agent_id text,
    p_agent_version text, p_conversation_id text, p_project_id text, p_input text, p_snap_created timestamptz,
    p_owner text, p_expires timestamptz, p_now timestamptz, p_flow_id text, p_flow_version text, p_status text)
RETURNS TABLE (o_taken boolean, o_created boolean, o_flow_id text, o_flow_version text, o_status text,
               o_lease_owner text, o_lease_expires_at timestamptz, o_created_at timestamptz, o_updated_at timestamptz,
               o_snap_written boolean, s_flow_id text, s_flow_version text, s_agent_id text, s_agent_version text,
               s_conversation_id text, s_project_id text, s_input jsonb, s_created_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    PERFORM set_config('kindgi.tenant_id', p_tenant, true);
    INSERT INTO agent_run_snapshots
        (tenant_id, run_id, flow_id, flow_version, agent_id, agent_version, conversation_id, project_id, input, created_at)
        VALUES (p_tenant, p_run, p_snap_flow_id, p_snap_flow_version, p_agent_id, p_agent_version, p_conversation_id,
                p_project_id, p_input::jsonb, p_snap_created)
        ON CONFLICT (tenant_id, run_id) DO NOTHING;
    o_snap_written := FOUND;
    IF NOT o_snap_written THEN
        SELECT s.flow_id, s.flow_version, s.agent_id, s.agent_version, s.conversation_id, s.project_id, s.input, s.created_at
            INTO s_flow_id, s_flow_version, s_agent_id, s_agent_version, s_conversation_id, s_project_id, s_input, s_created_at
            FROM agent_run_snapshots s WHERE s.tenant_id = p_tenant AND s.run_id = p_run;
    END IF;
    INSERT INTO agent_runs AS r
        (tenant_id, id, flow_id, flow_version, status, lease_owner, lease_expires_at, created_at, updated_at)
        VALUES (p_tenant, p_run, p_flow_id, p_flow_version, p_status, p_owner, p_expires, p_now, p_now)
        ON CONFLICT (tenant_id, id) DO UPDATE
        SET lease_owner = EXCLUDED.lease_owner, lease_expires_at = EXCLUDED.lease_expires_at, updated_at = EXCLUDED.updated_at
        WHERE r.lease_owner = '' OR r.lease_owner = p_owner OR r.lease_expires_at IS NULL OR r.lease_expires_at <= p_now
        RETURNING r.flow_id, r.flow_version, r.status, r.lease_owner, r.lease_expires_at, r.created_at, r.updated_at, (r.xmax = 0)
        INTO o_flow_id, o_flow_version, o_status, o_lease_owner, o_lease_expires_at, o_created_at, o_updated_at, o_created;
    o_taken := FOUND;
    IF NOT o_taken THEN
        o_created := false;
        SELECT r.flow_id, r.flow_version, r.status, r.lease_owner, r.lease_expires_at, r.created_at, r.updated_at
            INTO o_flow_id, o_flow_version, o_status, o_lease_owner, o_lease_expires_at, o_created_at, o_updated_at
            FROM agent_runs r WHERE r.tenant_id = p_tenant AND r.id = p_run;
    END IF;
    RETURN NEXT;
END
$$;
-- +goose StatementEnd
