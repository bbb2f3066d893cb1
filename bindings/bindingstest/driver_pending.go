package bindingstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// The cases of RunDriverTests for what an Open leaves pending, the races
// of first writes, and the memory contract.

// openOnWrite opens run for owner with LeaseOnWrite (and c, when set).
func (f *driverFixture) openOnWrite(t *testing.T, tenant, run, owner string, c *journal.Create) journal.Drive {
	t.Helper()
	return mustReturn(f.d.Open(f.ctx, journal.OpenInput{TenantID: tenant, RunID: run, Owner: owner, TTL: leaseTTL, Lease: journal.LeaseOnWrite, Create: c, ReadConversation: true, HistoryLimit: 3}))(t, "Open with LeaseOnWrite")
}

// wantOwner fails t unless run is leased to owner.
func (f *driverFixture) wantOwner(t *testing.T, what, tenant, run, owner string) {
	t.Helper()
	if r := f.getRun(t, tenant, run); r.LeaseOwner != owner {
		t.Fatalf("%s: run leased to %q, want %q", what, r.LeaseOwner, owner)
	}
}

// wantNoRunYet fails t unless neither run nor its snapshot is stored.
func (f *driverFixture) wantNoRunYet(t *testing.T, what, tenant, run string) {
	t.Helper()
	if _, err := f.Runs.GetRun(f.ctx, tenant, run); agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
		t.Fatalf("%s: GetRun = %v, want no run", what, err)
	}
	if _, err := f.Snapshots.Read(f.ctx, tenant, run); agents.CodeOf(err) != agents.CodeRunSnapshotMissing {
		t.Fatalf("%s: snapshot Read = %v, want none", what, err)
	}
}

func testDriverPendingLease(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.parked(t, a, "run-1")
	d := f.openOnWrite(t, a, "run-1", "worker-2", nil)
	if d.Pending == nil {
		f.wantOwner(t, "a lease taken at Open", a, "run-1", "worker-2")
	} else {
		if d.Pending.AsRead == nil || d.Pending.Create != nil {
			t.Fatalf("Pending of an existing run = %+v, want AsRead", d.Pending)
		}
		f.wantOwner(t, "a pending lease", a, "run-1", "")
		diff(t, "run as read", d.Run, f.getRun(t, a, "run-1"))
	}
	if len(d.Journal) != 1 || d.Journal[0].Key != "setup" {
		t.Fatalf("journal = %+v", d.Journal)
	}
	_, err := f.d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: "run-1", Owner: "worker-2", Pending: d.Pending,
		Entries: []bindings.JournalEntry{dentry("agent-loop/1/model-call", bindings.StepStarted, "")}})
	must(t, "first Commit", err)
	f.wantOwner(t, "after the first write", a, "run-1", "worker-2")
	f.commit(t, a, "run-1", "worker-2", dentry("agent-loop/1/model-call", bindings.StepCompleted, `{}`))
	f.wantJournal(t, "after the writes", a, "run-1", "setup/completed", "agent-loop/1/model-call/started", "agent-loop/1/model-call/completed")
}

func testDriverPendingOpen(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.conversation(t, a, 2)
	c := create(a, "run-1")
	d := f.openOnWrite(t, a, "run-1", "worker-1", c)
	if !d.HasConversation || d.Conversation.MessageCount != 2 || len(d.History) != 2 {
		t.Fatalf("Open read %+v, want the conversation and its 2 messages", d)
	}
	if d.Pending != nil {
		if d.Pending.Create == nil || d.Pending.AsRead != nil {
			t.Fatalf("Pending of a new run = %+v, want Create", d.Pending)
		}
		f.wantNoRunYet(t, "a pending open", a, "run-1")
		if !jsonEqual(d.Snapshot.Input, c.Snapshot.Input) || len(d.Journal) != 0 {
			t.Fatalf("pending open read %+v, want the snapshot given and no journal", d)
		}
	}
	in := messageCommit(a, "run-1", "worker-1", "user-3")
	in.Message.CheckCount, in.Message.Count = true, d.Conversation.MessageCount
	in.Pending = d.Pending
	res, err := f.d.Commit(f.ctx, in)
	must(t, "first Commit", err)
	f.wantMessageStep(t, res, in)
	f.wantOwner(t, "after the first write", a, "run-1", "worker-1")
	// The same Commit again (its answer lost) stores nothing twice: the run
	// exists now, and the conversation holds the message.
	_, err = f.d.Commit(f.ctx, in)
	if d.Pending != nil {
		errIs(t, "the pending open's Commit again", err, bindings.ErrRunExists)
	} else {
		errIs(t, "the count-checked Commit again", err, bindings.ErrConversationChanged)
	}
	f.wantMessageStep(t, res, in)
	snap, err := f.Snapshots.Read(f.ctx, a, "run-1")
	must(t, "snapshot Read", err)
	if !jsonEqual(snap.Input, c.Snapshot.Input) || snap.AgentID != "acme.drafter" {
		t.Fatalf("stored snapshot %+v, want the one given", snap)
	}
}

func testDriverPendingAlone(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.parked(t, a, "run-1")
	d := f.openOnWrite(t, a, "run-1", "worker-2", nil)
	res, err := f.d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: "run-1", Owner: "worker-2", Pending: d.Pending})
	must(t, "Commit of the pending lease alone", err)
	if len(res.Entries) != 0 {
		t.Fatalf("Commit of nothing returned entries %+v", res.Entries)
	}
	f.wantOwner(t, "after the lease alone", a, "run-1", "worker-2")

	d = f.openOnWrite(t, a, "run-2", "worker-1", create(a, "run-2"))
	_, err = f.d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: "run-2", Owner: "worker-1", Pending: d.Pending})
	must(t, "Commit of the pending open alone", err)
	f.wantOwner(t, "after the open alone", a, "run-2", "worker-1")
	f.wantJournal(t, "after the open alone", a, "run-2")
}

func testDriverPendingChanged(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.parked(t, a, "run-1")
	d := f.openOnWrite(t, a, "run-1", "worker-2", nil)
	if d.Pending == nil {
		// Leased at Open: nobody else can change the run meanwhile.
		_, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-3", TTL: leaseTTL})
		wantCode(t, "AcquireLease of a run leased at Open", err, agents.CodeRunBusy)
		return
	}
	// Another driver drives the run in between and lets it go.
	_, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-3", TTL: leaseTTL})
	must(t, "AcquireLease by worker-3", err)
	f.step(t, a, "run-1", "worker-3", "agent-loop/1/model-call", bindings.StepStarted)
	must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, a, "run-1", "worker-3"))
	for _, in := range []journal.CommitInput{
		{Entries: []bindings.JournalEntry{dentry("agent-loop/1/tool", bindings.StepStarted, "")}},
		{Finish: bindings.RunFailed},
		{},
	} {
		in.TenantID, in.RunID, in.Owner, in.Pending = a, "run-1", "worker-2", d.Pending
		_, err := f.d.Commit(f.ctx, in)
		wantCode(t, "Commit as read of a changed run", err, agents.CodeRunBusy)
	}
	f.wantJournal(t, "after writes as read of a changed run", a, "run-1", "setup/completed", "agent-loop/1/model-call/started")
	f.wantOwner(t, "after writes as read of a changed run", a, "run-1", "")
}

func testDriverPendingExists(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	d := f.openOnWrite(t, a, "run-1", "worker-1", create(a, "run-1"))
	other := create(a, "run-1")
	other.Snapshot.Input = json.RawMessage(`{"userMessage":"other"}`)
	_, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL, Create: other})
	if d.Pending == nil {
		wantCode(t, "Open of a run opened and leased before", err, agents.CodeRunBusy)
		return
	}
	must(t, "Open by worker-2", err)
	for _, in := range []journal.CommitInput{
		{Entries: []bindings.JournalEntry{dentry("render-prompt", bindings.StepCompleted, `{}`)}},
		{},
	} {
		in.TenantID, in.RunID, in.Owner, in.Pending = a, "run-1", "worker-1", d.Pending
		_, err = f.d.Commit(f.ctx, in)
		errIs(t, "Commit of a pending open of a run created since", err, bindings.ErrRunExists)
	}
	f.wantJournal(t, "after the refused open", a, "run-1")
	f.wantOwner(t, "after the refused open", a, "run-1", "worker-2")
	snap, err := f.Snapshots.Read(f.ctx, a, "run-1")
	must(t, "snapshot Read", err)
	if !jsonEqual(snap.Input, other.Snapshot.Input) {
		t.Fatalf("snapshot %s, want worker-2's", snap.Input)
	}
}

// race runs drive for racers owners at once and returns the owner whose
// drive succeeded; it fails t unless exactly one did and every other
// failed with run-busy or bindings.ErrRunExists.
func race(t *testing.T, drive func(owner string) error) string {
	t.Helper()
	winner := raceOne(t, "drove the run", func(_ int, owner string) error { return drive(owner) }, func(racer string, err error) {
		if agents.CodeOf(err) != agents.CodeRunBusy && !errors.Is(err, bindings.ErrRunExists) {
			t.Fatalf("%s: %v, want run-busy or ErrRunExists", racer, err)
		}
	})
	return fmt.Sprintf("racer-%d", winner)
}

func testDriverRaceResume(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.parked(t, a, "run-1")
	winner := race(t, func(owner string) error {
		d, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-1", Owner: owner, TTL: leaseTTL, Lease: journal.LeaseOnWrite, ReadApprovals: true})
		if err != nil {
			return err
		}
		_, err = f.d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: "run-1", Owner: owner, Pending: d.Pending,
			Entries: []bindings.JournalEntry{dentry("agent-loop/1/model-call", bindings.StepStarted, ""), dentry(owner, bindings.StepStarted, "")}})
		return err
	})
	f.wantJournal(t, "after the race", a, "run-1", "setup/completed", "agent-loop/1/model-call/started", winner+"/started")
	f.wantOwner(t, "after the race", a, "run-1", winner)
}

func testDriverRaceNew(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.conversation(t, a, 1)
	told := make(map[string]json.RawMessage)
	var mu sync.Mutex
	winner := race(t, func(owner string) error {
		c := create(a, "run-1")
		c.Snapshot.Input = json.RawMessage(fmt.Sprintf(`{"userMessage":%q}`, owner))
		d, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-1", Owner: owner, TTL: leaseTTL, Lease: journal.LeaseOnWrite, Create: c, ReadConversation: true, HistoryLimit: 3})
		if err != nil {
			return err
		}
		mu.Lock()
		told[owner] = d.Snapshot.Input
		mu.Unlock()
		if len(d.Journal) > 0 {
			return &agents.RunBusyError{RunID: "run-1"} // another drove it first
		}
		in := messageCommit(a, "run-1", owner, "user-"+owner)
		in.Pending = d.Pending
		in.Message.Message.TurnNumber = 2
		_, err = f.d.Commit(f.ctx, in)
		return err
	})
	f.wantJournal(t, "after the race", a, "run-1", "render-prompt/completed", "persist-user-message/completed", "agent-loop/1/model-call/started")
	f.wantOwner(t, "after the race", a, "run-1", winner)
	snap, err := f.Snapshots.Read(f.ctx, a, "run-1")
	must(t, "snapshot Read", err)
	if !jsonEqual(snap.Input, told[winner]) {
		t.Fatalf("stored snapshot %s, but the winner was told %s", snap.Input, told[winner])
	}
	ms := f.read(t, a, driverConv, 10, 0)
	if len(ms) != 2 || ms[1].ID != "user-"+winner {
		t.Fatalf("conversation after the race = %v, want the first message and the winner's", msgIDs(ms))
	}
}

// heldBytes is every byte slice a caller holds from a Drive or a
// Committed.
func heldBytes(d journal.Drive, c journal.Committed) [][]byte {
	var out [][]byte
	for _, e := range append(append([]bindings.JournalEntry{}, d.Journal...), c.Entries...) {
		out = append(out, e.Output)
	}
	out = append(out, d.Snapshot.Input)
	for _, m := range append(append([]bindings.ConversationMessage{c.Message}, d.History...), c.History...) {
		out = append(out, m.Metadata)
		for _, tc := range m.ToolCalls {
			out = append(out, tc.Arguments)
		}
	}
	return out
}

func cloneAll(bs [][]byte) [][]byte {
	out := make([][]byte, len(bs))
	for i, b := range bs {
		out[i] = bytes.Clone(b)
	}
	return out
}

// short is the head of b, for a failure's message.
func short(b []byte) []byte { return b[:min(len(b), 80)] }

// bigOutput is an output of about n bytes tagged with tag.
func bigOutput(tag string, n int) string {
	return fmt.Sprintf(`{"tag":%q,"pad":%q}`, tag, strings.Repeat(tag[:1], n))
}

func testDriverMemory(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.conversation(t, a, 2)
	f.openNew(t, a, "run-1", "worker-1")
	in := messageCommit(a, "run-1", "worker-1", "user-3")
	in.Entries[0].Output = json.RawMessage(bigOutput("a", 4096))
	in.Message.HistoryLimit = 2
	in.Message.Message.ToolCalls = nil
	res, err := f.d.Commit(f.ctx, in)
	must(t, "Commit", err)
	d, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-1", Owner: "worker-1", TTL: leaseTTL, ReadConversation: true, HistoryLimit: 3})
	must(t, "Open", err)
	held := heldBytes(d, res)
	kept := cloneAll(held)
	// More reads and writes of the same store, of the same sizes: a
	// store that reuses a buffer it returned would write over it now.
	for i := range 4 {
		tag := string(rune('b' + i))
		f.commit(t, a, "run-1", "worker-1", dentry("step-"+tag, bindings.StepCompleted, bigOutput(tag, 4096)))
		m := messageCommit(a, "run-1", "worker-1", "msg-"+tag)
		m.Entries = []bindings.JournalEntry{dentry("msg-step-"+tag, bindings.StepCompleted, "")}
		m.Message.Index, m.Message.Message.TurnNumber, m.Message.HistoryLimit = 0, 0, 3
		m.Message.Message.Metadata = json.RawMessage(`{"k":"` + strings.Repeat(tag, 64) + `"}`)
		if _, err := f.d.Commit(f.ctx, m); err != nil {
			t.Fatalf("Commit %d: %v", i, err)
		}
		if _, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-1", Owner: "worker-1", TTL: leaseTTL, ReadConversation: true, HistoryLimit: 3}); err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
	}
	for i := range held {
		if !bytes.Equal(held[i], kept[i]) {
			t.Fatalf("returned bytes changed after later calls: %q…, was %q…", short(held[i]), short(kept[i]))
		}
	}
	// The bytes are the caller's own: writing over them changes nothing
	// stored.
	before := f.journal(t, a, "run-1")
	want := make([]json.RawMessage, len(before))
	for i, e := range before {
		want[i] = bytes.Clone(e.Output)
	}
	for _, b := range held {
		for i := range b {
			b[i] = 'X'
		}
	}
	after, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: a, RunID: "run-1", Owner: "worker-1", TTL: leaseTTL, ReadConversation: true, HistoryLimit: 3})
	must(t, "Open after writing over the returned bytes", err)
	if len(after.Journal) != len(want) {
		t.Fatalf("journal has %d entries, want %d", len(after.Journal), len(want))
	}
	for i, e := range after.Journal {
		if !jsonEqual(e.Output, want[i]) {
			t.Fatalf("entry %d's output is %q… after the caller wrote over returned bytes, want %q…", i, short(e.Output), short(want[i]))
		}
	}
	if !jsonEqual(after.Snapshot.Input, json.RawMessage(`{"userMessage":"hello"}`)) {
		t.Fatalf("snapshot input is %q after the caller wrote over returned bytes", after.Snapshot.Input)
	}
}
