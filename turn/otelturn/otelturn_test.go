package otelturn_test

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
	"github.com/kindgi/agents/turn/otelturn"
)

// runTurn runs one turn with one tool call, observed by ob.
func runTurn(t *testing.T, ob *otelturn.Observer) turn.Result {
	t.Helper()
	ctx := t.Context()
	a, err := agent.Define(agent.Spec{
		ID: "acme.drafter", Version: "1.2.0", Name: "Drafter", Instructions: "Draft.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}},
		Tools:        []agent.ToolRef{{ID: "acme.search", Version: "^1.0.0"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tools := registry.NewTools()
	if err := tools.Add("t1", bindings.ToolDescriptor{ID: "acme.search", Version: "1.0.1"},
		func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
			return json.RawMessage(`{"hits":1}`), nil
		}); err != nil {
		t.Fatal(err)
	}
	store := memstore.New(nil)
	conv, err := store.OpenConversation(ctx, bindings.OpenConversationInput{TenantID: "t1", ProjectID: "p", AgentID: a.ID, AgentVersion: a.Version})
	if err != nil {
		t.Fatal(err)
	}
	provider := scripted.New([]scripted.Response{
		scripted.Call("call_1", "acme.search", map[string]any{"q": "nda"}).WithUsage(100, 10, 0.001),
		scripted.Say("done").WithUsage(120, 5, 0.002),
	}, nil)
	res, err := turn.Invoke(ctx, turn.Input{TenantID: "t1", ProjectID: "p", Agent: a, ConversationID: conv.ID, UserMessage: "hi"}, turn.Bindings{
		Providers: bindings.Providers{provider}, Tools: tools, Memory: store,
		Conversations: store, Snapshots: store, Runs: store,
		OnEvent: ob.OnEvent,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestSpanTreeOfATurnWithOneToolCall(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	ob, err := otelturn.New(&otelturn.Options{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	res := runTurn(t, ob)

	spans := rec.Ended()
	if len(rec.Started()) != len(spans) {
		t.Errorf("%d spans started, %d ended", len(rec.Started()), len(spans))
	}
	byID := map[string]sdktrace.ReadOnlySpan{}
	var root sdktrace.ReadOnlySpan
	count := map[string]int{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID().String()] = s
		count[s.Name()]++
		if s.Name() == "invoke_agent acme.drafter" {
			root = s
		}
	}
	if root == nil {
		t.Fatalf("no turn span among %v", count)
	}
	parentName := func(s sdktrace.ReadOnlySpan) string {
		p, ok := byID[s.Parent().SpanID().String()]
		if !ok {
			return ""
		}
		return p.Name()
	}
	if root.Parent().IsValid() {
		t.Errorf("turn span has a parent")
	}
	ra := attrs(root)
	for k, want := range map[attribute.Key]string{
		otelturn.AttrRunID: res.RunID, otelturn.AttrTenantID: "t1", otelturn.AttrAgentID: "acme.drafter",
		otelturn.AttrAgentVersion: "1.2.0", otelturn.AttrAgentRef: "acme.drafter@1.2.0", otelturn.AttrOutcome: "completed",
	} {
		if got := ra[k].AsString(); got != want {
			t.Errorf("turn span %s = %q, want %q", k, got, want)
		}
	}
	if ra[otelturn.AttrGenAIInputTokens].AsInt64() != 220 || ra[otelturn.AttrGenAIOutputTokens].AsInt64() != 15 {
		t.Errorf("turn span tokens = %v / %v", ra[otelturn.AttrGenAIInputTokens], ra[otelturn.AttrGenAIOutputTokens])
	}

	// Every flow node that ran has its span under the turn; loop steps
	// under agent-loop.
	for _, node := range []string{turn.NodeSetup, turn.NodeRenderPrompt, turn.NodePersistUserMessage, turn.NodeAgentLoop, turn.NodePersistFinalMessage} {
		if count[node] == 0 {
			t.Errorf("no span for node %s (have %v)", node, count)
		}
	}
	if count["chat scripted-1"] != 2 || count["execute_tool acme.search"] != 1 {
		t.Fatalf("model/tool spans: %v", count)
	}
	// Two iterations, two model-call steps; the first answer (its tool
	// call) is stored by a second step of that iteration, whose span has
	// a name of its own, and so has the tool result's.
	if count[turn.NodeModelCall] != 2 || count[turn.NodeModelCall+"/message"] != 1 || count[turn.NodeDispatchTools+"/message"] != 1 {
		t.Errorf("step spans of the loop: %v, want 2 model-call, 1 model-call/message, 1 dispatch-tools/message", count)
	}
	for _, s := range spans {
		switch s.Name() {
		case turn.NodeSetup, turn.NodeRenderPrompt, turn.NodeAgentLoop, turn.NodePersistFinalMessage:
			if parentName(s) != root.Name() {
				t.Errorf("%s's parent = %q, want the turn", s.Name(), parentName(s))
			}
		case turn.NodeModelCall, turn.NodeDispatchTools, turn.NodeModelCall + "/message":
			if parentName(s) != turn.NodeAgentLoop {
				t.Errorf("%s's parent = %q, want agent-loop", s.Name(), parentName(s))
			}
		case "chat scripted-1":
			if parentName(s) != turn.NodeModelCall {
				t.Errorf("chat span's parent = %q, want model-call", parentName(s))
			}
			a := attrs(s)
			if a[otelturn.AttrGenAISystem].AsString() != "scripted" || a[otelturn.AttrGenAIRequestModel].AsString() != "scripted-1" ||
				a[otelturn.AttrGenAIResponseModel].AsString() == "" || a[otelturn.AttrGenAIInputTokens].AsInt64() == 0 {
				t.Errorf("chat span attributes = %v", s.Attributes())
			}
		case "execute_tool acme.search":
			if parentName(s) != turn.NodeDispatchTools {
				t.Errorf("tool span's parent = %q, want dispatch-tools", parentName(s))
			}
			a := attrs(s)
			if a[otelturn.AttrGenAIToolName].AsString() != "acme.search" || a[otelturn.AttrGenAIToolCallID].AsString() != "call_1" ||
				a[otelturn.AttrToolVersion].AsString() != "1.0.1" {
				t.Errorf("tool span attributes = %v", s.Attributes())
			}
		}
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("span %s is in another trace", s.Name())
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = true
			if m.Name == "kindgi.turns" {
				sum := m.Data.(metricdata.Sum[int64])
				if len(sum.DataPoints) != 1 || sum.DataPoints[0].Value != 1 {
					t.Errorf("kindgi.turns = %+v", sum.DataPoints)
				}
			}
			if m.Name == "kindgi.turn.cost" {
				sum := m.Data.(metricdata.Sum[float64])
				if v := sum.DataPoints[0].Value; v < 0.00299 || v > 0.00301 {
					t.Errorf("kindgi.turn.cost = %v", v)
				}
			}
		}
	}
	for _, name := range []string{"kindgi.turns", "gen_ai.client.token.usage", "kindgi.turn.cost", "kindgi.turn.duration", "gen_ai.client.operation.duration", "kindgi.tool.duration"} {
		if !got[name] {
			t.Errorf("metric %s not recorded (have %v)", name, got)
		}
	}
}

func TestNoSpansLeakAcrossManyTurns(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	ob, err := otelturn.New(&otelturn.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		runTurn(t, ob)
	}
	if s, e := len(rec.Started()), len(rec.Ended()); s != e || s == 0 {
		t.Errorf("started %d, ended %d", s, e)
	}
}
