package bindingstest

import (
	"encoding/json"
	"errors"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/journal"
)

// The Commit cases of RunDriverTests.

func testDriverCommitIdempotent(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.openNew(t, a, "run-1", "worker-1")
	in := []bindings.JournalEntry{dentry("model-call", bindings.StepStarted, ""), dentry("model-call", bindings.StepCompleted, `{"text":"hi"}`)}
	first := f.commit(t, a, "run-1", "worker-1", in...)
	diff(t, "appended", first.Appended, []bool{true, true})
	if first.Entries[0].Seq >= first.Entries[1].Seq || !jsonEqual(first.Entries[1].Output, in[1].Output) {
		t.Fatalf("entries = %+v, want increasing seq and the output", first.Entries)
	}
	// Again, with another output for the stored phase and a repeated key
	// in one call: the first entries are kept.
	again := []bindings.JournalEntry{dentry("model-call", bindings.StepCompleted, `{"text":"other"}`), dentry("tool", bindings.StepStarted, ""), dentry("tool", bindings.StepStarted, `{"x":1}`)}
	second := f.commit(t, a, "run-1", "worker-1", again...)
	diff(t, "appended again", second.Appended, []bool{false, true, false})
	diff(t, "kept entry", second.Entries[0], first.Entries[1])
	if second.Entries[2].Seq != second.Entries[1].Seq {
		t.Fatalf("a key repeated in one call: %+v, want the first kept", second.Entries)
	}
	f.wantJournal(t, "after the retry", a, "run-1", "model-call/started", "model-call/completed", "tool/started")
}

func testDriverCommitBusy(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.openNew(t, a, "run-1", "worker-1")
	_, err := f.d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: "run-1", Owner: "worker-2", Entries: []bindings.JournalEntry{dentry("setup", bindings.StepCompleted, `{}`)}})
	wantCode(t, "Commit by another owner", err, agents.CodeRunBusy)
	var busy *agents.RunBusyError
	if !errors.As(err, &busy) || busy.LeaseExpired {
		t.Fatalf("error %#v, want a *agents.RunBusyError without LeaseExpired", err)
	}
	_, err = f.d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: "run-1", Owner: "worker-2", Finish: bindings.RunFailed})
	wantCode(t, "Commit of a finish by another owner", err, agents.CodeRunBusy)
	f.wantJournal(t, "after refused commits", a, "run-1")
	f.wantRun(t, "after refused commits", a, "run-1", bindings.RunRunning, "worker-1")
}

func testDriverCommitExpired(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.openNew(t, a, "run-1", "worker-1")
	f.Clock.Advance(leaseTTL + 1)
	_, err := f.d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Entries: []bindings.JournalEntry{dentry("setup", bindings.StepCompleted, `{}`)}})
	var busy *agents.RunBusyError
	if !errors.As(err, &busy) || !busy.LeaseExpired {
		t.Fatalf("Commit after the own lease expired: %v, want *agents.RunBusyError with LeaseExpired", err)
	}
	f.wantJournal(t, "after the refused commit", a, "run-1")
}

// messageCommit is a commit of a decide entry, the user message's step and
// the next effect's started entry.
func messageCommit(tenant, run, owner, id string) journal.CommitInput {
	return journal.CommitInput{
		TenantID: tenant, RunID: run, Owner: owner,
		Entries: []bindings.JournalEntry{
			dentry("render-prompt", bindings.StepCompleted, `{"text":"prompt"}`),
			dentry("persist-user-message", bindings.StepCompleted, ""),
			dentry("agent-loop/1/model-call", bindings.StepStarted, ""),
		},
		Message: &journal.Message{Index: 1, Message: bindings.AppendMessageInput{
			TenantID: tenant, ConversationID: driverConv, ID: id, Role: bindings.RoleUser,
			Content: "hello", TurnNumber: 4, RunID: run, CreatedAt: at(5),
			Metadata: json.RawMessage(`{"k":"v"}`),
		}},
	}
}

// openForMessage opens the case's conversation with n messages and a new
// run-1 for worker-1, and returns the messageCommit of message id to it.
func (f *driverFixture) openForMessage(t *testing.T, tenant string, n int, id string) journal.CommitInput {
	t.Helper()
	f.conversation(t, tenant, n)
	f.openNew(t, tenant, "run-1", "worker-1")
	return messageCommit(tenant, "run-1", "worker-1", id)
}

// wantMessageStep fails t unless res is the stored message step of in.
func (f *driverFixture) wantMessageStep(t *testing.T, res journal.Committed, in journal.CommitInput) {
	t.Helper()
	if len(res.Entries) != len(in.Entries) || len(res.Appended) != len(in.Entries) {
		t.Fatalf("committed %d entries, %d flags; want %d", len(res.Entries), len(res.Appended), len(in.Entries))
	}
	m := res.Message
	if m.ID != in.Message.Message.ID || m.Content != "hello" || m.Seq < 1 {
		t.Fatalf("message = %+v, want the stored message", m)
	}
	want, err := bindings.EncodeMessageStep(m)
	must(t, "EncodeMessageStep", err)
	if !jsonEqual(res.Entries[in.Message.Index].Output, want) {
		t.Fatalf("message step output = %s, want %s", res.Entries[in.Message.Index].Output, want)
	}
	j := f.wantJournal(t, "after the message step", in.TenantID, in.RunID, "render-prompt/completed", "persist-user-message/completed", "agent-loop/1/model-call/started")
	if !jsonEqual(j[1].Output, want) {
		t.Fatalf("stored message step output = %s, want %s", j[1].Output, want)
	}
	stored := f.read(t, in.TenantID, driverConv, 10, 0)
	if last := stored[len(stored)-1]; last.ID != m.ID || last.Seq != m.Seq {
		t.Fatalf("conversation's last message %+v, want %+v", last, m)
	}
}

func testDriverMessageStep(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	in := f.openForMessage(t, a, 3, "user-4")
	res, err := f.d.Commit(f.ctx, in)
	must(t, "Commit of the message step", err)
	diff(t, "appended", res.Appended, []bool{true, true, true})
	f.wantMessageStep(t, res, in)
	if res.Message.Seq != 4 {
		t.Fatalf("message seq %d, want 4", res.Message.Seq)
	}
}

func testDriverMessageStepRetry(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	in := f.openForMessage(t, a, 1, "user-2")
	first, err := f.d.Commit(f.ctx, in)
	must(t, "Commit", err)
	// A retry (the first call's answer lost), with another message body:
	// the stored message and entries are returned, nothing is added.
	retry := messageCommit(a, "run-1", "worker-1", "user-2")
	retry.Message.Message.Content = "hello again"
	second, err := f.d.Commit(f.ctx, retry)
	must(t, "Commit again", err)
	diff(t, "appended on the retry", second.Appended, []bool{false, false, false})
	diff(t, "message on the retry", second.Message, first.Message)
	diff(t, "entries on the retry", second.Entries, first.Entries)
	if n := f.get(t, a, driverConv).MessageCount; n != 2 {
		t.Fatalf("message count after the retry = %d, want 2", n)
	}
	f.wantMessageStep(t, second, in)
}

func testDriverCountChanged(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	in := f.openForMessage(t, a, 2, "user-3")
	in.Message.CheckCount, in.Message.Count = true, 1
	_, err := f.d.Commit(f.ctx, in)
	errIs(t, "Commit on a stale count", err, bindings.ErrConversationChanged)
	f.wantJournal(t, "after a stale count", a, "run-1")
	if n := f.get(t, a, driverConv).MessageCount; n != 2 {
		t.Fatalf("message count after a stale count = %d, want 2", n)
	}
}

func testDriverCountHolds(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	in := f.openForMessage(t, a, 2, "user-3")
	in.Message.CheckCount, in.Message.Count = true, 2
	res, err := f.d.Commit(f.ctx, in)
	must(t, "Commit on the count read", err)
	if res.Message.Seq != 3 {
		t.Fatalf("message seq %d, want 3 (count 2 + 1)", res.Message.Seq)
	}
	f.wantMessageStep(t, res, in)
}

func testDriverCommitHistory(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	ms := f.conversation(t, a, 3)
	f.openNew(t, a, "run-1", "worker-1")
	in := messageCommit(a, "run-1", "worker-1", "user-4")
	in.Message.HistoryLimit = 2
	res, err := f.d.Commit(f.ctx, in)
	must(t, "Commit", err)
	diff(t, "history before the message", res.History, ms[1:])
}

func testDriverRefusedMessage(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.conversation(t, a, 1)
	must(t, "CloseConversation", f.Conversations.CloseConversation(f.ctx, a, driverConv))
	f.openNew(t, a, "run-1", "worker-1")
	res, err := f.d.Commit(f.ctx, messageCommit(a, "run-1", "worker-1", "user-2"))
	wantCode(t, "Commit of a message to a closed conversation", err, agents.CodeConversationClosed)
	if len(res.Entries) != 1 || res.Entries[0].Key != "render-prompt" || len(res.Appended) != 1 || !res.Appended[0] {
		t.Fatalf("refused message: entries %+v appended %v, want the entry before it", res.Entries, res.Appended)
	}
	f.wantJournal(t, "after a refused message", a, "run-1", "render-prompt/completed")
}

func testDriverFinish(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	in := f.openForMessage(t, a, 0, "final")
	in.Message.Message.Role, in.Message.Message.TurnNumber = bindings.RoleAgent, 0
	in.Finish = bindings.RunCompleted
	res, err := f.d.Commit(f.ctx, in)
	must(t, "Commit of the finish", err)
	f.wantMessageStep(t, res, in)
	f.wantRun(t, "after the finish", a, "run-1", bindings.RunCompleted, "")
	// The lease is free: another owner takes it at once.
	_, err = f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "AcquireLease after the finish", err)
}

func testDriverInvalid(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.conversation(t, a, 0)
	f.openNew(t, a, "run-1", "worker-1")
	bad := []journal.CommitInput{
		{TenantID: a, RunID: "run-1", Owner: "worker-1", Entries: []bindings.JournalEntry{dentry("ok", bindings.StepStarted, ""), dentry("", bindings.StepStarted, "")}},
		{TenantID: a, RunID: "run-1", Owner: "worker-1", Entries: []bindings.JournalEntry{dentry("ok", bindings.StepStarted, ""), dentry("x", "done", "")}},
		{TenantID: a, RunID: "run-1", Owner: "worker-1", Entries: []bindings.JournalEntry{dentry("ok", bindings.StepStarted, ""), dentry("x", bindings.StepCompleted, `{"broken"`)}},
		{TenantID: a, RunID: "run-1", Owner: "worker-1", Finish: "done"},
		{TenantID: "", RunID: "run-1", Entries: []bindings.JournalEntry{dentry("ok", bindings.StepStarted, "")}},
	}
	m := messageCommit(a, "run-1", "worker-1", "user-1")
	m.Message.Index = len(m.Entries) + 1
	bad = append(bad, m)
	for i, in := range bad {
		_, err := f.d.Commit(f.ctx, in)
		wantCode(t, "invalid commit "+string(rune('0'+i)), err, agents.CodeInvalidMessage)
	}
	f.wantJournal(t, "after invalid commits", a, "run-1")
	f.wantRun(t, "after invalid commits", a, "run-1", bindings.RunRunning, "worker-1")
}

func testDriverTrusted(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	in := f.openForMessage(t, a, 1, "user-2")
	in.Trusted = true
	res, err := f.d.Commit(f.ctx, in)
	must(t, "trusted Commit of the message step", err)
	diff(t, "appended", res.Appended, []bool{true, true, true})
	f.wantMessageStep(t, res, in)
	more := journal.CommitInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Trusted: true, Finish: bindings.RunSuspended,
		Entries: []bindings.JournalEntry{dentry("agent-loop/1/model-call", bindings.StepStarted, ""), dentry("agent-loop/1/model-call", bindings.StepCompleted, `{"text":"hi"}`)}}
	res, err = f.d.Commit(f.ctx, more)
	must(t, "trusted Commit with a finish", err)
	diff(t, "appended", res.Appended, []bool{false, true})
	j := f.wantJournal(t, "after trusted commits", a, "run-1", "render-prompt/completed", "persist-user-message/completed", "agent-loop/1/model-call/started", "agent-loop/1/model-call/completed")
	diff(t, "stored entry", res.Entries[1], j[3])
	f.wantRun(t, "after a trusted finish", a, "run-1", bindings.RunSuspended, "")
}

func testDriverTenancy(t *testing.T, f *driverFixture) {
	a, b := f.tenant("a"), f.tenant("b")
	f.conversation(t, a, 2)
	f.parked(t, a, "run-1")
	_, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: b, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	wantCode(t, "Open of another tenant's run", err, agents.CodeRunSnapshotMissing)
	_, err = f.d.Commit(f.ctx, journal.CommitInput{TenantID: b, RunID: "run-1", Entries: []bindings.JournalEntry{dentry("x", bindings.StepStarted, "")}})
	wantCode(t, "Commit to another tenant's run", err, agents.CodeRunJournalUnavailable)
	// Tenant b's run of the same id, naming a conversation only a has.
	d, err := f.d.Open(f.ctx, journal.OpenInput{TenantID: b, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL, Create: create(b, "run-1"), ReadConversation: true, HistoryLimit: 5})
	must(t, "Open of tenant b's run", err)
	if d.HasConversation || d.History != nil || len(d.Journal) != 0 {
		t.Fatalf("tenant b's Open read %+v, want no conversation and an empty journal", d)
	}
	m := messageCommit(b, "run-1", "worker-2", "user-3")
	_, err = f.d.Commit(f.ctx, m)
	wantCode(t, "message to another tenant's conversation", err, agents.CodeConversationNotFound)
	f.wantJournal(t, "tenant a's run", a, "run-1", "setup/completed")
	if n := f.get(t, a, driverConv).MessageCount; n != 2 {
		t.Fatalf("tenant a's conversation has %d messages, want 2", n)
	}
}

func testDriverCancelled(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.openNew(t, a, "run-1", "worker-1")
	ctx := canceled(t)
	if _, err := f.d.Commit(ctx, journal.CommitInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Entries: []bindings.JournalEntry{dentry("x", bindings.StepStarted, "")}}); err == nil {
		t.Fatal("Commit with a cancelled context succeeded")
	}
	if _, err := f.d.Open(ctx, journal.OpenInput{TenantID: a, RunID: "run-2", Owner: "worker-1", TTL: leaseTTL, Create: create(a, "run-2")}); err == nil {
		t.Fatal("Open with a cancelled context succeeded")
	}
	f.wantJournal(t, "after cancelled calls", a, "run-1")
	if _, err := f.Runs.GetRun(f.ctx, a, "run-2"); agents.CodeOf(err) != agents.CodeRunJournalUnavailable {
		t.Fatalf("run-2 after a cancelled Open: %v, want no run", err)
	}
}

// testDriverBareMessage: a Message whose Index is len(Entries) names no
// step entry: the entries are stored, then the message, and the history
// before it is read after it.
func testDriverBareMessage(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	in := f.openForMessage(t, a, 2, "user-1")
	in.Entries = in.Entries[:1]
	in.Message.HistoryLimit = 5
	res, err := f.d.Commit(f.ctx, in)
	must(t, "Commit of a message with no step entry", err)
	if len(res.Entries) != 1 || len(res.Appended) != 1 || !res.Appended[0] {
		t.Fatalf("Committed entries %v, appended %v; want the one entry, appended", keys(res.Entries), res.Appended)
	}
	if res.Message.ID != "user-1" || res.Message.Seq != 3 {
		t.Fatalf("stored message %s seq %d, want user-1 seq 3", res.Message.ID, res.Message.Seq)
	}
	if len(res.History) != 2 || res.History[0].Seq != 1 || res.History[1].Seq != 2 {
		t.Fatalf("history %+v, want the two messages before it", res.History)
	}
	f.wantJournal(t, "after a message with no step entry", a, "run-1", "render-prompt/completed")
}

func testDriverCommitUnknown(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	_, err := f.d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: "missing", Owner: "worker-1", Entries: []bindings.JournalEntry{dentry("setup", bindings.StepCompleted, `{}`)}})
	wantCode(t, "Commit of entries to an unknown run", err, agents.CodeRunJournalUnavailable)
	_, err = f.d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: "missing", Owner: "worker-1", Finish: bindings.RunCompleted})
	wantCode(t, "Commit of a finish of an unknown run", err, agents.CodeRunJournalUnavailable)
	f.conversation(t, a, 0)
	_, err = f.d.Commit(f.ctx, messageCommit(a, "missing", "worker-1", "user-1"))
	wantCode(t, "Commit of a message step to an unknown run", err, agents.CodeRunJournalUnavailable)
	diff(t, "messages", f.messageIDs(t, a, driverConv), []string{})
}

func testDriverCommitEmpty(t *testing.T, f *driverFixture) {
	a := f.tenant("a")
	f.openNew(t, a, "run-1", "worker-1")
	res, err := f.d.Commit(f.ctx, journal.CommitInput{TenantID: a, RunID: "run-1", Owner: "worker-1"})
	must(t, "Commit of no entries", err)
	if len(res.Entries) != 0 || len(res.Appended) != 0 {
		t.Fatalf("Commit of no entries returned %+v, %v", res.Entries, res.Appended)
	}
	f.wantJournal(t, "after a commit of nothing", a, "run-1")
	f.wantRun(t, "after a commit of nothing", a, "run-1", bindings.RunRunning, "worker-1")
}

// messageIDs lists the ids of the messages of conv, oldest first.
func (f *fixture) messageIDs(t *testing.T, tenant, conv string) []string {
	t.Helper()
	ms, err := f.Conversations.ReadMessages(f.ctx, bindings.ReadMessagesInput{TenantID: tenant, ConversationID: conv, Limit: -1})
	must(t, "ReadMessages", err)
	ids := []string{}
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return ids
}
