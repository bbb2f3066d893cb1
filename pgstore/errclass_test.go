package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

func TestPermanentBySQLState(t *testing.T) {
	for code, want := range map[string]bool{
		"22P05": true, "22021": true, "22003": true, "22001": true, "23505": true, "23503": true, "23514": true,
		"54000": true, "54001": true, "42501": true, "42P01": true, "0A000": true, "21000": true, "44000": true,
		"40001": false, "40P01": false, "57014": false, "57P01": false, "57P02": false, "57P03": false,
		"08006": false, "08003": false, "53300": false, "53200": false, "55P03": false, "25006": false,
		"58030": false, "XX000": false,
	} {
		if got := permanent(fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code})); got != want {
			t.Errorf("permanent(SQLSTATE %s) = %v, want %v", code, got, want)
		}
	}
	for _, err := range []error{io.ErrUnexpectedEOF, errors.New("dial tcp: connection refused"), context.DeadlineExceeded} {
		if permanent(err) {
			t.Errorf("permanent(%v) = true, want false", err)
		}
	}
	// A refusal while the context is done is not final: it may be the
	// cancellation's doing.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := persistErr(ctx, "op", &pgconn.PgError{Code: "22P05"}); !agents.IsRetryable(err) {
		t.Errorf("persistErr with a done context = %v, want retryable", err)
	}
	if err := persistErr(t.Context(), "op", &pgconn.PgError{Code: "22P05"}); agents.IsRetryable(err) || agents.CodeOf(err) != agents.CodePersistence {
		t.Errorf("persistErr(22P05) = %v (retryable %v), want a permanent persistence-error", err, agents.IsRetryable(err))
	}
}

// refusingStore is a Store on a fresh schema where appending a message
// whose content is "raise XXXXX" fails with SQLSTATE XXXXX and one whose
// content is "sleep" sleeps for 30 seconds, raised by a trigger inside
// pgstore's own statement; conversation titles are indexed, so a long one
// is too large for the index. The conversation "conv-1" of tenant is open.
func refusingStore(t *testing.T, tenant string) *Store {
	t.Helper()
	pool, _ := freshSchemaPool(t)
	ctx := t.Context()
	if err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.content LIKE 'raise %' THEN
				RAISE EXCEPTION 'refused by the test' USING ERRCODE = substr(NEW.content, 7, 5);
			ELSIF NEW.content = 'sleep' THEN
				PERFORM pg_sleep(30);
			END IF;
			RETURN NEW;
		END $$`,
		`CREATE TRIGGER test_refuse BEFORE INSERT ON agent_conversation_messages FOR EACH ROW EXECUTE FUNCTION test_refuse()`,
		`CREATE INDEX test_title_idx ON agent_conversations (title)`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	s := New(pool, nil)
	if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: "conv-1", AgentID: "a", AgentVersion: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStorageRefusalsArePermanentAndTransientFailuresRetryable(t *testing.T) {
	const tenant = "tenant-errclass"
	s := refusingStore(t, tenant)
	ctx := t.Context()
	for code, retryable := range map[string]bool{
		"22P05": false, "22021": false, "23505": false, "23514": false, "54000": false, "54001": false, "42501": false,
		"40001": true, "40P01": true, "57014": true, "53300": true, "55P03": true,
	} {
		_, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: tenant, ConversationID: "conv-1", ID: "m-" + code,
			Role: bindings.RoleUser, Content: "raise " + code})
		var pe *agents.PersistenceError
		if !errors.As(err, &pe) {
			t.Fatalf("SQLSTATE %s: got %v, want a *agents.PersistenceError", code, err)
		}
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg.Code != code {
			t.Fatalf("SQLSTATE %s: the cause %v does not carry it", code, err)
		}
		if got := agents.IsRetryable(err); got != retryable {
			t.Errorf("SQLSTATE %s: IsRetryable = %v, want %v (Permanent %v)", code, got, retryable, pe.Permanent)
		}
	}
	ms, err := s.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: tenant, ConversationID: "conv-1", Limit: -1})
	if err != nil || len(ms) != 0 {
		t.Fatalf("after the refusals: %d messages stored (%v), want none", len(ms), err)
	}

	// A real program limit: a title too large for its index (random, so
	// that it does not compress).
	var b [6000]byte
	_, _ = rand.Read(b[:])
	_, err = s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: "conv-long", AgentID: "a", AgentVersion: "1.0.0", Title: hex.EncodeToString(b[:])})
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || pg.Code != "54000" || agents.IsRetryable(err) || agents.CodeOf(err) != agents.CodePersistence {
		t.Fatalf("a title too large for its index: got %v (retryable %v), want a permanent persistence-error with SQLSTATE 54000", err, agents.IsRetryable(err))
	}
}

func TestTerminatedBackendIsRetryable(t *testing.T) {
	const tenant = "tenant-terminate"
	s := refusingStore(t, tenant)
	ctx := t.Context()
	done := make(chan error, 1)
	go func() {
		_, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: tenant, ConversationID: "conv-1", ID: "m1",
			Role: bindings.RoleUser, Content: "sleep"})
		done <- err
	}()
	admin := testPool(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND (query LIKE '%agent_conversation_messages%' OR query LIKE '%kindgi_append_message%') AND wait_event = 'PgSleep'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sleeping append never showed up in pg_stat_activity")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-done:
		if err == nil || !agents.IsRetryable(err) || agents.CodeOf(err) != agents.CodePersistence {
			t.Fatalf("an append whose backend was terminated: got %v (retryable %v), want a retryable persistence-error", err, agents.IsRetryable(err))
		}
		t.Logf("the terminated append failed with: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the append did not return after its backend was terminated")
	}
	// The store keeps working on a new connection.
	if _, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: tenant, ConversationID: "conv-1", ID: "m2", Role: bindings.RoleUser, Content: "hi"}); err != nil {
		t.Fatalf("append after the termination: %v", err)
	}
}

func TestStatementTimeoutIsRetryable(t *testing.T) {
	pool, _ := freshSchemaPool(t)
	ctx := t.Context()
	if err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	s := New(pool, nil)
	// A statement cancelled by the server (57014) through pgstore's batch.
	err := s.batch(ctx, "test timeout", "tenant-timeout", func(b *pgx.Batch) {
		b.Queue(`SET LOCAL statement_timeout = '20ms'`)
		b.Queue(`SELECT pg_sleep(5)`)
	}, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		_, err := br.Exec()
		return err
	})
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || pg.Code != "57014" || !agents.IsRetryable(err) {
		t.Fatalf("a statement timeout: got %v (retryable %v), want a retryable 57014", err, agents.IsRetryable(err))
	}
}
