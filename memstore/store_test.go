package memstore_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
)

func TestResolveApprovalHonoursTheRoleLadder(t *testing.T) {
	ctx := t.Context()
	s := memstore.New(&memstore.Options{ReviewerRoles: []string{"standard", "senior", "admin"}})
	for _, id := range []string{"ap-senior", "ap-custom"} {
		role := "senior"
		if id == "ap-custom" {
			role = "legal-team" // not on the ladder: not checked
		}
		if _, err := s.RequestApproval(ctx, bindings.ApprovalRequest{TenantID: "t", ID: id, ReviewerRole: role}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.ResolveApproval(ctx, "t", "ap-senior", bindings.ApprovalDecision{Approved: true, Reviewer: "jr", ReviewerRoles: []string{"standard"}})
	if agents.CodeOf(err) != agents.CodeHitlRequired {
		t.Fatalf("a standard reviewer decided a senior approval: %v", err)
	}
	a, err := s.ResolveApproval(ctx, "t", "ap-senior", bindings.ApprovalDecision{Approved: true, Reviewer: "boss", ReviewerRoles: []string{"standard", "admin"}})
	if err != nil || a.Status != bindings.ApprovalApproved || a.Reviewer != "boss" {
		t.Fatalf("an admin's approval: %+v %v", a, err)
	}
	if a, err := s.ResolveApproval(ctx, "t", "ap-custom", bindings.ApprovalDecision{Approved: false, Reviewer: "x"}); err != nil || a.Status != bindings.ApprovalDenied {
		t.Fatalf("a role off the ladder: %+v %v", a, err)
	}
}

func TestApprovalWithoutExpiryNeverExpires(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := memstore.New(&memstore.Options{Now: func() time.Time { return now }})
	if _, err := s.RequestApproval(t.Context(), bindings.ApprovalRequest{TenantID: "t", ID: "ap"}); err != nil {
		t.Fatal(err)
	}
	now = now.AddDate(10, 0, 0)
	a, err := s.GetApproval(t.Context(), "t", "ap")
	if err != nil || a.Status != bindings.ApprovalPending {
		t.Fatalf("%+v %v", a, err)
	}
}

func TestProvenanceRecords(t *testing.T) {
	ctx := t.Context()
	s := memstore.New(nil)
	rec := bindings.ProvenanceRecord{TenantID: "t", RunID: "r1", MessageHashes: []string{"h1"}, ToolCalls: []bindings.ProvenanceToolCall{{ID: "c1"}}, Signature: []byte{1, 2}}
	if err := s.Emit(ctx, rec); err != nil {
		t.Fatal(err)
	}
	second := rec
	second.Provider = "other"
	if err := s.Emit(ctx, second); err != nil {
		t.Fatal(err)
	}
	if err := s.Emit(ctx, bindings.ProvenanceRecord{TenantID: "t", RunID: "r2"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Emit(ctx, bindings.ProvenanceRecord{TenantID: "u", RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	rec.MessageHashes[0] = "mutated by the caller"
	got, ok := s.Provenance("t", "r1")
	want := bindings.ProvenanceRecord{TenantID: "t", RunID: "r1", MessageHashes: []string{"h1"}, ToolCalls: []bindings.ProvenanceToolCall{{ID: "c1"}}, Signature: []byte{1, 2}}
	if d := cmp.Diff(want, got); !ok || d != "" {
		t.Fatalf("Provenance (-want +got):\n%s", d)
	}
	got.Signature[0] = 9
	if again, _ := s.Provenance("t", "r1"); again.Signature[0] != 1 {
		t.Fatal("mutating a returned record changed the store")
	}
	var runs []string
	for _, r := range s.ProvenanceRecords("t") {
		runs = append(runs, r.RunID)
	}
	if d := cmp.Diff([]string{"r1", "r2"}, runs); d != "" {
		t.Fatalf("ProvenanceRecords (-want +got):\n%s", d)
	}
	if _, ok := s.Provenance("v", "r1"); ok {
		t.Fatal("found another tenant's record")
	}
	if err := s.Emit(ctx, bindings.ProvenanceRecord{RunID: "x"}); agents.CodeOf(err) != agents.CodeInvalidMessage {
		t.Fatalf("no tenant: %v", err)
	}
}

// TestConcurrentUse drives every storage binding from many goroutines at
// once; run with -race.
func TestConcurrentUse(t *testing.T) {
	ctx := t.Context()
	s := memstore.New(nil)
	if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t", ID: "c", AgentID: "a", AgentVersion: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: "t", RunID: "r", Owner: "w", LeaseTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: "t", ConversationID: "c", ID: id, Role: bindings.RoleAgent, Content: id, TurnNumber: i}); err != nil {
					t.Error(err)
				}
				if _, err := s.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: "t", ConversationID: "c", Limit: 5}); err != nil {
					t.Error(err)
				}
				if _, err := s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t", ID: id, AgentID: "a", AgentVersion: "1.0.0"}); err != nil {
					t.Error(err)
				}
				if _, err := s.ListConversationsPage(ctx, bindings.ListConversationsPageInput{ListConversationsInput: bindings.ListConversationsInput{TenantID: "t", Limit: 3}}); err != nil {
					t.Error(err)
				}
				if _, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: "t", RunID: "r", Entry: bindings.JournalEntry{Key: id, Node: "n", Status: bindings.StepCompleted}}); err != nil {
					t.Error(err)
				}
				if _, err := s.PutFact(ctx, bindings.Fact{TenantID: "t", ID: id, Type: "c", Text: "fact " + id}); err != nil {
					t.Error(err)
				}
				if _, err := s.QueryFacts(ctx, bindings.MemoryQuery{TenantID: "t", Types: []string{"c"}, Scope: "tenant", Mode: "keyword", Query: "fact"}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	c, _ := s.GetConversation(ctx, "t", "c")
	j, _ := s.ReadJournal(ctx, "t", "r")
	if c.MessageCount != workers*each || len(j) != workers*each {
		t.Fatalf("MessageCount %d, journal %d; want %d each", c.MessageCount, len(j), workers*each)
	}
	ms, _ := s.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: "t", ConversationID: "c", Limit: -1})
	for i, m := range ms {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has Seq %d", i, m.Seq)
		}
	}
}

func TestOptionsIDs(t *testing.T) {
	ctx := t.Context()
	s := memstore.New(&memstore.Options{IDs: func() string { return "fixed" }})
	open := func() (bindings.Conversation, error) {
		return s.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t", AgentID: "a", AgentVersion: "1.0.0"})
	}
	c, err := open()
	if err != nil || c.ID != "fixed" {
		t.Fatalf("first generated id: %q %v", c.ID, err)
	}
	if _, err := open(); agents.CodeOf(err) != agents.CodePersistence {
		t.Fatalf("an IDs func that repeats itself: %v, want persistence-error instead of a hang", err)
	}
	if cs, _ := s.ListConversations(ctx, bindings.ListConversationsInput{TenantID: "t"}); len(cs) != 1 {
		t.Fatalf("%d conversations stored", len(cs))
	}
	m, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: "t", ConversationID: "fixed", Role: bindings.RoleUser, Content: "x"})
	if err != nil || m.ID != "fixed" {
		t.Fatalf("generated message id: %q %v", m.ID, err)
	}
	if _, err := s.AppendMessage(ctx, bindings.AppendMessageInput{TenantID: "t", ConversationID: "fixed", Role: bindings.RoleUser, Content: "y"}); agents.CodeOf(err) != agents.CodePersistence {
		t.Fatalf("second generated message id: %v", err)
	}
	if _, err := s.PutFact(ctx, bindings.Fact{TenantID: "t", Type: "c", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutFact(ctx, bindings.Fact{TenantID: "t", Type: "c", Text: "y"}); agents.CodeOf(err) != agents.CodePersistence {
		t.Fatalf("second generated fact id: %v", err)
	}
}

// TestStoredProvenanceVerifies: a signed record with empty lists reads
// back with the same JSON, so its signature still verifies.
func TestStoredProvenanceVerifies(t *testing.T) {
	s := memstore.New(nil)
	rec := bindings.ProvenanceRecord{TenantID: "t", RunID: "r", MessageHashes: []string{}, ToolCalls: []bindings.ProvenanceToolCall{},
		RetrievedFacts: []string{}, Guardrails: []bindings.ProvenanceGuardrail{}, Signature: []byte{1}}
	if err := s.Emit(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Provenance("t", "r")
	a, _ := json.Marshal(rec)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Errorf("stored record encodes as\n%s\nwant\n%s", b, a)
	}
}

// TestDeterministicRefusalsAreNotRetryable checks that what memstore will
// refuse again on every call is never reported as retryable.
func TestDeterministicRefusalsAreNotRetryable(t *testing.T) {
	ctx := t.Context()
	taken := memstore.New(&memstore.Options{IDs: func() string { return "same" }})
	if _, err := taken.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t", AgentID: "a", AgentVersion: "1"}); err != nil {
		t.Fatal(err)
	}
	_, err := taken.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t", AgentID: "a", AgentVersion: "1"})
	if agents.CodeOf(err) != agents.CodePersistence || agents.IsRetryable(err) {
		t.Fatalf("ids exhausted: %v (retryable %v), want a permanent persistence-error", err, agents.IsRetryable(err))
	}
	_, err = memstore.NewKeys(nil).PublicKey(ctx, "nobody:0")
	if agents.CodeOf(err) != agents.CodePersistence || agents.IsRetryable(err) {
		t.Fatalf("unknown key: %v (retryable %v), want a permanent persistence-error", err, agents.IsRetryable(err))
	}
	_, err = memstore.Secrets{}.ResolveSecret(ctx, "t", "missing")
	if agents.CodeOf(err) != agents.CodePersistence || agents.IsRetryable(err) {
		t.Fatalf("missing secret: %v (retryable %v), want a permanent persistence-error", err, agents.IsRetryable(err))
	}
	s := memstore.New(nil)
	if _, err := s.StartRun(ctx, bindings.StartRunInput{TenantID: "t", RunID: "r", Owner: "w", LeaseTTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"a 9,000-byte step key": func() error {
			_, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: "t", RunID: "r", Owner: "w",
				Entry: bindings.JournalEntry{Key: strings.Repeat("k", 9000), Status: bindings.StepStarted}})
			return err
		},
		"a NaN output": func() error {
			_, _, err := s.AppendStep(ctx, bindings.AppendStepInput{TenantID: "t", RunID: "r", Owner: "w",
				Entry: bindings.JournalEntry{Key: "agent-loop/1/model-call", Status: bindings.StepCompleted, Output: json.RawMessage(`{"costUsd":NaN}`)}})
			return err
		},
	} {
		err := call()
		if agents.CodeOf(err) != agents.CodeInvalidMessage || agents.IsRetryable(err) {
			t.Fatalf("%s: %v (retryable %v), want a non-retryable invalid-message", name, err, agents.IsRetryable(err))
		}
	}
}
