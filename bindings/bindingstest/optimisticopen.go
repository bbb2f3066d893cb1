package bindingstest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kindgi/agents/bindings"
)

// optimisticOpenCases check bindings.OptimisticTurnOpener (RunBatchTests
// runs them when the binding has it and Harness.Snapshots and
// Harness.Conversations are the same store).
var optimisticOpenCases = []testCase{
	{name: "OptimisticTurnOpenerStoreIsTheStore", run: testOptimisticStore},
	{name: "ReadTurnOfANewRunReadsTheConversationAndStoresNothing", run: testReadTurn},
	{name: "ReadTurnOfAnExistingRunOrSnapshotSaysSo", run: testReadTurnExisting},
	{name: "OpenUserMessageStepCreatesTheRunAndStoresTheStep", run: testOpenUserMessageStep},
	{name: "OpenUserMessageStepOfAnExistingRunOrSnapshotStoresNothing", run: testOpenUserMessageStepExisting},
	{name: "OpenUserMessageStepAfterAnotherMessageStoresNothing", run: testOpenUserMessageStepChanged},
}

func (f *fixture) optimistic() bindings.OptimisticTurnOpener {
	return f.Runs.(bindings.OptimisticTurnOpener)
}

// newRunFixture opens conv-1 with n messages of earlier turns, and no run.
func (f *fixture) newRunFixture(t *testing.T, tenant string, n int) {
	t.Helper()
	f.open(t, tenant, "conv-1", at(1))
	for i := range n {
		f.addMessage(t, bindings.AppendMessageInput{TenantID: tenant, ConversationID: "conv-1", ID: fmt.Sprintf("old-%d", i),
			Role: bindings.RoleUser, Content: fmt.Sprintf("message %d", i)})
	}
}

// openUserMessageStepInput is run-1 opened for owner with the user
// message step of userMessageStepInput on count messages.
func openUserMessageStepInput(tenant, owner string, count int) bindings.OpenUserMessageStepInput {
	return bindings.OpenUserMessageStepInput{Open: openInput(tenant, "run-1", owner, `{"userMessage":"first"}`),
		UserMessageStepInput: userMessageStepInput(tenant, owner, count)}
}

// wantNoRun fails t when run-1 or its snapshot is stored.
func (f *fixture) wantNoRun(t *testing.T, what, tenant string) {
	t.Helper()
	if r, err := f.Runs.GetRun(f.ctx, tenant, "run-1"); err == nil {
		t.Fatalf("%s: run %+v stored, want none", what, r)
	}
	if s, err := f.Snapshots.Read(f.ctx, tenant, "run-1"); err == nil {
		t.Fatalf("%s: snapshot %+v stored, want none", what, s)
	}
}

func testOptimisticStore(t *testing.T, f *fixture) {
	if s := f.optimistic().OptimisticTurnOpenerStore(); any(s) != any(f.Runs) {
		t.Fatalf("OptimisticTurnOpenerStore() = %T %p, want the store itself", s, s)
	}
}

func testReadTurn(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.newRunFixture(t, a, 4)
	res, err := f.optimistic().ReadTurn(f.ctx, bindings.OpenTurnInput{OpenRunInput: openInput(a, "run-1", "worker-1", `{}`), HistoryLimit: 3})
	must(t, "ReadTurn", err)
	if res.Exists || !res.HasConversation {
		t.Fatalf("ReadTurn of a new run: exists %v, has conversation %v; want not, and conv-1", res.Exists, res.HasConversation)
	}
	diff(t, "conversation", res.Conversation, f.get(t, a, "conv-1"))
	diff(t, "history ids", msgIDs(res.History), []string{"old-1", "old-2", "old-3"})
	f.wantNoRun(t, "ReadTurn", a)
}

func testReadTurnExisting(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.newRunFixture(t, a, 1)
	f.startRun(t, a, "run-1", "worker-1")
	res, err := f.optimistic().ReadTurn(f.ctx, bindings.OpenTurnInput{OpenRunInput: openInput(a, "run-1", "worker-2", `{}`), HistoryLimit: 3})
	must(t, "ReadTurn", err)
	if !res.Exists {
		t.Fatalf("ReadTurn of a started run: %+v, want it to exist", res)
	}
	if r := f.getRun(t, a, "run-1"); r.LeaseOwner != "worker-1" {
		t.Fatalf("ReadTurn moved the lease to %q", r.LeaseOwner)
	}
	in := openInput(a, "run-2", "worker-1", `{}`)
	must(t, "Write snapshot", f.Snapshots.Write(f.ctx, in.Snapshot))
	res, err = f.optimistic().ReadTurn(f.ctx, bindings.OpenTurnInput{OpenRunInput: in})
	must(t, "ReadTurn of a snapshot", err)
	if !res.Exists {
		t.Fatalf("ReadTurn of a run with only a snapshot: %+v, want it to exist", res)
	}
}

func testOpenUserMessageStep(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.newRunFixture(t, a, 2)
	res, err := f.optimistic().OpenUserMessageStep(f.ctx, openUserMessageStepInput(a, "worker-1", 2))
	must(t, "OpenUserMessageStep", err)
	diff(t, "appended", res.Appended, []bool{true, true, true, true, true})
	if m := res.Message; m.ID != "run-1/persist-user-message" || m.Seq != 3 {
		t.Fatalf("message %+v, want seq 3", m)
	}
	r := f.getRun(t, a, "run-1")
	if r.LeaseOwner != "worker-1" || r.Status != bindings.RunRunning || r.FlowID != "agent.turn" {
		t.Fatalf("run %+v, want it running, leased to worker-1", r)
	}
	s, err := f.Snapshots.Read(f.ctx, a, "run-1")
	must(t, "Read snapshot", err)
	if !jsonEqual(s.Input, []byte(`{"userMessage":"first"}`)) || s.ConversationID != "conv-1" || !s.CreatedAt.Equal(at(3)) {
		t.Fatalf("snapshot %+v", s)
	}
	diff(t, "journal", journalKeys(f.journal(t, a, "run-1")), []string{"setup:completed", "render-prompt:completed", "persist-user-message:completed",
		"build-initial-messages:completed", "agent-loop/1/model-call:started"})
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{"old-0", "old-1", "run-1/persist-user-message"})
	// The same call again: the run exists now.
	_, err = f.optimistic().OpenUserMessageStep(f.ctx, openUserMessageStepInput(a, "worker-2", 3))
	if !errors.Is(err, bindings.ErrRunExists) {
		t.Fatalf("OpenUserMessageStep of the run it created: %v, want ErrRunExists", err)
	}
	if r := f.getRun(t, a, "run-1"); r.LeaseOwner != "worker-1" {
		t.Fatalf("a refused call moved the lease to %q", r.LeaseOwner)
	}
}

func testOpenUserMessageStepExisting(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.newRunFixture(t, a, 2)
	f.startRun(t, a, "run-1", "worker-1")
	must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, a, "run-1", "worker-1"))
	_, err := f.optimistic().OpenUserMessageStep(f.ctx, openUserMessageStepInput(a, "worker-2", 2))
	if !errors.Is(err, bindings.ErrRunExists) {
		t.Fatalf("OpenUserMessageStep of a started run: %v, want ErrRunExists", err)
	}
	if es := f.journal(t, a, "run-1"); len(es) != 0 {
		t.Fatalf("a refused call stored %d entries", len(es))
	}
	if r := f.getRun(t, a, "run-1"); r.LeaseOwner != "" {
		t.Fatalf("a refused call leased the run to %q", r.LeaseOwner)
	}
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{"old-0", "old-1"})
	// Only the snapshot stored (a crash between a Write and a StartRun).
	b := f.tenant("b")
	f.newRunFixture(t, b, 2)
	in := openUserMessageStepInput(b, "worker-1", 2)
	must(t, "Write snapshot", f.Snapshots.Write(f.ctx, in.Open.Snapshot))
	_, err = f.optimistic().OpenUserMessageStep(f.ctx, in)
	if !errors.Is(err, bindings.ErrRunExists) {
		t.Fatalf("OpenUserMessageStep of a run with a snapshot: %v, want ErrRunExists", err)
	}
	if r, err := f.Runs.GetRun(f.ctx, b, "run-1"); err == nil {
		t.Fatalf("a refused call created run %+v", r)
	}
	diff(t, "messages", f.messageIDs(t, b, "conv-1"), []string{"old-0", "old-1"})
}

func testOpenUserMessageStepChanged(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.newRunFixture(t, a, 2)
	f.addMessage(t, bindings.AppendMessageInput{TenantID: a, ConversationID: "conv-1", ID: "meanwhile", Role: bindings.RoleSystem, Content: "meanwhile"})
	res, err := f.optimistic().OpenUserMessageStep(f.ctx, openUserMessageStepInput(a, "worker-1", 2))
	if !errors.Is(err, bindings.ErrConversationChanged) {
		t.Fatalf("OpenUserMessageStep after another message: %v, want ErrConversationChanged", err)
	}
	if res.Entries != nil {
		t.Fatalf("result %+v, want nothing stored", res)
	}
	f.wantNoRun(t, "a refused OpenUserMessageStep", a)
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{"old-0", "old-1", "meanwhile"})
}
