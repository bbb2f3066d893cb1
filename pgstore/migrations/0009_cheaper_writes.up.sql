-- +goose Up
-- kindgi_message_step (migration 0008) with the bodies of the two
-- kindgi_append_steps calls and the kindgi_append_message call it made
-- written out in it: same arguments, same rows, same effects, but the run
-- is locked and its lease checked once, the run row is updated once, and
-- no nested function call materialises its rows for the caller to copy.
-- Each statement inside costs an executor start; this runs 8 where the
-- nested calls ran 14.
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
    v_owner   text;
    v_expires timestamptz;
    v_start   bigint;
    v_last    bigint;
    v_n       integer;
    v_ins     integer;
    v_count   integer;
BEGIN
    PERFORM set_config('kindgi.tenant_id', p_tenant, true);
    SELECT r.lease_owner, r.lease_expires_at, r.last_seq INTO v_owner, v_expires, v_start
        FROM agent_runs r WHERE r.tenant_id = p_tenant AND r.id = p_run FOR UPDATE;
    IF NOT FOUND THEN
        RETURN; -- no such run: the caller reports it and reads nothing else
    END IF;
    o_part := 1; o_ord := 0; o_node := v_owner; o_at := v_expires;
    RETURN NEXT;
    IF p_owner <> '' AND (v_owner <> p_owner OR v_expires IS NULL OR v_expires <= p_now) THEN
        RETURN; -- the lease is not p_owner's: nothing is stored
    END IF;
    o_node := NULL; o_at := NULL;
    v_last := v_start;

    -- The entries before the message, as kindgi_append_steps appends them.
    v_n := coalesce(array_length(p_h_keys, 1), 0);
    IF v_n > 0 THEN
        RETURN QUERY
        WITH ins AS (
            INSERT INTO agent_run_journal (tenant_id, run_id, seq, key, phase, node, status, output, error, at)
            SELECT p_tenant, p_run, v_last + u.o, u.k, u.ph, u.nd, u.st, u.outp::jsonb, u.err::jsonb, u.a
            FROM unnest(p_h_keys, p_h_phases, p_h_nodes, p_h_statuses, p_h_outputs, p_h_errors, p_h_ats)
                WITH ORDINALITY AS u(k, ph, nd, st, outp, err, a, o)
            ORDER BY u.o
            ON CONFLICT (tenant_id, run_id, key, phase) DO NOTHING
            RETURNING seq
        )
        SELECT 1, (ins.seq - v_last)::integer, ins.seq, true, NULL::text, NULL::text, NULL::jsonb, NULL::jsonb,
            NULL::timestamptz, NULL::text, NULL::integer, NULL::text, NULL::bigint, NULL::text, NULL::text,
            NULL::jsonb, NULL::text, NULL::integer, NULL::text, NULL::jsonb, NULL::timestamptz, NULL::text, NULL::boolean
        FROM ins;
        GET DIAGNOSTICS v_ins = ROW_COUNT;
        IF v_ins < v_n THEN
            RETURN QUERY
            SELECT 1, u.o::integer, j.seq, false, j.node, j.status, j.output, j.error, j.at,
                NULL::text, NULL::integer, NULL::text, NULL::bigint, NULL::text, NULL::text,
                NULL::jsonb, NULL::text, NULL::integer, NULL::text, NULL::jsonb, NULL::timestamptz, NULL::text, NULL::boolean
            FROM unnest(p_h_keys, p_h_phases) WITH ORDINALITY AS u(k, ph, o)
            JOIN agent_run_journal j ON j.tenant_id = p_tenant AND j.run_id = p_run AND j.key = u.k AND j.phase = u.ph
            WHERE j.seq <> v_last + u.o;
        END IF;
        IF v_ins > 0 THEN
            v_last := v_last + v_n;
        END IF;
    END IF;

    -- The message, as kindgi_append_message appends it (the lease was
    -- checked above, under the run's lock, which is still held).
    o_part := 2; o_ord := NULL;
    SELECT c.status, c.turn_count, c.message_count INTO m_status, m_turn_count, v_count
        FROM agent_conversations c WHERE c.tenant_id = p_tenant AND c.id = p_conv FOR UPDATE;
    IF NOT FOUND THEN
        IF v_last <> v_start THEN
            UPDATE agent_runs r SET last_seq = v_last WHERE r.tenant_id = p_tenant AND r.id = p_run;
        END IF;
        RETURN;
    END IF;
    IF m_status = 'open' AND NOT (p_role = 'user' AND p_turn > 0 AND m_turn_count >= p_turn) THEN
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
            m_id := p_id; m_seq := v_count + 1; m_appended := true;
            RETURN NEXT;
            m_status := NULL; m_turn_count := NULL; m_id := NULL; m_seq := NULL; m_appended := NULL;

            -- The message step's entry, its output the stored message with
            -- its seq, and the entries after it; then the run's row.
            p_t_outputs[1] := p_prefix || (v_count + 1)::text || p_suffix;
            o_part := 3; o_ord := 0; o_node := v_owner; o_at := v_expires;
            RETURN NEXT;
            o_node := NULL; o_at := NULL;
            v_n := coalesce(array_length(p_t_keys, 1), 0);
            RETURN QUERY
            WITH ins AS (
                INSERT INTO agent_run_journal (tenant_id, run_id, seq, key, phase, node, status, output, error, at)
                SELECT p_tenant, p_run, v_last + u.o, u.k, u.ph, u.nd, u.st, u.outp::jsonb, u.err::jsonb, u.a
                FROM unnest(p_t_keys, p_t_phases, p_t_nodes, p_t_statuses, p_t_outputs, p_t_errors, p_t_ats)
                    WITH ORDINALITY AS u(k, ph, nd, st, outp, err, a, o)
                ORDER BY u.o
                ON CONFLICT (tenant_id, run_id, key, phase) DO NOTHING
                RETURNING seq
            )
            SELECT 3, (ins.seq - v_last)::integer, ins.seq, true, NULL::text, NULL::text, NULL::jsonb, NULL::jsonb,
                NULL::timestamptz, NULL::text, NULL::integer, NULL::text, NULL::bigint, NULL::text, NULL::text,
                NULL::jsonb, NULL::text, NULL::integer, NULL::text, NULL::jsonb, NULL::timestamptz, NULL::text, NULL::boolean
            FROM ins;
            GET DIAGNOSTICS v_ins = ROW_COUNT;
            IF v_ins < v_n THEN
                RETURN QUERY
                SELECT 3, u.o::integer, j.seq, false, j.node, j.status, j.output, j.error, j.at,
                    NULL::text, NULL::integer, NULL::text, NULL::bigint, NULL::text, NULL::text,
                    NULL::jsonb, NULL::text, NULL::integer, NULL::text, NULL::jsonb, NULL::timestamptz, NULL::text, NULL::boolean
                FROM unnest(p_t_keys, p_t_phases) WITH ORDINALITY AS u(k, ph, o)
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
            RETURN;
        END IF;
    END IF;
    IF v_last <> v_start THEN
        UPDATE agent_runs r SET last_seq = v_last WHERE r.tenant_id = p_tenant AND r.id = p_run;
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
