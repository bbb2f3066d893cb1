package turn_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	agents "github.com/kindgi/agents"
	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/journaltest"
	"github.com/kindgi/agents/turn"
)

const treeRunID = "run-tree"

// treeChildID is the id of the tree's child run: the mailer's, called by
// the parent's first tool call.
const treeChildID = treeRunID + "/agent-loop/1/dispatch-tools/call_1/run"

// treeProvider answers the parent run and its child by their own step
// keys (a call repeated after a crash gets the same answer) and counts the
// calls per request id.
type treeProvider struct {
	mu    sync.Mutex
	calls map[string]int
}

func (p *treeProvider) ID() string { return "keyed" }

func (p *treeProvider) Models() []bindings.ModelInfo {
	return []bindings.ModelInfo{{ID: "keyed-1", Features: []string{"tool-use"}}}
}

var treeAnswers = map[bool]map[string]bindings.GenerateResponse{
	true: { // the parent
		"agent-loop/1/model-call": {ToolCalls: []bindings.ToolCall{{ID: "call_1", Name: "acme.mailer", Arguments: json.RawMessage(`{"message":"Send the NDA to legal."}`)}},
			Usage: bindings.Usage{InputTokens: 100, OutputTokens: 10, CostUsd: 0.001}},
		"agent-loop/2/model-call": {Text: "The mailer sent the NDA.", Usage: bindings.Usage{InputTokens: 200, OutputTokens: 20, CostUsd: 0.002}},
	},
	false: { // the mailer
		"agent-loop/1/model-call": {ToolCalls: []bindings.ToolCall{{ID: "m_1", Name: "acme.send-email", Arguments: json.RawMessage(`{"to":"legal@globex.test","subject":"NDA","body":"Attached."}`)}},
			Usage: bindings.Usage{InputTokens: 40, OutputTokens: 4, CostUsd: 0.0004}},
		"agent-loop/2/model-call": {Text: "Sent.", Usage: bindings.Usage{InputTokens: 30, OutputTokens: 3, CostUsd: 0.0003}},
	},
}

func (p *treeProvider) Generate(_ context.Context, req bindings.GenerateRequest) (bindings.GenerateResponse, error) {
	key := strings.TrimPrefix(req.RequestID, req.RunID+"/")
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[req.RequestID]++
	a, ok := treeAnswers[req.RunID == treeRunID][key]
	if !ok {
		return bindings.GenerateResponse{}, &agents.ModelInvocationError{Provider: "keyed", Model: req.Model, Message: "no answer for " + req.RequestID}
	}
	return a, nil
}

// treeOutcome is what a tree scenario leaves behind: the parent's and the
// child's journals and conversations, the parent's result, how often each
// model and tool request id ran.
type treeOutcome struct {
	crashOutcome
	childJournal  []journalLine
	childMessages []bindings.ConversationMessage
	modelCalls    map[string]int
}

// journalLines is a run's journal as the crash tests compare it
// (journaltest.Lines: clock fields aside).
func journalLines(t *testing.T, f *fixture, runID string) []journalLine {
	t.Helper()
	return journaltest.Lines(t, "", f.journal(runID))
}

// runTreeCrashScenario runs the gated tree (the parent calls the mailer,
// whose email tool asks for approval) crashing after `allowed` writes of
// parent and child alike (never when negative), then decides the
// approval and resumes the parent from fresh bindings, as a new process
// would, until the tree completes.
func runTreeCrashScenario(t *testing.T, allowed int, panics, oneStore bool) treeOutcome {
	t.Helper()
	mailer := mailerAgent(t)
	sf := newSubFixture(t, nil, nil, mailer)
	f := sf.fixture
	kp := &treeProvider{calls: map[string]int{}}
	f.addTool("acme.send-email", "2.1.4", emailSchema, func(context.Context, json.RawMessage, bindings.CallContext) (json.RawMessage, error) {
		return json.RawMessage(`{"sent":true}`), nil
	})
	out := crashDrive{
		f: f, b: sf.bindings(), provider: kp, msg: "Send the NDA.", runID: treeRunID,
		approvalID: treeChildID + "/agent-loop/1/dispatch-tools/m_1/approval",
	}.run(t, allowed, panics, oneStore) // checks that the parent completed
	if run, err := f.store.GetRun(t.Context(), tenant, treeChildID); err != nil || run.Status != bindings.RunCompleted {
		t.Errorf("allowed %d: run %s = %+v, %v; want completed", allowed, treeChildID, run, err)
	}
	out.journal = withoutChildParks(out.journal)
	snap, err := f.store.Read(t.Context(), tenant, treeChildID)
	if err != nil {
		t.Fatalf("allowed %d: child snapshot: %v", allowed, err)
	}
	childMsgs, err := f.store.ReadMessages(t.Context(), bindings.ReadMessagesInput{TenantID: tenant, ConversationID: snap.ConversationID, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	return treeOutcome{
		crashOutcome: out,
		childJournal: journalLines(t, f, treeChildID), childMessages: normalizeMessages(childMsgs), modelCalls: kp.calls,
	}
}

// withoutChildParks drops the parent's parked entries of sub-agent calls.
// Such an entry records that a drive of the parent saw its child suspended
// (and parked the parent on it); it decides nothing. A crash between the
// child's park and the parent's record, with the approval decided before
// the next drive, leaves a tree in which no drive of the parent saw the
// child suspended: the record is rightly absent, and the rest of the
// journal is the same.
func withoutChildParks(lines []journalLine) []journalLine {
	out := lines[:0:0]
	for _, l := range lines {
		if l.Status == string(bindings.StepParked) && strings.HasPrefix(l.Key, "agent-loop/") && !strings.HasSuffix(l.Key, "/approval") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// TestCrashAtEveryWriteOfTheTree aborts the tree scenario at every write of
// parent and child in turn, in both failure modes, and checks that the
// resumed tree ends exactly as the uninterrupted one — both runs
// completed, the same journals, conversations and result — with the child's
// tool run once (twice only when its own completion was the crashed write,
// with the same request id) and no model call made twice but the one
// whose completion crashed.
func TestCrashAtEveryWriteOfTheTree(t *testing.T) {
	eachCrashStore(t, func(t *testing.T, oneStore bool) {
		base := runTreeCrashScenario(t, -1, false, oneStore)
		if base.result.Status != turn.StatusCompleted || len(base.result.SubRuns) != 1 {
			t.Fatalf("baseline: %+v", base.result)
		}
		checkRanOnce(t, base.toolRuns)
		t.Logf("baseline: %d writes, parent journal %d entries, child journal %d", base.writes, len(base.journal), len(base.childJournal))
		crashAtEveryWrite(base.writes, func(mode string, n int, panics bool) {
			got := runTreeCrashScenario(t, n, panics, oneStore)
			// The child's tool request ids are the child run's: its
			// prefix is the child run id.
			journaltest.CheckAgainstBaseline(t, mode, n, treeChildID, base.outcome(), got.outcome())
			for _, c := range []struct {
				what      string
				want, got any
			}{
				{"child journal", base.childJournal, got.childJournal},
				{"child conversation", base.childMessages, got.childMessages},
			} {
				if !equalJSON(c.want, c.got) {
					t.Errorf("%s after %d writes (%s): %s differs:\nwant %s\ngot  %s", mode, n, got.failedOp, c.what, mustJSON(c.want), mustJSON(c.got))
				}
			}
			for id, calls := range got.modelCalls {
				if calls != 1 && !(calls == 2 && reranModel(got.failedOp, id)) {
					t.Errorf("%s after %d writes (%s): model call %s made %d times", mode, n, got.failedOp, id, calls)
				}
			}
		})
	})
}

// reranModel reports whether the crashed write op would have stored the
// completed entry of the model call with request id id (of the parent or
// the child), which may then be made once more with the same request id.
func reranModel(op, id string) bool {
	for _, prefix := range []string{treeChildID + "/", treeRunID + "/"} {
		if strings.HasPrefix(id, prefix) {
			return journaltest.CarriesCompletion(op, strings.TrimPrefix(id, prefix))
		}
	}
	return false
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func equalJSON(a, b any) bool { return mustJSON(a) == mustJSON(b) }

// TestResumedChildKeepsItsPlaceInTheTree: a child run whose driver died
// before its setup was stored, resumed on its own (as a Worker would, with
// bindings that know nothing of its parent), reads its depth and what
// remained of its parent's budget from its snapshot: its setup journals
// depth 1 and caps capped by the parent's remainder.
func TestResumedChildKeepsItsPlaceInTheTree(t *testing.T) {
	sf := newSubFixture(t, nil, nil, mailerAgent(t))
	f := sf.fixture
	crasher := journaltest.New(16, false) // the child's snapshot and start pass, its setup's write crashes
	fresh := sf.bindings()
	fresh.Providers = bindings.Providers{&treeProvider{calls: map[string]int{}}}
	fresh.OnEvent = nil
	in := f.input("Send the NDA.")
	in.RunID = treeRunID
	if _, err := turn.Invoke(t.Context(), in, crashBindings(crasher, f.store, fresh, false)); err == nil {
		t.Fatal("the crashed Invoke succeeded")
	}
	if op := crasher.FailedOp(); !strings.HasPrefix(op, "AppendSteps [setup completed") && op != "AppendStep setup completed" {
		t.Fatalf("crashed at %q, want the child's setup", op)
	}
	f.clock.Advance(10 * time.Minute)
	res, err := turn.Resume(t.Context(), turn.ResumeInput{TenantID: tenant, RunID: treeChildID}, fresh)
	if err != nil || res.Status != turn.StatusSuspended {
		t.Fatalf("Resume of the child: %+v, %v", res.Status, err)
	}
	var s struct {
		Depth  int `json:"depth"`
		Budget struct {
			MaxSteps   int      `json:"maxSteps"`
			MaxCostUsd *float64 `json:"maxCostUsd"`
		} `json:"budget"`
	}
	if err := json.Unmarshal(f.journal(treeChildID)[0].Output, &s); err != nil {
		t.Fatal(err)
	}
	// The drafter's budget: 6 steps and $0.25; its one call used 1 and $0.001.
	if s.Depth != 1 || s.Budget.MaxSteps != 5 || s.Budget.MaxCostUsd == nil || *s.Budget.MaxCostUsd != 0.25-0.001 {
		t.Errorf("child setup: depth %d, maxSteps %d, maxCostUsd %v", s.Depth, s.Budget.MaxSteps, s.Budget.MaxCostUsd)
	}
}
