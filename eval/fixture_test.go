package eval_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
)

const tenant = "acme"

// defineAgent returns the refund agent at version with instructions.
func defineAgent(t testing.TB, version, instructions string) agent.Agent {
	t.Helper()
	a, err := agent.Define(agent.Spec{
		ID: "acme.refunds", Version: version, Name: "Refunds",
		Instructions: instructions + " You work for {{ firmName }}.",
		Parameters:   []agent.PromptParameter{{Name: "firmName", Type: agent.TypeString}},
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "acme.lookup-order", Version: "^1.0.0"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// host is a host's store and tools, with a count of the tool's real calls.
type host struct {
	store *memstore.Store
	tools *registry.Tools
	calls *atomic.Int64
}

func newHost(t testing.TB) host {
	t.Helper()
	h := host{store: memstore.New(nil), tools: registry.NewTools(), calls: new(atomic.Int64)}
	err := h.tools.Add(tenant, bindings.ToolDescriptor{ID: "acme.lookup-order", Version: "1.2.0",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"integer"},"verbose":{"type":"boolean"}},"required":["order"]}`)},
		func(_ context.Context, in json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
			h.calls.Add(1)
			var a struct{ Order int }
			_ = json.Unmarshal(in, &a)
			if a.Order == 404 {
				return nil, errNotFound
			}
			return json.Marshal(map[string]any{"order": a.Order, "status": "delivered", "total": 12.5})
		})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

type toolErr string

func (e toolErr) Error() string { return string(e) }

const errNotFound = toolErr("no such order")

// bindings returns the host's bindings with provider p.
func (h host) bindings(p bindings.Provider) turn.Bindings {
	b := turn.StoreBindings(h.store)
	b.Providers, b.Tools = bindings.Providers{p}, h.tools
	return b
}

// record runs one turn of a on the host and returns its run id.
func (h host) record(t testing.TB, a agent.Agent, msg string, script ...scripted.Response) string {
	t.Helper()
	ctx := t.Context()
	conv, err := h.store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: tenant, AgentID: a.ID, AgentVersion: a.Version})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Invoke(ctx, turn.Input{TenantID: tenant, Agent: a, ConversationID: conv.ID, UserMessage: msg,
		Parameters: map[string]any{"firmName": "Acme"}}, h.bindings(scripted.New(script, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return res.RunID
}

// recordThree records three refund turns of A@1.0.0 and returns their run
// ids.
func recordThree(t testing.TB, h host) []string {
	t.Helper()
	a := defineAgent(t, "1.0.0", "You handle refunds.")
	return []string{
		h.record(t, a, "Refund order 1, please.",
			scripted.Call("c1", "acme.lookup-order", map[string]any{"order": 1}).WithUsage(10, 5, 0.001),
			scripted.Say("Refund issued for order 1.").WithUsage(20, 8, 0.002)),
		h.record(t, a, "Where is order 2?",
			scripted.Call("c1", "acme.lookup-order", json.RawMessage(`{"order":2,"verbose":true}`)),
			scripted.Say("Order 2 was delivered; a refund is possible.")),
		h.record(t, a, "Refund order 404.",
			scripted.Call("c1", "acme.lookup-order", map[string]any{"order": 404}),
			scripted.Say("I could not find order 404, so no refund.")),
	}
}
