package pgstore

import (
	"context"
	"strings"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journaltest"
	"github.com/kindgi/agents/turn"
)

// TestInvokeOfARunIDOpenedMeanwhile is two Invokes of one run id whose
// reads both found no run: the first one
// runs in full between the second one's read and its first write (from
// the second one's TurnStartedEvent, which comes after the read). Exactly
// one drives the run; the second stores nothing of its own and gets what
// an Invoke after the first gets: the recorded result for the same input,
// an input mismatch for another, run-busy while the first holds the lease.
func TestInvokeOfARunIDOpenedMeanwhile(t *testing.T) {
	pool := testPool(t)
	a := lookupAgent(t, "")
	for _, tc := range []struct {
		name, first string
		hold        bool
		want        string // the second Invoke's code, "" for success
	}{
		{name: "same input, first finished", first: "What is the answer?"},
		{name: "another input, first finished", first: "Something else?", want: agents.CodeRunInputMismatch},
		{name: "same input, first holds the lease", first: "What is the answer?", hold: true, want: agents.CodeRunBusy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTurnFixture(t, New(pool, nil))
			release := make(chan struct{})
			var inTool chan struct{} // nil unless the first one holds the lease
			if tc.hold {
				inTool = make(chan struct{}, 1)
				f.holdLookup(t, inTool, release)
			}
			conv := f.open(t, a)
			runID := "run-" + strings.ReplaceAll(tc.name, " ", "-")
			runID = strings.ReplaceAll(runID, ",", "")
			in := turn.Input{TenantID: turnTenant, Agent: a, ConversationID: conv, UserMessage: "What is the answer?", RunID: runID}
			first := in
			first.UserMessage = tc.first

			var (
				firstRes turn.Result
				firstErr error
			)
			b := f.bindings()
			// The second Invoke read the run as missing: the first one
			// opens it now, and holds the lease inside its tool call
			// (tc.hold) or runs to its end.
			wait := interleaveAtStart(&b, func() {
				firstRes, firstErr = turn.Invoke(context.Background(), first, f.bindings())
			}, inTool)
			res, err := turn.Invoke(t.Context(), in, b)
			close(release)
			started := wait()
			if firstErr != nil || firstRes.Status != turn.StatusCompleted {
				t.Fatalf("first Invoke: %+v, %v", firstRes, firstErr)
			}
			if !started {
				t.Fatal("the second Invoke started no drive")
			}
			if got := agents.CodeOf(err); got != tc.want {
				t.Fatalf("second Invoke: %v (code %q), want code %q", err, got, tc.want)
			}
			if tc.want == "" && (res.Status != turn.StatusCompleted || res.RunID != runID || len(res.Appended) != len(firstRes.Appended) || res.Appended[len(res.Appended)-1].ID != firstRes.Appended[len(firstRes.Appended)-1].ID) {
				t.Fatalf("second Invoke: %+v, want the first one's result %+v", res, firstRes)
			}
			f.ranOnce(t, "the tool")
			msgs, err := f.store.ReadMessages(t.Context(), bindings.ReadMessagesInput{TenantID: turnTenant, ConversationID: conv, Limit: -1})
			if err != nil {
				t.Fatal(err)
			}
			users := 0
			for _, m := range msgs {
				if m.Role == bindings.RoleUser {
					users++
					if m.Content != tc.first {
						t.Errorf("user message %q stored, want only the first Invoke's %q", m.Content, tc.first)
					}
				}
			}
			if users != 1 {
				t.Fatalf("%d user messages stored, want the first Invoke's only", users)
			}
			snap, err := f.store.Read(t.Context(), turnTenant, runID)
			if err != nil || !strings.Contains(string(snap.Input), tc.first) {
				t.Fatalf("snapshot %s, %v; want the first Invoke's", snap.Input, err)
			}
			if run, err := f.store.GetRun(t.Context(), turnTenant, runID); err != nil || run.Status != bindings.RunCompleted {
				t.Fatalf("run %+v, %v; want it completed by the first Invoke", run, err)
			}
		})
	}
}

// TestCrashBeforeTheFirstWriteLeavesNothing crashes a turn at its first
// write, the one that creates the run (the Commit of a pending open): nothing of
// the run is stored, and an Invoke with the same run id starts afresh.
func TestCrashBeforeTheFirstWriteLeavesNothing(t *testing.T) {
	pool := testPool(t)
	for _, panics := range []bool{false, true} {
		f := newTurnFixture(t, New(pool, nil))
		a := lookupAgent(t, "")
		conv := f.open(t, a)
		runID := "crash-first-write"
		if panics {
			runID += "-panic"
		}
		crasher := journaltest.New(0, panics)
		b := crashedBindings(f.bindings(), crasher, f.store)
		in := turn.Input{TenantID: turnTenant, Agent: a, ConversationID: conv, UserMessage: "What is the answer?", RunID: runID}
		failsAtTheCrash(t, panics, "Invoke", func() (turn.Result, error) { return turn.Invoke(t.Context(), in, b) })
		if op := crasher.FailedOp(); !strings.HasPrefix(op, "Commit [setup completed, render-prompt completed, persist-user-message completed") {
			t.Fatalf("crashed at %q, want the user message's step (the first write)", op)
		}
		if _, err := f.store.Read(t.Context(), turnTenant, runID); agents.CodeOf(err) != agents.CodeRunSnapshotMissing {
			t.Fatalf("snapshot after the crash: %v, want none", err)
		}
		if run, err := f.store.GetRun(t.Context(), turnTenant, runID); err == nil {
			t.Fatalf("run %+v stored before the first write", run)
		}
		if c, err := f.store.GetConversation(t.Context(), turnTenant, conv); err != nil || c.MessageCount != 0 {
			t.Fatalf("conversation %+v, %v; want no message", c, err)
		}
		res, err := turn.Invoke(t.Context(), in, f.bindings())
		if err != nil || res.Status != turn.StatusCompleted || res.RunID != runID {
			t.Fatalf("Invoke after the crash: %+v, %v", res, err)
		}
		f.ranOnce(t, "the tool")
	}
}
