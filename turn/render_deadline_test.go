package turn_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/prompt"
	"github.com/kindgi/agents/turn"
)

// slowInstructions render until they hit the work bound: 100,000
// comparisons of a 40,000-item list. The bound caps a render's time (5–15
// ms on a 2-core machine), so the deadlines below are 1 ms: a render ends
// at its bound before a deadline only on a machine several times faster,
// and a deadline that lands before the render began aborts the turn too.
var slowInstructions = `{% assign a = "` + strings.Repeat("ab", 20_000) + `" | split: "" %}` +
	`{% for i in (1..100000) %}{% if a == a %}{% endif %}{% endfor %}For {{ firmName }}.`

// TestDeadlineStopsARender: the render-prompt step renders with the turn's
// context, so maxWallMs and the caller's cancellation stop a render that
// is under way: the turn is aborted (timeout, external) rather than
// failing at the render's work bound, no render-failure is journaled and the model is
// never called.
func TestDeadlineStopsARender(t *testing.T) {
	probe := newFixture(t, nil, func(s *agent.Spec) { s.Instructions = slowInstructions })
	start := time.Now()
	if _, err := prompt.Render(probe.agent, prompt.Context{Parameters: map[string]any{"firmName": "x"}}); agents.CodeOf(err) != agents.CodeRenderFailure {
		t.Fatalf("Render = %v, want the work bound", err)
	}
	full := time.Since(start)
	tests := []struct {
		name   string
		wallMs int64
		parent time.Duration
		reason string
	}{
		{"maxWallMs", 1, 0, agents.AbortTimeout},
		{"cancellation", 60_000, time.Millisecond, agents.AbortExternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, searchThenAnswer(), func(s *agent.Spec) {
				s.Instructions = slowInstructions
				s.Budget.MaxWallMs = &tt.wallMs
			})
			ctx := t.Context()
			if tt.parent > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.parent)
				defer cancel()
			}
			start := time.Now()
			res, err := turn.Invoke(ctx, f.input("Draft."), f.bindings())
			var ta *agents.TurnAbortedError
			if !errors.As(err, &ta) || ta.Reason != tt.reason {
				t.Fatalf("Invoke = %v, want turn-aborted %s", err, tt.reason)
			}
			// Had the render not stopped at the deadline, it would have run
			// to its work bound and the turn would have failed with
			// render-failure: the code above is the proof, not the time
			// (wall times are noise on a loaded machine; logged only).
			t.Logf("stopped after %v; the whole render takes %v", time.Since(start), full)
			if n := f.provider.Calls(); n != 0 {
				t.Errorf("the model was called %d times", n)
			}
			if res.RunID == "" {
				return
			}
			for _, e := range f.journal(res.RunID) {
				if e.Node == turn.NodeRenderPrompt && e.Status == bindings.StepFailed {
					t.Errorf("render-prompt journaled as failed: %+v", e.Error)
				}
			}
		})
	}
}
