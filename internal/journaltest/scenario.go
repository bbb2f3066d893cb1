package journaltest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// The golden scenario: a drafter asked to find a clause and send it. The
// model (ScenarioProvider) calls acme.clause-search, then acme.send-email,
// which always asks for approval, then answers. Everything in it but the
// tenant is fixed, so that every store journals the same steps.
const (
	ScenarioRunID        = "run-crash"
	ScenarioProject      = "globex-nda"
	ScenarioConversation = "conv-1"
	ScenarioMessage      = "Find a confidentiality clause and send the draft to Globex."
	// ScenarioApprovalID is the approval the send-email call asks for.
	ScenarioApprovalID = ScenarioRunID + "/agent-loop/2/dispatch-tools/call_2/approval"
)

// ScenarioAgent is the golden scenario's agent.
func ScenarioAgent(t testing.TB) agent.Agent {
	t.Helper()
	limit := 3
	a, err := agent.Define(agent.Spec{
		ID: "acme.drafter", Version: "1.0.0", Name: "Drafter", Instructions: "You draft and send clauses.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools: []agent.ToolRef{
			{ID: "acme.clause-search", Version: "^1.0.0"},
			{ID: "acme.send-email", Version: "~2.1.0"},
		},
		Retrieval: []agent.RetrievalIntent{{Types: []string{"acme.clause"}, Scope: agent.ScopeSameProject, Mode: agent.ModeKeyword, Limit: &limit}},
		ConversationPolicy: &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{
			Overrides: map[string]agent.ToolGate{"acme.send-email": {Mode: agent.GateAlwaysAsk}},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// ScenarioStore is what the golden scenario's set-up writes to.
type ScenarioStore interface {
	PutFact(ctx context.Context, f bindings.Fact) (bindings.Fact, error)
	OpenConversation(ctx context.Context, in bindings.OpenConversationInput) (bindings.Conversation, error)
}

// ToolRuns counts the executions of each tool request id.
type ToolRuns struct {
	mu   sync.Mutex
	runs map[string]int
}

// Counts returns a copy of the counts by request id.
func (r *ToolRuns) Counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.runs))
	for k, v := range r.runs {
		out[k] = v
	}
	return out
}

func (r *ToolRuns) ran(requestID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs == nil {
		r.runs = map[string]int{}
	}
	r.runs[requestID]++
}

// SetUpScenario stores the golden scenario's clause and conversation in
// store for tenant and returns the tenant's tools (counting their runs in
// runs) and the turn's input, with its run id.
func SetUpScenario(t testing.TB, store ScenarioStore, tenant string, runs *ToolRuns) (*registry.Tools, turn.Input) {
	t.Helper()
	ctx := context.Background()
	a := ScenarioAgent(t)
	tools := registry.NewTools()
	for _, tool := range []struct{ id, version, out string }{
		{"acme.clause-search", "1.2.1", `{"clauses":["C-7"]}`},
		{"acme.send-email", "2.1.4", `{"sent":true}`},
	} {
		err := tools.Add(tenant, bindings.ToolDescriptor{ID: tool.id, Version: tool.version, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, _ json.RawMessage, call bindings.CallContext) (json.RawMessage, error) {
				runs.ran(call.RequestID)
				return json.RawMessage(tool.out), nil
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.PutFact(ctx, bindings.Fact{TenantID: tenant, ProjectID: ScenarioProject, ID: "C-7", Type: "acme.clause", Text: "Mutual confidentiality for three years."}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, ProjectID: ScenarioProject, ID: ScenarioConversation, AgentID: a.ID, AgentVersion: a.Version}); err != nil {
		t.Fatal(err)
	}
	return tools, turn.Input{TenantID: tenant, ProjectID: ScenarioProject, Agent: a, ConversationID: ScenarioConversation,
		UserMessage: ScenarioMessage, RunID: ScenarioRunID}
}

// GoldenStore is a store the golden scenario runs on.
type GoldenStore interface {
	ScenarioStore
	ReadJournal(ctx context.Context, tenantID, runID string) ([]bindings.JournalEntry, error)
	ResolveApproval(ctx context.Context, tenantID, approvalID string, d bindings.ApprovalDecision) (bindings.Approval, error)
}

// CheckScenarioGolden drives the golden scenario on store for tenant, its
// clock now, bound with turn.StoreBindings (without provenance and
// compliance) and, with adapt, journal.Adapt of the basic bindings in
// place of the store's own Driver. The parked journal and, after the
// approval and a Resume from fresh bindings (another process), the
// completed one must be the golden files scenario-parked and
// scenario-completed, and each tool must have run once.
func CheckScenarioGolden(t testing.TB, store GoldenStore, tenant string, now func() time.Time, adapt bool) {
	t.Helper()
	var runs ToolRuns
	tools, in := SetUpScenario(t, store, tenant, &runs)
	bind := func() turn.Bindings {
		b := turn.StoreBindings(store)
		b.Provenance, b.Compliance = bindings.ProvenanceBindings{}, nil
		b.Providers, b.Tools, b.Now = bindings.Providers{ScenarioProvider()}, tools, now
		if adapt {
			b.Journal = nil
		}
		return b
	}
	journal := func() []Line {
		entries, err := store.ReadJournal(context.Background(), tenant, ScenarioRunID)
		if err != nil {
			t.Fatal(err)
		}
		return Lines(t, tenant, entries)
	}
	ctx := context.Background()
	parked, err := turn.Invoke(ctx, in, bind())
	if err != nil || parked.Status != turn.StatusSuspended {
		t.Fatalf("Invoke = %+v, %v; want suspended", parked, err)
	}
	CheckGolden(t, "scenario-parked", journal())
	if _, err := store.ResolveApproval(ctx, tenant, ScenarioApprovalID, bindings.ApprovalDecision{
		Approved: true, Reviewer: "rev", ReviewerRoles: []string{"standard"},
	}); err != nil {
		t.Fatal(err)
	}
	done, err := turn.Resume(ctx, turn.ResumeInput{TenantID: tenant, RunID: ScenarioRunID, Agent: in.Agent}, bind())
	if err != nil || done.Status != turn.StatusCompleted {
		t.Fatalf("Resume = %+v, %v; want completed", done, err)
	}
	CheckGolden(t, "scenario-completed", journal())
	counts := runs.Counts()
	if len(counts) != 2 {
		t.Errorf("tool request ids %v, want two", counts)
	}
	for id, n := range counts {
		if n != 1 {
			t.Errorf("%s ran %d times, want once", id, n)
		}
	}
}
