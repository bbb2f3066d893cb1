package modelresp

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kindgi/agents/bindings"
)

// TestFixCalls: invalid and repeated ids get call-<i>-<position> (x
// appended while taken), invalid names InvalidName, and the input is not
// written to; past 16 calls the ids are tracked in a map, to the same
// effect.
func TestFixCalls(t *testing.T) {
	if FixCalls(1, nil) != nil {
		t.Error("no calls: want nil")
	}
	in := []bindings.ToolCall{
		{ID: "", Name: "t"},
		{ID: "dup", Name: "t"},
		{ID: "dup", Name: ""},
		{ID: "call-2-5", Name: strings.Repeat("n", MaxNameLength+1)},
		{ID: "bad\x01", Name: "bad\xff"},
		{ID: strings.Repeat("y", MaxIDLength), Name: strings.Repeat("n", MaxNameLength)},
	}
	want := []bindings.ToolCall{
		{ID: "call-2-1", Name: "t"},
		{ID: "dup", Name: "t"},
		{ID: "call-2-3", Name: InvalidName},
		{ID: "call-2-5", Name: InvalidName},
		{ID: "call-2-5x", Name: InvalidName},
		{ID: strings.Repeat("y", MaxIDLength), Name: strings.Repeat("n", MaxNameLength)},
	}
	got := FixCalls(2, in)
	for j := range want {
		if got[j].ID != want[j].ID || got[j].Name != want[j].Name {
			t.Errorf("call %d = %q %.20q, want %q %.20q", j+1, got[j].ID, got[j].Name, want[j].ID, want[j].Name)
		}
	}
	if in[0].ID != "" || in[2].Name != "" {
		t.Error("FixCalls wrote to its input")
	}
	many := make([]bindings.ToolCall, 40)
	for j := range many {
		many[j] = bindings.ToolCall{ID: fmt.Sprint("c", j%20), Name: "t"}
	}
	seen := map[string]bool{}
	for _, c := range FixCalls(1, many) {
		if seen[c.ID] {
			t.Fatalf("id %q repeats", c.ID)
		}
		seen[c.ID] = true
	}
}

// TestBadUsage: only finite non-negative costs and token counts count.
func TestBadUsage(t *testing.T) {
	for _, tt := range []struct {
		u   bindings.Usage
		bad bool
	}{
		{bindings.Usage{InputTokens: 3, OutputTokens: 4, CostUsd: 0.5}, false},
		{bindings.Usage{}, false},
		{bindings.Usage{CostUsd: math.NaN()}, true},
		{bindings.Usage{CostUsd: math.Inf(1)}, true},
		{bindings.Usage{CostUsd: -1}, true},
		{bindings.Usage{InputTokens: -1}, true},
		{bindings.Usage{OutputTokens: -1}, true},
	} {
		if got := BadUsage(tt.u) != ""; got != tt.bad {
			t.Errorf("BadUsage(%+v) = %q, want bad %v", tt.u, BadUsage(tt.u), tt.bad)
		}
	}
}
