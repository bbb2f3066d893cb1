package bindingstest

import (
	"encoding/json"
	"testing"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
)

// messageStepCases check bindings.MessageStepAppender (RunBatchTests runs
// them when the binding has it).
var messageStepCases = []testCase{
	{name: "AppendMessageStepStoresAllWithTheStoredMessageAsTheStepOutput", run: testMessageStep},
	{name: "AppendMessageStepWithFinishEndsTheDrive", run: testMessageStepFinish},
	{name: "AppendMessageStepOfAMessageStoredBeforeJournalsThatMessage", run: testMessageStepStoredBefore},
	{name: "AppendMessageStepByAnotherOwnerStoresNothing", run: testMessageStepBusy},
	{name: "AppendMessageStepToAClosedConversationKeepsOnlyTheEntriesBefore", run: testMessageStepClosed},
}

func (f *fixture) messageStep(in bindings.MessageStepInput) (bindings.MessageStepResult, error) {
	return f.Runs.(bindings.MessageStepAppender).AppendMessageStep(f.ctx, in)
}

// messageStepInput is a model call's result, its message, the message
// step, a decide step and the next tool call's started entry.
func messageStepInput(tenant, owner string) bindings.MessageStepInput {
	return bindings.MessageStepInput{
		Steps: bindings.AppendStepsInput{TenantID: tenant, RunID: "run-1", Owner: owner, Entries: []bindings.JournalEntry{
			entry("agent-loop/1/model-call", bindings.StepCompleted),
			{Key: "agent-loop/1/model-call/message", Node: "model-call", Status: bindings.StepCompleted, At: at(2)},
			entry("agent-loop/1/dispatch-tools", bindings.StepCompleted),
			entry("agent-loop/1/dispatch-tools/call_1", bindings.StepStarted)}},
		StepIndex: 1,
		Message:   runMessage(tenant, "run-1/agent-loop/1/model-call/message"),
	}
}

// wantStepOutput fails t unless the step entry's output is the message's
// encoding (compared as JSON: a store may keep it in its own form).
func wantStepOutput(t *testing.T, what string, e bindings.JournalEntry, m bindings.ConversationMessage) {
	t.Helper()
	want, err := bindings.EncodeMessageStep(m)
	must(t, "EncodeMessageStep", err)
	var got, exp any
	if err := json.Unmarshal(e.Output, &got); err != nil {
		t.Fatalf("%s: output %q: %v", what, e.Output, err)
	}
	must(t, "decode encoding", json.Unmarshal(want, &exp))
	diff(t, what, got, exp)
}

func testMessageStep(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(1))
	f.startRun(t, a, "run-1", "worker-1")
	in := messageStepInput(a, "worker-1")
	res, err := f.messageStep(in)
	must(t, "AppendMessageStep", err)
	diff(t, "appended", res.Appended, []bool{true, true, true, true})
	if len(res.Entries) != 4 || res.Entries[1].Key != in.Steps.Entries[1].Key || res.Entries[1].Seq == 0 {
		t.Fatalf("entries %+v", res.Entries)
	}
	m := res.Message
	if m.ID != in.Message.ID || m.Seq == 0 || m.Content != "hello" {
		t.Fatalf("message %+v", m)
	}
	wantStepOutput(t, "returned step output", res.Entries[1], m)
	stored := f.journal(t, a, "run-1")
	diff(t, "journal", journalKeys(stored), []string{"agent-loop/1/model-call:completed", "agent-loop/1/model-call/message:completed",
		"agent-loop/1/dispatch-tools:completed", "agent-loop/1/dispatch-tools/call_1:started"})
	wantStepOutput(t, "stored step output", stored[1], m)
	msgs, err := f.Conversations.ReadMessages(f.ctx, bindings.ReadMessagesInput{TenantID: a, ConversationID: "conv-1", Limit: -1})
	must(t, "ReadMessages", err)
	if len(msgs) != 1 {
		t.Fatalf("messages %+v", msgs)
	}
	diff(t, "message read back", msgs[0], m)
	// Again: nothing stored twice, the step's output unchanged.
	again, err := f.messageStep(in)
	must(t, "AppendMessageStep again", err)
	diff(t, "appended again", again.Appended, []bool{false, false, false, false})
	diff(t, "message again", again.Message, m)
	wantStepOutput(t, "step output again", again.Entries[1], m)
	diff(t, "messages after the retry", f.messageIDs(t, a, "conv-1"), []string{in.Message.ID})
	if n := len(f.journal(t, a, "run-1")); n != 4 {
		t.Fatalf("%d entries after the retry, want 4", n)
	}
}

func testMessageStepFinish(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(1))
	f.startRun(t, a, "run-1", "worker-1")
	in := messageStepInput(a, "worker-1")
	in.Steps.Entries = append(in.Steps.Entries[:2:2], entry("compose-result", bindings.StepCompleted))
	in.Finish = bindings.RunCompleted
	_, err := f.messageStep(in)
	must(t, "AppendMessageStep with Finish", err)
	r := f.getRun(t, a, "run-1")
	if r.Status != bindings.RunCompleted || r.LeaseOwner != "" {
		t.Fatalf("run: status %q, lease owner %q; want completed and no owner", r.Status, r.LeaseOwner)
	}
	diff(t, "journal", journalKeys(f.journal(t, a, "run-1")), []string{"agent-loop/1/model-call:completed",
		"agent-loop/1/model-call/message:completed", "compose-result:completed"})
	in.Finish = "bogus"
	_, err = f.messageStep(in)
	wantCode(t, "AppendMessageStep with an unknown status", err, agents.CodeInvalidMessage)
}

func testMessageStepStoredBefore(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(1))
	f.startRun(t, a, "run-1", "worker-1")
	in := messageStepInput(a, "worker-1")
	head := in.Steps
	head.Entries = head.Entries[:1]
	_, _, m, err := f.stepsAndMessage(head, in.Message)
	must(t, "AppendStepsAndMessage", err)
	res, err := f.messageStep(in)
	must(t, "AppendMessageStep", err)
	diff(t, "appended", res.Appended, []bool{false, true, true, true})
	diff(t, "message", res.Message, m)
	wantStepOutput(t, "step output", res.Entries[1], m)
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{in.Message.ID})
}

func testMessageStepBusy(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(1))
	f.startRun(t, a, "run-1", "worker-1")
	_, err := f.messageStep(messageStepInput(a, "worker-2"))
	wantCode(t, "AppendMessageStep by worker-2", err, agents.CodeRunBusy)
	if es := f.journal(t, a, "run-1"); len(es) != 0 {
		t.Fatalf("a refused call stored %d entries", len(es))
	}
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{})
}

func testMessageStepClosed(t *testing.T, f *fixture) {
	a := f.tenant("a")
	f.open(t, a, "conv-1", at(1))
	must(t, "CloseConversation", f.Conversations.CloseConversation(f.ctx, a, "conv-1"))
	f.startRun(t, a, "run-1", "worker-1")
	res, err := f.messageStep(messageStepInput(a, "worker-1"))
	wantCode(t, "AppendMessageStep to a closed conversation", err, agents.CodeConversationClosed)
	if len(res.Entries) != 1 || res.Entries[0].Key != "agent-loop/1/model-call" {
		t.Fatalf("entries returned %+v, want the one before the message", res.Entries)
	}
	diff(t, "journal", journalKeys(f.journal(t, a, "run-1")), []string{"agent-loop/1/model-call:completed"})
	diff(t, "messages", f.messageIDs(t, a, "conv-1"), []string{})
}
