-- +goose Up
-- Optimistic open: the checks of a turn's first write as functions, each
-- one statement that sets the tenant and fails the call's transaction with
-- its own SQLSTATE (class KG, not one PostgreSQL uses) instead of a
-- failing cast.

-- kindgi_expect_messages locks conversation p_conv (as the message append
-- after it does) and raises SQLSTATE KG001 unless it holds p_count
-- messages and none with id p_id: the turn's read of it still stands. A
-- missing conversation passes (the append after it reports it).
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
    IF v_count <> p_count OR EXISTS (SELECT 1 FROM agent_conversation_messages m
            WHERE m.tenant_id = p_tenant AND m.conversation_id = p_conv AND m.id = p_id) THEN
        RAISE EXCEPTION 'kindgi: conversation changed at % messages', v_count USING ERRCODE = 'KG001';
    END IF;
END
$$;
-- +goose StatementEnd
