package turn_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

// The anchor workload of the performance issue, the same for every
// framework it is compared with: a 315-character system instruction, one
// tool clause_search (typed {query} → {clauses: [...]} behind a JSON
// boundary), a fake model that decides from the last message (a tool
// result → the answer "Here is the clause."; otherwise it asks for
// clause_search with {"query":"nda"}), one turn = 2 model calls + 1 tool
// call, a fresh conversation per turn. scripts/callgrind-anchor.sh counts
// its instructions.

// anchorInstruction is 315 characters of plain text (no template tags).
var anchorInstruction = func() string {
	s := "You are a contract assistant for a law firm. You search the clause library before you answer, " +
		"you cite the clauses you found by their identifiers, and you never invent a clause that the " +
		"library does not hold. Keep answers short, precise and in plain English; say so when nothing " +
		"in the library fits the request. "
	for len(s) < 315 {
		s += "."
	}
	return s[:315]
}()

type anchorQuery struct {
	Query string `json:"query"`
}

type anchorClause struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

type anchorClauses struct {
	Clauses []anchorClause `json:"clauses"`
}

// anchorModel decides from the last message: a tool result gets the
// answer, anything else a clause_search call.
type anchorModel struct{}

func (anchorModel) ID() string { return "fake" }

func (anchorModel) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "fake-1", Features: []string{"tool-use"}}}
}

var anchorArgs = json.RawMessage(`{"query":"nda"}`)

func (anchorModel) Generate(_ context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == bindings.ChatTool {
		return bindings.GenerateResponse{Text: "Here is the clause.", FinishReason: "stop", Usage: bindings.Usage{InputTokens: 120, OutputTokens: 6}}, nil
	}
	return bindings.GenerateResponse{
		ToolCalls:    []bindings.ToolCall{{ID: "call-1", Name: req.Tools[0].Name, Arguments: anchorArgs}},
		FinishReason: "tool_calls",
		Usage:        bindings.Usage{InputTokens: 100, OutputTokens: 12},
	}, nil
}

// anchorFixture builds the workload; checkTrusted has the store check what
// the turn vouches for (memstore.Options.CheckTrusted), as tests do and
// the benchmark does not.
func anchorFixture(tb testing.TB, checkTrusted bool) (agent.Agent, *memstore.Store, turn.Bindings) {
	tb.Helper()
	a, err := agent.Define(anchorSpec())
	if err != nil {
		tb.Fatal(err)
	}
	tools := registry.NewTools()
	err = tools.Add("t1", bindings.ToolDescriptor{
		ID: "clause_search", Version: "1.0.0", Description: "Search the clause library.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
	}, func(_ context.Context, in json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
		var q anchorQuery
		if err := json.Unmarshal(in, &q); err != nil {
			return nil, err
		}
		return json.Marshal(anchorClauses{Clauses: []anchorClause{{ID: "C-7", Title: "Mutual confidentiality (" + q.Query + ")"}}})
	})
	if err != nil {
		tb.Fatal(err)
	}
	store := memstore.New(&memstore.Options{CheckTrusted: checkTrusted})
	b := turn.Bindings{
		Providers:     bindings.Providers{anchorModel{}},
		Tools:         tools,
		Conversations: store,
		Snapshots:     store,
		Runs:          store,
		Journal:       store,
	}
	return a, store, b
}

// TestAnchorTurn checks the anchor workload does what it says, so its
// benchmark measures the turn it claims to.
func TestAnchorTurn(t *testing.T) {
	if len(anchorInstruction) != 315 || strings.Contains(anchorInstruction, "{") {
		t.Fatalf("instruction is %d characters", len(anchorInstruction))
	}
	a, store, b := anchorFixture(t, true)
	res, err := invokeAnchor(t.Context(), a, store, b)
	if err != nil {
		t.Fatal(err)
	}
	if res.Response.Content != "Here is the clause." || res.Usage.ModelCalls != 2 || res.Usage.ToolCalls != 1 {
		t.Fatalf("result = %+v", res)
	}
	ms, err := store.ReadMessages(t.Context(), bindings.ReadMessagesInput{TenantID: "t1", ConversationID: res.ConversationID, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	var toolOut string
	for _, m := range ms {
		if m.Role == bindings.RoleTool {
			toolOut = m.Content
		}
	}
	if !strings.Contains(toolOut, `"C-7"`) || !strings.Contains(toolOut, "(nda)") {
		t.Errorf("tool message = %q, want the typed handler's output", toolOut)
	}
}

// BenchmarkAnchorTurn is the anchor workload on memstore, journaled: one
// turn per iteration, each on a fresh conversation (opened inside the loop,
// as every peer's figure includes its session creation).
func BenchmarkAnchorTurn(b *testing.B) {
	a, store, bb := anchorFixture(b, false)
	benchAnchorTurns(b, a, store, bb, 1)
}

// invokeAnchor runs agent a's anchor turn ("Find the NDA clause.") on a
// fresh conversation of store, opened first as every peer's figure
// includes its session creation.
func invokeAnchor(ctx context.Context, a agent.Agent, store *memstore.Store, b turn.Bindings) (turn.Result, error) {
	conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t1", AgentID: a.ID, AgentVersion: a.Version})
	if err != nil {
		return turn.Result{}, err
	}
	return turn.Invoke(ctx, turn.Input{TenantID: "t1", Agent: a, ConversationID: conv.ID, UserMessage: "Find the NDA clause."}, b)
}

// parkAnchor runs the gated agent a's anchor turn (anchorGatedAgent) on a
// fresh conversation, checks that it parked on its one approval, approves
// it and returns the parked run's id.
func parkAnchor(tb testing.TB, a agent.Agent, store *memstore.Store, b turn.Bindings) string {
	tb.Helper()
	ctx := tb.Context()
	res, err := invokeAnchor(ctx, a, store, b)
	if err != nil || res.Status != turn.StatusSuspended || len(res.Approvals) != 1 {
		tb.Fatalf("Invoke = %+v, %v", res, err)
	}
	if _, err := store.ResolveApproval(ctx, "t1", res.Approvals[0].ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rita"}); err != nil {
		tb.Fatal(err)
	}
	return res.RunID
}

// benchAnchorTurns runs agent a's anchor turn once per iteration, each on
// a fresh conversation, and checks that it made toolCalls tool calls.
func benchAnchorTurns(b *testing.B, a agent.Agent, store *memstore.Store, bb turn.Bindings, toolCalls int) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := invokeAnchor(ctx, a, store, bb)
		if err != nil || res.Usage.ToolCalls != toolCalls {
			b.Fatalf("turn = %+v, %v", res.Usage, err)
		}
	}
}

// BenchmarkAnchorTurnQuotas is BenchmarkAnchorTurn with three tenant
// quotas counted in memstore (model-calls, tokens and the tool's
// tool-calls, never reached): what quotas cost a turn — two model-call
// takes, two token checks and adds, one tool-call take.
func BenchmarkAnchorTurnQuotas(b *testing.B) {
	a, store, bb := anchorFixture(b, false)
	bb.Quotas = store
	bb.TenantPolicy = &bindings.TenantPolicy{Quotas: []bindings.Quota{
		{Name: "calls", Scope: bindings.QuotaModelCalls, Limit: 1e9, WindowSeconds: 60},
		{Name: "tokens", Scope: bindings.QuotaTokens, Limit: 1e12, WindowSeconds: 60},
		{Name: "searches", Scope: bindings.QuotaToolCalls, ToolID: "clause_search", Limit: 1e9, WindowSeconds: 60},
	}}
	benchAnchorTurns(b, a, store, bb, 1)
}

// anchorGatedAgent is the anchor workload's agent with clause_search gated
// (always ask), so that a turn parks on its approval: the agent of
// BenchmarkAnchorResume and the resumed-arena test.
func anchorGatedAgent(tb testing.TB) agent.Agent {
	tb.Helper()
	spec := anchorSpec()
	spec.ConversationPolicy = &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{
		Overrides: map[string]agent.ToolGate{"clause_search": {Mode: agent.GateAlwaysAsk}},
	}}}
	a, err := agent.Define(spec)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// anchorSpec is the anchor workload's agent: the 315-character
// instruction and the one tool, clause_search.
func anchorSpec() agent.Spec {
	return agent.Spec{
		ID: "bench.anchor", Version: "1.0.0", Name: "Anchor",
		Instructions: anchorInstruction,
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "clause_search", Version: "^1.0.0"}},
	}
}

// BenchmarkAnchorTurnSigned is BenchmarkAnchorTurn with a provenance
// record per turn, stored in memstore and signed with the tenant's
// Ed25519 key: what a signed record costs a turn.
func BenchmarkAnchorTurnSigned(b *testing.B) {
	a, store, bb := anchorFixture(b, false)
	bb.Provenance = bindings.ProvenanceBindings{Emitter: store, Keys: memstore.NewKeys([]byte("bench"))}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := invokeAnchor(ctx, a, store, bb)
		if err != nil || res.Usage.ToolCalls != 1 || res.Provenance == nil || len(res.Provenance.Signature) == 0 {
			b.Fatalf("turn = %+v, %v", res.Usage, err)
		}
	}
}
