-- +goose Up
-- kindgi/agents storage, the whole schema in one file: conversations and
-- their messages, run snapshots, runs and their journal, memory facts,
-- approvals and compliance records, the functions that write a turn in
-- few round trips, the triggers that announce run changes to workers, and
-- row-level security.
--
-- Every table is tenant-scoped: tenant_id leads its primary key, and a
-- row-level security policy admits only the rows of the tenant named by
-- the transaction-local setting kindgi.tenant_id, which pgstore sets on
-- every call (SET LOCAL, or set_config(…, true) inside the functions).
-- JSON payloads are {"v": version, "doc": document} envelopes.
--
-- This file is the baseline that replaced thirteen incremental files
-- before the first release. A database those files migrated has version 1
-- recorded already and skips it; pgstore's TestBaselineEqualsLegacySchema
-- proves that the two schemas are the same (pg_dump --schema-only).

-- Status values, checked by domains rather than table CHECKs: a domain's
-- check costs a statement less catalog work than a table's CHECK, which
-- PostgreSQL reads back and const-folds for every INSERT and UPDATE.
CREATE DOMAIN kindgi_run_status AS text
    CONSTRAINT kindgi_run_status_check
    CHECK (VALUE IN ('queued', 'running', 'suspended', 'completed', 'failed'));
CREATE DOMAIN kindgi_conversation_status AS text
    CONSTRAINT kindgi_conversation_status_check
    CHECK (VALUE IN ('open', 'closed'));
CREATE DOMAIN kindgi_journal_status AS text
    CONSTRAINT kindgi_journal_status_check
    CHECK (VALUE IN ('started', 'completed', 'failed', 'parked'));
CREATE DOMAIN kindgi_message_role AS text
    CONSTRAINT kindgi_message_role_check
    CHECK (VALUE IN ('user', 'agent', 'tool', 'system'));

-- Ids and keys (a row's id and its parent's, the journal's step keys, the
-- quotas' names and units) are COLLATE "C": they compare byte-wise, as Go
-- compares strings and memstore orders them, whatever the database's
-- locale, and no index compares them through a locale (3.7% of a turn's
-- backend instructions on a C.UTF-8 database). tenant_id keeps
-- the database's collation: the row-level-security policies name it, and
-- an index compares it mostly with equal strings, which no locale is asked
-- about.

-- Conversations. turn_count and message_count are kept by the functions
-- that append messages; last_activity_at drives auto-close.
CREATE TABLE agent_conversations (
    tenant_id        text        NOT NULL,
    id               text COLLATE "C" NOT NULL,
    project_id       text        NOT NULL DEFAULT '',
    agent_id         text        NOT NULL,
    agent_version    text        NOT NULL,
    title            text        NOT NULL DEFAULT '',
    participant_id   text        NOT NULL DEFAULT '',
    status           kindgi_conversation_status NOT NULL DEFAULT 'open'::text,
    turn_count       integer     NOT NULL DEFAULT 0,
    message_count    integer     NOT NULL DEFAULT 0,
    opened_at        timestamptz NOT NULL,
    last_activity_at timestamptz NOT NULL,
    closed_at        timestamptz,
    PRIMARY KEY (tenant_id, id)
);
-- Keyset paging of a tenant's conversations, newest first.
CREATE INDEX agent_conversations_opened_idx
    ON agent_conversations (tenant_id, opened_at DESC, id DESC);
-- The auto-close sweep: open conversations by last activity, oldest
-- first, under byte-wise collation (Go's string order), read as a keyset.
CREATE INDEX agent_conversations_idle_idx
    ON agent_conversations (last_activity_at, tenant_id COLLATE "C", id COLLATE "C")
    WHERE status = 'open';

-- Messages, numbered 1, 2, … per conversation (seq). No foreign key to
-- agent_conversations, for the journal's reason: the functions that
-- append messages lock the conversation's row first and store nothing in
-- one that is not there. A conversation's messages are deleted with it
-- (agent_conversations_messages_delete).
CREATE TABLE agent_conversation_messages (
    tenant_id       text        NOT NULL,
    conversation_id text COLLATE "C" NOT NULL,
    id              text COLLATE "C" NOT NULL,
    seq             bigint      NOT NULL,
    role            kindgi_message_role NOT NULL,
    content         text        COMPRESSION lz4 NOT NULL DEFAULT '',
    tool_calls      jsonb       COMPRESSION lz4,
    tool_call_id    text        NOT NULL DEFAULT '',
    turn_number     integer     NOT NULL DEFAULT 0,
    run_id          text COLLATE "C" NOT NULL DEFAULT '',
    metadata        jsonb       COMPRESSION lz4,
    created_at      timestamptz NOT NULL,
    participant_id  text        NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, conversation_id, id)
);
CREATE UNIQUE INDEX agent_conversation_messages_seq_idx
    ON agent_conversation_messages (tenant_id, conversation_id, seq);

-- A run's snapshot: what a turn was started with, written once.
CREATE TABLE agent_run_snapshots (
    tenant_id       text        NOT NULL,
    run_id          text COLLATE "C" NOT NULL,
    flow_id         text        NOT NULL,
    flow_version    text        NOT NULL,
    agent_id        text        NOT NULL DEFAULT '',
    agent_version   text        NOT NULL DEFAULT '',
    conversation_id text COLLATE "C" NOT NULL DEFAULT '',
    project_id      text        NOT NULL DEFAULT '',
    input           jsonb       COMPRESSION lz4,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, run_id)
);

-- Runs. lease_owner is '' when no driver holds the run. last_seq is the
-- journal's last entry (the journal version a write as read checks).
-- approvals_total and approvals_pending_until are kept by the trigger on
-- agent_approvals, so a claim tells a decided parked run from a waiting
-- one without reading the approvals.
CREATE TABLE agent_runs (
    tenant_id               text        NOT NULL,
    id                      text COLLATE "C" NOT NULL,
    flow_id                 text        NOT NULL,
    flow_version            text        NOT NULL,
    status                  kindgi_run_status NOT NULL,
    lease_owner             text        NOT NULL DEFAULT '',
    lease_expires_at        timestamptz,
    last_seq                bigint      NOT NULL DEFAULT 0,
    created_at              timestamptz NOT NULL,
    updated_at              timestamptz NOT NULL,
    approvals_total         integer     NOT NULL DEFAULT 0,
    approvals_pending_until timestamptz,
    -- The failed drives of a run that did not end (bindings.RunError,
    -- written by RecordRunError): the last failure's code, message and
    -- time, and how many drives of the run failed, counted here so that
    -- the count holds across every worker. Read only while the run has not
    -- ended: GetRun and ListRuns return no error for an ended run.
    last_error_code         text,
    last_error_message      text,
    last_error_at           timestamptz,
    drive_attempts          integer     NOT NULL DEFAULT 0,
    -- A run waiting on a quota is not claimed before it.
    not_before              timestamptz,
    -- A sub-agent's child run: the run and the step that started it (''
    -- for a top-level run). The functions that create runs take them from
    -- the transaction-local settings kindgi.parent_run_id and
    -- kindgi.parent_step_key, which pgstore sets in front of them for a
    -- child run only.
    parent_run_id           text        NOT NULL DEFAULT COALESCE(current_setting('kindgi.parent_run_id', true), ''),
    parent_step_key         text        NOT NULL DEFAULT COALESCE(current_setting('kindgi.parent_step_key', true), ''),
    -- A parent's child runs, all of them and those not ended (queued,
    -- running, suspended), kept by the triggers on its children, so a
    -- claim tells a parent whose children ended from a waiting one without
    -- reading them (a worker's claim across tenants could not: it sees no
    -- ended run).
    children_total          integer     NOT NULL DEFAULT 0,
    children_active         integer     NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, id)
);
-- Keyset paging of a tenant's runs, newest first.
CREATE INDEX agent_runs_created_idx
    ON agent_runs (tenant_id, created_at DESC, id COLLATE "C" DESC);
-- Retention: ended runs by age.
CREATE INDEX agent_runs_prune_idx
    ON agent_runs (tenant_id, updated_at, id) WHERE status <> 'running';
-- Claims: runs that may need a driver, oldest first, across tenants.
CREATE INDEX agent_runs_claim_idx
    ON agent_runs (created_at, tenant_id COLLATE "C", id COLLATE "C")
    WHERE status IN ('queued', 'running', 'suspended');
-- A run's children: ListRuns by parent (keyset, newest first). Top-level
-- runs are not in it.
CREATE INDEX agent_runs_parent_idx
    ON agent_runs (tenant_id, parent_run_id, created_at DESC, id COLLATE "C" DESC)
    WHERE parent_run_id <> '';

-- The journal: one row per step phase (started, parked, result), in
-- append order (seq). It has no foreign key to agent_runs: the functions
-- that append entries lock the run's row first and store nothing for a
-- run that is not there, and a key's check would cost every entry a
-- lookup of its run (an eighth of a turn's backend instructions). A run's
-- entries are deleted with it (agent_runs_journal_delete).
CREATE TABLE agent_run_journal (
    tenant_id text        NOT NULL,
    run_id    text COLLATE "C" NOT NULL,
    seq       bigint      NOT NULL,
    key       text COLLATE "C" NOT NULL,
    phase     text COLLATE "C" NOT NULL,
    node      text        NOT NULL DEFAULT '',
    status    kindgi_journal_status NOT NULL,
    output    jsonb       COMPRESSION lz4,
    error     jsonb       COMPRESSION lz4,
    at        timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, run_id, seq)
);
-- A step phase is written once: a second append of it is idempotent.
CREATE UNIQUE INDEX agent_run_journal_step_idx
    ON agent_run_journal (tenant_id, run_id, key, phase);

-- Memory facts, searched by text (search) or by embedding.
CREATE TABLE agent_memory_facts (
    tenant_id       text        NOT NULL,
    id              text COLLATE "C" NOT NULL,
    type            text        NOT NULL,
    project_id      text        NOT NULL DEFAULT '',
    conversation_id text COLLATE "C" NOT NULL DEFAULT '',
    text            text        NOT NULL DEFAULT '',
    data            jsonb,
    embedding       real[],
    embedding_norm  double precision,
    search          tsvector    NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX agent_memory_facts_search_idx
    ON agent_memory_facts USING gin (search);
CREATE INDEX agent_memory_facts_type_idx
    ON agent_memory_facts (tenant_id, type, created_at DESC, id);

-- Approvals of gated tool calls.
CREATE TABLE agent_approvals (
    tenant_id       text        NOT NULL,
    id              text COLLATE "C" NOT NULL,
    run_id          text COLLATE "C" NOT NULL DEFAULT '',
    conversation_id text COLLATE "C" NOT NULL DEFAULT '',
    tool_call_id    text        NOT NULL DEFAULT '',
    tool_id         text        NOT NULL DEFAULT '',
    tool_version    text        NOT NULL DEFAULT '',
    arguments       jsonb,
    reviewer_role   text        NOT NULL DEFAULT '',
    reason          text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz,
    status          text        NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
    reviewer        text        NOT NULL DEFAULT '',
    comment         text        NOT NULL DEFAULT '',
    resolved_at     timestamptz,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX agent_approvals_run_idx ON agent_approvals (tenant_id, run_id);
-- The expiry sweep: pending approvals by expiry, across tenants.
CREATE INDEX agent_approvals_expiry_idx
    ON agent_approvals (expires_at, tenant_id COLLATE "C", id COLLATE "C")
    WHERE status = 'pending' AND expires_at IS NOT NULL;

-- Compliance records of guardrail evaluations, listed as a keyset in the
-- order (evaluated_at, run_id, key) under byte-wise collation.
CREATE TABLE agent_compliance_records (
    tenant_id       text        NOT NULL,
    run_id          text COLLATE "C" NOT NULL,
    key             text COLLATE "C" NOT NULL,
    conversation_id text COLLATE "C" NOT NULL DEFAULT '',
    turn_number     integer     NOT NULL DEFAULT 0,
    agent_id        text        NOT NULL DEFAULT '',
    agent_version   text        NOT NULL DEFAULT '',
    guardrail_id    text        NOT NULL,
    check_id        text        NOT NULL DEFAULT '',
    kind            text        NOT NULL DEFAULT '',
    action          text        NOT NULL DEFAULT '',
    passed          boolean     NOT NULL,
    reason          text        NOT NULL DEFAULT '',
    judge_response  text        NOT NULL DEFAULT '',
    evaluated_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, run_id, key)
);
CREATE INDEX agent_compliance_records_list_idx
    ON agent_compliance_records (tenant_id, evaluated_at, run_id COLLATE "C", key COLLATE "C");

-- Tenant quotas (bindings.QuotaCounter): each quota as its last take
-- defined it, whose row a take locks (so the takes of one quota are one
-- at a time), and the units counted, one row per (quota, unit): a unit
-- counted once is never counted again.
CREATE TABLE agent_quotas (
    tenant_id      text             NOT NULL,
    name           text COLLATE "C" NOT NULL,
    scope          text             NOT NULL,
    tool_id        text             NOT NULL DEFAULT '',
    quota_limit    double precision NOT NULL,
    window_seconds bigint           NOT NULL,
    on_exceeded    text             NOT NULL DEFAULT '',
    updated_at     timestamptz      NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
CREATE TABLE agent_quota_units (
    tenant_id text             NOT NULL,
    quota     text COLLATE "C" NOT NULL,
    unit      text COLLATE "C" NOT NULL,
    at        timestamptz      NOT NULL,
    amount    double precision NOT NULL,
    PRIMARY KEY (tenant_id, quota, unit)
);
-- A quota's window: its units by time.
CREATE INDEX agent_quota_units_at_idx ON agent_quota_units (tenant_id, quota, at);

-- Notifications: every run change a worker may act on is announced on the
-- channel kindgi_runs as "tenant\trun\tstatus\tclaimable" (pgstore's
-- RunWatcher and the worker's wake-up). An approval decided makes its run
-- claimable, and so does a child run that ended (announced for the
-- parent, with no status).
-- +goose StatementBegin
CREATE FUNCTION kindgi_notify_run() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('kindgi_runs', NEW.tenant_id || E'\t' || NEW.id || E'\t' || NEW.status || E'\t' ||
        CASE WHEN NEW.lease_owner = '' AND NEW.status IN ('queued', 'running') THEN 'claimable' ELSE '' END);
    IF NEW.parent_run_id <> '' AND NEW.status IN ('completed', 'failed') THEN
        PERFORM pg_notify('kindgi_runs', NEW.tenant_id || E'\t' || NEW.parent_run_id || E'\t' || E'\t' || 'claimable');
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION kindgi_notify_approval() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('kindgi_runs', NEW.tenant_id || E'\t' || NEW.run_id || E'\t' || E'\t' || 'claimable');
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER agent_runs_notify_insert AFTER INSERT ON agent_runs
    FOR EACH ROW EXECUTE FUNCTION kindgi_notify_run();
-- Only updates that set status or lease_owner: the journal appends, which
-- move last_seq only, do not read the WHEN clause.
CREATE TRIGGER agent_runs_notify_update AFTER UPDATE OF status, lease_owner ON agent_runs
    FOR EACH ROW
    WHEN (new.status::text IS DISTINCT FROM old.status::text
          OR (new.lease_owner = '' AND old.lease_owner <> ''))
    EXECUTE FUNCTION kindgi_notify_run();
CREATE TRIGGER agent_approvals_notify AFTER UPDATE ON agent_approvals
    FOR EACH ROW
    WHEN (old.status = 'pending' AND new.status IN ('approved', 'denied'))
    EXECUTE FUNCTION kindgi_notify_approval();

-- A run's approvals summary (agent_runs.approvals_total,
-- approvals_pending_until), kept as approvals change.
-- +goose StatementBegin
CREATE FUNCTION kindgi_run_approvals() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE TRIGGER agent_approvals_run_state
    AFTER INSERT OR DELETE OR UPDATE OF status, expires_at, run_id ON agent_approvals
    FOR EACH ROW EXECUTE FUNCTION kindgi_run_approvals();

-- A parent's children counts (agent_runs.children_total,
-- children_active), moved by each child run created, changing status or
-- deleted. Counted by difference, so that it holds whatever the
-- transaction may see (a worker's claim sees no ended run). A child
-- counts once its parent's row exists (the turn creates the parent
-- first).
-- +goose StatementBegin
CREATE FUNCTION kindgi_run_children() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    t text;
    p text;
    d_total integer := 0;
    d_active integer := 0;
BEGIN
    IF TG_OP = 'INSERT' THEN
        t := NEW.tenant_id; p := NEW.parent_run_id; d_total := 1;
        d_active := (NEW.status IN ('queued', 'running', 'suspended'))::integer;
    ELSIF TG_OP = 'DELETE' THEN
        t := OLD.tenant_id; p := OLD.parent_run_id; d_total := -1;
        d_active := -(OLD.status IN ('queued', 'running', 'suspended'))::integer;
    ELSE
        t := NEW.tenant_id; p := NEW.parent_run_id;
        d_active := (NEW.status IN ('queued', 'running', 'suspended'))::integer
            - (OLD.status IN ('queued', 'running', 'suspended'))::integer;
    END IF;
    IF d_total <> 0 OR d_active <> 0 THEN
        UPDATE agent_runs ru
        SET children_total = ru.children_total + d_total, children_active = ru.children_active + d_active
        WHERE ru.tenant_id = t AND ru.id = p;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER agent_runs_children_insert AFTER INSERT ON agent_runs
    FOR EACH ROW WHEN (new.parent_run_id <> '')
    EXECUTE FUNCTION kindgi_run_children();
CREATE TRIGGER agent_runs_children_update AFTER UPDATE OF status ON agent_runs
    FOR EACH ROW WHEN (new.parent_run_id <> '' AND new.status::text IS DISTINCT FROM old.status::text)
    EXECUTE FUNCTION kindgi_run_children();
CREATE TRIGGER agent_runs_children_delete AFTER DELETE ON agent_runs
    FOR EACH ROW WHEN (old.parent_run_id <> '')
    EXECUTE FUNCTION kindgi_run_children();

-- The rows appended to a deleted run (its journal) or conversation (its
-- messages) go with it, once per deleting statement, under the deleter's
-- tenant (who could delete the parents). Prune deletes a run's entries
-- itself, in the statement that deletes the runs, to count them.
-- +goose StatementBegin
CREATE FUNCTION kindgi_delete_appended() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_TABLE_NAME = 'agent_runs' THEN
        DELETE FROM agent_run_journal j USING gone g WHERE j.tenant_id = g.tenant_id AND j.run_id = g.id;
    ELSE
        DELETE FROM agent_conversation_messages m USING gone g
            WHERE m.tenant_id = g.tenant_id AND m.conversation_id = g.id;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER agent_runs_journal_delete AFTER DELETE ON agent_runs
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION kindgi_delete_appended();
CREATE TRIGGER agent_conversations_messages_delete AFTER DELETE ON agent_conversations
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION kindgi_delete_appended();

-- The functions a turn writes through, each one round trip (see pgstore's
-- package doc for what each statement of a turn sends).
--
-- kindgi_append_message appends a message under the conversation's row
-- lock, at most once per id, optionally only while a run's lease is held.
-- +goose StatementBegin
CREATE FUNCTION kindgi_append_message(p_tenant text, p_conv text, p_id text, p_role text, p_content text, p_tool_calls text, p_tool_call_id text, p_turn integer, p_run_id text, p_metadata text, p_at timestamp with time zone, p_participant text, p_lease_run text, p_lease_owner text, p_now timestamp with time zone) RETURNS TABLE(o_status text, o_turn_count integer, o_id text, o_seq bigint, o_role text, o_content text, o_tool_calls jsonb, o_tool_call_id text, o_turn_number integer, o_run_id text, o_metadata jsonb, o_created_at timestamp with time zone, o_participant_id text, o_appended boolean)
    LANGUAGE plpgsql
    AS $$
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

-- kindgi_append_steps appends journal entries idempotently (a phase
-- already stored is returned as stored), only under p_owner's unexpired
-- lease, and with p_finish ends the run and releases the lease in the
-- same statement.
-- +goose StatementBegin
CREATE FUNCTION kindgi_append_steps(p_tenant text, p_run text, p_owner text, p_now timestamp with time zone, p_keys text[], p_phases text[], p_nodes text[], p_statuses text[], p_outputs text[], p_errors text[], p_ats timestamp with time zone[], p_finish text) RETURNS TABLE(o_ord integer, o_seq bigint, o_appended boolean, o_node text, o_status text, o_output jsonb, o_error jsonb, o_at timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
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

-- kindgi_expect_messages raises KG001 unless the conversation holds
-- exactly p_count messages and none with id p_id (the optimistic open's
-- check that nothing was appended since it read).
-- +goose StatementBegin
CREATE FUNCTION kindgi_expect_messages(p_tenant text, p_conv text, p_count integer, p_id text) RETURNS void
    LANGUAGE plpgsql
    AS $$
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

-- kindgi_lease_as_read takes a run's lease only when its status, lease
-- and journal version are still as read (KG003 otherwise).
-- +goose StatementBegin
CREATE FUNCTION kindgi_lease_as_read(p_tenant text, p_run text, p_owner text, p_expires timestamp with time zone, p_now timestamp with time zone, p_status text, p_lease_owner text, p_lease_expires timestamp with time zone, p_last_seq bigint) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM set_config('kindgi.tenant_id', p_tenant, true);
    UPDATE agent_runs r SET lease_owner = p_owner, lease_expires_at = p_expires, updated_at = p_now
        WHERE r.tenant_id = p_tenant AND r.id = p_run
          AND r.status = p_status AND r.last_seq = p_last_seq AND r.lease_owner = p_lease_owner
          AND (p_lease_owner = '' OR r.lease_expires_at IS NOT DISTINCT FROM p_lease_expires)
          AND (r.lease_owner = '' OR r.lease_owner = p_owner OR r.lease_expires_at IS NULL OR r.lease_expires_at <= p_now);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'kindgi: run % changed since it was read', p_run USING ERRCODE = 'KG003';
    END IF;
END
$$;
-- +goose StatementEnd

-- kindgi_message_step writes a journal step, its message and the entries
-- after it in one statement: the entries before (p_h_*), the message
-- (content between p_prefix and p_suffix in the step's output), the
-- entries after (p_t_*), and optionally the run's end (p_finish).
-- +goose StatementBegin
CREATE FUNCTION kindgi_message_step(p_tenant text, p_run text, p_owner text, p_now timestamp with time zone, p_h_keys text[], p_h_phases text[], p_h_nodes text[], p_h_statuses text[], p_h_outputs text[], p_h_errors text[], p_h_ats timestamp with time zone[], p_conv text, p_id text, p_role text, p_content text, p_tool_calls text, p_tool_call_id text, p_turn integer, p_run_id text, p_metadata text, p_at timestamp with time zone, p_participant text, p_prefix text, p_suffix text, p_t_keys text[], p_t_phases text[], p_t_nodes text[], p_t_statuses text[], p_t_outputs text[], p_t_errors text[], p_t_ats timestamp with time zone[], p_finish text) RETURNS TABLE(o_part integer, o_ord integer, o_seq bigint, o_appended boolean, o_node text, o_status text, o_output jsonb, o_error jsonb, o_at timestamp with time zone, m_status text, m_turn_count integer, m_id text, m_seq bigint, m_role text, m_content text, m_tool_calls jsonb, m_tool_call_id text, m_turn_number integer, m_run_id text, m_metadata jsonb, m_created_at timestamp with time zone, m_participant_id text, m_appended boolean)
    LANGUAGE plpgsql
    AS $$
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

-- kindgi_open_run writes a run's snapshot (once) and creates or leases the
-- run in one statement, returning what was stored before when the run
-- existed.
-- +goose StatementBegin
CREATE FUNCTION kindgi_open_run(p_tenant text, p_run text, p_snap_flow_id text, p_snap_flow_version text, p_agent_id text, p_agent_version text, p_conversation_id text, p_project_id text, p_input text, p_snap_created timestamp with time zone, p_owner text, p_expires timestamp with time zone, p_now timestamp with time zone, p_flow_id text, p_flow_version text, p_status text) RETURNS TABLE(o_taken boolean, o_created boolean, o_flow_id text, o_flow_version text, o_status text, o_lease_owner text, o_lease_expires_at timestamp with time zone, o_created_at timestamp with time zone, o_updated_at timestamp with time zone, o_snap_written boolean, s_flow_id text, s_flow_version text, s_agent_id text, s_agent_version text, s_conversation_id text, s_project_id text, s_input jsonb, s_created_at timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
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

-- kindgi_open_new_run is the optimistic open of a new run: snapshot and
-- run both new (KG002 otherwise), and the conversation as read.
-- +goose StatementBegin
CREATE FUNCTION kindgi_open_new_run(p_tenant text, p_run text, p_snap_flow_id text, p_snap_flow_version text, p_agent_id text, p_agent_version text, p_conversation_id text, p_project_id text, p_input text, p_snap_created timestamp with time zone, p_owner text, p_expires timestamp with time zone, p_now timestamp with time zone, p_flow_id text, p_flow_version text, p_status text, p_count integer, p_message_id text) RETURNS void
    LANGUAGE plpgsql
    AS $$
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

-- Row-level security. FORCE applies the policies to the tables' owner
-- too, so the role that migrates and runs pgstore is held to them.
ALTER TABLE agent_conversations ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_conversations FORCE ROW LEVEL SECURITY;
ALTER TABLE agent_conversation_messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_conversation_messages FORCE ROW LEVEL SECURITY;
ALTER TABLE agent_run_snapshots ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_run_snapshots FORCE ROW LEVEL SECURITY;
ALTER TABLE agent_runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_runs FORCE ROW LEVEL SECURITY;
ALTER TABLE agent_run_journal ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_run_journal FORCE ROW LEVEL SECURITY;
ALTER TABLE agent_memory_facts ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_memory_facts FORCE ROW LEVEL SECURITY;
ALTER TABLE agent_approvals ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_approvals FORCE ROW LEVEL SECURITY;
ALTER TABLE agent_compliance_records ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_compliance_records FORCE ROW LEVEL SECURITY;
ALTER TABLE agent_quotas ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_quotas FORCE ROW LEVEL SECURITY;
ALTER TABLE agent_quota_units ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_quota_units FORCE ROW LEVEL SECURITY;

CREATE POLICY agent_tenant_isolation ON agent_conversations
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));
CREATE POLICY agent_tenant_isolation ON agent_conversation_messages
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));
CREATE POLICY agent_tenant_isolation ON agent_run_snapshots
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));
CREATE POLICY agent_tenant_isolation ON agent_run_journal
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));
CREATE POLICY agent_tenant_isolation ON agent_memory_facts
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));
CREATE POLICY agent_tenant_isolation ON agent_approvals
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));
CREATE POLICY agent_tenant_isolation ON agent_compliance_records
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));
CREATE POLICY agent_tenant_isolation ON agent_quotas
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));
CREATE POLICY agent_tenant_isolation ON agent_quota_units
    USING (tenant_id = current_setting('kindgi.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));

-- Reading across tenants: the sweeps (expired approvals, inactive
-- conversations) and the workers' claim. Each is open only to members of
-- a NOLOGIN role with no rights of its own, and only in a transaction
-- that set a transaction-local switch (kindgi.sweep, kindgi.claim), which
-- pgstore sets for the one statement that needs it and a tenant-scoped
-- call never sets. Operators grant the roles to their workers' login role
-- with inheritance (the default):
--
--     GRANT kindgi_sweeper, kindgi_worker TO worker_role;
--
-- A policy's TO list and pg_has_role(…, 'USAGE') match the privileges
-- current_user inherits, so a grant WITH INHERIT FALSE admits nothing.
-- The sweep policies are FOR SELECT: everything done to what they find
-- goes through tenant-scoped calls. The claim returns references and
-- leases only.
--
-- The roles are created here when missing. When the migrating role may
-- not create roles and a role does not exist yet, a NOTICE says so and
-- the policies that name it are left out: the sweeps then see no other
-- tenant's rows, or the claim claims nothing across tenants, until an
-- administrator creates the role (`CREATE ROLE kindgi_sweeper NOLOGIN`,
-- `CREATE ROLE kindgi_worker NOLOGIN`) and runs this block again by hand
-- (it may be repeated).
-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kindgi_sweeper') THEN
        BEGIN
            CREATE ROLE kindgi_sweeper NOLOGIN;
        EXCEPTION
            -- Another database's migration created it meanwhile.
            WHEN duplicate_object OR unique_violation THEN NULL;
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'kindgi: cannot create role kindgi_sweeper (%); the sweeps will see no tenant''s rows until it exists and this block runs again', SQLERRM;
        END;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kindgi_worker') THEN
        BEGIN
            CREATE ROLE kindgi_worker NOLOGIN;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN NULL;
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'kindgi: cannot create role kindgi_worker (%); workers will claim no runs across tenants until it exists and this block runs again', SQLERRM;
        END;
    END IF;

    DROP POLICY IF EXISTS agent_expiry_sweep ON agent_approvals;
    DROP POLICY IF EXISTS agent_expiry_sweep ON agent_runs;
    DROP POLICY IF EXISTS agent_idle_sweep ON agent_conversations;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kindgi_sweeper') THEN
        CREATE POLICY agent_expiry_sweep ON agent_approvals FOR SELECT TO kindgi_sweeper
            USING (current_setting('kindgi.sweep', true) = 'expired-approvals'
                   AND status = 'pending' AND expires_at IS NOT NULL);
        CREATE POLICY agent_expiry_sweep ON agent_runs FOR SELECT TO kindgi_sweeper
            USING (current_setting('kindgi.sweep', true) = 'expired-approvals'
                   AND status = 'suspended');
        CREATE POLICY agent_idle_sweep ON agent_conversations FOR SELECT TO kindgi_sweeper
            USING (current_setting('kindgi.sweep', true) = 'inactive-conversations'
                   AND status = 'open');
    END IF;

    -- The runs' tenant isolation, with the worker's claim when the role
    -- exists (pg_has_role fails on a role that does not).
    DROP POLICY IF EXISTS agent_tenant_isolation ON agent_runs;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kindgi_worker') THEN
        CREATE POLICY agent_tenant_isolation ON agent_runs
            USING (tenant_id = current_setting('kindgi.tenant_id', true)
                   OR (current_setting('kindgi.claim', true) = 'runs'
                       AND status IN ('queued', 'running', 'suspended')
                       AND pg_has_role('kindgi_worker', 'USAGE')))
            WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true)
                   OR (current_setting('kindgi.claim', true) = 'runs'
                       AND status IN ('queued', 'running', 'suspended')
                       AND pg_has_role('kindgi_worker', 'USAGE')));
    ELSE
        CREATE POLICY agent_tenant_isolation ON agent_runs
            USING (tenant_id = current_setting('kindgi.tenant_id', true))
            WITH CHECK (tenant_id = current_setting('kindgi.tenant_id', true));
    END IF;
END
$$;
-- +goose StatementEnd
