package bindingstest

import (
	"encoding/json"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// RunBatchTests checks the optional journal capabilities of a RunBinding:
// bindings.StepBatcher, bindings.RunFinisher, bindings.RunOpener (whose
// snapshots Harness.Snapshots reads back), bindings.RunReopener and bindings.StepMessageAppender
// and bindings.MessageStepAppender (whose messages Harness.Conversations
// reads back), bindings.TurnOpener, bindings.RunResumer,
// bindings.OptimisticTurnOpener, bindings.OptimisticRunResumer and the
// bindings.SharedJournalReader of a bindings.TrustedJournal. Each suite
// skips when the
// binding lacks its capability. RunJournalTests runs them too.
func RunBatchTests(t *testing.T, newHarness NewHarness) {
	t.Helper()
	runSuite(t, newHarness, "StepBatcher", func(h Harness) bool {
		_, ok := h.Runs.(bindings.StepBatcher)
		return ok
	}, batchCases)
	runSuite(t, newHarness, "RunFinisher", func(h Harness) bool {
		_, ok := h.Runs.(bindings.RunFinisher)
		return ok
	}, finishCases)
	runSuite(t, newHarness, "RunOpener", func(h Harness) bool {
		_, ok := h.Runs.(bindings.RunOpener)
		return ok && h.Snapshots != nil
	}, openCases)
	runSuite(t, newHarness, "RunReopener", func(h Harness) bool {
		_, ok := h.Runs.(bindings.RunReopener)
		return ok && h.Snapshots != nil && any(h.Snapshots) == any(h.Runs)
	}, reopenCases)
	runSuite(t, newHarness, "StepMessageAppender", func(h Harness) bool {
		_, ok := h.Runs.(bindings.StepMessageAppender)
		return ok && h.Conversations != nil
	}, stepMessageCases)
	runSuite(t, newHarness, "MessageStepAppender", func(h Harness) bool {
		_, ok := h.Runs.(bindings.MessageStepAppender)
		return ok && h.Conversations != nil
	}, messageStepCases)
	runSuite(t, newHarness, "TurnOpener", func(h Harness) bool {
		_, ok := h.Runs.(bindings.TurnOpener)
		return ok && any(h.Snapshots) == any(h.Runs) && any(h.Conversations) == any(h.Runs)
	}, turnOpenCases)
	runSuite(t, newHarness, "RunResumer", func(h Harness) bool {
		_, ok := h.Runs.(bindings.RunResumer)
		return ok && any(h.Snapshots) == any(h.Runs) && any(h.Hitl) == any(h.Runs)
	}, resumeRunCases)
	runSuite(t, newHarness, "SharedJournalReader", hasSharedRead, sharedReadCases)
	runSuite(t, newHarness, "OptimisticTurnOpener", func(h Harness) bool {
		_, ok := h.Runs.(bindings.OptimisticTurnOpener)
		return ok && any(h.Snapshots) == any(h.Runs) && any(h.Conversations) == any(h.Runs)
	}, optimisticOpenCases)
	runSuite(t, newHarness, "OptimisticRunResumer", func(h Harness) bool {
		_, ok := h.Runs.(bindings.OptimisticRunResumer)
		return ok && any(h.Snapshots) == any(h.Runs) && any(h.Conversations) == any(h.Runs) && any(h.Hitl) == any(h.Runs)
	}, optimisticResumeCases)
}

var batchCases = []testCase{
	{name: "AppendStepsAppendsInOrderIdempotentPerKeyAndPhase", run: testAppendSteps},
	{name: "AppendStepsByAnotherOwnerIsBusyAndStoresNothing", run: testAppendStepsOwnerGuard},
	{name: "AppendStepsWithAnInvalidEntryStoresNothing", run: testAppendStepsInvalid},
	{name: "AppendStepsOfUnknownRunIsJournalUnavailable", run: testAppendStepsUnknown},
	{name: "AppendStepsOfNoEntriesStoresNothing", run: testAppendStepsEmpty},
}

var openCases = []testCase{
	{name: "OpenRunCreatesTheRunAndStoresTheSnapshot", run: testOpenRunCreates},
	{name: "OpenRunOfAnExistingRunReturnsItsJournalAndFirstSnapshot", run: testOpenRunExisting},
	{name: "OpenRunOfARunHeldByAnotherIsBusy", run: testOpenRunBusy},
	{name: "OpenRunOfMismatchedSnapshotAndRunIsInvalid", run: testOpenRunMismatch},
}

var stepMessageCases = []testCase{
	{name: "AppendStepsAndMessageStoresBoth", run: testStepsAndMessage},
	{name: "AppendStepsAndMessageByAnotherOwnerStoresNeither", run: testStepsAndMessageBusy},
	{name: "AppendStepsAndMessageOfUnknownRunStoresNeither", run: testStepsAndMessageUnknownRun},
	{name: "AppendStepsAndMessageToAClosedConversationKeepsTheEntries", run: testStepsAndMessageClosed},
}

var finishCases = []testCase{
	{name: "FinishRunStoresEntriesStatusAndReleasesTheLease", run: testFinishRun},
	{name: "FinishRunByAnotherOwnerIsBusyAndChangesNothing", run: testFinishRunOwnerGuard},
	{name: "FinishRunRejectsUnknownStatus", run: testFinishRunInvalid},
}

func entry(key string, status bindings.StepStatus) bindings.JournalEntry {
	return bindings.JournalEntry{Key: key, Node: nodeOf(key), Status: status, Output: json.RawMessage(`{"key":"` + key + `"}`), At: at(2)}
}

func (f *fixture) appendSteps(t *testing.T, in bindings.AppendStepsInput) ([]bindings.JournalEntry, []bool, error) {
	t.Helper()
	return f.Runs.(bindings.StepBatcher).AppendSteps(f.ctx, in)
}

func testAppendSteps(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	first, _ := f.step(t, a, "run-1", "worker-1", "setup", bindings.StepCompleted)
	got, appended, err := f.appendSteps(t, bindings.AppendStepsInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Entries: []bindings.JournalEntry{
		entry("setup", bindings.StepFailed), // setup has a result: the first is kept
		entry("render-prompt", bindings.StepCompleted),
		entry("agent-loop/1/model-call", bindings.StepStarted),
		entry("agent-loop/1/model-call", bindings.StepStarted), // repeated in the call
		entry("agent-loop/1/model-call", bindings.StepCompleted),
	}})
	must(t, "AppendSteps", err)
	diff(t, "appended", appended, []bool{false, true, true, false, true})
	if len(got) != 5 {
		t.Fatalf("AppendSteps returned %d entries, want 5", len(got))
	}
	if got[0].Seq != first.Seq || got[0].Status != bindings.StepCompleted || !jsonEqual(got[0].Output, first.Output) {
		t.Errorf("entry 0 = %+v, want the stored %+v", got[0], first)
	}
	if got[3].Seq != got[2].Seq {
		t.Errorf("a key and phase repeated in one call got seq %d and %d, want the first returned twice", got[2].Seq, got[3].Seq)
	}
	if !(first.Seq < got[1].Seq && got[1].Seq < got[2].Seq && got[2].Seq < got[4].Seq) {
		t.Errorf("seqs %d, %d, %d, %d are not increasing in append order", first.Seq, got[1].Seq, got[2].Seq, got[4].Seq)
	}
	if !got[1].At.Equal(at(2)) || !jsonEqual(got[1].Output, json.RawMessage(`{"key":"render-prompt"}`)) {
		t.Errorf("entry 1 = %+v, want its At and Output stored", got[1])
	}
	es := f.journal(t, a, "run-1")
	diff(t, "journal", journalKeys(es), []string{"setup:completed", "render-prompt:completed", "agent-loop/1/model-call:started", "agent-loop/1/model-call:completed"})
	diff(t, "entries read back", es[1:], []bindings.JournalEntry{got[1], got[2], got[4]})
}

func testAppendStepsOwnerGuard(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	_, _, err := f.appendSteps(t, bindings.AppendStepsInput{TenantID: a, RunID: "run-1", Owner: "worker-2", Entries: []bindings.JournalEntry{
		entry("setup", bindings.StepCompleted), entry("render-prompt", bindings.StepCompleted),
	}})
	wantCode(t, "AppendSteps by worker-2", err, agents.CodeRunBusy)
	if es := f.journal(t, a, "run-1"); len(es) != 0 {
		t.Fatalf("a refused AppendSteps stored %d entries", len(es))
	}
}

func testAppendStepsInvalid(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	_, _, err := f.appendSteps(t, bindings.AppendStepsInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Entries: []bindings.JournalEntry{
		entry("setup", bindings.StepCompleted), entry("", bindings.StepCompleted),
	}})
	wantCode(t, "AppendSteps with an empty key", err, agents.CodeInvalidMessage)
	_, _, err = f.appendSteps(t, bindings.AppendStepsInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Entries: []bindings.JournalEntry{
		entry("setup", bindings.StepCompleted), entry("render-prompt", "finished"),
	}})
	wantCode(t, "AppendSteps with an unknown status", err, agents.CodeInvalidMessage)
	if es := f.journal(t, a, "run-1"); len(es) != 0 {
		t.Fatalf("an invalid AppendSteps stored %d entries", len(es))
	}
}

func testAppendStepsUnknown(t *testing.T, f *fixture) {
	_, _, err := f.appendSteps(t, bindings.AppendStepsInput{TenantID: f.tenant("a"), RunID: "missing", Entries: []bindings.JournalEntry{entry("setup", bindings.StepCompleted)}})
	wantCode(t, "AppendSteps of an unknown run", err, agents.CodeRunJournalUnavailable)
}

func testAppendStepsEmpty(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	got, appended, err := f.appendSteps(t, bindings.AppendStepsInput{TenantID: a, RunID: "run-1", Owner: "worker-1"})
	must(t, "AppendSteps of no entries", err)
	if len(got) != 0 || len(appended) != 0 {
		t.Fatalf("AppendSteps of no entries returned %v, %v", got, appended)
	}
	if es := f.journal(t, a, "run-1"); len(es) != 0 {
		t.Fatalf("AppendSteps of no entries stored %d", len(es))
	}
}

func (f *fixture) finishRun(in bindings.FinishRunInput) ([]bindings.JournalEntry, []bool, error) {
	return f.Runs.(bindings.RunFinisher).FinishRun(f.ctx, in)
}

func testFinishRun(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	f.step(t, a, "run-1", "worker-1", "setup", bindings.StepCompleted)
	got, appended, err := f.finishRun(bindings.FinishRunInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Status: bindings.RunCompleted, Entries: []bindings.JournalEntry{
		entry("setup", bindings.StepCompleted), entry("compose-result", bindings.StepCompleted),
	}})
	must(t, "FinishRun", err)
	diff(t, "appended", appended, []bool{false, true})
	if len(got) != 2 || got[1].Key != "compose-result" {
		t.Fatalf("FinishRun returned %+v", got)
	}
	diff(t, "journal", journalKeys(f.journal(t, a, "run-1")), []string{"setup:completed", "compose-result:completed"})
	r := f.getRun(t, a, "run-1")
	if r.Status != bindings.RunCompleted || r.LeaseOwner != "" {
		t.Fatalf("run after FinishRun: status %q, lease owner %q; want completed and no owner", r.Status, r.LeaseOwner)
	}
	// Without entries it still sets the status; a free lease is taken at once.
	_, err = f.Runs.AcquireLease(f.ctx, bindings.LeaseInput{TenantID: a, RunID: "run-1", Owner: "worker-2", TTL: leaseTTL})
	must(t, "AcquireLease after FinishRun", err)
	_, _, err = f.finishRun(bindings.FinishRunInput{TenantID: a, RunID: "run-1", Owner: "worker-2", Status: bindings.RunSuspended})
	must(t, "FinishRun without entries", err)
	if r := f.getRun(t, a, "run-1"); r.Status != bindings.RunSuspended || r.LeaseOwner != "" {
		t.Fatalf("run after FinishRun without entries: status %q, lease owner %q", r.Status, r.LeaseOwner)
	}
	_, _, err = f.finishRun(bindings.FinishRunInput{TenantID: a, RunID: "missing", Status: bindings.RunCompleted})
	wantCode(t, "FinishRun of an unknown run", err, agents.CodeRunJournalUnavailable)
}

func testFinishRunOwnerGuard(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	_, _, err := f.finishRun(bindings.FinishRunInput{TenantID: a, RunID: "run-1", Owner: "worker-2", Status: bindings.RunCompleted, Entries: []bindings.JournalEntry{
		entry("compose-result", bindings.StepCompleted),
	}})
	wantCode(t, "FinishRun by worker-2", err, agents.CodeRunBusy)
	if es := f.journal(t, a, "run-1"); len(es) != 0 {
		t.Fatalf("a refused FinishRun stored %d entries", len(es))
	}
	if r := f.getRun(t, a, "run-1"); r.Status != bindings.RunRunning || r.LeaseOwner != "worker-1" {
		t.Fatalf("a refused FinishRun changed the run: status %q, lease owner %q", r.Status, r.LeaseOwner)
	}
}

func testFinishRunInvalid(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	_, _, err := f.finishRun(bindings.FinishRunInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Status: "done", Entries: []bindings.JournalEntry{entry("compose-result", bindings.StepCompleted)}})
	wantCode(t, "FinishRun with an unknown status", err, agents.CodeInvalidMessage)
	if es := f.journal(t, a, "run-1"); len(es) != 0 {
		t.Fatalf("a refused FinishRun stored %d entries", len(es))
	}
}

func openInput(tenant, run, owner, input string) bindings.OpenRunInput {
	return bindings.OpenRunInput{
		Snapshot: bindings.RunSnapshotWriteInput{
			TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0",
			AgentID: "acme.drafter", AgentVersion: "1.0.0", ConversationID: "conv-1",
			Input: json.RawMessage(input), CreatedAt: at(3),
		},
		Start: bindings.StartRunInput{TenantID: tenant, RunID: run, FlowID: "agent.turn", FlowVersion: "1.1.0", Owner: owner, LeaseTTL: leaseTTL},
	}
}

func (f *fixture) openRun(in bindings.OpenRunInput) (bindings.OpenRunResult, error) {
	return f.Runs.(bindings.RunOpener).OpenRun(f.ctx, in)
}

func testOpenRunCreates(t *testing.T, f *fixture) {
	a := f.tenant("a")
	res, err := f.openRun(openInput(a, "run-1", "worker-1", `{"userMessage":"first"}`))
	must(t, "OpenRun", err)
	if !res.Created || len(res.Journal) != 0 || res.Journal == nil {
		t.Fatalf("OpenRun of a new run: created %v, journal %v; want created and an empty journal", res.Created, res.Journal)
	}
	if res.Run.Status != bindings.RunRunning || res.Run.LeaseOwner != "worker-1" || res.Run.ID != "run-1" {
		t.Fatalf("run = %+v, want running and leased to worker-1", res.Run)
	}
	diff(t, "run", f.getRun(t, a, "run-1"), res.Run)
	stored, err := f.Snapshots.Read(f.ctx, a, "run-1")
	must(t, "Read snapshot", err)
	if !jsonEqual(stored.Input, json.RawMessage(`{"userMessage":"first"}`)) || stored.AgentID != "acme.drafter" || !stored.CreatedAt.Equal(at(3)) {
		t.Fatalf("stored snapshot %+v", stored)
	}
	if !jsonEqual(res.Snapshot.Input, stored.Input) || res.Snapshot.AgentVersion != stored.AgentVersion || res.Snapshot.RunID != "run-1" {
		t.Fatalf("returned snapshot %+v, want the stored %+v", res.Snapshot, stored)
	}
}

func testOpenRunExisting(t *testing.T, f *fixture) {
	a := f.tenant("a")
	_, err := f.openRun(openInput(a, "run-1", "worker-1", `{"userMessage":"first"}`))
	must(t, "OpenRun", err)
	f.step(t, a, "run-1", "worker-1", "setup", bindings.StepCompleted)
	must(t, "ReleaseLease", f.Runs.ReleaseLease(f.ctx, a, "run-1", "worker-1"))
	res, err := f.openRun(openInput(a, "run-1", "worker-2", `{"userMessage":"second"}`))
	must(t, "OpenRun again", err)
	if res.Created || res.Run.LeaseOwner != "worker-2" {
		t.Fatalf("OpenRun of an existing run: created %v, lease owner %q; want not created, leased to worker-2", res.Created, res.Run.LeaseOwner)
	}
	diff(t, "journal", journalKeys(res.Journal), []string{"setup:completed"})
	if !jsonEqual(res.Snapshot.Input, json.RawMessage(`{"userMessage":"first"}`)) {
		t.Fatalf("snapshot input %s, want the first write kept", res.Snapshot.Input)
	}
}

func testOpenRunBusy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.startRun(t, a, "run-1", "worker-1")
	_, err := f.openRun(openInput(a, "run-1", "worker-2", `{}`))
	wantCode(t, "OpenRun of a run held by worker-1", err, agents.CodeRunBusy)
	if r := f.getRun(t, a, "run-1"); r.LeaseOwner != "worker-1" {
		t.Fatalf("a refused OpenRun moved the lease to %q", r.LeaseOwner)
	}
}

func testOpenRunMismatch(t *testing.T, f *fixture) {
	in := openInput(f.tenant("a"), "run-1", "worker-1", `{}`)
	in.Snapshot.RunID = "run-2"
	_, err := f.openRun(in)
	wantCode(t, "OpenRun of mismatched ids", err, agents.CodeInvalidMessage)
}

func (f *fixture) stepsAndMessage(steps bindings.AppendStepsInput, msg bindings.AppendMessageInput) ([]bindings.JournalEntry, []bool, bindings.ConversationMessage, error) {
	return f.Runs.(bindings.StepMessageAppender).AppendStepsAndMessage(f.ctx, steps, msg)
}

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

func runMessage(tenant, id string) bindings.AppendMessageInput {
	return bindings.AppendMessageInput{TenantID: tenant, ConversationID: "conv-1", ID: id, Role: bindings.RoleUser, Content: "hello", TurnNumber: 1, RunID: "run-1"}
}

func testStepsAndMessage(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(1))
	f.startRun(t, a, "run-1", "worker-1")
	f.step(t, a, "run-1", "worker-1", "setup", bindings.StepCompleted)
	steps := bindings.AppendStepsInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Entries: []bindings.JournalEntry{
		entry("setup", bindings.StepCompleted), entry("render-prompt", bindings.StepCompleted),
	}}
	got, appended, m, err := f.stepsAndMessage(steps, runMessage(a, "run-1/persist-user-message"))
	must(t, "AppendStepsAndMessage", err)
	diff(t, "appended", appended, []bool{false, true})
	if len(got) != 2 || got[1].Key != "render-prompt" {
		t.Fatalf("entries %+v", got)
	}
	if m.ID != "run-1/persist-user-message" || m.Content != "hello" || m.Seq == 0 || m.RunID != "run-1" {
		t.Fatalf("message %+v", m)
	}
	diff(t, "journal", journalKeys(f.journal(t, a, "run-1")), []string{"setup:completed", "render-prompt:completed"})
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{"run-1/persist-user-message"})
	// Again: the message is stored once and returned as stored.
	_, appended, again, err := f.stepsAndMessage(steps, runMessage(a, "run-1/persist-user-message"))
	must(t, "AppendStepsAndMessage again", err)
	diff(t, "appended again", appended, []bool{false, false})
	diff(t, "message again", again, m)
	diff(t, "messages after the retry", f.messageIDs(t, a, "conv-1"), []string{"run-1/persist-user-message"})
}

func testStepsAndMessageBusy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(1))
	f.startRun(t, a, "run-1", "worker-1")
	_, _, _, err := f.stepsAndMessage(bindings.AppendStepsInput{TenantID: a, RunID: "run-1", Owner: "worker-2", Entries: []bindings.JournalEntry{entry("setup", bindings.StepCompleted)}},
		runMessage(a, "m-1"))
	wantCode(t, "AppendStepsAndMessage by worker-2", err, agents.CodeRunBusy)
	if es := f.journal(t, a, "run-1"); len(es) != 0 {
		t.Fatalf("a refused call stored %d entries", len(es))
	}
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{})
}

func testStepsAndMessageUnknownRun(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(1))
	_, _, _, err := f.stepsAndMessage(bindings.AppendStepsInput{TenantID: a, RunID: "missing", Entries: []bindings.JournalEntry{entry("setup", bindings.StepCompleted)}},
		runMessage(a, "m-1"))
	wantCode(t, "AppendStepsAndMessage of an unknown run", err, agents.CodeRunJournalUnavailable)
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{})
}

func testStepsAndMessageClosed(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(1))
	must(t, "CloseConversation", f.Conversations.CloseConversation(f.ctx, a, "conv-1"))
	f.startRun(t, a, "run-1", "worker-1")
	_, _, _, err := f.stepsAndMessage(bindings.AppendStepsInput{TenantID: a, RunID: "run-1", Owner: "worker-1", Entries: []bindings.JournalEntry{entry("setup", bindings.StepCompleted)}},
		runMessage(a, "m-1"))
	wantCode(t, "AppendStepsAndMessage to a closed conversation", err, agents.CodeConversationClosed)
	diff(t, "journal", journalKeys(f.journal(t, a, "run-1")), []string{"setup:completed"})
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{})
}
