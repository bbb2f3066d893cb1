-- +goose Up
-- kindgi_message_step is pgstore's AppendMessageStep in one statement:
-- kindgi_append_steps of the entries before the message (p_h_*), then
-- kindgi_append_message of the message, then — only when that call stored
-- the message — kindgi_append_steps of the message step's entry and the
-- entries after it (p_t_*; p_finish ends the drive as there), the step's
-- output being the stored message's encoding with its store-assigned seq:
-- p_prefix || seq || p_suffix (the caller encodes the message with its seq
-- left out, and splits it there). One transaction, one executor start,
-- instead of three statements.
--
-- Rows: o_part 1 are kindgi_append_steps's rows for the entries before;
-- o_part 2 is kindgi_append_message's row (m_* columns; absent when there
-- is no such conversation); o_part 3 are kindgi_append_steps's rows for
-- the step and the entries after it, absent when the message was not
-- stored by this call (refused, or stored before: the caller then writes
-- those entries itself, from the stored message).
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
    v_m record;
BEGIN
    RETURN QUERY SELECT 1, s.o_ord, s.o_seq, s.o_appended, s.o_node, s.o_status, s.o_output, s.o_error, s.o_at,
        NULL::text, NULL::integer, NULL::text, NULL::bigint, NULL::text, NULL::text, NULL::jsonb, NULL::text,
        NULL::integer, NULL::text, NULL::jsonb, NULL::timestamptz, NULL::text, NULL::boolean
        FROM kindgi_append_steps(p_tenant, p_run, p_owner, p_now, p_h_keys, p_h_phases, p_h_nodes, p_h_statuses,
            p_h_outputs, p_h_errors, p_h_ats, NULL) s;
    SELECT * INTO v_m FROM kindgi_append_message(p_tenant, p_conv, p_id, p_role, p_content, p_tool_calls,
        p_tool_call_id, p_turn, p_run_id, p_metadata, p_at, p_participant, p_run, p_owner, p_now);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    o_part := 2; o_ord := NULL; o_seq := NULL; o_appended := NULL; o_node := NULL; o_status := NULL;
    o_output := NULL; o_error := NULL; o_at := NULL;
    m_status := v_m.o_status; m_turn_count := v_m.o_turn_count; m_id := v_m.o_id; m_seq := v_m.o_seq;
    m_role := v_m.o_role; m_content := v_m.o_content; m_tool_calls := v_m.o_tool_calls;
    m_tool_call_id := v_m.o_tool_call_id; m_turn_number := v_m.o_turn_number; m_run_id := v_m.o_run_id;
    m_metadata := v_m.o_metadata; m_created_at := v_m.o_created_at; m_participant_id := v_m.o_participant_id;
    m_appended := v_m.o_appended;
    RETURN NEXT;
    IF v_m.o_appended IS NOT TRUE THEN
        RETURN;
    END IF;
    p_t_outputs[1] := p_prefix || v_m.o_seq::text || p_suffix;
    RETURN QUERY SELECT 3, s.o_ord, s.o_seq, s.o_appended, s.o_node, s.o_status, s.o_output, s.o_error, s.o_at,
        NULL::text, NULL::integer, NULL::text, NULL::bigint, NULL::text, NULL::text, NULL::jsonb, NULL::text,
        NULL::integer, NULL::text, NULL::jsonb, NULL::timestamptz, NULL::text, NULL::boolean
        FROM kindgi_append_steps(p_tenant, p_run, p_owner, p_now, p_t_keys, p_t_phases, p_t_nodes, p_t_statuses,
            p_t_outputs, p_t_errors, p_t_ats, p_finish) s;
END
$$;
-- +goose StatementEnd
