package turn_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// TestInvokeRunIDNeverAnswersAnotherInput: an Invoke whose run id an
// earlier turn used replays that turn only for the same input; any other
// input (another conversation first: a host deriving run ids from client
// idempotency keys) is run-input-mismatch, with nothing stored or called.
func TestInvokeRunIDNeverAnswersAnotherInput(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	b := f.bindings()
	in := f.input("Find a confidentiality clause.")
	in.RunID = "idem-key-1"
	first, err := turn.Invoke(t.Context(), in, b)
	if err != nil || first.Status != turn.StatusCompleted {
		t.Fatalf("first turn: %+v, %v", first, err)
	}
	other, err := f.store.OpenConversation(t.Context(), bindings.OpenConversationInput{
		TenantID: tenant, ProjectID: project, ID: "conv-2", AgentID: f.agent.ID, AgentVersion: f.agent.Version,
	})
	if err != nil {
		t.Fatal(err)
	}
	v2 := drafterSpec(t)
	v2.Version = "1.0.1"
	a2, err := agent.Define(v2)
	if err != nil {
		t.Fatal(err)
	}
	journal := len(f.journal(in.RunID))
	calls := f.provider.Calls()
	for _, c := range []struct {
		name, field string
		edit        func(*turn.Input)
	}{
		{"another conversation", "conversationId", func(in *turn.Input) { in.ConversationID = other.ID; in.UserMessage = "Hello from another user." }},
		{"another conversation, same message", "conversationId", func(in *turn.Input) { in.ConversationID = other.ID }},
		{"another user message", "userMessage", func(in *turn.Input) { in.UserMessage = "Something else." }},
		{"other parameters", "parameters", func(in *turn.Input) { in.Parameters = map[string]any{"firmName": "Other LLP"} }},
		{"no parameters", "parameters", func(in *turn.Input) { in.Parameters = nil }},
		{"another project", "projectId", func(in *turn.Input) { in.ProjectID = "other-project" }},
		{"a participant", "participantId", func(in *turn.Input) { in.ParticipantID = "user-7" }},
		{"another agent version", "agent", func(in *turn.Input) { in.Agent = a2 }},
		{"a dry run", "dryRun", func(in *turn.Input) { in.DryRun = true }},
		{"a principal", "principal", func(in *turn.Input) { in.Principal = &bindings.Principal{ID: "mallory"} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			again := in
			c.edit(&again)
			res, err := turn.Invoke(t.Context(), again, b)
			var mm *agents.RunInputMismatchError
			if !errors.As(err, &mm) || agents.CodeOf(err) != agents.CodeRunInputMismatch {
				t.Fatalf("Invoke = %+v, %v; want run-input-mismatch", res, err)
			}
			if mm.RunID != in.RunID || mm.Field != c.field {
				t.Errorf("mismatch %+v, want run %s, field %s", mm, in.RunID, c.field)
			}
			if agents.IsRetryable(err) {
				t.Error("a mismatch is retryable")
			}
			if res.Response.Content != "" {
				t.Errorf("the other input got an answer: %q", res.Response.Content)
			}
		})
	}
	if n := f.provider.Calls(); n != calls {
		t.Errorf("the model was called %d more times", n-calls)
	}
	if n := len(f.journal(in.RunID)); n != journal {
		t.Errorf("journal grew from %d to %d entries", journal, n)
	}
	ms, err := f.store.ReadMessages(t.Context(), bindings.ReadMessagesInput{TenantID: tenant, ConversationID: other.ID, Limit: -1})
	if err != nil || len(ms) != 0 {
		t.Errorf("the other conversation holds %d messages (%v), want none", len(ms), err)
	}
	// The same input replays the stored result, calling nothing.
	replay, err := turn.Invoke(t.Context(), in, b)
	if err != nil || !reflect.DeepEqual(replay.Response, first.Response) {
		t.Fatalf("replay: %+v, %v; want %+v", replay.Response, err, first.Response)
	}
	if n := f.provider.Calls(); n != calls {
		t.Errorf("the replay called the model")
	}
}

// TestInvokeRefusesInvalidIDs: every id of the input passes
// bindings.CheckID before anything is stored or called.
func TestInvokeRefusesInvalidIDs(t *testing.T) {
	long := strings.Repeat("r", bindings.MaxIDLength+1)
	for _, c := range []struct {
		name string
		edit func(*turn.Input)
	}{
		{"run id too long", func(in *turn.Input) { in.RunID = long }},
		{"run id with NUL", func(in *turn.Input) { in.RunID = "run\x00x" }},
		{"run id with newline", func(in *turn.Input) { in.RunID = "run\nx" }},
		{"tenant id with control character", func(in *turn.Input) { in.TenantID = tenant + "\x07" }},
		{"conversation id too long", func(in *turn.Input) { in.ConversationID = long }},
		{"project id with tab", func(in *turn.Input) { in.ProjectID = "p\t1" }},
		{"participant id not UTF-8", func(in *turn.Input) { in.ParticipantID = "u\xff" }},
		{"principal id too long", func(in *turn.Input) { in.Principal = &bindings.Principal{ID: long} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, searchThenAnswer(), nil)
			in := f.input("Find a clause.")
			in.RunID = "run-ok"
			c.edit(&in)
			_, err := turn.Invoke(t.Context(), in, f.bindings())
			if agents.CodeOf(err) != agents.CodeInvalidMessage {
				t.Fatalf("Invoke: %v, want invalid-message", err)
			}
			if f.provider.Calls() != 0 || len(f.messages()) != 0 {
				t.Errorf("%d model calls, %d messages: something ran", f.provider.Calls(), len(f.messages()))
			}
			if _, err := f.store.Read(t.Context(), in.TenantID, in.RunID); err == nil {
				t.Error("a snapshot was stored")
			}
		})
	}
	t.Run("resume", func(t *testing.T) {
		f := newFixture(t, nil, nil)
		_, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: long, Agent: f.agent}, f.bindings())
		if agents.CodeOf(err) != agents.CodeInvalidMessage {
			t.Fatalf("Resume: %v, want invalid-message", err)
		}
	})
}

// TestLongestRunIDDerivesValidIDs: a run id of bindings.MaxIDLength bytes
// runs a turn with a gated tool call, and every id the turn derives from it
// (messages, approvals, request ids) is a valid id.
func TestLongestRunIDDerivesValidIDs(t *testing.T) {
	f := newFixture(t, emailThenAnswer(), nil)
	b := f.bindings()
	in := f.input("Send the draft to Globex.")
	in.RunID = strings.Repeat("é", bindings.MaxIDLength/2)
	res, err := turn.Invoke(t.Context(), in, b)
	if err != nil || res.Status != turn.StatusSuspended || len(res.Approvals) != 1 {
		t.Fatalf("Invoke: %+v, %v; want a suspended turn", res, err)
	}
	if err := bindings.CheckID("approval id", res.Approvals[0].ID); err != nil {
		t.Errorf("approval id: %v", err)
	}
	f.decide(res.Approvals, true)
	if res, err = turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: in.RunID, Agent: f.agent}, b); err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("Resume: %+v, %v", res, err)
	}
	ids := map[string]bool{}
	for _, m := range f.messages() {
		if err := bindings.CheckID("message id", m.ID); err != nil {
			t.Errorf("message %s: %v", m.ID, err)
		}
		if ids[m.ID] {
			t.Errorf("message id %s twice", m.ID)
		}
		ids[m.ID] = true
	}
	for _, id := range f.log.requestIDs("acme.send-email") {
		if err := bindings.CheckID("request id", id); err != nil {
			t.Errorf("request id: %v", err)
		}
	}
	if len(ids) != 4 {
		t.Errorf("%d messages, want 4", len(ids))
	}
}

// scriptOf is a helper for tests that build scripts inline.
func scriptOf(rs ...scripted.Response) []scripted.Response { return rs }

// TestExpireSweepWithHashedApprovalIDs: the approval sweep finds the step
// of an approval whose derived id was hashed (a run id of
// bindings.MaxIDLength bytes) and moves it to its on-timeout action.
func TestExpireSweepWithHashedApprovalIDs(t *testing.T) {
	f := newFixture(t, emailThenAnswer(), nil)
	b := f.bindings()
	b.TenantPolicy = &bindings.TenantPolicy{Hitl: &bindings.HitlSpec{OnTimeout: turn.OnTimeoutDeny}}
	in := f.input("Send the draft to Globex.")
	in.RunID = strings.Repeat("r", bindings.MaxIDLength)
	res, err := turn.Invoke(t.Context(), in, b)
	if err != nil || res.Status != turn.StatusSuspended {
		t.Fatalf("Invoke: %+v, %v", res.Status, err)
	}
	if id := res.Approvals[0].ID; len(id) > bindings.MaxIDLength || !strings.Contains(id, "/~") {
		t.Fatalf("approval id %q: want a hashed id within the limit", id)
	}
	f.clock.Advance(25 * time.Hour)
	lookup := func(context.Context, string, string, string) (agent.Agent, error) { return f.agent, nil }
	st, err := turn.ExpireApprovals(t.Context(), b, lookup, f.clock.Now())
	if err != nil || st.Moved != 1 || st.Failed != 0 {
		t.Fatalf("sweep: %+v, %v; want one approval moved", st, err)
	}
	if run, _ := f.store.GetRun(t.Context(), tenant, in.RunID); run.Status != bindings.RunCompleted {
		t.Errorf("run status %s, want completed", run.Status)
	}
}
