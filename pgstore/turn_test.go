package pgstore

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

const turnTenant = "turn-tenant"

// lookupAgent has one tool, acme.lookup, and no retrieval, guardrails or
// approvals: a turn is a model call asking for the tool, the tool call and
// a final model call.
func lookupAgent(t testing.TB, gate agent.GateMode) agent.Agent {
	t.Helper()
	spec := agent.Spec{
		ID:           "acme.lookup-agent",
		Version:      "1.0.0",
		Name:         "Lookup",
		Instructions: "You look things up.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "acme.lookup", Version: "^1.0.0"}},
	}
	if gate != "" {
		spec.ConversationPolicy = &agent.ConversationPolicy{Hitl: &agent.HitlPolicy{Tools: &agent.ToolGates{
			Overrides: map[string]agent.ToolGate{"acme.lookup": {Mode: gate}},
		}}}
	}
	a, err := agent.Define(spec)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// turnFixture is a Store with the bindings of a turn: the tool counts its
// executions.
type turnFixture struct {
	store    *Store
	tools    *registry.Tools
	executed atomic.Int64
}

func newTurnFixture(t testing.TB, s *Store) *turnFixture {
	t.Helper()
	f := &turnFixture{store: s, tools: registry.NewTools()}
	err := f.tools.Add(turnTenant, bindings.ToolDescriptor{
		ID: "acme.lookup", Version: "1.0.0", Description: "Look a term up.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
	}, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		f.executed.Add(1)
		return json.RawMessage(`{"answer":"42"}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// bindings returns turn bindings whose model asks for the tool once, then
// answers (looping, so a worker can run many turns).
func (f *turnFixture) bindings(script ...scripted.Response) turn.Bindings {
	if script == nil {
		script = lookupScript()
	}
	b := storeBindings(f.store)
	b.Providers = bindings.Providers{scripted.New(script, &scripted.Options{Loop: true, DiscardRequests: true})}
	b.Tools = f.tools
	return b
}

// ranOnce fails t unless the tool ran exactly once (what names it).
func (f *turnFixture) ranOnce(t testing.TB, what string) {
	t.Helper()
	if n := f.executed.Load(); n != 1 {
		t.Fatalf("%s ran %d times, want once", what, n)
	}
}

// storeBindings is s as every turn binding a Store serves: memory,
// conversations, snapshots, runs, its own journal Driver and approvals.
func storeBindings(s *Store) turn.Bindings {
	return turn.Bindings{Memory: s, Conversations: s, Snapshots: s, Runs: s, Journal: s, Hitl: s}
}

// lookupScript is the model's part of a turn with one tool call: it asks
// for acme.lookup once, then answers.
func lookupScript() []scripted.Response {
	return []scripted.Response{
		scripted.Call("call_1", "acme.lookup", map[string]any{"q": "answer"}),
		scripted.Say("The answer is 42."),
	}
}

// over is the fixture's bindings over s, with provider as the model and
// reg's agents (sub-agents, handoff targets).
func (f *turnFixture) over(s *Store, provider *scripted.Provider, reg *registry.Agents) turn.Bindings {
	b := f.bindings()
	b.Providers = bindings.Providers{provider}
	b.Memory, b.Conversations, b.Snapshots, b.Runs, b.Hitl = s, s, s, s, s
	b.Agents, b.AgentVersions = reg.Lookup, reg.Versions
	return b
}

func (f *turnFixture) open(t testing.TB, a agent.Agent) string {
	t.Helper()
	c, err := f.store.OpenConversation(context.Background(), bindings.OpenConversationInput{
		TenantID: turnTenant, AgentID: a.ID, AgentVersion: a.Version,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

func (f *turnFixture) invoke(ctx context.Context, b turn.Bindings, a agent.Agent, conv string) (turn.Result, error) {
	return turn.Invoke(ctx, turn.Input{TenantID: turnTenant, Agent: a, ConversationID: conv, UserMessage: "What is the answer?"}, b)
}

// maxTurnRoundTrips bounds the round trips of a turn with one tool call
// through the Store's Driver: the start of the drive is one Open; the
// decide steps' entries ride along with the next entry written at once or
// with the next message append, as does the result of the model or tool
// call right before it (the final model call's result, with the decide
// results after it, rides with the final message); a message step's
// entry rides with the message itself and with the decide results and the
// next started entry after it, and the final message ends the drive. The
// reads of the turn ride with the Open (the conversation and its
// history), and the user message, like the others, with the Commit after
// it (the first model call's started entry). A new run is created by that
// Commit too: the Open is a read, and the turn commits one time fewer.
const maxTurnRoundTrips = 5

// maxTurnCommits bounds the round trips of that turn that write (each
// one transaction, one commit): the user message's step (which creates
// the run), the assistant message's, the tool message's and the final
// one.
const maxTurnCommits = 4

// TestTurnWithOneToolCallRoundTrips runs a turn with one tool call on
// pgstore and counts its round trips with a pgx tracer and the socket
// writes: every binding call is one batch, and nothing else reaches the
// network.
func TestTurnWithOneToolCallRoundTrips(t *testing.T) {
	pool, rt := tracedPool(t, 1)
	f := newTurnFixture(t, New(pool, nil))
	a := lookupAgent(t, "")
	conv := f.open(t, a)
	b := f.bindings()
	// The first turn prepares the statements on the connection.
	if res, err := f.invoke(t.Context(), b, a, conv); err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("warm-up turn: %+v, %v", res, err)
	}
	rt.reset()
	res, err := f.invoke(t.Context(), b, a, conv)
	if err != nil || res.Status != turn.StatusCompleted || res.Usage.ToolCalls != 1 {
		t.Fatalf("turn: %+v, %v", res, err)
	}
	queries, batches, writes, ops := rt.snapshot()
	t.Logf("turn with one tool call: %d round trips (%d batches, %d plain statements, %d socket writes): %v", batches+queries, batches, queries, writes, ops)
	if queries != 0 {
		t.Errorf("%d statements outside batches, want every call batched", queries)
	}
	if rtrips := batches + queries; rtrips > maxTurnRoundTrips {
		t.Errorf("%d round trips, want at most %d: batching regressed", rtrips, maxTurnRoundTrips)
	}
	if writes != int64(batches) {
		t.Errorf("%d socket writes for %d batches: some call needed more than one round trip", writes, batches)
	}
	if _, commits := rt.statements(); commits > maxTurnCommits {
		t.Errorf("%d round trips wrote (commits), want at most %d", commits, maxTurnCommits)
	}
}
