package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/kindgi/agents/agent"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journaltest"
	"github.com/kindgi/agents/memstore"
	"github.com/kindgi/agents/turn"
)

// keyedProvider answers by the model call's request id (its journal step),
// not by call order (journaltest.KeyedProvider).
type keyedProvider = journaltest.KeyedProvider

func crashScenarioProvider() *keyedProvider { return journaltest.ScenarioProvider() }

const crashRunID = "run-crash"

// crashOutcome is what a scenario leaves behind.
type crashOutcome struct {
	result   turn.Result
	messages []bindings.ConversationMessage
	journal  []journalLine
	toolRuns map[string]int // request id → invocations
	drives   int
	failedOp string
	writes   int
}

// journalLine is a journal entry as the crash tests compare it.
type journalLine = journaltest.Line

// runCrashScenario runs a turn with two tool calls and one approval
// (clause-search, then send-email behind always_ask, then an answer),
// crashing after `allowed` writes (never when negative), then resumes it
// from fresh bindings — as a new process would, once the dead driver's
// lease expired — until it completes. With oneStore the run and snapshot
// and conversation bindings are one value (the turn opens the run in one
// call and appends messages with the entries before them); otherwise they
// are wrapped apart.
func runCrashScenario(t *testing.T, allowed int, panics, oneStore bool) crashOutcome {
	t.Helper()
	f := newFixture(t, nil, nil)
	kp := crashScenarioProvider()
	f.addTool("acme.clause-search", "1.2.1", clauseSchema, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		return json.RawMessage(`{"clauses":["C-7"]}`), nil
	})
	f.addTool("acme.send-email", "2.1.4", emailSchema, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		return json.RawMessage(`{"sent":true}`), nil
	})
	return crashDrive{
		f: f, b: f.bindings(), provider: kp, msg: "Find a clause and send the draft to Globex.", runID: crashRunID, agent: f.agent,
		approvalID: crashRunID + "/agent-loop/2/dispatch-tools/call_2/approval",
	}.run(t, allowed, panics, oneStore)
}

// crashDrive is one crash scenario: msg asked as run runID, its first
// Invoke through bindings that crash after a number of writes, then drives
// from fresh bindings — as a new process would, once the dead driver's
// lease expired — until the run completes, deciding its approval
// (approvalID) once asked. The tool runs are the fixture's tool log.
type crashDrive struct {
	f          *fixture
	b          turn.Bindings     // the scenario's bindings over f's store
	provider   bindings.Provider // answers every drive
	msg, runID string
	agent      agent.Agent // what each Resume names (zero: the run's own)
	approvalID string      // decided once asked; "" when the turn asks none
}

// fresh is the bindings of a process that did not crash: b with the
// scenario's provider and no event handler.
func (c crashDrive) fresh() turn.Bindings {
	fresh := c.b
	fresh.Providers = bindings.Providers{c.provider}
	fresh.OnEvent = nil
	return fresh
}

// run drives the scenario, crashing after allowed writes (never when
// negative) in panics' mode, behind the store's own Driver with oneStore
// (crashBindings), to completion, and returns its result, how many drives
// it took, and what it left, in the form the crash tests compare.
func (c crashDrive) run(t *testing.T, allowed int, panics, oneStore bool) crashOutcome {
	t.Helper()
	crasher := journaltest.New(allowed, panics)
	fresh := c.fresh()
	b := crashBindings(crasher, c.f.store, fresh, oneStore)
	in := c.f.input(c.msg)
	in.RunID = c.runID
	res, drives := journaltest.CrashDrive{
		Crasher: crasher, Crashing: b, Fresh: fresh, Input: in, Agent: c.agent,
		Store: c.f.store, Clock: c.f.clock, ApprovalID: c.approvalID,
		Approve: func(a bindings.Approval) { c.f.decide([]bindings.ApprovalRequest{a.Request}, true) },
	}.Run(t, allowed)
	lines := journalLines(t, c.f, c.runID)
	return crashOutcome{
		result: normalizeResult(res), messages: normalizeMessages(c.f.messages()), journal: lines,
		toolRuns: c.f.log.runs(), drives: drives, failedOp: crasher.FailedOp(), writes: crasher.Writes(),
	}
}

// crashBindings is fresh with the fixture store's bindings behind crasher:
// with oneStore the drives open and write through the store's own Driver
// (each Commit one write), otherwise through journal.Adapt of the
// crasher's run, snapshot and conversation bindings; and the approvals and
// the provenance emitter.
func crashBindings(crasher *journaltest.Crasher, store *memstore.Store, fresh turn.Bindings, oneStore bool) turn.Bindings {
	wrapped := fresh
	wrapped.Runs = crasher.Runs(store)
	wrapped.Snapshots = crasher.Snapshots(store)
	wrapped.Conversations = crasher.Conversations(store)
	wrapped.Journal = nil // journal.Adapt of the crasher's bindings
	if oneStore {
		wrapped.Journal = crasher.Driver(store)
	}
	wrapped.Hitl = crasher.Hitl(store)
	wrapped.Provenance.Emitter = crasher.Emitter(store)
	return wrapped
}

func normalizeMessages(ms []bindings.ConversationMessage) []bindings.ConversationMessage {
	out := make([]bindings.ConversationMessage, len(ms))
	for i, m := range ms {
		m.CreatedAt = time.Time{}
		out[i] = m
	}
	return out
}

func normalizeResult(r turn.Result) turn.Result {
	r.Appended = normalizeMessages(r.Appended)
	if r.Provenance != nil {
		r.Provenance = normalizeProvenance(*r.Provenance)
	}
	return r
}

// normalizeProvenance drops the clock-derived fields of a provenance
// record and of its children's records (and so the children's hashes).
func normalizeProvenance(p bindings.ProvenanceRecord) *bindings.ProvenanceRecord {
	p.CreatedAt, p.Signature = time.Time{}, nil
	if p.SubRuns != nil {
		subs := make([]bindings.ProvenanceSubRun, len(p.SubRuns))
		for i, sr := range p.SubRuns {
			sr.RecordHash = ""
			if sr.Record != nil {
				sr.Record = normalizeProvenance(*sr.Record)
			}
			subs[i] = sr
		}
		p.SubRuns = subs
	}
	return &p
}

// TestCrashAtEveryWrite aborts the scenario at every write in turn, in both
// failure modes, and checks that the resumed run ends exactly as the
// uninterrupted one: same conversation, result and journal; no completed
// tool call run twice; no message stored twice.
func TestCrashAtEveryWrite(t *testing.T) {
	eachCrashStore(t, func(t *testing.T, oneStore bool) {
		base := runCrashScenario(t, -1, false, oneStore)
		if base.result.Status != turn.StatusCompleted || base.drives != 2 {
			t.Fatalf("baseline: %+v after %d drives", base.result, base.drives)
		}
		checkRanOnce(t, base.toolRuns)
		t.Logf("baseline: %d writes, %d journal entries, %d messages", base.writes, len(base.journal), len(base.messages))
		crashAtEveryWrite(base.writes, func(mode string, n int, panics bool) {
			got := runCrashScenario(t, n, panics, oneStore)
			journaltest.CheckAgainstBaseline(t, mode, n, crashRunID, base.outcome(), got.outcome())
		})
	})
}

// eachCrashStore runs test as two subtests: the crashing bindings wrapped
// apart (oneStore=false) and the store's own Driver (oneStore=true).
func eachCrashStore(t *testing.T, test func(t *testing.T, oneStore bool)) {
	for _, oneStore := range []bool{false, true} {
		t.Run(fmt.Sprintf("oneStore=%v", oneStore), func(t *testing.T) { test(t, oneStore) })
	}
}

// crashAtEveryWrite calls crash for each of a baseline's writes writes (n
// the one that crashes), in both failure modes: mode "fail" (the write
// returns an error), then "panic" (it panics).
func crashAtEveryWrite(writes int, crash func(mode string, n int, panics bool)) {
	for _, panics := range []bool{false, true} {
		mode := "fail"
		if panics {
			mode = "panic"
		}
		for n := 0; n < writes; n++ {
			crash(mode, n, panics)
		}
	}
}

// checkRanOnce fails unless a baseline ran each tool request once.
func checkRanOnce(t *testing.T, toolRuns map[string]int) {
	t.Helper()
	for id, n := range toolRuns {
		if n != 1 {
			t.Fatalf("baseline ran %s %d times", id, n)
		}
	}
}

// outcome is o in the form journaltest compares.
func (o crashOutcome) outcome() journaltest.Outcome {
	return journaltest.Outcome{Messages: o.messages, Result: o.result, Journal: o.journal, ToolRuns: o.toolRuns, Drives: o.drives, FailedOp: o.failedOp}
}
