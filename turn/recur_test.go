package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/providers/scripted"
	"github.com/kindgi/agents/turn"
)

// refusingStore is memstore that refuses every write carrying a journal
// entry for which refuse is true, with err, on every drive: a failure that
// recurs (a value the store cannot hold, a store that keeps failing at the
// same point).
type refusingStore struct {
	*memstore.Store
	refuse func(bindings.JournalEntry) bool
	err    error
}

func (s *refusingStore) refused(entries ...bindings.JournalEntry) bool {
	for _, e := range entries {
		if s.refuse(e) {
			return true
		}
	}
	return false
}

func (s *refusingStore) AppendStep(ctx context.Context, in bindings.AppendStepInput) (bindings.JournalEntry, bool, error) {
	if s.refused(in.Entry) {
		return bindings.JournalEntry{}, false, s.err
	}
	return s.Store.AppendStep(ctx, in)
}

// completed returns a refuse func matching the completed entry of key.
func completed(key string) func(bindings.JournalEntry) bool {
	return func(e bindings.JournalEntry) bool { return e.Key == key && e.Status == bindings.StepCompleted }
}

// driveUntilFinal invokes in, then resumes while the error is retryable,
// at most max drives; it returns the last error and the number of drives.
func driveUntilFinal(t *testing.T, f *fixture, in turn.Input, b turn.Bindings, max int) (error, int) {
	t.Helper()
	_, err := turn.Invoke(t.Context(), in, b)
	drives := 1
	for agents.IsRetryable(err) && drives < max {
		f.clock.Advance(1) // nothing else changes between drives
		_, err = turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: in.RunID, Agent: f.agent}, b)
		drives++
	}
	return err, drives
}

// TestRecurringFailureEndsTheRun: a model call whose result the store
// refuses the same way on every drive — transiently (the run stays
// resumable) or for good (a deterministic refusal) — ends the run: after
// at most Bindings.MaxStepAttempts model calls with step-attempts-
// exhausted, or at once with the refusal; then nothing is called again and
// IsRetryable is false. The attempts are counted in the journal, so a
// fresh set of bindings (another process) sees them.
func TestRecurringFailureEndsTheRun(t *testing.T) {
	const key = "agent-loop/1/model-call"
	for _, c := range []struct {
		name      string
		err       error
		max       int // Bindings.MaxStepAttempts (0: the default)
		wantCode  string
		wantCalls int
	}{
		{"transient, default attempts", &agents.PersistenceError{Op: "append", Err: errors.New("connection reset")}, 0, agents.CodeStepAttemptsExhausted, turn.DefaultMaxStepAttempts},
		{"transient, two attempts", &agents.PersistenceError{Op: "append", Err: errors.New("connection reset")}, 2, agents.CodeStepAttemptsExhausted, 2},
		{"uncoded, default attempts", errors.New("driver: bad connection"), 0, agents.CodeStepAttemptsExhausted, turn.DefaultMaxStepAttempts},
		{"permanent refusal", &agents.PersistenceError{Op: "append", Err: errors.New("unsupported Unicode escape sequence (SQLSTATE 22P05)"), Permanent: true}, 0, agents.CodePersistence, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			f.provider = scripted.New(scriptOf(scripted.Say("An answer the store refuses.")), &scripted.Options{Loop: true})
			store := &refusingStore{Store: f.store, refuse: completed(key), err: c.err}
			b := f.bindings()
			b.Providers = bindings.Providers{f.provider}
			b.Runs, b.Snapshots, b.Conversations, b.Journal = store, store, store, nil
			b.MaxStepAttempts = c.max
			in := f.input("Answer me.")
			in.RunID = "recurring"
			err, drives := driveUntilFinal(t, f, in, b, 50)
			if agents.CodeOf(err) != c.wantCode || agents.IsRetryable(err) {
				t.Fatalf("after %d drives: %v (retryable %v), want final %s", drives, err, agents.IsRetryable(err), c.wantCode)
			}
			if n := f.provider.Calls(); n != c.wantCalls {
				t.Errorf("%d model calls, want %d", n, c.wantCalls)
			}
			if c.wantCode == agents.CodeStepAttemptsExhausted {
				var ex *agents.StepAttemptsExhaustedError
				if !errors.As(err, &ex) || ex.StepKey != key || ex.Attempts != c.wantCalls || ex.RunID != in.RunID {
					t.Errorf("error %#v, want step %s after %d attempts", err, key, c.wantCalls)
				}
			}
			run, gerr := f.store.GetRun(t.Context(), tenant, in.RunID)
			if gerr != nil || run.Status != bindings.RunFailed {
				t.Errorf("run %+v, %v: want failed", run, gerr)
			}
			// Later drives, from fresh bindings, return the same error and
			// call nothing.
			calls := f.provider.Calls()
			_, again := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: in.RunID, Agent: f.agent}, b)
			if agents.CodeOf(again) != c.wantCode || agents.IsRetryable(again) || f.provider.Calls() != calls {
				t.Errorf("resume after the end: %v, %d more calls", again, f.provider.Calls()-calls)
			}
		})
	}
}

// TestRecurringToolFailureIsBounded: a tool whose output the store keeps
// refusing runs at most MaxStepAttempts times (with the same request id),
// then the run fails with step-attempts-exhausted.
func TestRecurringToolFailureIsBounded(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	key := "agent-loop/1/dispatch-tools/call_1"
	store := &refusingStore{Store: f.store, refuse: completed(key), err: &agents.PersistenceError{Op: "append", Err: errors.New("timeout")}}
	b := f.bindings()
	b.Runs, b.Snapshots, b.Conversations, b.Journal = store, store, store, nil
	b.MaxStepAttempts = 3
	in := f.input("Find a confidentiality clause.")
	in.RunID = "recurring-tool"
	err, drives := driveUntilFinal(t, f, in, b, 50)
	if agents.CodeOf(err) != agents.CodeStepAttemptsExhausted {
		t.Fatalf("after %d drives: %v, want step-attempts-exhausted", drives, err)
	}
	ids := f.log.requestIDs("acme.clause-search")
	if len(ids) != 3 {
		t.Fatalf("the tool ran %d times, want 3", len(ids))
	}
	for _, id := range ids {
		if id != ids[0] {
			t.Errorf("request ids %v differ", ids)
		}
	}
	if f.provider.Calls() != 1 {
		t.Errorf("%d model calls, want 1", f.provider.Calls())
	}
}

// TestNonFiniteUsageIsFinal: a provider reporting a cost that is NaN or
// infinite, or a negative cost or token count, fails the model call with
// model-invocation-failed, journaled: the run is failed and no later drive
// calls the model again.
func TestNonFiniteUsageIsFinal(t *testing.T) {
	for _, c := range []struct {
		name  string
		usage bindings.Usage
	}{
		{"NaN cost", bindings.Usage{InputTokens: 1, OutputTokens: 1, CostUsd: math.NaN()}},
		{"+Inf cost", bindings.Usage{CostUsd: math.Inf(1)}},
		{"-Inf cost", bindings.Usage{CostUsd: math.Inf(-1)}},
		{"negative cost", bindings.Usage{CostUsd: -0.5}},
		{"negative tokens", bindings.Usage{InputTokens: -10}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := scripted.Say("Fine.")
			r.Usage = c.usage
			f := newFixture(t, scriptOf(r, r, r), nil)
			b := f.bindings()
			in := f.input("Answer me.")
			in.RunID = "bad-usage"
			_, err := turn.Invoke(t.Context(), in, b)
			var me *agents.ModelInvocationError
			if !errors.As(err, &me) || agents.IsRetryable(err) {
				t.Fatalf("Invoke: %v, want a final model-invocation-failed", err)
			}
			_, err = turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: in.RunID, Agent: f.agent}, b)
			if agents.CodeOf(err) != agents.CodeModelInvocationFailed || f.provider.Calls() != 1 {
				t.Errorf("Resume: %v after %d model calls, want the same failure after 1", err, f.provider.Calls())
			}
			if run, _ := f.store.GetRun(t.Context(), tenant, in.RunID); run.Status != bindings.RunFailed {
				t.Errorf("run status %s, want failed", run.Status)
			}
		})
	}
}

// TestToolCallIDsAndNamesAreNormalized: tool call ids that are too long,
// hold control characters, are empty or repeat, and tool names that break
// the limits, are replaced deterministically before anything is stored;
// a call with an invalid name is answered to the model with an error and
// never runs.
func TestToolCallIDsAndNamesAreNormalized(t *testing.T) {
	args := map[string]any{"query": "confidentiality"}
	huge := strings.Repeat("x", 9000)
	calls := []bindings.ToolCall{
		scripted.ToolCall(huge, "acme.clause-search", args),                        // 1: too long
		scripted.ToolCall("call\x00nul", "acme.clause-search", args),               // 2: NUL
		scripted.ToolCall("dup", "acme.clause-search", args),                       // 3: kept
		scripted.ToolCall("dup", "acme.clause-search", args),                       // 4: repeated
		scripted.ToolCall("", "acme.clause-search", args),                          // 5: empty
		scripted.ToolCall("bad-name-1", strings.Repeat("n", 9000), args),           // 6: name too long
		scripted.ToolCall("bad-name-2", "acme.clause-search\x00", args),            // 7: name with NUL
		scripted.ToolCall("call-1-1", "acme.clause-search", args),                  // 8: takes a replacement's id
		scripted.ToolCall(strings.Repeat("y", turn.MaxToolCallIDLength), "", args), // 9: longest id, empty name
	}
	f := newFixture(t, scriptOf(scripted.Response{ToolCalls: calls}, scripted.Say("Done.")), nil)
	res, err := turn.Invoke(t.Context(), f.input("Find clauses."), f.bindings())
	if err != nil || res.Status != turn.StatusCompleted {
		t.Fatalf("Invoke: %+v, %v", res, err)
	}
	msgs := f.messages()
	if len(msgs) != 2+len(calls)+1 {
		t.Fatalf("%d messages, want %d", len(msgs), 2+len(calls)+1)
	}
	wantIDs := []string{"call-1-1", "call-1-2", "dup", "call-1-4", "call-1-5", "bad-name-1", "bad-name-2", "call-1-8", strings.Repeat("y", turn.MaxToolCallIDLength)}
	var gotIDs []string
	for _, c := range msgs[1].ToolCalls {
		gotIDs = append(gotIDs, c.ID)
	}
	if strings.Join(gotIDs, ",") != strings.Join(wantIDs, ",") {
		t.Errorf("call ids %q, want %q", gotIDs, wantIDs)
	}
	for i, c := range msgs[1].ToolCalls {
		if i >= 5 && i <= 6 || i == 8 {
			if c.Name != turn.InvalidToolName {
				t.Errorf("call %d: name %.20q, want %s", i+1, c.Name, turn.InvalidToolName)
			}
		}
		tm := msgs[2+i]
		if tm.ToolCallID != c.ID {
			t.Errorf("tool message %d answers %q, want %q", i+1, tm.ToolCallID, c.ID)
		}
		var meta struct{ Status string }
		_ = json.Unmarshal(tm.Metadata, &meta)
		wantStatus := "ok"
		if c.Name == turn.InvalidToolName {
			wantStatus = "unknown-tool"
		}
		if meta.Status != wantStatus {
			t.Errorf("call %d: status %s, want %s (%s)", i+1, meta.Status, wantStatus, tm.Content)
		}
	}
	if n := f.log.count("acme.clause-search"); n != 6 {
		t.Errorf("the tool ran %d times, want 6", n)
	}
}

// TestToolCallsPerResponseAreCapped: of a response with 1,000 tool calls,
// the first Bindings.MaxToolCallsPerResponse run; the rest never run, are
// not stored, and are answered to the model with an error in the next
// request — the same on a resumed drive.
func TestToolCallsPerResponseAreCapped(t *testing.T) {
	for _, c := range []struct {
		name string
		cap  int
		want int
	}{
		{"default", 0, turn.DefaultMaxToolCallsPerResponse},
		{"three", 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := make([]bindings.ToolCall, 1000)
			for i := range calls {
				calls[i] = scripted.ToolCall("", "acme.clause-search", map[string]any{"query": "q"})
			}
			f := newFixture(t, scriptOf(scripted.Response{ToolCalls: calls}, scripted.Say("Done.")), nil)
			b := f.bindings()
			b.MaxToolCallsPerResponse = c.cap
			res, err := turn.Invoke(t.Context(), f.input("Search a lot."), b)
			if err != nil || res.Status != turn.StatusCompleted {
				t.Fatalf("Invoke: %+v, %v", res, err)
			}
			if n := f.log.count("acme.clause-search"); n != c.want || res.Usage.ToolCalls != c.want {
				t.Errorf("the tool ran %d times (usage %d), want %d", n, res.Usage.ToolCalls, c.want)
			}
			msgs := f.messages()
			if len(msgs) != 1+1+c.want+1 || len(msgs[1].ToolCalls) != c.want {
				t.Errorf("%d messages stored, the assistant's with %d calls; want %d and %d", len(msgs), len(msgs[1].ToolCalls), 3+c.want, c.want)
			}
			reqs := f.provider.Requests()
			last := reqs[len(reqs)-1].Messages
			var ok, ignored int
			for _, m := range last {
				if m.Role != bindings.ChatTool {
					continue
				}
				if strings.Contains(m.Content, "at most") {
					ignored++
				} else {
					ok++
				}
			}
			if ok != c.want || ignored != 1000-c.want {
				t.Errorf("the next request answers %d calls with results and %d with the cap's error, want %d and %d", ok, ignored, c.want, 1000-c.want)
			}
			if err := strictHistory(last); err != nil {
				t.Errorf("the next request is malformed: %v", err)
			}
		})
	}
}

// TestPanickingToolIsBounded: a tool that panics on every call still ends
// the drive with its panic, but each panic is counted as a failed attempt,
// so after Bindings.MaxStepAttempts drives the run fails with
// step-attempts-exhausted instead of calling the tool again.
func TestPanickingToolIsBounded(t *testing.T) {
	f := newFixture(t, searchThenAnswer(), nil)
	var runs int
	f.addTool("acme.clause-search", "1.3.0", clauseSchema, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		runs++
		panic("tool bug")
	})
	b := f.bindings()
	in := f.input("Find a clause.")
	in.RunID = "panicking-tool"
	drive := func(first bool) (err error, panicked bool) {
		defer func() {
			if p := recover(); p != nil {
				panicked = true
			}
		}()
		if first {
			_, err = turn.Invoke(t.Context(), in, b)
		} else {
			_, err = turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: in.RunID, Agent: f.agent}, b)
		}
		return err, false
	}
	var err error
	for i := 0; i < 10; i++ {
		var panicked bool
		err, panicked = drive(i == 0)
		if !panicked {
			break
		}
		f.clock.Advance(10 * time.Minute) // the panicked driver's lease expires
	}
	if agents.CodeOf(err) != agents.CodeStepAttemptsExhausted {
		t.Fatalf("last drive: %v, want step-attempts-exhausted", err)
	}
	if runs != turn.DefaultMaxStepAttempts {
		t.Errorf("the tool ran %d times, want %d", runs, turn.DefaultMaxStepAttempts)
	}
}
