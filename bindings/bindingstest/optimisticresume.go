package bindingstest

import (
	"fmt"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// optimisticResumeCases check bindings.OptimisticRunResumer (RunBatchTests
// runs them when the binding has it and Harness.Snapshots,
// Harness.Conversations and Harness.Hitl are the same store).
var optimisticResumeCases = []testCase{
	{name: "OptimisticRunResumerStoreIsTheStore", run: testOptimisticResumerStore},
	{name: "ReadResumeRunReadsAsResumeRunAndLeasesNothing", run: testReadResumeRun},
	{name: "ReadResumeRunOfALeaseHeldByAnotherIsBusy", run: testReadResumeRunBusy},
	{name: "ReadResumeRunOfAnUnknownRunIsSnapshotMissing", run: testReadResumeRunUnknown},
	{name: "AppendStepsAsReadTakesTheLeaseWithTheEntries", run: testAppendStepsAsRead},
	{name: "FinishRunAsReadTakesAndReleasesTheLease", run: testFinishRunAsRead},
	{name: "AppendMessageStepAsReadTakesTheLeaseWithTheStep", run: testMessageStepAsRead},
	{name: "TakeLeaseAsReadTakesTheLeaseOnce", run: testTakeLeaseAsRead},
	{name: "WritesAsReadOfARunChangedSinceTheReadStoreNothing", run: testWritesAsReadChanged},
}

// late is when these cases open their conversations: after the idle
// cutoffs of the InactiveConversations cases, which list every tenant's
// idle conversations (up to a limit) from the same database.
const late = 5000

func (f *fixture) optimisticResumer() bindings.OptimisticRunResumer {
	return f.Runs.(bindings.OptimisticRunResumer)
}

// readParked parks run-1 (parkedRun) and reads it for worker-2.
func (f *fixture) readParked(t *testing.T, tenant string) bindings.LeaseAsRead {
	t.Helper()
	f.parkedRun(t, tenant)
	res, err := f.optimisticResumer().ReadResumeRun(f.ctx, bindings.ReopenRunInput{TenantID: tenant, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "ReadResumeRun", err)
	return bindings.LeaseAsRead{TTL: leaseTTL, Run: res.Run, JournalVersion: res.JournalVersion}
}

// wantLeasedTo fails t unless run-1 is leased to owner, unexpired.
func (f *fixture) wantLeasedTo(t *testing.T, what, tenant, owner string) bindings.Run {
	t.Helper()
	r := f.getRun(t, tenant, "run-1")
	if r.LeaseOwner != owner || (owner != "" && !r.LeaseExpiresAt.After(r.UpdatedAt)) {
		t.Fatalf("%s: run %+v, want it leased to %q", what, r, owner)
	}
	return r
}

func testOptimisticResumerStore(t *testing.T, f *fixture) {
	if s := f.optimisticResumer().OptimisticRunResumerStore(); any(s) != any(f.Runs) {
		t.Fatalf("OptimisticRunResumerStore() = %T %p, want the store itself", s, s)
	}
}

func testReadResumeRun(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.parkedRun(t, a)
	f.requestApproval(t, a, "run-1", "ap-1")
	f.requestApproval(t, a, "run-other", "ap-2")
	_, err := f.Hitl.ResolveApproval(f.ctx, a, "ap-1", bindings.ApprovalDecision{Approved: true, Reviewer: "rev"})
	must(t, "ResolveApproval", err)
	before := f.getRun(t, a, "run-1")
	res, err := f.optimisticResumer().ReadResumeRun(f.ctx, bindings.ReopenRunInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "ReadResumeRun", err)
	diff(t, "run as read", res.Run, before)
	diff(t, "run after the read", f.getRun(t, a, "run-1"), before)
	diff(t, "journal", res.Journal, f.journal(t, a, "run-1"))
	if res.Snapshot.ConversationID != "conv-1" || len(res.Approvals) != 1 || res.Approvals[0].Request.ID != "ap-1" {
		t.Fatalf("ReadResumeRun = snapshot %+v, approvals %+v; want conv-1's, ap-1", res.Snapshot, res.Approvals)
	}
	want, err := f.Hitl.GetApproval(f.ctx, a, "ap-1")
	must(t, "GetApproval", err)
	diff(t, "approval", res.Approvals[0], want)
	// A journal append changes the version read.
	again, err := f.optimisticResumer().ReadResumeRun(f.ctx, bindings.ReopenRunInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "ReadResumeRun again", err)
	if again.JournalVersion != res.JournalVersion {
		t.Fatalf("journal version %d, then %d with nothing written", res.JournalVersion, again.JournalVersion)
	}
	f.startRun(t, a, "run-1", "worker-1")
	f.step(t, a, "run-1", "worker-1", "render-prompt", bindings.StepCompleted)
	must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, a, "run-1", "worker-1"))
	after, err := f.optimisticResumer().ReadResumeRun(f.ctx, bindings.ReopenRunInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "ReadResumeRun after an append", err)
	if after.JournalVersion == res.JournalVersion || len(after.Journal) != 2 {
		t.Fatalf("after an append: version %d (was %d), %d entries; want another version, 2 entries", after.JournalVersion, res.JournalVersion, len(after.Journal))
	}
}

func testReadResumeRunBusy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.parkedRun(t, a)
	_, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-1", TTL: leaseTTL})
	must(t, "AcquireLease", err)
	_, err = f.optimisticResumer().ReadResumeRun(f.ctx, bindings.ReopenRunInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	wantCode(t, "ReadResumeRun of a run held by worker-1", err, agents.CodeRunBusy)
	// Its own lease is no reason to refuse.
	_, err = f.optimisticResumer().ReadResumeRun(f.ctx, bindings.ReopenRunInput{TenantID: a, RunID: "run-1", Owner: "worker-1", TTL: leaseTTL})
	must(t, "ReadResumeRun by the lease holder", err)
}

func testReadResumeRunUnknown(t *testing.T, f *fixture) {
	_, err := f.optimisticResumer().ReadResumeRun(f.ctx, bindings.ReopenRunInput{TenantID: f.tenant("a"), RunID: "missing", Owner: "worker-2", TTL: leaseTTL})
	wantCode(t, "ReadResumeRun of an unknown run", err, agents.CodeRunSnapshotMissing)
}

func testAppendStepsAsRead(t *testing.T, f *fixture) {
	a := f.tenant("a")
	lease := f.readParked(t, a)
	stored, appended, err := f.optimisticResumer().AppendStepsAsRead(f.ctx, lease, bindings.AppendStepsInput{TenantID: a, RunID: "run-1", Owner: "worker-2",
		Entries: []bindings.JournalEntry{entry("render-prompt", bindings.StepCompleted), entry("agent-loop/1/model-call", bindings.StepStarted)}})
	must(t, "AppendStepsAsRead", err)
	diff(t, "appended", appended, []bool{true, true})
	if len(stored) != 2 || stored[1].Seq <= stored[0].Seq {
		t.Fatalf("stored %+v", stored)
	}
	f.wantLeasedTo(t, "after AppendStepsAsRead", a, "worker-2")
	diff(t, "journal", journalKeys(f.journal(t, a, "run-1")), []string{"setup:completed", "render-prompt:completed", "agent-loop/1/model-call:started"})
	// The lease is worker-2's now: its next writes are plain ones.
	f.step(t, a, "run-1", "worker-2", "agent-loop/1/model-call", bindings.StepCompleted)
}

func testFinishRunAsRead(t *testing.T, f *fixture) {
	a := f.tenant("a")
	lease := f.readParked(t, a)
	_, _, err := f.optimisticResumer().FinishRunAsRead(f.ctx, lease, bindings.FinishRunInput{TenantID: a, RunID: "run-1", Owner: "worker-2",
		Entries: []bindings.JournalEntry{entry("compose-result", bindings.StepCompleted)}, Status: bindings.RunCompleted})
	must(t, "FinishRunAsRead", err)
	r := f.wantLeasedTo(t, "after FinishRunAsRead", a, "")
	if r.Status != bindings.RunCompleted {
		t.Fatalf("run %+v, want it completed", r)
	}
	diff(t, "journal", journalKeys(f.journal(t, a, "run-1")), []string{"setup:completed", "compose-result:completed"})
}

func testMessageStepAsRead(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(late))
	lease := f.readParked(t, a)
	in := messageStepInput(a, "worker-2")
	res, err := f.optimisticResumer().AppendMessageStepAsRead(f.ctx, lease, in)
	must(t, "AppendMessageStepAsRead", err)
	diff(t, "appended", res.Appended, []bool{true, true, true, true})
	wantStepOutput(t, "step output", res.Entries[1], res.Message)
	f.wantLeasedTo(t, "after AppendMessageStepAsRead", a, "worker-2")
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{in.Message.ID})
}

func testTakeLeaseAsRead(t *testing.T, f *fixture) {
	a := f.tenant("a")
	lease := f.readParked(t, a)
	r, err := f.optimisticResumer().TakeLeaseAsRead(f.ctx, lease, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "TakeLeaseAsRead", err)
	diff(t, "run", r, f.wantLeasedTo(t, "after TakeLeaseAsRead", a, "worker-2"))
	// Another driver that read the run as well: the lease is no longer as read.
	_, err = f.optimisticResumer().TakeLeaseAsRead(f.ctx, lease, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-3", TTL: leaseTTL})
	wantCode(t, "TakeLeaseAsRead by another reader", err, agents.CodeRunBusy)
	f.wantLeasedTo(t, "after the refused TakeLeaseAsRead", a, "worker-2")
}

func testWritesAsReadChanged(t *testing.T, f *fixture) {
	for ci, change := range []struct {
		name string
		do   func(t *testing.T, f *fixture, tenant string)
	}{
		{"leased by another", func(t *testing.T, f *fixture, tenant string) {
			_, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: tenant, RunID: "run-1", Owner: "worker-1", TTL: leaseTTL})
			must(t, "AcquireLease", err)
		}},
		{"driven by another, its lease released", func(t *testing.T, f *fixture, tenant string) {
			_, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: tenant, RunID: "run-1", Owner: "worker-1", TTL: leaseTTL})
			must(t, "AcquireLease", err)
			f.step(t, tenant, "run-1", "worker-1", "render-prompt", bindings.StepCompleted)
			must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, tenant, "run-1", "worker-1"))
		}},
		{"status changed", func(t *testing.T, f *fixture, tenant string) {
			must(t, "SetRunStatus", f.Runs.SetRunStatus(f.ctx, tenant, "run-1", bindings.RunFailed))
		}},
	} {
		writes := []struct {
			name  string
			write func(lease bindings.LeaseAsRead, tenant string) error
		}{
			{"AppendStepsAsRead", func(lease bindings.LeaseAsRead, tenant string) error {
				_, _, err := f.optimisticResumer().AppendStepsAsRead(f.ctx, lease, bindings.AppendStepsInput{TenantID: tenant, RunID: "run-1", Owner: "worker-2",
					Entries: []bindings.JournalEntry{entry("agent-loop/1/model-call", bindings.StepStarted)}})
				return err
			}},
			{"FinishRunAsRead", func(lease bindings.LeaseAsRead, tenant string) error {
				_, _, err := f.optimisticResumer().FinishRunAsRead(f.ctx, lease, bindings.FinishRunInput{TenantID: tenant, RunID: "run-1", Owner: "worker-2",
					Entries: []bindings.JournalEntry{entry("compose-result", bindings.StepCompleted)}, Status: bindings.RunCompleted})
				return err
			}},
			{"AppendMessageStepAsRead", func(lease bindings.LeaseAsRead, tenant string) error {
				_, err := f.optimisticResumer().AppendMessageStepAsRead(f.ctx, lease, messageStepInput(tenant, "worker-2"))
				return err
			}},
			{"TakeLeaseAsRead", func(lease bindings.LeaseAsRead, tenant string) error {
				_, err := f.optimisticResumer().TakeLeaseAsRead(f.ctx, lease, bindings.LeaseInput{TenantID: tenant, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
				return err
			}},
		}
		for wi, w := range writes {
			a := f.tenant(fmt.Sprintf("c%dw%d", ci, wi))
			withMessage := w.name == "AppendMessageStepAsRead"
			if withMessage {
				f.open(t, a, "conv-1", at(late))
			}
			lease := f.readParked(t, a)
			change.do(t, f, a)
			run, journal := f.getRun(t, a, "run-1"), f.journal(t, a, "run-1")
			what := w.name + " after the run was " + change.name
			wantCode(t, what, w.write(lease, a), agents.CodeRunBusy)
			diff(t, what+": run", f.getRun(t, a, "run-1"), run)
			diff(t, what+": journal", f.journal(t, a, "run-1"), journal)
			if withMessage {
				diff(t, what+": messages", f.messageIDs(t, a, "conv-1"), []string{})
			}
		}
	}
}
