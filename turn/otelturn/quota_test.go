package otelturn_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/registry"
	"github.com/kindgi/agents/turn"
	"github.com/kindgi/agents/turn/otelturn"
)

// TestQuotaMetrics: the units a quota counted and refused are counted per
// quota, scope and tenant.
func TestQuotaMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	ob, err := otelturn.New(&otelturn.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.Define(agent.Spec{ID: "acme.q", Version: "1.0.0", Name: "Q", Instructions: "Answer.",
		Capabilities: []agent.Capability{{Needs: []agent.Need{{Feature: "tool-use"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New(nil)
	b := turn.Bindings{
		Providers: bindings.Providers{scripted.New([]scripted.Response{scripted.Say("ok").WithUsage(30, 3, 0)}, &scripted.Options{Loop: true})},
		Tools:     registry.NewTools(), Memory: store, Conversations: store, Snapshots: store, Runs: store,
		Quotas: store, OnEvent: ob.OnEvent,
		TenantPolicy: &bindings.TenantPolicy{Quotas: []bindings.Quota{
			{Name: "calls", Scope: bindings.QuotaModelCalls, Limit: 2, WindowSeconds: 60},
			{Name: "tokens", Scope: bindings.QuotaTokens, Limit: 1000, WindowSeconds: 60},
		}},
	}
	for i := range 3 {
		conv, err := store.OpenConversation(t.Context(), bindings.OpenConversationInput{TenantID: "t1", AgentID: a.ID, AgentVersion: a.Version})
		if err != nil {
			t.Fatal(err)
		}
		_, err = turn.Invoke(t.Context(), turn.Input{TenantID: "t1", Agent: a, ConversationID: conv.ID, UserMessage: "hi"}, b)
		if (i < 2) != (err == nil) || (i == 2 && agents.CodeOf(err) != agents.CodeQuotaExceeded) {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	consumed := map[string]float64{}
	refused := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "kindgi.quota.consumed":
				for _, dp := range m.Data.(metricdata.Sum[float64]).DataPoints {
					name, _ := dp.Attributes.Value(otelturn.AttrQuotaName)
					if tn, _ := dp.Attributes.Value(otelturn.AttrTenantID); tn.AsString() != "t1" {
						t.Errorf("consumed point without the tenant: %v", dp.Attributes.ToSlice())
					}
					consumed[name.AsString()] += dp.Value
				}
			case "kindgi.quota.refused":
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					name, _ := dp.Attributes.Value(otelturn.AttrQuotaName)
					if w, _ := dp.Attributes.Value(otelturn.AttrQuotaWait); w != attribute.BoolValue(false) {
						t.Errorf("refused point of a fail quota says wait: %v", dp.Attributes.ToSlice())
					}
					refused[name.AsString()] += dp.Value
				}
			}
		}
	}
	if consumed["calls"] != 2 || consumed["tokens"] != 66 || refused["calls"] != 1 || len(refused) != 1 {
		t.Fatalf("consumed %v, refused %v; want calls 2 and tokens 66 consumed, calls 1 refused", consumed, refused)
	}
}
