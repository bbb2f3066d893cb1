package bindingstest

import (
	"errors"
	"fmt"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// turnOpenCases check bindings.TurnOpener (RunBatchTests runs them when
// the binding has it and Harness.Snapshots and Harness.Conversations are
// the same store).
var turnOpenCases = []testCase{
	{name: "TurnOpenerStoreIsTheStore", run: testTurnOpenerStore},
	{name: "OpenTurnOpensTheRunAndReadsTheConversation", run: testOpenTurn},
	{name: "OpenTurnOfAnExistingRunReturnsItsJournalAndFirstSnapshot", run: testOpenTurnExisting},
	{name: "OpenTurnWithoutTheConversationStillOpensTheRun", run: testOpenTurnNoConversation},
	{name: "OpenTurnDoesNotReadAnotherTenantsConversation", run: testOpenTurnOtherTenant},
	{name: "OpenTurnOfARunHeldByAnotherIsBusy", run: testOpenTurnBusy},
	{name: "AppendUserMessageStoresBothAndReadsTheHistoryBeforeTheMessage", run: testUserMessage},
	{name: "AppendUserMessageOfAMessageStoredBeforeReadsTheHistoryBeforeIt", run: testUserMessageStoredBefore},
	{name: "AppendUserMessageByAnotherOwnerStoresNothing", run: testUserMessageBusy},
	{name: "AppendUserMessageOfABusyTurnKeepsTheEntries", run: testUserMessageTurnTaken},
	{name: "AppendUserMessageToAClosedConversationKeepsTheEntries", run: testUserMessageClosed},
	{name: "AppendUserMessageWithoutAHistoryLimitIsInvalid", run: testUserMessageNoLimit},
	{name: "OpenTurnWithAHistoryLimitReadsTheNewestMessages", run: testOpenTurnHistory},
	{name: "AppendUserMessageStepOnTheCountReadStoresAll", run: testUserMessageStep},
	{name: "AppendUserMessageStepAfterAnotherMessageStoresNothing", run: testUserMessageStepChanged},
	{name: "AppendUserMessageStepOfAMessageStoredBeforeStoresNothing", run: testUserMessageStepStoredBefore},
	{name: "AppendUserMessageStepToAClosedConversationKeepsTheEntriesBefore", run: testUserMessageStepClosed},
	{name: "AppendUserMessageStepByAnotherOwnerStoresNothing", run: testUserMessageStepBusy},
}

// resumeRunCases check bindings.RunResumer (RunBatchTests runs them when
// the binding has it and Harness.Snapshots and Harness.Hitl are the same
// store).
var resumeRunCases = []testCase{
	{name: "RunResumerStoreIsTheStore", run: testRunResumerStore},
	{name: "ResumeRunLeasesAndReadsSnapshotJournalAndTheRunsApprovals", run: testResumeRun},
	{name: "ResumeRunOfALeaseHeldByAnotherIsBusy", run: testResumeRunBusy},
	{name: "ResumeRunOfAnUnknownRunIsSnapshotMissing", run: testResumeRunUnknown},
	{name: "ResumeRunHeldReadsWithoutLeasing", run: testResumeRunHeld},
}

func (f *fixture) runResumer() bindings.RunResumer { return f.Runs.(bindings.RunResumer) }

func testRunResumerStore(t *testing.T, f *fixture) {
	if s := f.runResumer().RunResumerStore(); any(s) != any(f.Runs) {
		t.Fatalf("RunResumerStore() = %T %p, want the store itself", s, s)
	}
}

// requestApproval asks approval id for run.
func (f *fixture) requestApproval(t *testing.T, tenant, run, id string) bindings.Approval {
	t.Helper()
	ap, err := f.Hitl.RequestApproval(f.ctx, bindings.ApprovalRequest{TenantID: tenant, ID: id, RunID: run, ConversationID: "conv-1",
		ToolCallID: "call_1", ToolID: "acme.lookup", ToolVersion: "1.0.0", Arguments: []byte(`{"q":"x"}`), ReviewerRole: "standard", CreatedAt: at(2), ExpiresAt: farFuture})
	must(t, "RequestApproval "+id, err)
	return ap
}

func testResumeRun(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.parkedRun(t, a)
	f.requestApproval(t, a, "run-1", "ap-1")
	f.requestApproval(t, a, "run-1", "ap-2")
	f.requestApproval(t, a, "run-other", "ap-3")
	_, err := f.Hitl.ResolveApproval(f.ctx, a, "ap-2", bindings.ApprovalDecision{Approved: true, Reviewer: "rev"})
	must(t, "ResolveApproval", err)
	res, err := f.runResumer().ResumeRun(f.ctx, bindings.ReopenRunInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "ResumeRun", err)
	if res.Run.LeaseOwner != "worker-2" {
		t.Fatalf("run = %+v, want leased to worker-2", res.Run)
	}
	diff(t, "run", f.getRun(t, a, "run-1"), res.Run)
	diff(t, "journal", res.Journal, f.journal(t, a, "run-1"))
	if res.Snapshot.ConversationID != "conv-1" {
		t.Fatalf("snapshot %+v", res.Snapshot)
	}
	if len(res.Approvals) != 2 {
		t.Fatalf("approvals %+v, want run-1's two", res.Approvals)
	}
	for _, got := range res.Approvals {
		want, err := f.Hitl.GetApproval(f.ctx, a, got.Request.ID)
		must(t, "GetApproval", err)
		diff(t, "approval "+got.Request.ID, got, want)
	}
}

func testResumeRunBusy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.parkedRun(t, a)
	_, err := f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-1", TTL: leaseTTL})
	must(t, "AcquireLease", err)
	_, err = f.runResumer().ResumeRun(f.ctx, bindings.ReopenRunInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	wantCode(t, "ResumeRun of a run held by worker-1", err, agents.CodeRunBusy)
	if r := f.getRun(t, a, "run-1"); r.LeaseOwner != "worker-1" {
		t.Fatalf("a refused ResumeRun moved the lease to %q", r.LeaseOwner)
	}
}

func testResumeRunUnknown(t *testing.T, f *fixture) {
	_, err := f.runResumer().ResumeRun(f.ctx, bindings.ReopenRunInput{TenantID: f.tenant("a"), RunID: "missing", Owner: "worker-2", TTL: leaseTTL})
	wantCode(t, "ResumeRun of an unknown run", err, agents.CodeRunSnapshotMissing)
}

func testResumeRunHeld(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.parkedRun(t, a)
	f.requestApproval(t, a, "run-1", "ap-1")
	res, err := f.runResumer().ResumeRun(f.ctx, bindings.ReopenRunInput{TenantID: a, RunID: "run-1", Held: true})
	must(t, "ResumeRun held", err)
	if res.Run.ID != "" || len(res.Journal) != 1 || len(res.Approvals) != 1 {
		t.Fatalf("ResumeRun held = %+v, want no run, the journal and the approval", res)
	}
	if r := f.getRun(t, a, "run-1"); r.LeaseOwner != "" {
		t.Fatalf("a held ResumeRun leased the run to %q", r.LeaseOwner)
	}
}

func (f *fixture) turnOpener() bindings.TurnOpener { return f.Runs.(bindings.TurnOpener) }

// addMessage appends in with a fixed time.
func (f *fixture) addMessage(t *testing.T, in bindings.AppendMessageInput) {
	t.Helper()
	in.CreatedAt = t0
	_, err := f.Conversations.AppendMessage(f.ctx, in)
	must(t, "AppendMessage "+in.ID, err)
}

func testTurnOpenerStore(t *testing.T, f *fixture) {
	if s := f.turnOpener().TurnOpenerStore(); any(s) != any(f.Runs) {
		t.Fatalf("TurnOpenerStore() = %T %p, want the store itself", s, s)
	}
}

func testOpenTurn(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(1))
	f.addMessage(t, bindings.AppendMessageInput{TenantID: a, ConversationID: "conv-1", Role: bindings.RoleUser, Content: "before", TurnNumber: 1})
	res, err := f.turnOpener().OpenTurn(f.ctx, bindings.OpenTurnInput{OpenRunInput: openInput(a, "run-1", "worker-1", `{"userMessage":"first"}`)})
	must(t, "OpenTurn", err)
	if !res.Created || res.Journal == nil || len(res.Journal) != 0 || res.Run.LeaseOwner != "worker-1" || res.Run.Status != bindings.RunRunning {
		t.Fatalf("OpenTurn of a new run: %+v; want it created, running, leased to worker-1, with an empty journal", res.OpenRunResult)
	}
	diff(t, "run", f.getRun(t, a, "run-1"), res.Run)
	stored, err := f.Snapshots.Read(f.ctx, a, "run-1")
	must(t, "Read snapshot", err)
	if !jsonEqual(res.Snapshot.Input, stored.Input) || res.Snapshot.ConversationID != "conv-1" || !stored.CreatedAt.Equal(at(3)) {
		t.Fatalf("returned snapshot %+v, stored %+v", res.Snapshot, stored)
	}
	if !res.HasConversation {
		t.Fatal("OpenTurn did not read the conversation")
	}
	diff(t, "conversation", res.Conversation, f.get(t, a, "conv-1"))
	if res.Conversation.MessageCount != 1 {
		t.Fatalf("conversation %+v, want its one message counted", res.Conversation)
	}
}

func testOpenTurnExisting(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(1))
	_, err := f.turnOpener().OpenTurn(f.ctx, bindings.OpenTurnInput{OpenRunInput: openInput(a, "run-1", "worker-1", `{"userMessage":"first"}`)})
	must(t, "OpenTurn", err)
	f.step(t, a, "run-1", "worker-1", "setup", bindings.StepCompleted)
	must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, a, "run-1", "worker-1"))
	res, err := f.turnOpener().OpenTurn(f.ctx, bindings.OpenTurnInput{OpenRunInput: openInput(a, "run-1", "worker-2", `{"userMessage":"second"}`)})
	must(t, "OpenTurn again", err)
	if res.Created || res.Run.LeaseOwner != "worker-2" {
		t.Fatalf("OpenTurn of an existing run: created %v, lease owner %q; want not created, leased to worker-2", res.Created, res.Run.LeaseOwner)
	}
	diff(t, "journal", journalKeys(res.Journal), []string{"setup:completed"})
	if !jsonEqual(res.Snapshot.Input, []byte(`{"userMessage":"first"}`)) {
		t.Fatalf("snapshot input %s, want the first write kept", res.Snapshot.Input)
	}
	if !res.HasConversation || res.Conversation.ID != "conv-1" {
		t.Fatalf("conversation %+v (has %v), want conv-1", res.Conversation, res.HasConversation)
	}
}

func testOpenTurnNoConversation(t *testing.T, f *fixture) {
	a := f.tenant("a")
	res, err := f.turnOpener().OpenTurn(f.ctx, bindings.OpenTurnInput{OpenRunInput: openInput(a, "run-1", "worker-1", `{}`)})
	must(t, "OpenTurn", err)
	if !res.Created || res.HasConversation || res.Conversation.ID != "" {
		t.Fatalf("OpenTurn without the conversation: created %v, conversation %+v (has %v); want created, none", res.Created, res.Conversation, res.HasConversation)
	}
	_, err = f.Conversations.GetConversation(f.ctx, a, "conv-1")
	wantCode(t, "GetConversation", err, agents.CodeConversationNotFound)
}

func testOpenTurnOtherTenant(t *testing.T, f *fixture) {
	a, b := f.tenant("a"), f.tenant("b")
	f.open(t, b, "conv-1", at(1))
	res, err := f.turnOpener().OpenTurn(f.ctx, bindings.OpenTurnInput{OpenRunInput: openInput(a, "run-1", "worker-1", `{}`)})
	must(t, "OpenTurn", err)
	if res.HasConversation {
		t.Fatalf("OpenTurn of tenant a read tenant b's conversation %+v", res.Conversation)
	}
}

func testOpenTurnBusy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(1))
	f.startRun(t, a, "run-1", "worker-1")
	_, err := f.turnOpener().OpenTurn(f.ctx, bindings.OpenTurnInput{OpenRunInput: openInput(a, "run-1", "worker-2", `{}`)})
	wantCode(t, "OpenTurn of a run held by worker-1", err, agents.CodeRunBusy)
	if r := f.getRun(t, a, "run-1"); r.LeaseOwner != "worker-1" {
		t.Fatalf("a refused OpenTurn moved the lease to %q", r.LeaseOwner)
	}
}

// userMessageFixture opens conv-1 with n messages of earlier turns and
// starts run-1 leased to worker-1.
func (f *fixture) userMessageFixture(t *testing.T, tenant string, n int) {
	t.Helper()
	f.open(t, tenant, "conv-1", at(1))
	for i := range n {
		f.addMessage(t, bindings.AppendMessageInput{TenantID: tenant, ConversationID: "conv-1", ID: fmt.Sprintf("old-%d", i),
			Role: bindings.RoleUser, Content: fmt.Sprintf("message %d", i)})
	}
	f.startRun(t, tenant, "run-1", "worker-1")
}

// userMessageInput is setup and render-prompt and the user message of
// turn 1 of run-1, by owner.
func userMessageInput(tenant, owner string, limit int) bindings.UserMessageInput {
	return bindings.UserMessageInput{
		Steps: bindings.AppendStepsInput{TenantID: tenant, RunID: "run-1", Owner: owner, Entries: []bindings.JournalEntry{
			entry("setup", bindings.StepCompleted), entry("render-prompt", bindings.StepCompleted)}},
		Message:      runMessage(tenant, "run-1/persist-user-message"),
		HistoryLimit: limit,
	}
}

// wantHistory fails t unless hist is what ReadMessages returns before
// seq with limit.
func (f *fixture) wantHistory(t *testing.T, what, tenant string, hist []bindings.ConversationMessage, seq int64, limit int) {
	t.Helper()
	want, err := f.Conversations.ReadMessages(f.ctx, bindings.ReadMessagesInput{TenantID: tenant, ConversationID: "conv-1", BeforeSeq: seq, Limit: limit})
	must(t, "ReadMessages", err)
	diff(t, what, hist, want)
}

func testUserMessage(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.userMessageFixture(t, a, 4)
	res, err := f.turnOpener().AppendUserMessage(f.ctx, userMessageInput(a, "worker-1", 3))
	must(t, "AppendUserMessage", err)
	diff(t, "appended", res.Appended, []bool{true, true})
	if len(res.Entries) != 2 || res.Entries[1].Key != "render-prompt" || res.Entries[1].Seq == 0 {
		t.Fatalf("entries %+v", res.Entries)
	}
	m := res.Message
	if m.ID != "run-1/persist-user-message" || m.Content != "hello" || m.Seq == 0 || m.RunID != "run-1" {
		t.Fatalf("message %+v", m)
	}
	diff(t, "journal", journalKeys(f.journal(t, a, "run-1")), []string{"setup:completed", "render-prompt:completed"})
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{"old-0", "old-1", "old-2", "old-3", "run-1/persist-user-message"})
	var ids []string
	for _, h := range res.History {
		ids = append(ids, h.ID)
	}
	diff(t, "history ids", ids, []string{"old-1", "old-2", "old-3"})
	f.wantHistory(t, "history", a, res.History, m.Seq, 3)
	// A limit above the messages there are reads them all.
	f2 := userMessageInput(a, "worker-1", 100)
	again, err := f.turnOpener().AppendUserMessage(f.ctx, f2)
	must(t, "AppendUserMessage again", err)
	diff(t, "appended again", again.Appended, []bool{false, false})
	diff(t, "message again", again.Message, m)
	f.wantHistory(t, "history again", a, again.History, m.Seq, 100)
	if len(again.History) != 4 {
		t.Fatalf("history of %d messages, want the 4 before", len(again.History))
	}
}

func testUserMessageStoredBefore(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.userMessageFixture(t, a, 2)
	first, err := f.turnOpener().AppendUserMessage(f.ctx, userMessageInput(a, "worker-1", 10))
	must(t, "AppendUserMessage", err)
	// Messages stored after it are not history before it.
	f.addMessage(t, bindings.AppendMessageInput{TenantID: a, ConversationID: "conv-1", ID: "later", Role: bindings.RoleAgent, Content: "later", TurnNumber: 1})
	res, err := f.turnOpener().AppendUserMessage(f.ctx, userMessageInput(a, "worker-1", 10))
	must(t, "AppendUserMessage retried", err)
	diff(t, "message", res.Message, first.Message)
	diff(t, "history", res.History, first.History)
	f.wantHistory(t, "history", a, res.History, first.Message.Seq, 10)
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{"old-0", "old-1", "run-1/persist-user-message", "later"})
}

func testUserMessageBusy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.userMessageFixture(t, a, 1)
	res, err := f.turnOpener().AppendUserMessage(f.ctx, userMessageInput(a, "worker-2", 10))
	wantCode(t, "AppendUserMessage by worker-2", err, agents.CodeRunBusy)
	if res.Entries != nil || res.History != nil {
		t.Fatalf("a refused call returned %+v", res)
	}
	if es := f.journal(t, a, "run-1"); len(es) != 0 {
		t.Fatalf("a refused call stored %d entries", len(es))
	}
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{"old-0"})
}

func testUserMessageTurnTaken(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.userMessageFixture(t, a, 0)
	f.addMessage(t, bindings.AppendMessageInput{TenantID: a, ConversationID: "conv-1", ID: "other-turn", Role: bindings.RoleUser, Content: "first", TurnNumber: 1, RunID: "run-0"})
	res, err := f.turnOpener().AppendUserMessage(f.ctx, userMessageInput(a, "worker-1", 10))
	wantCode(t, "AppendUserMessage of a turn another run took", err, agents.CodeConversationBusy)
	if len(res.Entries) != 2 || res.History != nil {
		t.Fatalf("result %+v, want the entries stored and no history", res)
	}
	diff(t, "journal", journalKeys(f.journal(t, a, "run-1")), []string{"setup:completed", "render-prompt:completed"})
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{"other-turn"})
}

func testUserMessageClosed(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.userMessageFixture(t, a, 1)
	must(t, "CloseConversation", f.Conversations.CloseConversation(f.ctx, a, "conv-1"))
	res, err := f.turnOpener().AppendUserMessage(f.ctx, userMessageInput(a, "worker-1", 10))
	wantCode(t, "AppendUserMessage to a closed conversation", err, agents.CodeConversationClosed)
	if len(res.Entries) != 2 || res.History != nil {
		t.Fatalf("result %+v, want the entries stored and no history", res)
	}
	diff(t, "journal", journalKeys(f.journal(t, a, "run-1")), []string{"setup:completed", "render-prompt:completed"})
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{"old-0"})
}

func testUserMessageNoLimit(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.userMessageFixture(t, a, 0)
	_, err := f.turnOpener().AppendUserMessage(f.ctx, userMessageInput(a, "worker-1", 0))
	wantCode(t, "AppendUserMessage with limit 0", err, agents.CodeInvalidMessage)
	if es := f.journal(t, a, "run-1"); len(es) != 0 {
		t.Fatalf("an invalid call stored %d entries", len(es))
	}
}

func testOpenTurnHistory(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.userMessageFixture(t, a, 5)
	in := openInput(a, "run-2", "worker-1", `{}`)
	res, err := f.turnOpener().OpenTurn(f.ctx, bindings.OpenTurnInput{OpenRunInput: in, HistoryLimit: 3})
	must(t, "OpenTurn", err)
	if !res.HasConversation || res.Conversation.MessageCount != 5 {
		t.Fatalf("conversation %+v (has %v), want conv-1 with 5 messages", res.Conversation, res.HasConversation)
	}
	want, err := f.Conversations.ReadMessages(f.ctx, bindings.ReadMessagesInput{TenantID: a, ConversationID: "conv-1", Limit: 3})
	must(t, "ReadMessages", err)
	diff(t, "history", res.History, want)
	diff(t, "history ids", msgIDs(res.History), []string{"old-2", "old-3", "old-4"})
	// An empty conversation has an empty history.
	f.open(t, a, "conv-2", at(1))
	in = openInput(a, "run-3", "worker-1", `{}`)
	in.Snapshot.ConversationID = "conv-2"
	res, err = f.turnOpener().OpenTurn(f.ctx, bindings.OpenTurnInput{OpenRunInput: in, HistoryLimit: 3})
	must(t, "OpenTurn of an empty conversation", err)
	if !res.HasConversation || res.Conversation.ID != "conv-2" || len(res.History) != 0 {
		t.Fatalf("conversation %+v (has %v), history %+v; want conv-2 and no history", res.Conversation, res.HasConversation, res.History)
	}
}

// userMessageStepInput is setup and render-prompt, the user message of
// turn 1 of run-1 as a message step, and the first model call's started
// entry, by owner, on count messages.
func userMessageStepInput(tenant, owner string, count int) bindings.UserMessageStepInput {
	return bindings.UserMessageStepInput{MessageStepInput: bindings.MessageStepInput{
		Steps: bindings.AppendStepsInput{TenantID: tenant, RunID: "run-1", Owner: owner, Entries: []bindings.JournalEntry{
			entry("setup", bindings.StepCompleted), entry("render-prompt", bindings.StepCompleted),
			{Key: "persist-user-message", Node: "persist-user-message", Status: bindings.StepCompleted, At: at(2)},
			entry("build-initial-messages", bindings.StepCompleted),
			entry("agent-loop/1/model-call", bindings.StepStarted)}},
		StepIndex: 2,
		Message:   runMessage(tenant, "run-1/persist-user-message"),
	}, MessageCount: count}
}

func (f *fixture) userMessageStep(in bindings.UserMessageStepInput) (bindings.MessageStepResult, error) {
	return f.turnOpener().AppendUserMessageStep(f.ctx, in)
}

func testUserMessageStep(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.userMessageFixture(t, a, 2)
	res, err := f.userMessageStep(userMessageStepInput(a, "worker-1", 2))
	must(t, "AppendUserMessageStep", err)
	diff(t, "appended", res.Appended, []bool{true, true, true, true, true})
	m := res.Message
	if m.ID != "run-1/persist-user-message" || m.Seq != 3 {
		t.Fatalf("message %+v, want seq 3", m)
	}
	wantStepOutput(t, "returned step output", res.Entries[2], m)
	stored := f.journal(t, a, "run-1")
	diff(t, "journal", journalKeys(stored), []string{"setup:completed", "render-prompt:completed", "persist-user-message:completed",
		"build-initial-messages:completed", "agent-loop/1/model-call:started"})
	wantStepOutput(t, "stored step output", stored[2], m)
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{"old-0", "old-1", "run-1/persist-user-message"})
	if c := f.get(t, a, "conv-1"); c.TurnCount != 1 || c.MessageCount != 3 {
		t.Fatalf("conversation %+v, want turn 1 taken and 3 messages", c)
	}
}

func testUserMessageStepChanged(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.userMessageFixture(t, a, 2)
	f.addMessage(t, bindings.AppendMessageInput{TenantID: a, ConversationID: "conv-1", ID: "meanwhile", Role: bindings.RoleSystem, Content: "meanwhile"})
	res, err := f.userMessageStep(userMessageStepInput(a, "worker-1", 2))
	if !errors.Is(err, bindings.ErrConversationChanged) {
		t.Fatalf("AppendUserMessageStep after another message: %v, want ErrConversationChanged", err)
	}
	if res.Entries != nil {
		t.Fatalf("result %+v, want nothing stored", res)
	}
	if es := f.journal(t, a, "run-1"); len(es) != 0 {
		t.Fatalf("a refused call stored %d entries", len(es))
	}
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{"old-0", "old-1", "meanwhile"})
}

func testUserMessageStepStoredBefore(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.userMessageFixture(t, a, 1)
	first, err := f.turnOpener().AppendUserMessage(f.ctx, userMessageInput(a, "worker-1", 10))
	must(t, "AppendUserMessage", err)
	// Read after the message was stored: the count is right, but the
	// message is not the next one.
	_, err = f.userMessageStep(userMessageStepInput(a, "worker-1", 2))
	if !errors.Is(err, bindings.ErrConversationChanged) {
		t.Fatalf("AppendUserMessageStep of a message stored before: %v, want ErrConversationChanged", err)
	}
	diff(t, "journal", journalKeys(f.journal(t, a, "run-1")), []string{"setup:completed", "render-prompt:completed"})
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{"old-0", first.Message.ID})
}

func testUserMessageStepClosed(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.userMessageFixture(t, a, 1)
	must(t, "CloseConversation", f.Conversations.CloseConversation(f.ctx, a, "conv-1"))
	res, err := f.userMessageStep(userMessageStepInput(a, "worker-1", 1))
	wantCode(t, "AppendUserMessageStep to a closed conversation", err, agents.CodeConversationClosed)
	if len(res.Entries) != 2 {
		t.Fatalf("result %+v, want the two entries before the message", res)
	}
	diff(t, "journal", journalKeys(f.journal(t, a, "run-1")), []string{"setup:completed", "render-prompt:completed"})
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{"old-0"})
}

func testUserMessageStepBusy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.userMessageFixture(t, a, 1)
	_, err := f.userMessageStep(userMessageStepInput(a, "worker-2", 1))
	wantCode(t, "AppendUserMessageStep by worker-2", err, agents.CodeRunBusy)
	if es := f.journal(t, a, "run-1"); len(es) != 0 {
		t.Fatalf("a refused call stored %d entries", len(es))
	}
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{"old-0"})
}
