package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// strictHistory checks messages as Chat Completions and Anthropic do: the
// tool calls of an assistant message are answered by the tool messages
// right after it, each call once, before any other message; a tool message
// answers a call of the assistant message it follows; tool call ids are
// unique within the request.
func strictHistory(msgs []bindings.ChatMessage) error {
	ids := map[string]int{}
	var open map[string]bool // calls of the last assistant message not answered yet
	var from int
	for i, m := range msgs {
		if m.Role != bindings.ChatTool && len(open) > 0 {
			return fmt.Errorf("message %d (%s): the tool calls %v of message %d have no result", i, m.Role, keys(open), from)
		}
		switch m.Role {
		case bindings.ChatTool:
			if !open[m.ToolCallID] {
				return fmt.Errorf("message %d: a tool result for %q, which the assistant message before it did not call (or that was answered already)", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		case bindings.ChatAssistant:
			if len(m.ToolCalls) == 0 && m.Content == "" {
				return fmt.Errorf("message %d: an empty assistant message", i)
			}
			open, from = map[string]bool{}, i
			for _, c := range m.ToolCalls {
				if j, dup := ids[c.ID]; dup {
					return fmt.Errorf("message %d: tool call id %q was used by message %d", i, c.ID, j)
				}
				ids[c.ID] = i
				open[c.ID] = true
			}
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("the tool calls %v of message %d have no result", keys(open), from)
	}
	return nil
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// strictProvider is the scripted provider behind a model API that rejects
// malformed histories (strictHistory) with an error, as the real ones do.
type strictProvider struct {
	*scripted.Provider
	mu       sync.Mutex
	rejected []error
}

func (p *strictProvider) Generate(ctx context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	if err := strictHistory(req.Messages); err != nil {
		p.mu.Lock()
		p.rejected = append(p.rejected, err)
		p.mu.Unlock()
		return bindings.GenerateResponse{}, &agents.ModelInvocationError{Provider: p.ID(), Model: req.Model, Status: 400, Message: "invalid request: " + err.Error()}
	}
	return p.Provider.Generate(ctx, req)
}

// TestHistoryStaysWellFormed: turns that failed at a tool call, were
// cancelled during one, had a call denied, had an approval expire (deny
// and fail), and were halted by a guardrail leave the conversation usable:
// every later request is one a strict model API accepts — with a provider
// that gives no call ids, so every turn's first call is call-1-1 — and a
// later turn succeeds.
func TestHistoryStaysWellFormed(t *testing.T) {
	f := newFixture(t, nil, nil)
	sp := &strictProvider{Provider: scripted.New(nil, nil)}
	var mode string // how the clause search behaves: "fail", "cancel" or ""
	var cancelTurn context.CancelFunc
	f.addTool("acme.clause-search", "1.3.0", clauseSchema, func(ctx context.Context, _ json.RawMessage, _ bindings.CallContext) (json.RawMessage, error) {
		switch mode {
		case "fail":
			return nil, &agents.ToolInvocationError{ToolID: "acme.clause-search", Message: "the index is down"}
		case "cancel":
			cancelTurn()
			return nil, context.Canceled
		}
		return json.RawMessage(`{"clauses":["C-7"]}`), nil
	})
	search := scripted.Call("", "acme.clause-search", map[string]any{"query": "confidentiality"})
	same := scripted.Call("call_1", "acme.clause-search", map[string]any{"query": "confidentiality"})
	email := scripted.Call("", "acme.send-email", map[string]any{"to": "legal", "subject": "NDA", "body": "Draft."})
	b := f.bindings()
	b.Providers = bindings.Providers{sp}
	resume := func(t *testing.T, runID string, b turn.Bindings) (turn.Result, error) {
		return turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: runID, Agent: f.agent}, b)
	}
	// expire parks a turn (asked msg) on its approval under a tenant
	// policy whose timeout action is onTimeout, lets the approval expire
	// and resumes it.
	expire := func(onTimeout, msg string) func(t *testing.T) (turn.Result, error) {
		return func(t *testing.T) (turn.Result, error) {
			bt := b
			bt.TenantPolicy = &bindings.TenantPolicy{Hitl: &bindings.HitlSpec{OnTimeout: onTimeout}}
			res, err := turn.Invoke(t.Context(), f.input(msg), bt)
			if err != nil || res.Status != turn.StatusSuspended {
				return res, err
			}
			f.clock.Advance(25 * time.Hour)
			return resume(t, res.RunID, bt)
		}
	}
	steps := []struct {
		name     string
		script   []scripted.Response
		run      func(t *testing.T) (turn.Result, error)
		wantCode string
	}{
		{"failed at a tool call", scriptOf(search), func(t *testing.T) (turn.Result, error) {
			mode = "fail"
			return turn.Invoke(t.Context(), f.input("Search, please."), b)
		}, agents.CodeToolInvocationFailed},
		{"cancelled during a tool call", scriptOf(search), func(t *testing.T) (turn.Result, error) {
			mode = "cancel"
			ctx, cancel := context.WithCancel(t.Context())
			cancelTurn = cancel
			defer cancel()
			return turn.Invoke(ctx, f.input("Search again."), b)
		}, agents.CodeTurnAborted},
		{"call denied", scriptOf(email, scripted.Say("I did not send it.")), func(t *testing.T) (turn.Result, error) {
			mode = ""
			res, err := turn.Invoke(t.Context(), f.input("Send it."), b)
			if err != nil || res.Status != turn.StatusSuspended {
				return res, err
			}
			f.decide(res.Approvals, false)
			return resume(t, res.RunID, b)
		}, ""},
		{"approval expired (deny)", scriptOf(email, scripted.Say("Nobody approved it.")), expire(turn.OnTimeoutDeny, "Send it now."), ""},
		{"approval expired (fail)", scriptOf(email), expire(turn.OnTimeoutFail, "Send it at last."), agents.CodeHitlRequired},
		{"halted by a guardrail", scriptOf(search, scripted.Say("Write to legal@globex.test.")), func(t *testing.T) (turn.Result, error) {
			return turn.Invoke(t.Context(), f.input("Who do I write to?"), b)
		}, agents.CodeGuardrailViolation},
		{"one call id in two iterations", scriptOf(same, same, scripted.Say("Searched twice.")), func(t *testing.T) (turn.Result, error) {
			return turn.Invoke(t.Context(), f.input("Search twice."), b)
		}, ""},
		{"a later turn succeeds", scriptOf(search, search, scripted.Say("Clause C-7 fits.")), func(t *testing.T) (turn.Result, error) {
			return turn.Invoke(t.Context(), f.input("Find the clause."), b)
		}, ""},
	}
	for _, s := range steps {
		sp.Append(s.script...)
		res, err := s.run(t)
		if code := agents.CodeOf(err); code != s.wantCode {
			t.Fatalf("%s: %+v, %v; want code %q", s.name, res.Status, err, s.wantCode)
		}
		if s.wantCode == "" && res.Status != turn.StatusCompleted {
			t.Fatalf("%s: status %s, want completed", s.name, res.Status)
		}
		for _, r := range sp.rejected {
			t.Errorf("%s: a request was rejected: %v", s.name, r)
		}
		sp.rejected = nil
	}
	reqs := sp.Requests()
	last := reqs[len(reqs)-1].Messages
	calls := 0
	for _, m := range last {
		calls += len(m.ToolCalls)
	}
	// The last request holds the answered calls of every turn in the
	// history window (historyLimit 20): the denied and the expired (deny)
	// calls, the halted turn's search, the two searches under one id (the
	// earlier renamed), and this turn's two searches.
	if calls != 7 {
		t.Errorf("the last request holds %d tool calls, want 7: %+v", calls, last)
	}
}
