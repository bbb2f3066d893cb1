-- +goose Up
-- kindgi_append_message_step appends the journal entry of the step that
-- stored message p_msg_id of conversation p_conv, and the entries after it,
-- as kindgi_append_steps does (p_finish likewise ends the drive) — but only
-- when that message was stored by the current transaction (the
-- kindgi_append_message call queued before it in the same round trip).
-- The first entry's output is the stored message's encoding with its
-- store-assigned seq: p_prefix || seq || p_suffix (the caller encodes the
-- message with its seq left out, and splits it there). Nothing is stored,
-- and no row returned, when the message was not stored by this transaction
-- (it was refused, or stored before: the caller then writes the entries
-- itself, from the stored message).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION kindgi_append_message_step(
    p_tenant text, p_run text, p_owner text, p_now timestamptz, p_conv text, p_msg_id text,
    p_prefix text, p_suffix text,
    p_keys text[], p_phases text[], p_nodes text[], p_statuses text[],
    p_outputs text[], p_errors text[], p_ats timestamptz[], p_finish text)
RETURNS TABLE (o_ord integer, o_seq bigint, o_appended boolean, o_node text, o_status text,
               o_output jsonb, o_error jsonb, o_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_seq bigint;
BEGIN
    PERFORM set_config('kindgi.tenant_id', p_tenant, true);
    SELECT m.seq INTO v_seq FROM agent_conversation_messages m
        WHERE m.tenant_id = p_tenant AND m.conversation_id = p_conv AND m.id = p_msg_id
          AND m.xmin = pg_current_xact_id()::xid;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    p_outputs[1] := p_prefix || v_seq::text || p_suffix;
    RETURN QUERY SELECT * FROM kindgi_append_steps(p_tenant, p_run, p_owner, p_now, p_keys, p_phases, p_nodes,
        p_statuses, p_outputs, p_errors, p_ats, p_finish);
END
$$;
-- +goose StatementEnd
