package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestExpectMessagesLooksUpByPrimaryKey checks with auto_explain that
// kindgi_expect_messages finds a stored message id through the primary
// key, in the plan it caches after its first executions, on tables never
// analyzed (a fresh deployment's): the conversation's other messages are
// not read, however many it holds. Skipped where auto_explain cannot be
// loaded.
func TestExpectMessagesLooksUpByPrimaryKey(t *testing.T) {
	_, schema := freshSchemaPool(t)
	ctx := t.Context()
	cfg := testEnv.config.ConnConfig.Copy()
	cfg.RuntimeParams["search_path"] = schema
	var plans []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if strings.Contains(n.Message, "agent_conversation_messages m") {
			plans = append(plans, n.Message)
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := Migrate(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `
		INSERT INTO agent_conversations (tenant_id, id, agent_id, agent_version, opened_at, last_activity_at, message_count)
			VALUES ('t1', 'c1', 'a', '1', now(), now(), 500);
		INSERT INTO agent_conversation_messages (tenant_id, conversation_id, id, seq, role, created_at)
			SELECT 't1', 'c1', 'm' || g, g, 'user', now() FROM generate_series(1, 500) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "LOAD 'auto_explain'"); err != nil {
		t.Skipf("auto_explain: %v", err)
	}
	if _, err := conn.Exec(ctx, `SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;
		SET auto_explain.log_level = notice; SET client_min_messages = notice`); err != nil {
		t.Fatal(err)
	}
	// Past the plan cache's first five custom plans: the generic plan.
	for i := range 8 {
		if _, err := conn.Exec(ctx, "SELECT kindgi_expect_messages('t1', 'c1', 500, $1)", "new-"+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	_, err = conn.Exec(ctx, "SELECT kindgi_expect_messages('t1', 'c1', 500, 'm250')")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != codeConversationChanged {
		t.Errorf("a stored id: err %v, want SQLSTATE %s", err, codeConversationChanged)
	}
	if len(plans) != 9 {
		t.Fatalf("%d plans of the message lookup logged, want 9:\n%s", len(plans), strings.Join(plans, "\n"))
	}
	for i, p := range plans {
		if !strings.Contains(p, "using agent_conversation_messages_pkey") || strings.Contains(p, "Filter") {
			t.Errorf("execution %d: the lookup does not go by the primary key alone:\n%s", i+1, p)
		}
	}
}
