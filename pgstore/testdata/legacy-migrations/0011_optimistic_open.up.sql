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

-- kindgi_open_new_run is the start of a turn's first write when the turn
-- read that run p_run does not exist (pgstore's ReadTurn): it writes the
-- run's snapshot and creates the run leased to p_owner until p_expires, as
-- kindgi_open_run does for a new run, only if neither is stored, and then
-- checks the conversation as kindgi_expect_messages does. A snapshot or a
-- run stored already (another driver opened it since the read) raises
-- SQLSTATE KG002: the call's transaction stores nothing, and the caller
-- opens the run as an existing one (kindgi_open_run).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION kindgi_open_new_run(
    p_tenant text, p_run text, p_snap_flow_id text, p_snap_flow_version text, p_agent_id text,
    p_agent_version text, p_conversation_id text, p_project_id text, p_input text, p_snap_created timestamptz,
    p_owner text, p_expires timestamptz, p_now timestamptz, p_flow_id text, p_flow_version text, p_status text,
    p_count integer, p_message_id text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('kindgi.tenant_id', p_tenant, true);
    INSERT INTO agent_run_snapshots
        (tenant_id, run_id, flow_id, flow_version, agent_id, agent_version, conversation_id, project_id, input, created_at)
        VALUES (p_tenant, p_run, p_snap_flow_id, p_snap_flow_version, p_agent_id, p_agent_version, p_conversation_id,
                p_project_id, p_input::jsonb, p_snap_created)
        ON CONFLICT (tenant_id, run_id) DO NOTHING;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'kindgi: run % has a snapshot already', p_run USING ERRCODE = 'KG002';
    END IF;
    INSERT INTO agent_runs
        (tenant_id, id, flow_id, flow_version, status, lease_owner, lease_expires_at, created_at, updated_at)
        VALUES (p_tenant, p_run, p_flow_id, p_flow_version, p_status, p_owner, p_expires, p_now, p_now)
        ON CONFLICT (tenant_id, id) DO NOTHING;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'kindgi: run % exists already', p_run USING ERRCODE = 'KG002';
    END IF;
    PERFORM kindgi_expect_messages(p_tenant, p_conversation_id, p_count, p_message_id);
END
$$;
-- +goose StatementEnd
