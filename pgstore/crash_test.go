package pgstore

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/bindings/bindingstest"
	"github.com/kindgi/agents/internal/journaltest"
	"github.com/kindgi/agents/turn"
)

const crashRunID = journaltest.ScenarioRunID

// crashOutcome is what a scenario leaves in PostgreSQL, with the fields
// that depend on the tenant or the clock removed.
type crashOutcome struct {
	result   any
	messages any
	journal  any
	golden   []journaltest.Line // the journal in the golden form
	toolRuns map[string]int     // request id → executions
	drives   int
	failedOp string
	writes   int
}

// runCrashScenario runs, in a tenant of its own, a turn with two tool calls
// (clause-search, then send-email behind always_ask) and one approval on
// pgstore, crashing after `allowed` writes (never when negative), then
// drives it again from fresh bindings — as a new process would once the
// dead driver's lease expired — until it completes.
func runCrashScenario(t *testing.T, pool DB, allowed int, panics bool) crashOutcome {
	t.Helper()
	ctx := t.Context()
	tenant := fmt.Sprintf("crash-%d-%v-%s", allowed, panics, randomID()[:8])
	clock := bindingstest.NewClock(time.Time{})
	store := New(pool, &Options{Now: clock.Now})
	var runs journaltest.ToolRuns
	tools, in := journaltest.SetUpScenario(t, store, tenant, &runs)
	a := in.Agent

	fresh := turn.Bindings{
		Providers: bindings.Providers{journaltest.ScenarioProvider()}, Tools: tools, Memory: store,
		Conversations: store, Snapshots: store, Runs: store, Hitl: store, Now: clock.Now,
	}
	crasher := journaltest.New(allowed, panics)
	// The store's own Driver, as a host binds one Store: each Commit is one
	// write; the basic bindings behind the crasher too.
	wrapped := crashedBindings(fresh, crasher, store)

	res, drives := journaltest.CrashDrive{
		Crasher: crasher, Crashing: wrapped, Fresh: fresh, Input: in, Agent: a, Store: store, Clock: clock,
		ApprovalID: journaltest.ScenarioApprovalID,
		Approve: func(ap bindings.Approval) {
			if _, err := store.ResolveApproval(ctx, tenant, ap.Request.ID, bindings.ApprovalDecision{Approved: true, Reviewer: "rev", ReviewerRoles: []string{"standard"}}); err != nil {
				t.Fatal(err)
			}
		},
	}.Run(t, allowed)
	msgs, err := store.ReadMessages(ctx, bindings.ReadMessagesInput{TenantID: tenant, ConversationID: journaltest.ScenarioConversation, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	journal, err := store.ReadJournal(ctx, tenant, crashRunID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range journal {
		journal[i].At = time.Time{}
	}
	return crashOutcome{
		result: normalized(t, res), messages: normalized(t, msgs), journal: normalized(t, journal),
		golden: journaltest.Lines(t, tenant, journal), toolRuns: runs.Counts(), drives: drives, failedOp: crasher.FailedOp(), writes: crasher.Writes(),
	}
}

// normalized returns v as a JSON tree without the fields that depend on
// the scenario's tenant or on the clock (a run resumed after a crash runs
// later), including inside journal outputs.
func normalized(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	return strip(tree)
}

func strip(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			switch k {
			case "tenantId", "now", "createdAt", "expiresAt", "at", "elapsedMs", "resolvedAt", "lastActivityAt", "openedAt":
				delete(x, k)
			case "output":
				// Journal outputs are JSON documents of their own.
				if s, ok := val.(map[string]any); ok {
					x[k] = strip(s)
				} else {
					x[k] = strip(val)
				}
			default:
				x[k] = strip(val)
			}
		}
	case []any:
		for i := range x {
			x[i] = strip(x[i])
		}
	}
	return v
}

// TestCrashAtEveryWriteOnPgstore is the resume issue's crash injection on
// PostgreSQL: the scenario is aborted after each write in turn, failing or
// panicking, and resumed; the run must end exactly as the uninterrupted
// one — same conversation, result and journal — with no completed tool
// call run twice and no message stored twice.
func TestCrashAtEveryWriteOnPgstore(t *testing.T) {
	if testing.Short() {
		t.Skip("crash injection runs the scenario about a hundred times")
	}
	testPool(t)
	// Durability is not under test (the crash is simulated above
	// PostgreSQL): skip the flush on commit to keep the run short.
	cfg := testEnv.config.Copy()
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	pool, err := newPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	base := runCrashScenario(t, pool, -1, false)
	if base.drives != 2 {
		t.Fatalf("baseline needed %d drives, want 2 (park, resume)", base.drives)
	}
	for id, n := range base.toolRuns {
		if n != 1 {
			t.Fatalf("baseline ran %s %d times", id, n)
		}
	}
	if len(base.toolRuns) != 2 {
		t.Fatalf("baseline tool runs %v, want two calls", base.toolRuns)
	}
	journaltest.CheckGolden(t, "scenario-completed", base.golden)
	total := base.writes
	t.Logf("baseline: %d writes", total)
	for _, panics := range []bool{false, true} {
		mode := "fail"
		if panics {
			mode = "panic"
		}
		for n := 0; n < total; n++ {
			got := runCrashScenario(t, pool, n, panics)
			journaltest.CheckAgainstBaseline(t, mode, n, crashRunID, base.outcome(), got.outcome())
		}
	}
}

// outcome is o in the form journaltest compares.
func (o crashOutcome) outcome() journaltest.Outcome {
	return journaltest.Outcome{Messages: o.messages, Result: o.result, Journal: o.journal, ToolRuns: o.toolRuns, Drives: o.drives, FailedOp: o.failedOp}
}
