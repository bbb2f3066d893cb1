package pgstore

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/bindings"
)

// TestRowTypesMatchTheTables scans rows written through the bindings into
// the exported row types by column name (a column without a field, or a
// field without a column, fails the scan) and inserts the New… rows.
func TestRowTypesMatchTheTables(t *testing.T) {
	pool := testPool(t)
	ctx := t.Context()
	tenant := "rows-" + randomID()
	s := New(pool, nil)
	conv, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ID: "c1", ProjectID: "p", AgentID: "a", AgentVersion: "1.0.0", Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, bindings.RunSnapshotWriteInput{TenantID: tenant, RunID: "r1", FlowID: "agent.turn", FlowVersion: "1.1.0", Input: json.RawMessage(`{"userMessage":"hi"}`)}); err != nil {
		t.Fatal(err)
	}
	rows, _ := pool.Query(ctx, "SELECT * FROM "+ConversationsTable+" WHERE tenant_id = $1", tenant)
	convRows, err := pgx.CollectRows(rows, pgx.RowToStructByName[AgentConversationRow])
	if err != nil {
		t.Fatalf("scan AgentConversationRow: %v", err)
	}
	if len(convRows) != 1 || convRows[0].ID != "c1" || convRows[0].Status != "open" || !convRows[0].OpenedAt.Equal(conv.OpenedAt) {
		t.Fatalf("conversation rows %+v", convRows)
	}
	rows, _ = pool.Query(ctx, "SELECT * FROM "+RunSnapshotsTable+" WHERE tenant_id = $1", tenant)
	snapRows, err := pgx.CollectRows(rows, pgx.RowToStructByName[AgentRunSnapshotRow])
	if err != nil {
		t.Fatalf("scan AgentRunSnapshotRow: %v", err)
	}
	if len(snapRows) != 1 || string(MustUnwrap(snapRows[0].Input)) != `{"userMessage":"hi"}` {
		t.Fatalf("snapshot rows %+v", snapRows)
	}

	now := time.Now().UTC()
	insertRow(t, ConversationsTable, NewAgentConversationRow{TenantID: tenant, ID: "c2", AgentID: "a", AgentVersion: "1.0.0", OpenedAt: now, LastActivityAt: now})
	if got, err := s.GetConversation(ctx, tenant, "c2"); err != nil || got.Status != bindings.ConversationOpen || got.MessageCount != 0 {
		t.Fatalf("conversation inserted from NewAgentConversationRow: %+v, %v", got, err)
	}
	input, err := Wrap(map[string]string{"userMessage": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	insertRow(t, RunSnapshotsTable, NewAgentRunSnapshotRow{TenantID: tenant, RunID: "r2", FlowID: "agent.turn", FlowVersion: "1.1.0", Input: input, CreatedAt: now})
	if got, err := s.Read(ctx, tenant, "r2"); err != nil || string(got.Input) != `{"userMessage":"hello"}` {
		t.Fatalf("snapshot inserted from NewAgentRunSnapshotRow: %+v, %v", got, err)
	}
}

// insertRow inserts a row struct into table, one column per db tag: a tag
// naming no column fails the insert.
func insertRow(t *testing.T, table string, row any) {
	t.Helper()
	v := reflect.ValueOf(row)
	var cols, params []string
	var args []any
	for i := range v.NumField() {
		cols = append(cols, v.Type().Field(i).Tag.Get("db"))
		args = append(args, v.Field(i).Interface())
		params = append(params, "$"+strconv.Itoa(i+1))
	}
	for i, a := range args {
		if raw, ok := a.(json.RawMessage); ok {
			args[i] = string(raw)
		}
	}
	sql := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(params, ", ") + ")"
	if _, err := testPool(t).Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// fakeEmbeddings embeds a text as (length, 1).
type fakeEmbeddings struct{ calls int }

func (f *fakeEmbeddings) Embed(_ context.Context, model string, texts []string) ([][]float32, error) {
	f.calls++
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1}
	}
	return out, nil
}

// TestPutFactComputesMissingEmbeddings checks Options.Embeddings: a fact
// without an embedding gets one on PutFact; a fact with one keeps it.
func TestPutFactComputesMissingEmbeddings(t *testing.T) {
	pool := testPool(t)
	emb := &fakeEmbeddings{}
	s := New(pool, &Options{Embeddings: emb, EmbeddingModel: "toy"})
	tenant := "embed-" + randomID()
	got, err := s.PutFact(t.Context(), bindings.Fact{TenantID: tenant, ID: "f1", Type: "t", Text: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Embedding) != 2 || got.Embedding[0] != 3 || emb.calls != 1 {
		t.Fatalf("computed embedding %v after %d calls", got.Embedding, emb.calls)
	}
	if got, err = s.PutFact(t.Context(), bindings.Fact{TenantID: tenant, ID: "f2", Type: "t", Text: "abcdef", Embedding: []float32{0, 1}}); err != nil || got.Embedding[0] != 0 || emb.calls != 1 {
		t.Fatalf("given embedding replaced: %v, %d calls, %v", got.Embedding, emb.calls, err)
	}
	res, err := s.QueryFacts(t.Context(), bindings.MemoryQuery{TenantID: tenant, Types: []string{"t"}, Scope: "tenant", Mode: "semantic", QueryEmbedding: []float32{1, 0}})
	if err != nil || len(res) != 2 || res[0].Fact.ID != "f1" {
		t.Fatalf("semantic query over the computed embedding: %+v, %v", res, err)
	}
}

// TestKeywordWordsMatchMemstoreTokens checks that keyword search matches on
// runs of letters and digits, as memstore's tokenizer does, where
// PostgreSQL's parser alone would keep an e-mail address, a URL or a
// hyphenated word whole.
func TestKeywordWordsMatchMemstoreTokens(t *testing.T) {
	s := New(testPool(t), nil)
	ctx := t.Context()
	tenant := "words-" + randomID()
	if _, err := s.PutFact(ctx, bindings.Fact{TenantID: tenant, ID: "f1", Type: "t",
		Text: "Send it to legal@globex.test, see https://acme.test/nda-v2 (self-executing)."}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"globex", "legal", "acme", "nda", "v2", "executing", "SELF"} {
		got, err := s.QueryFacts(ctx, bindings.MemoryQuery{TenantID: tenant, Types: []string{"t"}, Scope: "tenant", Mode: "keyword", Query: q})
		if err != nil || len(got) != 1 {
			t.Errorf("query %q: %d facts, %v; want the fact", q, len(got), err)
		}
	}
	if got, _ := s.QueryFacts(ctx, bindings.MemoryQuery{TenantID: tenant, Types: []string{"t"}, Scope: "tenant", Mode: "keyword", Query: "legal@globex"}); len(got) != 1 {
		t.Errorf("query with punctuation: %d facts", len(got))
	}
}
