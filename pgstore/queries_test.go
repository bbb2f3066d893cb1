package pgstore

import (
	"encoding/json"
	"math"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// planNode is the part of EXPLAIN (FORMAT JSON) the tests read.
type planNode struct {
	NodeType   string     `json:"Node Type"`
	Direction  string     `json:"Scan Direction"`
	IndexName  string     `json:"Index Name"`
	ActualRows float64    `json:"Actual Rows"`
	Plans      []planNode `json:"Plans"`
}

func (n planNode) walk(fn func(planNode)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}

// TestReadLastMessagesUsesTheSeqIndex checks with EXPLAIN ANALYZE that
// reading the last 20 messages of a 5,000-message conversation walks
// agent_conversation_messages_seq_idx backwards and reads 20 rows, with the
// custom and the generic plan of the prepared statement alike.
func TestReadLastMessagesUsesTheSeqIndex(t *testing.T) {
	pool := testPool(t)
	ctx := t.Context()
	tenant := "explain-" + randomID()
	s := New(pool, nil)
	if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: "long", AgentID: "a", AgentVersion: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	// Another conversation of the same tenant, so the index must also
	// separate conversations.
	if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: "other", AgentID: "a", AgentVersion: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	_, err := pool.Exec(ctx, `INSERT INTO agent_conversation_messages (tenant_id, conversation_id, id, seq, role, content, created_at)
		SELECT $1, c, c || '-' || g, g, 'user', 'message ' || g, now()
		FROM generate_series(1, 5000) AS g, unnest(ARRAY['long', 'other']) AS c`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE agent_conversation_messages`); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		t.Run(mode, func(t *testing.T) {
			for _, before := range []int64{math.MaxInt64, 2500} {
				plan := explainAnalyze(t, pool, mode, sqlReadMessages, tenant, "long", before, int64(20))
				var usesIndex, sorts bool
				plan.walk(func(n planNode) {
					if n.IndexName == "agent_conversation_messages_seq_idx" && n.Direction == "Backward" {
						usesIndex = true
						if n.ActualRows != 20 {
							t.Errorf("before %d: index scan read %v rows, want 20", before, n.ActualRows)
						}
					}
					if n.NodeType == "Sort" {
						sorts = true
					}
				})
				if !usesIndex || sorts {
					t.Errorf("before %d: plan does not walk the seq index backwards without sorting: %+v", before, plan)
				}
			}
		})
	}
	msgs, err := s.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: tenant, ConversationID: "long", Limit: 3, BeforeSeq: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 || msgs[0].Seq != 97 || msgs[2].Seq != 99 {
		t.Fatalf("ReadMessages before 100: %+v", msgs)
	}
}

func explainAnalyze(t *testing.T, pool *pgxpool.Pool, planCacheMode, sql string, args ...any) planNode {
	t.Helper()
	ctx := t.Context()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+planCacheMode); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var out []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
		t.Fatalf("EXPLAIN output %s: %v", raw, err)
	}
	return out[0].Plan
}

// TestTenantSettingIsTransactionLocal checks that the tenant a call sets
// does not outlive the call's transaction on the pooled connection.
func TestTenantSettingIsTransactionLocal(t *testing.T) {
	pool := oneConnPool(t)
	s := New(pool, nil)
	if _, err := s.GetConversation(t.Context(), "tenant-local", "missing"); agents.CodeOf(err) != agents.CodeConversationNotFound {
		t.Fatalf("GetConversation: %v", err)
	}
	wantSettingUnset(t, pool, "kindgi.tenant_id")
}

// oneConnPool is a pool of one connection to the test database, so that
// a call and the statement after it share the session.
func oneConnPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	testPool(t)
	cfg := testEnv.config.Copy()
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// wantSettingUnset fails t unless the setting name is unset or empty in
// pool's session: a call's transaction-local setting did not outlive it.
func wantSettingUnset(t *testing.T, pool *pgxpool.Pool, name string) {
	t.Helper()
	var setting *string
	if err := pool.QueryRow(t.Context(), `SELECT current_setting($1, true)`, name).Scan(&setting); err != nil {
		t.Fatal(err)
	}
	if setting != nil && *setting != "" {
		t.Fatalf("%s = %q after the call, want it unset", name, *setting)
	}
}

// TestStoreOverATransaction hands New a pgx.Tx: the Store's writes are part
// of it and vanish on rollback.
func TestStoreOverATransaction(t *testing.T) {
	pool := testPool(t)
	ctx := t.Context()
	tenant := "tx-" + randomID()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := New(tx, nil)
	if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: "c1", AgentID: "a", AgentVersion: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: tenant, ConversationID: "c1", Role: bindings.RoleUser, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.GetConversation(ctx, tenant, "c1"); err != nil || c.MessageCount != 1 {
		t.Fatalf("inside the transaction: %+v, %v", c, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := New(pool, nil).GetConversation(ctx, tenant, "c1"); agents.CodeOf(err) != agents.CodeConversationNotFound {
		t.Fatalf("after rollback: %v, want conversation-not-found", err)
	}
}

// TestOpenMigratesAndCloses opens a Store from a URL.
func TestOpenMigratesAndCloses(t *testing.T) {
	testPool(t)
	u, err := url.Parse(testEnv.adminURL)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", testDatabaseEnv, err)
	}
	u.Path = "/" + testEnv.name
	s, err := Open(t.Context(), u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.GetRun(t.Context(), "open-"+randomID(), "r1"); agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
		t.Fatalf("GetRun: %v", err)
	}
	if _, err := Open(t.Context(), "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", nil); agents.CodeOf(err) != agents.CodePersistence {
		t.Fatalf("Open of an unreachable database: %v, want persistence-error", err)
	}
}

func TestListApprovalsOfARun(t *testing.T) {
	pool := testPool(t)
	ctx := t.Context()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := New(pool, &Options{Now: func() time.Time { return now }})
	tenant := "approvals-" + randomID()
	for i, id := range []string{"ap-b", "ap-a", "ap-other"} {
		run := "r1"
		if id == "ap-other" {
			run = "r2"
		}
		req := bindings.ApprovalRequest{TenantID: tenant, ID: id, RunID: run, CreatedAt: now.Add(time.Duration(i) * time.Second), ExpiresAt: now.Add(time.Hour)}
		if id == "ap-a" {
			req.ExpiresAt = now.Add(-time.Second)
		}
		if _, err := s.RequestApproval(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ListApprovals(ctx, tenant, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Request.ID != "ap-b" || got[0].Status != bindings.ApprovalPending ||
		got[1].Request.ID != "ap-a" || got[1].Status != bindings.ApprovalExpired {
		t.Fatalf("ListApprovals: %+v", got)
	}
	if other, err := s.ListApprovals(ctx, "someone-else", "r1"); err != nil || len(other) != 0 {
		t.Fatalf("another tenant lists %+v, %v", other, err)
	}
}

// TestCommitOfStepsIsOneRoundTrip commits three entries, one of them already
// stored, in one batch.
func TestCommitOfStepsIsOneRoundTrip(t *testing.T) {
	pool, rt := tracedPool(t, 1)
	ctx := t.Context()
	s := New(pool, nil)
	tenant := "steps-" + randomID()
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: tenant, RunID: "r1", FlowID: "f", FlowVersion: "1", Owner: "o", LeaseTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	first, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: tenant, RunID: "r1", Owner: "o",
		Entry: bindings.JournalEntry{Key: "setup", Node: "setup", Status: bindings.StepCompleted, Output: json.RawMessage(`{"a":1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	// Warm the statement cache, then count.
	if _, _, _, err := commitOf(ctx, s, false, journal.CommitInput{TenantID: tenant, RunID: "r1", Owner: "o", Entries: []bindings.JournalEntry{{Key: "warm", Status: bindings.StepStarted}, {Key: "warm", Status: bindings.StepCompleted}}}); err != nil {
		t.Fatal(err)
	}
	rt.reset()
	entries := []bindings.JournalEntry{
		{Key: "setup", Node: "setup", Status: bindings.StepFailed, Error: &bindings.StepError{Code: "x", Message: "ignored: setup has a result"}},
		{Key: "render-prompt", Node: "render-prompt", Status: bindings.StepCompleted, Output: json.RawMessage(`"text"`)},
		{Key: "agent-loop/1/model-call", Node: "model-call", Status: bindings.StepStarted},
	}
	got, appended, _, err := commitOf(ctx, s, false, journal.CommitInput{TenantID: tenant, RunID: "r1", Owner: "o", Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	if queries, batches, writes, _ := rt.snapshot(); queries != 0 || batches != 1 || writes != 1 {
		t.Fatalf("Commit of 3 entries: %d statements, %d batches, %d socket writes; want one batch", queries, batches, writes)
	}
	if appended[0] || !appended[1] || !appended[2] {
		t.Fatalf("appended = %v, want [false true true]", appended)
	}
	if got[0].Seq != first.Seq || got[0].Status != bindings.StepCompleted || got[1].Seq <= first.Seq || got[2].Seq <= got[1].Seq {
		t.Fatalf("entries %+v", got)
	}
	stored, err := s.ReadJournal(ctx, tenant, "r1")
	if err != nil || len(stored) != 5 {
		t.Fatalf("journal: %d entries, %v; want 5", len(stored), err)
	}

	// A stale owner stores none of its entries.
	_, _, _, err = commitOf(ctx, s, false, journal.CommitInput{TenantID: tenant, RunID: "r1", Owner: "someone-else", Entries: []bindings.JournalEntry{{Key: "late", Status: bindings.StepStarted}}})
	if agents.CodeOf(err) != agents.CodeRunBusy {
		t.Fatalf("stale owner: %v, want run-busy", err)
	}
	if stored, _ := s.ReadJournal(ctx, tenant, "r1"); len(stored) != 5 {
		t.Fatalf("a refused Commit stored entries: %d", len(stored))
	}
	if _, _, _, err := commitOf(ctx, s, false, journal.CommitInput{TenantID: tenant, RunID: "missing", Owner: "", Entries: entries}); agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
		t.Fatalf("missing run: %v", err)
	}
}
