package bindingstest

import (
	"encoding/json"
	"fmt"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// DriverHarness is what RunDriverTests checks: a journal.Driver and the
// basic bindings of the same store, which the cases set up and read back
// with (Snapshots, Runs and Conversations are required, Hitl and Clock
// optional: the cases that need them skip without).
type DriverHarness struct {
	Harness
	Driver journal.Driver
}

// NewDriverHarness builds a fresh DriverHarness for one case.
type NewDriverHarness func(t *testing.T) DriverHarness

// RunDriverTests checks a journal.Driver against the contract written on
// it: Open of new and existing runs (snapshot, journal, lease, the
// conversation, its history and the run's approvals read ahead), Commit
// (idempotent entries, the message step and its count condition, the
// history after the message, finish, a refused message), what is pending
// taken by the first write (sixteen concurrent first writes, one wins and
// the losers store nothing), tenancy, retries, and the memory contract of
// returned values. journal.Adapt over a store's basic bindings passes it,
// and so must a store's own driver.
func RunDriverTests(t *testing.T, newHarness NewDriverHarness) {
	t.Helper()
	runCases(t, driverCases, func(t *testing.T) (Harness, *driverFixture) {
		h := newHarness(t)
		return h.Harness, &driverFixture{fixture: *newFixture(t, h.Harness), d: h.Driver}
	})
}

// driverCase is a case of RunDriverTests.
type driverCase = caseOf[*driverFixture]

// driverFixture is a fixture with the driver under test.
type driverFixture struct {
	fixture
	d journal.Driver
}

var driverCases = []driverCase{
	{name: "OpenCreatesANewRunLeasedToTheOwner", run: testDriverOpenCreates},
	{name: "OpenOfAnExistingRunReadsItsSnapshotAndJournal", run: testDriverOpenExisting},
	{name: "OpenOfARunLeasedToAnotherIsBusyAndLeasesNothing", run: testDriverOpenBusy},
	{name: "OpenOfAnUnknownRunIsSnapshotMissing", run: testDriverOpenUnknown},
	{name: "OpenWithAHeldLeaseTakesNone", run: testDriverOpenHeld},
	{name: "OpenReadsTheConversationAndItsNewestMessages", run: testDriverOpenConversation},
	{name: "OpenOfAMissingConversationIsNoError", run: testDriverOpenNoConversation},
	{name: "OpenReadsTheRunsApprovals", run: testDriverOpenApprovals},
	{name: "CommitIsIdempotentPerKeyAndPhase", run: testDriverCommitIdempotent},
	{name: "CommitByAnOwnerWithoutTheLeaseIsBusyAndStoresNothing", run: testDriverCommitBusy},
	{name: "CommitAfterTheOwnLeaseExpiredSaysSo", clock: true, run: testDriverCommitExpired},
	{name: "CommitStoresTheMessageStepWithTheStoredMessage", run: testDriverMessageStep},
	{name: "CommitOfTheMessageStepAgainStoresNothingTwice", run: testDriverMessageStepRetry},
	{name: "CommitWithTheCountConditionStoresNothingWhenTheConversationChanged", run: testDriverCountChanged},
	{name: "CommitWithTheCountConditionGivesTheNextSeq", run: testDriverCountHolds},
	{name: "CommitReadsTheHistoryBeforeTheMessage", run: testDriverCommitHistory},
	{name: "CommitOfARefusedMessageKeepsTheEntriesBeforeIt", run: testDriverRefusedMessage},
	{name: "CommitWithFinishSetsTheStatusAndReleasesTheLease", run: testDriverFinish},
	{name: "CommitOfInvalidInputStoresNothing", run: testDriverInvalid},
	{name: "CommitToAnUnknownRunIsJournalUnavailable", run: testDriverCommitUnknown},
	{name: "CommitOfNoEntriesStoresNothing", run: testDriverCommitEmpty},
	{name: "CommitOfAMessageWithNoStepEntryAppendsItAfterTheEntries", run: testDriverBareMessage},
	{name: "TrustedCommitsStoreWhatOthersStore", run: testDriverTrusted},
	{name: "CommitTakesThePendingLeaseWithItsWrite", run: testDriverPendingLease},
	{name: "CommitTakesThePendingOpenWithItsWrite", run: testDriverPendingOpen},
	{name: "CommitOfNothingTakesWhatIsPendingAlone", run: testDriverPendingAlone},
	{name: "CommitWithAPendingLeaseOfARunChangedSinceTheOpenStoresNothing", run: testDriverPendingChanged},
	{name: "CommitWithAPendingOpenOfARunCreatedSinceIsRunExists", run: testDriverPendingExists},
	{name: "ConcurrentFirstWritesOfOneRunLeaseItOnce", run: testDriverRaceResume},
	{name: "ConcurrentFirstWritesOfANewRunCreateItOnce", run: testDriverRaceNew},
	{name: "TenantsNeverSeeEachOthersRuns", run: testDriverTenancy},
	{name: "DriverResultsAreTheCallersOwn", run: testDriverMemory},
	{name: "CancelledContextStoresNothing", run: testDriverCancelled},
	{name: "OpenOfACreateWithAParentCreatesAChildRun", run: testDriverParent},
}

const driverConv = "conv-1"

// create returns the Create of run with the case's snapshot.
func create(tenant, run string) *journal.Create {
	return &journal.Create{Snapshot: bindings.RunSnapshotWriteInput{
		TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0",
		AgentID: "acme.drafter", AgentVersion: "1.0.0", ConversationID: driverConv,
		Input: json.RawMessage(`{"userMessage":"hello"}`), CreatedAt: at(3),
	}}
}

// dentry is a journal entry of the driver cases.
func dentry(key string, st bindings.StepStatus, output string) bindings.JournalEntry {
	e := bindings.JournalEntry{Key: key, Node: "node", Status: st, At: at(4)}
	if output != "" {
		e.Output = json.RawMessage(output)
	}
	return e
}

// openNew opens a new run for owner, leased now.
func (f *driverFixture) openNew(t *testing.T, tenant, run, owner string) journal.Drive {
	t.Helper()
	return mustReturn(f.d.Open(f.ctx, journal.OpenInput{TenantID: tenant, RunID: run, Owner: owner, TTL: leaseTTL, Create: create(tenant, run)}))(t, "Open of a new run")
}

// commit commits entries for owner.
func (f *driverFixture) commit(t *testing.T, tenant, run, owner string, entries ...bindings.JournalEntry) journal.Committed {
	t.Helper()
	return mustReturn(f.d.Commit(f.ctx, journal.CommitInput{TenantID: tenant, RunID: run, Owner: owner, Entries: entries}))(t, "Commit")
}

// parked is a run of tenant with a setup entry and its lease released.
func (f *driverFixture) parked(t *testing.T, tenant, run string) {
	t.Helper()
	f.openNew(t, tenant, run, "worker-1")
	f.commit(t, tenant, run, "worker-1", dentry("setup", bindings.StepCompleted, `{"n":1}`))
	_, err := f.d.Commit(f.ctx, journal.CommitInput{TenantID: tenant, RunID: run, Owner: "worker-1", Finish: bindings.RunSuspended})
	must(t, "Commit of the finish", err)
}

// keys is the keys of entries.
func keys(es []bindings.JournalEntry) []string {
	return project(es, func(e bindings.JournalEntry) string { return e.Key + "/" + string(e.Status) })
}

func testDriverOpenCreates(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	d := f.openNew(t, a, "run-1", "worker-1")
	if d.Pending != nil {
		t.Fatalf("Open with LeaseNow returned Pending %+v", d.Pending)
	}
	if d.Run.ID != "run-1" || d.Run.LeaseOwner != "worker-1" || d.Run.Status != bindings.RunRunning || len(d.Journal) != 0 {
		t.Fatalf("Open of a new run = %+v, want run-1 running, leased to worker-1, no journal", d)
	}
	diff(t, "stored run", f.getRun(t, a, "run-1"), d.Run)
	if !jsonEqual(d.Snapshot.Input, json.RawMessage(`{"userMessage":"hello"}`)) || d.Snapshot.ConversationID != driverConv || d.Snapshot.AgentID != "acme.drafter" {
		t.Fatalf("snapshot = %+v, want the one written", d.Snapshot)
	}
	// Opening it again with another input keeps the first snapshot.
	again := create(a, "run-1")
	again.Snapshot.Input = json.RawMessage(`{"userMessage":"other"}`)
	d2, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-1", Owner: "worker-1", TTL: leaseTTL, Create: again})
	must(t, "Open again", err)
	if !jsonEqual(d2.Snapshot.Input, json.RawMessage(`{"userMessage":"hello"}`)) {
		t.Fatalf("snapshot after a second Open = %s, want the first", d2.Snapshot.Input)
	}
}

func testDriverOpenExisting(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.parked(t, a, "run-1")
	d, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "Open", err)
	diff(t, "journal", d.Journal, f.journal(t, a, "run-1"))
	if len(d.Journal) != 1 || d.Journal[0].Key != "setup" || !jsonEqual(d.Journal[0].Output, json.RawMessage(`{"n":1}`)) {
		t.Fatalf("journal = %+v, want the setup entry", d.Journal)
	}
	if d.Snapshot.RunID != "run-1" || d.Snapshot.ConversationID != driverConv {
		t.Fatalf("snapshot = %+v", d.Snapshot)
	}
	if d.Pending != nil {
		t.Fatalf("Open with LeaseNow returned Pending")
	}
	r := f.getRun(t, a, "run-1")
	if r.LeaseOwner != "worker-2" || r.Status != bindings.RunSuspended {
		t.Fatalf("run after Open = %+v, want leased to worker-2, still suspended", r)
	}
	diff(t, "Drive.Run", d.Run, r)
}

func testDriverOpenBusy(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.openNew(t, a, "run-1", "worker-1")
	for _, mode := range []journal.LeaseMode{journal.LeaseNow, journal.LeaseOnWrite} {
		_, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL, Lease: mode})
		wantCode(t, fmt.Sprintf("Open (lease mode %d) of a run another holds", mode), err, agents.CodeRunBusy)
		_, err = f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL, Lease: mode, Create: create(a, "run-1")})
		wantCode(t, fmt.Sprintf("Open (lease mode %d) with Create of a run another holds", mode), err, agents.CodeRunBusy)
	}
	if r := f.getRun(t, a, "run-1"); r.LeaseOwner != "worker-1" {
		t.Fatalf("lease after refused Opens: %q, want worker-1", r.LeaseOwner)
	}
}

func testDriverOpenUnknown(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	for _, mode := range []journal.LeaseMode{journal.LeaseNow, journal.LeaseHeld, journal.LeaseOnWrite} {
		_, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "nope", Owner: "worker-1", TTL: leaseTTL, Lease: mode})
		wantCode(t, "Open of an unknown run", err, agents.CodeRunSnapshotMissing)
	}
}

func testDriverOpenHeld(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.parked(t, a, "run-1")
	_, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "AcquireLease", err)
	before := f.getRun(t, a, "run-1")
	d, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL, Lease: journal.LeaseHeld})
	must(t, "Open with a held lease", err)
	if d.Pending != nil || len(d.Journal) != 1 {
		t.Fatalf("Open held = %+v, want the journal and nothing pending", d)
	}
	diff(t, "run after a held Open", f.getRun(t, a, "run-1"), before)
	f.commit(t, a, "run-1", "worker-2", dentry("model-call", bindings.StepStarted, ""))
}

// conversation opens the case's conversation with n messages.
func (f *driverFixture) conversation(t *testing.T, tenant string, n int) []bindings.ConversationMessage {
	t.Helper()
	f.open(t, tenant, driverConv, t0)
	var ms []bindings.ConversationMessage
	for i := 1; i <= n; i++ {
		ms = append(ms, f.appendMsg(t, tenant, driverConv, fmt.Sprintf("m%d", i), fmt.Sprintf("message %d", i), i))
	}
	return ms
}

func testDriverOpenConversation(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	ms := f.conversation(t, a, 3)
	d, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-1", Owner: "worker-1", TTL: leaseTTL, Create: create(a, "run-1"), ReadConversation: true, HistoryLimit: 2})
	must(t, "Open", err)
	if !d.HasConversation || d.Conversation.MessageCount != 3 || d.Conversation.ID != driverConv {
		t.Fatalf("conversation = %+v (has %v), want conv-1 with 3 messages", d.Conversation, d.HasConversation)
	}
	if d.History == nil {
		t.Fatal("history of a quiet conversation was not read")
	}
	diff(t, "history", d.History, ms[1:])
	f.parked(t, a, "run-2")
	d, err = f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-2", Owner: "worker-1", TTL: leaseTTL, ReadConversation: true})
	must(t, "Open of an existing run", err)
	if !d.HasConversation || d.History != nil {
		t.Fatalf("Open without a history limit: has %v, history %v; want the conversation and no history", d.HasConversation, d.History)
	}
}

func testDriverOpenNoConversation(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	d, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-1", Owner: "worker-1", TTL: leaseTTL, Create: create(a, "run-1"), ReadConversation: true, HistoryLimit: 5})
	must(t, "Open", err)
	if d.HasConversation || d.History != nil {
		t.Fatalf("Open of a run whose conversation is missing: %+v", d)
	}
}

func testDriverOpenApprovals(t *testing.T, f *driverFixture) {
	if f.Hitl == nil {
		t.Skip("the harness has no HitlBinding")
	}
	a := f.tenant("a")
	f.parked(t, a, "run-1")
	f.request(t, approvalRequest(a, "ap-1"))
	d, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL, ReadApprovals: true})
	must(t, "Open", err)
	if !d.HasApprovals {
		// A driver may leave them unread: the caller reads each.
		if d.Approvals != nil {
			t.Fatalf("approvals %+v not read but returned", d.Approvals)
		}
		return
	}
	diff(t, "approvals", d.Approvals, []bindings.Approval{f.approval(t, a, "ap-1")})
}

// wantJournal fails t unless run's journal has these keys.
func (f *driverFixture) wantJournal(t *testing.T, what, tenant, run string, want ...string) []bindings.JournalEntry {
	t.Helper()
	j := f.journal(t, tenant, run)
	diff(t, what+": journal", keys(j), append([]string{}, want...))
	return j
}
