package turn_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/turn"
)

// TestEveryNumberDefineAcceptsWorks: for the extreme values of every
// numeric field of a spec, either Define refuses the value with an issue at
// the field that names the allowed range, or a turn with the agent works
// (no overflowed duration aborting it, no approval expired at once).
func TestEveryNumberDefineAcceptsWorks(t *testing.T) {
	intp := func(v int) *int { return &v }
	int64p := func(v int64) *int64 { return &v }
	floatp := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name   string
		path   string
		edit   func(*agent.Spec)
		refuse bool
	}{
		{"maxWallMs max int64", "budget.maxWallMs", func(s *agent.Spec) { s.Budget.MaxWallMs = int64p(math.MaxInt64) }, false},
		{"maxWallMs past Duration's milliseconds", "budget.maxWallMs", func(s *agent.Spec) { s.Budget.MaxWallMs = int64p(math.MaxInt64/int64(time.Millisecond) + 1) }, false},
		{"maxWallMs 0", "budget.maxWallMs", func(s *agent.Spec) { s.Budget.MaxWallMs = int64p(0) }, true},
		{"maxWallMs min int64", "budget.maxWallMs", func(s *agent.Spec) { s.Budget.MaxWallMs = int64p(math.MinInt64) }, true},
		{"maxSteps max int", "budget.maxSteps", func(s *agent.Spec) { s.Budget.MaxSteps = intp(math.MaxInt) }, true},
		{"maxSteps max", "budget.maxSteps", func(s *agent.Spec) { s.Budget.MaxSteps = intp(agent.MaxMaxSteps) }, false},
		{"maxCostUsd max float64", "budget.maxCostUsd", func(s *agent.Spec) { s.Budget.MaxCostUsd = floatp(math.MaxFloat64) }, false},
		{"maxCostUsd +Inf", "budget.maxCostUsd", func(s *agent.Spec) { s.Budget.MaxCostUsd = floatp(math.Inf(1)) }, true},
		{"maxCostUsd NaN", "budget.maxCostUsd", func(s *agent.Spec) { s.Budget.MaxCostUsd = floatp(math.NaN()) }, true},
		{"limit max int", "retrieval[0].limit", func(s *agent.Spec) { s.Retrieval[0].Limit = intp(math.MaxInt) }, true},
		{"limit max", "retrieval[0].limit", func(s *agent.Spec) { s.Retrieval[0].Limit = intp(agent.MaxRetrievalLimit) }, false},
		{"historyLimit max int", "conversationPolicy.historyLimit", func(s *agent.Spec) { s.ConversationPolicy.HistoryLimit = intp(math.MaxInt) }, true},
		{"historyLimit max", "conversationPolicy.historyLimit", func(s *agent.Spec) { s.ConversationPolicy.HistoryLimit = intp(agent.MaxHistoryLimit) }, false},
		{"historyLimit 0", "conversationPolicy.historyLimit", func(s *agent.Spec) { s.ConversationPolicy.HistoryLimit = intp(0) }, false},
		{"autoClose max int", "conversationPolicy.autoCloseAfterInactiveSeconds", func(s *agent.Spec) { s.ConversationPolicy.AutoCloseAfterInactiveSeconds = intp(math.MaxInt) }, true},
		{"autoClose max", "conversationPolicy.autoCloseAfterInactiveSeconds", func(s *agent.Spec) {
			s.ConversationPolicy.AutoCloseAfterInactiveSeconds = intp(agent.MaxAutoCloseSeconds)
		}, false},
		{"hitlAfterTurns max int", "conversationPolicy.hitlAfterTurns", func(s *agent.Spec) { s.ConversationPolicy.HitlAfterTurns = intp(math.MaxInt) }, false},
		{"hitlAfterTurns 0", "conversationPolicy.hitlAfterTurns", func(s *agent.Spec) { s.ConversationPolicy.HitlAfterTurns = intp(0) }, true},
		{"afterTurns max int", "conversationPolicy.hitl.afterTurns", func(s *agent.Spec) { s.ConversationPolicy.Hitl.AfterTurns = intp(math.MaxInt) }, false},
		{"afterTurns min int", "conversationPolicy.hitl.afterTurns", func(s *agent.Spec) { s.ConversationPolicy.Hitl.AfterTurns = intp(math.MinInt) }, true},
		{"timeoutMs max int64", "conversationPolicy.hitl.timeoutMs", func(s *agent.Spec) { s.ConversationPolicy.Hitl.TimeoutMs = int64p(math.MaxInt64) }, false},
		{"timeoutMs min int64", "conversationPolicy.hitl.timeoutMs", func(s *agent.Spec) { s.ConversationPolicy.Hitl.TimeoutMs = int64p(math.MinInt64) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := drafterSpec(t)
			c.edit(&spec)
			_, err := agent.Define(spec)
			var ia *agents.InvalidAgentError
			if c.refuse {
				if !errors.As(err, &ia) || len(ia.Issues) != 1 || ia.Issues[0].Path != c.path {
					t.Fatalf("Define: %v, want one issue at %s", err, c.path)
				}
				if msg := ia.Issues[0].Message; !strings.ContainsAny(msg, "0123456789") || !(strings.Contains(msg, "use ") || strings.Contains(msg, "range")) {
					t.Errorf("issue %q does not name the allowed range", msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Define: %v", err)
			}
			// The turn works: one search and an answer, then a gated email
			// whose approval is pending until decided.
			script := append(searchThenAnswer(), emailThenAnswer()...)
			f := newFixture(t, script, c.edit)
			b := f.bindings()
			res, err := turn.Invoke(t.Context(), f.input("Find a confidentiality clause."), b)
			if err != nil || res.Status != turn.StatusCompleted {
				t.Fatalf("turn: %+v, %v", res.Status, err)
			}
			res, err = turn.Invoke(t.Context(), f.input("Send the draft to Globex."), b)
			if err != nil || res.Status != turn.StatusSuspended || len(res.Approvals) != 1 {
				t.Fatalf("gated turn: %+v, %v", res.Status, err)
			}
			if a := res.Approvals[0]; !a.ExpiresAt.After(a.CreatedAt) {
				t.Errorf("the approval expires at %v, created at %v", a.ExpiresAt, a.CreatedAt)
			}
			f.clock.Advance(time.Hour)
			f.decide(res.Approvals, true)
			res, err = turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: res.RunID, Agent: f.agent}, b)
			if err != nil || res.Status != turn.StatusCompleted {
				t.Fatalf("resumed turn: %+v, %v", res.Status, err)
			}
		})
	}
}
