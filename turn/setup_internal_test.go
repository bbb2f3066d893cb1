package turn

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/turn/internal/drive"
)

// TestNormalizeSetupIsDecode: normalizeSetup gives exactly what decoding
// the journaled setup gives (nil and empty told apart, numbers in configs
// as float64, documents compacted), and hands out maps of its own.
func TestNormalizeSetupIsDecode(t *testing.T) {
	cost, wall, afterTurns, timeout := 0.25, int64(60000), 3, int64(1000)
	noList, list := []string(nil), []string{}
	yes, no := true, false
	schema := json.RawMessage("{ \"type\": \"object\",\n \"description\": \"a <b> & c\" }")
	for name, s := range map[string]setupState{
		"zero": {},
		"empties": {
			Tools:      []bindings.ToolDescriptor{{ID: "t", Version: "1.0.0", InputSchema: json.RawMessage{}, Secrets: []string{}, Env: map[string]string{}, Config: map[string]any{}}},
			Guardrails: []bindings.Guardrail{{ID: "g", Config: json.RawMessage{}}},
			Policy: Policy{AllowProviders: &noList, AllowModels: &list, DenyProviders: []string{}, DenyModels: []string{},
				Hitl: &bindings.HitlSpec{ToolFloors: map[string]agent.ToolGate{}}},
			Model:     bindings.ModelInfo{Features: []string{}},
			Hitl:      EffectiveHitlPolicy{ToolFloors: map[string]agent.ToolGate{}, ToolGates: &agent.ToolGates{Overrides: map[string]agent.ToolGate{}}},
			SubAgents: []agentTool{},
			Handoffs:  []agentTool{{Name: "h", AgentID: "a", AgentVersion: "1.0.0", InputSchema: json.RawMessage{}}},
		},
		"full": {
			Now:        time.Date(2026, 3, 14, 9, 0, 0, 123456789, time.UTC),
			TurnNumber: 7,
			Tools: []bindings.ToolDescriptor{
				{
					ID: "acme.search", Version: "1.2.0", Description: "finds <clauses>", InputSchema: schema, OutputSchema: json.RawMessage(` [1, 2] `),
					Secrets: []string{"key"}, Env: map[string]string{"REGION": "eu"},
					Config: map[string]any{"limit": 5, "ratio": float32(0.5), "nested": map[string]int{"a": 1}, "list": []int{1, 2}, "s": "x", "nil": nil},
				},
				{ID: "acme.mail", Version: "2.1.3", Annotations: &bindings.ToolAnnotations{Title: "Mail", DestructiveHint: &yes, OpenWorldHint: &no},
					Gate: &agent.ToolGate{Mode: "always_ask", RequiredRole: "senior"}},
				{ID: "acme.read", Version: "1.0.0", Annotations: &bindings.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
			},
			Guardrails: []bindings.Guardrail{{ID: "g", Kind: "output", CheckID: "pii", Action: "block", Config: json.RawMessage(`{ "k" : [ 1 ] }`)}},
			Policy: Policy{AllowProviders: &[]string{"p"}, DenyModels: []string{"m"}, MaxCostUsd: &cost, MaxWallMs: &wall,
				Hitl: &bindings.HitlSpec{MaxTimeoutMs: &timeout, ToolFloors: map[string]agent.ToolGate{"t": {Mode: "always_ask", RequiredRole: "senior"}}, AfterTurns: &afterTurns}},
			Route: ProviderRef{Provider: "p", Model: "m"},
			Model: bindings.ModelInfo{ID: "m", Features: []string{"tool-use"}, ContextWindow: 128000, InputPricePerMTok: 0.1},
			Hitl: EffectiveHitlPolicy{TimeoutMs: 1000, ReviewerRole: "standard", OnTimeout: "escalate", AfterTurns: &afterTurns,
				ToolGates: &agent.ToolGates{Overrides: map[string]agent.ToolGate{"acme.mail": {Mode: "always_ask"}}}},
			SessionGate:  SessionGateResult{Required: true, AfterTurns: 3, TurnNumber: 7, Reason: "r"},
			Budget:       budgetCaps{MaxSteps: 6, MaxCostUsd: &cost, MaxWallMs: 60000},
			HistoryLimit: 20,
			SubAgents:    []agentTool{{Name: "research", AgentID: "acme.research", AgentVersion: "1.2.0", Range: "^1.0.0", Description: "finds <law>", InputSchema: schema}},
			Handoffs:     []agentTool{{Name: "billing", AgentID: "acme.billing", AgentVersion: "1.0.0", Range: "1.x", InputSchema: json.RawMessage(` {"type": "object"} `)}},
		},
		"invalid utf-8": {Tools: []bindings.ToolDescriptor{{ID: "t\xff", Config: map[string]any{"n": 1}}}},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			want, err := drive.DecodeResult[setupState](&bindings.JournalEntry{Key: NodeSetup, Status: bindings.StepCompleted, Output: raw})
			if err != nil {
				t.Fatal(err)
			}
			got, err := normalizeSetup(s, raw)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("normalized setup differs from the decoded one (-decoded +normalized):\n%s", d)
			}
			// Idempotent: a state decoded already (a drive that found setup
			// journaled by another) normalizes to itself.
			again, err := normalizeSetup(want, raw)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, again); d != "" {
				t.Errorf("normalizing a decoded setup changed it:\n%s", d)
			}
			// In place, over lists of its own (as flow passes setup's).
			own := s
			own.Tools, own.Guardrails = slices.Clone(s.Tools), slices.Clone(s.Guardrails)
			own.SubAgents, own.Handoffs = slices.Clone(s.SubAgents), slices.Clone(s.Handoffs)
			inPlace, err := normalizeSetupOwn(own, raw)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, inPlace); d != "" {
				t.Errorf("normalized in place, the setup differs from the decoded one (-decoded +normalized):\n%s", d)
			}
			for i, d := range got.Tools {
				if len(d.Env) > 0 && reflect.ValueOf(d.Env).UnsafePointer() == reflect.ValueOf(s.Tools[i].Env).UnsafePointer() {
					t.Errorf("tool %d env is the descriptor's own map", i)
				}
				if len(d.Config) > 0 && reflect.ValueOf(d.Config).UnsafePointer() == reflect.ValueOf(s.Tools[i].Config).UnsafePointer() {
					t.Errorf("tool %d config is the descriptor's own map", i)
				}
			}
		})
	}
}

// TestNormalizeSetupKnowsEveryField: normalizeSetup handles the fields of
// these types one by one; a new field must be considered there (and added
// to TestNormalizeSetupIsDecode) before this list is updated.
func TestNormalizeSetupKnowsEveryField(t *testing.T) {
	for _, c := range []struct {
		v    any
		want []string
	}{
		{setupState{}, []string{"Now", "TurnNumber", "Tools", "Guardrails", "Policy", "Route", "Model", "Hitl", "SessionGate", "Budget", "HistoryLimit", "SubAgents", "Handoffs", "Depth"}},
		{agentTool{}, []string{"Name", "AgentID", "AgentVersion", "Range", "Description", "InputSchema"}},
		{bindings.ToolDescriptor{}, []string{"ID", "Version", "Description", "InputSchema", "OutputSchema", "Secrets", "Env", "Config", "Annotations", "Gate"}},
		{bindings.ToolAnnotations{}, []string{"Title", "ReadOnlyHint", "DestructiveHint", "IdempotentHint", "OpenWorldHint"}},
		{bindings.Guardrail{}, []string{"ID", "Kind", "CheckID", "Action", "Config"}},
		{Policy{}, []string{"AllowProviders", "DenyProviders", "AllowModels", "DenyModels", "MaxCostUsd", "MaxSteps", "MaxWallMs", "Hitl"}},
		{bindings.HitlSpec{}, []string{"MaxTimeoutMs", "MinReviewerRole", "ToolFloors", "OnTimeout", "AfterTurns"}},
		{bindings.ModelInfo{}, []string{"ID", "Features", "ContextWindow", "InputPricePerMTok", "OutputPricePerMTok"}},
		{EffectiveHitlPolicy{}, []string{"TimeoutMs", "ReviewerRole", "OnTimeout", "AfterTurns", "ToolGates", "ToolFloors"}},
		{agent.ToolGates{}, []string{"Default", "Overrides"}},
		{agent.ToolGate{}, []string{"Mode", "RequiredRole"}},
		{SessionGateResult{}, []string{"Required", "AfterTurns", "TurnNumber", "Reason"}},
		{budgetCaps{}, []string{"MaxSteps", "MaxCostUsd", "MaxWallMs", "MaxToolCalls"}},
		{ProviderRef{}, []string{"Provider", "Model"}},
	} {
		typ := reflect.TypeOf(c.v)
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s fields changed (-known +now): normalizeSetup may need to handle them:\n%s", typ, d)
		}
	}
}
